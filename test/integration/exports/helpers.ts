/**
 * Shared by the export tests: fixture files, OpenRosa submissions as Collect sends them, a ZIP
 * reader that keeps every entry (duplicate names included) and a strict CSV reader/writer.
 */
import { inflateSync } from 'fflate';

export { appUserFor, BROWSER_UA, COLLECT, fixture, fixtureBytes, multipart, publishForm, submitOpenRosa, type MultipartFile } from '../../helpers/submitting';

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
