import { count, eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { formDefs, forms } from '../../../drizzle/schema';
import { harness, json, type Harness } from '../../helpers/harness';
import {
  actorKeys, centralApi, createForm, expectCentralError, expectProblem, extended, F, fixtureBytes, fixtureText, formExtendedKeys,
  formKeys, formXml, isoPattern, md5, publish, setDraft, sha1, sha256, simpleVersioned, simpleWithoutAge, xmlHeaders, type Json,
} from './form-fixtures';

const getDraft = async (h: Harness, id: string): Promise<Json> => {
  const res = await h.get(`${F(h, id)}/draft`, { as: 'alice' });
  expect(res.status).toBe(200);
  return json(res);
};

async function formRow(h: Harness, xmlFormId: string) {
  const [row] = await h.db.select().from(forms).where(eq(forms.xmlFormId, xmlFormId));
  return row!;
}

async function defCount(h: Harness, formId: number): Promise<number> {
  const [r] = await h.db.select({ n: count() }).from(formDefs).where(eq(formDefs.formId, formId));
  return r!.n;
}

const deletedFieldsV1 = () => fixtureText('central-outputs/deletedFields/inputs/form-v1.xml');
const deletedFieldsV2 = () => fixtureText('central-outputs/deletedFields/inputs/form-v2.xml');

describe('POST F/draft', () => {
  test('a new XML creates a draft beside the published version; audit form.update.draft.set', async () => {
    const h = await harness();
    const published = await createForm(h, formXml('simple'), { publish: true });
    const v2 = simpleVersioned('2');
    await setDraft(h, 'simple', v2);
    const draft = await getDraft(h, 'simple');
    expect(Object.keys(draft)).toEqual(formKeys);
    expect(draft).toMatchObject({ xmlFormId: 'simple', version: '2', hash: md5(v2), sha: sha1(v2), sha256: sha256(v2), publishedAt: null, name: 'Simple' });
    expect(draft.draftToken).toMatch(/^[A-Za-z0-9!$]{64}$/);
    // the published form is unchanged
    const current = await json(await h.get(F(h, 'simple'), { as: 'alice' }));
    expect(current).toMatchObject({ version: '', hash: published.hash, publishedAt: published.publishedAt });
    const draftXml = await h.get(`${F(h, 'simple')}/draft.xml`, { as: 'alice' });
    expect(draftXml.headers.get('content-type')).toMatch(/^application\/xml/);
    expect(await draftXml.text()).toBe(v2);
    expect(await json(await h.get(`${F(h, 'simple')}/draft/fields`, { as: 'alice' }))).toEqual(centralApi('simple', 'fields'));

    const rows = await h.audits();
    expect(rows.map((r) => r.action)).toEqual(['form.create', 'form.update.publish', 'form.update.draft.set']);
    const row = await formRow(h, 'simple');
    expect(rows[2]).toMatchObject({ actorId: h.ids.alice, acteeId: row.acteeId, details: { newDraftDefId: row.draftDefId } });
  });

  test('an empty body without Content-Type copies the published definition', async () => {
    const h = await harness();
    const bytes = fixtureBytes('forms/withrepeat.xml');
    const published = await createForm(h, bytes, { publish: true });
    const res = await h.post(`${F(h, 'withrepeat')}/draft`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    const draft = await getDraft(h, 'withrepeat');
    expect(draft).toMatchObject({ version: published.version, hash: published.hash, sha256: published.sha256, publishedAt: null });
    const xml = await h.get(`${F(h, 'withrepeat')}/draft.xml`, { as: 'alice' });
    expect(new Uint8Array(await xml.arrayBuffer())).toEqual(bytes);
    const row = await formRow(h, 'withrepeat');
    expect(row.draftDefId).not.toBe(row.currentDefId);
    expect(await defCount(h, row.id)).toBe(2);
  });

  test('an empty body on a never-published form: 400.2 { field: xml } (nothing to copy), as Central', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    expect((await expectProblem(await h.post(`${F(h, 'simple')}/draft`, { as: 'alice' }), 400.2)).details).toEqual({ field: 'xml' });
  });

  test('replacing a draft keeps its Draft Token and deletes the old draft definition; audit form.update.draft.replace', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    const first = await getDraft(h, 'simple');
    const before = await formRow(h, 'simple');
    await setDraft(h, 'simple', simpleVersioned('2'));
    const second = await getDraft(h, 'simple');
    expect(second.draftToken).toBe(first.draftToken);
    expect(second.version).toBe('2');
    const after = await formRow(h, 'simple');
    expect(after.draftToken).toBe(first.draftToken);
    expect(after.draftDefId).not.toBe(before.draftDefId);
    expect(await h.db.select().from(formDefs).where(eq(formDefs.id, before.draftDefId!))).toEqual([]);
    expect(await defCount(h, after.id)).toBe(1);
    expect(await h.auditActions()).toEqual(['form.create', 'form.update.draft.replace']);
    // the token still reaches the draft
    const res = await h.get(`/v1/test/${encodeURIComponent(first.draftToken)}/projects/${h.projectId}/forms/simple/draft/formList`, {
      headers: { 'X-OpenRosa-Version': '1.0' },
    });
    expect(res.status).toBe(200);
  });

  test('dropping a field: 400.16 structureChanged with Central\'s body; accepted with ?ignoreWarnings=true', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    const row = await formRow(h, 'simple');
    await expectCentralError(await h.post(`${F(h, 'simple')}/draft`, { as: 'alice', body: simpleWithoutAge(), headers: xmlHeaders }), '400.16-draft-structure-changed');
    expect(await defCount(h, row.id)).toBe(1);
    expect((await formRow(h, 'simple')).draftDefId).toBeNull();
    await setDraft(h, 'simple', simpleWithoutAge(), '?ignoreWarnings=true');
    const fields = await json<Json[]>(await h.get(`${F(h, 'simple')}/draft/fields`, { as: 'alice' }));
    expect(fields.map((f) => f.path)).toEqual(['/meta', '/meta/instanceID', '/name']);
  });

  test('the deletedFields v2 (three fields removed) lists every removed path in the warning', async () => {
    const h = await harness();
    await createForm(h, deletedFieldsV1(), { publish: true });
    const body = await expectProblem(await h.post(`${F(h, 'deletedFields')}/draft`, { as: 'alice', body: deletedFieldsV2(), headers: xmlHeaders }), 400.16);
    expect(body.details.warnings.workflowWarnings).toHaveLength(1);
    expect(body.details.warnings.workflowWarnings[0].type).toBe('structureChanged');
    expect(body.details.warnings.workflowWarnings[0].details).toEqual(expect.arrayContaining(['age', 'details/colour', 'children/child/age']));
  });

  test('a field changing type int → date: 400.17 with Central\'s body, even with ignoreWarnings', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    const dated = formXml('simple').replace('<bind nodeset="/data/age" type="int"/>', '<bind nodeset="/data/age" type="date"/>');
    expect(dated).not.toBe(formXml('simple'));
    await expectCentralError(await h.post(`${F(h, 'simple')}/draft`, { as: 'alice', body: dated, headers: xmlHeaders }), '400.17-field-type-conflict');
    await expectCentralError(
      await h.post(`${F(h, 'simple')}/draft?ignoreWarnings=true`, { as: 'alice', body: dated, headers: xmlHeaders }), '400.17-field-type-conflict');
    // int → string is allowed
    await setDraft(h, 'simple', formXml('simple').replace('<bind nodeset="/data/age" type="int"/>', '<bind nodeset="/data/age" type="string"/>'));
  });

  test('a different xmlFormId: 400.8; no meta accepted (as Central, only new forms need it); not XML: 400.2; a spreadsheet that is no workbook: 400.15', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    const body = await expectProblem(await h.post(`${F(h, 'simple')}/draft`, { as: 'alice', body: formXml('withrepeat'), headers: xmlHeaders }), 400.8);
    expect(body.details).toMatchObject({ field: 'xmlFormId', value: 'withrepeat' });
    const noMeta = formXml('simple').replace(/\s*<meta>[\s\S]*?<\/meta>/, '').replace(/\s*<bind nodeset="\/data\/meta\/instanceID"[^>]*\/>/, '');
    await expectProblem(await h.post(`${F(h, 'simple')}/draft`, { as: 'alice', body: 'nope', headers: xmlHeaders }), 400.2);
    await expectProblem(await h.post(`${F(h, 'simple')}/draft`, {
      as: 'alice', body: new Uint8Array([0x50, 0x4b]), headers: { 'Content-Type': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
    }), 400.15);
    expect((await formRow(h, 'simple')).draftDefId).toBeNull();
    expect(await h.auditActions()).toEqual(['form.create', 'form.update.publish']);
    expect((await h.post(`${F(h, 'simple')}/draft?ignoreWarnings=true`, { as: 'alice', body: noMeta, headers: xmlHeaders })).status).toBe(200);
  });

  test('rights: bob may set a draft; chelsea 403.1; anonymous 401.2; unknown form 404.1', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await expectProblem(await h.post(`${F(h, 'simple')}/draft`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.post(`${F(h, 'simple')}/draft`), 401.2);
    await expectProblem(await h.post(`${F(h, 'nope')}/draft`, { as: 'alice' }), 404.1);
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'bob' })).status).toBe(200);
    await expectProblem(await h.get(`${F(h, 'simple')}/draft`, { as: 'chelsea' }), 403.1);
    expect((await h.get(`${F(h, 'simple')}/draft`, { as: 'bob' })).status).toBe(200);
  });
});

