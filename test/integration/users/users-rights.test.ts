/**
 * The role matrix of the user routes: anonymous, alice (administrator), bob (project manager),
 * chelsea (no role; the target of the per-user routes, so "self" for her), an App User, as Central.
 * Each cell is a test with its own rolled-back harness.
 */
import { describe, expect, test } from 'vitest';
import { fixtureUsers } from '../../fixtures/users';
import { harness, json, type As, type Harness } from '../../helpers/harness';

type Who = 'anonymous' | 'alice' | 'bob' | 'chelsea' | 'appUser';
type Route = { name: string; call: (h: Harness, as: As) => Promise<Response>; expect: Record<Who, number> };

const { chelsea } = fixtureUsers;
const routes: Route[] = [
  {
    name: 'GET /v1/users',
    call: (h, as) => h.get('/v1/users', { as }),
    expect: { anonymous: 401, alice: 200, bob: 200, chelsea: 200, appUser: 200 },
  },
  {
    name: 'POST /v1/users',
    call: (h, as) => h.post('/v1/users', { as, body: { email: 'new@getodk.org' } }),
    expect: { anonymous: 401, alice: 200, bob: 403, chelsea: 403, appUser: 403 },
  },
  {
    name: 'GET /v1/users/current',
    call: (h, as) => h.get('/v1/users/current', { as }),
    expect: { anonymous: 401, alice: 200, bob: 200, chelsea: 200, appUser: 404 },
  },
  {
    name: 'GET /v1/users/:chelsea',
    call: (h, as) => h.get(`/v1/users/${h.ids.chelsea}`, { as }),
    expect: { anonymous: 401, alice: 200, bob: 403, chelsea: 200, appUser: 403 },
  },
  {
    name: 'PATCH /v1/users/:chelsea',
    call: (h, as) => h.patch(`/v1/users/${h.ids.chelsea}`, { as, body: { displayName: 'Renamed' } }),
    expect: { anonymous: 401, alice: 200, bob: 403, chelsea: 200, appUser: 403 },
  },
  {
    name: 'PUT /v1/users/:chelsea/password',
    call: (h, as) => h.put(`/v1/users/${h.ids.chelsea}/password`, { as, body: { old: chelsea.password, new: 'a brand new passphrase' } }),
    expect: { anonymous: 401, alice: 200, bob: 403, chelsea: 200, appUser: 403 },
  },
  {
    name: 'DELETE /v1/users/:chelsea',
    call: (h, as) => h.delete(`/v1/users/${h.ids.chelsea}`, { as }),
    expect: { anonymous: 401, alice: 200, bob: 403, chelsea: 403, appUser: 403 },
  },
  {
    name: 'POST /v1/users/reset/initiate',
    call: (h, as) => h.post('/v1/users/reset/initiate', { as, body: { email: chelsea.email } }),
    expect: { anonymous: 200, alice: 200, bob: 200, chelsea: 200, appUser: 200 },
  },
  {
    name: 'POST /v1/users/reset/initiate?invalidate=true',
    call: (h, as) => h.post('/v1/users/reset/initiate?invalidate=true', { as, body: { email: chelsea.email } }),
    expect: { anonymous: 401, alice: 200, bob: 403, chelsea: 403, appUser: 403 },
  },
  {
    name: 'POST /v1/users/reset/verify',
    call: (h, as) => h.post('/v1/users/reset/verify', { as, body: { new: 'a brand new passphrase' } }),
    expect: { anonymous: 401, alice: 403, bob: 403, chelsea: 403, appUser: 403 },
  },
];

async function credentials(h: Harness, who: Who): Promise<As> {
  if (who !== 'appUser') return who;
  const res = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName: 'collector' } });
  return { key: (await json<{ token: string }>(res)).token };
}

describe('user routes: who may do what', () => {
  for (const route of routes) {
    describe(route.name, () => {
      for (const [who, status] of Object.entries(route.expect) as Array<[Who, number]>) {
        test(`${who} → ${status}`, async () => {
          const h = await harness();
          const res = await route.call(h, await credentials(h, who));
          expect(res.status).toBe(status);
          // Without user.list, the list is empty rather than refused (Central).
          if (route.name === 'GET /v1/users' && who !== 'alice' && status === 200) expect(await json(res)).toEqual([]);
        });
      }
    });
  }
});
