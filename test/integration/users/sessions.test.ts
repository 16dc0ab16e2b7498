import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { projects, sessions } from '../../../drizzle/schema';
import { fixtureUsers } from '../../fixtures/users';
import { harness, json, type Harness } from '../../helpers/harness';
import { systemCtx } from '../../../lib/context';
import { purgeExpiredSessions } from '../../../lib/sessions';

const AUTH_FAILED = { message: 'Could not authenticate with the provided credentials.', code: 401.2 };
const FORBIDDEN = { message: 'The authentication you provided does not have rights to perform that action.', code: 403.1 };
const NOT_FOUND = { message: 'Could not find the resource you were looking for.', code: 404.1 };
const HTTPS_ONLY = { message: 'This authentication method is only available over HTTPS', code: 401.3 };
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const TOKEN = /^[A-Za-z0-9!$]{64}$/;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

async function logIn(h: Harness, who: keyof typeof fixtureUsers = 'chelsea', headers: Record<string, string> = {}) {
  const { email, password } = fixtureUsers[who];
  const res = await h.post('/v1/sessions', { body: { email, password }, headers });
  expect(res.status).toBe(200);
  return { res, body: await json<{ createdAt: string; expiresAt: string; token: string; csrf: string }>(res) };
}

describe('POST /v1/sessions', () => {
  test.each([
    ['password undefined', { email: 'chelsea@getodk.org' }, 400, "Required parameters missing. Expected (email, password), got (email: 'chelsea@getodk.org', password: undefined)."],
    ['password null', { email: 'chelsea@getodk.org', password: null }, 400, "Required parameters missing. Expected (email, password), got (email: 'chelsea@getodk.org', password: null)."],
    ['password empty', { email: 'chelsea@getodk.org', password: '' }, 400, "Required parameters missing. Expected (email, password), got (email: 'chelsea@getodk.org', password: '')."],
    ['password a number', { email: 'chelsea@getodk.org', password: 123 }, 401, 'Could not authenticate with the provided credentials.'],
    ['password an object', { email: 'chelsea@getodk.org', password: {} }, 401, 'Could not authenticate with the provided credentials.'],
    ['email null', { email: null, password: 'n/a' }, 400, "Required parameters missing. Expected (email, password), got (email: null, password: 'n/a')."],
    ['email an array', { email: [], password: 'n/a' }, 400, 'Invalid input data type: expected (email) to be (string)'],
  ])('bad credentials as Central words them: %s', async (_, body, status, message) => {
    const h = await harness();
    const res = await h.post('/v1/sessions', { body });
    expect(res.status).toBe(status);
    expect((await json(res)).message).toBe(message);
  });

  test('a password repeated after a NUL character logs in, as bcrypt reads only up to it (Central)', async () => {
    const h = await harness();
    const { email, password } = fixtureUsers.chelsea;
    const res = await h.post('/v1/sessions', { body: { email, password: `${password}\u0000${password}` } });
    expect(res.status).toBe(200);
  });

  test('logs in: session JSON, cookies, audit user.session.create', async () => {
    const h = await harness();
    const before = Date.now();
    const { res, body } = await logIn(h, 'chelsea', { 'User-Agent': 'vitest-agent/1.0' });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(body).sort()).toEqual(['createdAt', 'csrf', 'expiresAt', 'token']);
    expect(body.createdAt).toMatch(ISO);
    expect(body.expiresAt).toMatch(ISO);
    expect(body.token).toMatch(TOKEN);
    expect(body.csrf).toMatch(TOKEN);
    const lifetime = Date.parse(body.expiresAt) - Date.parse(body.createdAt);
    expect(Math.abs(lifetime - 24 * 3_600_000)).toBeLessThan(60_000);
    expect(Date.parse(body.createdAt)).toBeGreaterThanOrEqual(before - 2000);

    const cookies = res.headers.getSetCookie();
    // Plain HTTP (the harness): `session`, not Secure; over HTTPS `__Host-session` (cookies-https.test.ts).
    const session = cookies.find((c) => c.startsWith('session='));
    expect(session).toBeDefined();
    // The value is URL-encoded ('$' → %24), as Express does for Central.
    expect(decodeURIComponent(session!.split(';')[0]!.slice('session='.length))).toBe(body.token);
    expect(session).toMatch(/;\s*HttpOnly/i);
    expect(session).not.toMatch(/;\s*Secure/i);
    expect(session).toMatch(/;\s*SameSite=Strict/i);
    expect(session).toMatch(/;\s*Path=\//i);
    const csrf = cookies.find((c) => c.startsWith('__csrf='));
    expect(csrf).toBeDefined();
    expect(decodeURIComponent(csrf!.split(';')[0]!.slice('__csrf='.length))).toBe(body.csrf);
    expect(csrf).not.toMatch(/HttpOnly/i);

    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['user.session.create']);
    expect(audits[0]!.actorId).toBe(h.ids.chelsea);
    expect(audits[0]!.details).toEqual({ userAgent: 'vitest-agent/1.0' });

    // The new token authenticates.
    const me = await h.get('/v1/users/current', { as: { bearer: body.token } });
    expect(me.status).toBe(200);
    expect((await json(me)).id).toBe(h.ids.chelsea);
  });

  test('the email is matched case-insensitively', async () => {
    const h = await harness();
    const res = await h.post('/v1/sessions', {
      body: { email: fixtureUsers.bob.email.toUpperCase(), password: fixtureUsers.bob.password },
    });
    expect(res.status).toBe(200);
  });

  test('the sessions table holds the SHA-256 of the token, never the token', async () => {
    const h = await harness();
    const { body } = await logIn(h);
    const mine = await h.db.select().from(sessions).where(eq(sessions.actorId, h.ids.chelsea));
    const hashes = mine.map((r) => r.tokenHash);
    expect(hashes).toContain(sha256(body.token));
    const all = await h.db.select().from(sessions);
    expect(JSON.stringify(all)).not.toContain(body.token);
    const row = mine.find((r) => r.tokenHash === sha256(body.token))!;
    expect(row.csrf).toBe(body.csrf);
    expect(row.expiresAt.toISOString()).toBe(body.expiresAt);
  });

  test('wrong password and unknown email: both 401.2 with the same body; no audit, no session', async () => {
    const h = await harness();
    const before = (await h.db.select().from(sessions)).length;
    const wrong = await h.post('/v1/sessions', { body: { email: fixtureUsers.chelsea.email, password: 'not-the-password' } });
    const unknown = await h.post('/v1/sessions', { body: { email: 'nobody@getodk.org', password: 'not-the-password' } });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const a = await wrong.text();
    const b = await unknown.text();
    expect(a).toBe(b);
    expect(JSON.parse(a)).toEqual(AUTH_FAILED);
    expect(wrong.headers.getSetCookie()).toEqual([]);
    expect(await h.auditActions()).toEqual([]);
    expect((await h.db.select().from(sessions)).length).toBe(before);
  });

  test('empty body → 400.3, exactly Central\'s body', async () => {
    const h = await harness();
    const res = await h.post('/v1/sessions', { body: {} });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe(
      '{"message":"Required parameters missing. Expected (email, password), got (email: undefined, password: undefined).","code":400.3,"details":{"expected":["email","password"],"got":{}}}',
    );
    // No body at all is the same.
    const none = await h.post('/v1/sessions');
    expect(none.status).toBe(400);
    expect((await json(none)).code).toBe(400.3);
  });

  test('only an email → 400.3 reporting what was given', async () => {
    const h = await harness();
    const res = await h.post('/v1/sessions', { body: { email: fixtureUsers.bob.email } });
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body.code).toBe(400.3);
    expect(body.details).toEqual({ expected: ['email', 'password'], got: { email: fixtureUsers.bob.email } });
  });

  test('malformed JSON → 400.1', async () => {
    const h = await harness();
    const res = await h.post('/v1/sessions', { body: '{"email":', headers: { 'Content-Type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({
      message: 'Could not parse the given data (9 chars) as json.',
      code: 400.1,
      details: { format: 'json', rawLength: 9 },
    });
  });
});

