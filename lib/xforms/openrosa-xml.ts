/**
 * OpenRosa XML renderers (shared/reference/odk-docs/openrosa-form-list.rst, openrosa-http.rst):
 * the form list, the manifest and OpenRosaResponse messages. Pure; the layout follows Central's real
 * output (shared/fixtures/central-outputs/withAttachments/openrosa/*.xml).
 */
const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };
// One scan, and none at all for the common case of nothing to escape (form lists are large).
const esc = (s: string) => (/[&<>"]/.test(s) ? s.replace(/[&<>"]/g, (ch) => entities[ch]!) : s);

export interface FormListEntry {
  xmlFormId: string;
  name: string;
  version: string;
  /** MD5 hex of the form XML. */
  hash: string;
  downloadUrl: string;
  /** Only for forms that expect attachments. */
  manifestUrl: string | null;
}

/** `<xforms xmlns="http://openrosa.org/xforms/xformsList">…` with one `<xform>` per form. */
export function renderFormList(entries: FormListEntry[]): string {
  const items = entries.map((e) => `
    <xform>
      <formID>${esc(e.xmlFormId)}</formID>
      <name>${esc(e.name)}</name>
      <version>${esc(e.version)}</version>
      <hash>md5:${e.hash}</hash>
      <downloadUrl>${esc(e.downloadUrl)}</downloadUrl>${e.manifestUrl ? `
      <manifestUrl>${esc(e.manifestUrl)}</manifestUrl>` : ''}
    </xform>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>
  <xforms xmlns="http://openrosa.org/xforms/xformsList">${items}
  </xforms>`;
}

/**
 * Stands for the start of every URL in a document rendered once and served to many clients (a form
 * list shared by devices with the same forms): the origin and prefix (`/v1/key/{token}`) differ per
 * client. NUL, which no stored text holds (PostgreSQL text cannot) and esc() leaves as it is.
 */
export const URL_BASE = '\0';

/** `doc` (rendered with URL_BASE before each URL) with `base` (origin + prefix, escaped) in its place. */
export function fillUrlBase(doc: string, base: string): string {
  // split/join, not replaceAll: a key token may hold `$`, which a replacement string would interpret.
  return doc.split(URL_BASE).join(esc(base));
}

export interface ManifestEntry {
  filename: string;
  /** MD5 hex of the file. */
  hash: string;
  downloadUrl: string;
  /** A Dataset's entity list: `entityList` or `approvalEntityList` (the mediaFile's type attribute). */
  type?: string;
  /** A Dataset's entity list: where a device checks which of its entities still exist. */
  integrityUrl?: string;
}

/**
 * `<manifest xmlns="http://openrosa.org/xforms/xformsManifest">…` with one `<mediaFile>` per file;
 * an entity list carries `type="…"` and an `<integrityUrl>` (central-api.yaml, Form Manifest).
 */
export function renderManifest(entries: ManifestEntry[]): string {
  const items = entries.map((e) => `
    <mediaFile${e.type ? ` type="${esc(e.type)}"` : ''}>
      <filename>${esc(e.filename)}</filename>
      <hash>md5:${e.hash}</hash>
      <downloadUrl>${esc(e.downloadUrl)}</downloadUrl>${e.integrityUrl ? `
      <integrityUrl>${esc(e.integrityUrl)}</integrityUrl>` : ''}
    </mediaFile>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>
  <manifest xmlns="http://openrosa.org/xforms/xformsManifest">${items}
  </manifest>`;
}

/** An OpenRosaResponse with one message; `nature` 'error' for failures, '' for success (Central). */
export function renderOpenRosaMessage(message: string, nature: 'error' | '' = 'error'): string {
  return `
  <OpenRosaResponse xmlns="http://openrosa.org/http/response" items="0">
    <message nature="${nature}">${esc(message)}</message>
  </OpenRosaResponse>`;
}

/**
 * The entity integrity document (GET D/integrity, central-api.yaml OpenRosa Dataset Integrity API):
 * `<data><entities><entity id="…"><deleted>true|false</deleted></entity>…</entities></data>`,
 * laid out as Central writes it.
 */
export function renderEntityIntegrity(entries: Array<{ uuid: string; deleted: boolean }>): string {
  const items = entries.map((e) => `
      <entity id="${esc(e.uuid)}">
        <deleted>${e.deleted}</deleted>
      </entity>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>
  <data>
    <entities>${items}
    </entities>
  </data>`;
}