describe('POST F/draft/publish', () => {
  test('publishes the first draft; the token ends; audit form.update.publish', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    await publish(h, 'simple');
    const form = await json(await h.get(F(h, 'simple'), { as: 'alice' }));
    expect(form.publishedAt).toMatch(isoPattern);
    expect(form.updatedAt).toMatch(isoPattern);
    await expectProblem(await h.get(`${F(h, 'simple')}/draft`, { as: 'alice' }), 404.1);
    const row = await formRow(h, 'simple');
    expect(row).toMatchObject({ draftDefId: null, draftToken: null });
    const rows = await h.audits();
    expect(rows.map((r) => r.action)).toEqual(['form.create', 'form.update.publish']);
    expect(rows[1]!.details).toEqual({ oldDefId: null, newDefId: row.currentDefId });
  });

  test('?version=2.0 rewrites the version: GET F.xml shows version="2.0" with a new hash', async () => {
    const h = await harness();
    const first = await createForm(h, formXml('simple'), { publish: true });
    await setDraft(h, 'simple');
    await publish(h, 'simple', '?version=2.0');
    const form = await json(await h.get(F(h, 'simple'), { as: 'alice' }));
    expect(form.version).toBe('2.0');
    const xml = await (await h.get(`${F(h, 'simple')}.xml`, { as: 'alice' })).text();
    expect(xml).toMatch(/<data id="simple"[^>]* version="2\.0"/);
    expect(form.hash).toBe(md5(xml));
    expect(form.sha).toBe(sha1(xml));
    expect(form.sha256).toBe(sha256(xml));
    expect(form.hash).not.toBe(first.hash);
    const versions = await json<Json[]>(await h.get(`${F(h, 'simple')}/versions`, { as: 'alice' }));
    expect(versions.map((v) => v.version)).toEqual(['2.0', '']);
  });

  test('X-Action-Notes become publishNotes in GET F extended and GET F/versions extended', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    await publish(h, 'simple', '', { 'X-Action-Notes': encodeURIComponent('First release — with notes') });
    const ext = await json(await h.get(F(h, 'simple'), { as: 'bob', headers: extended }));
    expect(Object.keys(ext)).toEqual(formExtendedKeys);
    expect(ext.publishNotes).toBe('First release — with notes');
    const versions = await json<Json[]>(await h.get(`${F(h, 'simple')}/versions`, { as: 'bob', headers: extended }));
    expect(versions).toHaveLength(1);
    expect(versions[0]).toMatchObject({ publishNotes: 'First release — with notes', publishedBy: { id: h.ids.alice, type: 'user' } });
    expect(Object.keys(versions[0].publishedBy)).toEqual(actorKeys);
    const [audit] = (await h.audits()).filter((r) => r.action === 'form.update.publish');
    expect(audit!.notes).toBe('First release — with notes');
  });

  test('publishing the same version twice: 409.6 with Central\'s body; nothing changes', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await setDraft(h, 'simple');
    const before = await formRow(h, 'simple');
    await expectCentralError(await h.post(`${F(h, 'simple')}/draft/publish`, { as: 'alice' }), '409.6-publish-same-version');
    const after = await formRow(h, 'simple');
    expect(after).toMatchObject({ currentDefId: before.currentDefId, draftDefId: before.draftDefId, draftToken: before.draftToken });
    const [draft] = await h.db.select().from(formDefs).where(eq(formDefs.id, after.draftDefId!));
    expect(draft!.publishedAt).toBeNull();
    // a new version is accepted
    await publish(h, 'simple', '?version=2');
  });

  test('no draft: 404.1; chelsea 403.1', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await expectProblem(await h.post(`${F(h, 'simple')}/draft/publish`, { as: 'alice' }), 404.1);
    await setDraft(h, 'simple', simpleVersioned('3'));
    await expectProblem(await h.post(`${F(h, 'simple')}/draft/publish`, { as: 'chelsea' }), 403.1);
  });
});

