/**
 * Issue 7, bad input: whatever is uploaded, the converter answers quickly with a clear XlsFormError
 * (Central: 400) or a form, and never hangs or takes the process's memory.
 *
 * Every conversion here runs in a worker thread (the converter loaded with tsx's `tsImport`) so that
 * a converter that loops forever is terminated after a deadline and reported, instead of hanging the
 * test run (a synchronous loop cannot be interrupted by a test timeout). While a conversion runs, the
 * main thread samples the process's RSS (the worker's heap is in the same process) for the peak
 * growth. Timings asserted are the conversion's own, measured inside the worker.
 */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { crc32 } from 'node:zlib';
import * as XLSX from '@e965/xlsx';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parseForm } from '../../../lib/xforms/parse-form';

const FIXTURES = fileURLToPath(new URL('../../../../shared/fixtures/', import.meta.url));
const CONVERTER = new URL('../../../lib/xlsform/index.ts', import.meta.url);
const MiB = 1024 * 1024;

// ─────────────────────────────────────────────────────────────────────────────
// The isolated converter.

type Outcome =
  | { kind: 'ok'; ms: number; xml: string; warnings: string[]; peakRssGrowth: number }
  | { kind: 'error'; ms: number; isXlsFormError: boolean; name: string; message: string; stack: string; peakRssGrowth: number }
  | { kind: 'timeout'; ms: number; peakRssGrowth: number }
  | { kind: 'crash'; message: string; peakRssGrowth: number };

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const { tsImport } = await import(workerData.tsxApi);
  const mod = await tsImport(workerData.converter, workerData.parent);
  parentPort.on('message', ({ bytes, opts }) => {
    const t = performance.now();
    try {
      const r = mod.convertXlsForm(bytes, opts);
      parentPort.postMessage({ kind: 'ok', ms: performance.now() - t, xml: r.xml, warnings: r.warnings });
    } catch (e) {
      parentPort.postMessage({
        kind: 'error', ms: performance.now() - t, isXlsFormError: e instanceof mod.XlsFormError,
        name: String(e && e.name), message: String(e && e.message !== undefined ? e.message : e), stack: String(e && e.stack),
      });
    }
  });
  parentPort.postMessage({ kind: 'ready' });
})().catch((e) => parentPort.postMessage({ kind: 'load-error', message: String((e && e.stack) || e) }));
`;

/** One worker holding the converter; replaced after a timeout or a crash. */
class IsolatedConverter {
  private worker: Worker | null = null;
  private ready: Promise<void> | null = null;

  private start(): Promise<void> {
    const require = createRequire(import.meta.url);
    const tsxApi = pathToFileURL(require.resolve('tsx/esm/api').replace(/index\.cjs$/, 'index.mjs')).href;
    const worker = new Worker(WORKER, {
      eval: true,
      workerData: { tsxApi, converter: CONVERTER.href, parent: import.meta.url },
      // A converter that builds a multi-gigabyte string dies here instead of taking the process.
      resourceLimits: { maxOldGenerationSizeMb: 1024 },
    });
    this.worker = worker;
    this.ready = new Promise((resolve, reject) => {
      const onMessage = (m: { kind: string; message?: string }) => {
        worker.off('message', onMessage);
        if (m.kind === 'ready') resolve();
        else reject(new Error(`the converter did not load in the worker: ${m.message}`));
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
    });
    return this.ready;
  }

  /** Converts `bytes` in the worker; terminates it after `deadlineMs`. */
  async convert(bytes: Uint8Array, opts: { formIdFallback?: string } = {}, deadlineMs = 10_000): Promise<Outcome> {
    if (!this.worker) await this.start();
    else await this.ready;
    const worker = this.worker!;
    const copy = bytes.slice(); // a transferable buffer of its own
    globalThis.gc?.();
    const baseline = process.memoryUsage.rss();
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage.rss());
    }, 10);
    const started = performance.now();
    try {
      return await new Promise<Outcome>((resolve) => {
        const done = (o: Outcome) => {
          clearTimeout(timer);
          worker.off('message', onMessage);
          worker.off('error', onError);
          worker.off('exit', onExit);
          resolve(o);
        };
        const growth = () => Math.max(peak, process.memoryUsage.rss()) - baseline;
        const onMessage = (m: Omit<Outcome, 'peakRssGrowth'>) => done({ ...m, peakRssGrowth: growth() } as Outcome);
        const onError = (e: Error) => {
          this.worker = null;
          done({ kind: 'crash', message: `${e.name}: ${e.message}`, peakRssGrowth: growth() });
        };
        const onExit = (code: number) => {
          this.worker = null;
          done({ kind: 'crash', message: `worker exited with ${code}`, peakRssGrowth: growth() });
        };
        const timer = setTimeout(() => {
          this.worker = null;
          worker.off('exit', onExit);
          void worker.terminate();
          done({ kind: 'timeout', ms: performance.now() - started, peakRssGrowth: growth() });
        }, deadlineMs);
        worker.on('message', onMessage);
        worker.once('error', onError);
        worker.once('exit', onExit);
        worker.postMessage({ bytes: copy, opts }, [copy.buffer]);
      });
    } finally {
      clearInterval(sampler);
    }
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
    this.worker = null;
  }
}

const converter = new IsolatedConverter();
afterAll(() => converter.close());

/** Messages that betray an unhandled internal failure rather than a message meant for a user. */
const INTERNAL = /\bundefined\b|\bNaN\b|TypeError|RangeError|ReferenceError|SyntaxError|Cannot read propert|Cannot set propert|is not a function|is not iterable|Maximum call stack|first argument must be/;

/** A file that cannot be read as a spreadsheet. */
const UNREADABLE = /could not be read|cannot be read|not a valid|unsupported|unreadable|corrupt|invalid (file|workbook|spreadsheet)/i;

const summary = (o: Outcome) =>
  o.kind === 'error' ? `${o.isXlsFormError ? 'XlsFormError' : o.name}: ${o.message}\n${o.isXlsFormError ? '' : o.stack}`
    : o.kind === 'ok' ? `converted (${o.xml.length} chars)` : JSON.stringify(o);

/** Asserts a clear XlsFormError whose message matches `pattern`, within `maxMs`. */
function expectClearError(o: Outcome, pattern: RegExp, maxMs = 2000): void {
  expect(o.kind, summary(o)).toBe('error');
  if (o.kind !== 'error') return;
  expect(o.isXlsFormError, summary(o)).toBe(true);
  expect(o.message).toMatch(pattern);
  expect(o.message).not.toMatch(INTERNAL);
  expect(o.ms).toBeLessThan(maxMs);
}

// ─────────────────────────────────────────────────────────────────────────────
// Building spreadsheets.

type Cell = string | number | null;

/** An .xlsx with the given sheets (rows of cells, the first row the header). */
function workbook(sheets: Record<string, Cell[][]>): Uint8Array {
  const wb = XLSX.utils.book_new();
  for (const [name, rows] of Object.entries(sheets)) XLSX.utils.book_append_sheet(wb, XLSX.utils.aoa_to_sheet(rows), name);
  return new Uint8Array(XLSX.write(wb, { type: 'array', bookType: 'xlsx', compression: true }) as ArrayBuffer);
}

/** Deterministic pseudo-random bytes (xorshift32). */
function randomBytes(n: number, seed = 0x9e3779b9): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

// ─────────────────────────────────────────────────────────────────────────────
// A zip bomb: an .xlsx whose worksheet part inflates to about 2 GiB from about 2 MB.

/** Writes bits least-significant first, as DEFLATE does, into a zero-filled buffer. */
class BitWriter {
  bit = 0;
  constructor(readonly buf: Uint8Array) {}
  bits(value: number, n: number): void {
    for (let i = 0; i < n; i++, this.bit++) if ((value >>> i) & 1) this.buf[this.bit >>> 3]! |= 1 << (this.bit & 7);
  }
  /** A Huffman code: most significant bit first. */
  code(code: number, len: number): void {
    for (let i = len - 1; i >= 0; i--) this.bits((code >>> i) & 1, 1);
  }
  align(): void {
    this.bit = (this.bit + 7) & ~7;
  }
  bytes(data: Uint8Array): void {
    this.buf.set(data, this.bit >>> 3);
    this.bit += data.length * 8;
  }
  /** A stored block (header bits, alignment, LEN, NLEN, data). */
  stored(data: Uint8Array, final: boolean): void {
    this.bits(final ? 1 : 0, 1);
    this.bits(0, 2);
    this.align();
    this.bits(data.length, 16);
    this.bits(~data.length & 0xffff, 16);
    this.bytes(data);
  }
}

/**
 * Raw DEFLATE data for `prefix`, then 1 + 258 × `repeats` spaces, then `suffix`: a stored block, a
 * hand-made dynamic-Huffman block where "copy 258 bytes from distance 1" costs 2 bits (both codes are
 * 1-bit zeros, so the run is just zero bytes), and a final stored block. About 1,032 : 1.
 */
function spacesDeflate(prefix: Uint8Array, repeats: number, suffix: Uint8Array): { data: Uint8Array; size: number } {
  const w = new BitWriter(new Uint8Array(prefix.length + suffix.length + Math.ceil(repeats / 4) + 64));
  w.stored(prefix, false);
  w.bits(0, 1); // BFINAL
  w.bits(2, 2); // BTYPE: dynamic Huffman
  w.bits(286 - 257, 5); // HLIT: literal/length codes up to 285
  w.bits(2 - 1, 5); // HDIST: 2 distance codes
  w.bits(18 - 4, 4); // HCLEN: 18 code-length code lengths
  // Code-length code: 18 → '0', 1 → '10', 2 → '11'; given in the RFC 1951 order.
  const clLengths: Record<number, number> = { 18: 1, 1: 2, 2: 2 };
  for (const s of [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1]) w.bits(clLengths[s] ?? 0, 3);
  const zeros = (n: number) => {
    w.code(0, 1);
    w.bits(n - 11, 7);
  };
  const len1 = () => w.code(0b10, 2);
  const len2 = () => w.code(0b11, 2);
  // Literal/length lengths: 32 (space) → 2, 256 (end of block) → 2, 285 (length 258) → 1.
  zeros(32);
  len2();
  zeros(138);
  zeros(85);
  len2();
  zeros(28);
  len1();
  // Distance lengths: codes 0 (distance 1) and 1, one bit each.
  len1();
  len1();
  // Canonical codes: 285 → '0', 32 → '10', 256 → '11'; distance 0 → '0'.
  w.code(0b10, 2); // one literal space
  w.bit += 2 * repeats; // `repeats` × (length 258 '0', distance 1 '0'): zero bits, already there
  w.code(0b11, 2); // end of block
  w.stored(suffix, true);
  return { data: w.buf.subarray(0, (w.bit + 7) >>> 3), size: prefix.length + 1 + 258 * repeats + suffix.length };
}

/** CRC-32 of the same content, without materialising it. */
function spacesCrc(prefix: Uint8Array, repeats: number, suffix: Uint8Array): number {
  const chunk = new Uint8Array(MiB).fill(0x20);
  let crc = crc32(prefix);
  let left = 1 + 258 * repeats;
  while (left > 0) {
    const n = Math.min(left, chunk.length);
    crc = crc32(chunk.subarray(0, n), crc);
    left -= n;
  }
  return crc32(suffix, crc);
}

interface ZipEntry {
  name: string;
  data: Uint8Array;
  method: 0 | 8;
  crc: number;
  size: number;
}

/** A plain zip (no data descriptors, no zip64, no comment). */
function zip(entries: ZipEntry[]): Uint8Array {
  const enc = new TextEncoder();
  const chunks: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = enc.encode(e.name);
    const size = e.size;
    const local = new DataView(new ArrayBuffer(30));
    local.setUint32(0, 0x04034b50, true);
    local.setUint16(4, 20, true);
    local.setUint16(8, e.method, true);
    local.setUint16(12, 33, true); // 1980-01-01
    local.setUint32(14, e.crc >>> 0, true);
    local.setUint32(18, e.data.length, true);
    local.setUint32(22, size, true);
    local.setUint16(26, name.length, true);
    const cd = new DataView(new ArrayBuffer(46));
    cd.setUint32(0, 0x02014b50, true);
    cd.setUint16(4, 20, true);
    cd.setUint16(6, 20, true);
    cd.setUint16(10, e.method, true);
    cd.setUint16(14, 33, true);
    cd.setUint32(16, e.crc >>> 0, true);
    cd.setUint32(20, e.data.length, true);
    cd.setUint32(24, size, true);
    cd.setUint16(28, name.length, true);
    cd.setUint32(42, offset, true);
    chunks.push(new Uint8Array(local.buffer), name, e.data);
    central.push(new Uint8Array(cd.buffer), name);
    offset += 30 + name.length + e.data.length;
  }
  const cdSize = central.reduce((n, c) => n + c.length, 0);
  const end = new DataView(new ArrayBuffer(22));
  end.setUint32(0, 0x06054b50, true);
  end.setUint16(8, entries.length, true);
  end.setUint16(10, entries.length, true);
  end.setUint32(12, cdSize, true);
  end.setUint32(16, offset, true);
  const all = [...chunks, ...central, new Uint8Array(end.buffer)];
  const out = new Uint8Array(all.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of all) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

const stored = (name: string, text: string): ZipEntry => {
  const data = strToU8(text);
  return { name, data, method: 0, crc: crc32(data), size: data.length };
};

const SML = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL = 'http://schemas.openxmlformats.org/package/2006/relationships';
const DOC_REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

/**
 * An .xlsx (one sheet, `survey`) whose worksheet XML is a header row (`type`), about `inflated` bytes
 * of spaces inside `<sheetData>`, and the closing tags: well-formed, and honest about its sizes.
 */
function bombXlsx(inflated: number): { bytes: Uint8Array; size: number } {
  const prefix = strToU8(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="${SML}"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>type</t></is></c></row>`);
  const suffix = strToU8('</sheetData></worksheet>');
  const repeats = Math.max(0, Math.floor((inflated - prefix.length - suffix.length - 1) / 258));
  const { data, size } = spacesDeflate(prefix, repeats, suffix);
  const sheet = { name: 'xl/worksheets/sheet1.xml', data, method: 8 as const, crc: spacesCrc(prefix, repeats, suffix), size };
  const bytes = zip([
    stored('[Content_Types].xml',
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
      `<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>` +
      `<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
      `<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`),
    stored('_rels/.rels', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="${REL}"><Relationship Id="rId1" Type="${DOC_REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>`),
    stored('xl/workbook.xml', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="${SML}" xmlns:r="${DOC_REL}"><sheets><sheet name="survey" sheetId="1" r:id="rId1"/></sheets></workbook>`),
    stored('xl/_rels/workbook.xml.rels', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="${REL}"><Relationship Id="rId1" Type="${DOC_REL}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`),
    sheet,
  ]);
  return { bytes, size };
}

