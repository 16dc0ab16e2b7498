/**
 * Audits, diffs and versions of draft (test) submissions: Central routes them under
 * F/draft/submissions/… as for live ones. Real HTTP through the harness, real XML bodies.
 */
import { describe, expect, test } from 'vitest';
import { harness, json, type Harness } from '../../helpers/harness';

const FORM = `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml">
  <h:head><h:title>Trial</h:title><model><instance><data id="trial"><meta><instanceID/></meta><name/></data></instance>
  <bind nodeset="/data/name" type="string"/></model></h:head><h:body/></h:html>`;
const sub = (id: string, name: string, deprecated?: string) =>
  `<data id="trial"><meta><instanceID>${id}</instanceID>${deprecated ? `<deprecatedID>${deprecated}</deprecatedID>` : ''}</meta><name>${name}</name></data>`;

async function draftWithSubmission(h: Harness): Promise<string> {
  expect((await h.post(`/v1/projects/${h.projectId}/forms`, { as: 'bob', body: FORM, headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
  const D = `/v1/projects/${h.projectId}/forms/trial/draft/submissions`;
  expect((await h.post(D, { as: 'bob', body: sub('uuid:t1', 'Amina'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
  return D;
}

describe('draft submissions: audits, diffs, versions', () => {
  test('a draft submission lists its version, its XML and its audits under F/draft/submissions', async () => {
    const h = await harness();
    const D = await draftWithSubmission(h);
    const versions = await json(await h.get(`${D}/uuid:t1/versions`, { as: 'bob' }));
    expect(versions.map((v: { instanceId: string }) => v.instanceId)).toEqual(['uuid:t1']);
    expect((await json(await h.get(`${D}/uuid:t1/versions/uuid:t1`, { as: 'bob' }))).instanceId).toBe('uuid:t1');
    const xml = await h.get(`${D}/uuid:t1/versions/uuid:t1.xml`, { as: 'bob' });
    expect(await xml.text()).toBe(sub('uuid:t1', 'Amina'));
    expect(await json(await h.get(`${D}/uuid:t1/versions/uuid:t1/attachments`, { as: 'bob' }))).toEqual([]);
    expect(await json(await h.get(`${D}/uuid:t1/diffs`, { as: 'bob' }))).toEqual({});
    const audits = await json(await h.get(`${D}/uuid:t1/audits`, { as: 'bob' }));
    expect(audits.map((a: { action: string }) => a.action)).toEqual(['submission.create']);
  });

  test('the live routes do not see the draft submission, and rights are checked', async () => {
    const h = await harness();
    const D = await draftWithSubmission(h);
    expect((await h.get(`/v1/projects/${h.projectId}/forms/trial/submissions/uuid:t1/versions`, { as: 'bob' })).status).toBe(404);
    expect((await h.get(`${D}/uuid:t1/versions`, { as: 'chelsea' })).status).toBe(403);
    expect((await h.get(`${D}/uuid:t1/audits`)).status).toBe(401);
    expect((await h.get(`${D}/uuid:nope/diffs`, { as: 'bob' })).status).toBe(404);
  });
});

describe('OpenRosa submission to a draft by a signed-in tester (F/draft/submission)', () => {
  const multipart = (xml: string) => {
    const form = new FormData();
    form.append('xml_submission_file', new Blob([xml], { type: 'text/xml' }), 'submission.xml');
    return form;
  };

  test('201 with the OpenRosa response; stored as a draft submission; HEAD preflight 204', async () => {
    const h = await harness();
    expect((await h.post(`/v1/projects/${h.projectId}/forms`, { as: 'bob', body: FORM, headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    const url = `/v1/projects/${h.projectId}/forms/trial/draft/submission`;
    const head = await h.request('HEAD', url, { as: 'bob', headers: { 'X-OpenRosa-Version': '1.0' } });
    expect(head.status).toBe(204);
    const base = await h.listen();
    const res = await fetch(base + url, {
      method: 'POST', body: multipart(sub('uuid:or1', 'Baraka')),
      headers: { 'X-OpenRosa-Version': '1.0', Authorization: `Bearer ${(await import('../../fixtures/users')).fixtureUsers.bob.token}` },
    });
    expect(res.status).toBe(201);
    expect(await res.text()).toContain('full submission upload was successful!');
    const drafts = await json(await h.get(`/v1/projects/${h.projectId}/forms/trial/draft/submissions`, { as: 'bob' }));
    expect(drafts.map((d: { instanceId: string }) => d.instanceId)).toEqual(['uuid:or1']);
    expect(await json(await h.get(`/v1/projects/${h.projectId}/forms/trial/submissions`, { as: 'bob' }))).toEqual([]);
  });

  test('anonymous → 401; chelsea (no rights) → 401 as Central answers OpenRosa; no draft → 404', async () => {
    const h = await harness();
    expect((await h.post(`/v1/projects/${h.projectId}/forms`, { as: 'bob', body: FORM, headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    const base = await h.listen();
    const { fixtureUsers } = await import('../../fixtures/users');
    const post = (path: string, auth?: string) => fetch(base + path, {
      method: 'POST', body: multipart(sub('uuid:or2', 'X')),
      headers: { 'X-OpenRosa-Version': '1.0', ...(auth ? { Authorization: `Bearer ${auth}` } : {}) },
    });
    expect((await post(`/v1/projects/${h.projectId}/forms/trial/draft/submission`)).status).toBe(401);
    expect((await post(`/v1/projects/${h.projectId}/forms/trial/draft/submission`, fixtureUsers.chelsea.token)).status).toBe(401);
    expect((await h.post(`/v1/projects/${h.projectId}/forms/trial/draft/publish`, { as: 'bob' })).status).toBe(200);
    expect((await post(`/v1/projects/${h.projectId}/forms/trial/draft/submission`, fixtureUsers.bob.token)).status).toBe(404);
  });
});
