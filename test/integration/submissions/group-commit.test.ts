/**
 * Ingest at volume and the export fast path, over a database of this file's own (real concurrent
 * transactions; on PostgreSQL (DATABASE_URL) a fresh database, else PGlite):
 * - group commit (lib/submissions/ingest.ts): a burst of concurrent OpenRosa POSTs, new ones,
 *   a repeated one (the same instanceID several times in the burst, as Collect retries), one with
 *   different XML under an existing instanceID, with and without media: each gets its own exact
 *   answer, and the rows, media and audits are those of one submission at a time;
 * - the COPY path of the root CSV (lib/exports/copy.ts, PostgreSQL): byte for byte the CSV the
 *   general path writes (forced here with a `$filter` that keeps every row), with quotes, commas
 *   and line breaks in values and metadata, an edit, review states, received and missing media;
 *   a reader that stops early leaves the (single) pooled connection usable.
 */
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { and, eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { audits, formDefs, forms, submissionAttachments, submissionDefs, submissions } from '../../../drizzle/schema';
import { localApp } from '../../../infra/local/app';
import { systemCtx, type Ctx, type Deps } from '../../../lib/context';
import { exportCsv } from '../../../lib/exports';
import { createLogger } from '../../../lib/log';
import { withDeps } from '../../../lib/runtime/entry';
import { createFsBlobStore } from '../../../lib/runtime/fs-blobs';
import { openDatabase, type NodeDatabase } from '../../../lib/runtime/node';
import { createUserTask, promoteUserTask } from '../../../lib/users/admin-tasks';
import { rootTextOf, rootValuesOf } from '../../../lib/xforms/parse-submission';
import type { FormField } from '../../../lib/xforms/types';
import { COLLECT, jpeg, md5, multipart, PHOTOS_FORM, PHOTOS_FORM_ID, photosSubmission, type MediaPart } from '../../helpers/collect';
import { ownDatabase, type OwnDatabase } from '../../helpers/own-database';

let own: OwnDatabase;
let database: NodeDatabase;
let deps: Deps;
let server: ServerType | undefined;
let base: string;
let auth: Record<string, string>;
let P: string;
let projectId: number;
let formId: number;
let formFields: FormField[];
let collectUrl: string;
let collectUrl2: string;

beforeAll(async () => {
  own = await ownDatabase('fb_group');
  database = own.database;
  deps = { db: database.db, blobs: createFsBlobStore(own.blobDir), config: own.config, log: createLogger('silent'), copyToStream: true };
  const email = 'group-admin@example.org';
  const password = 'group admin password 1';
  await createUserTask(systemCtx(deps), email, password);
  await promoteUserTask(systemCtx(deps), email);
  const app = withDeps(localApp(), () => ({ deps }));
  base = await new Promise<string>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(`http://127.0.0.1:${info.port}`));
  });
  auth = {};
  const call = async <T>(method: string, path: string, body: string, type = 'application/json'): Promise<T> => {
    const res = await fetch(`${base}${path}`, { method, headers: { ...auth, 'Content-Type': type }, body });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${method} ${path} → ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  };
  auth = { Authorization: `Bearer ${(await call<{ token: string }>('POST', '/v1/sessions', JSON.stringify({ email, password }))).token}` };
  projectId = (await call<{ id: number }>('POST', '/v1/projects', JSON.stringify({ name: 'Group "commit", test' }))).id;
  P = `/v1/projects/${projectId}`;
  await call('POST', `${P}/forms?publish=true`, PHOTOS_FORM, 'application/xml');
  const au = await call<{ id: number; token: string }>('POST', `${P}/app-users`, JSON.stringify({ displayName: 'Tablet, "one"' }));
  await call('POST', `${P}/forms/${PHOTOS_FORM_ID}/assignments/app-user/${au.id}`, '');
  collectUrl = `${base}/v1/key/${au.token}/projects/${projectId}/submission`;
  // A second tablet: a batch then holds two actors' submissions.
  const au2 = await call<{ id: number; token: string }>('POST', `${P}/app-users`, JSON.stringify({ displayName: 'Tablet two' }));
  await call('POST', `${P}/forms/${PHOTOS_FORM_ID}/assignments/app-user/${au2.id}`, '');
  collectUrl2 = `${base}/v1/key/${au2.token}/projects/${projectId}/submission`;
  const [form] = await database.db.select({ id: forms.id, fields: formDefs.fields }).from(forms)
    .innerJoin(formDefs, eq(formDefs.id, forms.currentDefId)).where(eq(forms.xmlFormId, PHOTOS_FORM_ID));
  formId = form!.id;
  formFields = form!.fields;
}, 60_000);

afterAll(async () => {
  if (server) await new Promise((r) => server!.close(r));
  await own?.close();
});

async function collectPost(xml: string, files: MediaPart[] = [], deviceId = 'collect:group', url = collectUrl): Promise<{ status: number; body: string }> {
  const { body, type } = multipart(xml, files);
  const res = await fetch(`${url}?deviceID=${encodeURIComponent(deviceId)}`, { method: 'POST', headers: { ...COLLECT, 'Content-Type': type }, body });
  return { status: res.status, body: await res.text() };
}

