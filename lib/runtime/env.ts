import { parseConfig, type Config } from '../config';

const loopback = (host: string) => host === '127.0.0.1' || host === 'localhost' || host === '::1' || host.startsWith('127.');

/**
 * Reads the configuration from an environment record (process.env on Node, the bindings on Workers).
 * The only place Fieldbase reads the environment.
 * @param overrides values that win over the environment (tests, CLI flags).
 * @throws ConfigError naming every invalid variable.
 * When ALLOW_HTTP_AUTH is unset it is on for a server bound to loopback (the embedded default, so
 * `npm start` works over http://localhost) and off otherwise (Central's HTTPS-only rule).
 */
export function loadConfig(env: Record<string, unknown>, overrides: Record<string, unknown> = {}): Config {
  const config = parseConfig({ ...env, ...overrides });
  return { ...config, ALLOW_HTTP_AUTH: config.ALLOW_HTTP_AUTH ?? loopback(config.HOST) };
}

/** process.env on Node; `{}` where there is no process (Workers pass their bindings instead). */
export function processEnv(): Record<string, unknown> {
  return typeof process !== 'undefined' && process.env ? { ...process.env } : {};
}
