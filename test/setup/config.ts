import type { Config } from '../../lib/config';
import { loadConfig } from '../../lib/runtime/env';

/** The configuration tests run with: the environment (DATABASE_URL decides the path), low bcrypt cost. */
export function testConfig(overrides: Record<string, unknown> = {}): Config {
  return loadConfig(process.env, { BCRYPT_COST: '4', LOG_LEVEL: 'silent', SESSION_CACHE_SECONDS: '0', ADMIN_EMAIL: '', ADMIN_PASSWORD: '', ...overrides }, { localServer: true });
}
