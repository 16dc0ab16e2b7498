/**
 * Streamed JSON lists at volume (issue 21): GET F/submissions of the 250-question soak form at
 * BENCH_N (100,000) submissions — the real local server (route table, authentication,
 * lib/http/json-stream) on a loopback port, one HTTP client in a child process (Bearer session as
 * an administrator) reading the whole body.
 *
 * Seed: bulk SQL (bench/seed-soak.ts, rows as ingestion stores them). BENCH_REUSE=1 reuses (and
 * tops up) a project seeded by an earlier run at the same N, so a kept database is seeded once.
 *
 * The other streamed lists (lib/db/keyset.ts): `BENCH_LISTS` (submissions,users,app-users,audits,entities)
 * picks the lists; users, App Users and audits get BENCH_OTHER_N (50,000) rows each by SQL, the
 * entities BENCH_OTHER_N through POST D/entities (10,000 a body). Each is read once plain and once
 * extended by the same client (rows counted by their first key), with TTFB, rows/s and RSS growth
 * as above, and its row count checked.
 *
 * Per request (BENCH_ITER (3) plain, then one with `X-Extended-Metadata: true`): time to the first
 * body byte, seconds to the last, rows/s (rows counted in the body), MB/s, and the process's RSS
 * before (after a full GC) and at its peak during the request (sampled every 20 ms by the client
 * from /proc; the process is the server alone). Ratios: TTFB ÷ 200 ms, 50,000 ÷
 * rows/s and RSS growth ÷ 50 MB (each target met when ≤ 1, on PostgreSQL). The body of the first
 * request is parsed and checked (N rows, newest first, Central's keys). Load average printed, and the CPU per
 * row of the server thread and of the database's backends; BENCH_PROFILE=1 profiles the server thread.
 *
 *   createdb -h 127.0.0.1 -U postgres bench_lists_x
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_lists_x BENCH_REUSE=1 npx tsx bench/lists.ts
 */
import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { and, eq, sql, type SQL } from 'drizzle-orm';
import { formDefs, forms } from '../drizzle/schema';
import { localApp } from '../infra/local/app';
import { systemCtx } from '../lib/context';
import { createLogger } from '../lib/log';
import { createProject } from '../lib/projects';
import { withDeps } from '../lib/runtime/entry';
import { loadConfig, processEnv } from '../lib/runtime/env';
import { createFsBlobStore } from '../lib/runtime/fs-blobs';
import { nodeNatives, openDatabase } from '../lib/runtime/node';
import type { FormField } from '../lib/xforms/types';
import { benchAdmin } from './admin';
import { cpuMeter, profilePhase } from './profile';
import { SOAK_FORM_ID, seedSubmissions, seedSubmissionsFast, soakFixtures, templateGenerator } from './seed-soak';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const N = Number(process.env.BENCH_N ?? 100_000);
const ITER = Number(process.env.BENCH_ITER ?? 3);
const REUSE = process.env.BENCH_REUSE === '1';
const LISTS = new Set((process.env.BENCH_LISTS ?? 'submissions,users,app-users,audits,entities').split(','));
const OTHER_N = Number(process.env.BENCH_OTHER_N ?? 50_000);
const TTFB_MS = 200;
const ROWS_PER_S = 50_000;
const RSS_MB = 50;

const config = loadConfig(processEnv(), { LOG_LEVEL: 'silent', BCRYPT_COST: '4' }, { localServer: true });
const database = await openDatabase(config, { pgliteDir: 'memory://' });
await database.migrate();
const db = database.db;
// The native helpers the local server has (createNodeDeps: COPY to a stream, zlib, hashing).
const deps = { db, config, log: createLogger('silent'), blobs: createFsBlobStore(join(tmpdir(), `fieldbase-bench-lists-${process.pid}`)), ...nodeNatives() };
const ctx = systemCtx(deps);
const app = withDeps(localApp(), () => ({ deps }));
const rowsOf = async <T>(query: SQL): Promise<T[]> => {
  const result = (await db.execute(query)) as unknown;
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[];
};

const soak = soakFixtures();
const { call, auth } = await benchAdmin(ctx, app, 'lists');
const name = `lists bench N=${N}`;
const [kept] = REUSE ? await rowsOf<{ id: number }>(sql`select id from projects where name = ${name} and deleted_at is null order by id desc limit 1`) : [];
const project = kept ?? await createProject(ctx, { name });
const P = `/v1/projects/${project.id}`;
if (!kept) await call('POST', `${P}/forms?publish=true`, soak.formXml, { 'Content-Type': 'application/xml' });
const [keptAppUser] = kept ? await rowsOf<{ id: number }>(sql`select actor_id as id from field_keys where project_id = ${project.id} limit 1`) : [];
const appUser = keptAppUser ?? (await (await call('POST', `${P}/app-users`, JSON.stringify({ displayName: 'Bench device' }), { 'Content-Type': 'application/json' })).json()) as { id: number };
const [f] = await db.select({ id: forms.id, defId: forms.currentDefId, fields: formDefs.fields }).from(forms)
  .innerJoin(formDefs, eq(formDefs.id, forms.currentDefId)).where(and(eq(forms.projectId, project.id), eq(forms.xmlFormId, SOAK_FORM_ID)));
