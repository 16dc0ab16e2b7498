/**
 * Entities at volume (issues 14 and 15): the real local server (route table, authentication, the
 * lib verbs) on a loopback port, timed from an HTTP client in the same process, as an
 * administrator (Bearer session).
 *
 * Cases, at BENCH_N (100,000) entities of one Dataset (`people`: first_name, age, geometry):
 *   bulk create       POST D/entities `{ entities, source }` in bodies of 10,000; entities/s (target ≥ 20,000/s)
 *   entity CSV        GET D/entities.csv, the whole list; rows/s (target ≥ 100,000/s)
 *   OData first page  GET D.svc/Entities?$top=1000&$count=true
 *   deep $skiptoken   GET D.svc/Entities?$top=1000&$skiptoken=<the entity at 90 % depth>
 *   property $filter  GET D.svc/Entities?$filter=first_name eq '<a name 1 entity in 1,000 has>'&$top=1000
 *                     (each OData case: BENCH_RUNS (20) timed requests after 2 warm-ups; target p95 < 250 ms)
 *   integrity         GET D/integrity?id=<BENCH_INTEGRITY (10,000) uuids, 100 of them deleted> (X-OpenRosa-Version),
 *                     BENCH_RUNS timed after 2 warm-ups, flags checked; target p95 < 200 ms
 *   devices           BENCH_DEVICES (20) App Users of a form consuming the Dataset (consumeDatasets, people.csv
 *                     linked), concurrently: each downloads the 100,000-row list once (ETag = the manifest's
 *                     hash, checked), then BENCH_SYNCS (10) times GET F/manifest + GET the list with
 *                     If-None-Match (304 checked), from a worker thread (devices are other machines);
 *                     p95 of the pair, target < 100 ms
 *   approvals         BENCH_APPROVALS (2,000) submissions of simpleEntity into a Dataset that requires
 *                     approval, then BENCH_REVIEWERS (16) concurrent reviewers PATCH reviewState approved;
 *                     approvals/s (target ≥ 300/s); every entity created once (count, distinct uuids, one
 *                     version-1 source per submission, no entity.error, no job left)
 *   offline backlog   BENCH_OFFLINE (1,000) updates of one branch submitted last first (all held), then
 *                     the first: the time until every one is applied, in branch order (checked: version
 *                     1,001 and each version's branch base and data), by that request's jobs and one drain
 *                     (lib/jobs), and how long the request took
 * Prints each figure with its ratio to the target (≥ 1 meets it for rates, ≤ 1 for latencies) and
 * the 1-minute load average when it was taken (the box is shared: read the figures with it).
 *
 * Runs on DATABASE_URL when set (use a fresh database), else PGlite in memory (the targets are
 * for PostgreSQL; lower BENCH_N there).
 *
 *   createdb -h 127.0.0.1 -U postgres bench_entities_x
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_entities_x npx tsx bench/entities.ts
 *   dropdb -h 127.0.0.1 -U postgres bench_entities_x
 */
import { serve } from '@hono/node-server';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { and, asc, eq, sql } from 'drizzle-orm';
import { entities, entityDefs, entitySubmissionBacklog } from '../drizzle/schema';
import { localApp } from '../infra/local/app';
import '../lib/entities';
import { drainJobs } from '../lib/jobs';
import { systemCtx } from '../lib/context';
import { createLogger } from '../lib/log';
import { encodeSkiptoken } from '../lib/odata/query';
import { withDeps } from '../lib/runtime/entry';
import { loadConfig, processEnv } from '../lib/runtime/env';
import { createFsBlobStore } from '../lib/runtime/fs-blobs';
import { nodeNatives, openDatabase } from '../lib/runtime/node';
import { benchAdmin } from './admin';
import { cpuMeter, profilePhase } from './profile';

