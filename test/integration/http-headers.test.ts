/** Central's caching headers on API answers (other/http-headers.js): private revalidation for reads, none for writes. */
import { describe, expect, test } from 'vitest';
import { harness } from '../helpers/harness';

describe('caching headers', () => {
  test.each(['GET', 'HEAD'])('%s: Cache-Control private, no-cache; Vary Accept-Encoding, Origin (also on a 401)', async (method) => {
    const h = await harness();
    for (const as of ['alice', 'anonymous'] as const) {
      const res = await h.request(method, '/v1/users/current', { as });
      expect(res.headers.get('cache-control')).toBe('private, no-cache');
      expect(res.headers.get('vary')).toBe('Accept-Encoding, Origin');
    }
  });

  test.each(['POST', 'PUT', 'PATCH', 'DELETE'])('%s: Cache-Control no-store; Vary *', async (method) => {
    const h = await harness();
    const res = await h.request(method, '/v1/users/current', { as: 'alice' });
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('vary')).toBe('*');
  });

  test('session reads are never cached; no X-Powered-By', async () => {
    const h = await harness();
    const res = await h.get('/v1/sessions/restore', { as: 'alice' });
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-powered-by')).toBeNull();
  });
});
