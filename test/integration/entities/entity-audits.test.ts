/**
 * An Entity's history as Central shows it, through real HTTP Requests: GET E/audits with the actor
 * of every event and `details.source` (the submission event that made a version, with its actor,
 * notes and the submission, or the bulk upload's details), paging, bulk create events; each
 * version's `source` in GET E/versions; entity paths with a `uuid:` prefix or a malformed uuid;
 * creators of live entities; the bulk upload's body limit; entity.error for an action the form
 * does not permit (403.2).
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, test } from 'vitest';
import { harness, json, type Harness } from '../../helpers/harness';
import { testDatabase } from '../../setup/db';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const XML = { 'Content-Type': 'application/xml' };
const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const D = (h: Harness) => `${P(h)}/datasets/people`;
const UUID = '12345678-1234-4123-8234-123456789abc';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

// The shared test database is made once, outside the first test's time limit.
beforeAll(() => testDatabase());

async function publish(h: Harness, form: string) {
  const res = await h.post(`${P(h)}/forms?publish=true`, { as: 'alice', body: fixture(`forms/${form}.xml`), headers: XML });
  expect(res.status, await res.clone().text()).toBe(200);
}

const personXml = (instanceId: string, label: string, instanceName = instanceId) => `<data xmlns:jr="http://openrosa.org/javarosa" xmlns:orx="http://openrosa.org/xforms" xmlns:entities="http://www.opendatakit.org/xforms/entities" id="simpleEntity" version="1.0">
  <meta><instanceID>${instanceId}</instanceID><entities:entity dataset="people" id="uuid:${UUID}" create="1"><entities:label>${label}</entities:label></entities:entity><orx:instanceName>${instanceName}</orx:instanceName></meta>
  <name>Alice</name><age>88</age><hometown>Toronto</hometown></data>`;

const updateXml = (instanceId: string, base: string) => `<data xmlns:jr="http://openrosa.org/javarosa" xmlns:entities="http://www.opendatakit.org/xforms/entities" id="updateEntity" version="1.0">
  <meta><instanceID>${instanceId}</instanceID><entities:entity dataset="people" id="uuid:${UUID}" update="1" baseVersion="${base}"/></meta>
  <name>Alicia</name><age>85</age></data>`;

async function submit(h: Harness, xml: string, form = 'simpleEntity', as: 'alice' | 'bob' = 'alice') {
  const res = await h.post(`${P(h)}/forms/${form}/submissions`, { as, body: xml, headers: XML });
  expect(res.status, await res.clone().text()).toBe(200);
}

describe('GET E/audits', () => {
  test('every event has its actor; a version made by a submission shows the triggering event and the submission', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    await publish(h, 'updateEntity');
    await submit(h, personXml('one', 'Alice (88)'));
    await h.patch(`${D(h)}/entities/${UUID}?force=true`, { as: 'bob', body: { data: { age: '12' } } });
    await submit(h, updateXml('u1', '2'), 'updateEntity', 'bob');
    const logs = await json<Json[]>(await h.get(`${D(h)}/entities/${UUID}/audits`, { as: 'alice' }));
    expect(logs.map((l) => [l.action, l.actor?.displayName])).toEqual([
      ['entity.update.version', 'bob'], ['entity.update.version', 'bob'], ['entity.create', 'alice'],
    ]);
    expect(logs[0].details.source.event).toMatchObject({ action: 'submission.create', actor: { displayName: 'bob' } });
    expect(logs[0].details.source.submission).toMatchObject({
      instanceId: 'u1', xmlFormId: 'updateEntity', submitter: { displayName: 'bob' },
      currentVersion: { instanceId: 'u1', submitter: { displayName: 'bob' } },
    });
    expect(logs[1].details.source).toEqual({});
    expect(logs[2].details.source.event).toMatchObject({ action: 'submission.create', actor: { displayName: 'alice' } });
    expect(logs[2].details.source.submission).toMatchObject({ instanceId: 'one', xmlFormId: 'simpleEntity', currentVersion: { instanceName: 'one' } });
    // Paging, newest first.
    const page = await json<Json[]>(await h.get(`${D(h)}/entities/${UUID}/audits?offset=2&limit=1`, { as: 'alice' }));
    expect(page.map((l) => l.action)).toEqual(['entity.create']);
    // Versions carry the same source.
    const versions = await json<Json[]>(await h.get(`${D(h)}/entities/${UUID}/versions`, { as: 'alice' }));
    expect(versions.map((v) => v.source.event?.action ?? null)).toEqual(['submission.create', null, 'submission.create']);
    expect(versions[2].source.submission.instanceId).toBe('u1');
  });

  test('an entity made on approval shows the approving event with its notes; the submission\'s latest instance name; a deleted form leaves the submission stub', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    await h.patch(D(h), { as: 'alice', body: { approvalRequired: true } });
    await submit(h, personXml('one', 'Alice (88)'));
    const approve = await h.patch(`${P(h)}/forms/simpleEntity/submissions/one`, {
      as: 'bob', body: { reviewState: 'approved' }, headers: { 'X-Action-Notes': 'looks right' },
    });
    expect(approve.status).toBe(200);
    const edit = personXml('one', 'Alice (88)', 'renamed').replace('<instanceID>one', '<deprecatedID>one</deprecatedID><instanceID>one2');
    expect((await h.put(`${P(h)}/forms/simpleEntity/submissions/one`, { as: 'alice', body: edit, headers: XML })).status).toBe(200);
    let [created] = await json<Json[]>(await h.get(`${D(h)}/entities/${UUID}/audits`, { as: 'alice' }));
    expect(created.details.source.event).toMatchObject({ action: 'submission.update', notes: 'looks right', actor: { displayName: 'bob' } });
    expect(created.details.source.submission).toMatchObject({ instanceId: 'one', submitter: { displayName: 'alice' }, currentVersion: { instanceName: 'renamed' } });
    expect((await h.delete(`${P(h)}/forms/simpleEntity`, { as: 'alice' })).status).toBe(200);
    [created] = await json<Json[]>(await h.get(`${D(h)}/entities/${UUID}/audits`, { as: 'alice' }));
    expect(created.details.source.submission).toEqual({ instanceId: 'one', createdAt: expect.any(String), submitter: expect.objectContaining({ displayName: 'alice' }) });
  });

  test('a bulk-created entity shows entity.bulk.create with the upload\'s details, in audits and versions', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    const res = await h.post(`${D(h)}/entities`, {
      as: 'alice', headers: { 'User-Agent': 'tests' },
      body: { source: { name: 'people.csv', size: 100 }, entities: [{ uuid: UUID, label: 'a' }, { label: 'b' }] },
    });
    expect(res.status).toBe(200);
    await h.patch(`${D(h)}/entities/${UUID}?force=true`, { as: 'alice', body: { label: 'c' } });
    const logs = await json<Json[]>(await h.get(`${D(h)}/entities/${UUID}/audits`, { as: 'alice' }));
    const source = { name: 'people.csv', size: 100, count: 2, userAgent: 'tests' };
    expect(logs.map((l) => [l.action, l.details.source])).toEqual([['entity.update.version', {}], ['entity.bulk.create', source]]);
    const versions = await json<Json[]>(await h.get(`${D(h)}/entities/${UUID}/versions`, { as: 'alice' }));
    expect(versions[0].source).toEqual(source);
  });
});

describe('bulk delete and restore audits', () => {
  test('entity.bulk.delete and entity.bulk.restore list the uuids in the order the request named them', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    const ids = ['12345678-1234-4123-8234-123456789ccc', '12345678-1234-4123-8234-123456789aaa', '12345678-1234-4123-8234-123456789bbb'];
    // Created in another order than the request's, so neither heap nor index order is the request's.
    for (const uuid of [ids[1]!, ids[2]!, ids[0]!]) expect((await h.post(`${D(h)}/entities`, { as: 'alice', body: { uuid, label: uuid } })).status).toBe(200);
    const named = [ids[0]!.toUpperCase(), ids[1]!, ids[2]!];
    for (const [path, action] of [['bulk-delete', 'entity.bulk.delete'], ['bulk-restore', 'entity.bulk.restore']] as const) {
      const res = await h.post(`${D(h)}/entities/${path}`, { as: 'alice', body: { ids: named } });
      expect(await json(res)).toEqual({ count: 3 });
      const [log] = await json<Json[]>(await h.get(`/v1/audits?action=${action}`, { as: 'alice' }));
      expect(log.details.entityUuids).toEqual(ids);
    }
  });
});

describe('entity paths, creators, limits', () => {
  test('a uuid: prefix is ignored; a malformed uuid answers 400.11 (after the Dataset is found)', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    await h.post(`${D(h)}/entities`, { as: 'alice', body: { uuid: UUID, label: 'x' } });
    expect((await json<Json>(await h.get(`${D(h)}/entities/uuid:${UUID}`, { as: 'alice' }))).uuid).toBe(UUID);
    const bad = await h.post(`${D(h)}/entities/uuid:not-a-uuid/restore`, { as: 'alice' });
    expect(bad.status).toBe(400);
    expect(await json(bad)).toMatchObject({ code: 400.11, message: 'Invalid input data type: expected (uuid) to be (valid version 4 UUID)' });
    expect((await h.get(`${P(h)}/datasets/nonexistent/entities/123/audits`, { as: 'alice' })).status).toBe(404);
  });

  test('creators lists only the creators of live entities', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    await h.post(`${D(h)}/entities`, { as: 'alice', body: { label: 'a' } });
    await h.post(`${D(h)}/entities`, { as: 'bob', body: { uuid: UUID, label: 'b' } });
    expect((await json<Json[]>(await h.get(`${D(h)}/entities/creators`, { as: 'alice' }))).map((a) => a.displayName)).toEqual(['alice', 'bob']);
    await h.delete(`${D(h)}/entities/${UUID}`, { as: 'bob' });
    expect((await json<Json[]>(await h.get(`${D(h)}/entities/creators`, { as: 'alice' }))).map((a) => a.displayName)).toEqual(['alice']);
  });

  test('the bulk upload takes bodies over 250 kB; other JSON bodies stop at MAX_JSON_BYTES', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    const big = { source: { name: 'file.csv' }, entities: [{ label: 'x'.repeat(256_001) }] };
    const ok = await h.post(`${D(h)}/entities?foo=bar`, { as: 'alice', body: big });
    expect(ok.status).toBe(200);
    expect(await json(ok)).toEqual({ success: true });
    const tooBig = await h.post(`${P(h)}/app-users`, { as: 'alice', body: { displayName: 'x'.repeat(256_001) } });
    expect(tooBig.status).toBe(400);
  });

  test('an update from a form that only creates records entity.error 403.2 with the permitted actions', async () => {
    const h = await harness();
    await publish(h, 'simpleEntity');
    await h.post(`${D(h)}/entities`, { as: 'alice', body: { uuid: UUID, label: 'x' } });
    await submit(h, personXml('one', 'y').replace('create="1"', 'update="1" baseVersion="1"'));
    const error = (await h.audits()).find((a) => a.action === 'entity.error');
    expect(error?.details).toMatchObject({
      errorMessage: 'The submission attempts an entity update, but the form does not permit that action. The form permits the following actions: create.',
      problem: { problemCode: 403.2, problemDetails: { action: 'update', permitted: ['create'] } },
    });
  });
});
