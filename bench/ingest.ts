/**
 * OpenRosa submission ingest under load, as a fleet of Collect devices uploads: the real local
 * server (route table, authentication, OpenRosa middleware, multipart parsing, ingestion, blob
 * store on the file system) on a loopback port, BENCH_CLIENTS (16) concurrent clients posting
 * BENCH_SUBMISSIONS (5000) submissions of the 250-question soak form
 * (shared/fixtures/forms/central-e2e/soak: its submission template filled with random integers and
 * a unique `uuid:` instanceID each) to POST P/submission under an App User key, with
 * X-OpenRosa-Version: 1.0 and a multipart/form-data body (`xml_submission_file`).
 *
 * Two runs: the soak form as is, then a copy of it with a binary `photo` field (form id
 * `250_questions_media`), each submission naming `photo.jpg` and carrying it as a second part of
 * 100 kB random bytes (distinct per submission, so blob dedup does not flatter the figure).
 *
 * Seed: an administrator, one project, both forms published, one App User assigned the app-user
 * role on each form (POST F/assignments/app-user/{id}). Runs on DATABASE_URL when set (use a fresh
 * database), else PGlite in memory; the target is for PostgreSQL. Prints per run submissions/s,
 * p50/p95/p99 latency and the ratio submissions/s ÷ 300 (target: ≥ 300/s without media on the
 * 2-core box), then `stored N / sent N` (GET F/submissions as the administrator; for the media run
 * also the attachments with a stored blob). Exits 1 when any response is not 201 or a count differs.
 * Every request goes to 127.0.0.1.
 *
 *   npx tsx bench/ingest.ts
 */
import { serve } from '@hono/node-server';
import { readFileSync, rmSync } from 'node:fs';
import { Session } from 'node:inspector';
import type { AddressInfo } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { and, count, countDistinct, eq, isNotNull, sql } from 'drizzle-orm';
import { forms, submissionAttachments, submissionDefs, submissions } from '../drizzle/schema';
import { localApp } from '../infra/local/app';
import { systemCtx } from '../lib/context';
import { createLogger } from '../lib/log';
import { createProject } from '../lib/projects';
import { withDeps } from '../lib/runtime/entry';
import { loadConfig, processEnv } from '../lib/runtime/env';
import { createFsBlobStore } from '../lib/runtime/fs-blobs';
import { nodeNatives, openDatabase } from '../lib/runtime/node';
import { rawRows } from '../lib/db/raw';
import { benchAdmin } from './admin';
import { cpuMeter } from './profile';

const SUBMISSIONS = Number(process.env.BENCH_SUBMISSIONS ?? 5000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
/** Untimed submissions first (JIT, connection pool, keep-alive sockets); they count as sent. */
const WARMUP = 2 * CLIENTS;
const IMAGE_BYTES = 100_000;
const TARGET_PER_S = 1000;
const TARGET_MEDIA_PER_S = 500;
const TARGET_P95_MS = 100;
const PROFILE = process.env.BENCH_PROFILE === '1';

const blobDir = join(tmpdir(), `fieldbase-bench-ingest-${process.pid}`);
const config = loadConfig(processEnv(), { LOG_LEVEL: 'silent', BCRYPT_COST: '4' }, { localServer: true });
const database = await openDatabase(config, { pgliteDir: 'memory://' });
await database.migrate();
// The native helpers the local server has (createNodeDeps): hashing of media parts above all.
const deps = {
  db: database.db, config, log: createLogger('silent'), blobs: createFsBlobStore(blobDir),
  ...nodeNatives(),
};
const ctx = systemCtx(deps);
const app = withDeps(localApp(), () => ({ deps }));

// ---------------------------------------------------------------------------------------------
// Forms and templates

const soakDir = new URL('../../shared/fixtures/forms/central-e2e/soak/', import.meta.url);
const soakXml = readFileSync(new URL('250q-form.xml', soakDir), 'utf8');
const soakTemplate = readFileSync(new URL('250q-submission.template.xml', soakDir), 'utf8');
const SOAK_ID = '250_questions';
const MEDIA_ID = '250_questions_media';

/** Replaces `from` once, failing loudly when the fixture no longer has it. */
const replaceOnce = (text: string, from: string, to: string): string => {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`expected exactly one ${JSON.stringify(from)} in the soak fixture`);
  return text.slice(0, at) + to + text.slice(at + from.length);
};
// The soak form with a binary field: <photo/> last in the instance, its bind, and an upload control.
const mediaXml = [
  (x: string) => replaceOnce(x, `<data id="${SOAK_ID}">`, `<data id="${MEDIA_ID}">`),
  (x: string) => replaceOnce(x, '<h:title>250 flat text questions</h:title>', '<h:title>250 flat text questions and a photo</h:title>'),
  (x: string) => replaceOnce(x, '</meta>\n                </data>', '</meta>\n                    <photo/>\n                </data>'),
  (x: string) => replaceOnce(x, '</model>', '    <bind nodeset="/data/photo" type="binary"/>\n        </model>'),
  (x: string) => replaceOnce(x, '</h:body>', '    <upload mediatype="image/*" ref="/data/photo">\n            <label>Photo</label>\n        </upload>\n    </h:body>'),
].reduce((x, f) => f(x), soakXml);
const mediaTemplate = replaceOnce(
  replaceOnce(soakTemplate, `<data id="${SOAK_ID}">`, `<data id="${MEDIA_ID}">`),
  '</data>', '<photo>photo.jpg</photo>\n</data>',
);
for (const t of [soakTemplate, mediaTemplate]) {
  if (!t.includes('{{uuid}}') || !t.includes('{{randInt}}') || /\{\{(?!uuid\}\}|randInt\}\})/.test(t)) {
    throw new Error('the submission template has placeholders other than {{uuid}} and {{randInt}}');
  }
}

