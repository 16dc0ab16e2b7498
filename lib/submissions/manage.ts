import { and, asc, desc, eq, isNotNull } from 'drizzle-orm';
import { z } from 'zod';
import { blobs, submissionAttachments, submissionDefs, submissions } from '../../drizzle/schema';
import { iso } from '../actors';
import { audit } from '../audits/log';
import { withTx, type Ctx } from '../context';
import { attachmentContentType } from '../forms/attachments';
import { canOnFormOrReject, getFormOrNotFound } from '../forms/queries';
import { problems } from '../problem';
import { parseInput } from '../validation';
import { getSubmissionOrNotFound } from './queries';

async function load(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, draft: boolean, verb: string) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, verb, f);
  return { f, ...(await getSubmissionOrNotFound(ctx, f, instanceId, draft)) };
}

export const ReviewInput = z.object({ reviewState: z.enum(['received', 'hasIssues', 'edited', 'approved', 'rejected']) });

/**
 * Sets a submission's review state (PATCH S `{ reviewState }`).
 * @returns `{ instanceId, submitterId, deviceId, createdAt, updatedAt, reviewState, deletedAt }`, the
 *   shape Central answers (central-outputs/simple/api/review-*-response.json).
 * Effects: submissions row; audit `submission.update` `{ reviewState }`.
 * @throws 404.1; 403.1 without submission.update; 400.2/400.8 bad body.
 */
export async function setReviewState(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, body: unknown) {
  return withTx(ctx, async (tx) => {
    const { f, sub } = await load(tx, projectId, xmlFormId, instanceId, false, 'submission.update');
    const { reviewState } = parseInput(ReviewInput, body);
    const [row] = await tx.db.update(submissions).set({ reviewState, updatedAt: new Date() }).where(eq(submissions.id, sub.id)).returning();
    await audit(tx, tx, 'submission.update', f.form.acteeId, { submissionId: sub.id, instanceId, reviewState });
    return {
      instanceId: row!.instanceId, submitterId: row!.submitterId, deviceId: row!.deviceId, createdAt: row!.createdAt.toISOString(),
      updatedAt: iso(row!.updatedAt), reviewState: row!.reviewState, deletedAt: iso(row!.deletedAt),
    };
  });
}

/**
 * Moves a submission to the Trash (DELETE S). Effects: deletedAt; audit `submission.delete`.
 * @throws 404.1; 403.1 without submission.delete.
 */
export async function deleteSubmission(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string): Promise<void> {
  await withTx(ctx, async (tx) => {
    const { f, sub } = await load(tx, projectId, xmlFormId, instanceId, false, 'submission.delete');
    await tx.db.update(submissions).set({ deletedAt: new Date() }).where(eq(submissions.id, sub.id));
    await audit(tx, tx, 'submission.delete', f.form.acteeId, { submissionId: sub.id, instanceId });
  });
}

/**
 * Restores a submission from the Trash (POST S/restore). Effects: clears deletedAt; audit
 * `submission.restore`. @throws 404.1 not in the Trash; 403.1 without submission.restore.
 */
export async function restoreSubmission(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string): Promise<void> {
  await withTx(ctx, async (tx) => {
    const f = await getFormOrNotFound(tx, projectId, xmlFormId);
    await canOnFormOrReject(tx, 'submission.restore', f);
    const [sub] = await tx.db
      .select()
      .from(submissions)
      .where(and(eq(submissions.formId, f.form.id), eq(submissions.draft, false), eq(submissions.instanceId, instanceId), isNotNull(submissions.deletedAt)));
    if (!sub) throw problems.user.notFound();
    await tx.db.update(submissions).set({ deletedAt: null }).where(eq(submissions.id, sub.id));
    await audit(tx, tx, 'submission.restore', f.form.acteeId, { submissionId: sub.id, instanceId });
  });
}

/**
 * Versions of a submission, newest first (GET S/versions), in the shape of `currentVersion`.
 * @throws 404.1; 403.1 without submission.read.
 */
export async function listVersions(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string) {
  const { sub } = await load(ctx, projectId, xmlFormId, instanceId, false, 'submission.read');
  const defs = await ctx.db.select().from(submissionDefs).where(eq(submissionDefs.submissionId, sub.id)).orderBy(desc(submissionDefs.createdAt), desc(submissionDefs.id));
  return defs.map((d) => ({
    submitterId: d.submitterId, createdAt: d.createdAt.toISOString(), instanceName: d.instanceName, instanceId: d.instanceId,
    current: d.current, deviceId: d.deviceId, userAgent: d.userAgent,
  }));
}

/**
 * The files the current version expects (GET S/attachments, also draft): `[{ name, exists }]`.
 * @throws 404.1; 403.1 without submission.read.
 */
export async function listAttachments(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, draft: boolean) {
  const { def } = await load(ctx, projectId, xmlFormId, instanceId, draft, 'submission.read');
  const rows = await ctx.db.select().from(submissionAttachments).where(eq(submissionAttachments.submissionDefId, def.id)).orderBy(asc(submissionAttachments.name));
  return rows.map((r) => ({ name: r.name, exists: r.blobId != null }));
}

/**
 * One received file of the current version (GET S/attachments/{filename}, also draft).
 * @returns what lib/http/responses blobResponse sends (ETag = MD5). @throws 404.1; 403.1.
 */
export async function getAttachmentFile(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, draft: boolean, name: string) {
  const { def } = await load(ctx, projectId, xmlFormId, instanceId, draft, 'submission.read');
  const [row] = await ctx.db
    .select({ a: submissionAttachments, sha: blobs.sha, md5: blobs.md5 })
    .from(submissionAttachments)
    .innerJoin(blobs, eq(blobs.id, submissionAttachments.blobId))
    .where(and(eq(submissionAttachments.submissionDefId, def.id), eq(submissionAttachments.name, name)));
  if (!row) throw problems.user.notFound();
  return { name, sha: row.sha, md5: row.md5, contentType: attachmentContentType(name, row.a.contentType) };
}
