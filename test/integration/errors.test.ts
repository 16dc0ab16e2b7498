import { count } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { actees, actors, fieldKeys, sessions, users } from '../../drizzle/schema';
import type { Db } from '../../lib/db/client';
import { withDeps } from '../../lib/runtime/entry';
import { localApp } from '../../infra/local/app';
import { fixtureUsers } from '../fixtures/users';
import { harness, json, type Harness } from '../helpers/harness';

const JSON_UTF8 = 'application/json; charset=utf-8';

async function rowCounts(h: Harness) {
  const n = async (t: typeof actors | typeof actees | typeof fieldKeys | typeof sessions | typeof users) =>
    (await h.db.select({ n: count() }).from(t))[0]!.n;
  return { actors: await n(actors), actees: await n(actees), fieldKeys: await n(fieldKeys), sessions: await n(sessions), users: await n(users) };
}

describe('unknown routes', () => {
  test('GET /v1/nothing: 404.1 JSON', async () => {
    const h = await harness();
    for (const as of ['anonymous', 'alice'] as const) {
      const res = await h.get('/v1/nothing', { as });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe(JSON_UTF8);
      expect(await res.text()).toBe('{"message":"Could not find the resource you were looking for.","code":404.1}');
    }
  });

  test('an unknown sub-path of a known group: 404.1', async () => {
    const h = await harness();
    const res = await h.get(`/v1/projects/${h.projectId}/nothing-here`, { as: 'alice' });
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual({ message: 'Could not find the resource you were looking for.', code: 404.1 });
  });

  test('no API version: Central\'s exact 404.2 body', async () => {
    const h = await harness();
    for (const path of [`/projects/${h.projectId}`, '/', '/projects']) {
      const res = await h.get(path, { as: 'alice' });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe(JSON_UTF8);
      expect(await res.text()).toBe('{"message":"Expected an API version (eg /v1) at the start of the request URL.","code":404.2}');
    }
  });

  test('another API version: Central\'s exact 404.3 body with details { got }', async () => {
    const h = await harness();
    const res = await h.get('/v2/projects', { as: 'alice' });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe(JSON_UTF8);
    expect(await res.text()).toBe('{"message":"Unexpected an API version (accepts: 1) (got: 2).","code":404.3,"details":{"got":"2"}}');
    const res2 = await h.get(`/v2/projects/${h.projectId}`);
    expect(await json(res2)).toEqual({ message: 'Unexpected an API version (accepts: 1) (got: 2).', code: 404.3, details: { got: '2' } });
  });
});

describe('authentication failures', () => {
  test('a malformed App User key in the URL: 401.2', async () => {
    const h = await harness();
    const res = await h.get('/v1/key/not-a-token/projects');
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe(JSON_UTF8);
    expect(await json(res)).toEqual({ message: 'Could not authenticate with the provided credentials.', code: 401.2 });
  });

  test('a well-formed but unknown App User key: 403.1 (Central)', async () => {
    const h = await harness();
    const res = await h.get(`/v1/key/${'A'.repeat(64)}/projects/${h.projectId}`);
    expect(res.status).toBe(403);
    expect(await res.text()).toBe('{"message":"The authentication you provided does not have rights to perform that action.","code":403.1}');
  });

  test('an unknown Bearer token: Central\'s exact 401.2 body, even where anonymous would be allowed', async () => {
    const h = await harness();
    for (const path of [`/v1/projects/${h.projectId}`, '/v1/projects']) {
      const res = await h.get(path, { as: { bearer: 'junk' } });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe(JSON_UTF8);
      expect(await res.text()).toBe('{"message":"Could not authenticate with the provided credentials.","code":401.2}');
    }
  });

  test('error responses carry X-Request-Id, like successful ones', async () => {
    const h = await harness();
    const ok = await h.get('/v1/projects', { as: 'alice' });
    expect(ok.headers.get('x-request-id')).toBeTruthy();
    expect(ok.headers.get('content-type')).toBe(JSON_UTF8);
    for (const res of [
      await h.get('/v1/projects', { as: { bearer: 'junk' } }), // fails in authentication
      await h.get(`/v1/projects/${h.projectId}`, { as: 'chelsea' }), // fails in the handler
      await h.get('/v1/projects/999999999', { as: 'alice' }),
    ]) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
    // a caller's own request id is echoed back
    const echoed = await h.get('/v1/projects/999999999', { as: 'alice', headers: { 'X-Request-Id': 'trace-123' } });
    expect(echoed.headers.get('x-request-id')).toBe('trace-123');
  });
});

