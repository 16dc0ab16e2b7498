import { describe, expect, test } from 'vitest';
import { ConfigError, parseConfig } from '../../lib/config';
import { loadConfig } from '../../lib/runtime/env';

describe('parseConfig', () => {
  test('defaults: port 8383, loopback, embedded database, file blobs, bcrypt cost 12', () => {
    const c = parseConfig({});
    expect(c).toMatchObject({ PORT: 8383, HOST: '127.0.0.1', DATA_DIR: './data', BCRYPT_COST: 12, SESSION_LIFETIME_HOURS: 24 });
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.S3_BUCKET).toBeUndefined();
  });

  test('a wrong setting fails naming the variable', () => {
    expect(() => parseConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => parseConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
    expect(() => parseConfig({ BCRYPT_COST: '99' })).toThrow(/BCRYPT_COST/);
    expect(() => parseConfig({ S3_FORCE_PATH_STYLE: 'maybe' })).toThrow(/S3_FORCE_PATH_STYLE/);
    try {
      parseConfig({ PORT: '-1', LOG_LEVEL: 'loud' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).issues.map((i) => i.variable).sort()).toEqual(['LOG_LEVEL', 'PORT']);
    }
  });

  test('half-configured S3 or first admin is rejected', () => {
    expect(() => parseConfig({ S3_ACCESS_KEY_ID: 'a', S3_SECRET_ACCESS_KEY: 'b' })).toThrow(/S3_BUCKET/);
    expect(() => parseConfig({ S3_BUCKET: 'b', S3_ACCESS_KEY_ID: 'a' })).toThrow(/S3_SECRET_ACCESS_KEY/);
    expect(() => parseConfig({ ADMIN_EMAIL: 'a@b.org' })).toThrow(/ADMIN_PASSWORD/);
    expect(parseConfig({ S3_BUCKET: 'b', S3_FORCE_PATH_STYLE: 'true' }).S3_FORCE_PATH_STYLE).toBe(true);
  });

  test('blank values count as unset', () => {
    expect(parseConfig({ DATABASE_URL: '', PORT: '' }).PORT).toBe(8383);
  });

  test('plain-HTTP Basic/cookie auth is allowed by default only for the local server on loopback', () => {
    expect(loadConfig({}, {}, { localServer: true }).ALLOW_HTTP_AUTH).toBe(true);
    expect(loadConfig({ HOST: '0.0.0.0' }, {}, { localServer: true }).ALLOW_HTTP_AUTH).toBe(false);
    expect(loadConfig({ HOST: '0.0.0.0', ALLOW_HTTP_AUTH: 'true' }).ALLOW_HTTP_AUTH).toBe(true);
    // Workers and Lambda: HTTPS only unless configured otherwise.
    expect(loadConfig({}).ALLOW_HTTP_AUTH).toBe(false);
  });
});
