import type { Db } from './client';

const cache = new WeakMap<object, Map<string, unknown>>();

/**
 * A prepared Drizzle query, built once per database handle and name. Hot paths (authentication,
 * the OpenRosa form list and manifest) use it because building SQL with Drizzle costs more CPU than
 * running these small indexed queries. Pass values as `sql.placeholder(...)`; on postgres.js give
 * dates as ISO strings (prepared parameters are not type-converted).
 */
export function prepared<T>(db: Db, name: string, build: (db: Db) => T): T {
  let byName = cache.get(db);
  if (!byName) cache.set(db, (byName = new Map()));
  let q = byName.get(name) as T | undefined;
  if (q === undefined) byName.set(name, (q = build(db)));
  return q;
}
