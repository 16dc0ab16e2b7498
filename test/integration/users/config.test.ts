/**
 * Server configuration (System > Customization in the web UI), after Central's
 * test/integration/api/config.js: JSON configs (analytics, login-appearance) and image configs
 * (logo, hero-image) set, read, listed publicly, served without a session, unset, audited. Real
 * HTTP over a loopback socket with Bearer sessions.
 */
import { describe, expect, test } from 'vitest';
import { fixtureUsers } from '../../fixtures/users';
import { harness } from '../../helpers/harness';

const auth = (who: 'alice' | 'chelsea') => ({ Authorization: `Bearer ${fixtureUsers[who].token}` });

async function server() {
  const h = await harness();
  const base = await h.listen();
  const req = (method: string, path: string, opts: { as?: 'alice' | 'chelsea'; body?: string | Uint8Array; type?: string; headers?: Record<string, string> } = {}) =>
    fetch(`${base}${path}`, {
      method,
      headers: { ...(opts.as ? auth(opts.as) : {}), ...(opts.type ? { 'Content-Type': opts.type } : {}), ...(opts.headers ?? {}) },
      body: opts.body as BodyInit | undefined,
    });
  return { h, req };
}

const recent = (iso: unknown) => typeof iso === 'string' && Math.abs(Date.now() - Date.parse(iso)) < 60_000;

describe('POST /v1/config/:key', () => {
  test('needs config.set (403.1); an unknown key is 400.8', async () => {
    const { req } = await server();
    expect((await req('POST', '/v1/config/analytics', { as: 'chelsea', body: '{"enabled":true}', type: 'application/json' })).status).toBe(403);
    const unknown = await req('POST', '/v1/config/unknown', { as: 'alice', body: '{}', type: 'application/json' });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { code: number }).code).toBe(400.8);
  });

  test('a JSON config keeps only its known fields, overwrites, and is audited', async () => {
    const { h, req } = await server();
    const first = await req('POST', '/v1/config/login-appearance', { as: 'alice', body: JSON.stringify({ title: 'Cocoa survey', description: '', extra: 1 }), type: 'application/json' });
    expect(first.status).toBe(200);
    const body = (await first.json()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['key', 'setAt', 'value']);
    expect(body).toMatchObject({ key: 'login-appearance', value: { title: 'Cocoa survey' } });
    expect(recent(body.setAt)).toBe(true);
    await req('POST', '/v1/config/analytics', { as: 'alice', body: JSON.stringify({ enabled: false, email: 'x@y.org' }), type: 'application/json' });
    expect(await (await req('GET', '/v1/config/analytics', { as: 'alice' })).json()).toMatchObject({ key: 'analytics', value: { enabled: false } });
    const audits = (await h.audits()).filter((a) => a.action === 'config.set');
    expect(audits.map((a) => [a.acteeId, a.details])).toEqual([
      [null, { key: 'login-appearance', value: { title: 'Cocoa survey' } }],
      [null, { key: 'analytics', value: { enabled: false } }],
    ]);
  });

  test('an image config stores the bytes; GET serves them as an attachment with an ETag, 304 on a match', async () => {
    const { h, req } = await server();
    expect((await req('GET', '/v1/config/logo', { as: 'alice' })).status).toBe(404);
    const set = await req('POST', '/v1/config/logo', { as: 'alice', body: new TextEncoder().encode('testimage'), type: 'image/png' });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({ key: 'logo', blobExists: true });
    const got = await req('GET', '/v1/config/logo', { as: 'alice' });
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(got.headers.get('content-disposition')).toBe('attachment');
    expect(got.headers.get('etag')).toBe('"f513290389192c42721fc73d4f31ab1d"');
    expect(await got.text()).toBe('testimage');
    const cached = await req('GET', '/v1/config/public/logo', { headers: { 'If-None-Match': '"f513290389192c42721fc73d4f31ab1d"' } });
    expect(cached.status).toBe(304);
    const audit = (await h.audits()).find((a) => a.action === 'config.set')!;
    expect(Object.keys(audit.details as object)).toEqual(['key', 'blobId']);
    expect(await (await req('POST', '/v1/config/hero-image', { as: 'alice', body: new Uint8Array([1]) })).status).toBe(400);
  });
});

describe('reading configs', () => {
  test('GET /v1/config/:key needs config.read; 404.1 when unset', async () => {
    const { req } = await server();
    expect((await req('GET', '/v1/config/analytics', { as: 'chelsea' })).status).toBe(403);
    expect((await req('GET', '/v1/config/analytics', { as: 'alice' })).status).toBe(404);
  });

  test('public: the list of what is set, and each public key without a session; analytics is not public', async () => {
    const { req } = await server();
    expect(await (await req('GET', '/v1/config/public')).json()).toEqual({});
    expect((await req('GET', '/v1/config/public/login-appearance')).status).toBe(404);
    expect((await req('GET', '/v1/config/public/analytics')).status).toBe(403);
    await req('POST', '/v1/config/login-appearance', { as: 'alice', body: '{"title":"foo"}', type: 'application/json' });
    await req('POST', '/v1/config/logo', { as: 'alice', body: new TextEncoder().encode('testimage'), type: 'image/custom-format' });
    await req('POST', '/v1/config/analytics', { as: 'alice', body: '{"enabled":true}', type: 'application/json' });
    const all = (await (await req('GET', '/v1/config/public')).json()) as Record<string, Record<string, unknown>>;
    expect(Object.keys(all)).toEqual(['login-appearance', 'logo']);
    expect(all['login-appearance']).toMatchObject({ key: 'login-appearance', value: { title: 'foo' } });
    expect(all.logo).toMatchObject({ key: 'logo', blobExists: true });
    expect(await (await req('GET', '/v1/config/public/login-appearance')).json()).toMatchObject({ key: 'login-appearance', value: { title: 'foo' } });
    const logo = await req('GET', '/v1/config/public/logo');
    expect(logo.headers.get('content-type')).toBe('image/custom-format');
    expect(logo.headers.get('cache-control')).toBe('no-cache');
    expect((await req('GET', '/v1/config/public/logo?ts=123')).headers.get('cache-control')).toBe('max-age=31536000');
  });
});

describe('DELETE /v1/config/:key', () => {
  test('unsets (200 also when unset), needs config.set, 400.8 for an unknown key, audited', async () => {
    const { h, req } = await server();
    expect((await req('DELETE', '/v1/config/analytics', { as: 'chelsea' })).status).toBe(403);
    expect((await req('DELETE', '/v1/config/unknown', { as: 'alice' })).status).toBe(400);
    expect((await req('DELETE', '/v1/config/analytics', { as: 'alice' })).status).toBe(200);
    await req('POST', '/v1/config/login-appearance', { as: 'alice', body: '{"title":"foo"}', type: 'application/json' });
    const gone = await req('DELETE', '/v1/config/login-appearance', { as: 'alice' });
    expect(await gone.json()).toEqual({ success: true });
    expect((await req('GET', '/v1/config/login-appearance', { as: 'alice' })).status).toBe(404);
    const last = (await h.audits()).filter((a) => a.action === 'config.set').at(-1)!;
    expect(last.details).toEqual({ key: 'login-appearance', value: null, blobId: null });
  });
});
