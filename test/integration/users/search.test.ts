/** GET /v1/users search as Central (trigram similarity, literal wildcards), exact email matches, lastLoginAt. */
import { describe, expect, test } from 'vitest';
import { fixtureUsers } from '../../fixtures/users';
import { harness, json, type Harness } from '../../helpers/harness';

type U = { email: string; displayName: string; lastLoginAt: string | null };

async function create(h: Harness, email: string, displayName: string) {
  expect((await h.post('/v1/users', { as: 'alice', body: { email, displayName } })).status).toBe(200);
}
const search = async (h: Harness, q: string, as: 'alice' | 'chelsea' = 'alice') =>
  json<U[]>(await h.get(`/v1/users?q=${encodeURIComponent(q)}`, { as }));
const names = (list: U[]) => list.map((u) => u.displayName);

describe('GET /v1/users?q=', () => {
  test('display names and emails match by substring or likeness, best first', async () => {
    const h = await harness();
    await create(h, 'test@email.org', 'alicia');
    expect(names(await search(h, 'alice'))).toEqual(['alice', 'alicia']);
    await create(h, 'david@closeddatakit.org', 'David');
    expect(names(await search(h, 'getodk')).sort()).toEqual(['alice', 'bob', 'chelsea']);
    // Case does not matter, and a prefix of an email is enough.
    await create(h, 'getouttahere@closeddatakit.org', 'Gert');
    expect(names(await search(h, 'GETO')).sort()).toEqual(['Gert', 'alice', 'bob', 'chelsea']);
  });

  test('a phrase of several words ranks by likeness (Central: chelsea, then the shorter address)', async () => {
    const h = await harness();
    expect(names(await search(h, 'chelsea getodk'))).toEqual(['chelsea', 'bob', 'alice']);
  });

  test('%, _ and \\ are literal', async () => {
    const h = await harness();
    await create(h, 'abcdef_hijklmnopqrstuvwxyz@example.com', 'David');
    await create(h, 'percent@example.com', '100% sure');
    expect(await search(h, '%')).toHaveLength(1);
    expect(names(await search(h, '%'))).toEqual(['100% sure']);
    expect(names(await search(h, '_'))).toEqual(['David']);
    expect(await search(h, 'zz%zz')).toEqual([]);
    await create(h, 'slash@closeddatakit.org', 'geto\\uttahererightnow!');
    expect(names(await search(h, 'GETO\\')).sort()).toEqual(['bob', 'geto\\uttahererightnow!']);
  });

  test('an exact email is found by anyone signed in, also at /v1/users/ (Central\'s trailing slash)', async () => {
    const h = await harness();
    const res = await h.get(`/v1/users/?q=${encodeURIComponent(fixtureUsers.alice.email)}`, { as: 'chelsea' });
    expect(res.status).toBe(200);
    expect((await json<U[]>(res)).map((u) => u.email)).toEqual([fixtureUsers.alice.email]);
    // A near miss is a search, which chelsea may not do.
    expect(await search(h, 'alice@getodk', 'chelsea')).toEqual([]);
    expect((await h.get(`/v1/users/?q=${encodeURIComponent(fixtureUsers.alice.email)}`)).status).toBe(401);
    expect((await json<U[]>(await h.get('/v1/users/', { as: 'alice' }))).length).toBeGreaterThanOrEqual(3);
  });

  test('deleted users are never found', async () => {
    const h = await harness();
    expect((await h.delete(`/v1/users/${h.ids.chelsea}`, { as: 'alice' })).status).toBe(200);
    expect(names(await search(h, 'chelsea'))).not.toContain('chelsea');
    // Her address is now only a search, which finds the look-alike getodk.org addresses.
    expect(names(await search(h, fixtureUsers.chelsea.email))).not.toContain('chelsea');
  });
});

describe('lastLoginAt', () => {
  test('null until the first login; each login through POST /v1/sessions moves it on; Basic does not', async () => {
    const h = await harness();
    await create(h, 'newuser@getodk.org', 'New');
    const [fresh] = await search(h, 'newuser@getodk.org');
    expect(fresh!.lastLoginAt).toBeNull();

    const { email, password } = fixtureUsers.chelsea;
    const before = (await json<U>(await h.get(`/v1/users/${h.ids.chelsea}`, { as: 'alice' }))).lastLoginAt;
    expect((await h.get('/v1/users/current', { as: { basic: [email, password] } })).status).toBe(200);
    expect((await json<U>(await h.get(`/v1/users/${h.ids.chelsea}`, { as: 'alice' }))).lastLoginAt).toBe(before);

    expect((await h.post('/v1/sessions', { body: { email, password } })).status).toBe(200);
    const first = (await json<U>(await h.get('/v1/users/current', { as: 'chelsea' }))).lastLoginAt;
    expect(first).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    await new Promise((r) => setTimeout(r, 5));
    expect((await h.post('/v1/sessions', { body: { email, password } })).status).toBe(200);
    const second = (await json<U>(await h.get('/v1/users/current', { as: 'chelsea' }))).lastLoginAt;
    expect(Date.parse(second!)).toBeGreaterThan(Date.parse(first!));
    // A failed login changes nothing.
    expect((await h.post('/v1/sessions', { body: { email, password: 'not the password' } })).status).toBe(401);
    expect((await json<U>(await h.get('/v1/users/current', { as: 'chelsea' }))).lastLoginAt).toBe(second);
  });
});
