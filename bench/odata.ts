/**
 * OData feed latency at volume: the real local server (route table, authentication, lib/odata) on a
 * loopback port, one HTTP client in a worker thread asking GET F.svc/… as an administrator (Bearer
 * session), one request at a time.
 *
 * Seed: an administrator, one project, one App User, two published forms through the API:
 *   - the 250-question soak form (shared/fixtures/forms/central-e2e/soak: 250 string fields, no
 *     group, no repeat) with BENCH_N (100,000) submissions (its template with random integers);
 *   - withrepeat.xml (shared/fixtures/forms: name, int age, repeat children/child with name and int
 *     age) with BENCH_N submissions of 2 or 3 children each (the soak form has no repeat),
 * straight into the database with bulk SQL (bench/seed-soak.ts: rows as ingestion stores them,
 * `values` and `root_values` as parseSubmission/rootValuesOf make them, checked per batch; by
 * default generated inside PostgreSQL by seedSubmissionsFast, BENCH_SEED_LANES (2) statements at a
 * time; BENCH_SEED=rows builds them in JS, seedSubmissions),
 * creation times 10 ms apart, then VACUUM ANALYZE.
 *
 * Cases (each BENCH_ITER (30) timed requests after 3 untimed ones; time = request to the body's last
 * byte; the first response of each case is checked: status 200, row count, nextLink, first row):
 *   first page          soak  Submissions?$top=1000
 *   deep $skiptoken     soak  Submissions?$top=1000&$skiptoken=01…  (the token of the row at
 *                             position 90 % of N in the feed's order, `01`+base64({instanceId}))
 *   field $filter       soak  Submissions?$filter=q1 gt 500000&$top=1000  (q1 is a string field, so
 *                             a text comparison; about half the rows match)
 *   $top=1 repeat       withrepeat  Submissions.children.child?$top=1
 *   $count=true         soak  Submissions?$top=1000&$count=true
 *   selective range     soak  Submissions?$filter=q1 gt '99995'&$top=1000  (text order: few matches)
 *   selective $filter   soak  Submissions?$filter=q1 eq '<q1 of the row at 90 %>'&$top=1000  (few matches)
 * and, for information: int field $filter  withrepeat  Submissions?$filter=age gt 50&$top=1000.
 * The first pass runs with no field index (ODATA_FIELD_INDEX_MIN_ROWS -1; indexes left by an
 * earlier run are dropped); then the indexes a filter on q1 and on age builds
 * (lib/odata/field-indexes.ts, CONCURRENTLY + ANALYZE; build time and size printed) and the filter
 * cases again, marked [indexed] (BENCH_FIELD_INDEX=0 skips this pass). BENCH_REUSE=1 keeps the
 * seeded project for the next run at the same BENCH_N / BENCH_REPEAT_N (seeding resumes where it
 * stopped); BENCH_SEED_ONLY=1 stops after seeding; BENCH_PROGRESS=1 prints seeding progress.
 * Prints p50/p95/max, CPU per request (the server's main thread and PostgreSQL's backends, from
 * /proc: bench/profile.ts cpuMeter) and the ratio p95 ÷ 250 ms per case (target: p95 < 250 ms for the first five,
 * on PostgreSQL). BENCH_EXPLAIN=1 also logs the SQL each case runs (one request, through drizzle's
 * logger) and prints EXPLAIN (ANALYZE, BUFFERS) of every statement that is not a lookup by key
 * (PostgreSQL 15's EXPLAIN does not detoast or send the selected jsonb, so it shows the plan, not the
 * cost of shipping `values`). BENCH_PROFILE=1 samples the server thread's CPU (node:inspector)
 * during each case's timed requests and prints the hottest functions by self time. The 1-minute
 * load average is printed before and after the timed phase: on a shared box, read the figures with it.
 *
 * Runs on DATABASE_URL when set (use a fresh database), else PGlite in memory (the target is for
 * PostgreSQL; lower BENCH_N there).
 *
 *   createdb -h 127.0.0.1 -U postgres bench_odata_x
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_odata_x npx tsx bench/odata.ts
 *   dropdb -h 127.0.0.1 -U postgres bench_odata_x
 */
