/**
 * Entity lists on devices and Datasets in the Trash, through real HTTP requests and the route
 * table: linking a form attachment to a Dataset (PATCH, auto-linking on create and publish), the
 * OpenRosa manifest (type="entityList", hash, integrityUrl) and the CSV a device downloads with
 * conditional GETs, ownerOnly for Data Collectors and App Users, D/integrity, Draft Token paths;
 * DELETE D (409.21 while forms depend on it), the Trash listing and CSV, purge; the role matrix.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { systemCtx } from '../../../lib/context';
import { purgeDatasets } from '../../../lib/datasets/trash';
import { harness, json, type As, type Harness } from '../../helpers/harness';
import { userWithRole } from '../../helpers/roles';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const XML = { 'Content-Type': 'application/xml' };
const OR = { 'X-OpenRosa-Version': '1.0' };
const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const D = (h: Harness, name = 'people') => `${P(h)}/datasets/${name}`;
const F = (h: Harness, form = 'consumeDatasets') => `${P(h)}/forms/${form}`;
const A = '12345678-1234-4123-8234-123456789aaa';
const B = '12345678-1234-4123-8234-123456789bbb';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function upload(h: Harness, form: string, query = '?publish=true', body = fixture(`forms/${form}.xml`)) {
  const res = await h.post(`${P(h)}/forms${query}`, { as: 'alice', body, headers: XML });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function entity(h: Harness, uuid: string, label: string, as: As = 'alice', data: Record<string, string> = {}) {
  const res = await h.post(`${D(h)}/entities`, { as, body: { uuid, label, data } });
  expect(res.status, await res.clone().text()).toBe(200);
}

const personXml = (instanceId: string, uuid: string, label: string) => `<data xmlns:jr="http://openrosa.org/javarosa" xmlns:entities="http://www.opendatakit.org/xforms/entities" id="simpleEntity" version="1.0">
  <meta><instanceID>${instanceId}</instanceID><entities:entity dataset="people" id="uuid:${uuid}" create="1"><entities:label>${label}</entities:label></entities:entity></meta>
  <name>${label}</name><age>30</age><hometown>Toronto</hometown></data>`;

/** An OpenRosa submission as Collect sends it (multipart, xml_submission_file). */
async function collectSubmit(h: Harness, as: As, xml: string) {
  const boundary = 'collectBoundary7MA4YWxk';
  const body = `--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="submission.xml"\r\nContent-Type: text/xml\r\n\r\n${xml}\r\n--${boundary}--\r\n`;
  const res = await h.post(`${P(h)}/submission`, { as, body, headers: { ...OR, 'Content-Type': `multipart/form-data; boundary=${boundary}` } });
  expect(res.status, await res.clone().text()).toBe(201);
}

/** The `<mediaFile>` of a file in a manifest, as [type attribute, hash, downloadUrl, integrityUrl]. */
function mediaFile(manifest: string, name: string) {
  const block = manifest.split('<mediaFile').find((b) => b.includes(`<filename>${name}</filename>`));
  if (!block) return null;
  return {
    type: /^ type="([^"]+)"/.exec(block)?.[1] ?? null,
    hash: /<hash>md5:([0-9a-f]+)<\/hash>/.exec(block)?.[1] ?? null,
    downloadUrl: /<downloadUrl>([^<]+)</.exec(block)?.[1] ?? null,
    integrityUrl: /<integrityUrl>([^<]+)</.exec(block)?.[1] ?? null,
  };
}

const manifestOf = async (h: Harness, as: As, path = `${F(h)}/manifest`) => {
  const res = await h.get(path, { as, headers: OR });
  expect(res.status, await res.clone().text()).toBe(200);
  return res.text();
};

