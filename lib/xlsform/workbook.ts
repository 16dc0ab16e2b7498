/**
 * Reads an XLSForm workbook (.xlsx or .xls) into plain rows of strings, the way pyxform's
 * xls2json_backends does: the first row holds the headers, each later row becomes a map of header to
 * text, numbers and dates become pyxform's text for them, empty rows are dropped. Pure; SheetJS
 * (@e965/xlsx, a republished 0.20 build) does the file format.
 */
import * as XLSX from '@e965/xlsx';
import { Unzip, UnzipInflate, unzipSync, zipSync } from 'fflate';
import { concatBytes } from '../bytes';
import { XlsFormError } from './types';

/** One data row: its 1-based spreadsheet row number and its non-empty cells by header. */
export interface SheetRow {
  row: number;
  cells: Map<string, string>;
}

/** One sheet: headers as written (trimmed; '' for an empty header cell) and its non-empty data rows. */
export interface Sheet {
  name: string;
  headers: string[];
  rows: SheetRow[];
}

/** Sheets by lowercase name; `sheetNames` lists every sheet of the file (read or not), in order. */
export type Workbook = Map<string, Sheet> & { sheetNames?: string[] };

/** Rows read from one sheet at most; beyond this the workbook is refused (bounded time and memory). */
export const MAX_SHEET_ROWS = 100_000;
/** Rows on the survey sheet at most: far beyond any real form (Collect struggles past a few thousand). */
export const MAX_SURVEY_ROWS = 20_000;
/** Largest inflated size of one part of an .xlsx, and of all parts together (zip bomb guard). */
const MAX_PART_BYTES = 64 * 1024 * 1024;
const MAX_TOTAL_BYTES = 192 * 1024 * 1024;

const isZip = (b: Uint8Array) => b.length >= 4 && b[0] === 0x50 && b[1] === 0x4b && b[2] === 0x03 && b[3] === 0x04;
const isCfb = (b: Uint8Array) => b.length >= 8 && b[0] === 0xd0 && b[1] === 0xcf && b[2] === 0x11 && b[3] === 0xe0;

const unreadable = () =>
  new XlsFormError('The file could not be read as an XLSForm spreadsheet (.xlsx or .xls). Please check that it is a valid Excel workbook.');

/**
 * Inflates an .xlsx's parts (pictures and printer settings left out), refusing a workbook whose
 * parts would inflate beyond the limits: first from the sizes its central directory declares, then
 * by counting while inflating (a zip bomb that lies about its sizes).
 * @throws XlsFormError too large, or unreadable (not a zip, no xl/workbook.xml).
 */
