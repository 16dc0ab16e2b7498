/**
 * Keyset reading of an ordered list (issue 21: every list streams). A list's ORDER BY is given as
 * key parts (an expression, the PostgreSQL type it is compared as, a direction); the list's query
 * selects each part as text (exact: timestamps keep their microseconds, floats round-trip) and is
 * read in batches, each starting after the last row of the one before. The batches feed
 * lib/http/json-stream.ts (keysetBatches / jsonArrayResponse).
 *
 * Each part must be non-null for every row (coalesce a nullable one) and the parts together must
 * order rows totally (end with a unique column), or rows would be skipped or repeated.
 */
import { and, asc, desc, or, sql, type AnyColumn, type SQL } from 'drizzle-orm';
import { keysetBatches } from '../http/json-stream';

/** One ORDER BY part: `expr` compared as PostgreSQL type `type` (text, int, bigint, timestamptz, boolean, real, float8), ascending unless `desc`. */
export interface KeyPart {
  expr: SQL | AnyColumn;
  type: 'text' | 'int' | 'bigint' | 'timestamptz' | 'boolean' | 'real' | 'float8';
  desc?: boolean;
}

/** The text values of a row's key parts, in order (a position in the list). */
export type KeyPosition = string[];

/** Select fields `__k0`, `__k1`… that a row needs for `keyOf`. */
export type KeyFields = Record<string, SQL<string>>;

/**
 * A list's keyset from its ORDER BY parts. Pure.
 * @returns `fields` (add to the select), `orderBy` (the ORDER BY), `after(pos)` (the WHERE part
 *   for rows after a position; undefined from the start) and `keyOf(row)` (a row's position).
 */
export function keyset(parts: KeyPart[]) {
  const fields: KeyFields = Object.fromEntries(parts.map((p, i) => [`__k${i}`, sql<string>`(${p.expr})::text`]));
  const orderBy = parts.map((p) => (p.desc ? desc(p.expr) : asc(p.expr)));
  // Sent as text and cast in SQL: postgres.js serialises a parameter by the type PostgreSQL infers
  // for it (a boolean from the string 'true' as false, a timestamptz through Date, to milliseconds).
  const value = (p: KeyPart, v: string) => sql`${v}::text::${sql.raw(p.type)}`;
  const sameDirection = parts.every((p) => !!p.desc === !!parts[0]!.desc);
  const after = (pos: KeyPosition | null): SQL | undefined => {
    if (pos == null) return undefined;
    if (sameDirection) {
      // A row comparison, which an index on the parts answers directly.
      const left = sql.join(parts.map((p) => sql`${p.expr}`), sql`, `);
      const right = sql.join(parts.map((p, i) => value(p, pos[i]!)), sql`, `);
      return parts[0]!.desc ? sql`(${left}) < (${right})` : sql`(${left}) > (${right})`;
    }
    // Mixed directions: equal on the first i parts, then past the position on part i.
    return or(...parts.map((p, i) => and(
      ...parts.slice(0, i).map((q, j) => sql`${q.expr} = ${value(q, pos[j]!)}`),
      p.desc ? sql`${p.expr} < ${value(p, pos[i]!)}` : sql`${p.expr} > ${value(p, pos[i]!)}`,
    )));
  };
  const keyOf = (row: object): KeyPosition => parts.map((_, i) => String((row as Record<string, unknown>)[`__k${i}`]));
  return { fields, orderBy, after, keyOf };
}

/**
 * Rows per keyset query of every list (1,000). Tests lower it to cross many batch boundaries with
 * few rows, or raise it to read a list in one query (the whole list in memory, as before issue 21).
 */
export const listBatch = { rows: 1000 };

/**
 * Batches of a list read by keyset: `query(where, limit, offset)` runs the list's query with
 * `where` (undefined for the first batch) ANDed into its conditions, ordered by `ks.orderBy`, with
 * `ks.fields` selected, LIMIT `limit` and OFFSET `offset`. Central's `?limit=`/`?offset=` paging
 * applies to the whole list: the offset to the first batch, the limit across batches.
 * @param opts limit/offset (null: none); batch: rows per query (listBatch.rows).
 * @returns an async generator of batches, none empty (lib/http/json-stream.ts keysetBatches). Reads only.
 */
export function keysetRead<R extends object>(
  ks: ReturnType<typeof keyset>,
  query: (where: SQL | undefined, limit: number, offset: number) => Promise<R[]>,
  opts: { limit?: number | null; offset?: number | null; batch?: number } = {},
): AsyncGenerator<R[]> {
  let left = opts.limit ?? Infinity;
  const read = async (after: KeyPosition | null, size: number): Promise<R[]> => {
    const limit = Math.min(size, left);
    if (limit <= 0) return [];
    const rows = await query(ks.after(after), limit, after == null ? (opts.offset ?? 0) : 0);
    left -= rows.length;
    return rows;
  };
  return keysetBatches(read, ks.keyOf, opts.batch ?? listBatch.rows);
}