if (!f || f.defId == null) throw new Error('the soak form did not publish');
const target = { formId: f.id, formDefId: f.defId, fields: f.fields as FormField[], submitterId: appUser.id };
const have = (await rowsOf<{ n: number }>(sql`select count(*)::int as n from submissions where form_id = ${f.id}`))[0]!.n;
console.log(`database: ${database.kind}${database.kind === 'pglite' ? ' (in memory; the targets are for PostgreSQL)' : ''}`);
if (!LISTS.has('submissions')) console.log('submissions skipped (BENCH_LISTS)');
else if (have < N) {
  // Generated inside PostgreSQL by default, as bench/odata.ts (BENCH_SEED=rows: built in JS).
  const gen = templateGenerator(soak.template, target.fields);
  const epochMs = Date.now() - 86_400_000 * 30;
  const s = process.env.BENCH_SEED === 'rows'
    ? await seedSubmissions(database, target, { from: have, to: N, generate: () => gen(), epochMs, progress: true })
    : await seedSubmissionsFast(database, target, { from: have, to: N, templates: [soak.template], epochMs, progress: true, concurrency: 2 });
  console.log(`seeded ${N - have} ${SOAK_FORM_ID} submissions in ${s.toFixed(1)} s`);
} else console.log(`reusing ${have} ${SOAK_FORM_ID} submissions (project ${project.id})`);

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
await new Promise<void>((r) => server.once('listening', () => r()));
const { port } = server.address() as AddressInfo;
const url = `http://127.0.0.1:${port}${P}/forms/${SOAK_FORM_ID}/submissions`;

