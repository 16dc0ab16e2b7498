import { count, eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { actees, audits, formAttachments, formDefs, forms, keys } from '../../../drizzle/schema';
import { harness, json, type Harness } from '../../helpers/harness';
import {
  actorKeys, centralApi, centralError, createForm, expectCentralError, expectProblem, extended, F, fixtureBytes, formExtendedKeys,
  formKeys, formXml, isoPattern, md5, P, sha1, sha256, xmlHeaders, type Json,
} from './form-fixtures';

async function rowCounts(h: Harness) {
  const [f] = await h.db.select({ n: count() }).from(forms);
  const [d] = await h.db.select({ n: count() }).from(formDefs);
  const [a] = await h.db.select({ n: count() }).from(actees);
  const [au] = await h.db.select({ n: count() }).from(audits);
  return { forms: f!.n, defs: d!.n, actees: a!.n, audits: au!.n };
}

const upload = (h: Harness, body: string | Uint8Array, opts: { query?: string; headers?: Record<string, string>; as?: 'alice' | 'bob' | 'chelsea' | 'anonymous' } = {}) =>
  h.post(`${P(h)}/forms${opts.query ?? ''}`, { as: opts.as ?? 'alice', body, headers: opts.headers ?? xmlHeaders });

const simpleWithoutMeta = () =>
  formXml('simple')
    .replace(/\s*<meta>[\s\S]*?<\/meta>/, '')
    .replace(/\s*<bind nodeset="\/data\/meta\/instanceID"[^>]*\/>/, '');

describe('POST P/forms', () => {
  test('creates a draft by default: Central key order, values, hashes of the exact bytes, a Draft Token, audit form.create', async () => {
    const h = await harness();
    const bytes = fixtureBytes('forms/simple.xml');
    const res = await upload(h, bytes);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(formKeys);
    expect(body).toMatchObject({
      projectId: h.projectId, xmlFormId: 'simple', state: 'open', enketoId: null, enketoOnceId: null, updatedAt: null,
      webformsEnabled: true, keyId: null, version: '', name: 'Simple', publishedAt: null,
      hash: md5(bytes), sha: sha1(bytes), sha256: sha256(bytes),
    });
    // The fixture's bytes are the ones Central hashed (central-outputs/simple/api/form.json).
    const central = centralApi<Json>('simple', 'form');
    expect([body.hash, body.sha, body.sha256]).toEqual([central.hash, central.sha, central.sha256]);
    expect(body.createdAt).toMatch(isoPattern);

    const draft = await json(await h.get(`${F(h, 'simple')}/draft`, { as: 'alice' }));
    expect(Object.keys(draft)).toEqual(formKeys);
    expect(draft.draftToken).toMatch(/^[A-Za-z0-9!$]{64}$/);
    expect(draft).toMatchObject({ xmlFormId: 'simple', publishedAt: null, hash: md5(bytes) });

    const [row] = await h.db.select().from(forms).where(eq(forms.xmlFormId, 'simple'));
    expect(row).toMatchObject({ projectId: h.projectId, currentDefId: null, createdBy: h.ids.alice, draftToken: draft.draftToken, deletedAt: null });
    const [def] = await h.db.select().from(formDefs).where(eq(formDefs.id, row!.draftDefId!));
    expect(def).toMatchObject({ publishedAt: null, version: '', name: 'Simple', hash: md5(bytes) });
    expect(def!.xml).toBe(formXml('simple'));

    const rows = await h.audits();
    expect(rows.map((r) => r.action)).toEqual(['form.create']);
    expect(rows[0]).toMatchObject({ actorId: h.ids.alice, acteeId: row!.acteeId });
  });

  test('?publish=true publishes: publishedAt set, no draft, GET F equals the create response', async () => {
    const h = await harness();
    const body = await createForm(h, formXml('simple'), { publish: true });
    expect(body.publishedAt).toMatch(isoPattern);
    expect(body.draftToken).toBeNull();
    const got = await json(await h.get(F(h, 'simple'), { as: 'alice' }));
    expect(got).toEqual(body);
    expect(Object.keys(got)).toEqual(formKeys);
    await expectProblem(await h.get(`${F(h, 'simple')}/draft`, { as: 'alice' }), 404.1);
    const [row] = await h.db.select().from(forms).where(eq(forms.xmlFormId, 'simple'));
    expect(row!.draftDefId).toBeNull();
    expect(row!.draftToken).toBeNull();
    const [def] = await h.db.select().from(formDefs).where(eq(formDefs.id, row!.currentDefId!));
    expect(def!.publishedBy).toBe(h.ids.alice);
    expect(await h.auditActions()).toEqual(['form.create', 'form.update.publish']);
  });

  test('version from the XML, blank when absent; name from h:title, null without one', async () => {
    const h = await harness();
    expect(await createForm(h, formXml('withrepeat'), { publish: true })).toMatchObject({ xmlFormId: 'withrepeat', version: '1.0', name: null });
    const wa = await createForm(h, formXml('withAttachments'));
    expect(wa).toMatchObject({ xmlFormId: 'withAttachments', version: '', name: null });
    const enc = await createForm(h, formXml('encrypted'), { publish: true });
    expect(enc.version).toBe('working3');
    expect(enc.name).toBe('Encrypted');
  });

  test('encrypted.xml gets a keyId naming a keys row with its public key', async () => {
    const h = await harness();
    const body = await createForm(h, formXml('encrypted'), { publish: true });
    expect(Number.isInteger(body.keyId)).toBe(true);
    const [key] = await h.db.select().from(keys).where(eq(keys.id, body.keyId));
    const publicKey = /base64RsaPublicKey="([^"]+)"/.exec(formXml('encrypted'))![1]!;
    expect(key!.public).toBe(publicKey);
    expect(key!.managed).toBe(false);
    expect((await json(await h.get(F(h, 'encrypted'), { as: 'alice' }))).keyId).toBe(body.keyId);
  });

  test('a live form with the same xmlFormId: 409.3 with Central\'s body; nothing written', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    const before = await rowCounts(h);
    const res = await upload(h, formXml('simple'));
    const central = centralError('409.3-duplicate-form').body;
    const pid = String(h.projectId);
    await expectCentralError(res, '409.3-duplicate-form', {
      message: (central.message as string).replace('of 2,simple', `of ${pid},simple`),
      code: 409.3,
      details: { fields: ['projectId', 'xmlFormId'], values: [pid, 'simple'], table: 'forms' },
    });
    expect(await rowCounts(h)).toEqual(before);
    // a draft-only form blocks its xmlFormId as well
    await createForm(h, formXml('withrepeat'));
    expect((await upload(h, formXml('withrepeat'), { query: '?publish=true' })).status).toBe(409);
  });

  test('no meta group: 400.27 with Central\'s body; nothing written', async () => {
    const h = await harness();
    const before = await rowCounts(h);
    await expectCentralError(await upload(h, simpleWithoutMeta()), '400.27-form-without-meta');
    expect(await rowCounts(h)).toEqual(before);
  });

  test('a body that is not XML: 400.2 formId with Central\'s body', async () => {
    const h = await harness();
    const before = await rowCounts(h);
    await expectCentralError(await upload(h, 'this is not an xform at all'), '400.2-form-upload-not-xml');
    await expectCentralError(await upload(h, ''), '400.2-form-upload-not-xml');
    expect(await rowCounts(h)).toEqual(before);
  });

  test('truncated XML (inside the instance) and a DOCTYPE: 400.1; nothing written', async () => {
    const h = await harness();
    const before = await rowCounts(h);
    const xml = formXml('simple');
    const truncated = xml.slice(0, xml.indexOf('<name/>') + 3);
    const t = await expectProblem(await upload(h, truncated), 400.1);
    expect(t.details).toMatchObject({ format: 'xforms xml' });
    const d = await expectProblem(await upload(h, `<!DOCTYPE html [<!ENTITY x "y">]>\n${xml}`), 400.1);
    expect(d.details).toMatchObject({ format: 'xforms xml' });
    expect(await rowCounts(h)).toEqual(before);
  });

  test('a spreadsheet (XLSForm) content type with bytes that are no workbook: 400.15 (xlsform*.test.ts test real ones)', async () => {
    const h = await harness();
    const before = await rowCounts(h);
    await expectProblem(await upload(h, new Uint8Array([0x50, 0x4b, 3, 4]), {
      headers: { 'Content-Type': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
    }), 400.15);
    await expectProblem(await upload(h, new Uint8Array([0xd0, 0xcf]), { headers: { 'Content-Type': 'application/vnd.ms-excel' } }), 400.15);
    expect(await rowCounts(h)).toEqual(before);
  });

  test('deletedFormExists warning after deleting a form with the same id; accepted with ?ignoreWarnings=true', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    expect((await h.delete(F(h, 'simple'), { as: 'alice' })).status).toBe(200);
    const before = await rowCounts(h);
    const res = await upload(h, formXml('simple'));
    const body = await expectProblem(res, 400.16);
    expect(body).toEqual({
      message: centralError('400.16-draft-structure-changed').body.message,
      code: 400.16,
      details: { warnings: { workflowWarnings: [{ type: 'deletedFormExists', details: { xmlFormId: 'simple' } }] } },
    });
    expect(body.details.warnings.workflowWarnings[0]).toEqual({ type: 'deletedFormExists', details: { xmlFormId: 'simple' } });
    expect(await rowCounts(h)).toEqual(before);

    // Published at once, its version ('') would repeat one the deleted form published: 409.6, as
    // Central's check_form_version; as a draft (or another version) it is accepted.
    const again = await upload(h, formXml('simple'), { query: '?ignoreWarnings=true&publish=true' });
    expect(await expectProblem(again, 409.6)).toMatchObject({ details: { xmlFormId: 'simple', version: '' } });
    const ok = await upload(h, formXml('simple'), { query: '?ignoreWarnings=true' });
    expect(ok.status).toBe(200);
    expect((await json(ok)).xmlFormId).toBe('simple');
    const rows = await h.db.select().from(forms).where(eq(forms.xmlFormId, 'simple'));
    expect(rows).toHaveLength(2);
    expect(rows.filter((r) => r.deletedAt == null)).toHaveLength(1);
  });

  test('rights: bob (manager) may create; chelsea 403.1; anonymous 401.2; nothing written for them', async () => {
    const h = await harness();
    const before = await rowCounts(h);
    await expectProblem(await upload(h, formXml('simple'), { as: 'chelsea' }), 403.1);
    await expectProblem(await upload(h, formXml('simple'), { as: 'anonymous' }), 401.2);
    expect(await rowCounts(h)).toEqual(before);
    const body = await createForm(h, formXml('simple'), { as: 'bob' });
    expect(body.xmlFormId).toBe('simple');
    const rows = await h.audits();
    expect(rows.map((r) => [r.action, r.actorId])).toEqual([['form.create', h.ids.bob]]);
  });

  test('unknown project: 404.1', async () => {
    const h = await harness();
    await expectProblem(await h.post('/v1/projects/999999/forms', { as: 'alice', body: formXml('simple'), headers: xmlHeaders }), 404.1);
  });

  test('a form expecting attachments stores one row per expected file', async () => {
    const h = await harness();
    await createForm(h, formXml('withAttachments'));
    const [row] = await h.db.select().from(forms).where(eq(forms.xmlFormId, 'withAttachments'));
    const atts = await h.db.select().from(formAttachments).where(eq(formAttachments.formDefId, row!.draftDefId!));
    expect(atts.map((a) => [a.name, a.type, a.blobId]).sort()).toEqual([['goodone.csv', 'file', null], ['goodtwo.mp3', 'audio', null]]);
  });
});

