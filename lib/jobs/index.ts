/**
 * Deferred work between domains (DESIGN, "Reactions between domains"). A lower domain records a
 * job in its own transaction (`enqueueJob`); the domain that reacts registers a handler for the
 * job's action (`registerJobHandler`, e.g. lib/entities for `submission.entities`). `runJobs` runs
 * pending jobs right after the request's commit (Node, Lambda: in the request), and `drainJobs` is
 * the scheduled sweep (`npm run cli -- jobs`, the local server's timer) so nothing is lost when a
 * process dies. This module imports no domain: handlers come to it.
 *
 * Pending jobs: `select count(*) from jobs where done_at is null` (the conformance harness's
 * QUEUE_PENDING_SQL).
 */
import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { jobs } from '../../drizzle/schema';
import { withTx, type Ctx } from '../context';

/**
 * A handler runs inside the job's transaction; throwing rolls its work back and retries later.
 * `prefetched`: when run inline, what its `prefetch` started for this job (see `prefetchInlineJob`).
 */
export type JobHandler = (tx: Ctx, payload: Record<string, unknown>, prefetched?: Prefetched) => Promise<void>;

/**
 * An inline handler's first statements, issued by the producer before its own statements have
 * answered: `key` says which job they were read for (the handler ignores a mismatch), `result`
 * what they answer (rejects as they do).
 */
export interface Prefetched { key: unknown; result: Promise<unknown> }

/** Starts an inline handler's first statements on the producer's transaction (lib/jobs does not look inside). */
export type JobPrefetch = (tx: Ctx, key: unknown) => Promise<unknown>;

const handlers = new Map<string, JobHandler>();
/** Actions whose handler was registered as safe to run in the producer's transaction. */
const inlineSafe = new Set<string>();
const prefetchers = new Map<string, JobPrefetch>();

/** Jobs enqueued in each open transaction (keyed by its state object), for `withJobs`. */
const enqueued = new WeakMap<object, number[]>();

/** How long a request keeps running the jobs its own jobs enqueued (the rest is left to the drain). */
const IN_REQUEST_FOLLOW_UP_MS = 2000;

/** Attempts before a job that keeps failing is given up (marked done with its last error). */
const MAX_ATTEMPTS = 3;

/**
 * Registers the handler for one job action (once per process; a second registration replaces
 * the first). `opts.inline`: the handler may run inside the producer's own transaction (see
 * `enqueueJob`'s `inline`) because it leaves no work behind when it throws (it rolls its own work
 * back to a savepoint). `opts.prefetch` (inline handlers only): its first statements, which a
 * producer may issue ahead with `prefetchInlineJob`. Effects: in-memory registry only.
 */
export function registerJobHandler(action: string, handler: JobHandler, opts: { inline?: boolean; prefetch?: JobPrefetch } = {}): void {
  handlers.set(action, handler);
  if (opts.inline === true) inlineSafe.add(action);
  else inlineSafe.delete(action);
  if (opts.inline === true && opts.prefetch) prefetchers.set(action, opts.prefetch);
  else prefetchers.delete(action);
}

/**
 * Issues the first statements of an inline job the caller is about to enqueue, now, on its
 * transaction: called in the same tick as the caller's own last writes, they travel to the
 * database in the same round trip and run after those writes (one connection runs statements in
 * the order they were issued), so they read what those writes left. For a reviewer's approval
 * this saves one of its round trips. Pass the answer to `enqueueJob`'s `opts.prefetched`.
 * @param key what the statements are for (the handler compares it with the payload's).
 * @returns null when this process runs no inline handler with a prefetch for `action`, or `tx`
 *   is not a transaction. Effects: the prefetch's statements (read-only or savepoints); a
 *   rejection is held for the handler, never left unhandled.
 */
export function prefetchInlineJob(tx: Ctx, action: string, key: unknown): Prefetched | null {
  const prefetch = prefetchers.get(action);
  if (!tx.tx || !prefetch || !inlineSafe.has(action)) return null;
  const result = prefetch(tx, key);
  result.catch(() => {}); // awaited by the handler; a failure (the caller's write failed first) is not unhandled meanwhile
  return { key, result };
}

/** Whether a handler is registered for `action` in this process (bundle). Pure read. */
export const hasJobHandler = (action: string): boolean => handlers.has(action);

/**
 * Records a job in the caller's transaction, to run once it commits.
 * @param payload JSON the handler receives. @param opts.background leave it to the scheduled sweep
 *   (`drainJobs`) instead of running it right after the request's commit: a retry of work the
 *   request just tried and failed (Enketo), as Central's worker does it later, not at once.
 * @param opts.prefetched what `prefetchInlineJob` started for this job, handed to the inline handler.
 * @param opts.inline when this process has the action's handler registered as inline-safe and the
 *   caller is in a transaction, run the handler now, in that transaction, instead of recording a
 *   job: its work commits with the caller's (one commit, no job row, no second transaction; an
 *   approval's entity is there when the response is). Should the handler throw, its work is
 *   already rolled back and the job is recorded as without `inline`, for the retry.
 * @returns the job id, or null when the handler ran inline.
 * Effects: inserts into `jobs`, or the handler's; on commit the caller should `runJobs` (see `withJobs`).
 */