// The client is a process of its own, so the RSS measured is the server's alone (a client thread's
// heap in the same process grew with the bodies it read); it samples the server's RSS from /proc
// every 20 ms and counts rows as they arrive (\`marker\` opens each row: \`{"instanceId":\` for
// submissions, whose version's object opens with submitterId). A kept body goes through a file.
const clientCode = `
const http = require('node:http');
const fs = require('node:fs');
const rss = (pid) => Number(fs.readFileSync('/proc/' + pid + '/statm', 'latin1').split(' ')[1]) * 4096;
process.on('message', ({ url, headers, keepBody, marker, serverPid, bodyFile }) => {
  const start = performance.now();
  let peak = rss(serverPid);
  const timer = setInterval(() => { peak = Math.max(peak, rss(serverPid)); }, 20);
  http.get(url, { headers }, (res) => {
    let ttfb = null, bytes = 0, rows = 0, tail = '';
    const out = keepBody ? fs.openSync(bodyFile, 'w') : null;
    res.on('data', (c) => {
      if (ttfb == null) ttfb = performance.now() - start;
      bytes += c.length;
      if (out != null) fs.writeSync(out, c);
      const s = tail + c.toString('latin1');
      let i = -1;
      while ((i = s.indexOf(marker, i + 1)) >= 0) rows += 1;
      tail = s.slice(-(marker.length - 1));
    });
    res.on('end', () => {
      clearInterval(timer);
      peak = Math.max(peak, rss(serverPid));
      if (out != null) fs.closeSync(out);
      process.send({ status: res.statusCode, ttfb, ms: performance.now() - start, bytes, rows, peak });
    });
  });
});
`;
const client = spawn(process.execPath, ['-e', clientCode], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const bodyFile = join(tmpdir(), `fieldbase-bench-lists-body-${process.pid}.json`);
interface Got { status: number; ttfb: number; ms: number; bytes: number; rows: number; peak: number; body: string | null }
const get = (headers: Record<string, string>, keepBody: boolean, to = url, marker = '{"instanceId":') => new Promise<Got>((resolve) => {
  client.once('message', (g: Omit<Got, 'body'>) => {
    const body = keepBody ? readFileSync(bodyFile, 'utf8') : null;
    if (keepBody) rmSync(bodyFile, { force: true });
    resolve({ ...g, body });
  });
  client.send({ url: to, headers: { ...auth, ...headers }, keepBody, marker, serverPid: process.pid, bodyFile });
});

const mb = (b: number) => b / 1024 / 1024;
const backendPids = async () => (config.DATABASE_URL
  ? (await rowsOf<{ pid: number }>(sql`select pid from pg_stat_activity where datname = current_database()`)).map((r) => Number(r.pid))
  : []);
const runs: Array<{ label: string; g: Got; base: number; cpu: { mainMs: number; pgMs: number } }> = [];
let bad = false;
const loadBefore = loadavg()[0]!;
for (let i = 0; i < (LISTS.has('submissions') ? ITER + 1 : 0); i += 1) {
  const extended = i === ITER;
  gc();
  await new Promise((r) => setTimeout(r, 200));
  const base = process.memoryUsage.rss();
  // CPU of the server's thread (this process's main thread; the client is another process) and of the
  // database's backends, per row; BENCH_PROFILE=1 profiles the server thread (bench/profile.ts).
  const stopProfile = await profilePhase(`lists-${extended ? 'extended' : `plain${i + 1}`}`);
  const cpuUsed = await cpuMeter(backendPids);
  const g = await get(extended ? { 'X-Extended-Metadata': 'true' } : {}, i === 0);
  const cpu = await cpuUsed();
  await stopProfile();
  if (g.status !== 200 || g.rows !== N) {
    bad = true;
    console.log(`FAILED: status ${g.status}, ${g.rows} rows (expected ${N})`);
  }
  if (g.body != null) {
    const list = JSON.parse(g.body) as Array<{ instanceId: string; createdAt: string; currentVersion: object }>;
    const sorted = list.every((r, k) => k === 0 || list[k - 1]!.createdAt >= r.createdAt);
    const keys = Object.keys(list[0] ?? {}).join(',');
    if (list.length !== N || !sorted || keys !== 'instanceId,submitterId,deviceId,createdAt,updatedAt,reviewState,userAgent,deletedAt,currentVersion') {
      bad = true;
      console.log(`FAILED check: ${list.length} rows, newest first ${sorted}, keys ${keys}`);
    } else console.log(`checked: ${list.length} rows, newest first, Central's keys`);
  }
  runs.push({ label: extended ? 'extended' : `plain #${i + 1}`, g, base, cpu });
}
const loadAfter = loadavg()[0]!;

// The other streamed lists.
const origin = `http://127.0.0.1:${port}`;
const others: Array<{ label: string; g: Got; base: number; n: number }> = [];
const seedOther = async (list: string): Promise<{ path: string; marker: string; n: number }> => {
  const tag = `bench-lists-${process.pid}`;
  if (list === 'users') {
    await db.execute(sql`with g as (select g, gen_random_uuid()::text as actee from generate_series(1, ${OTHER_N}) g),
      a as (insert into actees (id, species) select actee, 'user' from g returning 1),
      b as (insert into actors (type, display_name, actee_id) select 'user', ${tag} || ' ' || g, actee from g returning id, display_name)
      insert into users (actor_id, email) select id, replace(display_name, ' ', '.') || '@example.org' from b`);
    const [{ n }] = await rowsOf<{ n: number }>(sql`select count(*)::int as n from users u join actors a on a.id = u.actor_id where not u.deleted and a.deleted_at is null`) as [{ n: number }];
    return { path: '/v1/users', marker: '{"email":', n };
  }
  if (list === 'app-users') {
    await db.execute(sql`with g as (select g, gen_random_uuid()::text as actee from generate_series(1, ${OTHER_N}) g),
      a as (insert into actees (id, species) select actee, 'field_key' from g returning 1),
      b as (insert into actors (type, display_name, actee_id) select 'field_key', ${tag} || ' ' || g, actee from g returning id)
      insert into field_keys (actor_id, project_id, created_by, token) select id, ${project.id}, id, md5(id::text) from b`);
    const [{ n }] = await rowsOf<{ n: number }>(sql`select count(*)::int as n from field_keys k join actors a on a.id = k.actor_id where k.project_id = ${project.id} and a.deleted_at is null`) as [{ n: number }];
    return { path: `${P}/app-users`, marker: '{"projectId":', n };
  }
  if (list === 'audits') {
    await db.execute(sql`insert into audits (action, actee_id, details, logged_at)
      select 'project.update', (select actee_id from projects where id = ${project.id}), jsonb_build_object('g', g), now() - g * interval '1 ms'
      from generate_series(1, ${OTHER_N}) g`);
    const [{ n }] = await rowsOf<{ n: number }>(sql`select count(*)::int as n from audits`) as [{ n: number }];
    return { path: '/v1/audits', marker: '{"actorId":', n };
  }
  if (list === 'entities') {
    const name = `people${process.pid}`;
    await call('POST', `${P}/datasets`, JSON.stringify({ name }), { 'Content-Type': 'application/json' });
    for (let i = 0; i < OTHER_N; i += 10_000) {
      const entities = Array.from({ length: Math.min(10_000, OTHER_N - i) }, (_, k) => ({ label: `Person ${i + k}`, data: {} }));
      await call('POST', `${P}/datasets/${name}/entities`, JSON.stringify({ entities, source: { name: 'bench.csv', size: 1 } }), { 'Content-Type': 'application/json' });
    }
    return { path: `${P}/datasets/${name}/entities`, marker: '{"uuid":', n: OTHER_N };
  }
  throw new Error(`unknown list ${list} in BENCH_LISTS`);
};
for (const list of ['users', 'app-users', 'audits', 'entities'].filter((l) => LISTS.has(l))) {
  const { path, marker, n } = await seedOther(list);
  for (const extended of [false, true]) {
    gc();
    await new Promise((r) => setTimeout(r, 200));
    const base = process.memoryUsage.rss();
    const g = await get(extended ? { 'X-Extended-Metadata': 'true' } : {}, false, `${origin}${path}`, marker);
    if (g.status !== 200 || g.rows !== n) {
      bad = true;
      console.log(`FAILED ${list}: status ${g.status}, ${g.rows} rows (expected ${n})`);
    }
    others.push({ label: `${list}${extended ? ' ext' : ''}`, g, base, n });
  }
}
const loadOthers = loadavg()[0]!;

if (runs.length > 0) {
  console.log(`\nGET F/submissions, ${N} submissions of ${SOAK_FORM_ID}`);
  console.log('run        TTFB ms   s      rows/s   MB/s   RSS base MB  peak MB  growth MB   TTFB÷200  50000÷rows/s  growth÷50  CPU µs/row server + PostgreSQL');
  for (const { label, g, base, cpu } of runs) {
    const rps = g.rows / (g.ms / 1000);
    const growth = mb(g.peak - base);
    console.log(`${label.padEnd(10)} ${g.ttfb.toFixed(0).padStart(7)}  ${(g.ms / 1000).toFixed(2).padStart(5)}  ${rps.toFixed(0).padStart(7)}  ${(mb(g.bytes) / (g.ms / 1000)).toFixed(1).padStart(5)}  ` +
      `${mb(base).toFixed(0).padStart(11)}  ${mb(g.peak).toFixed(0).padStart(7)}  ${growth.toFixed(1).padStart(9)}   ${(g.ttfb / TTFB_MS).toFixed(2).padStart(8)}  ${(ROWS_PER_S / rps).toFixed(2).padStart(12)}  ${(growth / RSS_MB).toFixed(2).padStart(9)}  ${(cpu.mainMs * 1000 / g.rows).toFixed(1)} + ${(cpu.pgMs * 1000 / g.rows).toFixed(1)}`);
  }
  const plain = runs.filter((r) => r.label.startsWith('plain'));
  const worst = {
    ttfb: Math.max(...plain.map((r) => r.g.ttfb)),
    rps: Math.min(...plain.map((r) => r.g.rows / (r.g.ms / 1000))),
    growth: Math.max(...plain.map((r) => mb(r.g.peak - r.base))),
  };
  console.log(`worst plain run: TTFB ${worst.ttfb.toFixed(0)} ms (target < ${TTFB_MS}: ${worst.ttfb < TTFB_MS ? 'met' : 'NOT met'}), ` +
    `${worst.rps.toFixed(0)} rows/s (target ≥ ${ROWS_PER_S}: ${worst.rps >= ROWS_PER_S ? 'met' : 'NOT met'}), ` +
    `RSS growth ${worst.growth.toFixed(1)} MB (target < ${RSS_MB}: ${worst.growth < RSS_MB ? 'met' : 'NOT met'})`);
  console.log(`load average (1 min) ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after, on ${cpus().length} CPUs`);
}
if (others.length > 0) {
  console.log(`\nother streamed lists (BENCH_OTHER_N ${OTHER_N})`);
  console.log('list             rows    TTFB ms   s      rows/s   MB/s   RSS base MB  peak MB  growth MB');
  for (const { label, g, base } of others) {
    const rps = g.rows / (g.ms / 1000);
    console.log(`${label.padEnd(15)} ${String(g.rows).padStart(6)}  ${g.ttfb.toFixed(0).padStart(7)}  ${(g.ms / 1000).toFixed(2).padStart(5)}  ${rps.toFixed(0).padStart(7)}  ` +
      `${(mb(g.bytes) / (g.ms / 1000)).toFixed(1).padStart(5)}  ${mb(base).toFixed(0).padStart(11)}  ${mb(g.peak).toFixed(0).padStart(7)}  ${mb(g.peak - base).toFixed(1).padStart(9)}`);
  }
  console.log(`load average (1 min) ${loadOthers.toFixed(2)} after the other lists`);
}
await new Promise((r) => server.close(r));
client.kill();
await database.close();
process.exit(bad ? 1 : 0);
