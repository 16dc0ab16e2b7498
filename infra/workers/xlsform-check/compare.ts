/**
 * Converts every fixture spreadsheet and ODK's template under Node and through the probe Worker's
 * `POST /convert`, and compares the answers byte for byte; then times the template both ways.
 * Usage (from the repository root): npx tsx infra/workers/xlsform-check/compare.ts http://127.0.0.1:8799
 * Exits 1 when any answer differs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { convertXlsForm } from '../../../lib/xlsform';

const base = process.argv[2] ?? 'http://127.0.0.1:8799';
const shared = fileURLToPath(new URL('../../../../shared/', import.meta.url));
const dirs = ['fixtures/xlsform', 'fixtures/xlsform-generated/pyxform-examples', 'fixtures/xlsform-generated/authored'].map((d) => join(shared, d));
const files = dirs.flatMap((d) => readdirSync(d).filter((f) => /\.xlsx?$/i.test(f)).sort().map((f) => join(d, f)));
const template = join(shared, 'reference/xlsform/odk-xlsform-template.xlsx');
files.push(template);

function onNode(bytes: Uint8Array, fallback: string): unknown {
  try {
    const r = convertXlsForm(bytes, { formIdFallback: fallback });
    return { xml: r.xml, warnings: r.warnings, itemsets: r.itemsets };
  } catch (e) {
    return { error: (e as Error).message, name: (e as Error).name };
  }
}

async function onWorker(bytes: Uint8Array<ArrayBuffer>, fallback: string): Promise<unknown> {
  const res = await fetch(`${base}/convert?fallback=${encodeURIComponent(fallback)}`, { method: 'POST', body: new Blob([bytes]) });
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return { crash: text.slice(0, 300) };
  }
}

let same = 0;
const different: string[] = [];
for (const f of files) {
  const bytes = new Uint8Array(readFileSync(f)) as Uint8Array<ArrayBuffer>;
  const stem = basename(f, extname(f));
  if (JSON.stringify(onNode(bytes, stem)) === JSON.stringify(await onWorker(bytes, stem))) same++;
  else different.push(f);
}
console.log(`${files.length} spreadsheets: ${same} identical, ${different.length} different`);
for (const f of different) console.log(`  DIFFERENT ${f}`);

const tpl = new Uint8Array(readFileSync(template)) as Uint8Array<ArrayBuffer>;
const N = 20;
onNode(tpl, 'x');
let t = performance.now();
for (let i = 0; i < N; i++) onNode(tpl, 'x');
const nodeMs = (performance.now() - t) / N;
await onWorker(tpl, 'x');
t = performance.now();
for (let i = 0; i < N; i++) await onWorker(tpl, 'x');
console.log(`template: Node ${nodeMs.toFixed(1)} ms per conversion; workerd ${((performance.now() - t) / N).toFixed(1)} ms per HTTP round trip`);
console.log(`workerd globals: ${JSON.stringify(await (await fetch(`${base}/env`)).json())}`);
process.exit(different.length === 0 ? 0 : 1);