// ---------------------------------------------------------------------------------------------
// Seed (in-process requests through the same route table, as an administrator)

const t0 = performance.now();
const { call } = await benchAdmin(ctx, app, 'ingest');
const project = await createProject(ctx, { name: `ingest bench ${Date.now()}` });
const P = `/v1/projects/${project.id}`;
const appUser = (await (await call('POST', `${P}/app-users`, JSON.stringify({ displayName: 'Bench device' }), {
  'Content-Type': 'application/json',
})).json()) as { id: number; token: string };
for (const [id, xml] of [[SOAK_ID, soakXml], [MEDIA_ID, mediaXml]] as const) {
  await call('POST', `${P}/forms?publish=true`, xml, { 'Content-Type': 'application/xml' });
  await call('POST', `${P}/forms/${id}/assignments/app-user/${appUser.id}`);
}
{
  const fields = (await (await call('GET', `${P}/forms/${MEDIA_ID}/fields`)).json()) as Array<{ path: string; binary?: boolean | null }>;
  if (!fields.some((f) => f.path === '/photo' && f.binary === true)) throw new Error(`${MEDIA_ID} has no binary /photo field: ${JSON.stringify(fields.slice(-3))}`);
}
const seedSeconds = (performance.now() - t0) / 1000;

// ---------------------------------------------------------------------------------------------
// Serve on loopback and load it

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
await new Promise<void>((r) => server.once('listening', () => r()));
const { port } = server.address() as AddressInfo;
const submitUrl = `http://127.0.0.1:${port}/v1/key/${appUser.token}/projects/${project.id}/submission`;

interface RunResult {
  samples: number[];
  failures: number;
  failureExamples: string[];
  elapsed: number;
  sent: number;
  buildSeconds: number;
  bodyBytes: number;
}

// The clients run in a worker thread (as in bench/formlist.ts), so they do not compete with the
// server for its event loop; the server thread only serves. The worker builds every multipart body
// before the clock starts, so the timed phase only writes buffers and reads responses.
const clientCode = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { randomUUID, randomFillSync } = require('node:crypto');
const { url, template, total, warmup, clients, imageBytes } = workerData;
const boundary = '----fieldbase-bench-' + randomUUID();
const crlf = '\\r\\n';
const part = (name, filename, type) => Buffer.from(
  '--' + boundary + crlf + 'Content-Disposition: form-data; name="' + name + '"; filename="' + filename + '"' + crlf +
  'Content-Type: ' + type + crlf + crlf);
