/**
 * The Workers deployment end to end: every Worker of wrangler.toml bundled by wrangler and run in
 * local workerd (test/serverless/workers-env.ts), against real PostgreSQL through the Hyperdrive
 * binding and s3rver through the S3 API (lib/blobs/s3-fetch.ts, no AWS SDK), the whole flow over
 * HTTP through the gateway: login, password strength (zxcvbn's lists from the users Worker's static
 * assets), XForm upload and publish, App User and its form list, a submission with a small and a
 * streamed large media part, CSV, ZIP and OData, the attachment bytes, and the cron Worker's scheduled run.
 * Skipped (with the reason) only when workerd cannot start on the machine or no PostgreSQL answers.
 */
import { strFromU8, unzipSync } from 'fflate';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { systemCtx } from '../../lib/context';
import { createLogger } from '../../lib/log';
import { createFsBlobStore } from '../../lib/runtime/fs-blobs';
import { createUserTask, promoteUserTask } from '../../lib/users/admin-tasks';
import { COLLECT, jpeg, md5, multipart, parseXml, PHOTOS_FORM, PHOTOS_FORM_ID, photosSubmission } from '../helpers/collect';
import { ownDatabase, type OwnDatabase } from '../helpers/own-database';
import { startS3, type RunningS3 } from '../helpers/s3rver';
import { startWorkers, type WorkersDeployment } from './workers-env';

const EMAIL = 'workers-admin@example.org';
const PASSWORD = 'a workers test password';

/** Why the suite cannot run here, or null. */
async function unavailable(): Promise<string | null> {
  process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/postgres';
  const sql = postgres(process.env.DATABASE_URL, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    await sql`select 1`;
  } catch (err) {
    return `no PostgreSQL at DATABASE_URL (${(err as Error).message}): workerd reaches the database over TCP, PGlite cannot serve it`;
  } finally {
    await sql.end({ timeout: 1 });
  }
  return null;
}

let db: OwnDatabase | undefined;
let s3: RunningS3 | undefined;
let workers: WorkersDeployment | undefined;
let skipped: string | null = null;

beforeAll(async () => {
  skipped = await unavailable();
  if (skipped) return;
  db = await ownDatabase('fb_workers');
  // The administrator, made as `npm run cli -- user-create` would (bcrypt at the default cost 12).
  const ctx = systemCtx({ db: db.database.db, config: { ...db.config, BCRYPT_COST: 12 }, log: createLogger('silent'), blobs: createFsBlobStore(db.blobDir) });
  await createUserTask(ctx, EMAIL, PASSWORD);
  await promoteUserTask(ctx, EMAIL);
  s3 = await startS3('fieldbase-workers');
  try {
    workers = await startWorkers({ databaseUrl: db.config.DATABASE_URL!, s3, vars: { ALLOW_HTTP_AUTH: 'true' }, withScheduled: true });
  } catch (err) {
    const message = (err as Error).message;
    if (/workerd|Workers runtime failed to start/i.test(message)) {
      skipped = `workerd cannot start here: ${message.split('\n')[0]}`;
      return;
    }
    throw err;
  }
}, 240_000);

afterAll(async () => {
  await workers?.stop();
  await s3?.stop();
  await db?.close();
});

