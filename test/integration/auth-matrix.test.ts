import { describe, expect, test } from 'vitest';
import { harness, json, type As, type Harness } from '../helpers/harness';

/**
 * Who may call what: every foundation endpoint × every kind of caller, with the status each gets.
 * `:p` is 'Default Project' (bob manages it); `:none` is a project id that does not exist.
 * Each case runs in its own rolled-back transaction, so mutating rows do not affect one another.
 */
type Caller = 'anonymous' | 'alice' | 'bob' | 'chelsea' | 'appUser';
type Expect = Record<Caller, number>;

interface Row { method: string; path: string; body?: unknown; expect: Expect }

const all = (status: number): Expect => ({ anonymous: status, alice: status, bob: status, chelsea: status, appUser: status });
/** Everyone who authenticated gets `status`; anonymous gets 401.2 first, before anything is loaded (Central's authHandler). */
const signedIn = (status: number): Expect => ({ ...all(status), anonymous: 401 });
/** alice only (site admin). */
const adminOnly: Expect = { anonymous: 401, alice: 200, bob: 403, chelsea: 403, appUser: 403 };
/** alice, and bob as manager of :p. */
const projectManager: Expect = { anonymous: 401, alice: 200, bob: 200, chelsea: 403, appUser: 403 };

const rows: Row[] = [
  // The spec's one exception to Central's 401: no credentials at all lists no projects.
  { method: 'GET', path: '/v1/projects', expect: all(200) },
  { method: 'POST', path: '/v1/projects', body: { name: 'Matrix' }, expect: adminOnly },
  { method: 'GET', path: '/v1/projects/:p', expect: projectManager },
  { method: 'PATCH', path: '/v1/projects/:p', body: { name: 'Matrix' }, expect: projectManager },
  { method: 'PUT', path: '/v1/projects/:p', body: { name: 'Matrix' }, expect: projectManager },
  { method: 'DELETE', path: '/v1/projects/:p', expect: projectManager },
  { method: 'GET', path: '/v1/projects/:none', expect: signedIn(404) },
  { method: 'PATCH', path: '/v1/projects/:none', body: { name: 'Matrix' }, expect: signedIn(404) },
  { method: 'DELETE', path: '/v1/projects/:none', expect: signedIn(404) },
  // Listing users: anonymous is refused with 401.2 (Central); others without user.list get [].
  { method: 'GET', path: '/v1/users', expect: signedIn(200) },
  // An unknown route stays 404 for anyone.
  { method: 'GET', path: '/v1/no-such-thing', expect: all(404) },
  { method: 'POST', path: '/v1/users', body: { email: 'matrix@getodk.org' }, expect: adminOnly },
  { method: 'GET', path: '/v1/audits', expect: adminOnly },
  { method: 'GET', path: '/v1/assignments', expect: adminOnly },
  { method: 'GET', path: '/v1/assignments/admin', expect: adminOnly },
  { method: 'GET', path: '/v1/projects/:p/assignments', expect: projectManager },
  { method: 'GET', path: '/v1/projects/:p/assignments/manager', expect: projectManager },
  { method: 'GET', path: '/v1/projects/:p/assignments/forms', expect: projectManager },
  { method: 'GET', path: '/v1/projects/:none/assignments', expect: signedIn(404) },
  { method: 'GET', path: '/v1/projects/:p/app-users', expect: projectManager },
  { method: 'POST', path: '/v1/projects/:p/app-users', body: { displayName: 'Matrix' }, expect: projectManager },
  { method: 'GET', path: '/v1/projects/:none/app-users', expect: signedIn(404) },
  { method: 'GET', path: '/v1/roles', expect: signedIn(200) },
  { method: 'GET', path: '/v1/roles/admin', expect: signedIn(200) },
];

const callers: Caller[] = ['anonymous', 'alice', 'bob', 'chelsea', 'appUser'];
const cases = rows.flatMap((r) => callers.map((caller) => [r.method, r.path, caller, r.expect[caller], r.body] as const));

/** An App User of Default Project (no form or project assignments), created by alice. */
async function appUser(h: Harness): Promise<As> {
  const res = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'alice', body: { displayName: 'Matrix App User' } });
  expect(res.status).toBe(200);
  return { key: (await json<{ token: string }>(res)).token };
}

describe('auth matrix', () => {
  test.each(cases)('%s %s as %s → %i', async (method, template, caller, status, body) => {
    const h = await harness();
    const as: As = caller === 'appUser' ? await appUser(h) : caller;
    const path = template.replace(':p', String(h.projectId)).replace(':none', '999999');
    const res = await h.request(method, path, { as, body });
    expect(res.status).toBe(status);
    if (status !== 200) {
      const problem = await json<{ code: number }>(res);
      expect(Math.floor(problem.code)).toBe(status);
      expect({ 401: [401.2], 403: [403.1], 404: [404.1] }[status]).toContain(problem.code);
    }
  });

  test.each(['appUser', 'chelsea', 'anonymous'] as const)('GET /v1/projects as %s lists nothing', async (caller) => {
    const h = await harness();
    const as: As = caller === 'appUser' ? await appUser(h) : caller;
    expect(await json(await h.get('/v1/projects', { as }))).toEqual([]);
  });

  test.each(['bob', 'chelsea', 'appUser'] as const)('GET /v1/users as %s (no user.list) gives []', async (caller) => {
    const h = await harness();
    const as: As = caller === 'appUser' ? await appUser(h) : caller;
    expect(await json(await h.get('/v1/users', { as }))).toEqual([]);
  });
});
