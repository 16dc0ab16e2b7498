import { count, eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { blobs, formAttachments, forms } from '../../../drizzle/schema';
import { harness, json, type Harness } from '../../helpers/harness';
import {
  attachmentFile, attachmentKeys, centralApi, createForm, expectProblem, F, formXml, isoPattern, md5, publish, setDraft,
  withAttachmentsAs, type Json,
} from './form-fixtures';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

const W = 'withAttachments';
const csv = () => attachmentFile('goodone.csv');
const mp3 = () => attachmentFile('goodtwo.mp3');
// blobs are keyed by the SHA-256 of their bytes (lib/blobs/hash.ts)
const blobKey = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

const draftAtt = (h: Harness, id: string, name = '') => `${F(h, id)}/draft/attachments${name ? `/${name}` : ''}`;

async function upload(h: Harness, id: string, name: string, bytes: Uint8Array, contentType?: string, as: 'alice' | 'bob' | 'chelsea' = 'alice') {
  return h.post(draftAtt(h, id, name), { as, body: bytes, ...(contentType ? { headers: { 'Content-Type': contentType } } : {}) });
}

async function uploadOk(h: Harness, id: string, name: string, bytes: Uint8Array, contentType?: string): Promise<Json> {
  const res = await upload(h, id, name, bytes, contentType);
  expect(res.status).toBe(200);
  return json(res);
}

// As Central's frame: no updatedAt before the first change, no size without a file.
const empty = (name: string, type: string) => ({
  name, type, hash: null, exists: false, blobExists: false, datasetExists: false,
});

describe('draft attachments', () => {
  test('GET F/draft/attachments lists the expected files, none uploaded yet', async () => {
    const h = await harness();
    await createForm(h, formXml(W));
    const res = await h.get(draftAtt(h, W), { as: 'bob' });
    expect(res.status).toBe(200);
    const list = await json<Json[]>(res);
    expect(list).toEqual([empty('goodone.csv', 'file'), empty('goodtwo.mp3', 'audio')]);
    for (const a of list) expect(Object.keys(a)).toEqual(attachmentKeys.filter((k) => k !== 'updatedAt' && k !== 'size'));
    // a form without attachments lists []
    await createForm(h, formXml('simple'));
    expect(await json(await h.get(draftAtt(h, 'simple'), { as: 'alice' }))).toEqual([]);
  });

  test('POST uploads a file: exists, blobExists, md5 hash, size; the blob is stored; audit form.attachment.update', async () => {
    const h = await harness();
    await createForm(h, formXml(W));
    const body = await uploadOk(h, W, 'goodone.csv', csv(), 'text/csv');
    expect(Object.keys(body)).toEqual(attachmentKeys);
    expect(body).toMatchObject({
      name: 'goodone.csv', type: 'file', hash: md5(csv()), exists: true, blobExists: true, datasetExists: false, size: csv().byteLength,
    });
    expect(body.updatedAt).toMatch(isoPattern);
    // the file is the one Central listed (withAttachments/api/form-attachments.json)
    const central = centralApi<Json[]>(W, 'form-attachments')[0];
    expect({ ...body, updatedAt: null }).toEqual({ ...central, updatedAt: null });

    const list = await json<Json[]>(await h.get(draftAtt(h, W), { as: 'alice' }));
    expect(list).toEqual([body, empty('goodtwo.mp3', 'audio')]);

    const [blob] = await h.db.select().from(blobs).where(eq(blobs.sha, blobKey(csv())));
    expect(blob).toMatchObject({ md5: md5(csv()), size: 55, contentType: 'text/csv' });
    expect(await h.deps.blobs.has(blob!.sha)).toBe(true);
    const [form] = await h.db.select().from(forms).where(eq(forms.xmlFormId, W));
    const [row] = await h.db.select().from(formAttachments).where(eq(formAttachments.formDefId, form!.draftDefId!)).orderBy(formAttachments.name);
    expect(row).toMatchObject({ name: 'goodone.csv', blobId: blob!.id, contentType: 'text/csv' });

    const rows = await h.audits();
    expect(rows.map((r) => r.action)).toEqual(['form.create', 'form.attachment.update']);
    expect(rows[1]).toMatchObject({ actorId: h.ids.alice, acteeId: form!.acteeId, details: { name: 'goodone.csv', oldBlobId: null, newBlobId: blob!.id } });
  });

  test('download: Content-Type as uploaded, Content-Disposition, ETag = quoted md5, If-None-Match → 304', async () => {
    const h = await harness();
    await createForm(h, formXml(W));
    await uploadOk(h, W, 'goodone.csv', csv(), 'text/csv; charset=utf-8');
    const res = await h.get(draftAtt(h, W, 'goodone.csv'), { as: 'alice' });
    expect(res.status).toBe(200);
    // the header is served back as given, parameters included (Central stores headers['content-type'])
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="goodone.csv"; filename*=UTF-8''goodone.csv`);
    expect(res.headers.get('etag')).toBe(`"${md5(csv())}"`);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(csv());

    const cached = await h.get(draftAtt(h, W, 'goodone.csv'), { as: 'alice', headers: { 'If-None-Match': `"${md5(csv())}"` } });
    expect(cached.status).toBe(304);
    expect(cached.headers.get('etag')).toBe(`"${md5(csv())}"`);
    expect(await cached.text()).toBe('');
    const stale = await h.get(draftAtt(h, W, 'goodone.csv'), { as: 'alice', headers: { 'If-None-Match': '"0000"' } });
    expect(stale.status).toBe(200);
    await stale.arrayBuffer();

    // a custom type is kept as given
    await uploadOk(h, W, 'goodtwo.mp3', mp3(), 'audio/x-custom');
    expect((await h.get(draftAtt(h, W, 'goodtwo.mp3'), { as: 'alice' })).headers.get('content-type')).toBe('audio/x-custom');
  });

  test('uploaded without Content-Type: the type comes from the extension, else application/octet-stream', async () => {
    const h = await harness();
    await createForm(h, formXml(W));
    await uploadOk(h, W, 'goodtwo.mp3', mp3());
    await uploadOk(h, W, 'goodone.csv', csv());
    const a = await h.get(draftAtt(h, W, 'goodtwo.mp3'), { as: 'alice' });
    expect(a.headers.get('content-type')).toBe('audio/mpeg');
    expect(new Uint8Array(await a.arrayBuffer())).toEqual(mp3());
    const b = await h.get(draftAtt(h, W, 'goodone.csv'), { as: 'alice' });
    expect(b.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    await b.arrayBuffer();

    const odd = formXml(W).replace('<data id="withAttachments">', '<data id="oddExt">').replace('jr://file/goodone.csv', 'jr://file/goodone.xyz');
    await createForm(h, odd);
    expect((await json<Json[]>(await h.get(draftAtt(h, 'oddExt'), { as: 'alice' }))).map((x) => x.name)).toEqual(['goodone.xyz', 'goodtwo.mp3']);
    await uploadOk(h, 'oddExt', 'goodone.xyz', csv());
    const c = await h.get(draftAtt(h, 'oddExt', 'goodone.xyz'), { as: 'alice' });
    expect(c.headers.get('content-type')).toBe('application/octet-stream');
    expect(c.headers.get('content-disposition')).toBe(`attachment; filename="goodone.xyz"; filename*=UTF-8''goodone.xyz`);
    await c.arrayBuffer();
  });

  test('the same bytes uploaded for two forms are stored once', async () => {
    const h = await harness();
    const [before] = await h.db.select({ n: count() }).from(blobs);
    await createForm(h, formXml(W));
    await createForm(h, withAttachmentsAs('withAttachmentsToo'));
    const one = await uploadOk(h, W, 'goodone.csv', csv(), 'text/csv');
    const two = await uploadOk(h, 'withAttachmentsToo', 'goodone.csv', csv(), 'text/plain');
    expect(two.hash).toBe(one.hash);
    const rows = await h.db.select().from(blobs).where(eq(blobs.sha, blobKey(csv())));
    expect(rows).toHaveLength(1);
    const [after] = await h.db.select({ n: count() }).from(blobs);
    expect(after!.n).toBe(before!.n + 1);
    const atts = await h.db.select().from(formAttachments).where(eq(formAttachments.name, 'goodone.csv'));
    expect(new Set(atts.map((a) => a.blobId))).toEqual(new Set([rows[0]!.id]));
    // each keeps the type it was uploaded with
    expect((await h.get(draftAtt(h, 'withAttachmentsToo', 'goodone.csv'), { as: 'alice' })).headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect((await h.get(draftAtt(h, W, 'goodone.csv'), { as: 'alice' })).headers.get('content-type')).toBe('text/csv; charset=utf-8');
  });

  test('DELETE clears the file: exists false; download 404.1; audit form.attachment.update', async () => {
    const h = await harness();
    await createForm(h, formXml(W));
    const uploaded = await uploadOk(h, W, 'goodone.csv', csv(), 'text/csv');
    const res = await h.delete(draftAtt(h, W, 'goodone.csv'), { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    const [first] = await json<Json[]>(await h.get(draftAtt(h, W), { as: 'alice' }));
    expect(first).toMatchObject({ name: 'goodone.csv', type: 'file', hash: null, exists: false, blobExists: false, datasetExists: false });
    expect(first).not.toHaveProperty('size');
    expect(first.updatedAt).toMatch(isoPattern);
    await expectProblem(await h.get(draftAtt(h, W, 'goodone.csv'), { as: 'alice' }), 404.1);
    const rows = await h.audits();
    expect(rows.map((r) => r.action)).toEqual(['form.create', 'form.attachment.update', 'form.attachment.update']);
    expect(rows[2]!.details).toMatchObject({ name: 'goodone.csv', newBlobId: null });
    expect(uploaded.exists).toBe(true);
  });

  test('a name the form does not expect: 404.1 (POST, GET, DELETE, PATCH); nothing stored', async () => {
    const h = await harness();
    await createForm(h, formXml(W));
    const [before] = await h.db.select({ n: count() }).from(blobs);
    await expectProblem(await upload(h, W, 'other.csv', csv(), 'text/csv'), 404.1);
    await expectProblem(await h.get(draftAtt(h, W, 'other.csv'), { as: 'alice' }), 404.1);
    await expectProblem(await h.delete(draftAtt(h, W, 'other.csv'), { as: 'alice' }), 404.1);
    await expectProblem(await h.patch(draftAtt(h, W, 'other.csv'), { as: 'alice', body: { dataset: false } }), 404.1);
    // expected but not uploaded
    await expectProblem(await h.get(draftAtt(h, W, 'goodone.csv'), { as: 'alice' }), 404.1);
    const [after] = await h.db.select({ n: count() }).from(blobs);
    expect(after!.n).toBe(before!.n);
    expect(await h.auditActions()).toEqual(['form.create']);
  });

  test('PATCH {dataset} → 404.1 without a Dataset named after the file (either way, as Central); bad bodies → 400', async () => {
    const h = await harness();
    await createForm(h, formXml(W));
    await expectProblem(await h.patch(draftAtt(h, W, 'goodone.csv'), { as: 'alice', body: { dataset: true } }), 404.1);
    await expectProblem(await h.patch(draftAtt(h, W, 'goodone.csv'), { as: 'alice', body: { dataset: false } }), 404.1);
    await expectProblem(await h.patch(draftAtt(h, W, 'goodone.csv'), { as: 'alice', body: {} }), 400.2);
    await expectProblem(await h.patch(draftAtt(h, W, 'goodone.csv'), { as: 'alice', body: { dataset: 'yes' } }), 400.11);
  });

  test('rights: bob may upload and read; chelsea 403.1; anonymous 401.2', async () => {
    const h = await harness();
    await createForm(h, formXml(W));
    const res = await upload(h, W, 'goodone.csv', csv(), 'text/csv', 'bob');
    expect(res.status).toBe(200);
    expect((await h.get(draftAtt(h, W, 'goodone.csv'), { as: 'bob' })).status).toBe(200);
    await expectProblem(await upload(h, W, 'goodone.csv', csv(), 'text/csv', 'chelsea'), 403.1);
    await expectProblem(await h.get(draftAtt(h, W), { as: 'chelsea' }), 403.1);
    await expectProblem(await h.get(draftAtt(h, W, 'goodone.csv'), { as: 'chelsea' }), 403.1);
    await expectProblem(await h.delete(draftAtt(h, W, 'goodone.csv'), { as: 'chelsea' }), 403.1);
    await expectProblem(await h.post(draftAtt(h, W, 'goodone.csv'), { body: csv() }), 401.2);
    expect(await h.auditActions()).toEqual(['form.create', 'form.attachment.update']);
  });
});

describe('published attachments', () => {
  test('after publish F/attachments lists the files as Central does, and they download', async () => {
    const h = await harness();
    await createForm(h, formXml(W));
    await uploadOk(h, W, 'goodone.csv', csv(), 'text/csv');
    await uploadOk(h, W, 'goodtwo.mp3', mp3(), 'audio/mpeg');
    const draftList = await json<Json[]>(await h.get(draftAtt(h, W), { as: 'alice' }));
    await publish(h, W);
    const res = await h.get(`${F(h, W)}/attachments`, { as: 'bob' });
    expect(res.status).toBe(200);
    const list = await json<Json[]>(res);
    expect(list).toEqual(draftList);
    const central = centralApi<Json[]>(W, 'form-attachments');
    expect(JSON.stringify(list.map((a) => ({ ...a, updatedAt: null })))).toBe(JSON.stringify(central.map((a) => ({ ...a, updatedAt: null }))));
    expect(await json(await h.get(`${F(h, W)}/versions/___/attachments`, { as: 'alice' }))).toEqual(list);

    const file = await h.get(`${F(h, W)}/attachments/goodtwo.mp3`, { as: 'alice' });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('audio/mpeg');
    expect(file.headers.get('etag')).toBe(`"${md5(mp3())}"`);
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(mp3());
    const v = await h.get(`${F(h, W)}/versions/___/attachments/goodone.csv`, { as: 'alice' });
    expect(new Uint8Array(await v.arrayBuffer())).toEqual(csv());
    expect((await h.get(`${F(h, W)}/attachments/goodone.csv`, { as: 'alice', headers: { 'If-None-Match': `"${md5(csv())}"` } })).status).toBe(304);
    await expectProblem(await h.get(`${F(h, W)}/attachments/nope.csv`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, W)}/attachments`, { as: 'chelsea' }), 403.1);
  });

  test('never published: F/attachments answers the draft\'s, for form.update only (Central\'s AnyVersion)', async () => {
    const h = await harness();
    await createForm(h, formXml(W));
    const list = await json<Json[]>(await h.get(`${F(h, W)}/attachments`, { as: 'alice' }));
    expect(list.map((a) => a.name)).toEqual(['goodone.csv', 'goodtwo.mp3']);
    await expectProblem(await h.get(`${F(h, W)}/attachments`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.get(`${F(h, 'nope')}/attachments`, { as: 'alice' }), 404.1);
  });

  test('a new draft carries uploaded matching attachments over; changing it leaves the published one alone', async () => {
    const h = await harness();
    await createForm(h, formXml(W));
    await uploadOk(h, W, 'goodone.csv', csv(), 'text/csv');
    await publish(h, W);
    await setDraft(h, W, formXml(W).replace('<data id="withAttachments">', '<data id="withAttachments" version="2">'));
    const list = await json<Json[]>(await h.get(draftAtt(h, W), { as: 'alice' }));
    expect(list[0]).toMatchObject({ name: 'goodone.csv', exists: true, blobExists: true, hash: md5(csv()), size: 55 });
    expect(list[1]).toEqual(empty('goodtwo.mp3', 'audio'));
    const carried = await h.get(draftAtt(h, W, 'goodone.csv'), { as: 'alice' });
    expect(carried.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    await carried.arrayBuffer();

    // replacing the draft's file does not touch the published version
    const other = new TextEncoder().encode('name,label\nx,X\n');
    await uploadOk(h, W, 'goodone.csv', other, 'text/csv');
    const published = await json<Json[]>(await h.get(`${F(h, W)}/attachments`, { as: 'alice' }));
    expect(published[0].hash).toBe(md5(csv()));
    // and the draft copy of the published definition (empty body) carries the published files
    await h.delete(`${F(h, W)}/draft`, { as: 'alice' });
    await setDraft(h, W);
    const copied = await json<Json[]>(await h.get(draftAtt(h, W), { as: 'alice' }));
    expect(copied[0]).toMatchObject({ exists: true, hash: md5(csv()) });
  });
});

describe('upload size limit (MAX_UPLOAD_BYTES)', () => {
  test('an attachment over the limit is refused with 400.36 and nothing is stored', async () => {
    const xml = new TextEncoder().encode(readFileSync(new URL('../../../../shared/fixtures/forms/withAttachments.xml', import.meta.url), 'utf8'));
    const h = await harness({ MAX_UPLOAD_BYTES: xml.byteLength });
    expect((await h.post(`/v1/projects/${h.projectId}/forms`, { as: 'bob', body: xml, headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    const res = await h.post(`/v1/projects/${h.projectId}/forms/withAttachments/draft/attachments/goodone.csv`, {
      as: 'bob', body: new Uint8Array(xml.byteLength + 1), headers: { 'Content-Type': 'text/csv' },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 400.36 });
    const list = await (await h.get(`/v1/projects/${h.projectId}/forms/withAttachments/draft/attachments`, { as: 'bob' })).json() as Array<{ name: string; exists: boolean }>;
    expect(list.find((a) => a.name === 'goodone.csv')!.exists).toBe(false);
  });
});
