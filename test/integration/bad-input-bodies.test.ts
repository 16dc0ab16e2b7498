/**
 * Issue 18's probes against the running server over real HTTP, for every kind of body reader (XML
 * form uploads, XLSForms, REST submission XML, form and submission attachments, OpenRosa
 * multipart, JSON): oversized bodies sent chunked (no Content-Length), bounded in memory; XML
 * attacks (XXE, entity expansion, deep nesting, a zip bomb in an XLSForm); invalid UTF-8; form ids
 * Central refuses or that name paths. Each asserts the status, the error body and that nothing
 * was stored. The companion file bad-input.test.ts has the NUL, id-range and JSON probes.
 */
import { count } from 'drizzle-orm';
import { Zip, ZipDeflate } from 'fflate';
import { describe, expect, test } from 'vitest';
import { blobs, formAttachments, forms, submissionAttachments, submissions } from '../../drizzle/schema';
import { MAX_XML_DEPTH } from '../../lib/xforms/xml-tree';
import { COLLECT, jpeg, multipart, PHOTOS_FORM, PHOTOS_FORM_ID, photosSubmission } from '../helpers/collect';
import { fixtureUsers } from '../fixtures/users';
import { harness, json, type Harness } from '../helpers/harness';
import { readZip } from './exports/helpers';

const MB = 1024 * 1024;
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const bearer = { Authorization: `Bearer ${fixtureUsers.alice.token}` };

/** A form expecting one media file (cities.csv), so its draft takes an attachment upload. */
const WITH_MEDIA = `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml">
  <h:head><h:title>Media</h:title><model>
    <instance><data id="with_media"><city/><meta><instanceID/></meta></data></instance>
    <instance id="cities" src="jr://file-csv/cities.csv"/>
    <bind nodeset="/data/city" type="string"/></model></h:head><h:body/></h:html>`;

const formXml = (id: string) => `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml">
  <h:head><h:title>T</h:title><model><instance><data id="${id}"><name/><meta><instanceID/></meta></data></instance>
  <bind nodeset="/data/name" type="string"/></model></h:head><h:body/></h:html>`;

interface Stored { forms: number; submissions: number; blobs: number; formAttachmentBlobs: number; submissionAttachmentBlobs: number }

async function stored(h: Harness): Promise<Stored> {
  const n = async (q: Promise<Array<{ n: number }>>) => (await q)[0]!.n;
  return {
    forms: await n(h.db.select({ n: count() }).from(forms)),
    submissions: await n(h.db.select({ n: count() }).from(submissions)),
    blobs: await n(h.db.select({ n: count() }).from(blobs)),
    formAttachmentBlobs: await n(h.db.select({ n: count(formAttachments.blobId) }).from(formAttachments)),
    submissionAttachmentBlobs: await n(h.db.select({ n: count(submissionAttachments.blobId) }).from(submissionAttachments)),
  };
}

/** A world with a published two-photo form and one submission (its photos not yet sent), plus a draft expecting cities.csv. */
async function world(h: Harness): Promise<{ P: string; photos: string; media: string }> {
  const P = `/v1/projects/${h.projectId}`;
  const xml = { as: 'alice' as const, headers: { 'Content-Type': 'application/xml' } };
  expect((await h.post(`${P}/forms?publish=true`, { ...xml, body: PHOTOS_FORM })).status).toBe(200);
  expect((await h.post(`${P}/forms`, { ...xml, body: WITH_MEDIA })).status).toBe(200);
  const photos = `${P}/forms/${PHOTOS_FORM_ID}`;
  const sub = await h.post(`${photos}/submissions`, { ...xml, body: photosSubmission({ instanceId: 'uuid:one', site: 'A', front: 'front.jpg' }) });
  expect(sub.status).toBe(200);
  return { P, photos, media: `${P}/forms/with_media` };
}