function checkZip(bytes: Uint8Array): Record<string, Uint8Array> {
  // First the sizes the central directory declares (nothing is inflated)…
  let declared = 0;
  let hasWorkbook = false;
  try {
    unzipSync(bytes, {
      filter: (f) => {
        declared += f.originalSize;
        if (f.originalSize > MAX_PART_BYTES || declared > MAX_TOTAL_BYTES) throw tooLarge(f.name);
        if (/^xl\/workbook\.xml$/i.test(f.name)) hasWorkbook = true;
        return false;
      },
    });
  } catch (e) {
    if (e instanceof XlsFormError) throw e;
    throw unreadable();
  }
  if (!hasWorkbook) throw unreadable();
  // …then the parts themselves, inflated in small steps and counted, so a part that lies about its
  // size is stopped at the limit instead of filling memory.
  const files: Record<string, Uint8Array> = {};
  let total = 0;
  const unzip = new Unzip((file) => {
    if (/^xl\/(media|printerSettings|drawings|embeddings)\//i.test(file.name) || file.name.endsWith('/')) return;
    const chunks: Uint8Array[] = [];
    let size = 0;
    file.ondata = (err, chunk, final) => {
      if (err) throw unreadable();
      size += chunk.length;
      total += chunk.length;
      if (size > MAX_PART_BYTES || total > MAX_TOTAL_BYTES) throw tooLarge(file.name);
      chunks.push(chunk);
      if (final) files[file.name] = concatBytes(chunks, size);
    };
    file.start();
  });
  unzip.register(UnzipInflate);
  try {
    const step = 16 * 1024;
    for (let i = 0; i < bytes.length; i += step) unzip.push(bytes.subarray(i, Math.min(i + step, bytes.length)), i + step >= bytes.length);
  } catch (e) {
    if (e instanceof XlsFormError) throw e;
    throw unreadable();
  }
  return files;
}

const tooLarge = (part: string) =>
  new XlsFormError(`The spreadsheet is too large once uncompressed (part ${part} exceeds the limit of ${MAX_PART_BYTES} bytes, or all parts together exceed ${MAX_TOTAL_BYTES}).`);

/**
 * Drops worksheet cells that hold no value (`<c r="T1" s="3"/>`: formatting only) before SheetJS
 * parses the sheets. Templates such as ODK's format thousands of empty cells per sheet, which
 * would otherwise dominate the conversion time. The result is a stored (uncompressed) zip.
 */
function slimXlsx(files: Record<string, Uint8Array>, sheetFiles: Map<string, string>, wanted: string[] | undefined): Uint8Array {
  const dec = new TextDecoder();
  const enc = new TextEncoder();
  for (const name of Object.keys(files)) {
    if (!/^xl\/worksheets\/[^/]+\.xml$/i.test(name)) continue;
    const sheet = sheetFiles.get(name);
    // Sheets that are not XLSForm sheets (ODK's template has eight pages of help) are not parsed.
    if (wanted && sheet != null && !wanted.includes(sheet)) {
      files[name] = EMPTY_SHEET;
      continue;
    }
    const text = dec.decode(files[name]!).replace(/<c\b[^>]*\/>/g, '');
    // Refuse oversized sheets before SheetJS spends time on them.
    if (sheet != null) checkRowCount(sheet, (text.match(/<row\b[^>]*>\s*<c\b/g) ?? []).length);
    files[name] = enc.encode(text);
  }
  return zipSync(files, { level: 0 });
}

const EMPTY_SHEET = new TextEncoder().encode(
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData/></worksheet>',
);

/** Worksheet part → sheet name, from xl/workbook.xml and its relationships. */
function sheetParts(files: Record<string, Uint8Array>): Map<string, string> {
  const out = new Map<string, string>();
  const dec = new TextDecoder();
  const wb = files['xl/workbook.xml'];
  const rels = files['xl/_rels/workbook.xml.rels'];
  if (!wb || !rels) return out;
  const targets = new Map<string, string>();
  for (const m of dec.decode(rels).matchAll(/<Relationship\b[^>]*>/g)) {
    const id = /\bId="([^"]*)"/.exec(m[0])?.[1];
    const target = /\bTarget="([^"]*)"/.exec(m[0])?.[1];
    if (id && target) targets.set(id, target.startsWith('/') ? target.slice(1) : `xl/${target}`);
  }
  for (const m of dec.decode(wb).matchAll(/<(?:\w+:)?sheet\b[^>]*>/g)) {
    const name = /\bname="([^"]*)"/.exec(m[0])?.[1];
    const rid = /\br:id="([^"]*)"/.exec(m[0])?.[1];
    const part = rid ? targets.get(rid) : undefined;
    if (name != null && part) out.set(part, xmlUnescape(name));
  }
  return out;
}

const xmlUnescape = (s: string) =>
  s.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** The survey may have MAX_SURVEY_ROWS rows, other sheets MAX_SHEET_ROWS (a header row besides). */
function checkRowCount(sheet: string, rows: number): void {
  const survey = sheet.trim().toLowerCase() === 'survey';
  const max = survey ? MAX_SURVEY_ROWS : MAX_SHEET_ROWS;
  if (rows > max + 1) {
    throw new XlsFormError(`The '${sheet}' sheet has ${rows - 1} rows; this server converts at most ${max} rows on ${survey ? 'the survey sheet' : 'a sheet'}.`);
  }
}

const XLSFORM_SHEETS = new Set(['survey', 'choices', 'settings', 'entities', 'external_choices', 'osm']);

/**
 * The sheets of an .xlsx worth parsing: the XLSForm sheets (any case) when there is a survey sheet,
 * else every sheet.
 */
function sheetNamesToRead(files: Record<string, Uint8Array>): string[] | undefined {
  const names = allSheetNames(files);
  if (!names) return undefined;
  const wanted = names.filter((n) => XLSFORM_SHEETS.has(n.trim().toLowerCase()));
  // Without a survey sheet every sheet is read: a one-sheet workbook is the survey, and the error
  // for a missing survey names the sheets that look like it.
  return wanted.some((n) => n.trim().toLowerCase() === 'survey') ? wanted : undefined;
}

/** Every sheet name of an .xlsx, in workbook order (undefined without xl/workbook.xml). */
function allSheetNames(files: Record<string, Uint8Array>): string[] | undefined {
  const wb = files['xl/workbook.xml'];
  if (!wb) return undefined;
  const text = new TextDecoder().decode(wb);
  return [...text.matchAll(/<(?:\w+:)?sheet\b[^>]*\bname="([^"]*)"/g)].map((m) => xmlUnescape(m[1]!));
}

