/**
 * Cookie sessions as Central's web UI uses them (the session cookie, `session` over plain HTTP and
 * `__Host-session` over HTTPS, and the `__csrf` cookie, set by POST /v1/sessions; CSRF proof on
 * POST only, as Central; a logged-out cookie refused at once; cookies cleared on logout; GET
 * /v1/sessions/restore), and the HTTPS rule for cookie and Basic authentication: refused over plain
 * HTTP (Basic: 401.3; a cookie is ignored, as Central does), accepted over HTTPS or behind a proxy
 * trusted by TRUST_PROXY, and accepted on the embedded default bound to loopback.
 * Requests go over a real socket (h.listen()) with a browser-like cookie jar, except where a
 * request must look like HTTPS (an https:// URL through the app itself).
 */
import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { projects } from '../../../drizzle/schema';
import { loadConfig } from '../../../lib/runtime/env';
import { fixtureUsers } from '../../fixtures/users';
import { harness, json, type Harness } from '../../helpers/harness';
import { Browser, centralJson, clears, parseSetCookies } from './helpers';

const AUTH_FAILED = { message: 'Could not authenticate with the provided credentials.', code: 401.2 };
const HTTPS_ONLY = JSON.parse(centralJson<{ body: string }>('_errors/401.3-basic-over-http').body) as Record<string, unknown>;
const bob = fixtureUsers.bob;
const basicBob = { basic: [bob.email, bob.password] as [string, string] };

/** A browser on a real socket, logged in as bob; returns it with the login response and body. */
async function loggedIn(h: Harness, headers: Record<string, string> = {}) {
  const b = new Browser(await h.listen(), headers);
  const res = await b.post('/v1/sessions', { body: { email: bob.email, password: bob.password } });
  expect(res.status).toBe(200);
  const body = await json(res);
  return { b, res, body };
}

describe('login sets the cookies', () => {
  test('plain HTTP on loopback: `session` (HttpOnly, SameSite=Strict, Path=/, not Secure) and __csrf, so Chromium keeps them on http://127.0.0.1', async () => {
    const h = await harness();
    const { b, res, body } = await loggedIn(h);
    expect(b.base).toMatch(/^http:\/\/127\.0\.0\.1:/);
    const cookies = parseSetCookies(res);
    expect(cookies.map((c) => c.name).sort()).toEqual(['__csrf', 'session']);
    const session = cookies.find((c) => c.name === 'session')!;
    const csrf = cookies.find((c) => c.name === '__csrf')!;
    expect(session.value).toBe(body.token);
    expect(session.attrs).toMatchObject({ httponly: '', samesite: 'Strict', path: '/' });
    expect(csrf.attrs).toMatchObject({ samesite: 'Strict', path: '/' });
    for (const c of [session, csrf]) expect(c.attrs).not.toHaveProperty('secure');
    expect(csrf.value).toBe(body.csrf);
    expect((await b.get('/v1/users/current')).status).toBe(200);
  });

  test('HTTPS: __Host-session (HttpOnly, Secure, SameSite=Strict, Path=/) and __csrf (readable, Secure), valid until the session ends', async () => {
    const h = await harness({ TRUST_PROXY: true });
    const { b, res, body } = await loggedIn(h, { 'X-Forwarded-Proto': 'https' });
    expect(Object.keys(body)).toEqual(['token', 'csrf', 'expiresAt', 'createdAt']); // Central's Session frame order
    const cookies = parseSetCookies(res);
    expect(cookies.map((c) => c.name).sort()).toEqual(['__Host-session', '__csrf']);
    const session = cookies.find((c) => c.name === '__Host-session')!;
    const csrf = cookies.find((c) => c.name === '__csrf')!;
    expect(session.value).toBe(body.token);
    expect(session.attrs).toMatchObject({ httponly: '', secure: '', samesite: 'Strict', path: '/' });
    expect(session.attrs).not.toHaveProperty('domain'); // a __Host- cookie may not have one
    expect(csrf.value).toBe(body.csrf);
    expect(csrf.attrs).toMatchObject({ secure: '', samesite: 'Strict', path: '/' });
    expect(csrf.attrs).not.toHaveProperty('httponly'); // the UI reads it
    for (const c of [session, csrf]) expect(Date.parse(c.attrs.expires!)).toBe(Math.floor(Date.parse(body.expiresAt) / 1000) * 1000);
    expect(b.cookie('__Host-session')).toBe(body.token);
  });

  test('a failed login sets no cookie', async () => {
    const h = await harness();
    const b = new Browser(await h.listen());
    const res = await b.post('/v1/sessions', { body: { email: bob.email, password: 'wrong-password-1' } });
    expect(res.status).toBe(401);
    expect(res.headers.getSetCookie()).toEqual([]);
  });
});

