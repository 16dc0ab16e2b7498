/**
 * Streaming CSV exports at volume: the real local server (route table, authentication, the export
 * in lib/exports) on a loopback port, one HTTP client in a worker thread downloading
 * GET F/submissions.csv and GET F/submissions.csv.zip?attachments=false of the 250-question soak
 * form (shared/fixtures/forms/central-e2e/soak) as an administrator (Bearer session).
 *
 * Seed: an administrator, one project, the soak form published and one App User through the API;
 * then the submissions straight into the database through drizzle (a few hundred rows per
 * statement, in a transaction per batch): a submissions row, its submission_defs row and
 * current_def_id, as ingestion (lib/submissions/ingest.ts createNew) stores them: the XML
 * (the submission template filled with random integers and a unique `uuid:` instanceID), its MD5,
 * `values` in parseSubmission's shape and `root_values` (rootValuesOf), the App User as submitter,
 * a deviceID and user agent, and distinct creation times 10 ms apart; GIN indexes are dropped for
 * the load and built again after it, then VACUUM ANALYZE (PostgreSQL). No submission_attachments
 * rows (the form has no binary field) and no audit rows (the export reads neither). Each batch's
 * first row is checked against parseSubmission (values and MD5), so the fast path cannot drift
 * from what ingestion stores.
 *
 * Runs: 10,000 submissions first, then the same form topped up to BENCH_N (100,000); at each size
 * the CSV, then the ZIP. Per run: time to first body byte, total time, bytes, rows/s (submissions
 * exported), MB/s and the process's peak RSS while the export streams (sampled every 50 ms from the
 * client thread, so a busy server loop cannot hide a peak), with the baseline just before (after a
 * full GC). The client thread is part of the process; it only counts bytes (CSV) or writes them to
 * a temporary file (ZIP), so its share of the RSS is small and constant. Checks: the CSV has N + 1
 * lines; the ZIP's central directory names only the root CSV, which inflates to the directory's
 * size and CRC-32 and N + 1 lines.
 * Targets (PostgreSQL, at 100,000): ≥ 20,000 rows/s, time to first byte < 1 s, peak RSS < 300 MB;
 * the 10,000 row shows memory does not grow with N.
 *
 * Encrypted media (issue 16): BENCH_MEDIA_N (10,000) submissions of a small form with one 50 kB
 * photo each, in two projects: plain, and with managed encryption (POST P/key; the submissions
 * encrypted as Collect does, with OpenSSL: RSA-OAEP-SHA-256 key, AES-256-CFB files, stored as
 * ingestion stores them: envelope values, `.enc` blobs). Then the media ZIP
 * (`submissions.csv.zip`, photos included) of each: the plain one, and the encrypted one decrypted
 * with `?{keyId}={passphrase}`. Each ZIP is checked (every photo entry present; on the decrypted
 * one, every photo's bytes equal the plaintext by SHA-256). Targets: decrypting rows/s ≥ 0.5 × the
 * plain media ZIP's rows/s, peak RSS < 300 MB. BENCH_ONLY=media skips the 250-question runs.
 *
 * Runs on DATABASE_URL when set (use a fresh database), else PGlite in memory (the targets are for
 * PostgreSQL). BENCH_PROFILE=1 also samples the server thread's CPU (node:inspector) during the
 * exports at BENCH_N and prints the hottest functions by self time.
 *
 *   createdb -h 127.0.0.1 -U postgres bench_export_x
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_export_x npx tsx bench/export.ts
 *   dropdb -h 127.0.0.1 -U postgres bench_export_x
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createNetServer } from 'node:net';
import { serve } from '@hono/node-server';
import { createHash, randomUUID } from 'node:crypto';
import { closeSync, createReadStream, mkdirSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import { Session } from 'node:inspector';
import type { AddressInfo } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Worker } from 'node:worker_threads';
import { createInflateRaw } from 'node:zlib';
import { and, count, eq, sql } from 'drizzle-orm';
import { formDefs, forms, submissionAttachments, submissionDefs, submissions } from '../drizzle/schema';
import { localApp } from '../infra/local/app';
import { systemCtx } from '../lib/context';
import { createLogger } from '../lib/log';
import { createProject } from '../lib/projects';
import { withDeps } from '../lib/runtime/entry';
import { loadConfig, processEnv } from '../lib/runtime/env';
import { createFsBlobStore } from '../lib/runtime/fs-blobs';
import { nodeNatives, openDatabase } from '../lib/runtime/node';
import { parseSubmission, rootTextOf, rootValuesOf } from '../lib/xforms/parse-submission';
import type { FormField, SubmissionValue } from '../lib/xforms/types';
import { benchAdmin } from './admin';

const N = Number(process.env.BENCH_N ?? 100_000);
const MEDIA_N = Number(process.env.BENCH_MEDIA_N ?? 10_000);
const ONLY_MEDIA = process.env.BENCH_ONLY === 'media';
const TARGET_DECRYPT_RATIO = 0.5;
const SMALL = Math.min(10_000, N);
const PROFILE = process.env.BENCH_PROFILE === '1';
/** Rows per INSERT statement (×13 parameters, well under PostgreSQL's 65,535). */
const SEED_BATCH = 250;
/** Batches in flight while seeding (PostgreSQL only; PGlite has one connection). */
const SEED_CONCURRENCY = 4;
/** Issue 21: CSV ≥ 40,000 rows/s, ZIP ≥ 35,000 rows/s at 100,000. */
const TARGET_ROWS_PER_S = 40_000;
const TARGET_ZIP_ROWS_PER_S = 35_000;
const targetRows = (kind: string) => (kind === 'submissions.csv' ? TARGET_ROWS_PER_S : TARGET_ZIP_ROWS_PER_S);
const TARGET_TTFB_MS = 1_000;
const TARGET_RSS_MB = 300;
const MB = 1024 * 1024;