/** Python's str() of a float that is not a whole number (pyxform writes numbers with str()). */
export function pythonFloat(x: number): string {
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : x < 0 ? '-inf' : 'nan';
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return `${x}.0`;
  const [mant, expText] = x.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  if (exp < -4 || exp >= 16) {
    const m = mant.includes('.') ? mant : `${mant}.0`.replace(/\.0$/, '');
    return `${m}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  return String(x);
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** A cell's text as pyxform reads it (xlsx_value_to_str / xls_value_to_unicode). */
function cellText(cell: XLSX.CellObject | undefined, date1904: boolean): string {
  if (!cell || cell.v == null) return '';
  switch (cell.t) {
    case 'b':
      return cell.v ? 'TRUE' : 'FALSE';
    case 'n': {
      const v = cell.v as number;
      const fmt = typeof cell.z === 'string' ? cell.z : '';
      if (fmt && XLSX.SSF.is_date(fmt)) {
        const d = XLSX.SSF.parse_date_code(v, { date1904 });
        if (d) {
          // openpyxl rounds the day fraction to the millisecond and Python prints microseconds
          // when there are any: 03:04:05.678000 (a version string keeps them).
          const ms = Math.round((v - Math.floor(v)) * 86_400_000);
          const fraction = ms % 1000 === 0 || ms >= 86_400_000 ? '' : `.${pad((ms % 1000) * 1000, 6)}`;
          const time = ms >= 86_400_000 ? `${pad(d.H)}:${pad(d.M)}:${pad(Math.floor(d.S))}`
            : `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${fraction}`;
          if (v < 1 && v >= 0) return time;
          return `${d.y}-${pad(d.m)}-${pad(d.d)} ${time}`;
        }
      }
      return Number.isInteger(v) ? String(v) : pythonFloat(v);
    }
    case 'd': {
      const d = cell.v as Date;
      const ms = d.getUTCMilliseconds();
      return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${ms ? `.${pad(ms * 1000, 6)}` : ''}`;
    }
    case 'e':
      return '';
    default:
      // pyxform replaces non-breaking spaces with plain ones.
      return String(cell.v).replace(/\u00a0/g, ' ');
  }
}

/**
 * Reads the workbook's sheets.
 * @param bytes an .xlsx (zip) or .xls (BIFF in a compound file) workbook.
 * @returns sheets by lowercase name; every value trimmed, empty cells and empty rows left out.
 * @throws XlsFormError for an empty or unreadable file, a zip that is not a workbook, parts that
 *   inflate beyond the limits (zip bomb), or a sheet of more than MAX_SHEET_ROWS rows. Pure.
 */
export function readWorkbook(bytes: Uint8Array): Workbook {
  if (bytes.byteLength === 0) throw new XlsFormError('The uploaded spreadsheet is empty.');
  let input = bytes;
  let wanted: string[] | undefined;
  let allNames: string[] | undefined;
  if (isZip(bytes)) {
    const files = checkZip(bytes);
    allNames = allSheetNames(files);
    wanted = sheetNamesToRead(files);
    input = slimXlsx(files, sheetParts(files), wanted);
  } else if (!isCfb(bytes)) throw unreadable();
  let wb: XLSX.WorkBook;
  try {
    wb = XLSX.read(input, {
      ...(wanted ? { sheets: wanted } : {}),
      type: 'array',
      dense: true,
      cellFormula: false,
      cellHTML: false,
      cellText: false,
      cellStyles: false,
      cellNF: true,
      sheetRows: MAX_SHEET_ROWS + 2,
    });
  } catch {
    throw unreadable();
  }
  if (!wb.SheetNames || wb.SheetNames.length === 0) throw unreadable();
  const date1904 = Boolean(wb.Workbook?.WBProps?.date1904);
  const out: Workbook = new Map();
  out.sheetNames = allNames ?? [...wb.SheetNames];
  for (const name of wb.SheetNames) {
    const ws = wb.Sheets[name];
    if (!ws) continue;
    const data = (ws as unknown as { '!data'?: Array<Array<XLSX.CellObject | undefined> | undefined> })['!data'] ?? [];
    checkRowCount(name, data.reduce((n, line) => (line && line.some((c) => c != null && c.v != null && c.v !== '') ? n + 1 : n), 0));
    let headers: string[] | null = null;
    const rows: SheetRow[] = [];
    for (let r = 0; r < data.length; r++) {
      const line = data[r];
      if (!line) continue;
      const texts = Array.from(line, (c) => cellText(c, date1904));
      if (headers == null) {
        if (texts.every((t) => t.trim() === '')) continue;
        headers = texts.map((t) => t.trim());
        continue;
      }
      const cells = new Map<string, string>();
      for (let c = 0; c < texts.length; c++) {
        const h = headers[c];
        const v = texts[c]!;
        if (!h || v.trim() === '') continue;
        cells.set(h, v);
      }
      if (cells.size > 0) rows.push({ row: r + 1, cells });
    }
    out.set(name.trim().toLowerCase(), { name, headers: headers ?? [], rows });
  }
  return out;
}