describe('Bearer authentication', () => {
  test('a bogus Bearer token → 401.2 (even on an endpoint anonymous may call)', async () => {
    const h = await harness();
    for (const token of ['Z'.repeat(64), 'short', '']) {
      const res = await h.get(`/v1/projects/${h.projectId}`, { as: { bearer: token } });
      expect(res.status, token).toBe(401);
      expect(await json(res)).toEqual(AUTH_FAILED);
    }
    const list = await h.get('/v1/projects', { as: { bearer: 'Z'.repeat(64) } });
    expect(list.status).toBe(401);
  });

  test('an expired session → 401.2', async () => {
    const h = await harness();
    const token = 'E'.repeat(60) + 'xpir';
    await h.db.insert(sessions).values({
      tokenHash: sha256(token), actorId: h.ids.bob, csrf: 'x'.repeat(64), expiresAt: new Date(Date.now() - 1000),
    });
    const res = await h.get('/v1/users/current', { as: { bearer: token } });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);

    // The same session made live again works: it was the expiry that mattered.
    await h.db.update(sessions).set({ expiresAt: new Date(Date.now() + 60_000) }).where(eq(sessions.tokenHash, sha256(token)));
    expect((await h.get('/v1/users/current', { as: { bearer: token } })).status).toBe(200);
  });

  test('a logged-in session that has expired → 401.2', async () => {
    const h = await harness();
    const { body } = await logIn(h);
    await h.db.update(sessions).set({ expiresAt: new Date(Date.now() - 1) }).where(eq(sessions.tokenHash, sha256(body.token)));
    const res = await h.get('/v1/users/current', { as: { bearer: body.token } });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
  });
});