describe('Linking form attachments to Datasets', () => {
  test('PATCH links and unlinks, answering the attachment; 404 without the Dataset; 400.26 for media; audits', async () => {
    const h = await harness();
    await upload(h, 'consumeDatasets', '');
    const att = `${F(h)}/draft/attachments/people.csv`;
    expect(await json(await h.patch(att, { as: 'alice', body: { dataset: true } }))).toMatchObject({ code: 404.1 });
    expect((await h.post(`${P(h)}/datasets`, { as: 'alice', body: { name: 'people' } })).status).toBe(200);
    await h.post(att, { as: 'alice', body: 'a,b\n1,2', headers: { 'Content-Type': 'text/csv' } });
    const linked = await json<Json>(await h.patch(att, { as: 'alice', body: { dataset: true } }));
    expect(linked).toEqual({ name: 'people.csv', type: 'file', exists: true, blobExists: false, datasetExists: true, updatedAt: expect.any(String) });
    const audit = (await h.audits()).filter((a) => a.action === 'form.attachment.update').at(-1);
    expect(audit?.details).toMatchObject({ name: 'people.csv', newBlobId: null, oldDatasetId: null, newDatasetId: expect.any(Number) });
    expect(await json(await h.patch(att, { as: 'alice', body: { dataset: false } }))).toMatchObject({ exists: false, datasetExists: false });
    expect((await h.delete(att, { as: 'alice' })).status).toBe(404);
    expect(await json(await h.patch(att, { as: 'alice', body: { dataset: 'yes' } }))).toMatchObject({ code: 400.11 });
  });

  test('a new form links its data files to existing Datasets; a new draft keeps an uploaded file; publishing links new Datasets', async () => {
    const h = await harness();
    await upload(h, 'simpleEntity'); // creates 'people'
    await upload(h, 'consumeDatasets', '');
    const atts = await json<Json[]>(await h.get(`${F(h)}/draft/attachments`, { as: 'alice' }));
    expect(atts.find((a) => a.name === 'people.csv')).toMatchObject({ datasetExists: true });
    expect(atts.find((a) => a.name === 'people.csv')).not.toHaveProperty('updatedAt'); // linked when created, never updated
    expect(atts.find((a) => a.name === 'trees.csv')).toMatchObject({ datasetExists: false });
    // The draft's trees.csv gets a file; a later draft keeps it, and a Dataset 'trees' made later does not take over.
    await h.post(`${F(h)}/draft/attachments/trees.csv`, { as: 'alice', body: 'name\noak', headers: { 'Content-Type': 'text/csv' } });
    expect((await h.post(`${P(h)}/datasets`, { as: 'alice', body: { name: 'trees' } })).status).toBe(200);
    expect((await h.post(`${F(h)}/draft`, { as: 'alice', body: fixture('forms/consumeDatasets.xml'), headers: XML })).status).toBe(200);
    const again = await json<Json[]>(await h.get(`${F(h)}/draft/attachments`, { as: 'alice' }));
    expect(again.find((a) => a.name === 'trees.csv')).toMatchObject({ blobExists: true, datasetExists: false });
    expect(again.find((a) => a.name === 'people.csv')).toMatchObject({ datasetExists: true });
  });

  test('publishing a form that creates and consumes its own Dataset links it', async () => {
    const h = await harness();
    const xml = fixture('forms/simpleEntity.xml')
      .replace('</instance>', '</instance>\n<instance id="people" src="jr://file-csv/people.csv"/>');
    await upload(h, 'simpleEntity', '', xml);
    expect((await json<Json[]>(await h.get(`${P(h)}/forms/simpleEntity/draft/attachments`, { as: 'alice' })))[0]).toMatchObject({ datasetExists: false });
    expect((await h.post(`${P(h)}/forms/simpleEntity/draft/publish`, { as: 'alice' })).status).toBe(200);
    const atts = await json<Json[]>(await h.get(`${P(h)}/forms/simpleEntity/attachments`, { as: 'alice' }));
    expect(atts[0]).toMatchObject({ name: 'people.csv', datasetExists: true, updatedAt: expect.any(String) });
  });
});

