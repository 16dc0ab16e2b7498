/**
 * `webformsEnabled` on forms, which decides whether the web UI fills a form with ODK Web Forms: true
 * by default while no Enketo is configured (and `enketoId` null), changed by PATCH F and by the
 * project PUT's `forms[]`. Also `/v1/assignments/{role}` and F/assignments/{role}, by system name
 * and by id, which the UI's users and form-access pages read.
 */
import { describe, expect, test } from 'vitest';
import { harness, json, type Harness } from '../../helpers/harness';
import { centralJson } from './helpers';

const formKeys = Object.keys(centralJson('simple/api/form'));
const FORM = (id: string) => `<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml"><h:head><h:title>${id}</h:title><model><instance><data id="${id}"><meta><instanceID/></meta><q/></data></instance><bind nodeset="/data/q" type="string"/></model></h:head><h:body/></h:html>`;

async function form(h: Harness, id: string, publish = true) {
  const res = await h.post(`/v1/projects/${h.projectId}/forms${publish ? '?publish=true' : ''}`, { as: 'bob', body: FORM(id), headers: { 'Content-Type': 'application/xml' } });
  expect(res.status).toBe(200);
  return json(res);
}
const F = (h: Harness, id: string) => `/v1/projects/${h.projectId}/forms/${id}`;

describe('webformsEnabled', () => {
  test('defaults to true, with enketoId and enketoOnceId null, in every form JSON the UI reads', async () => {
    const h = await harness();
    const created = await form(h, 'wf1', false);
    expect(Object.keys(created)).toEqual(formKeys);
    expect(created).toMatchObject({ webformsEnabled: true, enketoId: null, enketoOnceId: null });
    for (const extended of [false, true]) {
      const headers: Record<string, string> = extended ? { 'X-Extended-Metadata': 'true' } : {};
      const one = await json(await h.get(F(h, 'wf1'), { as: 'bob', headers }));
      expect(one).toMatchObject({ webformsEnabled: true, enketoId: null, enketoOnceId: null });
      const draft = await json(await h.get(`${F(h, 'wf1')}/draft`, { as: 'bob', headers }));
      expect(draft).toMatchObject({ webformsEnabled: true, enketoId: null });
      const list = await json(await h.get(`/v1/projects/${h.projectId}/forms`, { as: 'bob', headers }));
      expect(list.find((f: { xmlFormId: string }) => f.xmlFormId === 'wf1')).toMatchObject({ webformsEnabled: true, enketoId: null });
    }
  });

  test('PATCH F {webformsEnabled: false} then true; audited as form.update; only that changes', async () => {
    const h = await harness();
    await form(h, 'wf2');
    const off = await h.patch(F(h, 'wf2'), { as: 'bob', body: { webformsEnabled: false } });
    expect(off.status).toBe(200);
    const offBody = await json(off);
    expect(Object.keys(offBody)).toEqual(formKeys);
    expect(offBody).toMatchObject({ webformsEnabled: false, state: 'open', enketoId: expect.stringMatching(/^[A-Za-z0-9]{16}$/) });
    expect(offBody.updatedAt).not.toBeNull();
    expect((await json(await h.get(F(h, 'wf2'), { as: 'bob' }))).webformsEnabled).toBe(false);

    const on = await h.patch(F(h, 'wf2'), { as: 'bob', body: { webformsEnabled: true } });
    expect(on.status).toBe(200);
    expect((await json(on)).webformsEnabled).toBe(true);
    expect((await json(await h.get(F(h, 'wf2'), { as: 'bob' }))).webformsEnabled).toBe(true);

    const audits = (await h.audits()).filter((a) => a.action === 'form.update');
    expect(audits.map((a) => a.details)).toEqual([{ data: { webformsEnabled: false } }, { data: { webformsEnabled: true } }]);
  });

  test('PATCH F by someone without form.update → 403.1; a non-boolean → 400', async () => {
    const h = await harness();
    await form(h, 'wf3');
    const chelsea = await h.patch(F(h, 'wf3'), { as: 'chelsea', body: { webformsEnabled: false } });
    expect(chelsea.status).toBe(403);
    const bad = await h.patch(F(h, 'wf3'), { as: 'bob', body: { webformsEnabled: 'no' } });
    expect(bad.status).toBe(400);
    expect((await json(await h.get(F(h, 'wf3'), { as: 'bob' }))).webformsEnabled).toBe(true);
  });

  test('project PUT with forms[].webformsEnabled sets it per form', async () => {
    const h = await harness();
    await form(h, 'wfa');
    await form(h, 'wfb');
    const put = (forms: Array<{ xmlFormId: string; webformsEnabled?: boolean; state?: string }>) =>
      h.put(`/v1/projects/${h.projectId}`, { as: 'alice', body: { name: 'Default Project', description: null, archived: null, forms } });

    const first = await put([{ xmlFormId: 'wfa', webformsEnabled: false }, { xmlFormId: 'wfb', state: 'open' }]);
    expect(first.status).toBe(200);
    expect((await json(await h.get(F(h, 'wfa'), { as: 'bob' }))).webformsEnabled).toBe(false);
    expect((await json(await h.get(F(h, 'wfb'), { as: 'bob' }))).webformsEnabled).toBe(true);

    const second = await put([{ xmlFormId: 'wfa', webformsEnabled: true }, { xmlFormId: 'wfb', webformsEnabled: false }]);
    expect(second.status).toBe(200);
    expect((await json(await h.get(F(h, 'wfa'), { as: 'bob' }))).webformsEnabled).toBe(true);
    expect((await json(await h.get(F(h, 'wfb'), { as: 'bob' }))).webformsEnabled).toBe(false);

    const updates = (await h.audits()).filter((a) => a.action === 'form.update').map((a) => a.details);
    expect(updates).toEqual([
      { data: { webformsEnabled: false } }, { data: { webformsEnabled: true } }, { data: { webformsEnabled: false } },
    ]);
  });
});

describe('assignments by role, as the UI reads them', () => {
  test('/v1/assignments/admin and /v1/assignments/{id}: the actors with that site role', async () => {
    const h = await harness();
    const byName = await h.get('/v1/assignments/admin', { as: 'alice' });
    expect(byName.status).toBe(200);
    const admins = await json(byName);
    expect(admins.map((a: { id: number }) => a.id)).toContain(h.ids.alice);
    for (const a of admins) expect(Object.keys(a)).toEqual(Object.keys(centralJson('simple/api/form-extended').createdBy));
    const roles = await json(await h.get('/v1/roles', { as: 'alice' }));
    const adminRole = roles.find((r: { system: string }) => r.system === 'admin');
    expect(await json(await h.get(`/v1/assignments/${adminRole.id}`, { as: 'alice' }))).toEqual(admins);
    // Only those who may list assignments.
    expect((await h.get('/v1/assignments/admin', { as: 'chelsea' })).status).toBe(403);
  });

  test('F/assignments/app-user: [] until an App User is assigned, then that actor', async () => {
    const h = await harness();
    await form(h, 'wfc');
    expect(await json(await h.get(`${F(h, 'wfc')}/assignments/app-user`, { as: 'bob' }))).toEqual([]);
    const appUser = await json(await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName: 'Tablet' } }));
    expect((await h.post(`${F(h, 'wfc')}/assignments/app-user/${appUser.id}`, { as: 'bob' })).status).toBe(200);
    const assigned = await json(await h.get(`${F(h, 'wfc')}/assignments/app-user`, { as: 'bob' }));
    expect(assigned.map((a: { id: number; type: string }) => [a.id, a.type])).toEqual([[appUser.id, 'field_key']]);
  });
});