export async function enqueueJob(
  tx: Ctx, action: string, payload: Record<string, unknown>, opts: { background?: boolean; inline?: boolean; prefetched?: Prefetched | null } = {},
): Promise<number | null> {
  if (opts.inline === true && tx.tx && inlineSafe.has(action)) {
    try {
      await handlers.get(action)!(tx, payload, opts.prefetched ?? undefined);
      return null;
    } catch (err) {
      tx.log.error('inline job failed; recorded for a retry', { err, action, requestId: tx.requestId });
    }
  }
  const [row] = await tx.db.insert(jobs).values({ action, payload }).returning({ id: jobs.id });
  if (tx.tx && opts.background !== true) {
    const list = enqueued.get(tx.tx) ?? [];
    list.push(row!.id);
    enqueued.set(tx.tx, list);
  }
  return row!.id;
}

/**
 * Runs a verb that may enqueue jobs, then, once its transaction committed, runs those jobs before
 * returning (in the request, as DESIGN asks for Node and Lambda). A job whose handler is not in
 * this bundle, or that fails, stays for the drain. Errors of the jobs never reach the caller.
 * @returns what `fn` returned. Effects: those of `fn` and of the job handlers.
 */
export async function withJobs<T>(ctx: Ctx, fn: (tx: Ctx) => Promise<T>): Promise<T> {
  if (ctx.tx) return fn(ctx); // an outer transaction owns the commit; its owner runs the jobs
  let ids: number[] = [];
  const result = await withTx(ctx, async (tx) => {
    const out = await fn(tx);
    ids = (tx.tx && enqueued.get(tx.tx)) ?? [];
    return out;
  });
  // In the request, a chain of follow-up jobs (a long offline branch arriving in reverse) runs for a
  // bounded time; the scheduled drain finishes it, so a device's request never waits for all of it.
  if (ids.length > 0) await runJobs(ctx, ids, undefined, { followUpMs: IN_REQUEST_FOLLOW_UP_MS });
  return result;
}

/**
 * Runs the given pending jobs (or, without ids, up to `limit` of the oldest pending ones), each in
 * its own transaction that locks the job row (`for update skip locked`), so two processes never run
 * one job twice. A handler error rolls back its work and counts an attempt; after three the job is
 * marked done with its error. Jobs without a handler here are left pending. Jobs a handler
 * enqueues (a held offline update requeued by the one before it) run next, in this same call, so
 * a chain of them completes in one run, or, with `opts.followUpMs`, only those started within that
 * many milliseconds (the others stay pending for the drain).
 * @returns how many jobs completed. Effects: the handlers'; `jobs` rows updated.
 */
export async function runJobs(ctx: Ctx, ids?: number[], limit = 100, opts: { followUpMs?: number } = {}): Promise<number> {
  const root: Ctx = { ...ctx, tx: undefined };
  const started = Date.now();
  const candidates = ids ? [...ids] : (await root.db
    .select({ id: jobs.id })
    .from(jobs)
    .where(and(isNull(jobs.doneAt), inArray(jobs.action, [...handlers.keys(), ''])))
    .orderBy(asc(jobs.id))
    .limit(limit)).map((r) => r.id);
  let done = 0;
  for (let i = 0; i < candidates.length; i += 1) {
    const id = candidates[i]!;
    let failure: unknown = null;
    let ran = false;
    let followUps: number[] = [];
    try {
      await withTx(root, async (tx) => {
        const [job] = await tx.db.select().from(jobs)
          .where(and(eq(jobs.id, id), isNull(jobs.doneAt)))
          .for('update', { skipLocked: true });
        if (!job) return;
        const handler = handlers.get(job.action);
        if (!handler) return;
        await handler(tx, job.payload);
        await tx.db.update(jobs).set({ doneAt: new Date(), attempts: sql`${jobs.attempts} + 1` }).where(eq(jobs.id, id));
        ran = true;
        followUps = (tx.tx && enqueued.get(tx.tx)) ?? [];
      });
    } catch (err) {
      failure = err;
    }
    if (ran) {
      done += 1;
      if (opts.followUpMs == null || Date.now() - started < opts.followUpMs) candidates.push(...followUps);
    }
    if (failure != null) {
      ctx.log.error('job failed', { err: failure, jobId: id, requestId: ctx.requestId });
      const message = failure instanceof Error ? failure.message : String(failure);
      await root.db.update(jobs)
        .set({
          attempts: sql`${jobs.attempts} + 1`,
          lastError: message,
          doneAt: sql`case when ${jobs.attempts} + 1 >= ${MAX_ATTEMPTS} then now() else null end`,
        })
        .where(eq(jobs.id, id))
        .catch(() => {});
    }
  }
  return done;
}

/**
 * The scheduled sweep: runs pending jobs (those with a handler in this process) until none is
 * left or a pass makes no progress. @returns jobs completed. Effects: those of `runJobs`.
 */
export async function drainJobs(ctx: Ctx): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await runJobs(ctx);
    total += n;
    if (n === 0) return total;
  }
}

/** Pending jobs (not done), e.g. for a health check. Reads only. */
export async function countPendingJobs(ctx: Ctx): Promise<number> {
  const [row] = await ctx.db.select({ n: sql<number>`count(*)::int` }).from(jobs).where(isNull(jobs.doneAt));
  return row?.n ?? 0;
}