// A full GC before each export, so the RSS baseline is not the seeding's garbage.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const tmp = join(tmpdir(), `fieldbase-bench-export-${process.pid}`);
const config = loadConfig(processEnv(), { LOG_LEVEL: 'silent', BCRYPT_COST: '4' }, { localServer: true });
const database = await openDatabase(config, { pgliteDir: 'memory://' });
await database.migrate();
const db = database.db;
// The native helpers the local server has (createNodeDeps: COPY to a stream, zlib, hashing).
const deps = { db, config, log: createLogger('silent'), blobs: createFsBlobStore(join(tmp, 'blobs')), ...nodeNatives() };
const ctx = systemCtx(deps);
const app = withDeps(localApp(), () => ({ deps }));
const idleRss = process.memoryUsage.rss();

// ---------------------------------------------------------------------------------------------
// The form and the admin (in-process requests through the same route table)

const soakDir = new URL('../../shared/fixtures/forms/central-e2e/soak/', import.meta.url);
const soakXml = readFileSync(new URL('250q-form.xml', soakDir), 'utf8');
const template = readFileSync(new URL('250q-submission.template.xml', soakDir), 'utf8');
const FORM_ID = '250_questions';

const { call, auth } = await benchAdmin(ctx, app, 'export');
const project = await createProject(ctx, { name: `export bench ${Date.now()}` });
const P = `/v1/projects/${project.id}`;
await call('POST', `${P}/forms?publish=true`, soakXml, { 'Content-Type': 'application/xml' });
const appUser = (await (await call('POST', `${P}/app-users`, JSON.stringify({ displayName: 'Bench device' }), {
  'Content-Type': 'application/json',
})).json()) as { id: number };
const [form] = await db
  .select({ id: forms.id, defId: forms.currentDefId, fields: formDefs.fields })
  .from(forms)
  .innerJoin(formDefs, eq(formDefs.id, forms.currentDefId))
  .where(and(eq(forms.projectId, project.id), eq(forms.xmlFormId, FORM_ID)));
if (!form || form.defId == null) throw new Error('the soak form did not publish');
const fields = form.fields as FormField[];
const formId = form.id;
const formDefId = form.defId;

// ---------------------------------------------------------------------------------------------
// Fast submission rows: the template's placeholders, in document order, are exactly the leaf texts
// they sit in, so a filled XML's `values` are the template's parsed values with the same fills.