describe('requests by cookie', () => {
  test('a GET works with the cookie alone', async () => {
    const h = await harness();
    const { b } = await loggedIn(h);
    const res = await b.get('/v1/users/current');
    expect(res.status).toBe(200);
    expect((await json(res)).id).toBe(h.ids.bob);
  });

  test('a POST without any CSRF proof → 401.2 (Central too); nothing is done', async () => {
    const h = await harness();
    const { b } = await loggedIn(h);
    const res = await fetch(`${b.base}/v1/projects/${h.projectId}/app-users`, {
      method: 'POST', headers: { Cookie: b.cookieHeader()!, 'Content-Type': 'application/json' }, body: JSON.stringify({ displayName: 'No token' }),
    });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
    expect(await h.auditActions()).toEqual(['user.session.create']);
  });

  test('without X-Requested-With, a wrong token is refused (header or body)', async () => {
    const h = await harness();
    const { b } = await loggedIn(h);
    const res = await b.post(`/v1/projects/${h.projectId}/app-users`, { noCsrf: true, body: { displayName: 'Wrong' }, headers: { 'X-CSRF-Token': 'x'.repeat(64) } });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
    const inBody = await fetch(`${b.base}/v1/projects/${h.projectId}/app-users`, {
      method: 'POST', headers: { Cookie: b.cookieHeader()!, 'Content-Type': 'application/json' }, body: JSON.stringify({ displayName: 'Wrong', __csrf: 'y'.repeat(64) }),
    });
    expect(inBody.status).toBe(401);
  });

  test('with the token as X-CSRF-Token the POST works', async () => {
    const h = await harness();
    const { b, body } = await loggedIn(h);
    const res = await b.post(`/v1/projects/${h.projectId}/app-users`, { noCsrf: true, body: { displayName: 'By cookie' }, headers: { 'X-CSRF-Token': body.csrf } });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ displayName: 'By cookie', projectId: h.projectId });
    expect(b.cookie('__csrf')).toBe(body.csrf);
  });

  test('with __csrf in the JSON body (Central\'s form) a PATCH and a POST work', async () => {
    const h = await harness();
    const { b, body } = await loggedIn(h);
    const res = await fetch(`${b.base}/v1/projects/${h.projectId}`, {
      method: 'PATCH', headers: { Cookie: b.cookieHeader()!, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Body token', __csrf: body.csrf }),
    });
    expect(res.status).toBe(200);
    expect(await h.db.select().from(projects).where(eq(projects.name, 'Body token'))).toHaveLength(1);
    const post = await fetch(`${b.base}/v1/projects/${h.projectId}/app-users`, {
      method: 'POST', headers: { Cookie: b.cookieHeader()!, 'Content-Type': 'application/json' }, body: JSON.stringify({ displayName: 'Body token', __csrf: body.csrf }),
    });
    expect(post.status).toBe(200);
    expect(JSON.stringify(await json(post))).not.toContain('__csrf');
  });

  test('X-Requested-With: XMLHttpRequest alone is a CSRF proof, as in Central (a form upload has no JSON body for __csrf)', async () => {
    const h = await harness();
    const { b } = await loggedIn(h);
    const res = await b.post(`/v1/projects/${h.projectId}/forms`, {
      body: '<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml"><h:head><h:title>X</h:title><model><instance><data id="xrw"><meta><instanceID/></meta><q/></data></instance></model></h:head><h:body/></h:html>',
      headers: { 'Content-Type': 'application/xml' },
    });
    expect(res.status).toBe(200);
    expect((await json(res)).xmlFormId).toBe('xrw');
  });

  test('an HTML form POST (urlencoded, as the UI\'s decrypting download) proves itself with `__csrf` in its body', async () => {
    const h = await harness();
    const { b, body } = await loggedIn(h);
    const post = (csrf: string) => fetch(`${b.base}/v1/projects/${h.projectId}/forms/none/submissions.csv`, {
      method: 'POST', headers: { Cookie: b.cookieHeader()!, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ __csrf: csrf, 1: 'a passphrase' }).toString(),
    });
    const wrong = await post('w'.repeat(64));
    expect(wrong.status).toBe(401);
    expect(await json(wrong)).toEqual(AUTH_FAILED);
    // Authenticated: the form does not exist, so 404.1 (not 401).
    const right = await post(body.csrf);
    expect(right.status).toBe(404);
  });

  test('PUT, PATCH and DELETE by cookie alone work, as the UI sends them (Central checks CSRF on POST only)', async () => {
    const h = await harness();
    const { b } = await loggedIn(h);
    const bare = (method: string, path: string, body?: unknown) => fetch(b.base + path, {
      method, headers: { Cookie: b.cookieHeader()!, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect((await bare('PUT', '/v1/user-preferences/site/whatsNewDismissed', { propertyValue: true })).status).toBe(200);
    expect((await bare('PATCH', `/v1/projects/${h.projectId}`, { name: 'Renamed' })).status).toBe(200);
    expect(await h.db.select().from(projects).where(eq(projects.name, 'Renamed'))).toHaveLength(1);
    const me = await json(await b.get('/v1/users/current', { extended: true }));
    expect(me.preferences.site).toEqual({ whatsNewDismissed: true });
    expect((await bare('DELETE', '/v1/sessions/current')).status).toBe(200);
    expect((await bare('GET', '/v1/users/current')).status).toBe(401);
  });

  test('a CORS preflight is never granted, so a cross-site page cannot send those', async () => {
    const h = await harness();
    const res = await fetch(`${await h.listen()}/v1/projects/${h.projectId}`, {
      method: 'OPTIONS', headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'PATCH', 'Access-Control-Request-Headers': 'content-type' },
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    for (const name of ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-allow-credentials']) {
      expect(res.headers.get(name), name).toBeNull();
    }
  });

  test('a cookie naming no live session is refused at once with 401.2 (Central), never 401.3 or a cookie error', async () => {
    const h = await harness();
    const base = await h.listen();
    for (const name of ['session', '__Host-session']) {
      const res = await fetch(`${base}/v1/projects`, { headers: { Cookie: `${name}=${'Z'.repeat(64)}` } });
      expect(res.status).toBe(401);
      expect(await json(res)).toEqual(AUTH_FAILED);
    }
    // Logging in is anonymous in Central: the stale cookie does not block it.
    const relog = await fetch(`${base}/v1/sessions`, {
      method: 'POST', headers: { Cookie: `session=${'Z'.repeat(64)}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ email: bob.email, password: bob.password }),
    });
    expect(relog.status).toBe(200);
  });
});

describe('logout clears the cookies', () => {
  test('DELETE /v1/sessions/current by cookie (plain HTTP): both cookies expired (Path=/), the cookie then fails', async () => {
    const h = await harness();
    const { b, body } = await loggedIn(h);
    const before = b.cookieHeader()!;
    const res = await b.delete('/v1/sessions/current');
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    const set = parseSetCookies(res);
    expect(set.map((c) => c.name).sort()).toEqual(['__csrf', 'session']);
    for (const c of set) {
      expect(clears(c), c.raw).toBe(true);
      expect(c.attrs).toMatchObject({ path: '/' });
    }
    expect(b.jar.size).toBe(0);
    const replay = await fetch(`${b.base}/v1/users/current`, { headers: { Cookie: before } });
    expect(replay.status).toBe(401);
    expect(await json(replay)).toEqual(AUTH_FAILED);
    expect((await h.get('/v1/users/current', { as: { bearer: body.token } })).status).toBe(401);
  });

  test('logging the session out by Bearer also clears the cookies (Central clears them whenever a session ends itself)', async () => {
    const h = await harness();
    const { body } = await loggedIn(h);
    const res = await h.delete('/v1/sessions/current', { as: { bearer: body.token } });
    expect(res.status).toBe(200);
    expect(parseSetCookies(res).filter(clears).map((c) => c.name).sort()).toEqual(['__csrf', 'session']);
    const byToken = await loggedIn(h);
    const other = await h.delete(`/v1/sessions/${encodeURIComponent(byToken.body.token)}`, { as: { bearer: byToken.body.token } });
    expect(other.status).toBe(200);
    expect(parseSetCookies(other).filter(clears)).toHaveLength(2);
  });

  test('ending another session (an App User\'s) sets no cookie', async () => {
    const h = await harness();
    const created = await json(await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName: 'Tablet' } }));
    const res = await h.delete(`/v1/sessions/${encodeURIComponent(created.token)}`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(res.headers.getSetCookie()).toEqual([]);
  });
});

describe('GET /v1/sessions/restore', () => {
  test('with the cookie: 200 and the session\'s times', async () => {
    const h = await harness();
    const { b, body } = await loggedIn(h);
    const res = await b.get('/v1/sessions/restore');
    expect(res.status).toBe(200);
    const restored = await json(res);
    expect(restored).toMatchObject({ createdAt: body.createdAt, expiresAt: body.expiresAt });
  });

  test('without a cookie → 401.2 (Central\'s status in the list)', async () => {
    const h = await harness();
    const res = await fetch(`${await h.listen()}/v1/sessions/restore`);
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
  });

  test('after logout → 401.2', async () => {
    const h = await harness();
    const { b } = await loggedIn(h);
    const cookie = b.cookieHeader()!;
    expect((await b.delete('/v1/sessions/current')).status).toBe(200);
    const res = await fetch(`${b.base}/v1/sessions/restore`, { headers: { Cookie: cookie } });
    expect(res.status).toBe(401);
  });
});

describe('the HTTPS rule', () => {
  const https = (h: Harness) => `https://fieldbase.example.org/v1/projects/${h.projectId}`;

  test('ALLOW_HTTP_AUTH off, plain HTTP: Basic → 401.3 (Central\'s body); a cookie is ignored (anonymous: 401.2 where rights are needed), as Central does', async () => {
    const h = await harness({ ALLOW_HTTP_AUTH: false });
    const base = await h.listen();
    const basic = await fetch(`${base}/v1/projects/${h.projectId}`, { headers: { Authorization: `Basic ${Buffer.from(`${bob.email}:${bob.password}`).toString('base64')}` } });
    expect(basic.status).toBe(401);
    expect(await basic.text()).toBe(JSON.stringify(HTTPS_ONLY));

    // Logging in still works over plain HTTP (it needs no credentials) and sets the cookies...
    const { b } = await loggedIn(h);
    // ...but they are not honoured over plain HTTP.
    const byCookie = await b.get(`/v1/projects/${h.projectId}`);
    expect(byCookie.status).toBe(401);
    expect(await json(byCookie)).toEqual(AUTH_FAILED);
    // Unhonoured cookies count as no credentials: the project list is the spec's anonymous `[]`.
    const list = await b.get('/v1/projects');
    expect(list.status).toBe(200);
    expect(await json(list)).toEqual([]);
    expect((await b.get('/v1/sessions/restore')).status).toBe(401);
    // Bearer is not affected.
    expect((await h.get(`/v1/projects/${h.projectId}`, { as: 'bob' })).status).toBe(200);
  });

  test('ALLOW_HTTP_AUTH off: an https:// request is accepted for Basic and cookie', async () => {
    const h = await harness({ ALLOW_HTTP_AUTH: false });
    expect((await h.get(https(h), { as: basicBob })).status).toBe(200);
    const login = await json(await h.post('https://fieldbase.example.org/v1/sessions', { body: { email: bob.email, password: bob.password } }));
    expect((await h.get(https(h), { as: { cookie: login.token } })).status).toBe(200);
  });

  test('X-Forwarded-Proto: https is ignored without TRUST_PROXY (any client could send it)', async () => {
    const h = await harness({ ALLOW_HTTP_AUTH: false });
    const { b } = await loggedIn(h, { 'X-Forwarded-Proto': 'https' });
    const basic = await h.get(`/v1/projects/${h.projectId}`, { as: basicBob, headers: { 'X-Forwarded-Proto': 'https' } });
    expect(basic.status).toBe(401);
    expect(await json(basic)).toEqual(HTTPS_ONLY);
    expect((await b.get(`/v1/projects/${h.projectId}`)).status).toBe(401);
  });

  test('with TRUST_PROXY: X-Forwarded-Proto: https from the proxy is accepted (Basic, and a whole cookie session over a socket)', async () => {
    const h = await harness({ ALLOW_HTTP_AUTH: false, TRUST_PROXY: true });
    const basic = await h.get(`/v1/projects/${h.projectId}`, { as: basicBob, headers: { 'X-Forwarded-Proto': 'https' } });
    expect(basic.status).toBe(200);
    // A proxy that lists several hops: the first (the client's side) counts.
    expect((await h.get(`/v1/projects/${h.projectId}`, { as: basicBob, headers: { 'X-Forwarded-Proto': 'https, http' } })).status).toBe(200);
    const plain = await h.get(`/v1/projects/${h.projectId}`, { as: basicBob });
    expect(plain.status).toBe(401);
    expect(await json(plain)).toEqual(HTTPS_ONLY);
    const httpHop = await h.get(`/v1/projects/${h.projectId}`, { as: basicBob, headers: { 'X-Forwarded-Proto': 'http' } });
    expect(httpHop.status).toBe(401);

    const { b } = await loggedIn(h, { 'X-Forwarded-Proto': 'https' });
    expect((await b.get(`/v1/projects/${h.projectId}`)).status).toBe(200);
    expect((await b.get('/v1/sessions/restore')).status).toBe(200);
    expect((await b.post(`/v1/projects/${h.projectId}/app-users`, { body: { displayName: 'Proxied' } })).status).toBe(200);
    expect((await b.delete('/v1/sessions/current')).status).toBe(200);
    expect(b.jar.size).toBe(0);
    // The same cookie without the header: ignored.
    const { b: direct } = await loggedIn(h);
    expect((await direct.get(`/v1/projects/${h.projectId}`)).status).toBe(401);
  });

  test('the embedded default on loopback (ALLOW_HTTP_AUTH on) accepts Basic and cookie over plain HTTP', async () => {
    const h = await harness();
    expect(h.deps.config.ALLOW_HTTP_AUTH).toBe(true);
    const base = await h.listen();
    const basic = await fetch(`${base}/v1/projects/${h.projectId}`, { headers: { Authorization: `Basic ${Buffer.from(`${bob.email}:${bob.password}`).toString('base64')}` } });
    expect(basic.status).toBe(200);
    const { b } = await loggedIn(h);
    expect((await b.get(`/v1/projects/${h.projectId}`)).status).toBe(200);
  });
});

describe('loadConfig: when plain-HTTP authentication is allowed', () => {
  const allow = (env: Record<string, string>, localServer?: boolean) =>
    loadConfig(env, {}, localServer === undefined ? {} : { localServer }).ALLOW_HTTP_AUTH;

  test('the local server on loopback: on by default', () => {
    expect(allow({}, true)).toBe(true); // HOST defaults to 127.0.0.1
    expect(allow({ HOST: '127.0.0.1' }, true)).toBe(true);
    expect(allow({ HOST: 'localhost' }, true)).toBe(true);
    expect(allow({ HOST: '::1' }, true)).toBe(true);
  });

  test('the local server on a non-loopback HOST: off (Central\'s HTTPS-only rule)', () => {
    expect(allow({ HOST: '0.0.0.0' }, true)).toBe(false);
    expect(allow({ HOST: '::' }, true)).toBe(false);
    expect(allow({ HOST: '192.168.1.20' }, true)).toBe(false);
  });

  test('anywhere else (Workers, Lambda): off', () => {
    expect(allow({})).toBe(false);
    expect(allow({ HOST: '127.0.0.1' }, false)).toBe(false);
  });

  test('an explicit ALLOW_HTTP_AUTH wins', () => {
    expect(allow({ HOST: '0.0.0.0', ALLOW_HTTP_AUTH: 'true' }, true)).toBe(true);
    expect(allow({ HOST: '127.0.0.1', ALLOW_HTTP_AUTH: 'false' }, true)).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).TRUST_PROXY).toBe(true);
    expect(loadConfig({}).TRUST_PROXY).toBeUndefined();
  });
});
