/**
 * OpenRosa under load, as a fleet of Collect devices makes it: the real local server (route table,
 * authentication, OpenRosa middleware) on a loopback port, 20 concurrent clients looping over
 * GET P/formList and GET F/manifest (random form) with App User keys and X-OpenRosa-Version: 1.0.
 *
 * Seed: one project, 200 published forms (simple.xml under distinct ids, each expecting one or two
 * CSV media files that are uploaded before publishing), 20 App Users each assigned to every form.
 * Runs on DATABASE_URL when set (use a fresh database), else PGlite in memory. BENCH_SECONDS sets the
 * duration (30 s), BENCH_CLIENTS the concurrency (20). BENCH_REUSE=1 reuses the forms of a project an earlier
 * run seeded in the same database (new App Users and grants each run), so a kept database is seeded
 * once while a change is measured A/B. The clients run in a worker thread (devices are
 * other machines) after an untimed warm-up. Prints requests/s and p50/p95/p99 per kind, the ratio
 * p95 / 20 ms (issue 21: p95 < 20 ms), the load average and the CPU per request of the server's thread
 * and of the database's PostgreSQL backends; BENCH_PROFILE=1 prints the server thread's hottest
 * functions over the timed run (bench/profile.ts). Every request goes to 127.0.0.1.
 *
 *   npx tsx bench/formlist.ts
 */