import { serve } from '@hono/node-server';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Session } from 'node:inspector';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { and, desc, eq, sql, type SQL } from 'drizzle-orm';
import { formDefs, forms, submissionDefs, submissions } from '../drizzle/schema';
import { localApp } from '../infra/local/app';
import { systemCtx } from '../lib/context';
import { createLogger } from '../lib/log';
import { fieldIndexesSettled, noteFieldFilter } from '../lib/odata/field-indexes';
import { encodeSkiptoken } from '../lib/odata/query';
import { createProject } from '../lib/projects';
import { withDeps } from '../lib/runtime/entry';
import { loadConfig, processEnv } from '../lib/runtime/env';
import { createFsBlobStore } from '../lib/runtime/fs-blobs';
import { nodeNatives, openDatabase } from '../lib/runtime/node';
import type { FormField } from '../lib/xforms/types';
import { SOAK_FORM_ID, defaultFills, seedSubmissions, seedSubmissionsFast, soakFixtures, templateGenerator, type SeedTarget } from './seed-soak';
import { benchAdmin } from './admin';
import { cpuMeter } from './profile';

const N = Number(process.env.BENCH_N ?? 100_000);
const ITER = Number(process.env.BENCH_ITER ?? 30);
const WARMUP = 3;
const EXPLAIN = process.env.BENCH_EXPLAIN === '1';
const PROFILE = process.env.BENCH_PROFILE === '1';
const TARGET_MS = 250;
const PAGE = 1000;
const REPEAT_N = Number(process.env.BENCH_REPEAT_N ?? N);
const REUSE = process.env.BENCH_REUSE === '1';
const PROGRESS = process.env.BENCH_PROGRESS === '1';

// No field index is built by the filters of the first pass (ODATA_FIELD_INDEX_MIN_ROWS -1); the second pass builds them.
const config = loadConfig(processEnv(), { LOG_LEVEL: 'silent', BCRYPT_COST: '4', ODATA_FIELD_INDEX_MIN_ROWS: '-1' }, { localServer: true });
const database = await openDatabase(config, { pgliteDir: 'memory://' });
await database.migrate();
const db = database.db;
// The native helpers the local server has (createNodeDeps: COPY to a stream, zlib, hashing).
const deps = { db, config, log: createLogger('silent'), blobs: createFsBlobStore(join(tmpdir(), `fieldbase-bench-odata-${process.pid}`)), ...nodeNatives() };
const ctx = systemCtx(deps);
const app = withDeps(localApp(), () => ({ deps }));

// ---------------------------------------------------------------------------------------------
// Forms, administrator, App User (in-process requests through the same route table)

const soak = soakFixtures();
const REPEAT_FORM_ID = 'withrepeat';
const repeatXml = readFileSync(new URL('../../shared/fixtures/forms/withrepeat.xml', import.meta.url), 'utf8');
/** A Collect-style withrepeat submission with `children` repeat instances. */
const repeatTemplate = (children: number) =>
  `<data xmlns:jr="http://openrosa.org/javarosa" xmlns:orx="http://openrosa.org/xforms" id="${REPEAT_FORM_ID}" orx:version="1.0">` +
  '<orx:meta><orx:instanceID>uuid:{{uuid}}</orx:instanceID></orx:meta><name>{{word}}</name><age>{{smallInt}}</age><children>' +
  '<child><name>{{word}}</name><age>{{smallInt}}</age></child>'.repeat(children) + '</children></data>';

const { call, auth } = await benchAdmin(ctx, app, 'odata');
/** Rows of a raw statement (postgres.js answers an array, PGlite `{ rows }`). */
const rowsOf = async <T>(query: SQL): Promise<T[]> => {
  const result = (await db.execute(query)) as unknown;
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[];
};
// BENCH_REUSE=1: a project seeded by an earlier run at the same N (kept in the database) is used as it is.
const projectName = `odata bench N=${N} repeat N=${REPEAT_N}`;
const [kept] = REUSE ? await rowsOf<{ id: number }>(sql`select id from projects where name = ${projectName} and deleted_at is null order by id desc limit 1`) : [];
const project = kept ?? await createProject(ctx, { name: projectName });
const P = `/v1/projects/${project.id}`;
if (!kept) for (const xml of [soak.formXml, repeatXml]) await call('POST', `${P}/forms?publish=true`, xml, { 'Content-Type': 'application/xml' });
const [keptAppUser] = kept ? await rowsOf<{ id: number }>(sql`select actor_id as id from field_keys where project_id = ${project.id} limit 1`) : [];
const appUser = keptAppUser ?? (await (await call('POST', `${P}/app-users`, JSON.stringify({ displayName: 'Bench device' }), {
  'Content-Type': 'application/json',
})).json()) as { id: number };