/** A chunked body of `total` bytes (no Content-Length) made as it is read: `head`, then filler. */
function chunkedBody(total: number, head: string | Uint8Array = '', fill = 0x61): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(256 * 1024).fill(fill);
  let sent = -1;
  return new ReadableStream({
    pull(controller) {
      if (sent < 0) {
        const first = typeof head === 'string' ? new TextEncoder().encode(head) : head;
        sent = first.byteLength;
        if (first.byteLength > 0) return controller.enqueue(first);
      }
      if (sent >= total) return controller.close();
      sent += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
}

interface Answer { status: number; body: string; rssGrowth: number }

/**
 * POSTs a chunked body and samples the process's RSS while it is sent and answered (the server
 * runs in this process). The client may see the connection closed once the server has answered.
 */
async function postChunked(url: string, body: ReadableStream<Uint8Array>, headers: Record<string, string>): Promise<Answer> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 10);
  try {
    const res = await fetch(url, { method: 'POST', body, duplex: 'half', headers } as RequestInit);
    const text = await res.text();
    return { status: res.status, body: text, rssGrowth: Math.max(peak, process.memoryUsage().rss) - before };
  } finally {
    clearInterval(timer);
  }
}

const code = (a: Answer) => (JSON.parse(a.body) as { code: number }).code;

describe('a 200 MB chunked body to every upload reader: refused at its limit, in bounded memory', () => {
  test('XForm, XLSForm, REST submission, form and submission attachments: 400.36; OpenRosa multipart: 413', async () => {
    // A limit below the body, so that reading the whole body (the old failure) would show: 200 MB
    // held would be ~200 MB of growth; the bound allows the limit plus the runtime's slack.
    const h = await harness({ MAX_UPLOAD_BYTES: 32 * MB });
    const { P, photos, media } = await world(h);
    const base = await h.listen();
    const before = await stored(h);
    const total = 200 * MB;
    const cases: Array<[string, string, Record<string, string>, string, number]> = [
      ['XForm upload', `${P}/forms`, { ...bearer, 'Content-Type': 'application/xml' }, '<?xml version="1.0"?><h:html>', 400.36],
      ['XLSForm upload', `${P}/forms`, { ...bearer, 'Content-Type': XLSX }, 'PK', 400.36],
      ['draft XForm', `${photos}/draft`, { ...bearer, 'Content-Type': 'application/xml' }, '<h:html>', 400.36],
      ['REST submission', `${photos}/submissions`, { ...bearer, 'Content-Type': 'application/xml' }, '<data id="two_photos">', 400.36],
      ['form attachment', `${media}/draft/attachments/cities.csv`, { ...bearer, 'Content-Type': 'text/csv' }, 'name,label\n', 400.36],
      ['submission attachment', `${photos}/submissions/uuid:one/attachments/front.jpg`, { ...bearer, 'Content-Type': 'image/jpeg' }, '', 400.36],
      ['OpenRosa multipart', `${P}/submission`, { ...bearer, ...COLLECT, 'Content-Type': 'multipart/form-data; boundary=XX' },
        '--XX\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="s.xml"\r\n\r\n', 413],
    ];
    for (const [name, path, headers, head, expected] of cases) {
      const answer = await postChunked(`${base}${path}`, chunkedBody(total, head), headers);
      expect(answer.status, name).toBe(Math.floor(expected));
      if (expected !== 413) expect(code(answer), name).toBe(expected);
      if (process.env.FIELDBASE_REPORT_RSS) console.log(name, answer.status, Math.round(answer.rssGrowth / MB), 'MB');
      expect(answer.rssGrowth, `${name}: RSS grew ${Math.round(answer.rssGrowth / MB)} MB`).toBeLessThan(150 * MB);
    }
    expect(await stored(h)).toEqual(before);
  }, 180_000);

  test('with the default MAX_UPLOAD_BYTES (100 MB), a 200 MB chunked XForm upload grows RSS by less than 150 MB', async () => {
    const h = await harness();
    const base = await h.listen();
    const before = await stored(h);
    const answer = await postChunked(`${base}/v1/projects/${h.projectId}/forms`, chunkedBody(200 * MB, '<?xml version="1.0"?>'), {
      ...bearer, 'Content-Type': 'application/xml',
    });
    if (process.env.FIELDBASE_REPORT_RSS) console.log('default limit', answer.status, Math.round(answer.rssGrowth / MB), 'MB');
    expect(answer.status).toBe(400);
    expect(code(answer)).toBe(400.36);
    expect(answer.rssGrowth, `RSS grew ${Math.round(answer.rssGrowth / MB)} MB`).toBeLessThan(150 * MB);
    expect(await stored(h)).toEqual(before);
  }, 120_000);

  test('a declared Content-Length over the limit is refused before any byte is read', async () => {
    const h = await harness({ MAX_UPLOAD_BYTES: MB });
    const { P, photos } = await world(h);
    const base = await h.listen();
    for (const path of [`${P}/forms`, `${photos}/submissions`]) {
      const res = await fetch(`${base}${path}`, {
        method: 'POST', body: new Uint8Array(2 * MB).fill(0x61), headers: { ...bearer, 'Content-Type': 'application/xml' },
      });
      expect(res.status, path).toBe(400);
      expect((await json(res)).code, path).toBe(400.36);
    }
  });

  test('a 200 MB chunked JSON body on the Entities routes: 400.36', async () => {
    const h = await harness();
    const base = await h.listen();
    const answer = await postChunked(`${base}/v1/projects/${h.projectId}/datasets`, chunkedBody(200 * MB, '{"name":"'), {
      ...bearer, 'Content-Type': 'application/json',
    });
    expect(answer.status).toBe(400);
    expect(code(answer)).toBe(400.36);
    expect(answer.rssGrowth).toBeLessThan(150 * MB);
  }, 60_000);
});

