import type { SQL } from 'drizzle-orm';
import type { Db } from './client';

/**
 * Runs a hand-written statement (data-modifying CTEs Drizzle's builder cannot express) and returns
 * its rows with the database's own column names. postgres.js answers an array, PGlite `{ rows }`;
 * both come out as an array. Values are passed as bound parameters by the `sql` template.
 */
export async function rawRows<T = Record<string, unknown>>(db: Db, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown;
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}
