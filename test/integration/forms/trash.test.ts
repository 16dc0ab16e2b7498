import { eq, inArray } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { actees, blobs, formAttachments, formDefs, forms } from '../../../drizzle/schema';
import { systemCtx } from '../../../lib/context';
import { purgeForms } from '../../../lib/forms';
import { harness, json, type Harness } from '../../helpers/harness';
import {
  centralError, createForm, expectCentralError, expectProblem, F, formKeys, formXml, isoPattern, P, publish, withAttachmentsAs, type Json,
} from './form-fixtures';
import { createHash, randomBytes } from 'node:crypto';

// blobs are keyed by the SHA-256 of their bytes (lib/blobs/hash.ts)
const blobKey = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

async function formRows(h: Harness, xmlFormId: string) {
  return h.db.select().from(forms).where(eq(forms.xmlFormId, xmlFormId)).orderBy(forms.id);
}

async function trash(h: Harness, as: 'alice' | 'bob' = 'alice'): Promise<Json[]> {
  const res = await h.get(`${P(h)}/forms?deleted=true`, { as });
  expect(res.status).toBe(200);
  return json(res);
}

const restore = (h: Harness, id: number, as: 'alice' | 'bob' | 'chelsea' = 'alice') => h.post(`${P(h)}/forms/${id}/restore`, { as });

/** The `simple` fixture as version 2 (a form made again under a deleted one's xmlFormId). */
const simpleV2 = formXml('simple').replace('<data id="simple">', '<data id="simple" version="2">');

