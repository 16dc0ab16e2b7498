import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type * as schema from '../../drizzle/schema';

export type Schema = typeof schema;

/**
 * A Drizzle database or transaction over either driver (postgres.js or PGlite). Both extend
 * PgDatabase, so lib code is written once against this type.
 */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;

/** The postgres.js settings Fieldbase uses (a subset of its Options, without importing the driver). */
export interface PostgresOptions {
  max: number;
  /** Seconds; undefined: connections stay open until the process ends. */
  idle_timeout: number | undefined;
  prepare: boolean;
  onnotice: () => void;
  connection: { TimeZone: string };
}

/**
 * Connection settings for a postgres.js client, from the config:
 * - `max` = DATABASE_POOL_MAX (Node 10; Lambda 1: one request at a time per instance);
 * - `idle_timeout` = DATABASE_IDLE_TIMEOUT seconds (Node 0: off; Lambda 20, so frozen instances
 *   give their server connection back);
 * - `prepare` = DATABASE_PREPARE (false behind transaction-mode poolers: RDS Proxy, PgBouncer);
 * - sessions in UTC: timestamps without a zone (audit filters) mean UTC, as in Central's deployment.
 * Pure.
 */
export function postgresOptions(config: { DATABASE_POOL_MAX: number; DATABASE_IDLE_TIMEOUT: number; DATABASE_PREPARE: boolean }): PostgresOptions {
  return {
    max: config.DATABASE_POOL_MAX,
    idle_timeout: config.DATABASE_IDLE_TIMEOUT > 0 ? config.DATABASE_IDLE_TIMEOUT : undefined,
    prepare: config.DATABASE_PREPARE,
    onnotice: () => {},
    connection: { TimeZone: 'UTC' },
  };
}

/**
 * Where a DATABASE_URL points postgres.js: the URL itself, or, when it names a Unix socket
 * directory the libpq way (`postgres://user@localhost/db?host=/var/run/postgresql`), the URL
 * without that parameter and the directory as postgres.js's `host` option (postgres.js would
 * send an unknown `host` parameter to the server, which refuses it): for a server that admits
 * local users by socket only (peer authentication). Not a speed-up: bench/entities measured bulk
 * create and entities.csv slower over the socket than over loopback TCP, approvals the same.
 * @param url a postgres:// or postgresql:// URL. @returns `{ url, host? }`. Pure.
 */
export function postgresTarget(url: string): { url: string; host?: string } {
  const at = url.indexOf('?');
  if (at < 0) return { url };
  const params = new URLSearchParams(url.slice(at + 1));
  const host = params.get('host');
  if (host == null || !host.startsWith('/')) return { url };
  params.delete('host');
  const rest = params.toString();
  return { url: url.slice(0, at) + (rest ? `?${rest}` : ''), host };
}
