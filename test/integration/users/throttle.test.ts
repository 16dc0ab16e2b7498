/**
 * Login throttling (lib/throttle): failed password checks counted per email and per client
 * address in the database; 429.1 with Retry-After past the limit, without running bcrypt; the
 * same for unknown emails; Basic auth through the same limiter; an audit when a lock starts.
 */
import { describe, expect, test } from 'vitest';
import { fixtureUsers } from '../../fixtures/users';
import { harness, json, type Harness } from '../../helpers/harness';

const bob = fixtureUsers.bob;
const login = (h: Harness, email: string, password: string) => h.post('/v1/sessions', { body: { email, password } });

describe('login throttling', () => {
  test('after LOGIN_MAX_FAILURES wrong passwords the account is locked: 429.1 with Retry-After, even for the right password', async () => {
    const h = await harness({ LOGIN_MAX_FAILURES: 3 });
    for (let i = 0; i < 3; i += 1) expect((await login(h, bob.email, 'wrong password!')).status).toBe(401);
    const locked = await login(h, bob.email, bob.password);
    expect(locked.status).toBe(429);
    const body = await json(locked);
    expect(body.code).toBe(429.1);
    const retry = Number(locked.headers.get('retry-after'));
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(15 * 60);
    expect(body.details).toEqual({ retryAfter: retry });
    // The lock is per email: another account is unaffected.
    expect((await login(h, fixtureUsers.chelsea.email, fixtureUsers.chelsea.password)).status).toBe(200);
    // The email is matched case-insensitively, as logins are.
    expect((await login(h, bob.email.toUpperCase(), bob.password)).status).toBe(429);
    const audits = (await h.audits()).filter((a) => a.action === 'user.session.throttle');
    expect(audits).toHaveLength(1);
    expect(audits[0]!.details).toMatchObject({ email: bob.email.toLowerCase() });
  });

  test('an unknown email is answered exactly like a known one (no account enumeration)', async () => {
    const h = await harness({ LOGIN_MAX_FAILURES: 2 });
    const unknown = 'nobody@getodk.org';
    const answers: Array<[number, unknown]> = [];
    for (const email of [unknown, bob.email]) {
      for (let i = 0; i < 3; i += 1) {
        const res = await login(h, email, 'wrong password!');
        const body = await json(res);
        // Seconds left may differ by one between the two runs; everything else must be identical.
        answers.push([res.status, { ...body, message: String(body.message).replace(/\d+/g, 'N'), details: body.details ? { retryAfter: 'N' } : undefined }]);
      }
    }
    expect(answers.slice(0, 3)).toEqual(answers.slice(3));
    expect(answers.map(([s]) => s)).toEqual([401, 401, 429, 401, 401, 429]);
  });

  test('a locked attempt costs no bcrypt: answered much faster than a password check', async () => {
    const h = await harness({ LOGIN_MAX_FAILURES: 1, BCRYPT_COST: 10 });
    const t0 = performance.now();
    expect((await login(h, bob.email, 'wrong password!')).status).toBe(401);
    const checked = performance.now() - t0;
    const t1 = performance.now();
    for (let i = 0; i < 5; i += 1) expect((await login(h, bob.email, 'wrong password!')).status).toBe(429);
    const locked = (performance.now() - t1) / 5;
    expect(locked).toBeLessThan(checked / 2);
  });

  test('a successful login clears the count', async () => {
    const h = await harness({ LOGIN_MAX_FAILURES: 3 });
    for (let i = 0; i < 2; i += 1) expect((await login(h, bob.email, 'wrong password!')).status).toBe(401);
    expect((await login(h, bob.email, bob.password)).status).toBe(200);
    for (let i = 0; i < 2; i += 1) expect((await login(h, bob.email, 'wrong password!')).status).toBe(401);
    expect((await login(h, bob.email, bob.password)).status).toBe(200);
  });

  test('the lock ends after LOGIN_LOCK_MINUTES', async () => {
    const h = await harness({ LOGIN_MAX_FAILURES: 1, LOGIN_LOCK_MINUTES: 0.01 });
    expect((await login(h, bob.email, 'wrong password!')).status).toBe(401);
    expect((await login(h, bob.email, bob.password)).status).toBe(429);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await login(h, bob.email, bob.password)).status).toBe(200);
  });

  test('Basic auth goes through the same limiter', async () => {
    const h = await harness({ LOGIN_MAX_FAILURES: 2 });
    for (let i = 0; i < 2; i += 1) expect((await h.get('/v1/users/current', { as: { basic: [bob.email, 'wrong password!'] } })).status).toBe(401);
    const res = await h.get('/v1/users/current', { as: { basic: [bob.email, bob.password] } });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await login(h, bob.email, bob.password)).status).toBe(429);
  });

  test('a verified Basic credential is remembered briefly, and forgotten when the password changes', async () => {
    const h = await harness();
    const basic = { basic: [bob.email, bob.password] as [string, string] };
    expect((await h.get('/v1/users/current', { as: basic })).status).toBe(200);
    expect((await h.get('/v1/users/current', { as: basic })).status).toBe(200);
    const changed = await h.put(`/v1/users/${h.ids.bob}/password`, { as: 'bob', body: { old: bob.password, new: 'an entirely new passphrase 42' } });
    expect(changed.status).toBe(200);
    expect((await h.get('/v1/users/current', { as: basic })).status).toBe(401);
  });

  test('per client address: a spray over many emails from one address is locked too (real socket)', async () => {
    const h = await harness({ LOGIN_MAX_FAILURES: 100, LOGIN_MAX_FAILURES_PER_ADDRESS: 3 });
    const base = await h.listen();
    const post = (email: string, password: string) => fetch(`${base}/v1/sessions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email, password }),
    });
    for (const email of ['a@getodk.org', 'b@getodk.org', 'c@getodk.org']) expect((await post(email, 'wrong password!')).status).toBe(401);
    const res = await post(bob.email, bob.password);
    expect(res.status).toBe(429);
    expect((await json(res)).code).toBe(429.1);
  });
});
