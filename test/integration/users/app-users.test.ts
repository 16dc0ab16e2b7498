import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { actors, fieldKeys, sessions } from '../../../drizzle/schema';
import { fixtureUsers } from '../../fixtures/users';
import { harness, json, type Harness } from '../../helpers/harness';

const AUTH_FAILED = { message: 'Could not authenticate with the provided credentials.', code: 401.2 };
const FORBIDDEN = { message: 'The authentication you provided does not have rights to perform that action.', code: 403.1 };
const NOT_FOUND = { message: 'Could not find the resource you were looking for.', code: 404.1 };
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const TOKEN = /^[A-Za-z0-9!$]{64}$/;
const APP_USER_KEYS = ['projectId', 'id', 'type', 'displayName', 'createdAt', 'updatedAt', 'deletedAt', 'token'];

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

interface AppUser { projectId: number; id: number; type: string; displayName: string; createdAt: string; token: string | null }

async function createAppUser(h: Harness, displayName = 'Collector 1'): Promise<AppUser> {
  const res = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName } });
  expect(res.status).toBe(200);
  return json<AppUser>(res);
}

describe('POST /v1/projects/:id/app-users', () => {
  test('bob creates an App User: Central shape with a token; audit field_key.create', async () => {
    const h = await harness();
    const res = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName: 'Collector 1' } });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(APP_USER_KEYS);
    expect(body).toMatchObject({
      projectId: h.projectId, type: 'field_key', displayName: 'Collector 1', updatedAt: null, deletedAt: null,
    });
    expect(body.createdAt).toMatch(ISO);
    expect(body.token).toMatch(TOKEN);

    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['field_key.create']);
    expect(audits[0]!.actorId).toBe(h.ids.bob);
    const [actor] = await h.db.select().from(actors).where(eq(actors.id, body.id));
    expect(audits[0]!.acteeId).toBe(actor!.acteeId);

    // Its session is stored by hash and never expires on its own.
    const [session] = await h.db.select().from(sessions).where(eq(sessions.actorId, body.id));
    expect(session!.tokenHash).toBe(sha256(body.token));
    expect(session!.expiresAt.getUTCFullYear()).toBe(9999);
    const [key] = await h.db.select().from(fieldKeys).where(eq(fieldKeys.actorId, body.id));
    expect(key).toMatchObject({ projectId: h.projectId, createdBy: h.ids.bob });
  });

  test('alice (admin) may create one too', async () => {
    const h = await harness();
    const res = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'alice', body: { displayName: 'By Alice' } });
    expect(res.status).toBe(200);
  });

  test('chelsea → 403.1; anonymous → 401.2; nothing created', async () => {
    const h = await harness();
    const path = `/v1/projects/${h.projectId}/app-users`;
    const chelsea = await h.post(path, { as: 'chelsea', body: { displayName: 'Nope' } });
    expect(chelsea.status).toBe(403);
    expect(await json(chelsea)).toEqual(FORBIDDEN);
    const anon = await h.post(path, { body: { displayName: 'Nope' } });
    expect(anon.status).toBe(401);
    expect(await json(anon)).toEqual(AUTH_FAILED);
    expect(await h.db.select().from(actors).where(eq(actors.displayName, 'Nope'))).toEqual([]);
    expect(await h.auditActions()).toEqual([]);
  });

  test('missing displayName → 400.2', async () => {
    const h = await harness();
    const res = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: {} });
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({
      message: 'Required parameter displayName missing.', code: 400.2, details: { field: 'displayName' },
    });
  });

  test('unknown project → 404.1', async () => {
    const h = await harness();
    const res = await h.post('/v1/projects/999999/app-users', { as: 'alice', body: { displayName: 'X' } });
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual(NOT_FOUND);
  });
});

