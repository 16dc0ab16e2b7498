/**
 * Bad input at the edges (issue 18's probes): NUL characters, ids beyond PostgreSQL's integer,
 * invalid UTF-8, and bodies larger than their limit sent without a Content-Length. None may answer
 * 500, and none may store anything. Real HTTP on a loopback socket for the streamed bodies.
 */
import { count } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { comments, projects, submissions } from '../../drizzle/schema';
import { fixtureUsers } from '../fixtures/users';
import { harness, json, type Harness } from '../helpers/harness';

const SIMPLE = `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml">
  <h:head><h:title>Simple</h:title><model><instance><data id="simple"><meta><instanceID/></meta><name/></data></instance>
  <bind nodeset="/data/name" type="string"/></model></h:head><h:body/></h:html>`;

async function publishedSimple(h: Harness): Promise<string> {
  const res = await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'alice', body: SIMPLE, headers: { 'Content-Type': 'application/xml' } });
  expect(res.status).toBe(200);
  const sub = await h.post(`/v1/projects/${h.projectId}/forms/simple/submissions`, {
    as: 'alice', headers: { 'Content-Type': 'application/xml' },
    body: '<data id="simple"><meta><instanceID>uuid:one</instanceID></meta><name>Alice</name></data>',
  });
  expect(sub.status).toBe(200);
  return `/v1/projects/${h.projectId}/forms/simple`;
}

/** A chunked body of `total` bytes (no Content-Length), produced as it is read. */
function chunkedBody(total: number, first = '{"email":"'): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent === 0) {
        const head = new TextEncoder().encode(first);
        sent += head.byteLength;
        controller.enqueue(head);
        return;
      }
      if (sent >= total) return controller.close();
      sent += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
}

describe('NUL characters never reach PostgreSQL as a 500', () => {
  test('in JSON fields: 4xx, nothing stored', async () => {
    const h = await harness();
    const F = await publishedSimple(h);
    const cases: Array<[string, string, unknown]> = [
      ['POST', '/v1/sessions', { email: 'a\u0000@getodk.org', password: 'a long password' }],
      ['POST', '/v1/projects', { name: 'Bad\u0000name' }],
      ['PATCH', `/v1/projects/${h.projectId}`, { name: 'Bad\u0000name' }],
      ['POST', '/v1/users', { email: 'x\u0000@getodk.org' }],
      ['POST', `/v1/projects/${h.projectId}/app-users`, { displayName: 'Tab\u0000let' }],
      ['POST', `${F}/submissions/uuid:one/comments`, { body: 'no\u0000pe' }],
    ];
    for (const [method, path, body] of cases) {
      const res = await h.request(method, path, { as: 'alice', body });
      expect(res.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${method} ${path}`).toBeLessThan(500);
      expect((await json(res)).code).toBeTypeOf('number');
    }
    expect((await h.db.select({ n: count() }).from(projects))[0]!.n).toBe(1);
    expect((await h.db.select({ n: count() }).from(comments))[0]!.n).toBe(0);
  });

  test('in path segments and queries: 4xx', async () => {
    const h = await harness();
    const F = await publishedSimple(h);
    for (const path of [
      `/v1/projects/${h.projectId}/forms/sim%00ple`,
      `${F}/submissions/o%00ne`,
      `${F}.svc/Submissions('o%00ne')`,
      `${F}/attachments/x%00.jpg`,
      '/v1/users?q=%00',
    ]) {
      const res = await h.get(path, { as: 'alice' });
      expect(res.status, path).toBeLessThan(500);
    }
  });

  test('in Basic credentials: 401, not 500', async () => {
    const h = await harness();
    const res = await h.get('/v1/users/current', { as: { basic: ['a\u0000@getodk.org', 'a long password'] } });
    expect(res.status).toBeLessThan(500);
    expect(res.status).toBeGreaterThanOrEqual(400);
  });
});

describe('ids beyond a 32-bit integer', () => {
  test('400.22 as Central, never 500', async () => {
    const h = await harness();
    for (const path of ['/v1/users/1099511627776', '/v1/projects/10000000000', `/v1/projects/${h.projectId}/app-users/99999999999`]) {
      const res = await h.get(path, { as: 'alice' });
      expect(res.status, path).toBe(400);
      expect((await json(res)).code, path).toBe(400.22);
    }
  });
});

describe('invalid UTF-8 in a JSON body', () => {
  test('400.1, not silently replaced and stored', async () => {
    const h = await harness();
    const base = await h.listen();
    const bytes = new Uint8Array([...new TextEncoder().encode('{"name":"Caf'), 0xc3, 0x28, ...new TextEncoder().encode('"}')]);
    const res = await fetch(`${base}/v1/projects`, {
      method: 'POST', body: bytes,
      headers: { Authorization: `Bearer ${fixtureUsers.alice.token}`, 'Content-Type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect((await json(res)).code).toBe(400.1);
    expect((await h.db.select({ n: count() }).from(projects))[0]!.n).toBe(1);
  });
});

describe('bodies over their limit, streamed without a Content-Length', () => {
  test('a 20 MB chunked login body is refused with 400.36 once it passes MAX_JSON_BYTES', async () => {
    const h = await harness();
    const base = await h.listen();
    const res = await fetch(`${base}/v1/sessions`, {
      method: 'POST', body: chunkedBody(20 * 1024 * 1024), duplex: 'half',
      headers: { 'Content-Type': 'application/json' },
    } as RequestInit);
    expect(res.status).toBe(400);
    expect((await json(res)).code).toBe(400.36);
  });

  test('the CSV export POST body is bounded too, before it is parsed', async () => {
    const h = await harness();
    const F = await publishedSimple(h);
    const base = await h.listen();
    const res = await fetch(`${base}${F}/submissions.csv`, {
      method: 'POST', body: chunkedBody(20 * 1024 * 1024, '1='), duplex: 'half',
      headers: { Authorization: `Bearer ${fixtureUsers.alice.token}`, 'Content-Type': 'application/x-www-form-urlencoded' },
    } as RequestInit);
    expect(res.status).toBe(400);
    expect((await json(res)).code).toBe(400.36);
    expect((await h.db.select({ n: count() }).from(submissions))[0]!.n).toBe(1);
  });
});
