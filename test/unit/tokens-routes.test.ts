import { describe, expect, test } from 'vitest';
import { sha256Hex, hashBytes } from '../../lib/blobs/hash';
import { routingPath } from '../../lib/http/app';
import { groupFor } from '../../lib/http/route-table';
import { generateToken, isValidToken } from '../../lib/sessions/tokens';
import { parseInput } from '../../lib/validation';
import { z } from 'zod';

describe('tokens', () => {
  test("64 URL-safe characters like Central's, all different", () => {
    const tokens = new Set(Array.from({ length: 200 }, generateToken));
    expect(tokens.size).toBe(200);
    for (const t of tokens) {
      expect(t).toMatch(/^[A-Za-z0-9!$]{64}$/);
      expect(isValidToken(t)).toBe(true);
    }
    expect(isValidToken('not-a-token')).toBe(false);
    expect(isValidToken('A'.repeat(63))).toBe(false);
  });

  test('hashes', async () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const both = await hashBytes(new TextEncoder().encode('abc'));
    expect(both.md5).toBe('900150983cd24fb0d6963f7d28e17f72');
    expect(both.sha).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('route table', () => {
  test.each([
    ['/v1/projects', 'projects'],
    ['/v1/projects/7', 'projects'],
    ['/v1/projects/7/assignments/manager/3', 'assignments'],
    ['/v1/projects/7/forms/simple/assignments', 'assignments'],
    ['/v1/projects/7/app-users', 'users'],
    ['/v1/users/current', 'users'],
    ['/v1/sessions/restore', 'users'],
    ['/v1/roles/admin', 'assignments'],
    ['/v1/assignments', 'assignments'],
    ['/v1/audits', 'audits'],
    ['/v1/projects/7/forms', 'forms'],
    ['/v1/projects/7/formList', 'forms'],
    ['/v1/test/tok/projects/7/forms/simple/draft/formList', 'forms'],
    ['/v2/projects', null],
  ])('%s → %s', (path, group) => {
    expect(groupFor(path)).toBe(group);
  });

  test('App User URLs route as if the key prefix were absent', () => {
    expect(routingPath(new Request('http://x/v1/key/abc$!def/projects/1/formList'))).toBe('/v1/projects/1/formList');
    expect(routingPath(new Request('http://x/v1/projects'))).toBe('/v1/projects');
  });
});

describe('parseInput', () => {
  const S = z.object({ name: z.string().min(1), n: z.number().optional() });
  test('missing → 400.2, wrong type → 400.11, bad value → 400.8', () => {
    expect(() => parseInput(S, {})).toThrow(expect.objectContaining({ code: 400.2, details: { field: 'name' } }));
    expect(() => parseInput(S, { name: 3 })).toThrow(expect.objectContaining({ code: 400.11 }));
    expect(() => parseInput(S, { name: '' })).toThrow(expect.objectContaining({ code: 400.8 }));
    expect(parseInput(S, { name: 'x' })).toEqual({ name: 'x' });
  });
});