describe('GET P/forms', () => {
  test('lists live forms in xmlFormId order, drafts with publishedAt null; Central key order', async () => {
    const h = await harness();
    const simple = await createForm(h, formXml('simple'), { publish: true });
    const repeat = await createForm(h, formXml('withrepeat'));
    const res = await h.get(`${P(h)}/forms`, { as: 'bob' });
    expect(res.status).toBe(200);
    const list = await json<Json[]>(res);
    expect(list.map((f) => f.xmlFormId)).toEqual(['simple', 'withrepeat']);
    for (const f of list) expect(Object.keys(f)).toEqual(formKeys);
    expect(list[0]).toEqual(simple);
    expect({ ...list[1], draftToken: null }).toEqual({ ...repeat, draftToken: null });
    expect(list[1].publishedAt).toBeNull();
  });

  test('extended: submissions 0, reviewStates, createdBy, entityRelated, ... in Central\'s order (no publishNotes)', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true, as: 'bob' });
    const list = await json<Json[]>(await h.get(`${P(h)}/forms`, { as: 'alice', headers: extended }));
    expect(list).toHaveLength(1);
    const f = list[0];
    expect(Object.keys(f)).toEqual(formExtendedKeys.filter((k) => k !== 'publishNotes'));
    expect(f).toMatchObject({
      xmlFormId: 'simple', submissions: 0, entityRelated: false, reviewStates: { received: 0, hasIssues: 0, edited: 0 },
      lastSubmission: null, excelContentType: null, publicLinks: 0,
    });
    expect(Object.keys(f.createdBy)).toEqual(actorKeys);
    expect(f.createdBy).toMatchObject({ id: h.ids.bob, type: 'user', displayName: expect.any(String), deletedAt: null });
  });

  test('entityRelated is true for a form declaring an entity list', async () => {
    const h = await harness();
    await createForm(h, formXml('simpleEntity'), { publish: true });
    const list = await json<Json[]>(await h.get(`${P(h)}/forms`, { as: 'alice', headers: extended }));
    expect(list[0].entityRelated).toBe(true);
  });

  test('chelsea 403.1; anonymous 401.2; unknown project 404.1', async () => {
    const h = await harness();
    await expectProblem(await h.get(`${P(h)}/forms`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.get(`${P(h)}/forms`), 401.2);
    await expectProblem(await h.get('/v1/projects/999999/forms', { as: 'alice' }), 404.1);
  });
});