async function target(xmlFormId: string): Promise<SeedTarget> {
  const [f] = await db
    .select({ id: forms.id, defId: forms.currentDefId, fields: formDefs.fields })
    .from(forms)
    .innerJoin(formDefs, eq(formDefs.id, forms.currentDefId))
    .where(and(eq(forms.projectId, project.id), eq(forms.xmlFormId, xmlFormId)));
  if (!f || f.defId == null) throw new Error(`${xmlFormId} did not publish`);
  return { formId: f.id, formDefId: f.defId, fields: f.fields as FormField[], submitterId: appUser.id };
}
const soakTarget = await target(SOAK_FORM_ID);
const repeatTarget = await target(REPEAT_FORM_ID);
if (soakTarget.fields.some((x) => x.type === 'repeat')) throw new Error('the soak form grew a repeat: use it for the repeat case');

// ---------------------------------------------------------------------------------------------
// Seed

console.log(`database: ${database.kind}${database.kind === 'pglite' ? ' (in memory; the target is for PostgreSQL: set DATABASE_URL)' : ''}; ` +
  `feeds over http://127.0.0.1 (client in a worker thread), ${ITER} timed requests per case after ${WARMUP} untimed`);
const epochMs = Date.now() - 86_400_000 * 30;
const have = async (formId: number) => (await rowsOf<{ n: number }>(sql`select count(*)::int as n from submissions where form_id = ${formId}`))[0]!.n;
const soakHave = await have(soakTarget.formId);
const soakGen = templateGenerator(soak.template, soakTarget.fields);
// Seeding resumes where a kept project stopped (row i is created at epoch + i × 10 ms).
// BENCH_SEED=rows: rows built in JS and sent as JSON (seedSubmissions, ~200 rows/s); by default
// PostgreSQL generates them (seedSubmissionsFast: INSERT … SELECT over generate_series, sample rows
// checked), BENCH_SEED_LANES (2) statements at a time.
const FAST = process.env.BENCH_SEED !== 'rows';
const LANES = Number(process.env.BENCH_SEED_LANES ?? 2);
const soakSeconds = soakHave >= N ? 0 : FAST
  ? await seedSubmissionsFast(database, soakTarget, { from: soakHave, to: N, templates: [soak.template], epochMs, progress: PROGRESS, concurrency: LANES })
  : await seedSubmissions(database, soakTarget, { from: soakHave, to: N, generate: () => soakGen(), epochMs, progress: PROGRESS });
console.log(soakHave >= N ? `reusing ${soakHave} ${SOAK_FORM_ID} submissions (project ${project.id})` : `seeded ${N - soakHave} ${SOAK_FORM_ID} submissions (${soakTarget.fields.length} fields) in ${soakSeconds.toFixed(1)} s`);
const repeatHave = await have(repeatTarget.formId);
const repeatGens = [templateGenerator(repeatTemplate(2), repeatTarget.fields, defaultFills), templateGenerator(repeatTemplate(3), repeatTarget.fields, defaultFills)];
const repeatSeconds = repeatHave >= REPEAT_N ? 0 : FAST
  ? await seedSubmissionsFast(database, repeatTarget, { from: repeatHave, to: REPEAT_N, templates: [repeatTemplate(2), repeatTemplate(3)], epochMs, progress: PROGRESS, concurrency: LANES })
  : await seedSubmissions(database, repeatTarget, { from: repeatHave, to: REPEAT_N, generate: (i) => repeatGens[i % 2]!(), epochMs, progress: PROGRESS });
console.log(repeatHave >= REPEAT_N ? `reusing ${repeatHave} ${REPEAT_FORM_ID} submissions`
  : `seeded ${REPEAT_N - repeatHave} ${REPEAT_FORM_ID} submissions (2 or 3 children/child each) in ${repeatSeconds.toFixed(1)} s`);
