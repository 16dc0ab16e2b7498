import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { actors, projects } from '../../../drizzle/schema';
import { harness, json, type As, type Harness } from '../../helpers/harness';
import { userWithRole } from '../../helpers/roles';

const FORBIDDEN = { message: 'The authentication you provided does not have rights to perform that action.', code: 403.1 };
const EXTENDED_KEYS = ['projectId', 'id', 'type', 'displayName', 'createdAt', 'updatedAt', 'deletedAt', 'token', 'createdBy', 'lastUsed', 'properties'];

const props = (h: Harness) => `/v1/projects/${h.projectId}/actor-properties`;
const appUsers = (h: Harness) => `/v1/projects/${h.projectId}/app-users`;

async function define(h: Harness, ...names: string[]): Promise<void> {
  for (const name of names) {
    const res = await h.post(props(h), { as: 'bob', body: { name } });
    expect(res.status, await res.clone().text()).toBe(200);
  }
}

async function createAppUser(h: Harness, body: Record<string, unknown>): Promise<{ id: number; token: string }> {
  const res = await h.post(appUsers(h), { as: 'bob', body });
  expect(res.status, await res.clone().text()).toBe(200);
  return json(res);
}

describe('P/actor-properties', () => {
  test('POST defines a name: { success }; audit actor_property.create on the project; GET lists them by name', async () => {
    const h = await harness();
    const res = await h.post(props(h), { as: 'bob', body: { name: 'region' } });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    await define(h, 'plot_id');
    expect(await json(await h.get(props(h), { as: 'bob' }))).toEqual([{ name: 'plot_id' }, { name: 'region' }]);

    const audits = await h.audits();
    expect(audits.map((a) => [a.action, a.details])).toEqual([
      ['actor_property.create', { name: 'region' }], ['actor_property.create', { name: 'plot_id' }],
    ]);
    const [project] = await h.db.select().from(projects).where(eq(projects.id, h.projectId));
    expect(audits.every((a) => a.acteeId === project!.acteeId && a.actorId === h.ids.bob)).toBe(true);
    const grouped = await json(await h.get('/v1/audits?action=project', { as: 'alice' }));
    expect(grouped.map((a: { action: string }) => a.action).slice(0, 2)).toEqual(['actor_property.create', 'actor_property.create']);
  });

  test('names as Central: reserved and malformed names 400.8; a repeated name 409.3', async () => {
    const h = await harness();
    for (const name of ['name', 'Label', '__system', 'displayName', 'DISPLAYNAME', '1abc', 'a b', '', 42, null]) {
      const res = await h.post(props(h), { as: 'bob', body: { name } });
      expect(res.status, String(name)).toBe(400);
      expect(await json(res)).toMatchObject({ code: 400.8, details: { field: 'name', reason: 'This is not a valid property name.' } });
    }
    expect((await h.post(props(h), { as: 'bob', body: {} })).status).toBe(400);
    for (const name of ['région', '_x', 'a.b-c_1']) expect((await h.post(props(h), { as: 'bob', body: { name } })).status).toBe(200);
    const again = await h.post(props(h), { as: 'bob', body: { name: 'région' } });
    expect(again.status).toBe(409);
    expect((await json(again)).code).toBe(409.3);
  });

  test('extended: each name with the distinct values in use, sorted; [] when none', async () => {
    const h = await harness();
    await define(h, 'region', 'plot_id', 'team');
    const a = await createAppUser(h, { displayName: 'A', properties: { region: 'north', plot_id: 'A1' } });
    await createAppUser(h, { displayName: 'B', properties: { region: 'south' } });
    await createAppUser(h, { displayName: 'C', properties: { region: 'north' } });
    expect(a).not.toHaveProperty('properties');
    const res = await h.get(props(h), { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } });
    expect(await json(res)).toEqual([
      { name: 'plot_id', values: ['A1'] },
      { name: 'region', values: ['north', 'south'] },
      { name: 'team', values: [] },
    ]);
  });

  test('role matrix: admin and manager define and list; viewer lists only; data collector, App User, chelsea 403.1; anonymous 401.2', async () => {
    const h = await harness();
    const viewer = await userWithRole(h, 'viewer', 'viewer@example.org');
    const collector = await userWithRole(h, 'formfill', 'collector@example.org');
    const appUser = await createAppUser(h, { displayName: 'AU' });
    expect((await h.post(props(h), { as: 'alice', body: { name: 'a' } })).status).toBe(200);
    expect((await h.post(props(h), { as: 'bob', body: { name: 'b' } })).status).toBe(200);
    expect((await h.get(props(h), { as: viewer })).status).toBe(200);
    const viewerPost = await h.post(props(h), { as: viewer, body: { name: 'c' } });
    expect(viewerPost.status).toBe(403);
    for (const as of [collector, { key: appUser.token }, 'chelsea'] as As[]) {
      expect(await json(await h.get(props(h), { as }))).toEqual(FORBIDDEN);
      expect((await h.post(props(h), { as, body: { name: 'c' } })).status).toBe(403);
    }
    expect((await h.get(props(h))).status).toBe(401);
    expect((await h.post(props(h), { body: { name: 'c' } })).status).toBe(401);
    expect((await h.get('/v1/projects/999999/actor-properties', { as: 'alice' })).status).toBe(404);
  });

  test('the verbs are in the roles as Central grants them (GET /v1/roles)', async () => {
    const h = await harness();
    const roles = await json<Array<{ system: string; verbs: string[] }>>(await h.get('/v1/roles', { as: 'chelsea' }));
    const verbs = (system: string) => roles.find((r) => r.system === system)!.verbs;
    for (const system of ['admin', 'manager']) {
      expect(verbs(system)).toEqual(expect.arrayContaining(['actor_property.list', 'actor_property.update', 'field_key.update']));
    }
    expect(verbs('viewer')).toContain('actor_property.list');
    expect(verbs('viewer')).not.toContain('actor_property.update');
    for (const system of ['formfill', 'app-user', 'pub-link']) expect(verbs(system).some((v) => v.startsWith('actor_property'))).toBe(false);
  });
});