describe('HTTP Basic authentication', () => {
  test('works with the right password', async () => {
    const h = await harness();
    const res = await h.get('/v1/users/current', { as: { basic: [fixtureUsers.bob.email, fixtureUsers.bob.password] } });
    expect(res.status).toBe(200);
    expect((await json(res)).id).toBe(h.ids.bob);
  });

  test('a wrong password → 401.2 without a WWW-Authenticate challenge', async () => {
    const h = await harness();
    for (const creds of [[fixtureUsers.bob.email, 'wrong-password'], ['nobody@getodk.org', 'x'.repeat(12)]] as const) {
      const res = await h.get('/v1/users/current', { as: { basic: [creds[0], creds[1]] } });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBeNull();
      expect(await json(res)).toEqual(AUTH_FAILED);
    }
  });

  test('with ALLOW_HTTP_AUTH off: plain http → 401.3; X-Forwarded-Proto: https from a trusted proxy works', async () => {
    const untrusted = await harness({ ALLOW_HTTP_AUTH: false });
    const basic = { basic: [fixtureUsers.bob.email, fixtureUsers.bob.password] as [string, string] };
    const spoofed = await untrusted.get(`/v1/projects/${untrusted.projectId}`, { as: basic, headers: { 'X-Forwarded-Proto': 'https' } });
    expect(spoofed.status).toBe(401); // the header counts only with TRUST_PROXY
    expect(await json(spoofed)).toEqual(HTTPS_ONLY);
  });

  test('with ALLOW_HTTP_AUTH off and TRUST_PROXY on: plain http → 401.3; X-Forwarded-Proto: https works', async () => {
    const h = await harness({ ALLOW_HTTP_AUTH: false, TRUST_PROXY: true });
    const creds = { basic: [fixtureUsers.bob.email, fixtureUsers.bob.password] as [string, string] };
    const plain = await h.get(`/v1/projects/${h.projectId}`, { as: creds });
    expect(plain.status).toBe(401);
    expect(await json(plain)).toEqual(HTTPS_ONLY);

    const proxied = await h.get(`/v1/projects/${h.projectId}`, { as: creds, headers: { 'X-Forwarded-Proto': 'https' } });
    expect(proxied.status).toBe(200);
    expect((await json(proxied)).id).toBe(h.projectId);

    // Bearer is not affected by the setting.
    expect((await h.get(`/v1/projects/${h.projectId}`, { as: 'bob' })).status).toBe(200);
  });

  test('DELETE /v1/sessions/current with Basic (no session) → 404.1', async () => {
    const h = await harness();
    const res = await h.delete('/v1/sessions/current', { as: { basic: [fixtureUsers.bob.email, fixtureUsers.bob.password] } });
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual(NOT_FOUND);
  });
});

