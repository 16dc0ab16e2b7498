import { parseConfig, type Config } from '../config';

const loopback = (host: string) => host === '127.0.0.1' || host === 'localhost' || host === '::1' || host.startsWith('127.');

/**
 * Reads the configuration from an environment record (process.env on Node, the bindings on Workers).
 * The only place Fieldbase reads the environment.
 * @param overrides values that win over the environment (tests, CLI flags).
 * @param opts.localServer the process is the local server (`npm start`): an unset ALLOW_HTTP_AUTH
 *   is then on when HOST is loopback, so the embedded default works over http://localhost. Anywhere
 *   else (Workers, Lambda, a public HOST) it defaults to off: Central's HTTPS-only rule.
 * @throws ConfigError naming every invalid variable.
 */
export function loadConfig(
  env: Record<string, unknown>,
  overrides: Record<string, unknown> = {},
  opts: { localServer?: boolean } = {},
): Config {
  const config = parseConfig({ ...env, ...overrides });
  const localDefault = opts.localServer === true && loopback(config.HOST);
  return { ...config, ALLOW_HTTP_AUTH: config.ALLOW_HTTP_AUTH ?? localDefault };
}

/** process.env on Node; `{}` where there is no process (Workers pass their bindings instead). */
export function processEnv(): Record<string, unknown> {
  return typeof process !== 'undefined' && process.env ? { ...process.env } : {};
}