if (database.kind === 'postgres') {
  const [size] = await rowsOf<{ defs: string; subs: string }>(sql`select pg_size_pretty(pg_total_relation_size('submission_defs')) as defs, pg_size_pretty(pg_total_relation_size('submissions')) as subs`);
  console.log(`table sizes: submission_defs ${size!.defs}, submissions ${size!.subs}`);
}
if (process.env.BENCH_SEED_ONLY === '1') {
  await database.close();
  process.exit(0);
}

// The row at 90 % of the soak feed (newest first): its instanceId for the deep skiptoken, its q1 for the selective filter.
const deepAt = Math.floor(N * 0.9);
// The position by the submissions index alone (no submission_defs rows read), then that row's q1.
const [deepSub] = await db
  .select({ instanceId: submissions.instanceId, defId: submissions.currentDefId })
  .from(submissions)
  .where(and(eq(submissions.formId, soakTarget.formId), eq(submissions.draft, false), sql`${submissions.deletedAt} is null`))
  .orderBy(desc(submissions.createdAt), desc(submissions.id))
  .offset(deepAt - 1)
  .limit(1);
if (!deepSub) throw new Error('no deep row');
const [deepDef] = await db.select({ q1: sql<string>`${submissionDefs.rootValues} ->> '/q1'` }).from(submissionDefs).where(eq(submissionDefs.id, deepSub.defId!));
const deep = { instanceId: deepSub.instanceId, q1: deepDef!.q1 };
// BENCH_SKIP_SCANS=1: the first pass leaves out the selective cases (each a scan of the whole form
// without an index: ~17 s at 1,000,000 on this box); their rows are then checked by value only.
const SKIP_SCANS = process.env.BENCH_SKIP_SCANS === '1';
const q1Matches = SKIP_SCANS ? null : (await rowsOf<{ n: number }>(sql`select count(*)::int as n from ${submissionDefs} d join ${submissions} s on s.current_def_id = d.id
  where s.form_id = ${soakTarget.formId} and d.root_values ->> '/q1' = ${deep.q1}`))[0]!.n;

// ---------------------------------------------------------------------------------------------
// Server on loopback, client in a worker thread

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
await new Promise<void>((r) => server.once('listening', () => r()));
const { port } = server.address() as AddressInfo;
const svc = (xmlFormId: string) => `http://127.0.0.1:${port}${P}/forms/${xmlFormId}.svc`;

const clientCode = `
const { parentPort } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
parentPort.on('message', ({ url, headers, keepBody }) => {
  const start = performance.now();
  const done = (out) => parentPort.postMessage({ ms: performance.now() - start, ...out });
  http.get(url, { agent, headers }, (res) => {
    const chunks = [];
    let bytes = 0;
    res.on('data', (c) => { bytes += c.length; if (keepBody) chunks.push(c); });
    res.on('end', () => done({ status: res.statusCode, bytes, body: keepBody ? Buffer.concat(chunks).toString('utf8') : null }));
    res.on('error', (err) => done({ status: 0, bytes, body: String(err) }));
  }).on('error', (err) => done({ status: 0, bytes: 0, body: String(err) }));
});
`;
const worker = new Worker(clientCode, { eval: true });
worker.unref();
interface Got { ms: number; status: number; bytes: number; body: string | null }
let pending: { resolve: (g: Got) => void; reject: (e: unknown) => void } | null = null;
worker.on('message', (g: Got) => pending?.resolve(g));
worker.on('error', (err) => pending?.reject(err));
/** One request at a time. */
const get = (url: string, keepBody = false) => new Promise<Got>((resolve, reject) => {
  pending = { resolve, reject };
  worker.postMessage({ url, headers: auth, keepBody });
});

// ---------------------------------------------------------------------------------------------
// SQL capture (BENCH_EXPLAIN=1): drizzle's logger, patched on the session drizzle built

interface Logged { query: string; params: unknown[] }
let captured: Logged[] | null = null;
if (EXPLAIN) {
  const logger = (db as unknown as { session: { logger: { logQuery: (q: string, p: unknown[]) => void } } }).session.logger;
  logger.logQuery = (query, params) => { captured?.push({ query, params }); };
}
async function explain(q: Logged): Promise<string> {
  const client = (db as unknown as { $client: unknown }).$client;
  const text = `explain (analyze, buffers) ${q.query}`;
  const rows = database.kind === 'postgres'
    ? await (client as { unsafe: (q: string, p: unknown[]) => Promise<Array<Record<string, string>>> }).unsafe(text, q.params)
    : (await (client as { query: (q: string, p: unknown[]) => Promise<{ rows: Array<Record<string, string>> }> }).query(text, q.params)).rows;
  return rows.map((r) => `      ${Object.values(r)[0]}`).join('\n');
}