describe('DELETE F/draft', () => {
  test('with a published version: the draft goes, its token then gives 404.4; audit form.update.draft.delete', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await setDraft(h, 'simple', simpleVersioned('2'));
    const { draftToken } = await getDraft(h, 'simple');
    const formList = `/v1/test/${encodeURIComponent(draftToken)}/projects/${h.projectId}/forms/simple/draft/formList`;
    const openRosa = { 'X-OpenRosa-Version': '1.0' };
    expect((await h.get(formList, { headers: openRosa })).status).toBe(200);
    const draftDefId = (await formRow(h, 'simple')).draftDefId!;

    const res = await h.delete(`${F(h, 'simple')}/draft`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    await expectProblem(await h.get(`${F(h, 'simple')}/draft`, { as: 'alice' }), 404.1);
    expect((await json(await h.get(F(h, 'simple'), { as: 'alice' }))).version).toBe('');
    expect(await formRow(h, 'simple')).toMatchObject({ draftDefId: null, draftToken: null });
    expect(await h.db.select().from(formDefs).where(eq(formDefs.id, draftDefId))).toEqual([]);

    const gone = await h.get(formList, { headers: openRosa });
    expect(gone.status).toBe(404);
    expect(gone.headers.get('content-type')).toMatch(/^text\/xml/);
    const central = JSON.parse(fixtureText('central-outputs/_errors/404.4-draft-test-token-invalid.json')) as { body: string };
    const message = /<message nature="error">([^<]*)<\/message>/.exec(central.body)![1]!;
    expect(await gone.text()).toContain(message);

    const rows = await h.audits();
    expect(rows.map((r) => r.action)).toEqual(['form.create', 'form.update.publish', 'form.update.draft.set', 'form.update.draft.delete']);
    expect(rows[3]).toMatchObject({ actorId: h.ids.bob, details: { oldDraftDefId: draftDefId } });
  });

  test('never published: 409.7 with Central\'s body; the draft stays', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    await expectCentralError(await h.delete(`${F(h, 'simple')}/draft`, { as: 'alice' }), '409.7-delete-draft-unpublished');
    expect((await getDraft(h, 'simple')).xmlFormId).toBe('simple');
    expect(await h.auditActions()).toEqual(['form.create']);
  });

  test('no draft: 404.1; chelsea 403.1', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await expectProblem(await h.delete(`${F(h, 'simple')}/draft`, { as: 'alice' }), 404.1);
    await setDraft(h, 'simple');
    await expectProblem(await h.delete(`${F(h, 'simple')}/draft`, { as: 'chelsea' }), 403.1);
  });
});