describe('cookie authentication', () => {
  const alice = fixtureUsers.alice;

  test('GET with the session cookie works without CSRF', async () => {
    const h = await harness();
    const res = await h.get('/v1/users/current', { as: { cookie: alice.token } });
    expect(res.status).toBe(200);
    expect((await json(res)).id).toBe(h.ids.alice);
  });

  test('a cookie from login authenticates', async () => {
    const h = await harness();
    const { body } = await logIn(h, 'bob');
    const res = await h.get('/v1/users/current', { as: { cookie: body.token } });
    expect(res.status).toBe(200);
    expect((await json(res)).id).toBe(h.ids.bob);
  });

  test('a non-GET by cookie without the CSRF token → 401.2; nothing is created', async () => {
    const h = await harness();
    const res = await h.post('/v1/projects', { as: { cookie: alice.token }, body: { name: 'By Cookie' } });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
    const wrong = await h.post('/v1/projects', { as: { cookie: alice.token, csrf: 'b'.repeat(64) }, body: { name: 'By Cookie' } });
    expect(wrong.status).toBe(401);
    expect(await h.db.select().from(projects).where(eq(projects.name, 'By Cookie'))).toEqual([]);
    expect(await h.auditActions()).toEqual([]);
  });

  test('with the X-CSRF-Token header it works', async () => {
    const h = await harness();
    const res = await h.post('/v1/projects', { as: { cookie: alice.token, csrf: alice.csrf }, body: { name: 'By Cookie' } });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ name: 'By Cookie' });
    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['project.create']);
    expect(audits[0]!.actorId).toBe(h.ids.alice);
  });

  test('with __csrf in the JSON body it works, and __csrf is not stored', async () => {
    const h = await harness();
    const res = await h.post('/v1/projects', { as: { cookie: alice.token }, body: { name: 'Body Csrf', __csrf: alice.csrf } });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.name).toBe('Body Csrf');
    expect(JSON.stringify(body)).not.toContain('__csrf');
    const [row] = await h.db.select().from(projects).where(eq(projects.id, body.id));
    expect(row!.name).toBe('Body Csrf');
    const audits = await h.audits();
    expect(JSON.stringify(audits)).not.toContain('__csrf');
    expect(JSON.stringify(audits)).not.toContain(alice.csrf);
  });

  test('with ALLOW_HTTP_AUTH off the cookie is ignored over plain http, honoured behind https', async () => {
    const h = await harness({ ALLOW_HTTP_AUTH: false, TRUST_PROXY: true });
    const res = await h.get('/v1/users/current', { as: { cookie: alice.token } });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
    const https = await h.get('/v1/users/current', { as: { cookie: alice.token }, headers: { 'X-Forwarded-Proto': 'https' } });
    expect(https.status).toBe(200);
  });

  test('a cookie naming no live session is refused at once: 401.2 (Central)', async () => {
    const h = await harness();
    for (const path of ['/v1/projects', '/v1/users/current', '/v1/sessions/restore']) {
      const res = await h.get(path, { as: { cookie: 'Z'.repeat(64) } });
      expect(res.status, path).toBe(401);
      expect(await json(res)).toEqual(AUTH_FAILED);
    }
    // Logging in is anonymous: a stale cookie does not stand in the way.
    expect((await h.post('/v1/sessions', { as: { cookie: 'Z'.repeat(64) }, body: { email: fixtureUsers.bob.email, password: fixtureUsers.bob.password } })).status).toBe(200);
  });
});

describe('GET /v1/sessions/restore', () => {
  test('with the cookie: createdAt and expiresAt, never the token', async () => {
    const h = await harness();
    const { body } = await logIn(h, 'bob');
    const res = await h.get('/v1/sessions/restore', { as: { cookie: body.token } });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ createdAt: body.createdAt, expiresAt: body.expiresAt });
  });

  test('without a cookie → 401', async () => {
    const h = await harness();
    const res = await h.get('/v1/sessions/restore');
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
  });
});

