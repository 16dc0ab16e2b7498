/**
 * Serving Central's web UI from UI_DIR on the API's port (infra/local/ui.ts), against a small
 * stand-in build: static files with their content types, `/client-config.json` as `{}`, the
 * single-page fallback to index.html, the form-filling pages to apps/forms/index.html, `/v1` left to
 * the API, HEAD, and no way out of the folder. The server is built as `npm start` builds it
 * (withUi in front of the local app) on a real socket; raw paths go through node:http so that
 * nothing normalises them on the way.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { uiHandler } from '../../../infra/local/ui';
import { fixtureUsers } from '../../fixtures/users';
import { standInUi, suiteServer, type StandInUi, type SuiteServer } from './helpers';

const MAIN = 'MAIN-INDEX';
const FORMS = 'FORMS-INDEX';

/** A request sent byte for byte as given (fetch would normalise `..` and `%2e%2e`). */
function raw(base: string, path: string, method = 'GET'): Promise<{ status: number; type: string | undefined; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path, method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe.sequential('the web UI on the API port (withUi over a real socket)', () => {
  let ui: StandInUi;
  let s: SuiteServer;
  beforeAll(async () => {
    ui = standInUi();
    s = await suiteServer({}, ui.dir);
  });
  afterAll(async () => {
    await s?.close();
    ui?.remove();
  });

  test('/ and the app\'s pages → index.html (text/html)', async () => {
    for (const path of ['/', '/projects/1/forms/x', '/projects/1/forms/x/submissions', '/users', '/system/audits', '/login?next=%2Fprojects', '/projects/1/forms/household.v2', '/account/edit']) {
      const res = await fetch(s.base + path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      expect(await res.text(), path).toContain(MAIN);
    }
  });

  test('form-filling pages (Web Forms) → apps/forms/index.html', async () => {
    for (const path of [
      '/f/abc', '/f/abc/new', '/projects/1/forms/x/submissions/new', '/projects/1/forms/x/draft/submissions/new',
      '/projects/1/forms/x/preview', '/projects/1/forms/x/draft/preview', '/projects/1/forms/x/submissions/uuid:1/edit',
      '/projects/1/forms/x/submissions/new?st=abc',
    ]) {
      const res = await fetch(s.base + path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      expect(await res.text(), path).toContain(FORMS);
    }
  });

  test('/client-config.json → {} as JSON', async () => {
    const res = await fetch(`${s.base}/client-config.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({});
  });

  test('assets with their content types', async () => {
    const cases: Array<[string, RegExp, string]> = [
      ['/assets/app.js', /^text\/javascript/, 'APP-JS'],
      ['/assets/style.css', /^text\/css/, 'STYLE-CSS'],
      ['/assets/logo.svg', /^image\/svg\+xml$/, 'LOGO-SVG'],
      ['/index.html', /^text\/html/, MAIN],
      ['/apps/forms/index.html', /^text\/html/, FORMS],
    ];
    for (const [path, type, marker] of cases) {
      const res = await fetch(s.base + path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toMatch(type);
      const body = await res.text();
      expect(body, path).toContain(marker);
      expect(res.headers.get('content-length'), path).toBe(String(Buffer.byteLength(body)));
    }
  });

  test('a missing asset → 404, not the page', async () => {
    for (const path of ['/assets/nope.js', '/assets/nope.css', '/favicon.ico', '/assets/img/x.png']) {
      const res = await fetch(s.base + path);
      expect(res.status, path).toBe(404);
      expect(await res.text(), path).not.toContain(MAIN);
    }
  });

  test('HEAD: the headers without a body', async () => {
    for (const [path, type] of [['/', 'text/html'], ['/assets/app.js', 'text/javascript'], ['/f/abc', 'text/html'], ['/client-config.json', 'application/json']] as const) {
      const res = await fetch(s.base + path, { method: 'HEAD' });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type'), path).toContain(type);
      expect(await res.text(), path).toBe('');
    }
    expect((await fetch(`${s.base}/assets/nope.js`, { method: 'HEAD' })).status).toBe(404);
  });

  test('/v1 still reaches the API (GET, HEAD and writes), with its JSON errors', async () => {
    const list = await fetch(`${s.base}/v1/projects`, { headers: { Authorization: `Bearer ${fixtureUsers.alice.token}` } });
    expect(list.status).toBe(200);
    expect((await list.json()).map((p: { id: number }) => p.id)).toContain(s.projectId);
    const missing = await fetch(`${s.base}/v1/nope`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^application\/json/);
    const login = await fetch(`${s.base}/v1/sessions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    expect(login.status).toBe(400);
    expect((await login.json()).code).toBe(400.3);
    // A write outside /v1 is not the UI's: the API answers (no such route).
    const post = await fetch(`${s.base}/projects/1`, { method: 'POST' });
    expect(post.status).toBe(404);
    expect(await post.text()).not.toContain(MAIN);
  });

  test('no path leaves UI_DIR: the secret next to it never comes back', async () => {
    const attempts = [
      '/../secret.txt', '/../../secret.txt', '/assets/../../secret.txt', '/%2e%2e/secret.txt', '/%2E%2E/secret.txt',
      '/assets/%2e%2e/%2e%2e/secret.txt', '/assets/..%2f..%2fsecret.txt', '/..%2fsecret.txt', '/%2e%2e%2fsecret.txt',
      '/..%5csecret.txt', '/..\\secret.txt', '/assets/..%5c..%5csecret.txt', '/secret.txt%00', '/%00/../secret.txt',
      '/assets/app.js%00.html', '//secret.txt', '/.%2e/secret.txt', `/${encodeURIComponent(ui.dir)}/../secret.txt`,
    ];
    for (const path of attempts) {
      const res = await raw(s.base, path);
      expect(res.body, path).not.toContain(ui.secret);
      expect([200, 400, 404], path).toContain(res.status);
      // Where it answers 200 it is the app's page, never a file from outside.
      if (res.status === 200) expect(res.body, path).toContain(MAIN);
    }
  });
});

describe('uiHandler on its own', () => {
  let ui: StandInUi;
  beforeAll(() => {
    ui = standInUi();
  });
  afterAll(() => ui?.remove());
  const at = (path: string, method = 'GET') => uiHandler(ui.dir)(new Request(`http://localhost${path}`, { method }));

  test('leaves /v1 and non-GET requests to the API (null)', async () => {
    expect(await at('/v1/projects')).toBeNull();
    expect(await at('/v1')).toBeNull();
    expect(await at('/', 'POST')).toBeNull();
    expect(await at('/assets/app.js', 'DELETE')).toBeNull();
  });

  test('a path that is not valid percent-encoding → 400', async () => {
    const res = await at('/%E0%A4%A');
    expect(res!.status).toBe(400);
  });

  test('NUL bytes and encoded traversal → 404', async () => {
    for (const path of ['/%00', '/assets/app.js%00', '/assets/..%2f..%2fsecret.txt', '/..%2fsecret.txt']) {
      const res = await at(path);
      expect(res!.status, path).toBe(404);
      expect(await res!.text(), path).not.toContain(ui.secret);
    }
  });

  test('without apps/forms/index.html the form pages fall back to nothing (404), the app still works', async () => {
    const bare = standInUi();
    try {
      const { rmSync } = await import('node:fs');
      rmSync(`${bare.dir}/apps`, { recursive: true });
      const handler = uiHandler(bare.dir);
      expect((await handler(new Request('http://localhost/f/abc')))!.status).toBe(404);
      expect((await handler(new Request('http://localhost/projects/1')))!.status).toBe(200);
    } finally {
      bare.remove();
    }
  });
});