describe('Published versions', () => {
  async function twoVersions(h: Harness) {
    await createForm(h, deletedFieldsV1(), { publish: true });
    await setDraft(h, 'deletedFields', deletedFieldsV2(), '?ignoreWarnings=true');
    await publish(h, 'deletedFields', '', { 'X-Action-Notes': 'v2' });
  }

  test('GET F/versions: newest first, Form JSON; extended adds publishedBy and publishNotes', async () => {
    const h = await harness();
    await twoVersions(h);
    const res = await h.get(`${F(h, 'deletedFields')}/versions`, { as: 'bob' });
    expect(res.status).toBe(200);
    const list = await json<Json[]>(res);
    expect(list.map((v) => v.version)).toEqual(['2', '1']);
    for (const v of list) {
      expect(Object.keys(v)).toEqual(formKeys);
      expect(v.publishedAt).toMatch(isoPattern);
      expect(v.draftToken).toBeNull();
    }
    expect(list[0].hash).toBe(md5(deletedFieldsV2()));
    expect(list[1].hash).toBe(md5(deletedFieldsV1()));
    const ext = await json<Json[]>(await h.get(`${F(h, 'deletedFields')}/versions`, { as: 'bob', headers: extended }));
    expect(ext.map((v) => v.publishNotes)).toEqual(['v2', null]);
    for (const v of ext) {
      expect(v.publishedBy).toMatchObject({ id: h.ids.alice, type: 'user' });
      expect(Object.keys(v.publishedBy)).toEqual(actorKeys);
      expect(v.submissions).toBe(0);
    }
  });

  test('one version: JSON, .xml, /fields; unknown version 404.1', async () => {
    const h = await harness();
    await twoVersions(h);
    const v1 = await json(await h.get(`${F(h, 'deletedFields')}/versions/1`, { as: 'alice' }));
    expect(Object.keys(v1)).toEqual(formKeys);
    expect(v1).toMatchObject({ xmlFormId: 'deletedFields', version: '1', hash: md5(deletedFieldsV1()) });
    const xml = await h.get(`${F(h, 'deletedFields')}/versions/1.xml`, { as: 'alice' });
    expect(xml.status).toBe(200);
    expect(xml.headers.get('content-type')).toMatch(/^application\/xml/);
    expect(await xml.text()).toBe(deletedFieldsV1());
    const f1 = await json<Json[]>(await h.get(`${F(h, 'deletedFields')}/versions/1/fields`, { as: 'alice' }));
    expect(f1.map((f) => f.path)).toContain('/age');
    expect(Object.keys(f1[0])).toEqual(['path', 'name', 'type', 'binary', 'selectMultiple']);
    const f2 = await json<Json[]>(await h.get(`${F(h, 'deletedFields')}/versions/2/fields`, { as: 'alice' }));
    expect(f2.map((f) => f.path)).not.toContain('/age');
    expect(f2).toEqual(await json(await h.get(`${F(h, 'deletedFields')}/fields`, { as: 'alice' })));
    expect(await json(await h.get(`${F(h, 'deletedFields')}/versions/1/attachments`, { as: 'alice' }))).toEqual([]);
    await expectProblem(await h.get(`${F(h, 'deletedFields')}/versions/3`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, 'deletedFields')}/versions/3.xml`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, 'deletedFields')}/versions/3/fields`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, 'deletedFields')}/versions/___`, { as: 'alice' }), 404.1);
  });

  test('a blank version is addressed as ___; a draft is not a version', async () => {
    const h = await harness();
    const bytes = fixtureBytes('forms/simple.xml');
    const created = await createForm(h, bytes, { publish: true });
    await setDraft(h, 'simple', simpleVersioned('draft-only'));
    const list = await json<Json[]>(await h.get(`${F(h, 'simple')}/versions`, { as: 'alice' }));
    const same = { ...created, updatedAt: expect.any(String) }; // the new draft touched the form
    expect(list).toEqual([same]);
    expect(await json(await h.get(`${F(h, 'simple')}/versions/___`, { as: 'alice' }))).toEqual(same);
    const xml = await h.get(`${F(h, 'simple')}/versions/___.xml`, { as: 'alice' });
    expect(new Uint8Array(await xml.arrayBuffer())).toEqual(bytes);
    expect(await json(await h.get(`${F(h, 'simple')}/versions/___/fields`, { as: 'alice' }))).toEqual(centralApi('simple', 'fields'));
    await expectProblem(await h.get(`${F(h, 'simple')}/versions/draft-only`, { as: 'alice' }), 404.1);
  });

  test('rights: chelsea 403.1; unknown form 404.1', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await expectProblem(await h.get(`${F(h, 'simple')}/versions`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.get(`${F(h, 'simple')}/versions/___`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.get(`${F(h, 'nope')}/versions`, { as: 'alice' }), 404.1);
  });
});
