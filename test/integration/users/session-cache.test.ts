import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { sessions } from '../../../drizzle/schema';
import { fixtureUsers } from '../../fixtures/users';
import { harness, json } from '../../helpers/harness';

// The session cache (SESSION_CACHE_SECONDS, off in the other tests) saves a query per request; it
// must never let a token outlive a revocation made through the API in this process.
describe('session lookup cache', () => {
  test('a remembered session is served without the database row; logout through the API ends it at once', async () => {
    const h = await harness({ SESSION_CACHE_SECONDS: 30 });
    const login = await json<{ token: string }>(await h.post('/v1/sessions', { body: { email: fixtureUsers.chelsea.email, password: fixtureUsers.chelsea.password } }));
    expect((await h.get('/v1/users/current', { as: { bearer: login.token } })).status).toBe(200);
    // Proof that the next request is served from memory: the row is expired behind the API's back.
    await h.db.update(sessions).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(sessions.actorId, h.ids.chelsea));
    expect((await h.get('/v1/users/current', { as: { bearer: login.token } })).status).toBe(200);
    // Logging out through the API forgets it immediately.
    expect((await h.delete('/v1/sessions/current', { as: { bearer: login.token } })).status).toBe(200);
    expect((await h.get('/v1/users/current', { as: { bearer: login.token } })).status).toBe(401);
  });

  test('revoking an App User and deleting a user take effect at once despite the cache', async () => {
    const h = await harness({ SESSION_CACHE_SECONDS: 30 });
    const au = await json<{ id: number; token: string }>(await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName: 'Cached tablet' } }));
    await h.post(`/v1/projects/${h.projectId}/assignments/viewer/${au.id}`, { as: 'alice' });
    expect((await h.get('/v1/projects', { as: { key: au.token } })).status).toBe(200);
    expect((await h.delete(`/v1/sessions/${au.token}`, { as: 'bob' })).status).toBe(200);
    expect((await h.get('/v1/projects', { as: { key: au.token } })).status).toBe(403);

    expect((await h.get('/v1/users/current', { as: 'chelsea' })).status).toBe(200);
    expect((await h.delete(`/v1/users/${h.ids.chelsea}`, { as: 'alice' })).status).toBe(200);
    expect((await h.get('/v1/users/current', { as: 'chelsea' })).status).toBe(401);
  });

  test('SESSION_CACHE_SECONDS=0: every request reads the session row', async () => {
    const h = await harness({ SESSION_CACHE_SECONDS: 0 });
    expect((await h.get('/v1/users/current', { as: 'chelsea' })).status).toBe(200);
    await h.db.update(sessions).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(sessions.actorId, h.ids.chelsea));
    expect((await h.get('/v1/users/current', { as: 'chelsea' })).status).toBe(401);
  });
});