describe('GET /v1/projects/:id/app-users', () => {
  test('lists newest first in the same shape', async () => {
    const h = await harness();
    const first = await createAppUser(h, 'First');
    const second = await createAppUser(h, 'Second');
    const res = await h.get(`/v1/projects/${h.projectId}/app-users`, { as: 'bob' });
    expect(res.status).toBe(200);
    const list = await json<AppUser[]>(res);
    const ids = list.map((a) => a.id);
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(first.id));
    expect(ids.indexOf(second.id)).toBeGreaterThanOrEqual(0);
    const row = list.find((a) => a.id === first.id)!;
    expect(Object.keys(row)).toEqual(APP_USER_KEYS);
    expect(row).toEqual(first);
  });

  test('extended adds createdBy (the creating actor) and lastUsed null', async () => {
    const h = await harness();
    const created = await createAppUser(h);
    const res = await h.get(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } });
    expect(res.status).toBe(200);
    const row = (await json(res)).find((a: AppUser) => a.id === created.id);
    expect(row).toMatchObject({ ...created, lastUsed: null });
    expect(row.createdBy).toMatchObject({ id: h.ids.bob, type: 'user', displayName: 'bob' });
    expect(Object.keys(row.createdBy)).toEqual(['id', 'type', 'displayName', 'createdAt', 'updatedAt', 'deletedAt']);
  });

  test('chelsea → 403.1; unknown project → 404.1', async () => {
    const h = await harness();
    const res = await h.get(`/v1/projects/${h.projectId}/app-users`, { as: 'chelsea' });
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual(FORBIDDEN);
    expect((await h.get('/v1/projects/999999/app-users', { as: 'alice' })).status).toBe(404);
  });
});

describe('GET /v1/projects/:id/app-users/:actorId', () => {
  test('returns the App User; unknown or web-user ids → 404.1', async () => {
    const h = await harness();
    const created = await createAppUser(h);
    const res = await h.get(`/v1/projects/${h.projectId}/app-users/${created.id}`, { as: 'bob' });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(APP_USER_KEYS);
    expect(body).toEqual(created);

    for (const id of ['999999', String(h.ids.chelsea)]) {
      const miss = await h.get(`/v1/projects/${h.projectId}/app-users/${id}`, { as: 'bob' });
      expect(miss.status, id).toBe(404);
      expect(await json(miss)).toEqual(NOT_FOUND);
    }
    expect(await json(await h.get(`/v1/projects/${h.projectId}/app-users/junk`, { as: 'bob' }))).toMatchObject({ code: 400.11 });
  });

  test('chelsea → 403.1', async () => {
    const h = await harness();
    const created = await createAppUser(h);
    const res = await h.get(`/v1/projects/${h.projectId}/app-users/${created.id}`, { as: 'chelsea' });
    expect(res.status).toBe(403);
  });
});

describe('DELETE /v1/projects/:id/app-users/:actorId', () => {
  test('removes it from the list, stops its token; audit field_key.delete', async () => {
    const h = await harness();
    const created = await createAppUser(h);
    expect((await h.get('/v1/projects', { as: { key: created.token! } })).status).toBe(200);

    const res = await h.delete(`/v1/projects/${h.projectId}/app-users/${created.id}`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });

    const list = await json<AppUser[]>(await h.get(`/v1/projects/${h.projectId}/app-users`, { as: 'bob' }));
    expect(list.map((a) => a.id)).not.toContain(created.id);
    expect((await h.get(`/v1/projects/${h.projectId}/app-users/${created.id}`, { as: 'bob' })).status).toBe(404);

    const key = await h.get('/v1/projects', { as: { key: created.token! } });
    expect(key.status).toBe(403);
    expect(await json(key)).toEqual(FORBIDDEN);
    expect(await h.db.select().from(sessions).where(eq(sessions.actorId, created.id))).toEqual([]);

    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['field_key.create', 'field_key.delete']);
    expect(audits[1]!.actorId).toBe(h.ids.bob);
  });

  test('chelsea → 403.1; the App User survives', async () => {
    const h = await harness();
    const created = await createAppUser(h);
    const res = await h.delete(`/v1/projects/${h.projectId}/app-users/${created.id}`, { as: 'chelsea' });
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual(FORBIDDEN);
    expect((await h.get('/v1/projects', { as: { key: created.token! } })).status).toBe(200);
  });
});

