/**
 * What ODK Collect sends, for tests that talk to the server over a real socket: the OpenRosa
 * header, a Collect User-Agent, hand-built multipart bodies (CRLF boundaries, as Collect's okhttp
 * writes them), a form with two photo fields and its submissions, and a namespace-aware reader of
 * the XML documents Collect gets back (formList, OpenRosaResponse).
 */
import { createHash } from 'node:crypto';
import { SaxesParser } from 'saxes';

export const OR = { 'X-OpenRosa-Version': '1.0' } as const;
export const COLLECT_UA = 'org.odk.collect.android/v2024.3.2 okhttp/4.12.0 Dalvik/2.1.0 (Linux; U; Android 14; Pixel 7 Build/AP2A.240705.005)';
/** The headers of every Collect request. */
export const COLLECT = { ...OR, 'User-Agent': COLLECT_UA } as const;

export const md5 = (b: Uint8Array | string) => createHash('md5').update(b).digest('hex');

export const XFORMS_LIST = 'http://openrosa.org/xforms/xformsList';
export const OR_RESPONSE = 'http://openrosa.org/http/response';

// ---------------------------------------------------------------------------------------------
// The form: a text field and two photo fields.

export const PHOTOS_FORM_ID = 'two_photos';
export const PHOTOS_VERSION = '2024061201';
export const PHOTOS_FORM = `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa" xmlns:orx="http://openrosa.org/xforms">
  <h:head>
    <h:title>Two photos</h:title>
    <model>
      <instance>
        <data id="${PHOTOS_FORM_ID}" version="${PHOTOS_VERSION}">
          <site/>
          <photo_front/>
          <photo_back/>
          <meta>
            <instanceID/>
          </meta>
        </data>
      </instance>
      <bind nodeset="/data/site" type="string"/>
      <bind nodeset="/data/photo_front" type="binary"/>
      <bind nodeset="/data/photo_back" type="binary"/>
      <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
    </model>
  </h:head>
  <h:body>
    <input ref="/data/site"><label>Site</label></input>
    <upload ref="/data/photo_front" mediatype="image/*"><label>Front</label></upload>
    <upload ref="/data/photo_back" mediatype="image/*"><label>Back</label></upload>
  </h:body>
</h:html>
`;

/** A submission of PHOTOS_FORM as Collect writes it (an edit when `deprecatedId` is given). */
export function photosSubmission(s: { instanceId: string; deprecatedId?: string; site: string; front?: string; back?: string }): string {
  const leaf = (name: string, v: string | undefined) => (v == null ? `<${name}/>` : `<${name}>${v}</${name}>`);
  return `<?xml version='1.0' ?><data id="${PHOTOS_FORM_ID}" version="${PHOTOS_VERSION}" xmlns:jr="http://openrosa.org/javarosa" xmlns:orx="http://openrosa.org/xforms">`
    + `<site>${s.site}</site>${leaf('photo_front', s.front)}${leaf('photo_back', s.back)}`
    + `<meta><instanceID>${s.instanceId}</instanceID>${s.deprecatedId == null ? '' : `<deprecatedID>${s.deprecatedId}</deprecatedID>`}</meta></data>`;
}

/** Deterministic bytes that start like a JPEG (SOI + APP0), `size` long. */
export function jpeg(seed: number, size = 48 * 1024): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(size);
  out.set([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00]);
  let x = Math.imul(seed + 1, 2654435761) >>> 0;
  for (let i = 11; i < size; i += 1) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Multipart, by hand

export interface MediaPart {
  name: string;
  bytes: Uint8Array;
  type: string;
}

/**
 * A multipart/form-data body built byte by byte: the `xml_submission_file` part, then one part per
 * media file named by its file name (OpenRosa Form Submission API), CRLF line ends, closing boundary.
 */
export function multipart(xml: string, files: MediaPart[] = []): { body: Uint8Array<ArrayBuffer>; type: string } {
  const boundary = `----CollectBoundary${md5(`${xml}${Math.random()}`).slice(0, 16)}`;
  const parts: Buffer[] = [];
  const text = (s: string) => parts.push(Buffer.from(s, 'utf8'));
  text(`--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="submission.xml"\r\nContent-Type: text/xml\r\n\r\n`);
  text(xml);
  text('\r\n');
  for (const f of files) {
    text(`--${boundary}\r\nContent-Disposition: form-data; name="${f.name}"; filename="${f.name}"\r\nContent-Type: ${f.type}\r\n\r\n`);
    parts.push(Buffer.from(f.bytes));
    text('\r\n');
  }
  text(`--${boundary}--\r\n`);
  const joined = Buffer.concat(parts);
  const body = new Uint8Array(joined.byteLength);
  body.set(joined);
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

// ---------------------------------------------------------------------------------------------
// XML

export interface El {
  local: string;
  uri: string;
  attrs: Record<string, string>;
  children: El[];
  text: string;
}

/** Parses an XML document into a small namespace-aware tree (saxes). */
export function parseXml(xml: string): El {
  const parser = new SaxesParser({ xmlns: true });
  const stack: El[] = [];
  let root: El | undefined;
  parser.on('opentag', (tag) => {
    const attrs: Record<string, string> = {};
    for (const a of Object.values(tag.attributes)) attrs[a.name] = a.value;
    const el: El = { local: tag.local, uri: tag.uri, attrs, children: [], text: '' };
    if (stack.length > 0) stack[stack.length - 1]!.children.push(el);
    else root = el;
    stack.push(el);
  });
  parser.on('text', (t) => {
    if (stack.length > 0) stack[stack.length - 1]!.text += t;
  });
  parser.on('closetag', () => stack.pop());
  parser.write(xml).close();
  if (!root) throw new Error('no root element');
  return root;
}

/**
 * The one message of an OpenRosaResponse document (`<OpenRosaResponse items="0"><message nature>`).
 * @throws when the document is not one.
 */
export function openRosaMessage(xml: string): { nature: string; text: string } {
  const root = parseXml(xml);
  if (root.local !== 'OpenRosaResponse' || root.uri !== OR_RESPONSE) throw new Error(`not an OpenRosaResponse: ${xml}`);
  const messages = root.children.filter((c) => c.local === 'message' && c.uri === OR_RESPONSE);
  if (messages.length !== 1) throw new Error(`expected one message: ${xml}`);
  return { nature: messages[0]!.attrs.nature ?? '', text: messages[0]!.text };
}

/** The OpenRosa success message (Central's words). */
export const SUBMISSION_OK = 'full submission upload was successful!';