// ---------------------------------------------------------------------------------------------
// Cases

interface Case {
  label: string;
  url: string;
  /** In the requirement (held to the target), or for information. */
  required: boolean;
  /** Checks the first response's parsed body; returns a short description. @throws when wrong. */
  check: (body: { value: Array<Record<string, unknown>>; '@odata.nextLink'?: string; '@odata.count'?: number }) => string;
}
const q = (params: Record<string, string>) => `?${Object.entries(params).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`;
const expectRows = (n: number, got: number) => {
  if (got !== n) throw new Error(`${got} rows, expected ${n}`);
};
const deepToken = encodeSkiptoken({ instanceId: deep.instanceId });
const cases: Case[] = [
  {
    label: 'first page $top=1000', required: true, url: `${svc(SOAK_FORM_ID)}/Submissions${q({ $top: String(PAGE) })}`,
    check: (b) => {
      expectRows(PAGE, b.value.length);
      if (!b['@odata.nextLink']?.includes('%24skiptoken=01')) throw new Error(`no $skiptoken @odata.nextLink although more rows exist (got ${b['@odata.nextLink']})`);
      if (Object.keys(b.value[0]!).length < 250) throw new Error('rows lack the form fields');
      return `${b.value.length} rows, nextLink`;
    },
  },
  {
    label: `$skiptoken at row ${deepAt}`, required: true, url: `${svc(SOAK_FORM_ID)}/Submissions${q({ $top: String(PAGE), $skiptoken: deepToken })}`,
    check: (b) => {
      expectRows(Math.min(PAGE, N - deepAt), b.value.length);
      return `${b.value.length} rows after ${deep.instanceId}`;
    },
  },
  {
    label: '$filter q1 gt 500000', required: true, url: `${svc(SOAK_FORM_ID)}/Submissions${q({ $filter: 'q1 gt 500000', $top: String(PAGE) })}`,
    check: (b) => {
      expectRows(PAGE, b.value.length);
      if (b.value.some((r) => !(String(r.q1) > '500000'))) throw new Error('a row does not match the filter');
      return `${b.value.length} rows, all q1 > '500000' (text order)`;
    },
  },
  {
    label: '$top=1 repeat table', required: true, url: `${svc(REPEAT_FORM_ID)}/Submissions.children.child${q({ $top: '1' })}`,
    check: (b) => {
      expectRows(1, b.value.length);
      if (typeof b.value[0]!['__Submissions-id'] !== 'string') throw new Error(`no parent key: ${JSON.stringify(b.value[0])}`);
      if (!b['@odata.nextLink']) throw new Error('no nextLink');
      return `1 row ${JSON.stringify(b.value[0]).slice(0, 90)}…`;
    },
  },
  {
    label: '$count=true $top=1000', required: true, url: `${svc(SOAK_FORM_ID)}/Submissions${q({ $top: String(PAGE), $count: 'true' })}`,
    check: (b) => {
      expectRows(PAGE, b.value.length);
      if (b['@odata.count'] !== N) throw new Error(`@odata.count ${b['@odata.count']}, expected ${N}`);
      return `${b.value.length} rows, @odata.count ${b['@odata.count']}`;
    },
  },
  {
    label: '$filter age gt 50 (int)', required: false, url: `${svc(REPEAT_FORM_ID)}/Submissions${q({ $filter: 'age gt 50', $top: String(PAGE) })}`,
    check: (b) => {
      if (N >= 10_000) expectRows(PAGE, b.value.length);
      if (b.value.length === 0 || b.value.some((r) => !((r.age as number) > 50))) throw new Error('a row does not match the filter');
      return `${b.value.length} rows, all age > 50`;
    },
  },
  {
    label: "$filter q1 gt '99995' (selective range)", required: true, url: `${svc(SOAK_FORM_ID)}/Submissions${q({ $filter: "q1 gt '99995'", $top: String(PAGE) })}`,
    check: (b) => {
      if (b.value.some((r) => !(String(r.q1) > '99995'))) throw new Error('a row does not match the filter');
      return `${b.value.length} rows, all q1 > '99995' (text order)`;
    },
  },
  {
    label: `$filter q1 eq (selective)`, required: true, url: `${svc(SOAK_FORM_ID)}/Submissions${q({ $filter: `q1 eq '${deep.q1}'`, $top: String(PAGE) })}`,
    check: (b) => {
      if (q1Matches != null) expectRows(q1Matches, b.value.length);
      if (b.value.length === 0 || b.value.some((r) => String(r.q1) !== deep.q1)) throw new Error('a row does not match the filter');
      return `${b.value.length} rows (q1 = '${deep.q1}')`;
    },
  },
];

