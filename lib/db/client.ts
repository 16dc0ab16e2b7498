import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type * as schema from '../../drizzle/schema';

export type Schema = typeof schema;

/**
 * A Drizzle database or transaction over either driver (postgres.js or PGlite). Both extend
 * PgDatabase, so lib code is written once against this type.
 */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