const N = Number(process.env.BENCH_N ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const OFFLINE = Number(process.env.BENCH_OFFLINE ?? 1_000);
const INTEGRITY = Math.min(N, Number(process.env.BENCH_INTEGRITY ?? 10_000));
const DEVICES = Number(process.env.BENCH_DEVICES ?? 20);
const SYNCS = Number(process.env.BENCH_SYNCS ?? 10);
const APPROVALS = Number(process.env.BENCH_APPROVALS ?? 2_000);
const REVIEWERS = Number(process.env.BENCH_REVIEWERS ?? 16);
const CHUNK = 10_000;
/** BENCH_ONLY=csv,odata,integrity,devices,approvals,offline runs only those (bulk create always runs). */
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null;
const only = (name: string) => ONLY == null || ONLY.has(name);
const fixture = (path: string) => readFileSync(new URL(`../../shared/fixtures/${path}`, import.meta.url), 'utf8');

const config = loadConfig(processEnv(), { LOG_LEVEL: 'silent', BCRYPT_COST: '4', MAX_JSON_BYTES: '50000000' }, { localServer: true });
const database = await openDatabase(config, { pgliteDir: 'memory://' });
await database.migrate();
// The native helpers the local server has (createNodeDeps: COPY to a stream, zlib, hashing).
const deps = { db: database.db, config, log: createLogger('silent'), blobs: createFsBlobStore(join(tmpdir(), `fieldbase-bench-entities-${process.pid}`)), ...nodeNatives() };
const ctx = systemCtx(deps);
const app = withDeps(localApp(), () => ({ deps }));
const { call, auth } = await benchAdmin(ctx, app, 'entities');
// A device's integrity check names every entity it holds (10,000 uuids ≈ 370 kB of URL): as infra/local/serve.ts.
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', serverOptions: { maxHeaderSize: 1 << 20 } });
const base = await new Promise<string>((resolve) => server.once('listening', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
const where = config.DATABASE_URL ? 'PostgreSQL' : 'PGlite (in memory)';
const backendPids = async () => (config.DATABASE_URL
  ? (await database.db.execute(sql`select pid from pg_stat_activity where datname = current_database()`) as unknown as Array<{ pid: number }>).map((r) => Number(r.pid))
  : []);

const P = `/v1/projects/${((await (await call('POST', '/v1/projects', JSON.stringify({ name: 'Entities bench' }), { 'Content-Type': 'application/json' })).json()) as { id: number }).id}`;
const D = `${P}/datasets/people`;
const JSON_TYPE = { 'Content-Type': 'application/json' };
await call('POST', `${P}/datasets`, JSON.stringify({ name: 'people' }), JSON_TYPE);
for (const name of ['first_name', 'age', 'geometry']) await call('POST', `${D}/properties`, JSON.stringify({ name }), JSON_TYPE);

const rows: string[] = [];
const report = (label: string, value: string, ratio: number, note = '') => {
  const line = `${label.padEnd(18)} ${value.padEnd(34)} ratio to target ${ratio.toFixed(2)}  load ${loadavg()[0]!.toFixed(2)}${note ? `  ${note}` : ''}`;
  rows.push(line);
  console.log(line);
};
const uuidOf = (i: number) => `${(0x10000000 + i).toString(16).slice(-8)}-1234-4123-8234-${i.toString(16).padStart(12, '0')}`;
const nameOf = (i: number) => `name${i % 1000}`;

// ─── bulk create ────────────────────────────────────────────────────────────────────────────
console.log(`Entities bench on ${where}: ${N.toLocaleString('en')} entities; load ${loadavg()[0]!.toFixed(2)}`);
const stopBulkProfile = await profilePhase('bulk');
const bulkCpu = await cpuMeter(backendPids);
const bulkStart = performance.now();
for (let i = 0; i < N; i += CHUNK) {
  const list = [];
  for (let k = i; k < Math.min(N, i + CHUNK); k += 1) {
    list.push({ uuid: uuidOf(k), label: `Person ${k}`, data: { first_name: nameOf(k), age: String(k % 90), geometry: `${(k % 80) - 40}.5 ${(k % 170) - 85}.25 0 0` } });
  }
  const res = await fetch(`${base}${D}/entities`, {
    method: 'POST', headers: { ...auth, ...JSON_TYPE }, body: JSON.stringify({ entities: list, source: { name: `bulk-${i}.csv`, size: list.length } }),
  });
  if (res.status !== 200) throw new Error(`bulk ${i}: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}
const bulkS = (performance.now() - bulkStart) / 1000;
const bulkUsed = await bulkCpu();
await stopBulkProfile();
// This process's figure includes the client's JSON.stringify of each body.
report('bulk create', `${Math.round(N / bulkS).toLocaleString('en')} entities/s (${bulkS.toFixed(1)} s)`, N / bulkS / 20_000,
  `CPU per entity: this process ${((bulkUsed.mainMs / N) * 1000).toFixed(1)} µs, PostgreSQL ${((bulkUsed.pgMs / N) * 1000).toFixed(1)} µs`);
if (config.DATABASE_URL) await database.db.execute(sql.raw('vacuum analyze'));

// ─── entity CSV ─────────────────────────────────────────────────────────────────────────────
/**
 * Runs a client script (CommonJS source) in a worker thread with `workerData`, as clients are other
 * machines: their HTTP client's CPU does not queue behind the server's on this thread. The script
 * posts one message, its result or `{ error }`; the worker is then stopped.
 */
function runClient<T = unknown>(code: string, workerData: unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const worker = new Worker(code, { eval: true, workerData });
    worker.once('message', (m: T | { error: string }) => {
      void worker.terminate();
      if (m != null && typeof m === 'object' && 'error' in m && m.error != null) reject(new Error(String(m.error)));
      else resolve(m as T);
    });
    worker.once('error', reject);
  });
}

/** GET of the whole entities.csv in a worker thread: counts its lines (LF), answers `{ lines }`. */
const CSV_CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
http.get(workerData.url, { headers: workerData.headers }, (res) => {
  if (res.statusCode !== 200) { parentPort.postMessage({ error: 'csv: ' + res.statusCode }); res.resume(); return; }
  let lines = 0;
  res.on('data', (b) => { for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) lines += 1; });
  res.on('end', () => parentPort.postMessage({ lines }));
  res.on('error', (err) => parentPort.postMessage({ error: String(err) }));
}).on('error', (err) => parentPort.postMessage({ error: String(err) }));
`;

if (only('csv')) {
  // Memory: the process's RSS (server and client) sampled every 20 ms; flat means the peak does not grow with N.
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  const sampler = setInterval(() => { rssPeak = Math.max(rssPeak, process.memoryUsage().rss); }, 20);
  const stopProfile = await profilePhase('csv');
  const cpu = await cpuMeter(backendPids);
  const start = performance.now();
  // The client (a spreadsheet user's machine) runs in a worker thread on node:http, as the
  // reviewers do: its CPU is not queued behind the server's on this thread.
  const { lines } = await runClient<{ lines: number }>(CSV_CLIENT, { url: `${base}${D}/entities.csv`, headers: auth });
  const s = (performance.now() - start) / 1000;
  const used = await cpu();
  await stopProfile();
  clearInterval(sampler);
  if (lines !== N + 1) throw new Error(`csv: ${lines} lines, expected ${N + 1}`);
  report('entity CSV', `${Math.round(N / s).toLocaleString('en')} rows/s (${s.toFixed(2)} s)`, N / s / 100_000,
    `RSS ${Math.round(rssBefore / 2 ** 20)} MB before, peak +${Math.round((rssPeak - rssBefore) / 2 ** 20)} MB; CPU per row: server thread ${((used.mainMs / N) * 1000).toFixed(1)} µs, PostgreSQL ${((used.pgMs / N) * 1000).toFixed(1)} µs, the client and the rest of this process ${(((used.processMs - used.mainMs) / N) * 1000).toFixed(1)} µs`);
}

// ─── OData ──────────────────────────────────────────────────────────────────────────────────
async function timed(label: string, path: string, check: (body: { value: unknown[] }) => void) {
  const times: number[] = [];
  for (let i = 0; i < RUNS + 2; i += 1) {
    const start = performance.now();
    const res = await fetch(`${base}${path}`, { headers: auth });
    const body = (await res.json()) as { value: unknown[] };
    const ms = performance.now() - start;
    if (res.status !== 200) throw new Error(`${label}: ${res.status} ${JSON.stringify(body)}`);
    check(body);
    if (i >= 2) times.push(ms);
  }
  times.sort((a, b) => a - b);
  const p = (q: number) => times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)]!;
  report(label, `p50 ${p(0.5).toFixed(1)} ms, p95 ${p(0.95).toFixed(1)} ms, max ${times[times.length - 1]!.toFixed(1)} ms`, p(0.95) / 250);
}
const [deep] = await database.db.select({ uuid: entities.uuid }).from(entities).orderBy(asc(entities.createdAt), asc(entities.id))
  .offset(Math.floor(N * 0.1)).limit(1);
const svc = `${D}.svc/Entities`;
if (only('odata')) await timed('OData first page', `${svc}?$top=1000&$count=true`, (b) => { if (b.value.length !== Math.min(1000, N)) throw new Error('first page'); });
if (only('odata')) await timed('OData $skiptoken', `${svc}?$top=1000&$skiptoken=${encodeURIComponent(encodeSkiptoken({ uuid: deep!.uuid }))}`, (b) => {
  if (b.value.length !== Math.min(1000, Math.floor(N * 0.1))) throw new Error(`skiptoken page: ${b.value.length}`);
});
if (only('odata')) await timed('OData prop $filter', `${svc}?$filter=${encodeURIComponent("first_name eq 'name123'")}&$top=1000`, (b) => {
  if (b.value.length !== Math.floor(N / 1000) + (N % 1000 > 123 ? 1 : 0)) throw new Error(`filter: ${b.value.length}`);
});

// ─── integrity ──────────────────────────────────────────────────────────────────────────────
const OR = { 'X-OpenRosa-Version': '1.0' };
if (only('integrity')) {
  // 100 of the ids asked about are deleted first (every 100th of them).
  const ids = Array.from({ length: INTEGRITY }, (_, k) => uuidOf(Math.floor((k * N) / INTEGRITY)));
  const deleted = ids.filter((_, k) => k % Math.max(1, Math.floor(INTEGRITY / 100)) === 0).slice(0, 100);
  await call('POST', `${D}/entities/bulk-delete`, JSON.stringify({ ids: deleted }), JSON_TYPE);
  const times: number[] = [];
  for (let i = 0; i < RUNS + 2; i += 1) {
    const start = performance.now();
    const res = await fetch(`${base}${D}/integrity?id=${ids.join(',')}`, { headers: { ...auth, ...OR } });
    const text = await res.text();
    const ms = performance.now() - start;
    if (res.status !== 200) throw new Error(`integrity: ${res.status} ${text.slice(0, 300)}`);
    const listed = text.split('<entity id=').length - 1;
    const gone = text.split('<deleted>true</deleted>').length - 1;
    if (listed !== INTEGRITY || gone !== deleted.length) throw new Error(`integrity: ${listed} entities, ${gone} deleted; expected ${INTEGRITY}, ${deleted.length}`);
    if (i >= 2) times.push(ms);
  }
  times.sort((a, b) => a - b);
  const p95 = times[Math.ceil(0.95 * times.length) - 1]!;
  report('integrity', `${INTEGRITY} ids: p50 ${times[Math.floor(times.length / 2)]!.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms`, p95 / 200);
}

/**
 * The devices' sync loop, run in a worker thread: each device (its key URL of the form) asks for
 * the manifest, then for the entity list with If-None-Match (304 checked), once untimed and then
 * `syncs` times, all devices at once. Posts `{ pair, single }` (ms) or `{ error }`.
 */
const DEVICE_CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const { urls, syncs, OR } = workerData;
const manifest = async (url) => {
  const res = await fetch(url + '/manifest', { headers: OR });
  const text = await res.text();
  if (res.status !== 200) throw new Error('manifest: ' + res.status + ' ' + text);
  const file = /<mediaFile type="entityList">\\s*<filename>people\\.csv<\\/filename>\\s*<hash>md5:([0-9a-f]{32})<\\/hash>\\s*<downloadUrl>([^<]+)<\\/downloadUrl>/.exec(text);
  if (!file) throw new Error('manifest without people.csv: ' + text);
  return { hash: file[1], url: file[2].replace(/&amp;/g, '&') };
};
(async () => {
  const pair = [], single = [];
  // One untimed sync each first (as the other cases' warm-ups): the first 304 and manifest of each
  // pooled connection prepare their statements.
  await Promise.all(urls.map(async (url) => {
    const m = await manifest(url);
    const res = await fetch(m.url, { headers: { ...OR, 'If-None-Match': '"' + m.hash + '"' } });
    await res.arrayBuffer();
  }));
  await Promise.all(urls.map(async (url) => {
    for (let i = 0; i < syncs; i += 1) {
      const start = performance.now();
      const m = await manifest(url);
      const mid = performance.now();
      const res = await fetch(m.url, { headers: { ...OR, 'If-None-Match': '"' + m.hash + '"' } });
      await res.arrayBuffer();
      const end = performance.now();
      if (res.status !== 304) throw new Error('conditional list: ' + res.status);
      pair.push(end - start);
      single.push(mid - start, end - mid);
    }
  }));
  parentPort.postMessage({ pair, single });
})().catch((err) => parentPort.postMessage({ error: String(err && err.stack || err) }));
`;

// ─── devices: manifest + unchanged entity list ─────────────────────────────────────────────
if (only('devices')) {
  await call('POST', `${P}/forms?publish=true&ignoreWarnings=true`, fixture('forms/consumeDatasets.xml'), { 'Content-Type': 'application/xml' });
  const F = `${P}/forms/consumeDatasets`;
  const tokens: string[] = [];
  for (let i = 0; i < DEVICES; i += 1) {
    const au = (await (await call('POST', `${P}/app-users`, JSON.stringify({ displayName: `Device ${i}` }), JSON_TYPE)).json()) as { id: number; token: string };
    await call('POST', `${F}/assignments/app-user/${au.id}`);
    tokens.push(au.token);
  }
  const keyed = (token: string) => `${base}/v1/key/${token}${F.slice(3)}`;
  const manifest = async (token: string) => {
    const res = await fetch(`${keyed(token)}/manifest`, { headers: OR });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`manifest: ${res.status} ${text}`);
    const file = /<mediaFile type="entityList">\s*<filename>people\.csv<\/filename>\s*<hash>md5:([0-9a-f]{32})<\/hash>\s*<downloadUrl>([^<]+)<\/downloadUrl>/.exec(text);
    if (!file) throw new Error(`manifest without people.csv: ${text}`);
    return { hash: file[1]!, url: file[2]!.replace(/&amp;/g, '&') };
  };
  const live = (await database.db.execute(sql`select count(*)::int as n from entities e join datasets d on d.id = e.dataset_id
    where d.name = 'people' and e.deleted_at is null`) as unknown as Array<{ n: number }>)[0]!.n;
  const pair: number[] = [];
  const single: number[] = [];
  let fullMs = 0;
  // Every device first downloads the whole list (all at once), then they all sync with it unchanged.
  await Promise.all(tokens.map(async (token) => {
    const first = await manifest(token);
    const t0 = performance.now();
    const full = await fetch(first.url, { headers: OR });
    const body = await full.text();
    fullMs = Math.max(fullMs, performance.now() - t0);
    if (full.status !== 200 || full.headers.get('etag') !== `"${first.hash}"`) throw new Error(`list: ${full.status}, ETag ${full.headers.get('etag')} vs manifest ${first.hash}`);
    if (body.split('\n').length - 2 !== live) throw new Error(`list: ${body.split('\n').length - 2} rows, expected ${live}`);
  }));
  const stopDevicesProfile = await profilePhase('devices');
  const devicesCpu = await cpuMeter(backendPids);
  // The devices run in a worker thread, as real devices are other machines: their HTTP client's
  // CPU does not queue behind the server's on this thread (the CPU figure and the profile are of
  // the main thread: the server's alone).
  const timing = await runClient<{ pair: number[]; single: number[] }>(DEVICE_CLIENT, { urls: tokens.map((t) => keyed(t)), syncs: SYNCS, OR });
  pair.push(...timing.pair);
  single.push(...timing.single);
  const devicesUsed = await devicesCpu();
  await stopDevicesProfile();
  const q = (list: number[], f: number) => [...list].sort((a, b) => a - b)[Math.ceil(f * list.length) - 1]!;
  report('devices 304', `${DEVICES} devices × ${SYNCS}: pair p50 ${q(pair, 0.5).toFixed(1)} ms, p95 ${q(pair, 0.95).toFixed(1)} ms`, q(pair, 0.95) / 100,
    `per request p95 ${q(single, 0.95).toFixed(1)} ms; first full download (${live.toLocaleString('en')} rows, ${DEVICES} at once) ≤ ${(fullMs / 1000).toFixed(2)} s; CPU per pair: server thread ${(devicesUsed.mainMs / pair.length).toFixed(2)} ms, PostgreSQL ${(devicesUsed.pgMs / pair.length).toFixed(2)} ms`);
}

/**
 * The reviewers, run in a worker thread: `reviewers` concurrent clients approving submissions
 * `review-0` … `review-{count - 1}` of the form at `url` (PATCH, each answer checked 200). Posts
 * `{}` when done or `{ error }`.
 */
// node:http with a keep-alive agent, not fetch: undici's fetch cost more CPU per request than the
// server's own thread (2.3 ms of 6.7 ms on the box at 280/s), and that client shares the box with
// the server here, where reviewers' browsers would not.
const REVIEWER_CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { url, headers, reviewers, count } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: reviewers });
const body = JSON.stringify({ reviewState: 'approved' });
const patch = (i) => new Promise((resolve, reject) => {
  const req = http.request(url + '/review-' + i, { method: 'PATCH', agent, headers: { ...headers, 'Content-Length': Buffer.byteLength(body) } }, (res) => {
    const chunks = [];
    res.on('data', (c) => chunks.push(c));
    res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error('approve ' + i + ': ' + res.statusCode + ' ' + Buffer.concat(chunks)))));
    res.on('error', reject);
  });
  req.on('error', reject);
  req.end(body);
});
let next = 0;
Promise.all(Array.from({ length: reviewers }, async () => {
  for (let i = next++; i < count; i = next++) await patch(i);
})).then(() => parentPort.postMessage({}), (err) => parentPort.postMessage({ error: String(err && err.stack || err) }));
`;

// ─── approvals ──────────────────────────────────────────────────────────────────────────────
if (only('approvals')) {
  const form = fixture('forms/simpleEntity.xml').replace('dataset="people"', 'dataset="reviewed"');
  await call('POST', `${P}/forms?publish=true&ignoreWarnings=true`, form, { 'Content-Type': 'application/xml' });
  await call('PATCH', `${P}/datasets/reviewed`, JSON.stringify({ approvalRequired: true }), JSON_TYPE);
  const template = fixture('submissions/simpleEntity.one.xml').replace('dataset="people"', 'dataset="reviewed"');
  const approvalUuid = (i: number) => `abcdef01-1234-4123-8234-${i.toString(16).padStart(12, '0')}`;
  const F = `${P}/forms/simpleEntity/submissions`;
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    for (let i = next++; i < APPROVALS; i = next++) {
      const xml = template.replace('<instanceID>one</instanceID>', `<instanceID>review-${i}</instanceID>`)
        .replace('uuid:12345678-1234-4123-8234-123456789abc', `uuid:${approvalUuid(i)}`).replace('Alice (88)', `Reviewed ${i}`);
      await call('POST', F, xml, { 'Content-Type': 'application/xml' });
    }
  }));
  await drainJobs(ctx);
  // As autovacuum would after 2,000 new submissions (it is off on some boxes): planning on the
  // statistics of empty tables is not what a running server sees.
  if (config.DATABASE_URL) await database.db.execute(sql.raw('analyze'));
  const stopProfile = await profilePhase('approvals');
  const cpu = await cpuMeter(backendPids);
  const start = performance.now();
  // The reviewers run in a worker thread, as reviewers are other machines (their browsers): their
  // HTTP client's CPU does not queue behind the server's on this thread, and the CPU figure and
  // the profile are the server's alone (as the devices case).
  await runClient(REVIEWER_CLIENT, { url: `${base}${F}`, headers: { ...auth, ...JSON_TYPE }, reviewers: REVIEWERS, count: APPROVALS });
  const s = (performance.now() - start) / 1000;
  const used = await cpu();
  await stopProfile();
  const count = async () => (await database.db.execute<{ n: number; uuids: number; sources: number }>(sql`
    select count(*)::int as n, count(distinct e.uuid)::int as uuids, count(distinct s.submission_def_id)::int as sources
    from entities e join datasets d on d.id = e.dataset_id and d.name = 'reviewed'
    join entity_defs v on v.entity_id = e.id and v.version = 1 join entity_def_sources s on s.id = v.source_id`) as unknown as Array<{ n: number; uuids: number; sources: number }>)[0]!;
  const inRequests = await count();
  await drainJobs(ctx);
  const after = await count();
  const errors = (await database.db.execute(sql`select count(*)::int as n from audits where action = 'entity.error'`) as unknown as Array<{ n: number }>)[0]!.n;
  const pending = (await database.db.execute(sql`select count(*)::int as n from jobs where done_at is null`) as unknown as Array<{ n: number }>)[0]!.n;
  if (after.n !== APPROVALS || after.uuids !== APPROVALS || after.sources !== APPROVALS || errors !== 0 || pending !== 0) {
    throw new Error(`approvals: ${JSON.stringify({ after, errors, pending })}, expected ${APPROVALS} each and no errors`);
  }
  report('approvals', `${Math.round(APPROVALS / s).toLocaleString('en')} approvals/s (${APPROVALS} in ${s.toFixed(1)} s)`, APPROVALS / s / 300,
    `${REVIEWERS} reviewers; ${inRequests.n} entities made in the requests, ${after.n} after a drain, each once; CPU per approval: server thread ${(used.mainMs / APPROVALS).toFixed(2)} ms, PostgreSQL ${(used.pgMs / APPROVALS).toFixed(2)} ms, the reviewers' client and the rest of this process ${((used.processMs - used.mainMs) / APPROVALS).toFixed(2)} ms, the whole box ${(used.boxMs / APPROVALS).toFixed(2)} ms (2 cores at 300/s: 6.7 ms in all)`);
}