describe('App User properties', () => {
  test('POST with properties sets them (audit field_key.property.set); GET P/app-users[/:id] extended shows them, null without', async () => {
    const h = await harness();
    await define(h, 'region');
    const a = await createAppUser(h, { displayName: 'A', properties: { region: 'north' } });
    const b = await createAppUser(h, { displayName: 'B' });
    await createAppUser(h, { displayName: 'C', properties: {} });

    const list = await json(await h.get(appUsers(h), { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    for (const u of list) expect(Object.keys(u)).toEqual(EXTENDED_KEYS);
    expect(list.find((u: { id: number }) => u.id === a.id).properties).toEqual({ region: 'north' });
    expect(list.find((u: { id: number }) => u.id === b.id).properties).toBeNull();
    const plain = await json(await h.get(appUsers(h), { as: 'bob' }));
    expect(plain[0]).not.toHaveProperty('properties');

    const one = await json(await h.get(`${appUsers(h)}/${a.id}`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(Object.keys(one)).toEqual(EXTENDED_KEYS);
    expect(one).toMatchObject({ properties: { region: 'north' }, createdBy: { id: h.ids.bob }, lastUsed: null });
    expect(await json(await h.get(`${appUsers(h)}/${a.id}`, { as: 'bob' }))).not.toHaveProperty('createdBy');

    const audits = (await h.audits()).filter((r) => r.action === 'field_key.property.set');
    expect(audits).toHaveLength(1);
    const [actor] = await h.db.select().from(actors).where(eq(actors.id, a.id));
    expect(audits[0]).toMatchObject({ actorId: h.ids.bob, acteeId: actor!.acteeId, details: { properties: { region: 'north' } } });
  });

  test('POST with a bad property creates nothing (one transaction)', async () => {
    const h = await harness();
    const res = await h.post(appUsers(h), { as: 'bob', body: { displayName: 'Bad', properties: { nope: 'x' } } });
    expect(res.status).toBe(400);
    expect(await h.db.select().from(actors).where(eq(actors.displayName, 'Bad'))).toEqual([]);
    expect(await h.auditActions()).toEqual([]);
  });

  test('PATCH P/app-users/:id sets, unsets (null or blank), leaves others; no properties is a no-op', async () => {
    const h = await harness();
    await define(h, 'region', 'worker_id');
    const a = await createAppUser(h, { displayName: 'A' });
    const path = `${appUsers(h)}/${a.id}`;
    const patch = async (body: unknown) => {
      const res = await h.patch(path, { as: 'bob', body });
      expect(res.status, await res.clone().text()).toBe(200);
      return json(res);
    };
    const first = await patch({ properties: { region: 'north', worker_id: ' 42 ' } });
    expect(Object.keys(first)).toEqual(EXTENDED_KEYS);
    expect(first.properties).toEqual({ region: 'north', worker_id: '42' });
    expect((await patch({ properties: { region: 'south', worker_id: null } })).properties).toEqual({ region: 'south' });
    expect((await patch({})).properties).toEqual({ region: 'south' });
    expect((await patch({ properties: { region: '  ' } })).properties).toBeNull();

    expect((await h.auditActions()).filter((x) => x.endsWith('property.set'))).toEqual(['field_key.property.set', 'field_key.property.set', 'field_key.property.set']);
    const details = (await h.audits()).filter((r) => r.action === 'field_key.property.set').map((r) => r.details);
    expect(details.slice(1)).toEqual([{ properties: { region: 'south', worker_id: null } }, { properties: { region: null } }]);
  });

  test('PATCH errors: 400.8 for an unknown name, a non-object, a non-string value; 404.1; rights', async () => {
    const h = await harness();
    await define(h, 'region');
    const a = await createAppUser(h, { displayName: 'A' });
    const path = `${appUsers(h)}/${a.id}`;
    const unknown = await json(await h.patch(path, { as: 'bob', body: { properties: { nonexistent: 'v' } } }));
    expect(unknown).toMatchObject({ code: 400.8, details: { field: 'properties', value: 'nonexistent' } });
    for (const properties of ['not an object', ['a', 'b']]) {
      expect((await json(await h.patch(path, { as: 'bob', body: { properties } }))).code).toBe(400.8);
    }
    expect(await json(await h.patch(path, { as: 'bob', body: { properties: { region: 42 } } }))).toMatchObject({ code: 400.8, details: { field: 'region' } });
    expect((await h.patch(`${appUsers(h)}/999999`, { as: 'bob', body: {} })).status).toBe(404);

    const viewer = await userWithRole(h, 'viewer', 'viewer@example.org');
    expect((await h.patch(path, { as: viewer, body: { properties: { region: 'x' } } })).status).toBe(403);
    expect((await h.patch(path, { as: 'chelsea', body: { properties: { region: 'x' } } })).status).toBe(403);
    expect((await h.patch(path, { as: { key: a.token }, body: { properties: { region: 'x' } } })).status).toBe(403);
    expect((await h.patch(path, { body: { properties: { region: 'x' } } })).status).toBe(401);
    expect((await h.patch(path, { as: 'alice', body: { properties: { region: 'x' } } })).status).toBe(200);
  });

  test('an App User key shows its never-expiring session at /v1/key/{token}/sessions/restore, and may not end it', async () => {
    const h = await harness();
    const a = await createAppUser(h, { displayName: 'A' });
    const res = await h.get('/v1/sessions/restore', { as: { key: a.token } });
    expect(res.status).toBe(200);
    expect((await json(res)).expiresAt).toBe('9999-12-31T23:59:59.000Z');
    expect(await json(await h.delete('/v1/sessions/current', { as: { key: a.token } }))).toEqual(FORBIDDEN);
    expect((await h.delete(`/v1/sessions/${a.token}`, { as: { key: a.token } })).status).toBe(403);
    expect((await h.get('/v1/sessions/restore', { as: { key: a.token } })).status).toBe(200);
  });
});