describe('XML attacks over HTTP', () => {
  const laughs = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">${Array.from({ length: 9 }, (_, i) =>
    `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`).join('')}]>`;
  const xxe = '<?xml version="1.0"?><!DOCTYPE data [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>';

  test('XXE, billion laughs and 200,000-deep nesting in forms and submissions: 400.1, nothing stored', async () => {
    const h = await harness();
    const { P, photos } = await world(h);
    const before = await stored(h);
    const deepForm = formXml('deep').replace('<name/>', `${'<g>'.repeat(200_000)}<q/>${'</g>'.repeat(200_000)}`);
    const deepSub = `<data id="two_photos" version="2024061201"><meta><instanceID>uuid:deep</instanceID></meta>${'<g>'.repeat(200_000)}${'</g>'.repeat(200_000)}</data>`;
    const cases: Array<[string, string, string]> = [
      ['form with XXE', `${P}/forms`, formXml('xxe').replace('<?xml version="1.0"?>', xxe).replace('<name/>', '<name>&xxe;</name>')],
      ['form with billion laughs', `${P}/forms`, formXml('lol').replace('<?xml version="1.0"?>', laughs).replace('<name/>', '<name>&lol9;</name>')],
      ['form nested 200,000 deep', `${P}/forms`, deepForm],
      ['submission with XXE', `${photos}/submissions`, `${xxe}<data id="two_photos"><site>&xxe;</site></data>`],
      ['submission with billion laughs', `${photos}/submissions`, `${laughs}<data id="two_photos"><site>&lol9;</site></data>`],
      ['submission nested 200,000 deep', `${photos}/submissions`, deepSub],
    ];
    for (const [name, path, body] of cases) {
      const res = await h.post(path, { as: 'alice', body, headers: { 'Content-Type': 'application/xml' } });
      expect(res.status, name).toBe(400);
      const problem = await json(res);
      expect(problem.code, name).toBe(400.1);
      expect(problem.message, name).toMatch(/DOCTYPE declarations are not allowed|nested more than/);
      expect(problem.message, name).not.toContain('root:');
    }
    // The same deep submission through OpenRosa: an OpenRosa 400, not a 500.
    const { body, type } = multipart(deepSub);
    const or = await h.post(`${P}/submission`, { as: 'alice', body, headers: { ...COLLECT, 'Content-Type': type } });
    expect(or.status).toBe(400);
    expect(await or.text()).toContain(`nested more than ${MAX_XML_DEPTH} deep`);
    expect(await stored(h)).toEqual(before);
  });

  test('an XLSForm zip bomb (a sheet inflating to 300 MB): a 400, in bounded memory, nothing stored', async () => {
    const h = await harness();
    const { P } = await world(h);
    const before = await stored(h);
    const bomb = await zipOf('xl/worksheets/sheet1.xml', 300 * MB);
    expect(bomb.byteLength).toBeLessThan(2 * MB);
    const base = await h.listen();
    const once = new ReadableStream<Uint8Array>({ start(c) { c.enqueue(bomb); c.close(); } });
    const answer = await postChunked(`${base}${P}/forms`, once, { ...bearer, 'Content-Type': XLSX });
    expect(answer.status).toBe(400);
    expect(String(code(answer))).toMatch(/^400\./);
    expect(answer.rssGrowth, `RSS grew ${Math.round(answer.rssGrowth / MB)} MB`).toBeLessThan(150 * MB);
    expect(await stored(h)).toEqual(before);
  }, 60_000);
});

/** A zip holding one entry of `size` zero bytes, deflated as it is made (a few hundred KB). */
function zipOf(name: string, size: number): Promise<Uint8Array<ArrayBuffer>> {
  return new Promise((resolve, reject) => {
    const out: Uint8Array[] = [];
    const zip = new Zip((err, data, final) => {
      if (err) return reject(err);
      out.push(data);
      if (final) resolve(new Uint8Array(Buffer.concat(out)));
    });
    const entry = new ZipDeflate(name, { level: 9 });
    zip.add(entry);
    const zeros = new Uint8Array(4 * MB);
    for (let sent = 0; sent < size; sent += zeros.byteLength) entry.push(zeros);
    entry.push(new Uint8Array(0), true);
    zip.end();
  });
}

describe('invalid UTF-8: refused with a 400, never stored with U+FFFD', () => {
  const bytesOf = (...parts: Array<string | number[]>) =>
    new Uint8Array(parts.flatMap((p) => (typeof p === 'string' ? [...new TextEncoder().encode(p)] : p)));

  test('in submission values (REST and OpenRosa) and in form XML', async () => {
    const h = await harness();
    const { P, photos } = await world(h);
    const before = await stored(h);
    const base = await h.listen();
    const badSub = bytesOf('<data id="two_photos" version="2024061201"><site>Caf', [0xc3, 0x28], '</site><meta><instanceID>uuid:bad</instanceID></meta></data>');
    const rest = await fetch(`${base}${photos}/submissions`, { method: 'POST', body: badSub, headers: { ...bearer, 'Content-Type': 'application/xml' } });
    expect(rest.status).toBe(400);
    expect(await json(rest)).toMatchObject({ code: 400.1, details: { format: 'submission xml' } });

    const boundary = 'XXutf';
    const or = await fetch(`${base}${P}/submission`, {
      method: 'POST',
      body: bytesOf(`--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="s.xml"\r\nContent-Type: text/xml\r\n\r\n`,
        [...badSub], `\r\n--${boundary}--\r\n`),
      headers: { ...bearer, ...COLLECT, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
    });
    expect(or.status).toBe(400);
    expect(await or.text()).toContain('as submission xml');

    const [formHead, formTail] = formXml('utf').split('<h:title>T');
    const broken = bytesOf(formHead!, '<h:title>T', [0xff, 0xfe], formTail!);
    const form = await fetch(`${base}${P}/forms`, { method: 'POST', body: broken, headers: { ...bearer, 'Content-Type': 'application/xml' } });
    expect(form.status).toBe(400);
    expect((await json(form)).code).toBe(400.1);
    expect(await stored(h)).toEqual(before);
  });

  test('in a multipart media file name: 400.8; a text xml_submission_file part: 400.1', async () => {
    const h = await harness();
    const { P } = await world(h);
    const before = await stored(h);
    const base = await h.listen();
    const xml = photosSubmission({ instanceId: 'uuid:utf', site: 'A', front: 'front.jpg' });
    const boundary = 'XXbad';
    const raw = bytesOf(
      `--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="s.xml"\r\nContent-Type: text/xml\r\n\r\n${xml}\r\n`,
      // The part's name is the stored file name (Central keeps multer's fieldname, not the filename).
      `--${boundary}\r\nContent-Disposition: form-data; name="fr`, [0xc3, 0x28], 'nt.jpg"; filename="front.jpg"\r\nContent-Type: image/jpeg\r\n\r\n',
      [...jpeg(1, 1024)], `\r\n--${boundary}--\r\n`,
    );
    const res = await fetch(`${base}${P}/submission`, {
      method: 'POST', body: raw, headers: { ...bearer, ...COLLECT, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('must be valid UTF-8');

    const [subHead, subTail] = xml.split('<site>A');
    const withBad = bytesOf(
      `--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"\r\n\r\n`,
      subHead!, '<site>A', [0xc3, 0x28], subTail!, `\r\n--${boundary}--\r\n`,
    );
    const text = await fetch(`${base}${P}/submission`, {
      method: 'POST', body: withBad, headers: { ...bearer, ...COLLECT, 'Content-Type': `multipart/form-data; boundary=${boundary}` },
    });
    expect(text.status).toBe(400);
    expect(await text.text()).toContain('as submission xml');
    expect(await stored(h)).toEqual(before);
  });
});

