import { desc, eq } from 'drizzle-orm';
import * as z from 'zod';
import { comments, type CommentRow } from '../../drizzle/schema';
import { actorJson } from '../actors';
import { audit } from '../audits/log';
import { withTx, type Ctx } from '../context';
import { canOnFormOrReject, getFormOrNotFound } from '../forms/queries';
import { parseInput } from '../validation';
import { actorsById, getSubmissionOrNotFound } from './queries';

const commentJson = (c: CommentRow) => ({ body: c.body, actorId: c.actorId, createdAt: c.createdAt.toISOString() });

export const CommentInput = z.object({ body: z.string().refine((s) => s.trim().length > 0, 'must not be blank') });

/**
 * Comments on a submission, newest first (GET S/comments); extended adds the `actor`.
 * @returns `[{ body, actorId, createdAt }]` (spec, Comment). @throws 404.1; 401.2/403.1 without
 *   submission.read.
 */
export async function listComments(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, extended: boolean) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.read', f);
  const { sub } = await getSubmissionOrNotFound(ctx, f, instanceId, false);
  const rows = await ctx.db.select().from(comments).where(eq(comments.submissionId, sub.id)).orderBy(desc(comments.createdAt), desc(comments.id));
  if (!extended) return rows.map(commentJson);
  const people = await actorsById(ctx, rows.map((r) => r.actorId));
  return rows.map((r) => ({ ...commentJson(r), actor: people.has(r.actorId) ? actorJson(people.get(r.actorId)!) : null }));
}

/**
 * Adds a comment (POST S/comments `{ body }`), as the requesting actor.
 * @returns the Comment. Effects: comments row; audit `comment.create`
 *   `{ submissionId, instanceId, commentId }` (so the submission's audit trail shows it).
 * @throws 400.2/400.8 empty or missing body; 404.1; 401.2/403.1 without submission.update (Central's verb for comments).
 */
export async function createComment(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, body: unknown) {
  return withTx(ctx, async (tx) => {
    const f = await getFormOrNotFound(tx, projectId, xmlFormId);
    await canOnFormOrReject(tx, 'submission.update', f);
    const { sub } = await getSubmissionOrNotFound(tx, f, instanceId, false);
    const input = parseInput(CommentInput, body);
    const [row] = await tx.db.insert(comments).values({ submissionId: sub.id, actorId: tx.auth.actor!.id, body: input.body }).returning();
    await audit(tx, tx, 'comment.create', f.form.acteeId, { submissionId: sub.id, instanceId: sub.instanceId, commentId: row!.id });
    return commentJson(row!);
  });
}
