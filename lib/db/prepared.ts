import type { Db } from './client';

/** Built queries per database or transaction handle, by name. */
const cache = new WeakMap<object, Map<string, unknown>>();
/** The first build of each name per driver (session class): what other handles' copies are made from. */
const templates = new WeakMap<object, Map<string, unknown>>();

/** Drizzle's internals this relies on: a handle's session holds the driver client its queries run on. */
type WithSession = { session?: { client?: unknown; constructor: object } };

/**
 * A prepared Drizzle query, built once per name and driver. Hot paths (authentication, the
 * OpenRosa form list and manifest, reviews, entity work) use it because building SQL with Drizzle
 * costs more CPU than running these small indexed queries. Pass values as `sql.placeholder(...)`;
 * on postgres.js give dates as ISO strings (prepared parameters are not type-converted).
 *
 * A transaction is a new handle each time, so building per handle would build on every request:
 * a handle whose driver already built `name` gets a copy of that query bound to its own client
 * (Drizzle's prepared queries keep their SQL, parameter map and row mapping apart from the client
 * they run on), and runs inside its transaction as a query built on it would.
 * @returns the query bound to `db`. Pure apart from the in-memory caches.
 */
export function prepared<T>(db: Db, name: string, build: (db: Db) => T): T {
  let byName = cache.get(db);
  if (!byName) cache.set(db, (byName = new Map()));
  let q = byName.get(name) as T | undefined;
  if (q !== undefined) return q;
  const session = (db as unknown as WithSession).session;
  const kind = session?.constructor;
  let built = kind ? templates.get(kind) : undefined;
  if (kind && !built) templates.set(kind, (built = new Map()));
  const template = built?.get(name) as (T & { client?: unknown }) | undefined;
  if (template !== undefined && session?.client !== undefined && 'client' in (template as object)) {
    q = Object.assign(Object.create(Object.getPrototypeOf(template) as object) as object, template, { client: session.client }) as T;
  } else {
    q = build(db);
    if (built && (q as { client?: unknown }).client === session?.client) built.set(name, q);
  }
  byName.set(name, q);
  return q;
}