// CPU profile of the server thread (BENCH_PROFILE=1): self time per function, per case.
interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }
const inspector = PROFILE ? new Session() : null;
const inspect = <T>(method: string, params?: object) => new Promise<T>((resolve, reject) => {
  inspector!.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res as T)));
});
if (inspector) {
  inspector.connect();
  await inspect('Profiler.enable');
  await inspect('Profiler.setSamplingInterval', { interval: 500 });
}
function hottest(nodes: ProfileNode[], top = 10): string {
  const self = new Map<string, number>();
  let total = 0;
  for (const n of nodes) {
    const hits = n.hitCount ?? 0;
    total += hits;
    const url = n.callFrame.url.replace(/^file:\/\//, '').replace(`${process.cwd()}/`, '');
    const key = `${n.callFrame.functionName || '(anonymous)'}${url ? `  ${url}:${n.callFrame.lineNumber + 1}` : ''}`;
    self.set(key, (self.get(key) ?? 0) + hits);
  }
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, h]) => `      ${(100 * h / total).toFixed(1).padStart(5)}%  ${k}`).join('\n');
}

interface Result { c: Case; samples: number[]; bytes: number; note: string; failures: string[]; cpu: { mainMs: number; pgMs: number } }
// CPU per request (bench/profile.ts cpuMeter): the server's main thread (the client is a worker
// thread) and the database's backends (parallel workers that ended before the reading are missed).
const backendPids = async () => database.kind === 'postgres'
  ? (await rowsOf<{ pid: number }>(sql`select pid from pg_stat_activity where datname = current_database()`)).map((r) => Number(r.pid))
  : [];
const results: Result[] = [];
const plans: Array<{ label: string; text: string }> = [];
const profiles: Array<{ label: string; text: string }> = [];
const loadBefore = loadavg()[0]!;
async function runCase(c: Case): Promise<void> {
  const failures: string[] = [];
  const first = await get(c.url, true);
  let note = '';
  if (first.status !== 200) failures.push(`status ${first.status}: ${first.body?.slice(0, 300)}`);
  else {
    try {
      note = c.check(JSON.parse(first.body!));
    } catch (err) {
      failures.push(`check: ${(err as Error).message}`);
    }
  }
  for (let i = 1; i < WARMUP; i += 1) await get(c.url);
  const samples: number[] = [];
  let bytes = 0;
  if (inspector) await inspect('Profiler.start');
  const cpuSince = await cpuMeter(backendPids);
  for (let i = 0; i < ITER; i += 1) {
    const r = await get(c.url);
    if (r.status !== 200) failures.push(`status ${r.status}`);
    samples.push(r.ms);
    bytes = r.bytes;
  }
  const used = await cpuSince();
  const cpu = { mainMs: used.mainMs / ITER, pgMs: used.pgMs / ITER };
  if (inspector) profiles.push({ label: c.label, text: hottest((await inspect<{ profile: { nodes: ProfileNode[] } }>('Profiler.stop')).profile.nodes) });
  results.push({ c, samples: samples.sort((a, b) => a - b), bytes, note, failures, cpu });
  if (EXPLAIN) {
    captured = [];
    await get(c.url);
    const logged = captured as Logged[];
    captured = null;
    const feedQueries = logged.filter((x) => /from "submissions"/.test(x.query) && !/"submissions"\."instance_id" = \$\d+\)?$/.test(x.query));
    const parts: string[] = [];
    for (const x of feedQueries) parts.push(`    ${x.query}\n    -- params ${JSON.stringify(x.params).slice(0, 300)}\n${await explain(x)}`);
    plans.push({ label: c.label, text: `${logged.length} statements; the feed's:\n${parts.join('\n\n')}` });
  }
}
// First pass: no field index (those of an earlier run on a kept database are dropped first).
for (const r of await rowsOf<{ name: string }>(sql`select name from submission_field_indexes`)) await db.execute(sql.raw(`drop index if exists "${r.name}"`));
await db.execute(sql`delete from submission_field_indexes`);
for (const c of cases) if (!(SKIP_SCANS && /selective/.test(c.label))) await runCase(c);
// Second pass (BENCH_FIELD_INDEX=0 skips it): the indexes a filter on q1 (soak) and age (withrepeat) builds, then the filter cases again.
let indexBuild = '';
if (process.env.BENCH_FIELD_INDEX !== '0') {
  const t0 = performance.now();
  const building = { ...ctx, config: { ...config, ODATA_FIELD_INDEX_MIN_ROWS: 0 } };
  await noteFieldFilter(building, soakTarget.formId, [{ path: '/q1', kind: 'text' }]);
  await noteFieldFilter(building, repeatTarget.formId, [{ path: '/age', kind: 'number' }]);
  await fieldIndexesSettled();
  const built = await rowsOf<{ name: string; state: string; size: string; error: string | null }>(sql`select name, state, error,
    case when to_regclass(name) is null then '-' else pg_size_pretty(pg_relation_size(to_regclass(name))) end as size from submission_field_indexes`);
  indexBuild = `field indexes built CONCURRENTLY in ${((performance.now() - t0) / 1000).toFixed(1)} s (with ANALYZE): ${built.map((b) => `${b.name} ${b.state} ${b.size}${b.error ? ` ${b.error}` : ''}`).join(', ')}`;
  console.log(indexBuild);
  for (const c of cases.filter((x) => x.url.includes('filter'))) await runCase({ ...c, label: `${c.label} [indexed]` });
}

