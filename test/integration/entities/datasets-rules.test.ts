/**
 * Datasets as Central keeps them, through real HTTP Requests: entity counts per Dataset in the
 * project listings, entity declarations Central refuses or ignores at form upload, case-only name
 * clashes of Datasets and properties (409), the form and dataset audit sequence, pending
 * submissions when approval is turned off, and the entity facts in submission audits.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, test } from 'vitest';
import { harness, json, type Harness } from '../../helpers/harness';
import { testDatabase } from '../../setup/db';
import { workbook } from '../../helpers/xlsform-sheets';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const XML = { 'Content-Type': 'application/xml' };
const P = (h: Harness) => `/v1/projects/${h.projectId}`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

// The shared test database is made once, outside the first test's time limit.
beforeAll(() => testDatabase());

async function upload(h: Harness, xml: string, query = '?publish=true') {
  return h.post(`${P(h)}/forms${query}`, { as: 'alice', body: xml, headers: XML });
}

const personXml = (form: string, dataset: string, instanceId: string, uuid: string) => `<data xmlns:jr="http://openrosa.org/javarosa" xmlns:entities="http://www.opendatakit.org/xforms/entities" id="${form}" version="1.0">
  <meta><instanceID>${instanceId}</instanceID><entities:entity dataset="${dataset}" id="uuid:${uuid}" create="1"><entities:label>L ${instanceId}</entities:label></entities:entity></meta>
  <name>Alice</name><age>88</age><hometown>Toronto</hometown></data>`;

describe('Dataset counts', () => {
  test('each Dataset counts its own entities (list, extended list and ?datasets=true)', async () => {
    const h = await harness();
    const form = fixture('forms/simpleEntity.xml');
    expect((await upload(h, form)).status).toBe(200);
    expect((await upload(h, form.replace(/simpleEntity/g, 'simpleEntity2').replace(/people/g, 'trees'))).status).toBe(200);
    for (const [f, ds, id, uuid] of [
      ['simpleEntity', 'people', 'one', '12345678-1234-4123-8234-123456789abc'],
      ['simpleEntity', 'people', 'two', '12345678-1234-4123-8234-123456789aaa'],
      ['simpleEntity2', 'trees', 'one', '12345678-1234-4123-8234-123456789000'],
    ] as const) {
      expect((await h.post(`${P(h)}/forms/${f}/submissions`, { as: 'alice', body: personXml(f, ds, id, uuid), headers: XML })).status).toBe(200);
    }
    const list = await json<Json[]>(await h.get(`${P(h)}/datasets`, { as: 'alice', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(Object.fromEntries(list.map((d) => [d.name, d.entities]))).toEqual({ people: 2, trees: 1 });
    const projects = await json<Json[]>(await h.get('/v1/projects?datasets=true', { as: 'alice', headers: { 'X-Extended-Metadata': 'true' } }));
    const mine = projects.find((p) => p.id === h.projectId);
    expect(Object.fromEntries(mine.datasetList.map((d: Json) => [d.name, d.entities]))).toEqual({ people: 2, trees: 1 });
  });
});

const entityForm = (instance: string, binds: string, version = '2025.1.0', body = '') => `
  <?xml version="1.0"?>
  <h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa" xmlns:entities="http://www.opendatakit.org/xforms/entities">
    <h:head><h:title>T</h:title><model entities:entities-version="${version}"><instance>${instance}</instance>${binds}</model></h:head>
    <h:body>${body}</h:body>
  </h:html>`;

describe('entity declarations at form upload', () => {
  test('an entity without a dataset attribute answers 400.25 "Dataset name is missing."', async () => {
    const h = await harness();
    const res = await upload(h, fixture('forms/simpleEntity.xml').replace('dataset="people"', ''), '');
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: 400.25, details: { reason: 'Dataset name is missing.' } });
  });

  test('a saveto on a group\'s bind is ignored; the leaves around it still save', async () => {
    const h = await harness();
    const form = entityForm(`<data id="validate_structure"><name/><age/><group><inner_field/></group>
      <meta><entity dataset="things" id="" create="1"><label/></entity></meta></data>`,
    `<bind nodeset="/data/name" type="string" entities:saveto="prop1"/><bind nodeset="/data/group" entities:saveto="prop2"/>
      <bind nodeset="/data/group/inner_field" type="string" entities:saveto="prop3"/>`, '2024.1.0');
    expect((await upload(h, form, '')).status).toBe(200);
    const [diff] = await json<Json[]>(await h.get(`${P(h)}/forms/validate_structure/draft/dataset-diff`, { as: 'alice' }));
    expect(diff.properties.map((p: Json) => p.name)).toEqual(['prop1', 'prop3']);
  });

  test('a property inside a repeat saved to an entity outside it answers 400.25 (XML declaration after whitespace read as Central)', async () => {
    const h = await harness();
    const form = entityForm(`<data id="repeat_entity" version="2"><num_children/><child><child_name/></child>
      <meta><instanceID/><entity create="1" dataset="children" id=""><label/></entity></meta></data>`,
    `<bind entities:saveto="num_children" nodeset="/data/num_children" type="int"/>
      <bind entities:saveto="child_name" nodeset="/data/child/child_name" type="string"/>`, '2025.1.0',
    '<group ref="/data/child"><repeat nodeset="/data/child"><input ref="/data/child/child_name"/></repeat></group>');
    const res = await upload(h, form);
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: 400.25, details: { reason: 'Cannot save properties from a repeat on an entity outside of a repeat.' } });
  });

  test('an entity in a repeat lists its form with repeatPath; moving the entity out of a repeat warns of no structure change', async () => {
    const h = await harness();
    expect((await upload(h, fixture('forms/repeatEntityHousehold.xml'))).status).toBe(200);
    const people = await json<Json>(await h.get(`${P(h)}/datasets/people`, { as: 'alice' }));
    expect(people.sourceForms).toEqual([{ name: 'Household and people', xmlFormId: 'repeatEntityHousehold', repeatPath: '/members/person/' }]);
    const households = await json<Json>(await h.get(`${P(h)}/datasets/households`, { as: 'alice' }));
    expect(households.sourceForms).toEqual([{ name: 'Household and people', xmlFormId: 'repeatEntityHousehold' }]);
    // The households entity block is dropped: its meta/entity and label paths go, without a warning.
    const moved = fixture('forms/repeatEntityHousehold.xml')
      .replace(/<entity dataset="households"[\s\S]*?<\/entity>/, '')
      .replace(/<bind[^>]*nodeset="\/data\/meta\/entity[^>]*>/g, '');
    const draft = await h.post(`${P(h)}/forms/repeatEntityHousehold/draft`, { as: 'alice', body: moved, headers: XML });
    expect(draft.status, await draft.clone().text()).toBe(200);
  });
});

describe('case-only name clashes and publish audits', () => {
  const simple = () => fixture('forms/simpleEntity.xml');

  test('?publish=True publishes; another form with the same name shares the Dataset; PEOPLE answers 409.16', async () => {
    const h = await harness();
    expect((await upload(h, simple(), '?publish=True')).status).toBe(200);
    expect((await upload(h, simple().replace(/simpleEntity/g, 'simpleEntity2'), '?publish=True')).status).toBe(200);
    expect((await json<Json[]>(await h.get(`${P(h)}/datasets`, { as: 'alice' }))).map((d) => d.name)).toEqual(['people']);
    for (const [name, query] of [['PEOPLE', ''], ['People', '?publish=true']]) {
      const res = await upload(h, simple().replace('dataset="people"', `dataset="${name}"`).replace(/simpleEntity/g, 'simpleEntity3'), query);
      expect(res.status).toBe(409);
      expect(await json(res)).toMatchObject({ code: 409.16, message: expect.stringContaining(`A dataset named 'people' exists and you provided '${name}'`) });
    }
  });

  test('a property differing only in case answers 409.17, as a draft and when a draft is published', async () => {
    const h = await harness();
    expect((await upload(h, simple(), '')).status).toBe(200);
    expect((await upload(h, simple().replace(/simpleEntity/g, 'simpleEntity2').replace('first_name', 'FIRST_NAME'), '?publish=True')).status).toBe(200);
    const publish = await h.post(`${P(h)}/forms/simpleEntity/draft/publish`, { as: 'alice' });
    expect(publish.status).toBe(409);
    expect((await json<Json>(publish)).message).toMatch(/match with existing ones except for capitalization/);
    const draft = await upload(h, simple().replace(/simpleEntity/g, 'simpleEntity3').replace('first_name', 'First_Name'), '');
    expect(draft.status).toBe(409);
  });

  test('audits: form.create, then dataset.create, then form.update.publish; dataset.update lists every property', async () => {
    const h = await harness();
    expect((await upload(h, simple())).status).toBe(200);
    expect((await upload(h, simple().replace('simpleEntity', 'simpleEntity2').replace('first_name', 'color_name'))).status).toBe(200);
    const rows = await h.audits();
    expect(rows.map((a) => a.action)).toEqual(['form.create', 'dataset.create', 'form.update.publish', 'form.create', 'dataset.update', 'form.update.publish']);
    expect(rows[1]!.details).toEqual({ properties: ['first_name', 'age'] });
    expect(rows[4]!.details).toEqual({ properties: ['first_name', 'age', 'color_name'] });
  });
});

describe('pending submissions when approval is turned off', () => {
  const UUID = '12345678-1234-4123-8234-123456789abc';
  const D = (h: Harness) => `${P(h)}/datasets/people`;
  const sub = (h: Harness, xml: string, form = 'simpleEntity') => h.post(`${P(h)}/forms/${form}/submissions`, { as: 'alice', body: xml, headers: XML });
  const review = (h: Harness, id: string, reviewState: string) =>
    h.patch(`${P(h)}/forms/simpleEntity/submissions/${id}`, { as: 'alice', body: { reviewState } });

  test('?convert=true makes the pending entities, by the submitter, with the submission as their source', async () => {
    const h = await harness();
    expect((await upload(h, fixture('forms/simpleEntity.xml'))).status).toBe(200);
    await h.patch(D(h), { as: 'alice', body: { approvalRequired: true } });
    expect((await sub(h, personXml('simpleEntity', 'people', 'one', UUID))).status).toBe(200);
    expect((await sub(h, personXml('simpleEntity', 'people', 'two', '12345678-1234-4123-8234-123456789aaa'))).status).toBe(200);
    expect(await json(await h.get(`${D(h)}/entities`, { as: 'alice' }))).toEqual([]);
    expect(await json(await h.patch(D(h), { as: 'bob', body: { approvalRequired: false } }))).toMatchObject({ code: 400.29, details: { count: 2 } });
    expect((await h.patch(`${D(h)}?convert=true`, { as: 'bob', body: { approvalRequired: false } })).status).toBe(200);
    expect((await json<Json[]>(await h.get(`${D(h)}/entities`, { as: 'alice' }))).length).toBe(2);
    const [created] = await json<Json[]>(await h.get(`${D(h)}/entities/${UUID}/audits`, { as: 'alice' }));
    expect(created).toMatchObject({ action: 'entity.create', actor: { displayName: 'alice' } });
    expect(created.details.source).toMatchObject({ event: { action: 'submission.create' }, submission: { instanceId: 'one', xmlFormId: 'simpleEntity' } });
  });

  test('a submission whose entity work failed is not pending (nor converted) until it is edited', async () => {
    const h = await harness();
    expect((await upload(h, fixture('forms/simpleEntity.xml'))).status).toBe(200);
    await h.patch(D(h), { as: 'alice', body: { approvalRequired: true } });
    const noLabel = personXml('simpleEntity', 'people', 'one', UUID).replace(/<entities:label>[^<]*<\/entities:label>/, '');
    expect((await sub(h, noLabel)).status).toBe(200);
    expect((await review(h, 'one', 'approved')).status).toBe(200);
    expect((await review(h, 'one', 'hasIssues')).status).toBe(200);
    // Counted as pending no more: approval can be turned off without convert.
    expect((await h.patch(D(h), { as: 'alice', body: { approvalRequired: true } })).status).toBe(200);
    expect((await h.patch(`${D(h)}?convert=true`, { as: 'alice', body: { approvalRequired: false } })).status).toBe(200);
    expect((await h.auditActions()).filter((a) => a === 'entity.error')).toHaveLength(1);
    expect(await json(await h.get(`${D(h)}/entities`, { as: 'alice' }))).toEqual([]);
  });

  test('an update submission edited after it updated its entity is not pending', async () => {
    const h = await harness();
    expect((await upload(h, fixture('forms/simpleEntity.xml'))).status).toBe(200);
    expect((await upload(h, fixture('forms/updateEntity.xml'))).status).toBe(200);
    await h.patch(D(h), { as: 'alice', body: { approvalRequired: true } });
    await h.post(`${D(h)}/entities`, { as: 'alice', body: { uuid: UUID, label: 'Johnny', data: { age: '22' } } });
    const update = (id: string, extra = '') => `<data xmlns:jr="http://openrosa.org/javarosa" xmlns:entities="http://www.opendatakit.org/xforms/entities" id="updateEntity" version="1.0">
      <meta>${extra}<instanceID>${id}</instanceID><entities:entity dataset="people" id="uuid:${UUID}" update="1" baseVersion="1"/></meta>
      <name>Alicia</name><age>85</age></data>`;
    expect((await sub(h, update('one'), 'updateEntity')).status).toBe(200);
    const edited = await h.put(`${P(h)}/forms/updateEntity/submissions/one`, { as: 'alice', body: update('one2', '<deprecatedID>one</deprecatedID>'), headers: XML });
    expect(edited.status).toBe(200);
    expect((await json<Json>(await h.get(`${D(h)}/entities/${UUID}`, { as: 'alice' }))).currentVersion.version).toBe(2);
    expect((await h.patch(D(h), { as: 'alice', body: { approvalRequired: false } })).status).toBe(200);
  });
});

describe('entities in submission audits', () => {
  const UUID = '12345678-1234-4123-8234-123456789abc';
  const audits = async (h: Harness, extended: boolean) => json<Json[]>(await h.get(`${P(h)}/forms/simpleEntity/submissions/one/audits`, {
    as: 'alice', headers: extended ? { 'X-Extended-Metadata': 'true' } : {},
  }));

  test('extended: the entity with its current version and entityAvailable; false once it or its Dataset is deleted', async () => {
    const h = await harness();
    expect((await upload(h, fixture('forms/simpleEntity.xml'))).status).toBe(200);
    expect((await h.post(`${P(h)}/forms/simpleEntity/submissions`, { as: 'alice', body: personXml('simpleEntity', 'people', 'one', UUID), headers: XML })).status).toBe(200);
    await h.patch(`${P(h)}/datasets/people/entities/${UUID}?force=true`, { as: 'alice', body: { label: 'New Label' } });
    const plain = (await audits(h, false)).find((a) => a.action === 'entity.create');
    expect(plain.details.entity).toEqual({ uuid: UUID, dataset: 'people' });
    let created = (await audits(h, true)).find((a) => a.action === 'entity.create');
    expect(created.details.entity).toMatchObject({ entityAvailable: true, uuid: UUID, dataset: 'people', creatorId: h.ids.alice, currentVersion: { label: 'New Label', version: 2 } });
    await h.delete(`${P(h)}/datasets/people/entities/${UUID}`, { as: 'alice' });
    created = (await audits(h, true)).find((a) => a.action === 'entity.create');
    expect(created.details.entity).toEqual({ entityAvailable: false, uuid: UUID, dataset: 'people' });
  });
});

describe('entities.csv with $filter and $search', () => {
  test('$filter keeps the matching entities and sends no ETag; $search finds words of labels and values; a bad $filter 400.18', async () => {
    const h = await harness();
    expect((await upload(h, fixture('forms/simpleEntity.xml'))).status).toBe(200);
    const D = `${P(h)}/datasets/people`;
    await h.post(`${D}/entities`, { as: 'alice', body: { uuid: '12345678-1234-4123-8234-111111111aaa', label: 'Johnny Doe', data: { first_name: 'Johnny', age: '22' } } });
    await h.post(`${D}/entities`, { as: 'bob', body: { uuid: '12345678-1234-4123-8234-111111111bbb', label: 'Jane Smith', data: { first_name: 'Jane', age: '25' } } });
    const filtered = await h.get(`${D}/entities.csv?$filter=${encodeURIComponent(`__system/creatorId eq ${h.ids.bob}`)}`, { as: 'alice' });
    expect(filtered.status).toBe(200);
    expect(filtered.headers.get('etag')).toBeNull();
    const lines = (await filtered.text()).trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^12345678-1234-4123-8234-111111111bbb,Jane Smith,Jane,25,/);
    const searched = await (await h.get(`${D}/entities.csv?$search=Johnny`, { as: 'alice' })).text();
    expect(searched).toMatch(/Johnny Doe/);
    expect(searched).not.toMatch(/Jane Smith/);
    const all = await h.get(`${D}/entities.csv`, { as: 'alice' });
    expect(all.headers.get('etag')).not.toBeNull();
    expect((await all.text()).trim().split('\n')).toHaveLength(3);
    expect(await json(await h.get(`${D}/entities.csv?$filter=${encodeURIComponent('age eq (')}`, { as: 'alice' }))).toMatchObject({ code: 400.18 });
  });
});

describe('fast external itemsets beside a Dataset named itemsets', () => {
  test('a spreadsheet form (new, and as a new draft) keeps its generated itemsets.csv; the Dataset is not linked', async () => {
    const h = await harness();
    expect((await h.post(`${P(h)}/datasets`, { as: 'alice', body: { name: 'itemsets' } })).status).toBe(200);
    const book = (title: string) => workbook({
      survey: [['type', 'name', 'label', 'choice_filter'], ['select_one state', 'state', 'State', null], ['select_one_external lga', 'lga', 'LGA', 'state=${state}']],
      choices: [['list_name', 'name', 'label'], ['state', 'kano', 'Kano']],
      external_choices: [['list_name', 'name', 'label', 'state'], ['lga', 'ungogo', 'Ungogo', 'kano']],
      settings: [['form_id', 'form_title'], ['itemsets_form', title]],
    });
    const XLSX = { 'Content-Type': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' };
    expect((await h.post(`${P(h)}/forms?publish=true`, { as: 'alice', body: book('one'), headers: XLSX })).status).toBe(200);
    const csv = async (path: string) => {
      const res = await h.get(`${P(h)}/forms/itemsets_form/${path}attachments/itemsets.csv`, { as: 'alice' });
      expect(res.status).toBe(200);
      return res.text();
    };
    const quoted = /^"list_name","name","label","state"\r?\n"lga","ungogo","Ungogo","kano"/;
    expect(await csv('')).toMatch(quoted);
    expect((await h.post(`${P(h)}/forms/itemsets_form/draft`, { as: 'alice', body: book('two'), headers: XLSX })).status).toBe(200);
    expect(await csv('draft/')).toMatch(quoted);
    const [attachment] = await json<Json[]>(await h.get(`${P(h)}/forms/itemsets_form/draft/attachments`, { as: 'alice' }));
    expect(attachment).toMatchObject({ name: 'itemsets.csv', exists: true, datasetExists: false });
  });
});
