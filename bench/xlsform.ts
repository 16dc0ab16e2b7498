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
import * as XLSX from '@e965/xlsx';
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
largeForm();
table('sheets that must fail', rows.filter((r) => r.sheet.mustFail));
const bad = rows.filter((r) => r.problem);
console.log(`\n${rows.length} sheets in ${((performance.now() - started) / 1000).toFixed(1)} s; ${bad.length} against expectations; ` +
  `load average ${loadavg().map((x) => x.toFixed(2)).join(' ')} (${availableParallelism()} CPUs)`);
process.exit(bad.length > 0 ? 1 : 0);

/**
 * For information (not a fixture, no target): a large synthetic form in the size range that has
 * made pyxform-http slow — 2,000 questions in 40 groups (every fifth group a repeat), labels and
 * hints in three languages, a relevant on each question referring to the one before, and 200
 * choice lists of 100 choices (20,000 choice rows).
 */
function largeForm(): void {
  const langs = ['English (en)', 'Français (fr)', 'Kiswahili (sw)'];
  const survey: string[][] = [['type', 'name', ...langs.map((l) => `label::${l}`), ...langs.map((l) => `hint::${l}`), 'relevant', 'required']];
  const types = ['text', 'integer', 'decimal', 'date', 'select_one', 'select_multiple', 'geopoint', 'note'];
  let q = 0;
  for (let g = 0; g < 40; g++) {
    const repeat = g % 5 === 4;
    survey.push([repeat ? 'begin_repeat' : 'begin_group', `g${g}`, ...langs.map((l) => `Section ${g} ${l}`), '', '', '', '', '']);
    for (let i = 0; i < 50; i++, q++) {
      const t = types[q % types.length]!;
      const type = t.startsWith('select') ? `${t} list${q % 200}` : t;
      const relevant = i > 0 ? `\${q${q - 1}} != ''` : '';
      survey.push([type, `q${q}`, ...langs.map((l) => `Question ${q} (${l}) about \${q${Math.max(0, q - 1)}}`), ...langs.map((l) => `Hint ${q} ${l}`), relevant, q % 3 ? 'yes' : '']);
    }
    survey.push([repeat ? 'end_repeat' : 'end_group', '', '', '', '', '', '', '', '', '']);
  }
  const choices: string[][] = [['list_name', 'name', ...langs.map((l) => `label::${l}`)]];
  for (let l = 0; l < 200; l++) for (let c = 0; c < 100; c++) choices.push([`list${l}`, `c${c}`, ...langs.map((x) => `Choice ${c} ${x}`)]);
  const wb = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(wb, XLSX.utils.aoa_to_sheet(survey), 'survey');
  XLSX.utils.book_append_sheet(wb, XLSX.utils.aoa_to_sheet(choices), 'choices');
  XLSX.utils.book_append_sheet(wb, XLSX.utils.aoa_to_sheet([['form_id', 'default_language'], ['large', 'English (en)']]), 'settings');
  const bytes = new Uint8Array(XLSX.write(wb, { type: 'array', bookType: 'xlsx', compression: true }) as ArrayBuffer);
  const runs = Math.max(3, Math.min(ITER, 5));
  let xmlLength = 0;
  const times: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const t = performance.now();
    xmlLength = convertXlsForm(bytes, { formIdFallback: 'large' }).xml.length;
    if (i > 0) times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(`\nfor information: synthetic large form, ${(bytes.length / 1024 / 1024).toFixed(1)} MiB .xlsx (2,000 questions, 3 languages, 20,000 choices) → ` +
    `${(xmlLength / 1024 / 1024).toFixed(1)} MiB XForm: median ${times[Math.floor(times.length / 2)]!.toFixed(0)} ms, max ${times[times.length - 1]!.toFixed(0)} ms over ${runs} runs`);
}