const loadAfter = loadavg()[0]!;
if (inspector) {
  await inspect('Profiler.disable');
  inspector.disconnect();
}

// ---------------------------------------------------------------------------------------------
// Report

const pct = (s: number[], p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] ?? NaN;
const head = ['case', 'form', 'KiB', 'p50 ms', 'p95 ms', 'max ms', 'server CPU ms', 'PG CPU ms', 'p95 ÷ 250 ms', ''];
const table = results.map(({ c, samples, bytes, cpu }) => {
  const p95 = pct(samples, 0.95);
  return [c.label, c.url.includes(`/${REPEAT_FORM_ID}.svc`) ? REPEAT_FORM_ID : SOAK_FORM_ID, (bytes / 1024).toFixed(0), pct(samples, 0.5).toFixed(1),
    p95.toFixed(1), samples[samples.length - 1]!.toFixed(1), cpu.mainMs.toFixed(1), cpu.pgMs.toFixed(1), (p95 / TARGET_MS).toFixed(3),
    c.required ? (p95 < TARGET_MS ? 'within target' : 'OVER target') : '(information)'];
});
const widths = head.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
const line = (cells: string[]) => cells.map((x, i) => (i < 2 || i === cells.length - 1 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join('  ');
console.log();
console.log(line(head));
for (const r of table) console.log(line(r));
console.log();
let bad = false;
for (const r of results) {
  console.log(`${r.c.label}: ${r.note || '—'}`);
  console.log(`    GET ${r.c.url.replace(`http://127.0.0.1:${port}`, '')}`);
  if (r.failures.length > 0) {
    bad = true;
    console.log(`    FAILED: ${r.failures.slice(0, 5).join('; ')}`);
  }
}
if (indexBuild) console.log(indexBuild);
console.log(`load average (1 min) ${loadBefore.toFixed(2)} before the timed requests, ${loadAfter.toFixed(2)} after, on ${cpus().length} CPUs`);
const misses = results.filter((r) => r.c.required && !(pct(r.samples, 0.95) < TARGET_MS));
console.log(misses.length === 0 ? `every required case is within the ${TARGET_MS} ms p95 target`
  : `OVER the ${TARGET_MS} ms p95 target: ${misses.map((r) => r.c.label).join(', ')}`);
for (const p of profiles) console.log(`\n── ${p.label}: server-thread CPU, self time (samples every 0.5 ms over the timed requests)\n${p.text}`);
for (const p of plans) console.log(`\n── ${p.label}: ${p.text}`);

await new Promise((r) => server.close(r));
await worker.terminate();
await database.close();
process.exit(bad ? 1 : 0);
