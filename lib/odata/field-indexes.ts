/**
 * Indexes that follow the filters users run (issue 21). An OData `$filter` on a form field of
 * Submissions compares an expression over `submission_defs.root_values`; without an index that is
 * a scan of the form's rows (1.7 s for a selective `q1 eq '…'` at 100,000). When a form with at
 * least ODATA_FIELD_INDEX_MIN_ROWS submissions is filtered on a field, the server builds a partial
 * B-tree expression index on exactly the expression the filter compiles to:
 *
 *   CREATE INDEX CONCURRENTLY sfi_… ON submission_defs ((<expr>)) WHERE (<expr>) IS NOT NULL
 *
 * with <expr> `nullif(root_values ->> '<path>', '')` (text), `fb_field_number(root_values ->> '<path>')`
 * (number) or `fb_field_time(root_values ->> '<path>')` (time; migration 0022). Equality
 * (compiled as `= lit and is not distinct from lit`, lib/exports/filter.ts) and ranges then use it
 * (Index Scan / Bitmap Index Scan), and the partial predicate keeps other forms' rows out of it. One
 * index per (path, kind) serves every form with that path.
 *
 * Lifecycle, recorded in `submission_field_indexes`: a filter inserts a `pending` row and starts
 * the build in the background (outside the request and any transaction; the first filtered request
 * still scans); the builder claims the row (`building`), creates the index CONCURRENTLY (plain
 * CREATE INDEX on PGlite), creates extended statistics on the expression (the planner does not use a
 * partial index's own statistics; without them a range is guessed at a third of the rows and
 * walks the feed order instead), ANALYZEs submission_defs and marks it `ready`,
 * or `failed` with the error after dropping an invalid leftover (tried again after an hour). Builds
 * run one at a time per process (concurrent CREATE INDEX CONCURRENTLY on one table deadlock). Use touches `last_used_at` (at most
 * once an hour per index and process). Indexes unused for 30 days are dropped by the sweep that a
 * filter starts at most once an hour per process. At most 32 indexes exist at once: each costs
 * every submission insert a little (bench/README.md, "field index ingest cost").
 * On Workers a build started in a request may be cut short; a `building` row older than an hour is
 * claimed again by the next filter.
 */
import { and, eq, inArray, lt, or, sql, type SQL } from 'drizzle-orm';
import { submissionDefs, submissionFieldIndexes, submissions } from '../../drizzle/schema';
import type { Ctx } from '../context';
import type { Db } from '../db/client';
import { rawRows } from '../db/raw';

/** How a form field compares in `$filter` (lib/exports/filter.ts FilterType). */
export type FieldKind = 'text' | 'number' | 'time';

const MAX_INDEXES = 32;
const UNUSED_DAYS = 30;
const TOUCH_MS = 3_600_000;
const SWEEP_MS = 3_600_000;
const STALE_BUILD = sql`interval '1 hour'`;

/** A SQL string literal (standard_conforming_strings): paths come from form definitions, but are quoted all the same. */
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/**
 * The expression a field compiles to, with the path as a literal (not a bound parameter) so that
 * a generic prepared plan still matches the index expression.
 * @param indexed number and time fields read through the never-failing IMMUTABLE functions only
 *   when their index exists (the inline casts are cheaper for scans, and equal in value).
 */
export function fieldExpression(path: string, kind: FieldKind, indexed: boolean): SQL {
  const raw = sql`(${submissionDefs.rootValues} ->> ${sql.raw(literal(path))})`;
  if (kind === 'text') return sql`nullif(${raw}, '')`;
  if (indexed) return kind === 'number' ? sql`fb_field_number(${raw})` : sql`fb_field_time(${raw})`;
  const v = sql`nullif(${raw}, '')`;
  if (kind === 'number') return sql`(case when ${v} ~ ${sql.raw(literal(NUMERIC))} then (${v})::numeric end)`;
  return sql`(case when ${v} ~ ${sql.raw(literal(ISO_DATE))} then (${v})::timestamptz end)`;
}

export const NUMERIC = '^\\s*[-+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*$';
export const ISO_DATE = '^\\s*[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])';

