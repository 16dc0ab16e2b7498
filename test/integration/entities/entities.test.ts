/**
 * Datasets and Entities through real HTTP Requests and the route table: Datasets from published
 * forms (dataset.create audits, drafts kept out, dataset-diff), the Dataset API, entities from
 * submissions (on receipt, on approval, entity.error) run through lib/jobs, the Entity API
 * (create, bulk, PATCH with baseVersion/force, conflicts and resolve, delete/restore, versions,
 * diffs, audits, CSV) and the role matrix (admin, manager, viewer, data collector, App User,
 * anonymous).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { harness, json, type As, type Harness } from '../../helpers/harness';
import { userWithRole } from '../../helpers/roles';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const XML = { 'Content-Type': 'application/xml' };
const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const D = (h: Harness, name = 'people') => `${P(h)}/datasets/${name}`;
const UUID = '12345678-1234-4123-8234-123456789abc';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function publish(h: Harness, form: string, as: As = 'alice', query = '?publish=true') {
  const res = await h.post(`${P(h)}/forms${query}`, { as, body: fixture(`forms/${form}.xml`), headers: XML });
  expect(res.status, await res.clone().text()).toBe(200);
}

const personXml = (instanceId: string, uuid: string, label: string, name = 'Alice', age = '88') => `<data xmlns:jr="http://openrosa.org/javarosa" xmlns:entities="http://www.opendatakit.org/xforms/entities" id="simpleEntity" version="1.0">
  <meta><instanceID>${instanceId}</instanceID><entities:entity dataset="people" id="uuid:${uuid}" create="1"><entities:label>${label}</entities:label></entities:entity></meta>
  <name>${name}</name><age>${age}</age><hometown>Toronto</hometown></data>`;

async function submit(h: Harness, xml: string, form = 'simpleEntity', as: As = 'alice') {
  const res = await h.post(`${P(h)}/forms/${form}/submissions`, { as, body: xml, headers: XML });
  expect(res.status, await res.clone().text()).toBe(200);
}

describe('Datasets from forms', () => {
  test('publishing an entity form creates the Dataset and its properties; audit dataset.create', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    const list = await json<Json[]>(await h.get(`${P(h)}/datasets`, { as: 'alice' }));
    expect(list).toEqual([expect.objectContaining({ name: 'people', projectId: h.projectId, approvalRequired: false, ownerOnly: false })]);
    const ds = await json<Json>(await h.get(D(h), { as: 'alice' }));
    expect(ds.properties.map((p: Json) => [p.name, p.odataName, p.forms])).toEqual([
      ['first_name', 'first_name', [{ xmlFormId: 'simpleEntity', name: 'simpleEntity' }]],
      ['age', 'age', [{ xmlFormId: 'simpleEntity', name: 'simpleEntity' }]],
    ]);
    expect(ds.sourceForms).toEqual([{ name: 'simpleEntity', xmlFormId: 'simpleEntity' }]);
    const created = (await h.audits()).find((a) => a.action === 'dataset.create');
    expect(created?.details).toEqual({ properties: ['first_name', 'age'] });
  });

  test('a Dataset only a draft defines stays out of the Dataset APIs; draft dataset-diff shows isNew', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity', 'alice', '');
    expect(await json(await h.get(`${P(h)}/datasets`, { as: 'alice' }))).toEqual([]);
    expect((await h.get(D(h), { as: 'alice' })).status).toBe(404);
    expect(await json(await h.get(`${P(h)}/forms/simpleEntity/draft/dataset-diff`, { as: 'alice' }))).toEqual([{
      name: 'people', isNew: true,
      properties: [{ name: 'first_name', isNew: true, inForm: true }, { name: 'age', isNew: true, inForm: true }],
    }]);
    expect((await h.post(`${P(h)}/forms/simpleEntity/draft/publish`, { as: 'alice' })).status).toBe(200);
    expect(await json(await h.get(`${P(h)}/forms/simpleEntity/dataset-diff`, { as: 'alice' }))).toEqual([{
      name: 'people', properties: [{ name: 'first_name', inForm: true }, { name: 'age', inForm: true }],
    }]);
  });

  test('invalid declarations answer 400.25; an old entities-version 400.16 unless ignoreWarnings', async () => {
    const h = await harness();
    const bad = fixture('forms/simpleEntity.xml').replace('entities:saveto="age"', 'entities:saveto="name"');
    const res = await h.post(`${P(h)}/forms`, { as: 'alice', body: bad, headers: XML });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: 400.25 });
    const old = await h.post(`${P(h)}/forms`, { as: 'alice', body: fixture('forms/simpleEntity2022.xml'), headers: XML });
    expect(await json(old)).toMatchObject({ code: 400.16, details: { warnings: { workflowWarnings: [expect.objectContaining({ type: 'oldEntityVersion' })] } } });
  });

  test('POST P/datasets, properties, PATCH settings; project counts and ?datasets=true', async () => {
    const h = await harness();
    const created = await json<Json>(await h.post(`${P(h)}/datasets`, { as: 'bob', body: { name: 'trees' } }));
    expect(created).toMatchObject({ name: 'trees', properties: [], sourceForms: [] });
    expect((await h.post(`${P(h)}/datasets`, { as: 'bob', body: { name: 'trees' } })).status).toBe(409);
    expect(await json(await h.post(`${P(h)}/datasets`, { as: 'bob', body: { name: '__bad' } }))).toMatchObject({ code: 400.8 });
    expect((await h.post(`${D(h, 'trees')}/properties`, { as: 'bob', body: { name: 'height' } })).status).toBe(200);
    expect(await json(await h.post(`${D(h, 'trees')}/properties`, { as: 'bob', body: { name: 'HEIGHT' } }))).toMatchObject({ code: 409.3 });
    const patched = await json<Json>(await h.patch(D(h, 'trees'), { as: 'bob', body: { approvalRequired: true } }));
    expect(patched).toMatchObject({ approvalRequired: true, properties: [expect.objectContaining({ name: 'height' })] });
    const project = await json<Json>(await h.get(P(h), { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(project.datasets).toBe(1);
    const projects = await json<Json[]>(await h.get('/v1/projects?datasets=true', { as: 'bob' }));
    expect(projects.find((p) => p.id === h.projectId).datasetList).toEqual([expect.objectContaining({ name: 'trees', entities: 0 })]);
    expect(await h.auditActions()).toEqual(expect.arrayContaining(['dataset.create', 'dataset.update']));
  });
});

describe('Entity lists as form attachments', () => {
  test('PATCH F/draft/attachments/people.csv { dataset: true } links the Dataset; it shows in linkedForms once published', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    await publish(h, 'consumeDatasets', 'alice', '');
    const A = `${P(h)}/forms/consumeDatasets/draft/attachments`;
    expect((await h.patch(`${A}/trees.csv`, { as: 'alice', body: { dataset: true } })).status).toBe(404);
    expect((await h.patch(`${A}/people.csv`, { as: 'alice', body: { dataset: true } })).status).toBe(200);
    expect((await json<Json[]>(await h.get(A, { as: 'alice' }))).find((a) => a.name === 'people.csv')).toMatchObject({ exists: true, datasetExists: true });
    expect((await json<Json>(await h.get(D(h), { as: 'alice' }))).draftLinkedForms).toEqual([{ name: expect.any(String), xmlFormId: 'consumeDatasets' }]);
    expect((await h.post(`${P(h)}/forms/consumeDatasets/draft/publish`, { as: 'alice' })).status).toBe(200);
    expect((await json<Json>(await h.get(D(h), { as: 'alice' }))).linkedForms).toEqual([{ name: expect.any(String), xmlFormId: 'consumeDatasets' }]);
  });
});

describe('Entities from submissions', () => {
  test('on receipt when approval is not required; the submission audits show entity.create', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    await submit(h, personXml('one', UUID, 'Alice (88)'));
    const entity = await json<Json>(await h.get(`${D(h)}/entities/${UUID}`, { as: 'alice' }));
    expect(entity).toMatchObject({ uuid: UUID, conflict: null, currentVersion: { label: 'Alice (88)', data: { first_name: 'Alice', age: '88' }, version: 1 } });
    const audits = await json<Json[]>(await h.get(`${P(h)}/forms/simpleEntity/submissions/one/audits`, { as: 'alice' }));
    expect(audits.map((a) => a.action)).toEqual(['entity.create', 'submission.create']);
    const csv = await (await h.get(`${D(h)}/entities.csv`, { as: 'alice' })).text();
    expect(csv.split('\n')[0]).toBe('__id,label,first_name,age,__createdAt,__creatorId,__creatorName,__updates,__updatedAt,__version');
    expect(csv).toContain(`${UUID},Alice (88),Alice,88,`);
  });

  test('with approvalRequired: nothing until approved; a duplicate uuid records entity.error and keeps the submission', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    expect((await h.patch(D(h), { as: 'alice', body: { approvalRequired: true } })).status).toBe(200);
    await submit(h, personXml('one', UUID, 'First'));
    expect(await json(await h.get(`${D(h)}/entities`, { as: 'alice' }))).toEqual([]);
    expect(await json(await h.patch(D(h), { as: 'alice', body: { approvalRequired: false } }))).toMatchObject({ code: 400.29 });
    expect((await h.patch(`${P(h)}/forms/simpleEntity/submissions/one`, { as: 'alice', body: { reviewState: 'approved' } })).status).toBe(200);
    expect((await json<Json[]>(await h.get(`${D(h)}/entities`, { as: 'alice' }))).map((e) => e.uuid)).toEqual([UUID]);
    await submit(h, personXml('two', UUID, 'Second'));
    expect((await h.patch(`${P(h)}/forms/simpleEntity/submissions/two`, { as: 'alice', body: { reviewState: 'approved' } })).status).toBe(200);
    const error = (await h.audits()).find((a) => a.action === 'entity.error');
    expect(error?.details).toMatchObject({ errorMessage: expect.stringContaining(UUID), problem: { problemCode: 409.3 } });
    // The entity work's rollback (to its savepoint, which goes out in the review's own round trip)
    // keeps the review and its audit.
    expect(await json(await h.get(`${P(h)}/forms/simpleEntity/submissions/two`, { as: 'alice' }))).toMatchObject({ instanceId: 'two', reviewState: 'approved' });
    expect((await h.audits()).filter((a) => a.action === 'submission.update').map((a) => (a.details as Json).instanceId)).toEqual(expect.arrayContaining(['one', 'two']));
  });

  test('an update form changes the entity; a stale base version makes a conflict', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    await publish(h, 'updateEntity');
    await submit(h, personXml('one', UUID, 'Alice'));
    const update = (id: string, base: string, age: string) => `<data xmlns:jr="http://openrosa.org/javarosa" xmlns:entities="http://www.opendatakit.org/xforms/entities" id="updateEntity" version="1.0">
      <meta><instanceID>${id}</instanceID><entities:entity dataset="people" id="uuid:${UUID}" update="1" baseVersion="${base}"/></meta>
      <name>Alicia</name><age>${age}</age></data>`;
    await submit(h, update('u1', '1', '89'), 'updateEntity');
    await submit(h, update('u2', '1', '90'), 'updateEntity');
    const entity = await json<Json>(await h.get(`${D(h)}/entities/${UUID}`, { as: 'alice' }));
    expect(entity).toMatchObject({ conflict: 'hard', currentVersion: { version: 3, baseVersion: 1, conflictingProperties: ['age'] } });
    const versions = await json<Json[]>(await h.get(`${D(h)}/entities/${UUID}/versions?relevantToConflict=true`, { as: 'alice' }));
    expect(versions.map((v) => [v.version, v.conflict, v.lastGoodVersion])).toEqual([[1, null, false], [2, null, true], [3, 'hard', false]]);
    const resolved = await json<Json>(await h.patch(`${D(h)}/entities/${UUID}?resolve=true&baseVersion=3`, { as: 'alice' }));
    expect(resolved.conflict).toBe(null);
  });
});

describe('Entity API', () => {
  test('create, PATCH with baseVersion / force, delete and restore, diffs, audits, creators', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    const created = await json<Json>(await h.post(`${D(h)}/entities`, { as: 'bob', body: { uuid: UUID, label: 'Johnny', data: { first_name: 'John', age: '22' } } }));
    expect(created).toMatchObject({ uuid: UUID, currentVersion: { label: 'Johnny', version: 1, dataReceived: { first_name: 'John', age: '22', label: 'Johnny' } } });
    expect(await json(await h.patch(`${D(h)}/entities/${UUID}`, { as: 'bob', body: { data: { age: '23' } } }))).toMatchObject({ code: 409.15 });
    const v2 = await json<Json>(await h.patch(`${D(h)}/entities/${UUID}?baseVersion=1`, { as: 'bob', body: { data: { age: '23' } } }));
    expect(v2.currentVersion).toMatchObject({ version: 2, baseVersion: 1, data: { first_name: 'John', age: '23' } });
    const v3 = await json<Json>(await h.patch(`${D(h)}/entities/${UUID}?force=true`, { as: 'bob', body: { label: 'J', data: { first_name: '' } } }));
    expect(v3.currentVersion).toMatchObject({ version: 3, label: 'J', data: { first_name: '', age: '23' } });
    expect(await json(await h.patch(`${D(h)}/entities/${UUID}?force=true`, { as: 'bob', body: { label: '' } }))).toMatchObject({ code: 400.8 });
    expect(await json(await h.patch(`${D(h)}/entities/${UUID}?force=true`, { as: 'bob', body: { data: { nope: 'x' } } }))).toMatchObject({ code: 400.28 });
    expect(await json(await h.patch(`${D(h)}/entities/${UUID}?force=true`, { as: 'bob', body: { data: { age: null } } }))).toMatchObject({ code: 400.11 });
    expect(await json(await h.get(`${D(h)}/entities/${UUID}/diffs`, { as: 'bob' }))).toEqual([
      [{ old: '22', new: '23', propertyName: 'age' }],
      [{ old: 'Johnny', new: 'J', propertyName: 'label' }, { old: 'John', new: '', propertyName: 'first_name' }],
    ]);
    expect((await json<Json[]>(await h.get(`${D(h)}/entities/creators`, { as: 'bob' }))).map((a) => a.displayName)).toEqual(['bob']);
    expect((await h.delete(`${D(h)}/entities/${UUID}`, { as: 'bob' })).status).toBe(200);
    expect((await h.get(`${D(h)}/entities/${UUID}`, { as: 'bob' })).status).toBe(404);
    expect((await json<Json[]>(await h.get(`${D(h)}/entities?deleted=true`, { as: 'bob' }))).length).toBe(1);
    expect((await h.post(`${D(h)}/entities/${UUID}/restore`, { as: 'bob' })).status).toBe(200);
    const audits = await json<Json[]>(await h.get(`${D(h)}/entities/${UUID}/audits`, { as: 'bob' }));
    expect(audits.map((a) => a.action)).toEqual(['entity.restore', 'entity.delete', 'entity.update.version', 'entity.update.version', 'entity.create']);
  });

  test('bulk create with a source; a uuid of a deleted entity answers 409.19', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    const res = await h.post(`${D(h)}/entities`, { as: 'alice', body: { source: { name: 'people.csv', size: 100 }, entities: [{ label: 'a' }, { label: 'b', data: { age: '3' } }] } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; bulk');
    expect((await json<Json[]>(await h.get(`${D(h)}/entities`, { as: 'alice' }))).length).toBe(2);
    expect((await h.auditActions()).filter((a) => a.startsWith('entity'))).toEqual(['entity.bulk.create']);
    await h.post(`${D(h)}/entities`, { as: 'alice', body: { uuid: UUID, label: 'x' } });
    await h.delete(`${D(h)}/entities/${UUID}`, { as: 'alice' });
    expect(await json(await h.post(`${D(h)}/entities`, { as: 'alice', body: { uuid: UUID, label: 'x' } }))).toMatchObject({ code: 409.19 });
  });

  test('role matrix: manager writes, viewer reads, data collector / App User / none get 403.1, anonymous 401.2', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    await h.post(`${D(h)}/entities`, { as: 'alice', body: { uuid: UUID, label: 'x' } });
    const viewer = await userWithRole(h, 'viewer', 'viewer@example.org');
    const collector = await userWithRole(h, 'formfill', 'collector@example.org');
    const appUser = await json<Json>(await h.post(`${P(h)}/app-users`, { as: 'bob', body: { displayName: 'Tablet' } }));
    const key: As = { key: appUser.token };
    for (const as of ['alice', 'bob', viewer] as As[]) {
      expect((await h.get(`${P(h)}/datasets`, { as })).status).toBe(200);
      expect((await h.get(`${D(h)}/entities/${UUID}`, { as })).status).toBe(200);
    }
    expect((await h.post(`${D(h)}/entities`, { as: viewer, body: { label: 'v' } })).status).toBe(403);
    expect((await h.post(`${D(h)}/entities`, { as: 'bob', body: { label: 'b' } })).status).toBe(200);
    for (const as of [collector, key, 'chelsea'] as As[]) {
      const res = await h.get(`${D(h)}/entities`, { as });
      expect(res.status).toBe(403);
      expect(await json(res)).toMatchObject({ code: 403.1 });
      expect((await h.get(`${P(h)}/datasets`, { as })).status).toBe(403);
    }
    const anon = await h.get(`${D(h)}/entities`, { as: 'anonymous' });
    expect(anon.status).toBe(401);
    expect(await json(anon)).toMatchObject({ code: 401.2 });
    expect((await h.get(`${P(h)}/datasets/nope/entities`, { as: 'alice' })).status).toBe(404);
  });
});
