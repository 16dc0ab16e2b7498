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
 *   offline backlog   BENCH_OFFLINE (1,000) updates of one branch submitted last first (all held), then
 *                     the first: the time until every one is applied, in branch order (checked), by
 *                     that request's jobs and one drain (lib/jobs), and how long the request took
 * Prints each figure with its ratio to the target (≥ 1 meets it for rates, ≤ 1 for latencies).
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
import { openDatabase } from '../lib/runtime/node';
import { benchAdmin } from './admin';

const N = Number(process.env.BENCH_N ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const OFFLINE = Number(process.env.BENCH_OFFLINE ?? 1_000);
const CHUNK = 10_000;
const fixture = (path: string) => readFileSync(new URL(`../../shared/fixtures/${path}`, import.meta.url), 'utf8');

const config = loadConfig(processEnv(), { LOG_LEVEL: 'silent', BCRYPT_COST: '4', MAX_JSON_BYTES: '50000000' }, { localServer: true });
const database = await openDatabase(config, { pgliteDir: 'memory://' });
await database.migrate();
const deps = { db: database.db, config, log: createLogger('silent'), blobs: createFsBlobStore(join(tmpdir(), `fieldbase-bench-entities-${process.pid}`)) };
const ctx = systemCtx(deps);
const app = withDeps(localApp(), () => ({ deps }));
const { call, auth } = await benchAdmin(ctx, app, 'entities');
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
const base = await new Promise<string>((resolve) => server.once('listening', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
const where = config.DATABASE_URL ? 'PostgreSQL' : 'PGlite (in memory)';

const P = `/v1/projects/${((await (await call('POST', '/v1/projects', JSON.stringify({ name: 'Entities bench' }), { 'Content-Type': 'application/json' })).json()) as { id: number }).id}`;
const D = `${P}/datasets/people`;
const JSON_TYPE = { 'Content-Type': 'application/json' };
await call('POST', `${P}/datasets`, JSON.stringify({ name: 'people' }), JSON_TYPE);
for (const name of ['first_name', 'age', 'geometry']) await call('POST', `${D}/properties`, JSON.stringify({ name }), JSON_TYPE);

const rows: string[] = [];
const report = (label: string, value: string, ratio: number, note = '') => {
  const line = `${label.padEnd(18)} ${value.padEnd(34)} ratio to target ${ratio.toFixed(2)}${note ? `  ${note}` : ''}`;
  rows.push(line);
  console.log(line);
};
const uuidOf = (i: number) => `${(0x10000000 + i).toString(16).slice(-8)}-1234-4123-8234-${i.toString(16).padStart(12, '0')}`;
const nameOf = (i: number) => `name${i % 1000}`;

// ─── bulk create ────────────────────────────────────────────────────────────────────────────
console.log(`Entities bench on ${where}: ${N.toLocaleString('en')} entities; load ${loadavg()[0]!.toFixed(2)}`);
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
report('bulk create', `${Math.round(N / bulkS).toLocaleString('en')} entities/s (${bulkS.toFixed(1)} s)`, N / bulkS / 20_000);
if (config.DATABASE_URL) await database.db.execute(sql.raw('vacuum analyze'));

// ─── entity CSV ─────────────────────────────────────────────────────────────────────────────
{
  const start = performance.now();
  const res = await fetch(`${base}${D}/entities.csv`, { headers: auth });
  if (res.status !== 200) throw new Error(`csv: ${res.status}`);
  let lines = 0;
  const reader = res.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    for (const b of value) if (b === 10) lines += 1;
  }
  const s = (performance.now() - start) / 1000;
  if (lines !== N + 1) throw new Error(`csv: ${lines} lines, expected ${N + 1}`);
  report('entity CSV', `${Math.round(N / s).toLocaleString('en')} rows/s (${s.toFixed(2)} s)`, N / s / 100_000);
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
await timed('OData first page', `${svc}?$top=1000&$count=true`, (b) => { if (b.value.length !== Math.min(1000, N)) throw new Error('first page'); });
await timed('OData $skiptoken', `${svc}?$top=1000&$skiptoken=${encodeURIComponent(encodeSkiptoken({ uuid: deep!.uuid }))}`, (b) => {
  if (b.value.length !== Math.min(1000, Math.floor(N * 0.1))) throw new Error(`skiptoken page: ${b.value.length}`);
});
await timed('OData prop $filter', `${svc}?$filter=${encodeURIComponent("first_name eq 'name123'")}&$top=1000`, (b) => {
  if (b.value.length !== Math.floor(N / 1000) + (N % 1000 > 123 ? 1 : 0)) throw new Error(`filter: ${b.value.length}`);
});

// ─── offline backlog ────────────────────────────────────────────────────────────────────────
{
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
  if (!inOrder) throw new Error(`offline: ${defs.length} versions, not in branch order`);
  report('offline backlog', `${OFFLINE} updates (${held} held) applied in ${s.toFixed(2)} s`, 1,
    `${Math.round(OFFLINE / s)} updates/s, in branch order; the submitting request answered in ${inRequest.toFixed(2)} s`);
}

console.log(`\nload ${loadavg()[0]!.toFixed(2)}\n${rows.join('\n')}`);
server.close();
await database.close();
process.exit(0);
