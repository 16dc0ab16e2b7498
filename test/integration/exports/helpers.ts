/**
 * Shared by the export tests: fixture files, OpenRosa submissions as Collect sends them, a ZIP
 * reader that keeps every entry (duplicate names included) and a strict CSV reader/writer.
 */
import { readFileSync } from 'node:fs';
import { inflateSync } from 'fflate';
import { expect } from 'vitest';
import { json, type As, type Harness } from '../../helpers/harness';

const SHARED = new URL('../../../../shared/fixtures/', import.meta.url);

/** A shared fixture file as text (`forms/simple.xml`, `central-outputs/simple/submissions.csv`). */
export const fixture = (path: string): string => readFileSync(new URL(path, SHARED), 'utf8');
/** A shared fixture file as bytes. */
export const fixtureBytes = (path: string): Uint8Array => new Uint8Array(readFileSync(new URL(path, SHARED)));

/** What Collect sends with each request. */
export const COLLECT = {
  'X-OpenRosa-Version': '1.0',
  'User-Agent': 'org.odk.collect.android/v2024.3.2 okhttp/4.12.0 Dalvik/2.1.0 (Linux; U; Android 14)',
} as const;
/** A browser User-Agent (an Enketo edit arrives with one). */
export const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';

export interface MultipartFile {
  name: string;
  bytes: Uint8Array;
  type: string;
}

/** A multipart/form-data OpenRosa body: the `xml_submission_file` part, then one part per file. */
export function multipart(xml: string, files: MultipartFile[] = []): { body: Uint8Array; type: string } {
  const boundary = `----fieldbaseExport${Math.random().toString(16).slice(2)}`;
  const enc = new TextEncoder();
  const parts: Uint8Array[] = [];
  const text = (s: string) => parts.push(enc.encode(s));
  text(`--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="submission.xml"\r\nContent-Type: text/xml\r\n\r\n`);
  text(xml);
  text('\r\n');
  for (const f of files) {
    text(`--${boundary}\r\nContent-Disposition: form-data; name="${f.name}"; filename="${f.name}"\r\nContent-Type: ${f.type}\r\n\r\n`);
    parts.push(f.bytes);
    text('\r\n');
  }
  text(`--${boundary}--\r\n`);
  const body = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let o = 0;
  for (const p of parts) {
    body.set(p, o);
    o += p.byteLength;
  }
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

/** Publishes a form from its XForm text (bob, ignoring warnings, as the captures did). */
export async function publishForm(h: Harness, xml: string): Promise<void> {
  const res = await h.post(`/v1/projects/${h.projectId}/forms?ignoreWarnings=true&publish=true`, { as: 'bob', body: xml, headers: { 'Content-Type': 'application/xml' } });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** A new App User of the project named `displayName`, assigned to `xmlFormId`. */
export async function appUserFor(h: Harness, xmlFormId: string, displayName: string): Promise<{ id: number; token: string }> {
  const res = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName } });
  expect(res.status).toBe(200);
  const au = await json<{ id: number; token: string }>(res);
  expect((await h.post(`/v1/projects/${h.projectId}/forms/${xmlFormId}/assignments/app-user/${au.id}`, { as: 'bob' })).status).toBe(200);
  return au;
}

/** POST P/submission (OpenRosa multipart) as `as`, with `?deviceID=` when given. */
export async function submitOpenRosa(h: Harness, as: As, xml: string, opts: { deviceId?: string; files?: MultipartFile[]; userAgent?: string } = {}) {
  const { body, type } = multipart(xml, opts.files ?? []);
  const query = opts.deviceId == null ? '' : `?deviceID=${encodeURIComponent(opts.deviceId)}`;
  const headers = { ...COLLECT, 'Content-Type': type, ...(opts.userAgent ? { 'User-Agent': opts.userAgent } : {}) };
  const res = await h.post(`/v1/projects/${h.projectId}/submission${query}`, { as, body, headers });
  expect(res.status, await res.clone().text()).toBe(201);
  return res;
}

// ---------------------------------------------------------------------------------------------
// ZIP

export interface ZipFileEntry {
  name: string;
  /** 8 deflate, 0 stored. */
  method: number;
  data: Uint8Array;
}

/**
 * Every entry of a ZIP archive in central-directory order, duplicates included (fflate's
 * unzipSync keeps only the last of two entries with one name).
 */
export function readZip(zip: Uint8Array): ZipFileEntry[] {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 65_535); i -= 1) {
    if (view.getUint32(i, true) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip: no end of central directory');
  let count = view.getUint16(eocd + 10, true);
  let at = view.getUint32(eocd + 16, true);
  // ZIP64 (fflate writes it only for huge archives; handled for completeness of the count).
  if (count === 0xffff || at === 0xffffffff) throw new Error('zip64 not expected in tests');
  const out: ZipFileEntry[] = [];
  const decoder = new TextDecoder();
  while (count-- > 0) {
    if (view.getUint32(at, true) !== 0x02014b50) throw new Error(`bad central directory header at ${at}`);
    const method = view.getUint16(at + 10, true);
    const compressed = view.getUint32(at + 20, true);
    const nameLen = view.getUint16(at + 28, true);
    const extraLen = view.getUint16(at + 30, true);
    const commentLen = view.getUint16(at + 32, true);
    const local = view.getUint32(at + 42, true);
    const name = decoder.decode(zip.subarray(at + 46, at + 46 + nameLen));
    const dataAt = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    const raw = zip.subarray(dataAt, dataAt + compressed);
    out.push({ name, method, data: method === 8 ? inflateSync(raw) : method === 0 ? raw.slice() : (() => { throw new Error(`method ${method}`); })() });
    at += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// CSV

/** Parses RFC 4180 CSV with `\n` line ends (a stray `\r` outside quotes fails the parse). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let i = 0;
  let quoted = false;
  let started = false;
  while (i < text.length) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          cell += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i += 1;
        continue;
      }
      cell += ch;
      i += 1;
      continue;
    }
    if (ch === '"' && cell === '') {
      quoted = true;
      started = true;
      i += 1;
    } else if (ch === ',') {
      row.push(cell);
      cell = '';
      started = true;
      i += 1;
    } else if (ch === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      started = false;
      i += 1;
    } else if (ch === '\r') {
      throw new Error(`bare CR at ${i}`);
    } else {
      cell += ch;
      started = true;
      i += 1;
    }
  }
  if (started || cell !== '' || row.length > 0) throw new Error('CSV does not end with a newline');
  return rows;
}

/** Writes CSV the way Central does: quote a cell only when it holds `,`, `"`, CR or LF. */
export function writeCsv(rows: string[][]): string {
  return rows.map((r) => `${r.map((c) => (/[",\r\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c)).join(',')}\n`).join('');
}

export const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The bytes of a whole response body. */
export async function bodyBytes(res: Response): Promise<Uint8Array> {
  return new Uint8Array(await res.arrayBuffer());
}