describe('Entity lists on devices', () => {
  test('manifest entityList with the entities.csv hash and integrityUrl; CSV download; 304; a change makes a new hash', async () => {
    const h = await harness();
    await upload(h, 'simpleEntity');
    await entity(h, A, 'Alice', 'alice', { first_name: 'Alice', age: '30' });
    await entity(h, B, 'Bob, "the builder"', 'alice', { first_name: 'Bob' });
    await upload(h, 'consumeDatasets');
    const manifest = await manifestOf(h, 'alice');
    const file = mediaFile(manifest, 'people.csv')!;
    expect(file.type).toBe('entityList');
    expect(file.downloadUrl).toMatch(new RegExp(`/v1/projects/${h.projectId}/forms/consumeDatasets/attachments/people\\.csv$`));
    expect(file.integrityUrl).toMatch(new RegExp(`/v1/projects/${h.projectId}/datasets/people/integrity$`));
    expect(mediaFile(manifest, 'trees.csv')).toBeNull();
    const csvRes = await h.get(`${D(h)}/entities.csv`, { as: 'alice' });
    expect(csvRes.headers.get('etag')).toBe(`"${file.hash}"`);

    const res = await h.get(`${F(h)}/attachments/people.csv`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(res.headers.get('etag')).toBe(`"${file.hash}"`);
    expect(await res.text()).toBe(`name,label,__version,first_name,age\n${B},"Bob, ""the builder""",1,Bob,\n${A},Alice,1,Alice,30\n`);
    const same = await h.get(`${F(h)}/attachments/people.csv`, { as: 'alice', headers: { 'If-None-Match': `"${file.hash}"` } });
    expect(same.status).toBe(304);
    expect(await same.text()).toBe('');
    // Work elsewhere (another form, another Dataset's entity) changes neither the hash nor the ETag.
    await upload(h, 'simpleEntity2022', '?publish=true', fixture('forms/simpleEntity.xml').replace('dataset="people"', 'dataset="trees"').replace('id="simpleEntity"', 'id="treesEntity"'));
    expect((await h.post(`${D(h, 'trees')}/entities`, { as: 'alice', body: { uuid: '12345678-1234-4123-8234-123456789ccc', label: 'Oak', data: {} } })).status).toBe(200);
    expect(mediaFile(await manifestOf(h, 'alice'), 'people.csv')!.hash).toBe(file.hash);
    expect((await h.get(`${D(h)}/entities.csv`, { as: 'alice' })).headers.get('etag')).toBe(`"${file.hash}"`);
    expect((await h.get(`${F(h)}/attachments/people.csv`, { as: 'alice', headers: { 'If-None-Match': `"${file.hash}"` } })).status).toBe(304);

    expect((await h.patch(`${D(h)}/entities/${A}?baseVersion=1`, { as: 'alice', body: { label: 'Alice 2' } })).status).toBe(200);
    const after = mediaFile(await manifestOf(h, 'alice'), 'people.csv')!;
    expect(after.hash).not.toBe(file.hash);
    const changed = await h.get(`${F(h)}/attachments/people.csv`, { as: 'alice', headers: { 'If-None-Match': `"${file.hash}"` } });
    expect(changed.status).toBe(200);
    expect(await changed.text()).toContain(`${A},Alice 2,2,Alice,30`);
    // The approvalRequired type.
    await h.patch(D(h), { as: 'alice', body: { approvalRequired: true } });
    expect(mediaFile(await manifestOf(h, 'alice'), 'people.csv')!.type).toBe('approvalEntityList');
  });

  test('an App User gets its key URLs, and entities of an ownerOnly list that it created; others see all', async () => {
    const h = await harness();
    await upload(h, 'simpleEntity');
    await upload(h, 'consumeDatasets');
    const appUser = await json<Json>(await h.post(`${P(h)}/app-users`, { as: 'bob', body: { displayName: 'Tablet' } }));
    const key: As = { key: appUser.token };
    for (const form of ['simpleEntity', 'consumeDatasets']) {
      expect((await h.post(`${P(h)}/forms/${form}/assignments/app-user/${appUser.id}`, { as: 'bob' })).status).toBe(200);
    }
    const collector = await userWithRole(h, 'formfill', 'collector@example.org');
    await entity(h, A, 'From alice');
    await collectSubmit(h, key, personXml('uuid:one', B, 'From the tablet'));
    expect((await json<Json>(await h.get(`${D(h)}/entities/${B}`, { as: 'alice' }))).currentVersion.label).toBe('From the tablet');

    const open = mediaFile(await manifestOf(h, key, `${F(h)}/manifest`), 'people.csv')!;
    expect(open.downloadUrl).toContain(`/v1/key/${appUser.token}/projects/${h.projectId}/forms/consumeDatasets/attachments/people.csv`);
    expect(open.integrityUrl).toContain(`/v1/key/${appUser.token}/projects/${h.projectId}/datasets/people/integrity`);
    expect(open.hash).toBe(mediaFile(await manifestOf(h, 'alice'), 'people.csv')!.hash);
    expect((await (await h.get(`${F(h)}/attachments/people.csv`, { as: key })).text()).split('\n')).toHaveLength(4);

    await h.patch(D(h), { as: 'alice', body: { ownerOnly: true } });
    const own = mediaFile(await manifestOf(h, key), 'people.csv')!;
    const manager = mediaFile(await manifestOf(h, 'bob'), 'people.csv')!;
    const collectors = mediaFile(await manifestOf(h, collector), 'people.csv')!;
    expect(new Set([own.hash, manager.hash, collectors.hash]).size).toBe(3);
    expect(await (await h.get(`${F(h)}/attachments/people.csv`, { as: key })).text()).toBe(`name,label,__version,first_name,age\n${B},From the tablet,1,From the tablet,30\n`);
    expect(await (await h.get(`${F(h)}/attachments/people.csv`, { as: collector })).text()).toBe('name,label,__version,first_name,age\n');
    expect((await (await h.get(`${F(h)}/attachments/people.csv`, { as: 'bob' })).text()).split('\n')).toHaveLength(4);
    // Someone else's new entity does not change the App User's hash; its own update does.
    await entity(h, '12345678-1234-4123-8234-123456789ccc', 'Another');
    expect(mediaFile(await manifestOf(h, key), 'people.csv')!.hash).toBe(own.hash);
    await h.patch(`${D(h)}/entities/${B}?force=true`, { as: 'alice', body: { label: 'Renamed' } });
    expect(mediaFile(await manifestOf(h, key), 'people.csv')!.hash).not.toBe(own.hash);

    // Integrity: the App User's view marks others' entities as deleted.
    const integrity = await (await h.get(`${D(h)}/integrity`, { as: key, headers: OR })).text();
    expect(integrity).toContain(`<entity id="${B}">\n        <deleted>false</deleted>`);
    expect(integrity).toContain(`<entity id="${A}">\n        <deleted>true</deleted>`);
    const full = await (await h.get(`${D(h)}/integrity?id=${A}`, { as: 'bob', headers: OR })).text();
    expect(full).toBe(`<?xml version="1.0" encoding="UTF-8"?>
  <data>
    <entities>
      <entity id="${A}">
        <deleted>false</deleted>
      </entity>
    </entities>
  </data>`);
  });

  test('integrity: deleted flags, ids, 403 without access or when the consuming form is closed, 404, header required', async () => {
    const h = await harness();
    await upload(h, 'simpleEntity');
    await entity(h, A, 'a');
    await entity(h, B, 'b');
    await h.delete(`${D(h)}/entities/${A}`, { as: 'alice' });
    const text = await (await h.get(`${D(h)}/integrity`, { as: 'alice', headers: OR })).text();
    expect([...text.matchAll(/<entity id="([^"]+)">\s*<deleted>(\w+)</g)].map((m) => [m[1], m[2]])).toEqual([[A, 'true'], [B, 'false']]);
    const some = await (await h.get(`${D(h)}/integrity?id=${B}`, { as: 'alice', headers: OR })).text();
    expect(some).not.toContain(A);
    expect((await h.get(`${D(h)}/integrity`, { as: 'chelsea', headers: OR })).status).toBe(403);
    expect((await h.get(`${P(h)}/datasets/nope/integrity`, { as: 'alice', headers: OR })).status).toBe(404);
    expect((await h.get(`${D(h)}/integrity`, { as: 'alice' })).status).toBe(400);

    await upload(h, 'consumeDatasets');
    const appUser = await json<Json>(await h.post(`${P(h)}/app-users`, { as: 'bob', body: { displayName: 'Tablet' } }));
    const key: As = { key: appUser.token };
    expect((await h.get(`${D(h)}/integrity`, { as: key, headers: OR })).status).toBe(403);
    await h.post(`${F(h)}/assignments/app-user/${appUser.id}`, { as: 'bob' });
    expect((await h.get(`${D(h)}/integrity`, { as: key, headers: OR })).status).toBe(200);
    await h.patch(F(h), { as: 'bob', body: { state: 'closed' } });
    expect((await h.get(`${D(h)}/integrity`, { as: key, headers: OR })).status).toBe(403);
  });

  test('draft attachments and the Draft Token paths serve the linked list', async () => {
    const h = await harness();
    await upload(h, 'simpleEntity');
    await entity(h, A, 'a');
    await upload(h, 'consumeDatasets', '');
    const draft = await json<Json>(await h.get(`${F(h)}/draft`, { as: 'alice' }));
    const T = `/v1/test/${draft.draftToken}/projects/${h.projectId}/forms/consumeDatasets/draft`;
    const manifest = await manifestOf(h, 'anonymous', `${T}/manifest`);
    const file = mediaFile(manifest, 'people.csv')!;
    expect(file.type).toBe('entityList');
    expect(file.downloadUrl).toContain(`${T}/attachments/people.csv`);
    const viaToken = await h.get(`${T}/attachments/people.csv`);
    expect(viaToken.status).toBe(200);
    expect(await viaToken.text()).toBe(`name,label,__version,first_name,age\n${A},a,1,,\n`);
    expect((await h.get(`${T}/attachments/people.csv`, { headers: { 'If-None-Match': `"${file.hash}"` } })).status).toBe(304);
    expect((await h.get(`${F(h)}/draft/attachments/people.csv`, { as: 'alice' })).status).toBe(200);
    expect((await h.get(`${F(h)}/draft/attachments/people.csv`, { as: 'chelsea' })).status).toBe(403);
    expect(mediaFile(await manifestOf(h, 'alice', `${F(h)}/draft/manifest`), 'people.csv')!.hash).toBe(file.hash);
  });
});

describe('Property-based access filters', () => {
  test('PATCH accessFilter sets, shows, audits and clears rules; an App User sees only matching entities', async () => {
    const h = await harness();
    await upload(h, 'simpleEntity');
    expect((await h.post(`${D(h)}/properties`, { as: 'alice', body: { name: 'region' } })).status).toBe(200);
    expect((await h.post(`${P(h)}/actor-properties`, { as: 'alice', body: { name: 'region' } })).status).toBe(200);
    await entity(h, A, 'North', 'alice', { region: 'north' });
    await entity(h, B, 'South', 'alice', { region: 'south' });
    await upload(h, 'consumeDatasets');
    const appUser = await json<Json>(await h.post(`${P(h)}/app-users`, { as: 'bob', body: { displayName: 'Tablet' } }));
    const key: As = { key: appUser.token };
    await h.post(`${F(h)}/assignments/app-user/${appUser.id}`, { as: 'bob' });
    expect((await h.patch(`${P(h)}/app-users/${appUser.id}`, { as: 'alice', body: { properties: { region: 'north' } } })).status).toBe(200);

    const rules = [{ datasetProperty: 'region', actorProperty: 'region' }];
    const patched = await json<Json>(await h.patch(D(h), { as: 'bob', body: { accessFilter: { type: 'property', rules: [...rules, ...rules] } } }));
    expect(patched.accessFilter).toEqual({ type: 'property', rules });
    expect((await h.audits()).filter((a) => a.action === 'dataset.update').at(-1)?.details)
      .toEqual({ data: { ownerOnly: false, accessFilter: { type: 'property', rules: [...rules, ...rules] } } });
    const csv = await (await h.get(`${F(h)}/attachments/people.csv`, { as: key })).text();
    expect(csv).toBe(`name,label,__version,first_name,age,region\n${A},North,1,,,north\n`);
    expect((await (await h.get(`${F(h)}/attachments/people.csv`, { as: 'bob' })).text()).split('\n')).toHaveLength(4);
    const integrity = await (await h.get(`${D(h)}/integrity`, { as: key, headers: OR })).text();
    expect(integrity).toContain(`<entity id="${B}">\n        <deleted>true</deleted>`);
    const hash = mediaFile(await manifestOf(h, key), 'people.csv')!.hash;
    expect(hash).not.toBe(mediaFile(await manifestOf(h, 'bob'), 'people.csv')!.hash);
    // The App User's own value changes its list and its hash.
    await h.patch(`${P(h)}/app-users/${appUser.id}`, { as: 'alice', body: { properties: { region: 'south' } } });
    expect(mediaFile(await manifestOf(h, key), 'people.csv')!.hash).not.toBe(hash);
    expect(await (await h.get(`${F(h)}/attachments/people.csv`, { as: key })).text()).toContain(`${B},South`);

    for (const bad of [{ type: 'property', rules: [] }, { type: 'property', rules: [{ datasetProperty: 'region' }] }, { type: 'nope' }]) {
      expect(await json(await h.patch(D(h), { as: 'bob', body: { accessFilter: bad } }))).toMatchObject({ code: 400.8 });
    }
    const viewer = await userWithRole(h, 'viewer', 'viewer@example.org');
    expect((await h.patch(D(h), { as: viewer, body: { accessFilter: null } })).status).toBe(403);
    const cleared = await json<Json>(await h.patch(D(h), { as: 'bob', body: { accessFilter: null } }));
    expect(cleared.accessFilter).toBeUndefined();
    expect((await (await h.get(`${F(h)}/attachments/people.csv`, { as: key })).text()).split('\n')).toHaveLength(4);
    const owner = await json<Json>(await h.patch(D(h), { as: 'bob', body: { accessFilter: { type: 'ownerOnly' } } }));
    expect(owner).toMatchObject({ ownerOnly: true, accessFilter: { type: 'ownerOnly' } });
  });
});

describe('Deleting Datasets', () => {
  test('409.21 while forms depend on it; DELETE, the Trash list and CSV, the name freed, purge', async () => {
    const h = await harness();
    await upload(h, 'simpleEntity');
    await entity(h, A, 'kept');
    const dep = await json<Json>(await h.delete(D(h), { as: 'alice' }));
    expect(dep).toMatchObject({ code: 409.21, details: { sourceForms: [{ xmlFormId: 'simpleEntity', name: 'simpleEntity' }], linkedForms: [] } });
    expect((await h.delete(`${P(h)}/forms/simpleEntity`, { as: 'alice' })).status).toBe(200);
    expect((await h.delete(D(h), { as: 'alice' })).status).toBe(200);
    expect((await h.audits()).map((a) => a.action)).toContain('dataset.delete');
    expect((await h.get(D(h), { as: 'alice' })).status).toBe(404);
    expect((await h.get(`${D(h)}/entities`, { as: 'alice' })).status).toBe(404);
    expect(await json(await h.get(`${P(h)}/datasets`, { as: 'alice' }))).toEqual([]);
    const trash = await json<Json[]>(await h.get(`${P(h)}/datasets?deleted=true`, { as: 'alice' }));
    expect(trash).toEqual([expect.objectContaining({ name: 'people', id: expect.any(Number), deletedAt: expect.any(String) })]);
    const csv = await h.get(`${P(h)}/trash/datasets/${trash[0].id}/entities.csv`, { as: 'alice' });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-disposition')).toContain('people-deleted.csv');
    expect(await csv.text()).toMatch(new RegExp(`^__id,label,first_name,age,__createdAt.*\\n${A},kept,`));
    expect((await h.get(`${P(h)}/trash/datasets/${trash[0].id}/entities.csv`, { as: 'chelsea' })).status).toBe(403);
    expect((await h.get(`${P(h)}/trash/datasets/999999/entities.csv`, { as: 'alice' })).status).toBe(404);
    expect((await h.post(`${P(h)}/datasets`, { as: 'alice', body: { name: 'people' } })).status).toBe(200);
    // The form that wrote to the deleted Dataset cannot come back (409.23).
    const [deletedForm] = await json<Json[]>(await h.get(`${P(h)}/forms?deleted=true`, { as: 'alice' }));
    expect(await json(await h.post(`${P(h)}/forms/${deletedForm.id}/restore`, { as: 'alice' }))).toMatchObject({ code: 409.23 });

    const purged = await purgeDatasets(systemCtx(h.deps), { force: true, projectId: h.projectId });
    expect(purged.map((d) => d.name)).toEqual(['people']);
    expect(await json(await h.get(`${P(h)}/datasets?deleted=true`, { as: 'alice' }))).toEqual([]);
    expect((await h.get(`${P(h)}/datasets`, { as: 'alice' })).status).toBe(200);
    expect((await h.audits()).map((a) => a.action)).toContain('dataset.purge');
  });

  test('a Dataset linked to a draft cannot go; after unlinking it can; new forms do not link a deleted Dataset', async () => {
    const h = await harness();
    expect((await h.post(`${P(h)}/datasets`, { as: 'alice', body: { name: 'people' } })).status).toBe(200);
    await upload(h, 'consumeDatasets', '');
    expect(await json(await h.delete(D(h), { as: 'alice' }))).toMatchObject({ code: 409.21, details: { draftLinkedForms: [{ xmlFormId: 'consumeDatasets' }] } });
    await h.patch(`${F(h)}/draft/attachments/people.csv`, { as: 'alice', body: { dataset: false } });
    expect((await h.delete(D(h), { as: 'alice' })).status).toBe(200);
    await h.delete(F(h), { as: 'alice' });
    await upload(h, 'consumeDatasets', '?ignoreWarnings=true');
    const atts = await json<Json[]>(await h.get(`${F(h)}/draft/attachments`, { as: 'alice' }));
    expect(atts.find((a) => a.name === 'people.csv')).toMatchObject({ datasetExists: false });
  });

  test('DELETE D/properties/{name}: 409.22 while a form writes it or an entity holds a value; then gone, audited, name free', async () => {
    const h = await harness();
    await upload(h, 'simpleEntity');
    const dep = await json<Json>(await h.delete(`${D(h)}/properties/first_name`, { as: 'alice' }));
    expect(dep).toMatchObject({ code: 409.22, details: { propertyName: 'first_name', prerequisites: { dependentForms: { details: { forms: [{ xmlFormId: 'simpleEntity' }] } } } } });
    expect((await h.post(`${D(h)}/properties`, { as: 'alice', body: { name: 'height' } })).status).toBe(200);
    await entity(h, A, 'Tall', 'alice', { height: '10m' });
    const valued = await json<Json>(await h.delete(`${D(h)}/properties/height`, { as: 'alice' }));
    expect(valued).toMatchObject({ code: 409.22, details: { prerequisites: { nonEmptyEntities: { details: { totalCount: 1, entities: [{ uuid: A, label: 'Tall' }] } } } } });
    const viewer = await userWithRole(h, 'viewer', 'viewer@example.org');
    expect((await h.delete(`${D(h)}/properties/height`, { as: viewer })).status).toBe(403);
    expect((await h.patch(`${D(h)}/entities/${A}?baseVersion=1`, { as: 'alice', body: { data: { height: ' ' } } })).status).toBe(200);
    expect((await h.delete(`${D(h)}/properties/height`, { as: 'bob' })).status).toBe(200);
    expect((await h.delete(`${D(h)}/properties/height`, { as: 'bob' })).status).toBe(404);
    expect((await h.audits()).filter((a) => a.action === 'dataset.update.property.delete').map((a) => a.details)).toEqual([{ properties: ['height'] }]);
    const ds = await json<Json>(await h.get(D(h), { as: 'alice' }));
    expect(ds.properties.map((p: Json) => p.name)).toEqual(['first_name', 'age']);
    expect((await (await h.get(`${D(h)}/entities.csv`, { as: 'alice' })).text()).split('\n')[0]).not.toContain('height');
    expect(await json(await h.post(`${D(h)}/entities`, { as: 'alice', body: { label: 'x', data: { height: '1' } } }))).toMatchObject({ code: 400.28 });
    expect((await h.post(`${D(h)}/properties`, { as: 'alice', body: { name: 'height' } })).status).toBe(200);
  });

  test('role matrix of DELETE D: manager may; viewer, data collector, App User, no role 403.1; anonymous 401.2', async () => {
    const h = await harness();
    const viewer = await userWithRole(h, 'viewer', 'viewer@example.org');
    const collector = await userWithRole(h, 'formfill', 'collector@example.org');
    const appUser = await json<Json>(await h.post(`${P(h)}/app-users`, { as: 'bob', body: { displayName: 'Tablet' } }));
    expect((await h.post(`${P(h)}/datasets`, { as: 'alice', body: { name: 'people' } })).status).toBe(200);
    for (const as of [viewer, collector, { key: appUser.token }, 'chelsea'] as As[]) {
      const res = await h.delete(D(h), { as });
      expect(res.status).toBe(403);
      expect(await json(res)).toMatchObject({ code: 403.1 });
    }
    expect(await json(await h.delete(D(h), { as: 'anonymous' }))).toMatchObject({ code: 401.2 });
    expect((await h.delete(D(h), { as: 'bob' })).status).toBe(200);
    expect((await h.delete(D(h), { as: 'bob' })).status).toBe(404);
  });
});