const pieces = template.split(/(\{\{uuid\}\}|\{\{randInt\}\})/);
const skeleton = parseSubmission(template, fields).values;
for (const v of skeleton) if (/\{\{.*\}\}.*\{\{/.test(v.value)) throw new Error(`two placeholders in one leaf: ${v.path}`);
const placeholderCount = pieces.filter((p) => p === '{{uuid}}' || p === '{{randInt}}').length;
if (skeleton.filter((v) => v.value.includes('{{')).length !== placeholderCount) throw new Error('a placeholder outside a leaf text');

interface Generated {
  instanceId: string;
  xml: string;
  md5: string;
  values: SubmissionValue[];
}

function generate(): Generated {
  const fills: string[] = [];
  let xml = '';
  for (const p of pieces) {
    if (p === '{{uuid}}') fills.push(randomUUID());
    else if (p === '{{randInt}}') fills.push(String(Math.floor(Math.random() * 1e6)));
    else {
      xml += p;
      continue;
    }
    xml += fills[fills.length - 1];
  }
  let k = 0;
  const values = skeleton.map((v) => (v.value.includes('{{')
    ? { path: v.path, repeatIndex: v.repeatIndex, value: v.value.replace(/\{\{(uuid|randInt)\}\}/, () => fills[k++]!) }
    : v));
  return { instanceId: `uuid:${fills[0]}`, xml, md5: createHash('md5').update(xml).digest('hex'), values };
}

/** What ingestion would store for this XML must be what the fast path stores. */
function check(g: Generated): void {
  const parsed = parseSubmission(g.xml, fields);
  if (parsed.instanceId !== g.instanceId || parsed.hash.md5 !== g.md5 || JSON.stringify(parsed.values) !== JSON.stringify(g.values)) {
    throw new Error('the generated row differs from parseSubmission (instanceID, MD5 or values)');
  }
}

const epoch = Date.now() - 86_400_000;
let seeded = 0;

/** Rows `from`..`to`-1: submissions, their first versions, then current_def_id, in one transaction. */
async function seedBatch(from: number, to: number): Promise<void> {
  const rows = Array.from({ length: to - from }, generate);
  check(rows[0]!);
  const at = (i: number) => new Date(epoch + (from + i) * 10);
  // A failed multi-row INSERT's error carries every parameter (megabytes): keep the cause only.
  await seedTx(rows, at).catch((err: unknown) => {
    throw new Error(`seeding rows ${from}..${to - 1} failed: ${(err as { cause?: Error }).cause?.message ?? String(err).slice(0, 500)}`);
  });
}

async function seedTx(rows: Generated[], at: (i: number) => Date): Promise<void> {
  await db.transaction(async (tx) => {
    const subs = await tx
      .insert(submissions)
      .values(rows.map((r, i) => ({
        formId, instanceId: r.instanceId, draft: false, submitterId: appUser.id,
        deviceId: 'collect:bench0123456789', userAgent: 'org.odk.collect.android/v2024.3.0 bench', createdAt: at(i),
      })))
      .returning({ id: submissions.id, instanceId: submissions.instanceId });
    const idOf = new Map(subs.map((s) => [s.instanceId, s.id]));
    const defs = await tx
      .insert(submissionDefs)
      .values(rows.map((r, i) => ({
        submissionId: idOf.get(r.instanceId)!, formDefId, instanceId: r.instanceId, xml: r.xml, md5: r.md5,
        instanceName: null, submitterId: appUser.id, deviceId: 'collect:bench0123456789',
        userAgent: 'org.odk.collect.android/v2024.3.0 bench', current: true, encrypted: false, values: r.values, rootValues: rootValuesOf(r.values), rootText: rootTextOf(r.values, fields), createdAt: at(i),
      })))
      .returning({ id: submissionDefs.id });
    if (defs.length !== rows.length) throw new Error('short insert');
    await tx.execute(sql`update ${submissions} s set current_def_id = d.id from ${submissionDefs} d
      where d.submission_id = s.id and s.id in ${subs.map((s) => s.id)}`);
  });
}

/** Rows of db.execute on either driver (postgres.js: an array; PGlite: `{ rows }`). */
const rowsOf = <T>(res: unknown): T[] => (Array.isArray(res) ? res : (res as { rows: T[] }).rows);

/**
 * The GIN indexes of the two tables (root_values: 250 keys a row) cost more to maintain row by row
 * than everything else in the load, and more the larger they grow: a bulk load drops them and builds
 * them again at the end, as any bulk load would (same definitions, so the same database after).
 */
async function dropGinIndexes(): Promise<string[]> {
  const found = rowsOf<{ name: string; def: string }>(await db.execute(sql`select indexname as name, indexdef as def from pg_indexes
    where schemaname = current_schema() and tablename in ('submissions', 'submission_defs') and indexdef ilike '% using gin %'`));
  for (const i of found) await db.execute(sql.raw(`drop index "${i.name}"`));
  return found.map((i) => i.def);
}

async function seedTo(total: number): Promise<number> {
  const t = performance.now();
  const gin = await dropGinIndexes();
  const ranges: Array<[number, number]> = [];
  for (let i = seeded; i < total; i += SEED_BATCH) ranges.push([i, Math.min(total, i + SEED_BATCH)]);
  let next = 0;
  const lanes = database.kind === 'postgres' ? SEED_CONCURRENCY : 1;
  await Promise.all(Array.from({ length: lanes }, async () => {
    while (next < ranges.length) {
      const [from, to] = ranges[next++]!;
      await seedBatch(from, to);
    }
  }));
  seeded = total;
  for (const def of gin) await db.execute(sql.raw(def));
  if (database.kind === 'postgres') await db.execute(sql`vacuum analyze submissions, submission_defs`);
  const [stored] = await db.select({ n: count() }).from(submissions).where(and(eq(submissions.formId, formId), sql`${submissions.currentDefId} is not null`));
  if (stored!.n !== total) throw new Error(`seeded ${stored!.n} submissions, expected ${total}`);
  return (performance.now() - t) / 1000;
}

// ---------------------------------------------------------------------------------------------
// Server on loopback, client in a worker thread (long-lived, so its memory is in every baseline)

// On PostgreSQL the server runs as its own process (`infra/local/serve.ts`, what `npm start` runs),
// so its RSS is the server's alone, not this bench's seeding and client. PGlite in memory cannot
// be shared with another process, so there the server runs in this one.
let port: number;
let serverPid: number | null = null;
const profDir = join(tmpdir(), `fieldbase-bench-export-prof-${process.pid}`);
let child: ChildProcess | null = null;
const server = config.DATABASE_URL ? null : serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
if (server) {
  await new Promise<void>((r) => server.once('listening', () => r()));
  port = (server.address() as AddressInfo).port;
} else {
  port = await new Promise<number>((resolve) => {
    const probe = createNetServer().listen(0, '127.0.0.1', () => {
      const p = (probe.address() as AddressInfo).port;
      probe.close(() => resolve(p));
    });
  });
  // BENCH_PROFILE=1: V8's sampling profiler in the server process, written when it exits (SIGTERM
  // ends it with process.exit); it covers every export the server answered.
  const profArgs = PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=500'] : [];
  child = spawn(process.execPath, [...profArgs, '--import', 'tsx', 'infra/local/serve.ts'], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'error', DATA_DIR: tmp },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  serverPid = child.pid ?? null;
  await new Promise<void>((resolve, reject) => {
    child!.stdout!.on('data', (d: Buffer) => { if (d.toString().includes('listening')) resolve(); });
    child!.once('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
}
const formUrl = `http://127.0.0.1:${port}${P}/forms/${FORM_ID}`;

const clientCode = `
const { parentPort } = require('node:worker_threads');
const http = require('node:http');
const fs = require('node:fs');
parentPort.on('message', ({ url, headers, file, pid }) => {
  // The server's RSS: its own process when it runs apart (VmRSS in /proc), else this one.
  const rss = () => {
    if (!pid) return process.memoryUsage.rss();
    const m = /VmRSS:\\s+(\\d+) kB/.exec(fs.readFileSync('/proc/' + pid + '/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  };
  const baseline = rss();
  let peak = baseline;
  const sampler = setInterval(() => { const r = rss(); if (r > peak) peak = r; }, 50);
  const start = performance.now();
  let headersMs = NaN, ttfbMs = NaN, bytes = 0, lines = 0;
  const done = (extra) => {
    clearInterval(sampler);
    const r = rss(); if (r > peak) peak = r;
    parentPort.postMessage({ ttfbMs, headersMs, seconds: (performance.now() - start) / 1000, bytes, lines, baseline, peak, ...extra });
  };
  const req = http.get(url, { headers }, (res) => {
    headersMs = performance.now() - start;
    const out = file ? fs.createWriteStream(file) : null;
    res.on('data', (chunk) => {
      if (bytes === 0) ttfbMs = performance.now() - start;
      bytes += chunk.length;
      if (!out) for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines += 1;
      else if (!out.write(chunk)) { res.pause(); out.once('drain', () => res.resume()); }
    });
    res.on('end', () => {
      if (out) out.end(() => done({ status: res.statusCode, type: res.headers['content-type'] }));
      else done({ status: res.statusCode, type: res.headers['content-type'] });
    });
    res.on('error', (err) => done({ status: 0, error: String(err) }));
  });
  req.on('error', (err) => done({ status: 0, error: String(err) }));
});
`;
const worker = new Worker(clientCode, { eval: true });
worker.unref();

interface Download {
  status: number;
  type?: string;
  error?: string;
  ttfbMs: number;
  headersMs: number;
  seconds: number;
  bytes: number;
  lines: number;
  baseline: number;
  peak: number;
  /** CPU of the server process (when it runs apart) and of this database's backends, ms. */
  serverCpuMs?: number;
  pgCpuMs?: number;
}
const downloadOnce = (url: string, file: string | null) => new Promise<Download>((resolve, reject) => {
  worker.once('message', resolve);
  worker.once('error', reject);
  worker.postMessage({ url, headers: auth, file, pid: serverPid });
});

// CPU spent by the export, less skewed than rows/s by other work on a shared box: the server
// process (all its threads: zlib, OpenSSL, GC; only when it runs apart) and the PostgreSQL
// backends of this database, from /proc (Linux; USER_HZ = 100), in ms.
const procTicks = (pid: number): number => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch {
    return 0;
  }
};
const cpuSnapshot = async () => {
  const pids = database.kind === 'postgres'
    ? (await db.execute(sql`select pid from pg_stat_activity where datname = current_database()`) as unknown as Array<{ pid: number }>).map((r) => Number(r.pid))
    : [];
  return { server: serverPid ? procTicks(serverPid) : 0, pg: new Map(pids.map((p) => [p, procTicks(p)])) };
};
async function download(url: string, file: string | null): Promise<Download> {
  const before = await cpuSnapshot();
  const d = await downloadOnce(url, file);
  const after = await cpuSnapshot();
  let pg = 0;
  for (const [pid, t] of after.pg) pg += t - (before.pg.get(pid) ?? 0);
  return { ...d, serverCpuMs: serverPid ? (after.server - before.server) * 10 : NaN, pgCpuMs: pg * 10 };
}

const CRC_TABLE = Int32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c;
});

/**
 * Checks the archive by its central directory (a streaming unzip that scans for signatures can
 * stop early when compressed bytes happen to spell one): the EOCD record, each entry's name, then
 * the root CSV inflated (node:zlib) from its local header against the directory's sizes and CRC-32.
 * @returns the entry names and the root CSV's line count.
 */
async function checkZip(file: string): Promise<{ lines: number; entries: string[] }> {
  const size = statSync(file).size;
  const fd = openSync(file, 'r');
  const read = (at: number, length: number) => {
    const buf = Buffer.alloc(length);
    if (readSync(fd, buf, 0, length, at) !== length) throw new Error(`short read at ${at}`);
    return buf;
  };
  try {
    const tail = read(Math.max(0, size - 22 - 65_535), Math.min(size, 22 + 65_535));
    const eocd = tail.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
    if (eocd < 0 || eocd + 22 > tail.length) throw new Error('no end-of-central-directory record');
    const total = tail.readUInt16LE(eocd + 10);
    const dir = read(tail.readUInt32LE(eocd + 16), tail.readUInt32LE(eocd + 12));
    const entries: Array<{ name: string; method: number; crc: number; compressed: number; size: number; local: number }> = [];
    for (let at = 0; entries.length < total; ) {
      if (dir.readUInt32LE(at) !== 0x02014b50) throw new Error(`bad central directory entry ${entries.length}`);
      const nameLength = dir.readUInt16LE(at + 28);
      entries.push({
        name: dir.toString('utf8', at + 46, at + 46 + nameLength), method: dir.readUInt16LE(at + 10), crc: dir.readUInt32LE(at + 16),
        compressed: dir.readUInt32LE(at + 20), size: dir.readUInt32LE(at + 24), local: dir.readUInt32LE(at + 42),
      });
      at += 46 + nameLength + dir.readUInt16LE(at + 30) + dir.readUInt16LE(at + 32);
    }
    const root = entries.find((e) => e.name === `${FORM_ID}.csv`);
    if (!root) return { lines: 0, entries: entries.map((e) => e.name) };
    const header = read(root.local, 30);
    if (header.readUInt32LE(0) !== 0x04034b50 || root.method !== 8) throw new Error('bad local header or not deflated');
    const start = root.local + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
    let lines = 0;
    let inflated = 0;
    let crc = -1;
    const data = createReadStream(file, { start, end: start + root.compressed - 1, highWaterMark: 1 << 20 }).pipe(createInflateRaw());
    for await (const chunk of data as AsyncIterable<Buffer>) {
      inflated += chunk.length;
      for (let i = 0; i < chunk.length; i += 1) {
        const b = chunk[i]!;
        if (b === 10) lines += 1;
        crc = CRC_TABLE[(crc ^ b) & 0xff]! ^ (crc >>> 8);
      }
    }
    if (inflated !== root.size || (~crc >>> 0) !== root.crc) throw new Error(`root CSV: ${inflated} bytes / CRC ${(~crc >>> 0).toString(16)}, directory says ${root.size} / ${root.crc.toString(16)}`);
    return { lines, entries: entries.map((e) => e.name) };
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------
// CPU profile of the server thread (BENCH_PROFILE=1): self time per function

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number; children?: number[] }
const inspector = PROFILE && server ? new Session() : null;
const post = <T>(method: string, params?: object) => new Promise<T>((resolve, reject) => {
  inspector!.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res as T)));
});
if (inspector) {
  inspector.connect();
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 500 });
}
const profiles: Array<{ nodes: ProfileNode[]; samples: number[] }> = [];