describe('GET F', () => {
  test('plain and extended; publishNotes only for form.update holders', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    const plain = await json(await h.get(F(h, 'simple'), { as: 'bob' }));
    expect(Object.keys(plain)).toEqual(formKeys);
    const ext = await json(await h.get(F(h, 'simple'), { as: 'bob', headers: extended }));
    expect(Object.keys(ext)).toEqual(formExtendedKeys);
    expect(ext).toMatchObject({ ...plain, submissions: 0, publishNotes: null, createdBy: { id: h.ids.alice } });

    // a project viewer may read the form but not update it: no publishNotes
    expect((await h.post(`${P(h)}/assignments/viewer/${h.ids.chelsea}`, { as: 'alice' })).status).toBe(200);
    const viewer = await json(await h.get(F(h, 'simple'), { as: 'chelsea', headers: extended }));
    expect(viewer).not.toHaveProperty('publishNotes');
    expect(Object.keys(viewer)).toEqual(formExtendedKeys.filter((k) => k !== 'publishNotes'));
  });

  test('unknown form: 404.1 with Central\'s body; chelsea 403.1', async () => {
    const h = await harness();
    await expectCentralError(await h.get(F(h, 'nope'), { as: 'alice' }), '404.1-form-not-found');
    await createForm(h, formXml('simple'), { publish: true });
    await expectProblem(await h.get(F(h, 'simple'), { as: 'chelsea' }), 403.1);
  });

  test('GET F.xml is the uploaded file byte for byte, as application/xml', async () => {
    const h = await harness();
    for (const name of ['simple', 'withrepeat', 'withAttachments']) {
      const bytes = fixtureBytes(`forms/${name}.xml`);
      await createForm(h, bytes, { publish: true });
      const res = await h.get(`${F(h, name)}.xml`, { as: 'bob' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/xml/);
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes);
    }
  });

  test('GET F.xml of a never-published form: the draft\'s, for form.update only (Central\'s AnyVersion); F.xlsx of an XForm: 404.1', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    const draftXml = await h.get(`${F(h, 'simple')}.xml`, { as: 'alice' });
    expect(draftXml.status).toBe(200);
    expect(await draftXml.text()).toBe(formXml('simple'));
    await expectProblem(await h.get(`${F(h, 'simple')}.xml`, { as: 'chelsea' }), 403.1);
    await createForm(h, formXml('withrepeat'), { publish: true });
    await expectProblem(await h.get(`${F(h, 'withrepeat')}.xlsx`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, 'withrepeat')}.xls`, { as: 'alice' }), 404.1);
  });
});

describe('GET F/fields', () => {
  for (const name of ['simple', 'withrepeat', 'selectMultiple', 'binaryType']) {
    test(`${name}: equal to Central's fields.json and fields-odata.json`, async () => {
      const h = await harness();
      await createForm(h, formXml(name), { publish: true });
      const res = await h.get(`${F(h, name)}/fields`, { as: 'bob' });
      expect(res.status).toBe(200);
      const fields = await json(res);
      expect(JSON.stringify(fields)).toBe(JSON.stringify(centralApi(name, 'fields')));
      const odata = await json(await h.get(`${F(h, name)}/fields?odata=true`, { as: 'bob' }));
      expect(JSON.stringify(odata)).toBe(JSON.stringify(centralApi(name, 'fields-odata')));
    });
  }

  test('never published: the draft\'s fields (Central\'s AnyVersion)', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    const res = await h.get(`${F(h, 'simple')}/fields`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(JSON.stringify(await json(res))).toBe(JSON.stringify(centralApi('simple', 'fields')));
  });
});

