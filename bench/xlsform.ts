/**
 * XLSForm conversion time (issue 7): every fixture spreadsheet (shared/fixtures/xlsform,
 * shared/fixtures/xlsform-generated/{pyxform-examples,authored}) and ODK's official template
 * (shared/reference/xlsform/odk-xlsform-template.xlsx) converted in process by `convertXlsForm`,
 * BENCH_ITER (20) timed runs each after one untimed warm-up run, the form id falling back to the
 * file stem as in the fixture tests. Prints, per sheet, its size, median and max ms; then the largest
 * median and the largest max with their ratio to the target (under 200 ms for every sheet). The
 * must-fail sheets (`<stem>.error.txt`) are timed the same way and listed separately: they must
 * fail, and fail quickly too. Exits 1 when a sheet that must convert fails or one that must fail
 * converts (the timings of such a sheet are still printed).
 *
 *   npx tsx bench/xlsform.ts
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { basename, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { convertXlsForm, XlsFormError } from '../lib/xlsform';

const ITER = Number(process.env.BENCH_ITER ?? 20);
const TARGET_MS = 200;

const SHARED = fileURLToPath(new URL('../../shared/', import.meta.url));
const DIRS = ['fixtures/xlsform', 'fixtures/xlsform-generated/pyxform-examples', 'fixtures/xlsform-generated/authored'];
const TEMPLATE = 'reference/xlsform/odk-xlsform-template.xlsx';

interface Sheet {
  label: string;
  path: string;
  stem: string;
  mustFail: boolean;
}

const sheets: Sheet[] = [];
for (const dir of DIRS) {
  for (const file of readdirSync(join(SHARED, dir)).filter((f) => /\.xlsx?$/.test(f)).sort()) {
    const stem = basename(file, extname(file));
    sheets.push({ label: `${dir.replace('fixtures/', '')}/${file}`, path: join(SHARED, dir, file), stem, mustFail: existsSync(join(SHARED, dir, `${stem}.error.txt`)) });
  }
}
sheets.push({ label: TEMPLATE.replace('reference/', ''), path: join(SHARED, TEMPLATE), stem: 'odk-xlsform-template', mustFail: false });

interface Row {
  sheet: Sheet;
  kb: number;
  median: number;
  max: number;
  /** What went against expectations (a conversion that failed or succeeded wrongly), else ''. */
  problem: string;
}

/** One conversion; returns the error message when it threw. */
function once(bytes: Uint8Array, stem: string): string | null {
  try {
    convertXlsForm(bytes, { formIdFallback: stem });
    return null;
  } catch (e) {
    if (e instanceof XlsFormError) return e.message;
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
}

const rows: Row[] = [];
const started = performance.now();
for (const sheet of sheets) {
  const bytes = new Uint8Array(readFileSync(sheet.path));
  const first = once(bytes, sheet.stem); // warm-up, untimed
  let problem = '';
  if (sheet.mustFail && first === null) problem = 'converted, but must fail';
  if (!sheet.mustFail && first !== null) problem = `failed: ${first.slice(0, 100)}`;
  const times: number[] = [];
  for (let i = 0; i < ITER; i++) {
    const t = performance.now();
    once(bytes, sheet.stem);
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const median = times.length % 2 ? times[(times.length - 1) / 2]! : (times[times.length / 2 - 1]! + times[times.length / 2]!) / 2;
  rows.push({ sheet, kb: statSync(sheet.path).size / 1024, median, max: times[times.length - 1]!, problem });
}

const width = Math.max(...rows.map((r) => r.sheet.label.length));
const line = (r: Row) =>
  `${r.sheet.label.padEnd(width)}  ${r.kb.toFixed(0).padStart(5)}  ${r.median.toFixed(1).padStart(8)}  ${r.max.toFixed(1).padStart(8)}` +
  `${r.median >= TARGET_MS || r.max >= TARGET_MS ? '  OVER' : ''}${r.problem ? `  ← ${r.problem}` : ''}`;
const header = `${'sheet'.padEnd(width)}  ${'KiB'.padStart(5)}  ${'median'.padStart(8)}  ${'max ms'.padStart(8)}`;

function table(title: string, list: Row[]): void {
  console.log(`\n${title} (${list.length} sheets, ${ITER} runs each after 1 warm-up)`);
  console.log(header);
  for (const r of list) console.log(line(r));
  if (list.length === 0) return;
  const worstMedian = list.reduce((a, b) => (b.median > a.median ? b : a));
  const worstMax = list.reduce((a, b) => (b.max > a.max ? b : a));
  console.log(`largest median ${worstMedian.median.toFixed(1)} ms (${worstMedian.sheet.label}), ratio ÷${TARGET_MS}ms=${(worstMedian.median / TARGET_MS).toFixed(3)}`);
  console.log(`largest max    ${worstMax.max.toFixed(1)} ms (${worstMax.sheet.label}), ratio ÷${TARGET_MS}ms=${(worstMax.max / TARGET_MS).toFixed(3)}` +
    ` → ${worstMax.max < TARGET_MS ? 'every run within' : 'OVER'} the ${TARGET_MS} ms target`);
}

table('sheets that convert', rows.filter((r) => !r.sheet.mustFail));
table('sheets that must fail', rows.filter((r) => r.sheet.mustFail));
const bad = rows.filter((r) => r.problem);
console.log(`\n${rows.length} sheets in ${((performance.now() - started) / 1000).toFixed(1)} s; ${bad.length} against expectations; ` +
  `load average ${loadavg().map((x) => x.toFixed(2)).join(' ')} (${availableParallelism()} CPUs)`);
process.exit(bad.length > 0 ? 1 : 0);