const photo = (name: string, seed: number): MediaPart => ({ name, bytes: jpeg(seed, 4096), type: 'image/jpeg' });

/** The /site answer of burst submission i: quotes, a backslash, a tab, non-ASCII; empty for every 7th. */
const siteText = (i: number) => (i % 7 === 6 ? '' : `Site ${i}, "north" \\ é😀\t${'x'.repeat(i)}`);

describe('group commit of concurrent OpenRosa submissions', () => {
  test('a burst of 40: each answered as alone (201, a retry 201, different XML 409.1); one row, version, audit and media set each', async () => {
    // Seen before the burst: the same instanceID with other XML is a conflict.
    const taken = photosSubmission({ instanceId: 'uuid:taken', site: 'first' });
    expect((await collectPost(taken)).status).toBe(201);

    const jobs: Array<{ kind: string; send: () => Promise<{ status: number; body: string }> }> = [];
    const sent = new Map<string, string>();
    for (let i = 0; i < 30; i += 1) {
      const withMedia = i % 3 === 0;
      // Texts that JSON and array literals escape (quotes, a backslash, a tab, non-ASCII), and an
      // empty one: stored exactly in every column, whatever the batch's parameters look like.
      const xml = photosSubmission({ instanceId: `uuid:burst-${i}`, site: siteText(i), front: withMedia ? `f${i}.jpg` : undefined });
      sent.set(`uuid:burst-${i}`, xml);
      jobs.push({ kind: `new ${i}`, send: () => collectPost(xml, withMedia ? [photo(`f${i}.jpg`, i)] : [], `dev-${i % 4}`, i % 2 === 0 ? collectUrl : collectUrl2) });
    }
    // One submission sent five times within the burst (a Collect retry storm), with its photo each time.
    const retried = photosSubmission({ instanceId: 'uuid:retried', site: 'retried', front: 'r.jpg' });
    for (let k = 0; k < 5; k += 1) jobs.push({ kind: 'retry', send: () => collectPost(retried, [photo('r.jpg', 99)]) });
    // Different XML under an instanceID that exists: 409.1, several times.
    for (let k = 0; k < 5; k += 1) jobs.push({ kind: 'conflict', send: () => collectPost(photosSubmission({ instanceId: 'uuid:taken', site: `other ${k}` })) });

    const answers = await Promise.all(jobs.map((j) => j.send()));
    answers.forEach((a, i) => {
      const kind = jobs[i]!.kind;
      if (kind === 'conflict') expect(a.status, a.body).toBe(409);
      else expect(a.status, `${kind}: ${a.body}`).toBe(201);
    });

    const ids = [...Array.from({ length: 30 }, (_, i) => `uuid:burst-${i}`), 'uuid:retried', 'uuid:taken'];
    const subs = await database.db.select().from(submissions).where(and(eq(submissions.formId, formId), inArray(submissions.instanceId, ids)));
    expect(subs.map((s) => s.instanceId).sort()).toEqual([...ids].sort());
    const defs = await database.db.select().from(submissionDefs).where(inArray(submissionDefs.submissionId, subs.map((s) => s.id)));
    expect(defs).toHaveLength(ids.length);
    for (const s of subs) {
      const d = defs.find((x) => x.submissionId === s.id)!;
      expect(s.currentDefId).toBe(d.id);
      expect(d.instanceId).toBe(s.instanceId);
      const n = /^uuid:burst-(\d+)$/.exec(s.instanceId)?.[1];
      if (n != null) {
        expect(d.values.find((v) => v.path === '/site')?.value ?? '').toBe(siteText(Number(n)));
        // Every stored form of the answers as the single-submission path writes them.
        expect(d.xml).toBe(sent.get(s.instanceId));
        expect(d.rootValues).toEqual(rootValuesOf(d.values));
        expect(d.rootText).toBe(rootTextOf(d.values, formFields, d.rootValues));
        expect(s.deviceId).toBe(`dev-${Number(n) % 4}`);
        expect(d.md5).toBe(md5(d.xml));
      }
    }
    expect(defs.find((d) => d.instanceId === 'uuid:taken')!.values.find((v) => v.path === '/site')?.value).toBe('first');

    // Media: one expected row per named photo, each with its own bytes' blob.
    const files = await database.db.select().from(submissionAttachments).where(inArray(submissionAttachments.submissionDefId, defs.map((d) => d.id)));
    const named = Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 3 === 0);
    expect(files.filter((f) => f.blobId != null).map((f) => f.name).sort()).toEqual([...named.map((i) => `f${i}.jpg`), 'r.jpg'].sort());
    expect(files).toHaveLength(named.length + 1);
    const stored = await fetch(`${base}${P}/forms/${PHOTOS_FORM_ID}/submissions/${encodeURIComponent('uuid:burst-3')}/attachments/f3.jpg`, { headers: auth });
    expect(stored.status).toBe(200);
    expect(md5(new Uint8Array(await stored.arrayBuffer()))).toBe(md5(jpeg(3, 4096)));

    // Audits: one submission.create per submission; the retries add attachment events only when
    // they replaced a file (identical bytes: the same blob), never a second create.
    const creates = await database.db.select().from(audits).where(eq(audits.action, 'submission.create'));
    const createdIds = creates.map((a) => (a.details as { instanceId: string }).instanceId).filter((x) => ids.includes(x));
    expect(createdIds.sort()).toEqual([...ids].sort());
    for (const a of creates.filter((x) => ids.includes((x.details as { instanceId: string }).instanceId))) {
      const s = subs.find((x) => x.instanceId === (a.details as { instanceId: string }).instanceId)!;
      expect(a.details).toEqual({ submissionId: s.id, instanceId: s.instanceId, submissionDefId: s.currentDefId });
      expect(a.actorId).toBe(s.submitterId);
    }
    // Each photo's event is its own submitter's (two App Users' submissions share batches).
    const photoEvents = (await database.db.select().from(audits).where(eq(audits.action, 'submission.attachment.update')))
      .filter((a) => /^uuid:burst-/.test((a.details as { instanceId: string }).instanceId));
    expect(photoEvents).toHaveLength(named.length);
    expect(new Set(subs.filter((s) => /^uuid:burst-/.test(s.instanceId)).map((s) => s.submitterId)).size).toBe(2);
    for (const a of photoEvents) {
      const s = subs.find((x) => x.instanceId === (a.details as { instanceId: string }).instanceId)!;
      expect(a.actorId).toBe(s.submitterId);
      expect(a.details).toMatchObject({ submissionId: s.id, submissionDefId: s.currentDefId, name: `${/\d+/.exec(s.instanceId)![0]}.jpg`.replace(/^/, 'f') });
    }
  }, 60_000);
});