const xmlHead = part('xml_submission_file', 'submission.xml', 'text/xml');
const photoHead = Buffer.concat([Buffer.from(crlf), part('photo.jpg', 'photo.jpg', 'image/jpeg')]);
const tail = Buffer.from(crlf + '--' + boundary + '--' + crlf);
const pieces = template.split(/(\\{\\{uuid\\}\\}|\\{\\{randInt\\}\\})/);
const fill = () => pieces.map((p) => p === '{{uuid}}' ? randomUUID() : p === '{{randInt}}' ? String(Math.floor(Math.random() * 1e6)) : p).join('');
const body = () => {
  const xml = Buffer.from(fill());
  if (!imageBytes) return Buffer.concat([xmlHead, xml, tail]);
  // 100 kB of random bytes between a JPEG start and end marker; distinct per submission.
  const image = randomFillSync(Buffer.alloc(imageBytes));
  image[0] = 0xff; image[1] = 0xd8; image[2] = 0xff; image[imageBytes - 2] = 0xff; image[imageBytes - 1] = 0xd9;
  return Buffer.concat([xmlHead, xml, photoHead, image, tail]);
};
const headers = { 'Content-Type': 'multipart/form-data; boundary=' + boundary, 'X-OpenRosa-Version': '1.0', 'User-Agent': 'fieldbase-bench/ingest' };
// node:http with keep-alive: a lean client (fetch costs several times the CPU on this shared box).
const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
const post = (buf) => new Promise((resolve, reject) => {
  const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'Content-Length': buf.length } }, (res) => {
    const chunks = [];
    res.on('data', (c) => chunks.push(c));
    res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
  });
  req.on('error', reject);
  req.end(buf);
});
async function run(bodies, out) {
  let next = 0;
  await Promise.all(Array.from({ length: clients }, async () => {
    for (let i = next++; i < bodies.length; i = next++) {
      const t = performance.now();
      let res;
      try { res = await post(bodies[i]); } catch (err) { res = { status: 0, text: String(err) }; }
      const ms = performance.now() - t;
      bodies[i] = null;
      out.sent += 1;
      if (res.status !== 201) {
        out.failures += 1;
        if (out.failureExamples.length < 5) out.failureExamples.push(res.status + ' ' + res.text.replace(/\\s+/g, ' ').trim().slice(0, 300));
        continue;
      }
      out.samples.push(ms);
    }
  }));
}
(async () => {
  const b0 = performance.now();
  const bodies = Array.from({ length: warmup + total }, body);
  const buildSeconds = (performance.now() - b0) / 1000;
  const bodyBytes = bodies.reduce((n, b) => n + b.length, 0) / bodies.length;
  const warm = { samples: [], failures: 0, failureExamples: [], sent: 0 };
  await run(bodies.slice(0, warmup), warm);
  const out = { samples: [], failures: 0, failureExamples: [], sent: 0 };
  const start = performance.now();
  await run(bodies.slice(warmup), out);
  out.elapsed = (performance.now() - start) / 1000;
  out.sent += warm.sent;
  out.failures += warm.failures;
  out.failureExamples = warm.failureExamples.concat(out.failureExamples).slice(0, 5);
  out.buildSeconds = buildSeconds;
  out.bodyBytes = bodyBytes;
  agent.destroy();
  parentPort.postMessage(out);
})();
`;

const { Worker } = await import('node:worker_threads');
const load = (template: string, imageBytes: number) => new Promise<RunResult>((resolve, reject) => {
  const worker = new Worker(clientCode, {
    eval: true,
    workerData: { url: submitUrl, template, total: SUBMISSIONS, warmup: WARMUP, clients: CLIENTS, imageBytes },
  });
  worker.once('message', resolve);
  worker.once('error', reject);
});

/** Submissions stored for a form, as the administrator lists them (GET F/submissions). */
const storedCount = async (xmlFormId: string) => ((await (await call('GET', `${P}/forms/${xmlFormId}/submissions`)).json()) as unknown[]).length;
/** Attachments of the form's submissions that have a stored blob, and how many distinct blobs. */
const storedMedia = async (xmlFormId: string) => {
  const [row] = await database.db
    .select({ files: count(), blobs: countDistinct(submissionAttachments.blobId) })
    .from(submissionAttachments)
    .innerJoin(submissionDefs, eq(submissionDefs.id, submissionAttachments.submissionDefId))
    .innerJoin(submissions, eq(submissions.id, submissionDefs.submissionId))
    .innerJoin(forms, eq(forms.id, submissions.formId))
    .where(and(eq(forms.projectId, project.id), eq(forms.xmlFormId, xmlFormId), isNotNull(submissionAttachments.blobId)));
  return row!;
};

// CPU spent per submission (bench/profile.ts cpuMeter): the server's main thread and the
// PostgreSQL backends serving this database, a figure the other work on a shared box skews far less than the rate.
const backendPids = async (): Promise<number[]> => {
  if (database.kind !== 'postgres') return [];
  const rows = await rawRows<{ pid: number }>(database.db, sql`select pid from pg_stat_activity where datname = current_database()`);
  return rows.map((r) => Number(r.pid));
};

// CPU profile of the server thread (BENCH_PROFILE=1): self time per function over each timed run.
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
const hottest = (nodes: ProfileNode[]): string => {
  const self = new Map<string, number>();
  let total = 0;
  for (const n of nodes) {
    const hits = n.hitCount ?? 0;
    if (hits === 0) continue;
    total += hits;
    const url = n.callFrame.url.replace(/^file:\/\//, '').replace(`${process.cwd()}/`, '');
    const key = `${n.callFrame.functionName || '(anonymous)'}  ${url ? `${url}:${n.callFrame.lineNumber + 1}` : ''}`.trim();
    self.set(key, (self.get(key) ?? 0) + hits);
  }
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)
    .map(([key, hits]) => `    ${(100 * hits / total).toFixed(1).padStart(5)}%  ${key}`).join('\n');
};

const pct = (s: number[], q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
console.log(`database: ${database.kind}${database.kind === 'pglite' ? ' (in memory; the target is for PostgreSQL: set DATABASE_URL)' : ''}; ` +
  `seeded 2 forms, 1 App User in ${seedSeconds.toFixed(1)} s; load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} CPUs ` +
  '(other work on the box skews the figures)');
console.log(`load: ${SUBMISSIONS} submissions (+${WARMUP} untimed warm-up) per run, ${CLIENTS} clients over http://127.0.0.1, POST P/submission (App User key)`);