/**
 * A copy of a zip from `zip()` whose last entry declares `declared` uncompressed bytes, in its local
 * header and its central directory entry, whatever its data inflates to.
 */
function understate(bytes: Uint8Array, declared: number): Uint8Array {
  const out = bytes.slice();
  const view = new DataView(out.buffer);
  const end = out.length - 22;
  const cdOffset = view.getUint32(end + 16, true);
  const entries = view.getUint16(end + 10, true);
  let at = cdOffset;
  for (let i = 0; i < entries - 1; i++) at += 46 + view.getUint16(at + 28, true);
  view.setUint32(at + 24, declared, true);
  view.setUint32(view.getUint32(at + 42, true) + 22, declared, true);
  return out;
}

// ─────────────────────────────────────────────────────────────────────────────

describe('unreadable files', () => {
  test('an empty file', async () => {
    expectClearError(await converter.convert(new Uint8Array(0), { formIdFallback: 'empty' }), /empty|could not be read|not a valid/i);
  });

  test('random bytes', async () => {
    expectClearError(await converter.convert(randomBytes(64 * 1024), { formIdFallback: 'random' }), UNREADABLE);
  });

  test('random bytes behind a zip or OLE2 signature', async () => {
    const zipLike = randomBytes(8192, 7);
    zipLike.set([0x50, 0x4b, 0x03, 0x04]);
    expectClearError(await converter.convert(zipLike, { formIdFallback: 'zip-like' }), UNREADABLE);
    const oleLike = randomBytes(8192, 11);
    oleLike.set([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
    expectClearError(await converter.convert(oleLike, { formIdFallback: 'ole-like' }), UNREADABLE);
  });

  test('a zip that is not a workbook', async () => {
    const bytes = zipSync({ 'readme.txt': strToU8('not a spreadsheet'), 'data/values.json': strToU8('{"survey": []}') });
    expectClearError(await converter.convert(bytes, { formIdFallback: 'not-a-workbook' }), new RegExp(`${UNREADABLE.source}|You must have a sheet named 'survey'`, 'i'));
  });

  test.each([0.1, 0.5, 0.9])('an .xls (BIFF) file truncated to %s of its length', async (fraction) => {
    const full = readFileSync(`${FIXTURES}xlsform/widgets.xls`);
    const cut = new Uint8Array(full.subarray(0, Math.floor(full.length * fraction)));
    expectClearError(await converter.convert(cut, { formIdFallback: 'widgets' }), UNREADABLE);
  });

  test.each([0.1, 0.5, 0.9])('an .xlsx file truncated to %s of its length', async (fraction) => {
    const full = readFileSync(`${FIXTURES}xlsform/or_other.xlsx`);
    const cut = new Uint8Array(full.subarray(0, Math.floor(full.length * fraction)));
    expectClearError(await converter.convert(cut, { formIdFallback: 'or_other' }), UNREADABLE);
  });
});

describe('workbooks that are not XLSForms', () => {
  test('a workbook with no survey sheet gives pyxform\'s error', async () => {
    const bytes = workbook({
      choices: [['list_name', 'name', 'label'], ['yn', 'yes', 'Yes'], ['yn', 'no', 'No']],
      settings: [['form_title'], ['No survey']],
    });
    expectClearError(await converter.convert(bytes, { formIdFallback: 'no_survey' }), /^You must have a sheet named 'survey'\./);
  });

  test('a survey sheet with 100,000 rows converts or is refused, quickly', async () => {
    const rows: Cell[][] = [['type', 'name', 'label']];
    for (let i = 1; i <= 100_000; i++) rows.push(['text', `q${i}`, `Question ${i}`]);
    const bytes = workbook({ survey: rows });
    const o = await converter.convert(bytes, { formIdFallback: 'rows_100k' }, 20_000);
    if (o.kind === 'ok') {
      expect(o.ms).toBeLessThan(5000);
      expect(o.xml).toContain('<q100000/>');
      expect(parseForm(o.xml).fields).toHaveLength(100_000 + 2); // + meta, meta/instanceID
    } else {
      expectClearError(o, /rows|too (large|many|big)|limit/i, 5000);
    }
    expect(o.peakRssGrowth, `${(o.peakRssGrowth / MiB).toFixed(0)} MiB`).toBeLessThan(600 * MiB);
  }, 40_000);
});

describe('XML entities in the workbook', () => {
  test('a billion-laughs DTD in sharedStrings.xml is not expanded: the entity stays literal text', async () => {
    const files = unzipSync(new Uint8Array(readFileSync(new URL('../../../../shared/fixtures/central-misc/simple.xlsx', import.meta.url))));
    let dtd = '<!DOCTYPE lolz [<!ENTITY lol0 "lol">';
    for (let i = 1; i <= 9; i++) dtd += `<!ENTITY lol${i} "${`&lol${i - 1};`.repeat(10)}">`;
    dtd += ']>';
    const strings = strFromU8(files['xl/sharedStrings.xml']!);
    // The first shared string is the survey's `type` header.
    files['xl/sharedStrings.xml'] = strToU8(strings.replace(/^(<\?xml[^>]*\?>)?/, (m) => m + dtd).replace(/<t>([^<]*)<\/t>/, '<t>&lol9;</t>'));
    const o = await converter.convert(zipSync(files), { formIdFallback: 'lolz' });
    // The header reads as the literal '&lol9;', so the survey has no 'type' column: pyxform 4.5's
    // HEADER_003 (which names the missing header, not the cell). An expanded entity would be a
    // gigabyte string, far past the memory bound.
    expectClearError(o, /One or more required column headers were not found: 'type'/);
    expect(o.peakRssGrowth).toBeLessThan(100 * MiB);
  });
});

describe('cyclic ${} references', () => {
  /**
   * a ↔ b, c → c, a label and a relevant naming their own question, and a chain x1 → x2 → … → x60 → x1
   * where each step names the next twice (a converter that expanded references recursively would do
   * 2^60 steps). pyxform substitutes each `${}` once and does not reject cycles in calculations.
   */
  const CHAIN = 60;
  const cyclic = () => {
    const rows: Cell[][] = [
      ['type', 'name', 'label', 'calculation', 'relevant'],
      ['calculate', 'a', null, '${b} + 1', null],
      ['calculate', 'b', null, '${a} + 1', null],
      ['calculate', 'c', null, '${c} * 2', null],
      ['text', 't', 'Now ${a}, before ${t}', null, "${t} != 'x'"],
    ];
    for (let i = 1; i <= CHAIN; i++) {
      const next = `x${i === CHAIN ? 1 : i + 1}`;
      rows.push(['calculate', `x${i}`, null, `\${${next}} + \${${next}}`, null]);
    }
    return workbook({ survey: rows });
  };

  test('returns or throws quickly, never loops', async () => {
    const o = await converter.convert(cyclic(), { formIdFallback: 'cyclic' }, 10_000);
    if (o.kind === 'ok') {
      expect(o.ms).toBeLessThan(2000);
      const fields = parseForm(o.xml).fields.map((f) => f.path);
      expect(fields).toEqual(expect.arrayContaining(['/a', '/b', '/c', '/t', '/x1', `/x${CHAIN}`]));
      expect(o.xml).toMatch(/<bind [^>]*calculate=" \/data\/b  ?\+ 1"[^>]*nodeset="\/data\/a"|<bind [^>]*nodeset="\/data\/a"[^>]*calculate=" \/data\/b  ?\+ 1"/);
      expect(o.xml).toContain('/data/x1 ');
    } else {
      expectClearError(o, /circular|cycl|reference/i, 2000);
    }
  });
});

describe('a zip bomb', () => {
  let honest: { bytes: Uint8Array; size: number };
  let lying: { bytes: Uint8Array; size: number };

  beforeAll(() => {
    honest = bombXlsx(2 * 1024 * MiB - MiB);
    lying = { bytes: understate(honest.bytes, 4096), size: honest.size };
  });

  test('the builder makes a real workbook (checked on a small one) and a small file for 2 GiB', () => {
    const small = bombXlsx(3 * MiB);
    const wb = XLSX.read(small.bytes, { type: 'array' });
    expect(wb.SheetNames).toEqual(['survey']);
    expect(wb.Sheets.survey!.A1?.v).toBe('type');
    const part = unzipSync(small.bytes)['xl/worksheets/sheet1.xml']!;
    expect(part.length).toBe(small.size);
    // The CRC-32 in the central directory entry of the sheet (the last entry, right before the end record).
    expect(crc32(part)).toBe(new DataView(small.bytes.buffer, small.bytes.byteOffset).getUint32(small.bytes.length - 22 - 46 - 24 + 16, true));
    expect(strFromU8(part.subarray(part.length - 24))).toBe('</sheetData></worksheet>');
    expect(honest.size).toBeGreaterThan(2000 * MiB);
    expect(honest.bytes.length).toBeLessThan(3 * MiB);
    const declared = (bytes: Uint8Array) => {
      const sizes: Record<string, number> = {};
      unzipSync(bytes, { filter: (f) => ((sizes[f.name] = f.originalSize), false) });
      return sizes['xl/worksheets/sheet1.xml'];
    };
    expect(declared(honest.bytes)).toBe(honest.size);
    expect(declared(lying.bytes)).toBe(4096);
    expect(lying.bytes.length).toBe(honest.bytes.length);
  });

  test('a worksheet part that inflates to 2 GiB is refused quickly, with bounded memory', async () => {
    const o = await converter.convert(honest.bytes, { formIdFallback: 'bomb' }, 8000);
    expectClearError(o, /too large|size|limit|uncompressed|exceed/i, 3000);
    expect(o.peakRssGrowth, `${(o.peakRssGrowth / MiB).toFixed(0)} MiB`).toBeLessThan(300 * MiB);
  }, 30_000);

  test('the same part declaring 4 KiB in its headers is refused quickly, with bounded memory', async () => {
    const o = await converter.convert(lying.bytes, { formIdFallback: 'bomb' }, 8000);
    expectClearError(o, new RegExp(`too large|size|limit|uncompressed|exceed|${UNREADABLE.source}`, 'i'), 3000);
    expect(o.peakRssGrowth, `${(o.peakRssGrowth / MiB).toFixed(0)} MiB`).toBeLessThan(300 * MiB);
  }, 30_000);
});