describe('PATCH F', () => {
  test('state closing: 200 with the Form, updatedAt set, audit form.update', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    const res = await h.patch(F(h, 'simple'), { as: 'bob', body: { state: 'closing' } });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(formKeys);
    expect(body).toMatchObject({ xmlFormId: 'simple', state: 'closing' });
    expect(body.updatedAt).toMatch(isoPattern);
    expect((await json(await h.get(F(h, 'simple'), { as: 'alice' }))).state).toBe('closing');
    const [row] = await h.db.select().from(forms).where(eq(forms.xmlFormId, 'simple'));
    expect(row!.state).toBe('closing');
    const rows = await h.audits();
    expect(rows.map((r) => r.action)).toEqual(['form.create', 'form.update.publish', 'form.update']);
    expect(rows[2]!.details).toEqual({ data: { state: 'closing' } });

    const closed = await json(await h.patch(F(h, 'simple'), { as: 'alice', body: { state: 'closed' } }));
    expect(closed.state).toBe('closed');
    expect((await json(await h.patch(F(h, 'simple'), { as: 'alice', body: { state: 'open' } }))).state).toBe('open');
  });

  test('an unknown state: 400.8, nothing changed; chelsea 403.1', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    const body = await expectProblem(await h.patch(F(h, 'simple'), { as: 'alice', body: { state: 'sleeping' } }), 400.8);
    expect(body.details).toMatchObject({ field: 'state', value: 'sleeping' });
    await expectProblem(await h.patch(F(h, 'simple'), { as: 'chelsea', body: { state: 'closed' } }), 403.1);
    const [row] = await h.db.select().from(forms).where(eq(forms.xmlFormId, 'simple'));
    expect(row!.state).toBe('open');
    expect(row!.updatedAt).toBeNull();
    expect(await h.auditActions()).toEqual(['form.create', 'form.update.publish']);
  });
});