// ─── offline backlog ────────────────────────────────────────────────────────────────────────
if (only('offline')) {
  await call('POST', `${P}/forms?publish=true&ignoreWarnings=true`, fixture('forms/offlineEntity.xml').replace('dataset="people"', 'dataset="households"'), { 'Content-Type': 'application/xml' });
  const uuid = '12345678-1234-4123-8234-123456789abc';
  await call('POST', `${P}/datasets/households/entities`, JSON.stringify({ uuid, label: 'Household', data: { status: 'new' } }), JSON_TYPE);
  const branch = 'cccccccc-1234-4123-8234-123456789abc';
  const xml = (k: number) => fixture('submissions/offlineEntity.one.xml')
    .replace('<instanceID>one</instanceID>', `<instanceID>offline-${k}</instanceID>`)
    .replace('dataset="people"', 'dataset="households"')
    .replace('branchId=""', `branchId="${branch}"`)
    .replace('baseVersion="1"', `baseVersion="${k}"`)
    .replace('<status>arrived</status>', `<status>s${k}</status>`);
  const sub = (k: number) => call('POST', `${P}/forms/offlineEntity/submissions`, xml(k), { 'Content-Type': 'application/xml' });
  for (let k = OFFLINE; k >= 2; k -= 1) await sub(k);
  const held = (await database.db.select({ id: entitySubmissionBacklog.id }).from(entitySubmissionBacklog)).length;
  const start = performance.now();
  await sub(1);
  const inRequest = (performance.now() - start) / 1000;
  // The request runs the chain for a bounded time; the drain (the server's sweep) runs the rest.
  await drainJobs(ctx);
  const s = (performance.now() - start) / 1000;
  const [e] = await database.db.select({ id: entities.id }).from(entities).where(eq(entities.uuid, uuid));
  const defs = await database.db.select({ v: entityDefs.version, b: entityDefs.branchBaseVersion, status: entityDefs.data }).from(entityDefs)
    .where(and(eq(entityDefs.entityId, e!.id))).orderBy(asc(entityDefs.version));
  const inOrder = defs.length === OFFLINE + 1 && defs.slice(1).every((d, i) => d.b === i + 1 && d.status.status === `s${i + 1}`);
  if (!inOrder || defs[defs.length - 1]!.v !== OFFLINE + 1) throw new Error(`offline: ${defs.length} versions, not in branch order`);
  report('offline backlog', `${OFFLINE} updates (${held} held) applied in ${s.toFixed(2)} s`, 1,
    `${Math.round(OFFLINE / s)} updates/s, in branch order; the submitting request answered in ${inRequest.toFixed(2)} s`);
}

console.log(`\nload ${loadavg()[0]!.toFixed(2)}\n${rows.join('\n')}`);
server.close();
await database.close();
process.exit(0);