describe('DELETE /v1/sessions/current', () => {
  test('by Bearer: logs out that session only', async () => {
    const h = await harness();
    const { body } = await logIn(h);
    const res = await h.delete('/v1/sessions/current', { as: { bearer: body.token } });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    const after = await h.get('/v1/users/current', { as: { bearer: body.token } });
    expect(after.status).toBe(401);
    expect(await json(after)).toEqual(AUTH_FAILED);
    expect(await h.db.select().from(sessions).where(eq(sessions.tokenHash, sha256(body.token)))).toEqual([]);
    // Chelsea's other (fixture) session is untouched.
    expect((await h.get('/v1/users/current', { as: 'chelsea' })).status).toBe(200);
  });

  test('by cookie: logs out and clears both cookies', async () => {
    const h = await harness();
    const { body } = await logIn(h);
    const res = await h.delete('/v1/sessions/current', { as: { cookie: body.token, csrf: body.csrf } });
    expect(res.status).toBe(200);
    const cookies = res.headers.getSetCookie();
    for (const name of ['session', '__csrf']) {
      const c = cookies.find((x) => x.startsWith(`${name}=`));
      expect(c, name).toBeDefined();
      const maxAge = /Max-Age=(-?\d+)/i.exec(c!);
      const expires = /Expires=([^;]+)/i.exec(c!);
      const cleared = (maxAge != null && Number(maxAge[1]) <= 0) || (expires != null && Date.parse(expires[1]!) < Date.now());
      expect(cleared, c).toBe(true);
    }
    expect((await h.get('/v1/users/current', { as: { cookie: body.token } })).status).toBe(401);
    expect((await h.get('/v1/users/current', { as: { bearer: body.token } })).status).toBe(401);
  });

  test('anonymous → 401.2', async () => {
    const h = await harness();
    const res = await h.delete('/v1/sessions/current');
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
  });
});

describe('DELETE /v1/sessions/:token', () => {
  test('a user ends its own session', async () => {
    const h = await harness();
    const { body } = await logIn(h);
    const res = await h.delete(`/v1/sessions/${encodeURIComponent(body.token)}`, { as: 'chelsea' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    expect((await h.get('/v1/users/current', { as: { bearer: body.token } })).status).toBe(401);
    expect((await h.get('/v1/users/current', { as: 'chelsea' })).status).toBe(200);
    // Web-user logouts are not audited (Central).
    expect(await h.auditActions()).toEqual(['user.session.create']);
  });

  test('ending the session the request uses', async () => {
    const h = await harness();
    const { body } = await logIn(h);
    const res = await h.delete(`/v1/sessions/${encodeURIComponent(body.token)}`, { as: { bearer: body.token } });
    expect(res.status).toBe(200);
    expect((await h.get('/v1/users/current', { as: { bearer: body.token } })).status).toBe(401);
  });

  test('chelsea ending bob\'s session → 403.1; the session lives on', async () => {
    const h = await harness();
    const { body } = await logIn(h, 'bob');
    const res = await h.delete(`/v1/sessions/${encodeURIComponent(body.token)}`, { as: 'chelsea' });
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual(FORBIDDEN);
    expect((await h.get('/v1/users/current', { as: { bearer: body.token } })).status).toBe(200);
  });

  test('an unknown token → 403.1', async () => {
    const h = await harness();
    for (const token of ['Z'.repeat(64), 'not-a-token']) {
      const res = await h.delete(`/v1/sessions/${token}`, { as: 'alice' });
      expect(res.status, token).toBe(403);
      expect(await json(res)).toEqual(FORBIDDEN);
    }
  });
});

describe('purgeExpiredSessions (CLI sessions-purge)', () => {
  test('deletes only expired sessions', async () => {
    const h = await harness();
    const { body } = await logIn(h, 'chelsea');
    const hash = sha256(body.token);
    const ctx = systemCtx(h.deps);
    expect(await purgeExpiredSessions(ctx)).toBe(0);
    await h.db.update(sessions).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(sessions.tokenHash, hash));
    expect(await purgeExpiredSessions(ctx)).toBe(1);
    expect(await h.db.select().from(sessions).where(eq(sessions.tokenHash, hash))).toEqual([]);
    // The fixture sessions (far future) are untouched.
    expect((await h.get('/v1/users/current', { as: 'alice' })).status).toBe(200);
  });
});