describe('internal errors', () => {
  test('a non-Problem error: 500 { message, requestId } without stack or SQL, and X-Request-Id', async () => {
    const h = await harness();
    const brokenDb = new Proxy({} as Db, {
      get: () => () => {
        throw new Error('boom secret: select * from "users"');
      },
    });
    const logged: unknown[] = [];
    const log = { ...h.deps.log, error: (...args: unknown[]) => void logged.push(args) };
    const app = withDeps(localApp(), () => ({ deps: { ...h.deps, db: brokenDb, log } }));
    const requests = [
      new Request(`http://localhost/v1/projects/${h.projectId}`, { headers: { Authorization: `Bearer ${fixtureUsers.alice.token}` } }),
      new Request('http://localhost/v1/projects', {
        method: 'POST',
        headers: { Authorization: `Bearer ${fixtureUsers.alice.token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'x' }),
      }),
    ];
    for (const req of requests) {
      const res = await app.fetch(req);
      expect(res.status).toBe(500);
      expect(res.headers.get('content-type')).toBe(JSON_UTF8);
      const text = await res.text();
      expect(text).not.toMatch(/boom|secret|select|users|stack|at /i);
      const body = JSON.parse(text);
      expect(Object.keys(body)).toEqual(['message', 'requestId']);
      expect(body.message).toBe('Internal Server Error');
      expect(typeof body.requestId).toBe('string');
      expect(body.requestId.length).toBeGreaterThan(0);
      expect(res.headers.get('x-request-id')).toBe(body.requestId);
    }
    expect(logged.length).toBeGreaterThanOrEqual(requests.length);
  });
});

describe('every write is one transaction', () => {
  test('POST P/app-users with an invalid body leaves no actors, actees, field keys or sessions', async () => {
    const h = await harness();
    const before = await rowCounts(h);
    for (const body of [{}, { displayName: 42 }, '{"displayName":']) {
      const res = await h.post(`/v1/projects/${h.projectId}/app-users`, {
        as: 'bob', body, headers: { 'Content-Type': 'application/json' },
      });
      expect(res.status).toBe(400);
      expect(String((await json(res)).code)).toMatch(/^400\./);
    }
    expect(await rowCounts(h)).toEqual(before);
    expect(await h.auditActions()).toEqual([]);
    // ...while a valid one writes its rows and its audit together
    const ok = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName: 'Collector' } });
    expect(ok.status).toBe(200);
    const after = await rowCounts(h);
    expect(after.actors).toBe(before.actors + 1);
    expect(after.fieldKeys).toBe(before.fieldKeys + 1);
    expect(await h.auditActions()).toEqual(['field_key.create']);
  });

  test('a user create that fails half-way (duplicate email) leaves no actor behind', async () => {
    const h = await harness();
    const before = await rowCounts(h);
    const res = await h.post('/v1/users', { as: 'alice', body: { email: fixtureUsers.bob.email } });
    expect(res.status).toBe(409);
    expect((await json(res)).code).toBe(409.3);
    expect(await rowCounts(h)).toEqual(before);
    expect(await h.auditActions()).toEqual([]);
  });

  test('a project PUT that fails after updating the project (501.2) leaves the project unchanged', async () => {
    const h = await harness();
    const res = await h.put(`/v1/projects/${h.projectId}`, {
      as: 'bob', body: { name: 'Renamed', forms: [{ xmlFormId: 'missing' }] },
    });
    expect(res.status).toBe(501);
    expect((await json(res)).code).toBe(501.2);
    expect(await json(await h.get(`/v1/projects/${h.projectId}`, { as: 'bob' }))).toMatchObject({ name: 'Default Project' });
    expect(await h.auditActions()).toEqual([]);
  });
});
