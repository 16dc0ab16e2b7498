/**
 * Racing writers of one submission (a Collect retry racing its first attempt, two devices editing
 * the same version): never a duplicate row, never a 500 (shared/spec/interface.md, Submission rules
 * 1–2; POST F/submissions 409). Real concurrent transactions need a database the harness's single
 * rolled-back transaction cannot give, so this file runs its own server over its own database:
 * on PostgreSQL (DATABASE_URL) a fresh database on the same server, created here and dropped at the
 * end; without it an in-memory PGlite (one connection: the race is serialised there, but the answers
 * must be the same).
 */
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { and, eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { audits, blobs, forms, submissionAttachments, submissionDefs, submissions } from '../../../drizzle/schema';
import { localApp } from '../../../infra/local/app';
import { systemCtx, type Deps } from '../../../lib/context';
import { createLogger } from '../../../lib/log';
import { withDeps } from '../../../lib/runtime/entry';
import { createFsBlobStore } from '../../../lib/runtime/fs-blobs';
import type { NodeDatabase } from '../../../lib/runtime/node';
import { createUserTask, promoteUserTask } from '../../../lib/users/admin-tasks';
import {
  COLLECT, jpeg, md5, multipart, openRosaMessage, PHOTOS_FORM, PHOTOS_FORM_ID, photosSubmission, SUBMISSION_OK, type MediaPart,
} from '../../helpers/collect';
import { ownDatabase, type OwnDatabase } from '../../helpers/own-database';

const N = 8;
/** Central's 409.9 words (lib/problem.ts deprecatingOldSubmission), as an OpenRosaResponse carries them. */
const OUT_OF_DATE = (deprecatedId: string) =>
  `You tried to update a submission, but the copy you were editing (${deprecatedId}) is now out of date. Please get the new version that has been submitted, and make your edits again.`;

let database: NodeDatabase;
let deps: Deps;
let server: ServerType | undefined;
let base: string;
let own: OwnDatabase;
const mainUrl = process.env.DATABASE_URL;
let auth: Record<string, string>;
let P: string;
let formId: number;
let collectUrl: string;


beforeAll(async () => {
  // A database of its own (on PostgreSQL, a fresh one on the same server), so requests run in
  // real, concurrent transactions.
  own = await ownDatabase('fb_race');
  database = own.database;
  deps = { db: own.database.db, blobs: createFsBlobStore(own.blobDir), config: own.config, log: createLogger('silent') };

  // An administrator, as the CLI makes one.
  const email = 'race-admin@example.org';
  const password = 'race admin password 1';
  const ctx = systemCtx(deps);
  await createUserTask(ctx, email, password);
  await promoteUserTask(ctx, email);

  const app = withDeps(localApp(), () => ({ deps }));
  base = await new Promise<string>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(`http://127.0.0.1:${info.port}`));
  });

  const call = async <T>(path: string, body: string, type = 'application/json'): Promise<T> => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { ...auth, 'Content-Type': type }, body });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`POST ${path} → ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  };
  auth = {};
  const session = await call<{ token: string }>('/v1/sessions', JSON.stringify({ email, password }));
  auth = { Authorization: `Bearer ${session.token}` };
  const project = await call<{ id: number }>('/v1/projects', JSON.stringify({ name: 'Race' }));
  P = `/v1/projects/${project.id}`;
  await call(`${P}/forms?publish=true`, PHOTOS_FORM, 'application/xml');
  const au = await call<{ id: number; token: string }>(`${P}/app-users`, JSON.stringify({ displayName: 'Tablet' }));
  await call(`${P}/forms/${PHOTOS_FORM_ID}/assignments/app-user/${au.id}`, '');
  collectUrl = `${base}/v1/key/${au.token}/projects/${project.id}/submission?deviceID=collect%3Arace`;
  const [form] = await database.db.select({ id: forms.id }).from(forms).where(eq(forms.xmlFormId, PHOTOS_FORM_ID));
  formId = form!.id;
}, 60_000);

afterAll(async () => {
  if (server) await new Promise((r) => server!.close(r));
  await own?.close();
});

// ---------------------------------------------------------------------------------------------

interface Answer { status: number; body: string }

/** One OpenRosa POST as Collect sends it (a fresh hand-built body each time, as a retry would be). */
async function collectPost(xml: string, files: MediaPart[] = []): Promise<Answer> {
  const { body, type } = multipart(xml, files);
  const res = await fetch(collectUrl, { method: 'POST', headers: { ...COLLECT, 'Content-Type': type }, body });
  return { status: res.status, body: await res.text() };
}

/** `n` copies of a request, all started at once over their own connections. */
const race = (n: number, send: (i: number) => Promise<Answer>) => Promise.all(Array.from({ length: n }, (_, i) => send(i)));

/** No 5xx, and the OpenRosa answers are OpenRosaResponse documents. */
function expectNo500(answers: Answer[]): void {
  for (const a of answers) expect(a.status, a.body).toBeLessThan(500);
}

const accepted = (a: Answer) => a.status === 201 && openRosaMessage(a.body).text === SUBMISSION_OK;

async function rowsOf(instanceId: string) {
  const subs = await database.db.select().from(submissions).where(and(eq(submissions.formId, formId), eq(submissions.instanceId, instanceId)));
  const defs = subs.length === 0 ? [] : await database.db.select().from(submissionDefs).where(inArray(submissionDefs.submissionId, subs.map((s) => s.id)));
  const files = defs.length === 0 ? [] : await database.db
    .select({ defId: submissionAttachments.submissionDefId, name: submissionAttachments.name, md5: blobs.md5, sha: blobs.sha })
    .from(submissionAttachments)
    .leftJoin(blobs, eq(blobs.id, submissionAttachments.blobId))
    .where(inArray(submissionAttachments.submissionDefId, defs.map((d) => d.id)));
  return { subs, defs, files };
}

async function auditCount(action: string, submissionId: number): Promise<number> {
  const rows = await database.db.select({ details: audits.details }).from(audits).where(eq(audits.action, action));
  return rows.filter((r) => (r.details as { submissionId?: number } | null)?.submissionId === submissionId).length;
}

const rest = async (method: string, path: string, body?: string, type = 'application/xml') => {
  const res = await fetch(`${base}${path}`, { method, headers: { ...auth, ...(body == null ? {} : { 'Content-Type': type }) }, body });
  return { status: res.status, body: await res.text() };
};

// ---------------------------------------------------------------------------------------------

describe(`${N} racing writers of one submission (${mainUrl ? 'PostgreSQL, concurrent transactions' : 'PGlite, serialised'})`, () => {
  test('identical OpenRosa POSTs with a photo (Collect retries): all 201, one submission, one version, the photo stored', async () => {
    const instanceId = 'uuid:race-identical';
    const photo = { name: 'front.jpg', bytes: jpeg(11), type: 'image/jpeg' };
    const xml = photosSubmission({ instanceId, site: 'Race', front: photo.name, back: 'back.jpg' });

    const answers = await race(N, () => collectPost(xml, [photo]));
    expectNo500(answers);
    expect(answers.map((a) => a.status)).toEqual(Array(N).fill(201));
    expect(answers.every(accepted)).toBe(true);

    const { subs, defs, files } = await rowsOf(instanceId);
    expect(subs).toHaveLength(1);
    expect(defs.map((d) => [d.instanceId, d.current, d.xml])).toEqual([[instanceId, true, xml]]);
    expect(subs[0]!.currentDefId).toBe(defs[0]!.id);
    expect(files.map((f) => [f.name, f.md5]).sort()).toEqual([['back.jpg', null], ['front.jpg', md5(photo.bytes)]]);
    expect(await deps.blobs.has(files.find((f) => f.name === 'front.jpg')!.sha!)).toBe(true);
    expect(await auditCount('submission.create', subs[0]!.id)).toBe(1);

    const listed = await rest('GET', `${P}/forms/${PHOTOS_FORM_ID}/submissions`);
    expect(JSON.parse(listed.body).filter((s: { instanceId: string }) => s.instanceId === instanceId)).toHaveLength(1);
    const dl = await fetch(`${base}${P}/forms/${PHOTOS_FORM_ID}/submissions/${encodeURIComponent(instanceId)}/attachments/front.jpg`, { headers: auth });
    expect(dl.status).toBe(200);
    expect(md5(new Uint8Array(await dl.arrayBuffer()))).toBe(md5(photo.bytes));
  });

  test('identical edits (same deprecatedID, same new instanceID, a new photo): all 201, exactly one new version', async () => {
    const instanceId = 'uuid:race-edit-same';
    const front = { name: 'front.jpg', bytes: jpeg(21), type: 'image/jpeg' };
    const xml = photosSubmission({ instanceId, site: 'Before', front: front.name, back: 'back.jpg' });
    expect((await collectPost(xml, [front])).status).toBe(201);

    const editId = 'uuid:race-edit-same-2';
    const back = { name: 'back.jpg', bytes: jpeg(22), type: 'image/jpeg' };
    const editXml = photosSubmission({ instanceId: editId, deprecatedId: instanceId, site: 'After', front: front.name, back: back.name });
    const answers = await race(N, () => collectPost(editXml, [back]));
    expectNo500(answers);
    expect(answers.map((a) => a.status)).toEqual(Array(N).fill(201));
    expect(answers.every(accepted)).toBe(true);

    const { subs, defs, files } = await rowsOf(instanceId);
    expect(subs).toHaveLength(1);
    expect(subs[0]!.reviewState).toBe('edited');
    expect(defs.map((d) => [d.instanceId, d.current]).sort()).toEqual([[instanceId, false], [editId, true]].sort());
    const current = defs.find((d) => d.current)!;
    expect(subs[0]!.currentDefId).toBe(current.id);
    expect(current.xml).toBe(editXml);
    // The front photo carried over by name; the back one came with the edit.
    expect(files.filter((f) => f.defId === current.id).map((f) => [f.name, f.md5]).sort()).toEqual([
      ['back.jpg', md5(back.bytes)], ['front.jpg', md5(front.bytes)],
    ]);
    expect(await auditCount('submission.update.version', subs[0]!.id)).toBe(1);

    const versions = JSON.parse((await rest('GET', `${P}/forms/${PHOTOS_FORM_ID}/submissions/${encodeURIComponent(instanceId)}/versions`)).body);
    expect(versions.map((v: { instanceId: string }) => v.instanceId)).toEqual([editId, instanceId]);
  });

  test('different edits of the same version: exactly one 201, the others 409.9, one new version', async () => {
    const instanceId = 'uuid:race-edit-diff';
    const xml = photosSubmission({ instanceId, site: 'Start' });
    expect((await collectPost(xml)).status).toBe(201);

    const editIds = Array.from({ length: N }, (_, i) => `uuid:race-edit-diff-${i}`);
    const answers = await race(N, (i) => collectPost(photosSubmission({ instanceId: editIds[i]!, deprecatedId: instanceId, site: `Device ${i}` })));
    expectNo500(answers);
    const won = answers.filter((a) => a.status === 201);
    const lost = answers.filter((a) => a.status !== 201);
    expect(won).toHaveLength(1);
    expect(won.every(accepted)).toBe(true);
    expect(lost.map((a) => a.status)).toEqual(Array(N - 1).fill(409));
    for (const a of lost) expect(openRosaMessage(a.body)).toEqual({ nature: 'error', text: OUT_OF_DATE(instanceId) });

    const { subs, defs } = await rowsOf(instanceId);
    expect(subs).toHaveLength(1);
    expect(defs).toHaveLength(2);
    const winner = editIds[answers.findIndex((a) => a.status === 201)]!;
    expect(defs.filter((d) => d.current).map((d) => d.instanceId)).toEqual([winner]);
    expect(subs[0]!.currentDefId).toBe(defs.find((d) => d.current)!.id);
    expect(await auditCount('submission.update.version', subs[0]!.id)).toBe(1);
  });

  test('REST POST F/submissions with the same instanceID: one 200, the others 409.3, one row', async () => {
    const instanceId = 'uuid:race-rest';
    const xml = photosSubmission({ instanceId, site: 'REST' });
    const answers = await race(N, () => rest('POST', `${P}/forms/${PHOTOS_FORM_ID}/submissions`, xml));
    expectNo500(answers);
    const won = answers.filter((a) => a.status === 200);
    const lost = answers.filter((a) => a.status !== 200);
    expect(won).toHaveLength(1);
    expect(JSON.parse(won[0]!.body)).toMatchObject({ instanceId, currentVersion: { instanceId, current: true } });
    expect(lost.map((a) => a.status)).toEqual(Array(N - 1).fill(409));
    for (const a of lost) {
      // The same answer whether the loser saw the winner's row or ran into the unique index.
      expect(JSON.parse(a.body)).toEqual({
        code: 409.3,
        message: `A resource already exists with formId,instanceId,draft value(s) of ${formId},${instanceId},f.`,
        details: { fields: ['formId', 'instanceId', 'draft'], values: [String(formId), instanceId, 'f'], table: 'submissions' },
      });
    }
    const { subs, defs } = await rowsOf(instanceId);
    expect(subs).toHaveLength(1);
    expect(defs).toHaveLength(1);
    expect(await auditCount('submission.create', subs[0]!.id)).toBe(1);
  });
});