describe('file names from submission XML', () => {
  test('an attachment named ../../evil.jpg is stored by name but exported inside media/ (sanitized as Central)', async () => {
    const h = await harness();
    const { photos } = await world(h);
    const sub = await h.post(`${photos}/submissions`, {
      as: 'alice', headers: { 'Content-Type': 'application/xml' }, body: photosSubmission({ instanceId: 'uuid:slip', site: 'A', front: '../../evil.jpg' }),
    });
    expect(sub.status).toBe(200);
    const att = await h.post(`${photos}/submissions/uuid:slip/attachments/..%2F..%2Fevil.jpg`, {
      as: 'alice', body: jpeg(7, 512), headers: { 'Content-Type': 'image/jpeg' },
    });
    expect(att.status).toBe(200);
    const zip = await h.get(`${photos}/submissions.csv.zip`, { as: 'alice' });
    expect(zip.status).toBe(200);
    const names = readZip(new Uint8Array(await zip.arrayBuffer())).map((e) => e.name);
    expect(names).toContain('media/....evil.jpg');
    for (const name of names) expect(name.split('/').includes('..'), name).toBe(false);
  });
});

describe('form ids', () => {
  test('../../x, a backslash, a control character, . and ..: 400.8; over 64 characters (10,000): 400.13 as Central', async () => {
    const h = await harness();
    const P = `/v1/projects/${h.projectId}`;
    const before = await stored(h);
    const cases: Array<[string, number]> = [
      ['../../x', 400.8], ['a/b', 400.8], ['a\\b', 400.8], ['a&#9;b', 400.8], ['..', 400.8], ['.', 400.8],
      ['x'.repeat(10_000), 400.13], ['x'.repeat(65), 400.13],
    ];
    for (const [id, expected] of cases) {
      for (const publish of ['', '?publish=true']) {
        const res = await h.post(`${P}/forms${publish}`, { as: 'alice', body: formXml(id), headers: { 'Content-Type': 'application/xml' } });
        expect(res.status, id.slice(0, 20)).toBe(400);
        const problem = await json(res);
        expect(problem.code, id.slice(0, 20)).toBe(expected);
        if (expected === 400.13) expect(problem.details).toEqual({ maxLength: '64' });
      }
    }
    expect(await stored(h)).toEqual(before);
    // 64 characters, dots and other punctuation are fine.
    for (const id of ['x'.repeat(64), 'a.b-c_d', 'sürvey 2024']) {
      const res = await h.post(`${P}/forms`, { as: 'alice', body: formXml(id), headers: { 'Content-Type': 'application/xml' } });
      expect(res.status, id).toBe(200);
      expect((await json(res)).xmlFormId).toBe(id);
    }
  });

  test('the same rules for an XLSForm id (settings form_id or the fallback header)', async () => {
    const h = await harness();
    const P = `/v1/projects/${h.projectId}`;
    for (const [fallback, expected] of [['..%2F..%2Fx', 400.8], [encodeURIComponent('y'.repeat(100)), 400.13]] as const) {
      const res = await h.post(`${P}/forms`, {
        as: 'alice', body: await minimalXlsx(), headers: { 'Content-Type': XLSX, 'X-XlsForm-FormId-Fallback': fallback },
      });
      expect(res.status, fallback).toBe(400);
      expect((await json(res)).code, fallback).toBe(expected);
    }
  });
});

/** A one-question XLSForm without a form_id (so the fallback header names the form). */
async function minimalXlsx(): Promise<Uint8Array> {
  const XLSX_ = await import('@e965/xlsx');
  const wb = XLSX_.utils.book_new();
  XLSX_.utils.book_append_sheet(wb, XLSX_.utils.aoa_to_sheet([['type', 'name', 'label'], ['text', 'name', 'Name']]), 'survey');
  return new Uint8Array(XLSX_.write(wb, { type: 'array', bookType: 'xlsx' }) as ArrayBuffer);
}