describe('App User key authentication (/v1/key/{token}/…)', () => {
  test('an App User without roles sees no projects and no users', async () => {
    const h = await harness();
    const { token } = await createAppUser(h);
    const projects = await h.get('/v1/projects', { as: { key: token! } });
    expect(projects.status).toBe(200);
    expect(await json(projects)).toEqual([]);

    // Central lets any authenticated actor call GET /v1/users; without user.list the list is empty.
    const users = await h.get('/v1/users', { as: { key: token! } });
    expect(users.status).toBe(200);
    expect(await json(users)).toEqual([]);
  });

  test('management endpoints → 403.1', async () => {
    const h = await harness();
    const { token } = await createAppUser(h);
    const res = await h.get(`/v1/projects/${h.projectId}/app-users`, { as: { key: token! } });
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual(FORBIDDEN);
    const create = await h.post('/v1/users', { as: { key: token! }, body: { email: 'x@getodk.org', password: 'long-enough-pw' } });
    expect(create.status).toBe(403);
  });

  test('a malformed key → 401.2', async () => {
    const h = await harness();
    const res = await h.get('/v1/projects', { as: { key: 'not-a-token' } });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
  });

  test('a well-formed unknown key → 403.1', async () => {
    const h = await harness();
    const res = await h.get(`/v1/projects/${h.projectId}`, { as: { key: 'Z'.repeat(64) } });
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual(FORBIDDEN);
  });

  test('a web user\'s session token used as a key → 403.1', async () => {
    const h = await harness();
    const res = await h.get('/v1/projects', { as: { key: fixtureUsers.alice.token } });
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual(FORBIDDEN);
  });

  test('with the project viewer role, the key lists the Default Project', async () => {
    const h = await harness();
    const created = await createAppUser(h);
    const grant = await h.post(`/v1/projects/${h.projectId}/assignments/viewer/${created.id}`, { as: 'alice' });
    expect(grant.status).toBe(200);
    const res = await h.request('GET', `/v1/key/${created.token}/projects`);
    expect(res.status).toBe(200);
    const list = await json(res);
    expect(list.map((p: { id: number; name: string }) => [p.id, p.name])).toEqual([[h.projectId, 'Default Project']]);
  });
});

describe('revoking an App User: DELETE /v1/sessions/{token}', () => {
  test('bob revokes: token null in the list, the key stops working; audit field_key.session.end', async () => {
    const h = await harness();
    const created = await createAppUser(h);
    const res = await h.delete(`/v1/sessions/${encodeURIComponent(created.token!)}`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });

    const list = await json<AppUser[]>(await h.get(`/v1/projects/${h.projectId}/app-users`, { as: 'bob' }));
    const row = list.find((a) => a.id === created.id);
    expect(row).toBeDefined();
    expect(row!.token).toBeNull();

    const key = await h.get('/v1/projects', { as: { key: created.token! } });
    expect(key.status).toBe(403);
    expect(await json(key)).toEqual(FORBIDDEN);

    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['field_key.create', 'field_key.session.end']);
    const [actor] = await h.db.select().from(actors).where(eq(actors.id, created.id));
    expect(audits[1]).toMatchObject({ actorId: h.ids.bob, acteeId: actor!.acteeId });
  });

  test('revoked App Users are listed after live ones', async () => {
    const h = await harness();
    const older = await createAppUser(h, 'Older');
    const newer = await createAppUser(h, 'Newer');
    expect((await h.delete(`/v1/sessions/${encodeURIComponent(newer.token!)}`, { as: 'bob' })).status).toBe(200);
    const list = await json<AppUser[]>(await h.get(`/v1/projects/${h.projectId}/app-users`, { as: 'bob' }));
    const ids = list.map((a) => a.id);
    expect(ids.indexOf(older.id)).toBeLessThan(ids.indexOf(newer.id));
  });

  test('chelsea cannot revoke → 403.1', async () => {
    const h = await harness();
    const created = await createAppUser(h);
    const res = await h.delete(`/v1/sessions/${encodeURIComponent(created.token!)}`, { as: 'chelsea' });
    expect(res.status).toBe(403);
    expect((await h.get('/v1/projects', { as: { key: created.token! } })).status).toBe(200);
  });
});
