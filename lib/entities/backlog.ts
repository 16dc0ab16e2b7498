/**
 * The offline-entities backlog (entities-version 2024.1+; Central's processBacklog): an offline
 * update that arrives before the update it builds on in its branch is held in
 * `entity_submission_backlog` (./from-submissions holds it, with a `submission.backlog.hold`
 * audit, and requeues it with `submission.backlog.reprocess` as soon as its predecessor is
 * applied). What is still held after the backlog timeout is force-processed here, in branch
 * order: applied on the latest version (a soft conflict), or as a create when the entity does not
 * exist. A plain function for every scheduler: `npm run cli -- entity-backlog` (Node, cron), a
 * Workers cron trigger or a Lambda scheduled rule calling `processEntityBacklog(systemCtx)`.
 * Spec: central-api.yaml (Offline Entities); Central lib/model/query/entities.js processBacklog.
 */
import { and, asc, eq, lt, sql } from 'drizzle-orm';
import { entitySubmissionBacklog, forms, submissions } from '../../drizzle/schema';
import { auditAs } from '../audits/log';
import { withTx, type Ctx } from '../context';
import { processSubmissionEvent } from './from-submissions';

/** Central's default backlog timeout (config default.taskSchedule.entitySubmissionBacklog): 5 days. */
export const BACKLOG_TIMEOUT_DAYS = 5;

/**
 * Force-processes held offline updates, oldest branch position first (branchId, branchBaseVersion),
 * each in its own transaction: the backlog row is deleted (a concurrent run or a late
 * predecessor that took it first wins, and the row is skipped), `submission.backlog.force`
 * `{ submissionId, submissionDefId }` is audited on the form by the submitter, and the entity
 * work runs with force (errors become `entity.error`, as for any submission).
 * @param opts.force process everything held now, whatever its age; `timeoutDays` (default 5)
 *   otherwise: rows held since before the start of the day that many days ago (Central's
 *   `current_date - 5`).
 * @returns how many held submissions were processed. Effects: as described; reads the clock.
 */
export async function processEntityBacklog(ctx: Ctx, opts: { force?: boolean; timeoutDays?: number } = {}): Promise<number> {
  const days = opts.timeoutDays ?? BACKLOG_TIMEOUT_DAYS;
  const b = entitySubmissionBacklog;
  const held = await ctx.db.select({ id: b.id }).from(b)
    .where(opts.force ? undefined : lt(b.loggedAt, sql`current_date - ${days}::int`))
    .orderBy(asc(b.branchId), asc(b.branchBaseVersion));
  let processed = 0;
  for (const { id } of held) {
    const done = await withTx({ ...ctx, tx: undefined }, async (tx) => {
      const [row] = await tx.db.delete(b).where(eq(b.id, id)).returning();
      if (!row) return false;
      const [sub] = await tx.db.select({ submitterId: submissions.submitterId, acteeId: forms.acteeId }).from(submissions)
        .innerJoin(forms, eq(forms.id, submissions.formId)).where(eq(submissions.id, row.submissionId));
      const actorId = sub?.submitterId ?? null;
      await auditAs(tx, actorId, 'submission.backlog.force', sub?.acteeId ?? null,
        { submissionId: row.submissionId, submissionDefId: row.submissionDefId });
      await processSubmissionEvent(tx, {
        action: 'submission.create', submissionId: row.submissionId, submissionDefId: row.submissionDefId, actorId, force: true,
      });
      return true;
    });
    if (done) processed += 1;
  }
  return processed;
}

/** Submissions held in the backlog (optionally only for one entity), e.g. for a health check or tests. Reads only. */
export async function countHeldSubmissions(ctx: Ctx, entityUuid?: string): Promise<number> {
  const b = entitySubmissionBacklog;
  const [row] = await ctx.db.select({ n: sql<number>`count(*)::int` }).from(b)
    .where(entityUuid ? and(eq(b.entityUuid, entityUuid)) : undefined);
  return row?.n ?? 0;
}
