import { and, eq } from 'drizzle-orm';
import * as z from 'zod';
import { comments, type CommentRow } from '../../drizzle/schema';
import { actorJson } from '../actors';
import { audit } from '../audits/log';
import { withTx, type Ctx } from '../context';
import { keyset, keysetRead } from '../db/keyset';
import { canOnFormOrReject, getFormOrNotFound } from '../forms/queries';
import { mapBatches } from '../http/json-stream';
import { parseInput } from '../validation';
import { actorsById, getSubmissionOrNotFound } from './queries';

const commentJson = (c: CommentRow) => ({ body: c.body, actorId: c.actorId, createdAt: c.createdAt.toISOString() });

export const CommentInput = z.object({ body: z.string().refine((s) => s.trim().length > 0, 'must not be blank') });

/** A submission's comments, newest first (ties by id). */
const commentOrder = keyset([{ expr: comments.createdAt, type: 'timestamptz', desc: true }, { expr: comments.id, type: 'int', desc: true }]);

/**
 * Comments on a submission, newest first (GET S/comments); extended adds the `actor`. Read by
 * keyset in batches of 1,000 (lib/db/keyset.ts), each batch's actors in one query, for a streamed
 * answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of `{ body, actorId, createdAt[, actor] }` (spec, Comment).
 * @throws 404.1; 401.2/403.1 without submission.read (before the first batch). Reads only.
 */
export async function listComments(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, extended: boolean) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.read', f);
  const { sub } = await getSubmissionOrNotFound(ctx, f, instanceId, false);
  const rows = keysetRead(commentOrder, (after, limit) => ctx.db.select({ c: comments, ...commentOrder.fields }).from(comments)
    .where(and(eq(comments.submissionId, sub.id), after)).orderBy(...commentOrder.orderBy).limit(limit));
  return mapBatches(rows, async (batch) => {
    if (!extended) return batch.map((r) => commentJson(r.c));
    const people = await actorsById(ctx, batch.map((r) => r.c.actorId));
    return batch.map(({ c }) => ({ ...commentJson(c), actor: people.has(c.actorId) ? actorJson(people.get(c.actorId)!) : null }));
  });
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
