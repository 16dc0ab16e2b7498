/**
 * Live submission counts per form, kept at write time (issue 21): migration 0026's statement
 * triggers on `submissions` add a delta row to `submission_counts` per (form, draft) whose count a
 * statement changed (insert, delete, soft delete or restore); this sums them. An unfiltered OData
 * `$count` then reads a few index entries instead of counting the form's submissions (a Parallel
 * Seq Scan of 638 ms at 1,000,000). Delta rows rather than one counter row keep concurrent ingests
 * into one form from waiting on each other; a read folds a form's rows into one once they pile up.
 */
import { sql } from 'drizzle-orm';
import type { Ctx } from '../context';
import { rawRows } from '../db/raw';

/** Delta rows a form may have before a read folds them into one. */
const FOLD_AT = 64;

/**
 * The number of a form's submissions (drafts' or not) that are not deleted: what
 * `count(*) … where form_id = $1 and draft = $2 and deleted_at is null` answers, in the reader's
 * snapshot (inside a transaction, its own uncommitted writes included).
 * Effects: when the form has more than FOLD_AT delta rows, replaces them with their sum (one
 * statement; concurrent folds and writes keep the total: a row deleted by another fold is skipped,
 * a delta committed meanwhile is left for the next fold); a failed fold is logged, not thrown.
 */
export async function liveSubmissionCount(ctx: Ctx, formId: number, draft: boolean): Promise<number> {
  const [row] = await rawRows<{ n: string | number; k: number }>(ctx.db, sql`select coalesce(sum(n), 0)::bigint as n, count(*)::int as k
    from submission_counts where form_id = ${formId} and draft = ${draft}`);
  const n = Number(row?.n ?? 0);
  if ((row?.k ?? 0) > FOLD_AT) {
    await rawRows(ctx.db, sql`with gone as (delete from submission_counts where form_id = ${formId} and draft = ${draft} returning n)
      insert into submission_counts (form_id, draft, n) select ${formId}, ${draft}, sum(n) from gone having count(*) > 0`)
      .catch((err: unknown) => ctx.log.warn('submission count fold failed', { err, formId }));
  }
  return n;
}