describe('the Trash', () => {
  test('DELETE F: gone from GET P/forms, listed with ?deleted=true with its numeric id and deletedAt', async () => {
    const h = await harness();
    const created = await createForm(h, formXml('simple'), { publish: true });
    await createForm(h, formXml('withrepeat'), { publish: true });
    expect((await h.delete(F(h, 'simple'), { as: 'alice' })).status).toBe(200);
    const live = await json<Json[]>(await h.get(`${P(h)}/forms`, { as: 'alice' }));
    expect(live.map((f) => f.xmlFormId)).toEqual(['withrepeat']);
    const deleted = await trash(h, 'bob');
    expect(deleted).toHaveLength(1);
    const [row] = await formRows(h, 'simple');
    expect(Object.keys(deleted[0])).toEqual([...formKeys, 'id', 'deletedAt']);
    expect(deleted[0]).toMatchObject({ ...created, id: row!.id, deletedAt: row!.deletedAt!.toISOString() });
    expect(typeof deleted[0].id).toBe('number');
    expect(deleted[0].deletedAt).toMatch(isoPattern);
    // a deleted form is not reachable by xmlFormId
    await expectProblem(await h.get(`${F(h, 'simple')}.xml`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, 'simple')}/versions`, { as: 'alice' }), 404.1);
  });

  test('a draft-only form can be deleted; its Draft Token ends', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    const { draftToken } = await json(await h.get(`${F(h, 'simple')}/draft`, { as: 'alice' }));
    expect((await h.delete(F(h, 'simple'), { as: 'alice' })).status).toBe(200);
    const [row] = await formRows(h, 'simple');
    expect(row!.draftToken).toBeNull();
    const res = await h.get(`/v1/test/${encodeURIComponent(draftToken)}/projects/${h.projectId}/forms/simple/draft/formList`, {
      headers: { 'X-OpenRosa-Version': '1.0' },
    });
    expect(res.status).toBe(404);
    expect((await trash(h)).map((f) => f.publishedAt)).toEqual([null]);
  });

  test('the xmlFormId can be reused (after the deletedFormExists warning is ignored)', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await h.delete(F(h, 'simple'), { as: 'alice' });
    // A new version: the one the deleted form published may not be reused (409.6, as Central).
    const again = await createForm(h, simpleV2, { publish: true, query: 'ignoreWarnings=true' });
    expect(again.xmlFormId).toBe('simple');
    expect((await json(await h.get(F(h, 'simple'), { as: 'alice' }))).publishedAt).toBe(again.publishedAt);
    expect(await formRows(h, 'simple')).toHaveLength(2);
    expect(await trash(h)).toHaveLength(1);
  });

  test('restore when no live form has the id: {success}, listed again; audit form.restore', async () => {
    const h = await harness();
    const created = await createForm(h, formXml('simple'), { publish: true });
    await h.delete(F(h, 'simple'), { as: 'alice' });
    const [row] = await formRows(h, 'simple');
    const res = await restore(h, row!.id, 'bob');
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    expect(await json(await h.get(F(h, 'simple'), { as: 'alice' }))).toEqual(created);
    expect(await trash(h)).toEqual([]);
    expect((await formRows(h, 'simple'))[0]!.deletedAt).toBeNull();
    const rows = await h.audits();
    expect(rows.map((r) => r.action)).toEqual(['form.create', 'form.update.publish', 'form.delete', 'form.restore']);
    expect(rows[3]).toMatchObject({ actorId: h.ids.bob, acteeId: row!.acteeId });
  });

  test('restore while a live form has the xmlFormId: 409.3; unknown or live ids: 404.1; chelsea 403.1', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await h.delete(F(h, 'simple'), { as: 'alice' });
    await createForm(h, simpleV2, { publish: true, query: 'ignoreWarnings=true' });
    const [old, live] = await formRows(h, 'simple');
    const pid = String(h.projectId);
    const central = centralError('409.3-duplicate-form').body;
    await expectCentralError(await restore(h, old!.id), '409.3-duplicate-form', {
      message: (central.message as string).replace('of 2,simple', `of ${pid},simple`),
      code: 409.3,
      details: { fields: ['projectId', 'xmlFormId'], values: [pid, 'simple'], table: 'forms' },
    });
    expect((await formRows(h, 'simple'))[0]!.deletedAt).not.toBeNull();
    await expectProblem(await restore(h, 999999), 404.1);
    await expectProblem(await restore(h, live!.id), 404.1);
    await expectProblem(await restore(h, old!.id, 'chelsea'), 403.1);
    await expectProblem(await h.post(`/v1/projects/999999/forms/${old!.id}/restore`, { as: 'alice' }), 404.1);
    expect((await h.audits()).filter((r) => r.action === 'form.restore')).toEqual([]);
  });
});

describe('purgeForms', () => {
  async function attachmentForm(h: Harness, xmlFormId: string, csv: Uint8Array, mp3: Uint8Array) {
    await createForm(h, withAttachmentsAs(xmlFormId));
    for (const [name, bytes] of [['goodone.csv', csv], ['goodtwo.mp3', mp3]] as const) {
      const res = await h.post(`${F(h, xmlFormId)}/draft/attachments/${name}`, { as: 'alice', body: bytes });
      expect(res.status).toBe(200);
    }
    await publish(h, xmlFormId);
  }

  test('force: the form, its definitions and attachments go; blobs only it used are deleted, shared blobs stay', async () => {
    const h = await harness();
    // fresh bytes so no other test's blob is involved
    const shared = new Uint8Array(randomBytes(64));
    const onlyDoomed = new Uint8Array(randomBytes(64));
    const onlyLive = new Uint8Array(randomBytes(64));
    await attachmentForm(h, 'doomed', shared, onlyDoomed);
    await attachmentForm(h, 'keeper', shared, onlyLive);
    const [doomed] = await formRows(h, 'doomed');
    expect((await h.delete(F(h, 'doomed'), { as: 'alice' })).status).toBe(200);

    const purged = await purgeForms(systemCtx(h.deps), { force: true });
    expect(purged).toEqual([doomed!.id]);

    expect(await formRows(h, 'doomed')).toEqual([]);
    expect(await h.db.select().from(formDefs).where(eq(formDefs.formId, doomed!.id))).toEqual([]);
    expect(await h.db.select().from(formAttachments).where(eq(formAttachments.formId, doomed!.id))).toEqual([]);
    const [actee] = await h.db.select().from(actees).where(eq(actees.id, doomed!.acteeId));
    expect(actee!.purgedAt).toBeInstanceOf(Date);

    const left = await h.db.select().from(blobs).where(inArray(blobs.sha, [blobKey(shared), blobKey(onlyDoomed), blobKey(onlyLive)]));
    expect(left.map((b) => b.sha).sort()).toEqual([blobKey(shared), blobKey(onlyLive)].sort());
    expect(await h.deps.blobs.has(blobKey(onlyDoomed))).toBe(false);
    expect(await h.deps.blobs.has(blobKey(shared))).toBe(true);
    expect(await h.deps.blobs.has(blobKey(onlyLive))).toBe(true);

    // the live form is whole: its files still download
    const res = await h.get(`${F(h, 'keeper')}/attachments/goodone.csv`, { as: 'alice' });
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(shared);
    expect(await trash(h)).toEqual([]);
    await expectProblem(await restore(h, doomed!.id), 404.1);

    const rows = await h.audits();
    expect(rows.filter((r) => r.action === 'form.purge')).toEqual([
      expect.objectContaining({ actorId: null, acteeId: doomed!.acteeId, details: { formId: doomed!.id, xmlFormId: 'doomed' } }),
    ]);
  });

  test('without force a form deleted just now stays; 31 days later it is purged', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await h.delete(F(h, 'simple'), { as: 'alice' });
    const [row] = await formRows(h, 'simple');
    const ctx = systemCtx(h.deps);
    expect(await purgeForms(ctx, { force: false })).toEqual([]);
    expect(await formRows(h, 'simple')).toHaveLength(1);
    expect(await purgeForms(ctx, { force: false, now: new Date(Date.now() + 29 * 86_400_000) })).toEqual([]);
    expect(await formRows(h, 'simple')).toHaveLength(1);
    expect(await purgeForms(ctx, { force: false, now: new Date(Date.now() + 31 * 86_400_000) })).toEqual([row!.id]);
    expect(await formRows(h, 'simple')).toEqual([]);
  });

  test('live forms are never purged', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await createForm(h, formXml('withrepeat'));
    expect(await purgeForms(systemCtx(h.deps), { force: true })).toEqual([]);
    expect((await json<Json[]>(await h.get(`${P(h)}/forms`, { as: 'alice' }))).map((f) => f.xmlFormId)).toEqual(['simple', 'withrepeat']);
  });
});