// ---------------------------------------------------------------------------------------------

async function readCsv(ctx: Ctx, filter: string | null): Promise<Buffer> {
  const file = await exportCsv(ctx, projectId, PHOTOS_FORM_ID, false, { attachments: false, filter, groupPaths: true, deletedFields: false, splitSelectMultiples: false });
  const parts: Uint8Array[] = [];
  for await (const c of file.stream as unknown as AsyncIterable<Uint8Array>) parts.push(c);
  return Buffer.concat(parts);
}

describe('root CSV written by PostgreSQL (COPY) equals the general path', () => {
  test('quotes, commas, line breaks, an edit, review states, media received and missing; an early stop leaves the pool usable', async () => {
    const tricky = ['plain', 'a,b', 'he said "hi"', 'line one\nline two', 'cr\rhere', 'tab\there', 'ünïcödé ✓', ''];
    for (const [i, site] of tricky.entries()) {
      const xml = photosSubmission({ instanceId: `uuid:csv-${i}`, site: site.replace(/&/g, '&amp;').replace(/</g, '&lt;'), front: i % 2 ? `p${i}.jpg` : undefined, back: i === 3 ? 'missing.jpg' : undefined });
      const res = await collectPost(xml, i % 2 ? [photo(`p${i}.jpg`, 100 + i)] : [], i === 2 ? 'dev "x", y' : i === 4 ? 'multi\nline' : `dev-${i}`);
      expect(res.status, res.body).toBe(201);
    }
    // An edit (a second version) and review states.
    const edit = photosSubmission({ instanceId: 'uuid:csv-0-edit', deprecatedId: 'uuid:csv-0', site: 'edited, "once"' });
    expect((await collectPost(edit)).status).toBe(201);
    const review = await fetch(`${base}${P}/forms/${PHOTOS_FORM_ID}/submissions/uuid%3Acsv-5`, {
      method: 'PATCH', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ reviewState: 'hasIssues' }),
    });
    expect(review.status).toBe(200);

    const ctx = systemCtx(deps);
    const fast = await readCsv(ctx, null);
    const general = await readCsv(ctx, "__id ne 'no such id'");
    expect(fast.toString('utf8')).toBe(general.toString('utf8'));
    const text = fast.toString('utf8');
    expect(text).toContain('"line one\nline two"');
    expect(text).toContain('"he said ""hi"""');
    expect(text).toContain('"dev ""x"", y"');
    expect(text).toContain('"edited, ""once"""');

    // One pooled connection: a COPY stopped after its first chunk must give the connection back.
    if (!own.config.DATABASE_URL) return;
    const single = await openDatabase({ ...own.config, DATABASE_POOL_MAX: 1 });
    try {
      const one = systemCtx({ ...deps, db: single.db });
      for (let k = 0; k < 2; k += 1) {
        const file = await exportCsv(one, projectId, PHOTOS_FORM_ID, false, { attachments: false, filter: null, groupPaths: true, deletedFields: false, splitSelectMultiples: false });
        const reader = file.stream.getReader();
        expect((await reader.read()).done).toBe(false);
        await reader.cancel();
      }
      expect((await readCsv(one, null)).equals(fast)).toBe(true);
    } finally {
      await single.close();
    }
  }, 60_000);
});