describe('DELETE F', () => {
  test('moves the form to the Trash: {success}, then 404.1; audit form.delete', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await expectProblem(await h.delete(F(h, 'simple'), { as: 'chelsea' }), 403.1);
    const res = await h.delete(F(h, 'simple'), { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    await expectProblem(await h.get(F(h, 'simple'), { as: 'alice' }), 404.1);
    await expectProblem(await h.delete(F(h, 'simple'), { as: 'alice' }), 404.1);
    const [row] = await h.db.select().from(forms).where(eq(forms.xmlFormId, 'simple'));
    expect(row!.deletedAt).toBeInstanceOf(Date);
    expect(await h.auditActions()).toEqual(['form.create', 'form.update.publish', 'form.delete']);
  });
});

describe('Project with forms', () => {
  test('extended project counts live forms', async () => {
    const h = await harness();
    const count0 = async () => (await json(await h.get(`/v1/projects/${h.projectId}`, { as: 'bob', headers: extended }))).forms as number;
    expect(await count0()).toBe(0);
    await createForm(h, formXml('simple'), { publish: true });
    await createForm(h, formXml('withrepeat'), { publish: true });
    expect(await count0()).toBe(2);
    const list = await json<Json[]>(await h.get('/v1/projects', { as: 'bob', headers: extended }));
    expect(list.find((p) => p.id === h.projectId).forms).toBe(2);
    await h.delete(F(h, 'withrepeat'), { as: 'alice' });
    expect(await count0()).toBe(1);
  });

  test('deep PUT with the full forms list sets states; a partial list is 501.2 and rolls back', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await createForm(h, formXml('withrepeat'), { publish: true });
    const partial = await h.put(`/v1/projects/${h.projectId}`, {
      as: 'alice', body: { name: 'Renamed', forms: [{ xmlFormId: 'simple', state: 'closed' }] },
    });
    await expectProblem(partial, 501.2);
    expect((await json(await h.get(F(h, 'simple'), { as: 'alice' }))).state).toBe('open');

    const res = await h.put(`/v1/projects/${h.projectId}`, {
      as: 'bob',
      body: { name: 'Default Project', forms: [{ xmlFormId: 'simple', state: 'closing' }, { xmlFormId: 'withrepeat', state: 'open' }] },
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ id: h.projectId, name: 'Default Project' });
    expect((await json(await h.get(F(h, 'simple'), { as: 'alice' }))).state).toBe('closing');
    expect((await json(await h.get(F(h, 'withrepeat'), { as: 'alice' }))).state).toBe('open');
    expect(await h.auditActions()).toEqual(['form.create', 'form.update.publish', 'form.create', 'form.update.publish', 'project.update', 'form.update']);
  });
});

