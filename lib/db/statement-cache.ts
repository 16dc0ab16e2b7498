/**
 * Server-side prepared statements for Drizzle's ordinary queries on postgres.js.
 *
 * Drizzle asks postgres.js not to prepare a query unless `.prepare(name)` was called, and
 * postgres.js then sends every query that has parameters in two round trips: Parse + Describe,
 * wait for the parameter types, then Bind + Execute. A prepared statement is described once per
 * connection and afterwards costs one round trip. An approval or a submission runs a dozen such
 * statements, so half its round trips (each a write to the socket and a wake-up of the PostgreSQL
 * backend) were these descriptions.
 *
 * The wrapper asks postgres.js to prepare them (a connection opened with `prepare: false`, as behind
 * transaction-mode poolers with DATABASE_PREPARE off, still prepares nothing), for a bounded set of
 * statement texts with at most 256 parameters: the first `limit` distinct ones this process sees, which are the hot ones, so a
 * query whose text varies without end (an IN list of every length) cannot grow the per-connection
 * statement caches on either side without bound. Later texts run unprepared as before.
 */

/** Statements with more parameters (multi-row inserts) are left unprepared: few repeats, big plans. */
const MAX_PARAMS = 256;

/** The part of a postgres.js `Sql` (and of its transaction and savepoint handles) this wraps. */
interface SqlLike {
  unsafe(query: string, params?: unknown[], options?: { prepare?: boolean }): unknown;
  begin(...args: unknown[]): unknown;
  savepoint?(...args: unknown[]): unknown;
}

/**
 * Wraps a postgres.js client so Drizzle's unprepared queries are prepared per connection, up to
 * `limit` (default 2,000) distinct statement texts per process; transaction (`begin`) and
 * savepoint handles are wrapped the same way. Pass the result to `drizzle()`.
 * @returns a proxy of `client`; every other property is the client's own. No I/O of its own.
 */
export function preparingClient<T extends object>(client: T, limit = 2000): T {
  const known = new Set<string>();
  const wrap = <S extends object>(target: S): S => new Proxy(target, {
    get(t, prop, receiver) {
      const value = Reflect.get(t, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const sqlLike = t as unknown as SqlLike;
      if (prop === 'unsafe') {
        return (query: string, params?: unknown[], options?: { prepare?: boolean }) => {
          if (options?.prepare === false && (params?.length ?? 0) <= MAX_PARAMS
            && (known.has(query) || (known.size < limit && known.add(query)))) {
            // postgres.js's own default for `unsafe` is unprepared, so ask for it; a connection
            // opened with `prepare: false` still prepares nothing.
            return sqlLike.unsafe(query, params, { ...options, prepare: true });
          }
          return sqlLike.unsafe(query, params, options);
        };
      }
      if (prop === 'begin' && typeof (t as { reserve?: unknown }).reserve === 'function') {
        // A transaction without options: its `begin` goes out with its first statement (pipelinedBegin).
        return (...args: unknown[]) => {
          const fn = args[0];
          if (args.length !== 1 || typeof fn !== 'function') return (value as (...a: unknown[]) => unknown).apply(t, args);
          return pipelinedBegin(t as unknown as Reservable, (inner) => (fn as (s: object) => unknown)(wrap(inner)));
        };
      }
      if (prop === 'begin' || prop === 'savepoint') {
        // The callback (last argument) receives the transaction's own handle: wrap it too.
        return (...args: unknown[]) => {
          const last = args.length - 1;
          const fn = args[last];
          if (typeof fn === 'function') args[last] = (inner: object) => (fn as (s: object) => unknown)(wrap(inner));
          return (value as (...a: unknown[]) => unknown).apply(t, args);
        };
      }
      return value;
    },
  });
  return wrap(client);
}

/** The part of a postgres.js `Sql` pipelinedBegin uses: a connection of its own (`reserve`). */
interface Reservable {
  reserve(): Promise<ReservedSql>;
}
type PgQuery = Promise<unknown> & { execute(): PgQuery };
interface ReservedSql {
  unsafe(query: string, params?: unknown[], options?: { prepare?: boolean }): PgQuery;
  release(): void;
  savepoint?: (...args: unknown[]) => Promise<unknown>;
}

/**
 * A transaction as postgres.js's `begin(fn)` runs it, except that `begin` is not awaited on its
 * own: it is queued on a reserved connection and goes out with the transaction's first statement,
 * in one write (queries on one connection run in the order they are issued). A write request
 * thereby costs one round trip less (an approval: 7 to 6). `fn` gets the connection's handle,
 * with `savepoint(fn)` / `savepoint(name, fn)` as postgres.js's (nested Drizzle transactions).
 * Commits when `fn` resolves, rolls back when it throws (then rethrows). A statement that failed
 * without `fn` noticing (its promise not awaited) makes PostgreSQL answer the COMMIT with ROLLBACK:
 * that throws, as postgres.js's own `begin` does. The connection goes back to the pool either way.
 * @returns what `fn` resolved to.
 */
async function pipelinedBegin<T>(client: Reservable, fn: (handle: object) => T | Promise<T>): Promise<T> {
  const conn = await client.reserve();
  let savepoints = 0;
  conn.savepoint = async (...args: unknown[]) => {
    const inner = args[args.length - 1] as (h: object) => unknown;
    const name = `s${savepoints++}${args.length > 1 ? `_${String(args[0]).replace(/[^a-z0-9_]/gi, '')}` : ''}`;
    await conn.unsafe(`savepoint ${name}`);
    try {
      return await inner(conn);
    } catch (err) {
      await conn.unsafe(`rollback to ${name}`);
      throw err;
    }
  };
  const began = conn.unsafe('begin').execute();
  began.catch(() => {}); // awaited below; the first statement fails with it anyway
  let ended = false;
  try {
    const result = await fn(conn);
    await began;
    ended = true;
    const done = (await conn.unsafe('commit', [], { prepare: true })) as { command?: string };
    if (done.command === 'ROLLBACK') throw new Error('transaction rolled back at commit: a statement in it failed');
    return result;
  } catch (err) {
    if (!ended) await conn.unsafe('rollback').catch(() => {});
    throw err;
  } finally {
    conn.release();
  }
}
