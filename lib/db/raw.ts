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

/** What rawBytes needs of a postgres.js client (also its transaction handles): `unsafe(…).raw()`. */
interface RawClient {
  unsafe(query: string, params: unknown[], options: { prepare: boolean }): { raw(): Promise<Array<Array<Uint8Array | null>>> };
}
/** What rawBytes needs of a Drizzle handle: its dialect and its session's driver client. */
type DrizzleInternals = { dialect?: { sqlToQuery(q: SQL): { sql: string; params: unknown[] } }; session?: { client?: unknown } };

/**
 * A statement whose rows come back as each column's bytes (UTF-8 text as PostgreSQL sent it, null
 * for NULL), in the select's order, without becoming JavaScript strings: for rows the server only
 * copies on (JSON that PostgreSQL wrote). postgres.js only (its `raw()`), on the handle's own
 * connection or transaction, prepared as Drizzle's queries are (lib/db/statement-cache.ts).
 * @returns a function running a query that way, or null on a driver without it (PGlite: use rawRows).
 */
export function rawBytesRunner(db: Db): ((query: SQL) => Promise<Array<Array<Uint8Array | null>>>) | null {
  const { dialect, session } = db as unknown as DrizzleInternals;
  const client = session?.client as Partial<RawClient> | undefined;
  if (!dialect || typeof client?.unsafe !== 'function') return null;
  const raw = client as RawClient;
  return (query) => {
    const { sql: text, params } = dialect.sqlToQuery(query);
    return raw.unsafe(text, params, { prepare: false }).raw();
  };
}

/**
 * A json/jsonb value as a raw query answers it: postgres.js parses jsonb itself, PGlite and other
 * drivers may hand the text. `null` stays null. Input: the column's value; output: the parsed
 * value (typed by the caller, unchecked). Pure; throws SyntaxError only on malformed text.
 */
export function jsonColumn<T>(v: unknown): T | null {
  return v == null ? null : typeof v === 'string' ? JSON.parse(v) as T : v as T;
}
