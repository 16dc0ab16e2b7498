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