/** Lists the bucket's keys through the S3 API (what R2 would hold). */
async function bucketKeys(): Promise<string[]> {
  const { S3Client, ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  const client = new S3Client({ region: 'us-east-1', endpoint: s3!.endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  const res = await client.send(new ListObjectsV2Command({ Bucket: s3!.bucket }));
  return (res.Contents ?? []).map((o) => o.Key!);
}

describe('Workers: gateway and group Workers in workerd, PostgreSQL through Hyperdrive, S3', () => {
  test('login, XForm, App User form list, submission with media (one part streamed), CSV, ZIP, OData, cron', async (t) => {
    if (skipped) {
      console.warn(`Workers suite skipped: ${skipped}`);
      t.skip();
      return;
    }
    const base = workers!.url;
    const call = async (method: string, path: string, init: { body?: BodyInit; headers?: Record<string, string>; token?: string } = {}) => {
      const res = await fetch(`${base}${path}`, {
        method,
        body: init.body ?? null,
        headers: { ...(init.token ? { Authorization: `Bearer ${init.token}` } : {}), ...init.headers },
      });
      return res;
    };
    const json = async (res: Response) => {
      const text = await res.text();
      try {
        return JSON.parse(text) as Record<string, unknown>;
      } catch {
        throw new Error(`not JSON (${res.status}): ${text.slice(0, 300)}`);
      }
    };

    // Login: bcrypt at cost 12 inside workerd.
    const started = performance.now();
    const login = await call('POST', '/v1/sessions', { body: JSON.stringify({ email: EMAIL, password: PASSWORD }), headers: { 'Content-Type': 'application/json' } });
    const loginMs = performance.now() - started;
    expect(login.status).toBe(200);
    const token = (await json(login)).token as string;
    console.log(`Workers login (bcrypt cost 12 in workerd): ${loginMs.toFixed(0)} ms wall`);

    // Passwords: zxcvbn in the users Worker with its dictionaries fetched from the Worker's static
    // assets (not in its bundle): a guessable one is refused in Central's words, as on Node.
    const weak = await call('POST', '/v1/users', { token, body: JSON.stringify({ email: 'weak@example.org', password: 'hunter2!!!' }), headers: { 'Content-Type': 'application/json' } });
    expect(weak.status).toBe(400);
    expect(await json(weak)).toEqual({
      code: 400.44,
      message: 'The supplied password is too weak: this is similar to a commonly used password',
      details: { warning: 'This is similar to a commonly used password', suggestions: ['Add another word or two. Uncommon words are better.'] },
    });
    const strong = await call('POST', '/v1/users', { token, body: JSON.stringify({ email: 'strong@example.org', password: 'a brand new workers passphrase' }), headers: { 'Content-Type': 'application/json' } });
    expect(strong.status, await strong.clone().text()).toBe(200);
    const strongLogin = await call('POST', '/v1/sessions', { body: JSON.stringify({ email: 'strong@example.org', password: 'a brand new workers passphrase' }), headers: { 'Content-Type': 'application/json' } });
    expect(strongLogin.status).toBe(200);

    const project = await call('POST', '/v1/projects', { token, body: JSON.stringify({ name: 'Workers' }), headers: { 'Content-Type': 'application/json' } });
    expect(project.status).toBe(200);
    const projectId = (await json(project)).id as number;

    const form = await call('POST', `/v1/projects/${projectId}/forms?publish=true`, { token, body: PHOTOS_FORM, headers: { 'Content-Type': 'application/xml' } });
    expect(form.status, await form.clone().text()).toBe(200);
    expect((await json(form)).xmlFormId).toBe(PHOTOS_FORM_ID);

    const appUser = await call('POST', `/v1/projects/${projectId}/app-users`, { token, body: JSON.stringify({ displayName: 'Collector' }), headers: { 'Content-Type': 'application/json' } });
    expect(appUser.status).toBe(200);
    const { id: appUserId, token: key } = (await json(appUser)) as { id: number; token: string };
    const roles = (await json(await call('GET', '/v1/roles', { token }))) as unknown as Array<{ id: number; system: string }>;
    const appUserRole = roles.find((r) => r.system === 'app-user')!.id;
    const assign = await call('POST', `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}/assignments/${appUserRole}/${appUserId}`, { token });
    expect(assign.status).toBe(200);

    const formList = await call('GET', `/v1/key/${key}/projects/${projectId}/formList`, { headers: { ...COLLECT } });
    expect(formList.status).toBe(200);
    const list = parseXml(await formList.text());
    const ids = list.children.flatMap((x) => x.children).filter((e) => e.local === 'formID').map((e) => e.text);
    expect(ids).toEqual([PHOTOS_FORM_ID]);

    // A small photo (kept in memory) and a 6 MB one (over the 4 MiB budget: streamed to the store).
    const front = jpeg(1, 40 * 1024);
    const back = jpeg(2, 6 * 1024 * 1024);
    const xml = photosSubmission({ instanceId: 'uuid:workers-1', site: 'Depot', front: 'front.jpg', back: 'back.jpg' });
    const { body, type } = multipart(xml, [{ name: 'front.jpg', bytes: front, type: 'image/jpeg' }, { name: 'back.jpg', bytes: back, type: 'image/jpeg' }]);
    const submit = await call('POST', `/v1/key/${key}/projects/${projectId}/submission`, { body, headers: { ...COLLECT, 'Content-Type': type } });
    expect(submit.status, await submit.clone().text()).toBe(201);

    const sub = `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}/submissions/uuid:workers-1`;
    for (const [name, bytes] of [['front.jpg', front], ['back.jpg', back]] as const) {
      const res = await call('GET', `${sub}/attachments/${name}`, { token });
      expect(res.status).toBe(200);
      expect(md5(new Uint8Array(await res.arrayBuffer()))).toBe(md5(bytes));
    }
    const keys = await bucketKeys();
    // Both blobs under their SHA-256; the streamed part's temporary object is gone.
    expect(keys.filter((k) => k.startsWith('blobs/'))).toHaveLength(2);
    expect(keys.filter((k) => k.startsWith('tmp/'))).toEqual([]);

    const csv = await call('GET', `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}/submissions.csv`, { token });
    expect(csv.status).toBe(200);
    const csvText = await csv.text();
    expect(csvText.split('\n')[0]).toContain('photo_front');
    expect(csvText).toContain('Depot');
    expect(csvText).toContain('uuid:workers-1');

    const zip = await call('GET', `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}/submissions.csv.zip`, { token });
    expect(zip.status).toBe(200);
    const files = unzipSync(new Uint8Array(await zip.arrayBuffer()));
    expect(Object.keys(files).sort()).toEqual([`${PHOTOS_FORM_ID}.csv`, 'media/back.jpg', 'media/front.jpg'].sort());
    expect(md5(files['media/back.jpg']!)).toBe(md5(back));
    expect(strFromU8(files[`${PHOTOS_FORM_ID}.csv`]!)).toContain('Depot');

    const odata = await call('GET', `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}.svc/Submissions`, { token });
    expect(odata.status).toBe(200);
    const value = (await json(odata)).value as Array<Record<string, unknown>>;
    expect(value.map((v) => [v.__id, v.site, v.photo_back])).toEqual([['uuid:workers-1', 'Depot', 'back.jpg']]);

    // The cron Worker: the hourly trigger reaps expired sessions through runScheduledJob.
    const sql = postgres(db!.config.DATABASE_URL!, { max: 1, onnotice: () => {} });
    try {
      await sql`update sessions set expires_at = now() - interval '1 day'`;
      const cron = await workers!.mf.getWorker('fieldbase-scheduled');
      const result = await cron.scheduled({ cron: '17 * * * *', scheduledTime: new Date() });
      expect(result.outcome).toBe('ok');
      // waitUntil work finishes after the handler returns: poll briefly for the sessions to go.
      let left = -1;
      for (let i = 0; i < 50 && left !== 0; i += 1) {
        left = Number((await sql`select count(*)::int as n from sessions`)[0]!.n);
        if (left !== 0) await new Promise((r) => setTimeout(r, 200));
      }
      expect(left).toBe(0);
    } finally {
      await sql.end({ timeout: 5 });
    }
    expect((await call('GET', '/v1/users/current', { token })).status).toBe(401);
  }, 180_000);
});