/** The index's name: stable for (path, kind), within PostgreSQL's 63 bytes. */
async function indexName(path: string, kind: FieldKind): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`${kind}\u0000${path}`)));
  return `sfi_${kind}_${[...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

const key = (path: string, kind: FieldKind) => `${kind}\u0000${path}`;

/**
 * Which of these fields have a ready index. @returns the set of `key(path, kind)` that do.
 * Reads only (one indexed query).
 */
export async function readyFieldIndexes(ctx: Ctx, fields: Array<{ path: string; kind: FieldKind }>): Promise<Set<string>> {
  if (fields.length === 0) return new Set();
  const rows = await ctx.db.select({ path: submissionFieldIndexes.path, kind: submissionFieldIndexes.kind }).from(submissionFieldIndexes)
    .where(and(inArray(submissionFieldIndexes.path, [...new Set(fields.map((f) => f.path))]), eq(submissionFieldIndexes.state, 'ready')));
  return new Set(rows.map((r) => key(r.path, r.kind)));
}

/** Whether `readyFieldIndexes` found this field. Pure. */
export const isReady = (ready: Set<string>, path: string, kind: FieldKind) => ready.has(key(path, kind));

const touched = new Map<string, number>();
let lastSweep = 0;

/**
 * Records that a form's Submissions were filtered on these fields: touches the indexes that
 * exist, and for a form of at least ODATA_FIELD_INDEX_MIN_ROWS submissions requests the missing
 * ones and starts building them; now and then sweeps indexes unused for 30 days. Never throws
 * (an index is an optimisation: its failures are logged, not answered).
 * @returns a promise that settles when the bookkeeping is done; builds go on in the background
 *   (`building` resolves when they end, for tests and benches).
 * Effects: writes submission_field_indexes; CREATE/DROP INDEX CONCURRENTLY on submission_defs.
 */
export async function noteFieldFilter(ctx: Ctx, formId: number, fields: Array<{ path: string; kind: FieldKind }>): Promise<void> {
  const min = ctx.config.ODATA_FIELD_INDEX_MIN_ROWS;
  if (min < 0 || fields.length === 0) return;
  // The database outside any transaction: index builds must not run in one.
  const db = ctx.tx?.root ?? ctx.db;
  try {
    const existing = await db.select().from(submissionFieldIndexes).where(inArray(submissionFieldIndexes.path, [...new Set(fields.map((f) => f.path))]));
    const now = Date.now();
    const missing: Array<{ path: string; kind: FieldKind }> = [];
    for (const f of fields) {
      const row = existing.find((r) => r.path === f.path && r.kind === f.kind);
      if (!row) {
        missing.push(f);
        continue;
      }
      if (row.state === 'ready' && now - (touched.get(row.name) ?? 0) > TOUCH_MS) {
        touched.set(row.name, now);
        await db.update(submissionFieldIndexes).set({ lastUsedAt: new Date() }).where(eq(submissionFieldIndexes.id, row.id));
      }
      // A build a process died in (or a Worker was cut short in) is taken over after an hour, and a
      // failed one is tried again after as long.
      if (row.state !== 'ready') start(ctx, db, row.id);
    }
    if (missing.length > 0 && await formHasRows(db, formId, min)) {
      const [{ n } = { n: 0 }] = await rawRows<{ n: number }>(db, sql`select count(*)::int as n from ${submissionFieldIndexes} where state <> 'failed'`);
      for (const f of missing.slice(0, Math.max(0, MAX_INDEXES - n))) {
        const [row] = await db.insert(submissionFieldIndexes).values({ path: f.path, kind: f.kind, name: await indexName(f.path, f.kind) })
          .onConflictDoNothing().returning({ id: submissionFieldIndexes.id });
        if (row) start(ctx, db, row.id);
      }
    }
    if (now - lastSweep > SWEEP_MS) {
      lastSweep = now;
      track(sweepFieldIndexes(ctx, db));
    }
  } catch (err) {
    ctx.log.warn('field index bookkeeping failed', { err, requestId: ctx.requestId });
  }
}

/** Whether the form has at least `min` live submissions (an index-only count that stops at `min`). */
async function formHasRows(db: Db, formId: number, min: number): Promise<boolean> {
  if (min === 0) return true;
  const [row] = await rawRows<{ n: number }>(db, sql`select count(*)::int as n from (select 1 from ${submissions}
    where ${submissions.formId} = ${formId} and ${submissions.deletedAt} is null limit ${min}) s`);
  return (row?.n ?? 0) >= min;
}

const inFlight = new Set<Promise<unknown>>();
const track = (p: Promise<unknown>) => {
  inFlight.add(p);
  void p.finally(() => inFlight.delete(p));
};

/** Resolves when every build and sweep this process started has ended (tests, benches). */
export async function fieldIndexesSettled(): Promise<void> {
  while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
}

/**
 * Builds run one at a time in a process: two CREATE INDEX CONCURRENTLY on one table wait for each
 * other's snapshots and deadlock.
 */
let queue: Promise<void> = Promise.resolve();
function start(ctx: Ctx, db: Db, id: number): void {
  const next = queue.then(() => buildFieldIndex(ctx, db, id));
  queue = next.catch(() => {});
  track(next);
}

/** Whether the database is PGlite (one connection, no CONCURRENTLY). */
const isPglite = (db: Db) => (db as unknown as { $client?: { constructor?: { name?: string } } }).$client?.constructor?.name === 'PGlite';

/**
 * Builds one requested index if this process can claim it. Never throws: a failure drops what it
 * left and marks the row `failed` with the error.
 */
async function buildFieldIndex(ctx: Ctx, db: Db, id: number): Promise<void> {
  const [row] = await db.update(submissionFieldIndexes).set({ state: 'building', startedAt: new Date() })
    .where(and(eq(submissionFieldIndexes.id, id), or(eq(submissionFieldIndexes.state, 'pending'),
      and(inArray(submissionFieldIndexes.state, ['building', 'failed']), lt(submissionFieldIndexes.startedAt, sql`now() - ${STALE_BUILD}`)))))
    .returning().catch(() => []);
  if (!row) return;
  const concurrently = isPglite(db) ? '' : ' concurrently';
  const expr = fieldExpression(row.path, row.kind, true);
  try {
    await db.execute(sql.raw(`drop index${concurrently} if exists "${row.name}"`));
    await db.execute(sql`${sql.raw(`create index${concurrently} if not exists "${row.name}" on submission_defs (`)}(${expr})) where (${expr}) is not null`);
    // Statistics of the expression, so the planner knows how selective a comparison is: the planner
    // ignores a partial index's own expression statistics, so extended statistics carry them.
    await db.execute(sql`${sql.raw(`create statistics if not exists "${row.name}_st" on (`)}${expr}) from submission_defs`);
    await db.execute(sql`analyze ${submissionDefs}`);
    await db.update(submissionFieldIndexes).set({ state: 'ready', builtAt: new Date(), error: null }).where(eq(submissionFieldIndexes.id, id));
    ctx.log.info('field index built', { name: row.name, path: row.path, kind: row.kind });
  } catch (err) {
    ctx.log.warn('field index build failed', { err, name: row.name, path: row.path });
    await db.execute(sql.raw(`drop index${concurrently} if exists "${row.name}"`)).catch(() => {});
    // drizzle wraps the database's error: its cause says what went wrong.
    const e = err as { cause?: { message?: string }; message?: string };
    await db.update(submissionFieldIndexes).set({ state: 'failed', error: String(e.cause?.message ?? e.message ?? err).slice(0, 500) })
      .where(eq(submissionFieldIndexes.id, id)).catch(() => {});
  }
}

/**
 * Drops the indexes no filter used for 30 days, and forgets failed builds after as long (so they
 * are tried again). @returns how many were dropped. Never throws. Effects: DROP INDEX CONCURRENTLY.
 */
export async function sweepFieldIndexes(ctx: Ctx, db: Db = ctx.tx?.root ?? ctx.db): Promise<number> {
  try {
    const old = await db.select().from(submissionFieldIndexes)
      .where(lt(submissionFieldIndexes.lastUsedAt, sql`now() - ${sql.raw(`interval '${UNUSED_DAYS} days'`)}`));
    const concurrently = isPglite(db) ? '' : ' concurrently';
    let dropped = 0;
    for (const row of old) {
      if (row.state === 'building') continue;
      await db.execute(sql.raw(`drop index${concurrently} if exists "${row.name}"`));
      await db.execute(sql.raw(`drop statistics if exists "${row.name}_st"`));
      await db.delete(submissionFieldIndexes).where(eq(submissionFieldIndexes.id, row.id));
      dropped += 1;
    }
    return dropped;
  } catch (err) {
    ctx.log.warn('field index sweep failed', { err });
    return 0;
  }
}