describe('draftToken on a never-published form (Central: the create response carries it)', () => {
  test('POST P/forms without publish answers the draft token; GET F/draft shows the same; a published form shows null', async () => {
    const h = await harness();
    const res = await h.post(`/v1/projects/${h.projectId}/forms`, { as: 'bob', body: formXml('withAttachments'), headers: xmlHeaders });
    expect(res.status).toBe(200);
    const created = await json<{ draftToken: string | null; publishedAt: string | null }>(res);
    expect(created.publishedAt).toBeNull();
    expect(created.draftToken).toMatch(/^[A-Za-z0-9!$]{64}$/);
    const draft = await json<{ draftToken: string }>(await h.get(`/v1/projects/${h.projectId}/forms/withAttachments/draft`, { as: 'bob' }));
    expect(draft.draftToken).toBe(created.draftToken);
    const published = await json<{ draftToken: string | null }>(
      await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'bob', body: formXml('simple'), headers: xmlHeaders }));
    expect(published.draftToken).toBeNull();
  });
});

describe('GET /v1/projects?forms=true', () => {
  test('formList nests the forms each actor may see: all for the manager, published open ones for a Data Collector', async () => {
    const h = await harness();
    await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'bob', body: formXml('simple'), headers: xmlHeaders });
    await h.post(`/v1/projects/${h.projectId}/forms`, { as: 'bob', body: formXml('withrepeat'), headers: xmlHeaders }); // draft only
    const bobs = await json<Array<{ id: number; formList: Array<{ xmlFormId: string; publishedAt: string | null }> }>>(
      await h.get('/v1/projects?forms=true', { as: 'bob' }));
    const mine = bobs.find((p) => p.id === h.projectId)!;
    expect(mine.formList.map((f) => f.xmlFormId)).toEqual(['simple', 'withrepeat']);
    expect(mine.formList[0]).toMatchObject({ xmlFormId: 'simple', projectId: h.projectId });
    // Extended Form JSON (the home page shows the counts), as Central's list gives it.
    expect(Object.keys(mine.formList[0]!)).toEqual([
      ...formKeys, 'submissions', 'entityRelated', 'reviewStates', 'lastSubmission', 'excelContentType', 'publicLinks', 'createdBy',
    ]);
    await h.post(`/v1/projects/${h.projectId}/assignments/formfill/${h.ids.chelsea}`, { as: 'bob' });
    const chelseas = await json<Array<{ id: number; formList: Array<{ xmlFormId: string }> }>>(
      await h.get('/v1/projects?forms=true', { as: 'chelsea' }));
    expect(chelseas.find((p) => p.id === h.projectId)!.formList.map((f) => f.xmlFormId)).toEqual(['simple']);
  });
});