let bad = false;
for (const run of [
  { label: 'no media', xmlFormId: SOAK_ID, template: soakTemplate, imageBytes: 0 },
  { label: `+${IMAGE_BYTES / 1000} kB image`, xmlFormId: MEDIA_ID, template: mediaTemplate, imageBytes: IMAGE_BYTES },
]) {
  const cpuSince = await cpuMeter(backendPids);
  if (inspector) await inspect('Profiler.start');
  const r = await load(run.template, run.imageBytes);
  const profile = inspector ? hottest((await inspect<{ profile: { nodes: ProfileNode[] } }>('Profiler.stop')).profile.nodes) : null;
  // Includes building the bodies in the client thread before the clock starts (not on the main thread).
  const cpu = await cpuSince();
  const s = r.samples.sort((a, b) => a - b);
  const rate = s.length / r.elapsed;
  const target = run.imageBytes ? TARGET_MEDIA_PER_S : TARGET_PER_S;
  const p95 = pct(s, 0.95);
  console.log(`${run.label.padEnd(14)} n=${s.length} in ${r.elapsed.toFixed(1)} s  ${rate.toFixed(1)} submissions/s  ` +
    `avg body ${(r.bodyBytes / 1024).toFixed(1)} KiB  p50=${pct(s, 0.5).toFixed(1)} ms  p95=${p95.toFixed(1)} ms  ` +
    `p99=${pct(s, 0.99).toFixed(1)} ms  ratio ÷${target}/s=${(rate / target).toFixed(3)}, p95 ÷${TARGET_P95_MS} ms=${(p95 / TARGET_P95_MS).toFixed(2)}` +
    ` → ${rate >= target && (run.imageBytes > 0 || p95 < TARGET_P95_MS) ? 'meets' : 'UNDER'} the target  ` +
    `(bodies built in ${r.buildSeconds.toFixed(1)} s, untimed; load average now ${loadavg().map((x) => x.toFixed(1)).join(' ')})`);
  const n = r.sent;
  console.log(`${''.padEnd(14)} CPU per submission: server main thread ${(cpu.mainMs / n).toFixed(2)} ms, PostgreSQL backends ${(cpu.pgMs / n).toFixed(2)} ms ` +
    `(ratio to a 2-core budget at the target rate, ${(2000 / target).toFixed(1)} ms: ${((cpu.mainMs + cpu.pgMs) / n / (2000 / target)).toFixed(2)})`);
  if (profile) console.log(`${''.padEnd(14)} server-thread CPU profile (self time):\n${profile}`);
  if (r.failures > 0) {
    bad = true;
    console.log(`${''.padEnd(14)} FAILURES: ${r.failures} responses other than 201, e.g.\n${r.failureExamples.map((e) => `    ${e}`).join('\n')}`);
  }
  const stored = await storedCount(run.xmlFormId);
  let line = `${''.padEnd(14)} stored ${stored} / sent ${r.sent}`;
  let mismatch = stored !== r.sent;
  if (run.imageBytes > 0) {
    const media = await storedMedia(run.xmlFormId);
    line += `; photos stored ${media.files} (${media.blobs} distinct blobs) / sent ${r.sent}`;
    mismatch ||= media.files !== r.sent || media.blobs !== r.sent;
  }
  if (mismatch) bad = true;
  console.log(`${line}${mismatch ? '  MISMATCH' : ''}`);
}

await new Promise((r) => server.close(r));
await database.close();
rmSync(blobDir, { recursive: true, force: true });
process.exit(bad ? 1 : 0);