function printProfile(): void {
  const self = new Map<string, number>();
  let total = 0;
  for (const p of profiles) {
    for (const n of p.nodes) {
      const hits = n.hitCount ?? 0;
      if (hits === 0) continue;
      total += hits;
      const url = n.callFrame.url.replace(/^file:\/\//, '').replace(`${process.cwd()}/`, '');
      const key = `${n.callFrame.functionName || '(anonymous)'}  ${url ? `${url}:${n.callFrame.lineNumber + 1}` : ''}`.trim();
      self.set(key, (self.get(key) ?? 0) + hits);
    }
  }
  console.log(`\nserver-thread CPU profile (self time, ${total} samples every 0.5 ms; ${child ? 'the server process over its whole life: every export' : `the exports at N=${N}`}):`);
  for (const [key, hits] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
    console.log(`  ${(100 * hits / total).toFixed(1).padStart(5)}%  ${key}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Runs

interface Row { n: number; kind: string; d: Download }
const results: Row[] = [];
let bad = false;

async function exportRun(n: number, kind: 'csv' | 'zip'): Promise<void> {
  const url = kind === 'csv' ? `${formUrl}/submissions.csv` : `${formUrl}/submissions.csv.zip?attachments=false`;
  const file = kind === 'zip' ? join(tmp, `export-${n}.zip`) : null;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  gc();
  gc();
  const profiling = inspector != null && n === N;
  if (profiling) await post('Profiler.start');
  const d = await download(url, file);
  if (profiling) profiles.push((await post<{ profile: { nodes: ProfileNode[]; samples: number[] } }>('Profiler.stop')).profile);
  const problems: string[] = [];
  if (d.status !== 200) problems.push(`status ${d.status} ${d.error ?? ''}`);
  let lines = d.lines;
  if (kind === 'zip' && d.status === 200) {
    const z = await checkZip(file!);
    lines = z.lines;
    if (z.entries.join(',') !== `${FORM_ID}.csv`) problems.push(`entries ${z.entries.join(',')}`);
  }
  if (lines !== n + 1) problems.push(`${lines} CSV lines, expected ${n + 1}`);
  if (problems.length > 0) {
    bad = true;
    console.log(`  N=${n} ${kind}: FAILED: ${problems.join('; ')}`);
  }
  results.push({ n, kind: kind === 'csv' ? 'submissions.csv' : 'submissions.csv.zip', d });
  rmSync(tmp, { recursive: true, force: true });
}

console.log(`database: ${database.kind}${database.kind === 'pglite' ? ' (in memory; the targets are for PostgreSQL: set DATABASE_URL)' : ''}; ` +
  `form ${FORM_ID} (${fields.length} fields), exports over http://127.0.0.1 (client in a worker thread); ` +
  `process RSS before seeding ${(idleRss / MB).toFixed(0)} MB; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
for (const n of ONLY_MEDIA ? [] : [...new Set([SMALL, N])]) {
  const seconds = await seedTo(n);
  console.log(`seeded to ${n} submissions in ${seconds.toFixed(1)} s (bulk SQL, ${SEED_BATCH} rows per statement)`);
  await exportRun(n, 'csv');
  await exportRun(n, 'zip');
}
if (inspector) {
  await post('Profiler.disable');
  inspector.disconnect();
}

// ---------------------------------------------------------------------------------------------
// Encrypted media (issue 16): plain vs decrypting media ZIP of MEDIA_N submissions with a 50 kB photo

const MEDIA_FORM = (id: string) => `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa">
  <h:head><h:title>${id}</h:title><model>
    <instance><data id="${id}" version="1"><meta><instanceID/></meta><name/><age/><photo/></data></instance>
    <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" calculate="concat('uuid:', uuid())"/>
    <bind nodeset="/data/name" type="string"/><bind nodeset="/data/age" type="int"/><bind nodeset="/data/photo" type="binary"/>
  </model></h:head>
  <h:body><input ref="/data/name"><label>n</label></input><input ref="/data/age"><label>a</label></input>
    <upload ref="/data/photo" mediatype="image/*"><label>p</label></upload></h:body>
</h:html>`;
const MEDIA_PASSPHRASE = 'bench passphrase';

/** One project with the media form, optionally with managed encryption. @returns ids and what export URLs need. */
async function mediaProject(encrypted: boolean) {
  const id = encrypted ? 'media_encrypted' : 'media_plain';
  const p = await createProject(ctx, { name: `media bench ${id} ${Date.now()}` });
  let keyId: number | null = null;
  if (encrypted) keyId = ((await (await call('POST', `/v1/projects/${p.id}/key`, JSON.stringify({ passphrase: MEDIA_PASSPHRASE }), { 'Content-Type': 'application/json' })).json()) as { keyId: number }).keyId;
  await call('POST', `/v1/projects/${p.id}/forms?publish=true`, MEDIA_FORM(id), { 'Content-Type': 'application/xml' });
  const [row] = await db.select({ id: forms.id, defId: forms.currentDefId, fields: formDefs.fields, xml: formDefs.xml, version: formDefs.version })
    .from(forms).innerJoin(formDefs, eq(formDefs.id, forms.currentDefId)).where(and(eq(forms.projectId, p.id), eq(forms.xmlFormId, id)));
  return { projectId: p.id, xmlFormId: id, formId: row!.id, defId: row!.defId!, fields: row!.fields as FormField[], xml: row!.xml, version: row!.version, keyId };
}

/** Seeds `n` submissions, each with its own 50 kB photo; encrypted ones as Collect builds them. @returns photo SHA-256 by name. */
async function seedMedia(m: Awaited<ReturnType<typeof mediaProject>>, n: number, encrypted: boolean): Promise<Map<string, string>> {
  const { constants, createCipheriv, createPublicKey, publicEncrypt, randomBytes } = await import('node:crypto');
  const { storeBlob } = await import('../lib/blobs');
  const publicKey = encrypted ? createPublicKey({ key: Buffer.from(/base64RsaPublicKey="([^"]+)"/.exec(m.xml)![1]!, 'base64'), format: 'der', type: 'spki' }) : null;
  const cfb = (key: Buffer, iv: Buffer, plain: Buffer) => {
    const pad = 16 - (plain.length % 16);
    const c = createCipheriv('aes-256-cfb', key, iv).setAutoPadding(false);
    return Buffer.concat([c.update(Buffer.concat([plain, Buffer.alloc(pad, pad)])), c.final()]);
  };
  const shas = new Map<string, string>();
  const base = Date.now() - 3_600_000;
  for (let from = 0; from < n; from += SEED_BATCH) {
    type MediaRow = { instanceId: string; xml: string; values: SubmissionValue[]; files: Array<{ name: string; blobId: number }> };
    const rows: MediaRow[] = new Array(Math.min(n, from + SEED_BATCH) - from);
    // Rows of a batch are built (blobs written) concurrently; `rows` keeps their order.
    await Promise.all(Array.from({ length: rows.length }, async (_, k) => {
      const i = from + k;
      const push = (r: MediaRow) => { rows[k] = r; };
      const instanceId = `uuid:${randomUUID()}`;
      const photoName = `photo-${i}.jpg`;
      const photo = randomBytes(50 * 1024);
      shas.set(photoName, createHash('sha256').update(photo).digest('hex'));
      const plainXml = `<data id="${m.xmlFormId}" version="${m.version}"><meta><instanceID>${instanceId}</instanceID></meta><name>Person ${i}</name><age>${i % 90}</age><photo>${photoName}</photo></data>`;
      if (!encrypted) {
        const blob = await storeBlob(ctx, photo, 'image/jpeg');
        push({ instanceId, xml: plainXml, values: parseSubmission(plainXml, m.fields).values, files: [{ name: photoName, blobId: blob.id }] });
        return;
      }
      const aes = randomBytes(32);
      const seed = createHash('md5').update(instanceId).update(aes).digest();
      const iv = (idx: number) => { seed[idx % 16] = (seed[idx % 16]! + 1) & 0xff; return Buffer.from(seed); };
      const encKey = publicEncrypt({ key: publicKey!, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, aes).toString('base64');
      const encPhoto = await storeBlob(ctx, cfb(aes, iv(0), photo), 'application/octet-stream');
      const encXml = await storeBlob(ctx, cfb(aes, iv(1), Buffer.from(plainXml)), 'application/octet-stream');
      const envelope = `<data id="${m.xmlFormId}" version="${m.version}" encrypted="yes" xmlns="http://www.opendatakit.org/xforms/encrypted"><base64EncryptedKey>${encKey}</base64EncryptedKey>`
        + `<orx:meta xmlns:orx="http://openrosa.org/xforms"><orx:instanceID>${instanceId}</orx:instanceID></orx:meta><media><file>${photoName}.enc</file></media>`
        + '<encryptedXmlFile>submission.xml.enc</encryptedXmlFile><base64EncryptedElementSignature>bench</base64EncryptedElementSignature></data>';
      const parsed = parseSubmission(envelope, m.fields);
      if (parsed.attachments.join() !== `${photoName}.enc,submission.xml.enc`) throw new Error('the envelope does not parse as ingestion would');
      push({ instanceId, xml: envelope, values: parsed.values, files: [{ name: `${photoName}.enc`, blobId: encPhoto.id }, { name: 'submission.xml.enc', blobId: encXml.id }] });
    }));
    await db.transaction(async (tx) => {
      const subs = await tx.insert(submissions).values(rows.map((r, k) => ({
        formId: m.formId, instanceId: r.instanceId, draft: false, submitterId: appUser.id, deviceId: 'bench', createdAt: new Date(base + (from + k) * 10),
      }))).returning({ id: submissions.id, instanceId: submissions.instanceId });
      const idOf = new Map(subs.map((x) => [x.instanceId, x.id]));
      const defs = await tx.insert(submissionDefs).values(rows.map((r, k) => ({
        submissionId: idOf.get(r.instanceId)!, formDefId: m.defId, instanceId: r.instanceId, xml: r.xml, md5: createHash('md5').update(r.xml).digest('hex'),
        submitterId: appUser.id, deviceId: 'bench', current: true, encrypted, values: r.values, rootValues: rootValuesOf(r.values),
        rootText: encrypted ? '' : rootTextOf(r.values, m.fields), createdAt: new Date(base + (from + k) * 10),
      }))).returning({ id: submissionDefs.id, instanceId: submissionDefs.instanceId });
      const defOf = new Map(defs.map((d) => [d.instanceId, d.id]));
      await tx.insert(submissionAttachments).values(rows.flatMap((r) => r.files.map((file) => ({ submissionDefId: defOf.get(r.instanceId)!, name: file.name, blobId: file.blobId }))));
      await tx.execute(sql`update ${submissions} s set current_def_id = d.id from ${submissionDefs} d where d.submission_id = s.id and s.id in ${subs.map((x) => x.id)}`);
    });
  }
  if (database.kind === 'postgres') await db.execute(sql`vacuum analyze submissions, submission_defs, submission_attachments, blobs`);
  return shas;
}

/** Photo entries of a ZIP (stored or deflated), checked against the plaintext SHA-256s. @returns how many matched. */
async function checkMediaZip(file: string, shas: Map<string, string>): Promise<number> {
  const { inflateRawSync } = await import('node:zlib');
  const zip = readFileSync(file);
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  let at = zip.readUInt32LE(eocd + 16);
  const total = zip.readUInt16LE(eocd + 10);
  let matched = 0;
  for (let k = 0; k < total; k += 1) {
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    const local = zip.readUInt32LE(at + 42);
    at += 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    if (!name.startsWith('media/')) continue;
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const raw = zip.subarray(start, start + compressed);
    const data = method === 8 ? inflateRawSync(raw) : raw;
    if (createHash('sha256').update(data).digest('hex') === shas.get(name.slice('media/'.length))) matched += 1;
  }
  return matched;
}

async function mediaRuns(): Promise<{ plain: Download; decrypted: Download }> {
  const out: Partial<{ plain: Download; decrypted: Download }> = {};
  for (const encrypted of [false, true]) {
    const m = await mediaProject(encrypted);
    const t = performance.now();
    const shas = await seedMedia(m, MEDIA_N, encrypted);
    console.log(`seeded ${MEDIA_N} ${encrypted ? 'encrypted' : 'plain'} submissions with a 50 kB photo each in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    const url = `http://127.0.0.1:${port}/v1/projects/${m.projectId}/forms/${m.xmlFormId}/submissions.csv.zip${encrypted ? `?${m.keyId}=${encodeURIComponent(MEDIA_PASSPHRASE)}` : ''}`;
    const file = join(tmpdir(), `fieldbase-bench-media-${process.pid}.zip`);
    gc();
    gc();
    const d = await download(url, file);
    const matched = d.status === 200 ? await checkMediaZip(file, shas) : 0;
    rmSync(file, { force: true });
    if (d.status !== 200 || matched !== MEDIA_N) {
      bad = true;
      console.log(`  media ${encrypted ? 'decrypting' : 'plain'} ZIP: FAILED: status ${d.status} ${d.error ?? ''}; ${matched} of ${MEDIA_N} photos intact`);
    }
    results.push({ n: MEDIA_N, kind: encrypted ? 'media zip, decrypting' : 'media zip, plain', d });
    out[encrypted ? 'decrypted' : 'plain'] = d;
  }
  return out as { plain: Download; decrypted: Download };
}

// ---------------------------------------------------------------------------------------------
// Report

const media = MEDIA_N > 0 ? await mediaRuns() : null;

const f = (x: number, d: number) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const head = ['N', 'kind', 'headers ms', 'TTFB ms', 'seconds', 'rows/s', 'MB', 'MB/s', 'RSS base MB', 'peak RSS MB', 'srv CPU µs/row', 'pg CPU µs/row', `÷${TARGET_ROWS_PER_S / 1000}k rows/s`, '÷1000 ms', '÷300 MB'];
const table = results.map(({ n, kind, d }) => {
  const rate = n / d.seconds;
  const peakMb = d.peak / MB;
  return [String(n), kind, f(d.headersMs, 1), f(d.ttfbMs, 1), f(d.seconds, 2), f(rate, 0), f(d.bytes / MB, 1), f(d.bytes / MB / d.seconds, 1),
    f(d.baseline / MB, 0), f(peakMb, 0), f((d.serverCpuMs ?? NaN) * 1000 / n, 1), f((d.pgCpuMs ?? NaN) * 1000 / n, 1), f(rate / targetRows(kind), 3), f(d.ttfbMs / TARGET_TTFB_MS, 3), f(peakMb / TARGET_RSS_MB, 3)];
});
const widths = head.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
const line = (cells: string[]) => cells.map((c, i) => (i === 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
console.log();
console.log(line(head));
for (const r of table) console.log(line(r));
console.log(`(headers ms: response headers; TTFB: first body byte; rows/s = submissions exported per second; MB = 2^20 bytes on the wire; RSS: ${serverPid ? 'the server process (npm start) alone' : 'the whole process: server + client thread'})`);
for (const { n, kind, d } of results.filter((r) => r.n === N)) {
  const rate = n / d.seconds;
  const misses = [
    rate < targetRows(kind) ? `rows/s ${f(rate, 0)} < ${targetRows(kind)}` : '',
    !(d.ttfbMs < TARGET_TTFB_MS) ? `TTFB ${f(d.ttfbMs, 0)} ms ≥ ${TARGET_TTFB_MS}` : '',
    d.peak / MB >= TARGET_RSS_MB ? `peak RSS ${f(d.peak / MB, 0)} MB ≥ ${TARGET_RSS_MB}` : '',
  ].filter(Boolean);
  console.log(`N=${n} ${kind}: ${misses.length === 0 ? 'meets every target' : `UNDER target: ${misses.join('; ')}`}`);
}
if (media) {
  const rate = (d: Download) => MEDIA_N / d.seconds;
  const ratio = rate(media.decrypted) / rate(media.plain);
  const peak = media.decrypted.peak / MB;
  console.log(`media ZIP, ${MEDIA_N} submissions × 50 kB photo: plain ${f(rate(media.plain), 0)} rows/s ${f(media.plain.bytes / MB / media.plain.seconds, 1)} MB/s; ` +
    `decrypting ${f(rate(media.decrypted), 0)} rows/s ${f(media.decrypted.bytes / MB / media.decrypted.seconds, 1)} MB/s, peak RSS ${f(peak, 0)} MB; ` +
    `ratio ${f(ratio, 3)} (÷${TARGET_DECRYPT_RATIO} target: ${f(ratio / TARGET_DECRYPT_RATIO, 3)}), RSS ÷300 MB: ${f(peak / TARGET_RSS_MB, 3)} → ` +
    `${ratio >= TARGET_DECRYPT_RATIO && peak < TARGET_RSS_MB ? 'meets both targets' : 'UNDER target'}`);
}
const small = results.filter((r) => r.n === SMALL);
const large = results.filter((r) => r.n === N);
if (SMALL !== N && !ONLY_MEDIA) {
  for (const kind of ['submissions.csv', 'submissions.csv.zip']) {
    const a = small.find((r) => r.kind === kind)!.d;
    const b = large.find((r) => r.kind === kind)!.d;
    console.log(`${kind}: peak − baseline ${f((a.peak - a.baseline) / MB, 0)} MB at ${SMALL}, ${f((b.peak - b.baseline) / MB, 0)} MB at ${N}`);
  }
}
console.log(`load average at the end ${loadavg().map((x) => x.toFixed(2)).join(' ')} (${availableParallelism()} CPUs; other work on the box skews every figure)`);
if (server) await new Promise((r) => server.close(r));
if (child) {
  child.kill('SIGTERM');
  await new Promise((r) => child!.once('exit', r));
  if (PROFILE) {
    const { readdirSync } = await import('node:fs');
    for (const name of readdirSync(profDir).filter((x) => x.endsWith('.cpuprofile'))) {
      profiles.push(JSON.parse(readFileSync(join(profDir, name), 'utf8')) as { nodes: ProfileNode[]; samples: number[] });
    }
    rmSync(profDir, { recursive: true, force: true });
  }
}
if (PROFILE) printProfile();
await worker.terminate();
await database.close();
rmSync(tmp, { recursive: true, force: true });
process.exit(bad ? 1 : 0);