import { serve } from '@hono/node-server';
import { readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { and, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { assignments, forms, projects, roles } from '../drizzle/schema';
import { localApp } from '../infra/local/app';
import { systemCtx } from '../lib/context';
import { createLogger } from '../lib/log';
import { createProject } from '../lib/projects';
import { withDeps } from '../lib/runtime/entry';
import { loadConfig, processEnv } from '../lib/runtime/env';
import { createFsBlobStore } from '../lib/runtime/fs-blobs';
import { nodeNatives, openDatabase } from '../lib/runtime/node';
import { benchAdmin } from './admin';
import { cpuMeter, profilePhase } from './profile';

const FORMS = 200;
const APP_USERS = 20;
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const TARGET_MS = 20;
/** BENCH_KINDS=formList or =manifest: clients ask only for that (CPU per request of one kind). */
const KINDS: string[] = (process.env.BENCH_KINDS ?? 'formList,manifest').split(',');
const REUSE = process.env.BENCH_REUSE === '1';
const PROJECT_NAME = 'formList bench';

const config = loadConfig(processEnv(), { LOG_LEVEL: 'silent', BCRYPT_COST: '4' }, { localServer: true });
const database = await openDatabase(config, { pgliteDir: 'memory://' });
await database.migrate();
// The native helpers the local server has (createNodeDeps: COPY to a stream, zlib, hashing).
const deps = { db: database.db, config, log: createLogger('silent'), blobs: createFsBlobStore(join(tmpdir(), `fieldbase-bench-fl-${process.pid}`)), ...nodeNatives() };
const ctx = systemCtx(deps);
const app = withDeps(localApp(), () => ({ deps }));

// ---------------------------------------------------------------------------------------------
// Seed (in-process requests through the same route table, as an administrator)

const t0 = performance.now();
const { call } = await benchAdmin(ctx, app, 'fl');
const [kept] = REUSE
  ? await database.db.select({ id: projects.id }).from(projects).where(eq(projects.name, PROJECT_NAME)).orderBy(desc(projects.id)).limit(1)
  : [];
const project = kept ?? await createProject(ctx, { name: PROJECT_NAME });
const P = `/v1/projects/${project.id}`;
/** The same path under an App User's key: /v1/key/{token}/projects/{id}. */
const keyed = (token: string) => `/v1/key/${token}/projects/${project.id}`;

const simple = readFileSync(new URL('../../shared/fixtures/forms/simple.xml', import.meta.url), 'utf8');
/** simple.xml as form `id` expecting `media` CSV files (secondary instances from jr://file/…). */
const formXml = (id: string, media: string[]) => simple
  .replace('id="simple"', `id="${id}"`)
  .replace('<h:title>Simple</h:title>', `<h:title>Bench form ${id}</h:title>`)
  .replace('<bind nodeset="/data/meta/instanceID"',
    `${media.map((m, i) => `<instance id="list${i}" src="jr://file/${m}"/>\n      `).join('')}<bind nodeset="/data/meta/instanceID"`);

const formIds: string[] = [];
let mediaCount = 0;
for (let i = 0; i < FORMS; i += 1) {
  const id = `bench_${String(i).padStart(3, '0')}`;
  const media = i % 2 === 0 ? [`${id}_a.csv`] : [`${id}_a.csv`, `${id}_b.csv`];
  formIds.push(id);
  mediaCount += media.length;
  if (kept) continue;
  await call('POST', `${P}/forms`, formXml(id, media), { 'Content-Type': 'application/xml' });
  for (const m of media) {
    await call('POST', `${P}/forms/${id}/draft/attachments/${m}`, `name,label\n${id},${m}\nrow${i},Row ${i}\n`, { 'Content-Type': 'text/csv' });
  }
  await call('POST', `${P}/forms/${id}/draft/publish`);
}

const appUsers: Array<{ id: number; token: string }> = [];
for (let i = 0; i < APP_USERS; i += 1) {
  const res = await call('POST', `${P}/app-users`, JSON.stringify({ displayName: `Device ${i}` }), { 'Content-Type': 'application/json' });
  appUsers.push((await res.json()) as { id: number; token: string });
}
// 4000 form-level App User grants in one insert (what POST F/assignments/app-user/{id} stores).
const [appUserRole] = await database.db.select({ id: roles.id }).from(roles).where(eq(roles.system, 'app-user'));
const formActees = await database.db.select({ acteeId: forms.acteeId }).from(forms)
  .where(and(eq(forms.projectId, project.id), isNull(forms.deletedAt), inArray(forms.xmlFormId, formIds)));
const grants = appUsers.flatMap((au) => formActees.map((f) => ({ actorId: au.id, roleId: appUserRole!.id, acteeId: f.acteeId })));
for (let i = 0; i < grants.length; i += 1000) await database.db.insert(assignments).values(grants.slice(i, i + 1000));
// Planner statistics, as autovacuum would have them on a live server (it may be off on a test box).
if (config.DATABASE_URL) await database.db.execute(sql.raw('vacuum analyze'));
const seedSeconds = (performance.now() - t0) / 1000;

// ---------------------------------------------------------------------------------------------
// Serve on loopback and load it

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
await new Promise<void>((r) => server.once('listening', () => r()));
const { port } = server.address() as AddressInfo;
const base = `http://127.0.0.1:${port}`;
const OR = { 'X-OpenRosa-Version': '1.0' };

// Sanity: what a device sees before timing.
{
  const list = await (await fetch(`${base}${keyed(appUsers[0]!.token)}/formList`, { headers: OR })).text();
  const listed = list.split('<xform>').length - 1;
  const manifests = list.split('<manifestUrl>').length - 1;
  if (listed !== FORMS || manifests !== FORMS) throw new Error(`formList lists ${listed} forms, ${manifests} manifests; expected ${FORMS}`);
}

type Kind = 'formList' | 'manifest';

// The load runs in a worker thread, so the 20 clients do not compete with the server for its event
// loop (as real devices would not); the server thread only serves.
const clientCode = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { prefixes, formIds, clients, warmupMs, seconds, kinds } = workerData;
// node:http with keep-alive: a lean client (fetch costs several times the CPU on this shared box).
const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
const get = (url) => new Promise((resolve, reject) => {
  http.get(url, { agent, headers: { 'X-OpenRosa-Version': '1.0' } }, (res) => {
    let size = 0;
    res.on('data', (chunk) => { size += chunk.length; });
    res.on('end', () => resolve({ status: res.statusCode, size }));
  }).on('error', reject);
});
async function run(until, out) {
  await Promise.all(Array.from({ length: clients }, async (_, n) => {
    const prefix = prefixes[n % prefixes.length];
    for (let i = n; performance.now() < until; i += 1) {
      const kind = kinds[i % kinds.length];
      const url = kind === 'formList' ? prefix + '/formList' : prefix + '/forms/' + formIds[Math.floor(Math.random() * formIds.length)] + '/manifest';
      const t = performance.now();
      const res = await get(url);
      const ms = performance.now() - t;
      if (res.status !== 200) { out.failures += 1; continue; }
      out.samples[kind].push(ms);
      out.bytes[kind] += res.size;
    }
  }));
}
(async () => {
  await run(performance.now() + warmupMs, { samples: { formList: [], manifest: [] }, bytes: { formList: 0, manifest: 0 }, failures: 0 });
  parentPort.postMessage('warm');
  const out = { samples: { formList: [], manifest: [] }, bytes: { formList: 0, manifest: 0 }, failures: 0 };
  const start = performance.now();
  await run(start + seconds * 1000, out);
  out.elapsed = (performance.now() - start) / 1000;
  parentPort.postMessage(out);
})();
`;
const backendPids = async () => (config.DATABASE_URL
  ? (await database.db.execute(sql`select pid from pg_stat_activity where datname = current_database()`) as unknown as Array<{ pid: number }>).map((r) => Number(r.pid))
  : []);
const { Worker } = await import('node:worker_threads');
// The CPU meter and the profile start once the worker has warmed up (every pooled connection has
// prepared its statements), so they cover the timed run: the server thread's work alone.
let stopProfile = async () => {};
let cpuUsed = async () => ({ mainMs: 0, pgMs: 0 });
const result = await new Promise<{ samples: Record<Kind, number[]>; bytes: Record<Kind, number>; failures: number; elapsed: number }>((resolve, reject) => {
  const worker = new Worker(clientCode, {
    eval: true,
    workerData: { prefixes: appUsers.map((au) => `${base}${keyed(au.token)}`), formIds, clients: CLIENTS, warmupMs: 2000, seconds: SECONDS, kinds: KINDS },
  });
  worker.on('message', (m) => {
    if (m !== 'warm') return resolve(m);
    void (async () => {
      stopProfile = await profilePhase('formlist');
      cpuUsed = await cpuMeter(backendPids);
    })();
  });
  worker.once('error', reject);
});
const cpu = await cpuUsed();
await stopProfile();
const { samples, bytes, failures, elapsed } = result;

const pct = (s: number[], q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
console.log(`database: ${database.kind}; ${kept ? 'reused' : 'seeded'} ${FORMS} forms (${mediaCount} media files), ${APP_USERS} App Users × ${FORMS} assignments in ${seedSeconds.toFixed(1)} s`);
console.log(`load: ${CLIENTS} clients over http://127.0.0.1 for ${elapsed.toFixed(1)} s; failures: ${failures}`);
let worst = 0;
for (const kind of ['formList', 'manifest'] as const) {
  const s = samples[kind].sort((a, b) => a - b);
  if (s.length === 0) continue;
  const p95 = pct(s, 0.95);
  worst = Math.max(worst, p95);
  console.log(`${`GET ${kind}`.padEnd(14)} n=${s.length}  ${(s.length / elapsed).toFixed(1)} req/s  ` +
    `avg ${(bytes[kind] / Math.max(1, s.length) / 1024).toFixed(1)} KiB  ` +
    `p50=${pct(s, 0.5).toFixed(2)} ms  p95=${p95.toFixed(2)} ms  p99=${pct(s, 0.99).toFixed(2)} ms  ` +
    `ratio p95/${TARGET_MS}ms=${(p95 / TARGET_MS).toFixed(3)}`);
}
const total = samples.formList.length + samples.manifest.length;
console.log(`total          ${(total / elapsed).toFixed(1)} req/s; worst p95 ${worst.toFixed(2)} ms → ${worst < TARGET_MS ? 'within' : 'OVER'} the ${TARGET_MS} ms target; ` +
  `CPU per request: server thread ${(cpu.mainMs / total).toFixed(2)} ms, PostgreSQL ${(cpu.pgMs / total).toFixed(2)} ms; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);

await new Promise((r) => server.close(r));
await database.close();
rmSync(join(tmpdir(), `fieldbase-bench-fl-${process.pid}`), { recursive: true, force: true });
process.exit(failures > 0 ? 1 : 0);
