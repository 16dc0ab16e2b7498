/**
 * Serverless figures (issue 20): for every Lambda bundle (infra/aws/build.ts), its size raw and
 * gzipped, at init (what a cold start loads) and in all (lazy chunks: the AWS SDK, nodemailer,
 * zxcvbn, SheetJS), against 400 kB gzipped; and its cold start on Node: a fresh Node process
 * imports the bundle (module init) and answers its first request through the handler (an API
 * Gateway v2 event, Bearer session, real PostgreSQL and s3rver), against 500 ms. Median of
 * BENCH_RUNS (3) processes per group. Prints the load average with the figures.
 *
 *   npx tsx bench/serverless.ts        (DATABASE_URL: an admin URL of the server to create a
 *                                       scratch database on; default postgres://postgres@127.0.0.1:5432/postgres)
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { buildLambdaBundles, kB } from '../infra/aws/build';
import { localApp } from '../infra/local/app';
import { systemCtx } from '../lib/context';
import { withDeps } from '../lib/runtime/entry';
import { loadConfig } from '../lib/runtime/env';
import { createNodeDeps } from '../lib/runtime/node';
import { ensureFirstAdmin } from '../lib/users/admin-tasks';
import { jpeg, multipart, OR, PHOTOS_FORM, PHOTOS_FORM_ID, photosSubmission } from '../test/helpers/collect';
import { startS3 } from '../test/helpers/s3rver';
import { httpEvent } from '../test/serverless/events';

const SIZE_TARGET = 400_000;
const COLD_TARGET_MS = 500;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const load = () => loadavg()[0]!.toFixed(2);
const ADMIN = { email: 'bench@example.org', password: 'correct horse battery staple' };

const dir = mkdtempSync(join(tmpdir(), 'fieldbase-bench-serverless-'));
const s3 = await startS3('fieldbase-bench');
const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `fb_bench_serverless_${randomBytes(4).toString('hex')}`;
const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE "${dbName}"`);
const url = new URL(adminUrl);
url.pathname = `/${dbName}`;
const env: Record<string, string> = {
  DATABASE_URL: url.toString(), S3_BUCKET: s3.bucket, S3_ENDPOINT: s3.endpoint, S3_REGION: 'us-east-1', S3_FORCE_PATH_STYLE: 'true',
  S3_ACCESS_KEY_ID: 'S3RVER', S3_SECRET_ACCESS_KEY: 'S3RVER', LOG_LEVEL: process.env.BENCH_LOG ?? 'silent', BCRYPT_COST: '10',
};

try {
  console.log(`load average ${loadavg().map((n) => n.toFixed(2)).join(' ')} (2 cores)`);
  const built = await buildLambdaBundles({ outDir: join(dir, 'bundles') });
  console.log(`\nBundle sizes (kB = 1000 bytes; load ${load()})`);
  console.log(`${'bundle'.padEnd(12)} ${'init'.padStart(10)} ${'init gz'.padStart(10)} ${'all'.padStart(10)} ${'all gz'.padStart(10)}  init gz ÷ 400 kB  all gz ÷ 400 kB`);
  for (const b of built) {
    console.log(`${b.spec.name.padEnd(12)} ${kB(b.initBytes).padStart(10)} ${kB(b.initGzipBytes).padStart(10)} ${kB(b.totalBytes).padStart(10)} ${kB(b.totalGzipBytes).padStart(10)}  ${(b.initGzipBytes / SIZE_TARGET).toFixed(2).padStart(15)}  ${(b.totalGzipBytes / SIZE_TARGET).toFixed(2).padStart(14)}`);
  }

  // Data for the first requests: migrations (the migrate bundle), an administrator, a project
  // with a published form and one submission with a photo.
  const migrateEntry = built.find((b) => b.spec.name === 'migrate')!.entryFile;
  Object.assign(process.env, env);
  await (await import(pathToFileURL(migrateEntry).href)).handler({ RequestType: 'Create' });
  const deps = await createNodeDeps(loadConfig(process.env, { ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password }), { mailOutbox: false });
  await ensureFirstAdmin(systemCtx(deps));
  const app = withDeps(localApp(), () => ({ deps }));
  const req = async (method: string, path: string, headers: Record<string, string>, body?: BodyInit) => app.fetch(new Request(`http://127.0.0.1${path}`, { method, headers, ...(body != null ? { body } : {}) }));
  const token = ((await (await req('POST', '/v1/sessions', { 'Content-Type': 'application/json' }, JSON.stringify(ADMIN))).json()) as { token: string }).token;
  const auth = { Authorization: `Bearer ${token}` };
  const projectId = ((await (await req('POST', '/v1/projects', { ...auth, 'Content-Type': 'application/json' }, JSON.stringify({ name: 'Bench' }))).json()) as { id: number }).id;
  await req('POST', `/v1/projects/${projectId}/forms?publish=true`, { ...auth, 'Content-Type': 'application/xml' }, PHOTOS_FORM);
  const au = (await (await req('POST', `/v1/projects/${projectId}/app-users`, { ...auth, 'Content-Type': 'application/json' }, JSON.stringify({ displayName: 'c' }))).json()) as { id: number; token: string };
  await req('POST', `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}/assignments/app-user/${au.id}`, auth);
  const { body, type } = multipart(photosSubmission({ instanceId: 'uuid:bench-1', site: 'x', front: 'f.jpg' }), [{ name: 'f.jpg', bytes: jpeg(1, 100_000), type: 'image/jpeg' }]);
  await req('POST', `/v1/key/${au.token}/projects/${projectId}/submission`, { ...OR, 'Content-Type': type }, body);
  await deps.database.close();

  const F = `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}`;
  /** A typical first request per group (authenticated, reading the database). */
  const first: Record<string, string> = {
    projects: '/v1/projects', assignments: '/v1/roles', users: '/v1/users/current', audits: '/v1/audits?limit=10',
    forms: `/v1/projects/${projectId}/forms`, submissions: `${F}/submissions`, exports: `${F}/submissions.csv`, entities: `/v1/projects/${projectId}/datasets`,
  };
  const child = `
    const t0 = performance.now();
    const mod = await import(process.env.BENCH_ENTRY);
    const t1 = performance.now();
    const res = await mod.handler(JSON.parse(process.env.BENCH_EVENT), {});
    const t2 = performance.now();
    console.log(JSON.stringify({ init: t1 - t0, first: t2 - t1, status: res.statusCode }));
    process.exit(0);`;
  const coldStart = (entry: string, event: unknown) => new Promise<{ init: number; first: number; status: number }>((done, fail) => {
    let out = '';
    const p = spawn(process.execPath, ['--input-type=module', '-e', child], {
      env: { ...process.env, ...env, BENCH_ENTRY: pathToFileURL(entry).href, BENCH_EVENT: JSON.stringify(event), NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    p.stdout.on('data', (d) => (out += d));
    p.on('close', () => {
      try {
        done(JSON.parse(out.trim().split('\n').pop()!));
      } catch {
        fail(new Error(`cold start failed: ${out}`));
      }
    });
  });
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`\nCold start on Node (fresh process: module init + first request; median of ${RUNS})`);
  console.log(`${'group'.padEnd(12)} ${'init ms'.padStart(8)} ${'first ms'.padStart(9)} ${'total ms'.padStart(9)}  ÷ 500 ms  status  load`);
  for (const b of built.filter((x) => x.spec.group)) {
    const event = httpEvent('apigw', { method: 'GET', path: first[b.spec.group!]!, headers: auth });
    const runs = [];
    for (let i = 0; i < RUNS; i += 1) runs.push(await coldStart(b.entryFile, event));
    const init = median(runs.map((r) => r.init));
    const firstMs = median(runs.map((r) => r.first));
    const total = median(runs.map((r) => r.init + r.first));
    console.log(`${b.spec.name.padEnd(12)} ${init.toFixed(0).padStart(8)} ${firstMs.toFixed(0).padStart(9)} ${total.toFixed(0).padStart(9)}  ${(total / COLD_TARGET_MS).toFixed(2).padStart(8)}  ${String(runs[0]!.status).padStart(6)}  ${load()}`);
  }
} finally {
  await admin.unsafe(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => {});
  await admin.end();
  await s3.stop();
  rmSync(dir, { recursive: true, force: true });
}
