/**
 * A 95 MB submission through the Workers path: every Worker of wrangler.toml bundled by wrangler
 * and run in local workerd (test/serverless/workers-env.ts), PostgreSQL through Hyperdrive,
 * s3rver through the S3 API. Posts one OpenRosa submission whose multipart body holds a 95 MB media
 * part, samples the workerd process's resident memory while it streams, and prints the peak above
 * idle against the 64 MB target (issue 20), then checks the blob in storage (downloaded through
 * the gateway, MD5 compared; the S3 key is its SHA-256). Also measures the CPU workerd spends per
 * login (bcrypt at the default cost 12).
 *
 *   npx tsx bench/workers-memory.ts            # DATABASE_URL or postgres://postgres@127.0.0.1:5432
 *   MB=50 LOGINS=3 npx tsx bench/workers-memory.ts
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import postgres from 'postgres';
import { systemCtx } from '../lib/context';
import { createLogger } from '../lib/log';
import { createFsBlobStore } from '../lib/runtime/fs-blobs';
import { openDatabase } from '../lib/runtime/node';
import { loadConfig } from '../lib/runtime/env';
import { createUserTask, promoteUserTask } from '../lib/users/admin-tasks';
import { COLLECT, PHOTOS_FORM, PHOTOS_FORM_ID, photosSubmission } from '../test/helpers/collect';
import { startS3 } from '../test/helpers/s3rver';
import { startWorkers } from '../test/serverless/workers-env';

const MB = Number(process.env.MB ?? 95);
const LOGINS = Number(process.env.LOGINS ?? 5);
const TARGET_MB = 64;
const EMAIL = 'bench@example.org';
const PASSWORD = 'a bench password 1234';
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

/** The workerd process Miniflare started (a child of this process). */
function workerdPid(): number {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && stat.includes('(workerd)')) return Number(d);
    } catch {
      // gone
    }
  }
  throw new Error('workerd process not found');
}
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
/** User + system CPU seconds of a process. */
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').slice(readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** A multipart body streamed in 64 KiB chunks: the XML part, then `size` bytes of media. */
function streamedSubmission(xml: string, name: string, size: number): { body: ReadableStream<Uint8Array>; type: string; md5: string; length: number } {
  const boundary = `----BenchBoundary${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="submission.xml"\r\nContent-Type: text/xml\r\n\r\n${xml}\r\n`
    + `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${name}"\r\nContent-Type: video/mp4\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const chunk = randomBytes(64 * 1024);
  const hash = createHash('md5');
  for (let sent = 0; sent < size; sent += chunk.byteLength) hash.update(chunk.subarray(0, Math.min(chunk.byteLength, size - sent)));
  let sent = -1;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent === -1) {
        c.enqueue(new Uint8Array(head));
        sent = 0;
      } else if (sent < size) {
        const n = Math.min(chunk.byteLength, size - sent);
        c.enqueue(new Uint8Array(chunk.subarray(0, n)));
        sent += n;
      } else {
        c.enqueue(new Uint8Array(tail));
        c.close();
      }
    },
  });
  return { body, type: `multipart/form-data; boundary=${boundary}`, md5: hash.digest('hex'), length: head.byteLength + size + tail.byteLength };
}

async function main() {
  const mainUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `fb_bench_workers_${randomBytes(4).toString('hex')}`;
  const admin = postgres(mainUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  const url = new URL(mainUrl);
  url.pathname = `/${name}`;
  const config = loadConfig(process.env, { DATABASE_URL: url.toString(), LOG_LEVEL: 'silent', BCRYPT_COST: '12' });
  const database = await openDatabase(config);
  const s3 = await startS3('fieldbase-bench');
  let stop: (() => Promise<void>) | null = null;
  try {
    await database.migrate();
    const ctx = systemCtx({ db: database.db, config, log: createLogger('silent'), blobs: createFsBlobStore('/tmp/fb-bench-unused') });
    await createUserTask(ctx, EMAIL, PASSWORD);
    await promoteUserTask(ctx, EMAIL);
    console.log(`Building and starting the Workers (load ${load()})…`);
    const workers = await startWorkers({ databaseUrl: url.toString(), s3, vars: { ALLOW_HTTP_AUTH: 'true' } });
    stop = workers.stop;
    const base = workers.url;
    const pid = workerdPid();
    const api = async (method: string, path: string, body?: unknown, token?: string, headers: Record<string, string> = {}) => {
      const res = await fetch(`${base}${path}`, {
        method,
        body: body == null ? null : typeof body === 'string' ? body : JSON.stringify(body),
        headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}), ...headers },
      });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res;
    };

    // Logins: the CPU workerd spends in bcrypt (cost 12), per login.
    let token = '';
    await api('POST', '/v1/sessions', { email: EMAIL, password: PASSWORD }); // warms the users isolate
    const cpu0 = cpuSeconds(pid);
    const t0 = performance.now();
    for (let i = 0; i < LOGINS; i += 1) token = ((await (await api('POST', '/v1/sessions', { email: EMAIL, password: PASSWORD })).json()) as { token: string }).token;
    const cpuPerLogin = (cpuSeconds(pid) - cpu0) / LOGINS;
    const wallPerLogin = (performance.now() - t0) / LOGINS / 1000;
    console.log(`Login (bcrypt cost 12) in workerd: ${cpuPerLogin.toFixed(2)} s CPU, ${wallPerLogin.toFixed(2)} s wall per login (${LOGINS} logins; load ${load()})`);

    const projectId = ((await (await api('POST', '/v1/projects', { name: 'Bench' }, token)).json()) as { id: number }).id;
    await api('POST', `/v1/projects/${projectId}/forms?publish=true`, PHOTOS_FORM, token, { 'Content-Type': 'application/xml' });
    const appUser = (await (await api('POST', `/v1/projects/${projectId}/app-users`, { displayName: 'Bench' }, token)).json()) as { id: number; token: string };
    const roles = (await (await api('GET', '/v1/roles', undefined, token)).json()) as Array<{ id: number; system: string }>;
    await api('POST', `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}/assignments/${roles.find((r) => r.system === 'app-user')!.id}/${appUser.id}`, undefined, token);

    // Warm-up: a small submission loads the submissions isolate and the S3 client.
    const warm = streamedSubmission(photosSubmission({ instanceId: 'uuid:warm', site: 'warm', front: 'w.mp4' }), 'w.mp4', 64 * 1024);
    const w = await fetch(`${base}/v1/key/${appUser.token}/projects/${projectId}/submission`, { method: 'POST', body: warm.body, headers: { ...COLLECT, 'Content-Type': warm.type }, duplex: 'half' } as RequestInit);
    if (w.status !== 201) throw new Error(`warm-up submission: ${w.status} ${await w.text()}`);
    await new Promise((r) => setTimeout(r, 1000));
    const idle = rssMb(pid);

    const size = MB * 1_000_000;
    const sub = streamedSubmission(photosSubmission({ instanceId: 'uuid:big', site: 'big', front: 'big.mp4' }), 'big.mp4', size);
    let peak = idle;
    const sampler = setInterval(() => { peak = Math.max(peak, rssMb(pid)); }, 10);
    const t1 = performance.now();
    const res = await fetch(`${base}/v1/key/${appUser.token}/projects/${projectId}/submission`, {
      method: 'POST', body: sub.body, headers: { ...COLLECT, 'Content-Type': sub.type, 'Content-Length': String(sub.length) }, duplex: 'half',
    } as RequestInit);
    const text = await res.text();
    const seconds = (performance.now() - t1) / 1000;
    clearInterval(sampler);
    peak = Math.max(peak, rssMb(pid));
    if (res.status !== 201) throw new Error(`95 MB submission: ${res.status} ${text}`);

    // The blob in storage: the bytes back through the gateway, and the S3 object under its SHA-256.
    const back = await api('GET', `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}/submissions/uuid:big/attachments/big.mp4`, undefined, token);
    const bytes = new Uint8Array(await back.arrayBuffer());
    const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
    const [row] = await sql`select sha, size from blobs where md5 = ${sub.md5}`;
    await sql.end({ timeout: 5 });
    const { S3Client, HeadObjectCommand } = await import('@aws-sdk/client-s3');
    const s3c = new S3Client({ region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
    const head = await s3c.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: `blobs/${row!.sha as string}` }));
    const verified = md5(bytes) === sub.md5 && bytes.byteLength === size && Number(row!.size) === size && head.ContentLength === size;

    const above = peak - idle;
    console.log(`Submission of ${MB} MB (one media part) through the gateway in workerd: 201 in ${seconds.toFixed(1)} s (${(MB / seconds).toFixed(1)} MB/s)`);
    console.log(`workerd RSS: idle ${idle.toFixed(1)} MB, peak ${peak.toFixed(1)} MB, peak above idle ${above.toFixed(1)} MB`);
    console.log(`  target < ${TARGET_MB} MB above idle: ratio ${(above / TARGET_MB).toFixed(2)} (${above < TARGET_MB ? 'met' : 'NOT met'})`);
    console.log(`Blob in storage: ${verified ? 'verified' : 'MISMATCH'} (MD5 of the download, blobs row size, S3 object blobs/${String(row!.sha).slice(0, 12)}… ${head.ContentLength} bytes)`);
    console.log(`load average: ${load()}${Number(loadavg()[0]) > 2 ? ' (taken under load: other work on this 2-core box)' : ''}`);
    if (!verified) process.exitCode = 1;
  } finally {
    await stop?.();
    await s3.stop();
    await database.close();
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end({ timeout: 5 });
  }
}

// Exit once done: a teardown handle (Miniflare's or s3rver's keep-alive sockets) sometimes kept the
// process alive after the figures were printed.
main().then(() => process.exit(), (err: unknown) => {
  console.error(err);
  process.exit(1);
});
