/**
 * `npm run deploy:check`: everything a deploy needs, checked offline (no credentials, no network):
 * 1. builds every Lambda bundle and prints its size, raw and gzipped, at init and in all
 *    (the 400 kB gzipped budget applies to what a cold start loads);
 * 2. synthesizes the AWS stack (infra/aws/cdk) from those bundles;
 * 3. runs the Workers check (infra/workers/check.ts: wrangler dry-run builds) when it exists;
 * 4. runs the serverless suites (test/serverless: the HTTP flow on Lambda events and on workerd).
 * Exits 1 when any step fails; a summary line per step at the end.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildLambdaBundles, kB } from './aws/build';
import { synthOffline } from './aws/synth';

const root = resolve(new URL('..', import.meta.url).pathname);
const MAX_INIT_GZIP = 400_000;
const results: Array<{ step: string; ok: boolean; note: string }> = [];

function run(cmd: string, args: string[]): Promise<number> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd: root, stdio: 'inherit', env: process.env });
    child.on('close', (code) => done(code ?? 1));
    child.on('error', () => done(1));
  });
}

async function step(name: string, fn: () => Promise<string>): Promise<void> {
  console.log(`\n== ${name}`);
  const t = performance.now();
  try {
    const note = await fn();
    results.push({ step: name, ok: true, note: `${note} (${((performance.now() - t) / 1000).toFixed(1)} s)` });
  } catch (err) {
    results.push({ step: name, ok: false, note: err instanceof Error ? err.message : String(err) });
  }
}

const dir = mkdtempSync(join(tmpdir(), 'fieldbase-deploy-check-'));
console.log(`load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}`);
try {
  const bundleDir = join(dir, 'bundles');
  await step('Lambda bundles', async () => {
    const built = await buildLambdaBundles({ outDir: bundleDir });
    const over: string[] = [];
    console.log(`${'bundle'.padEnd(12)} ${'init'.padStart(10)} ${'init gz'.padStart(10)} ${'all'.padStart(10)} ${'all gz'.padStart(10)}  init gz / 400 kB`);
    for (const b of built) {
      const ratio = b.initGzipBytes / MAX_INIT_GZIP;
      console.log(`${b.spec.name.padEnd(12)} ${kB(b.initBytes).padStart(10)} ${kB(b.initGzipBytes).padStart(10)} ${kB(b.totalBytes).padStart(10)} ${kB(b.totalGzipBytes).padStart(10)}  ${ratio.toFixed(2)}`);
      if (b.initGzipBytes > MAX_INIT_GZIP) over.push(b.spec.name);
    }
    if (over.length) throw new Error(`over 400 kB gzipped at init: ${over.join(', ')}`);
    return `${built.length} bundles`;
  });
  await step('AWS stack (cdk synth, offline)', async () => {
    const { templatePath, counts } = await synthOffline(join(dir, 'synth'), bundleDir);
    for (const [type, n] of Object.entries(counts).sort()) console.log(`  ${String(n).padStart(3)} ${type}`);
    return templatePath;
  });
  if (existsSync(join(root, 'infra/workers/check.ts'))) {
    await step('Workers config (infra/workers/check.ts)', async () => {
      const code = await run('npx', ['tsx', 'infra/workers/check.ts']);
      if (code !== 0) throw new Error(`infra/workers/check.ts exited ${code}`);
      return 'passed';
    });
  } else {
    results.push({ step: 'Workers config', ok: true, note: 'skipped: infra/workers/check.ts is not there' });
  }
  await step('Serverless tests (test/serverless)', async () => {
    const code = await run('npx', ['vitest', 'run', '--config', 'test/vitest.config.ts', 'test/serverless']);
    if (code !== 0) throw new Error(`vitest exited ${code}`);
    return 'passed';
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.log('\n== deploy:check summary');
for (const r of results) console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.step}: ${r.note}`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
