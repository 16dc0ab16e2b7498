import { and, asc, eq, inArray, isNotNull, lt, sql } from 'drizzle-orm';
import * as z from 'zod';
import { actors, audits, comments, formDefs, forms, keys, projects, submissionAttachments, submissionDefs, submissions, type FormRow } from '../../drizzle/schema';
import { actorJson, iso } from '../actors';
import { audit } from '../audits/log';
import { auditJson } from '../audits';
import { withTx, type Ctx } from '../context';
import { enqueueJob, prefetchInlineJob, withJobs } from '../jobs';
import { usesEnketo } from '../forms/enketo';
import { canOnFormOrReject, formActee, formJson, getDefOrNotFound, getFormOrNotFound, type LoadedForm } from '../forms/queries';
import { formVerbsSql, liveFormByKey } from '../forms/openrosa';
import { primeVerbs } from '../authz/can';
import { keyset, keysetRead } from '../db/keyset';
import type { Db } from '../db/client';
import { prepared } from '../db/prepared';
import { mapBatches } from '../http/json-stream';
import { Problem, problems } from '../problem';
import { parseInput } from '../validation';
import { actorsById, getSubmissionOrNotFound } from './queries';
import { loadReadable } from './versions';

/**
 * The live form, its project, the actor's verbs on it (priming the rights check) and the id of the
 * live published submission `instanceId` (null when none) in one prepared round trip: what a review
 * needs before it writes (reviewers approve one submission after another).
 * @throws Problem 404.1 unknown form or project. Reads only.
 */
async function reviewTarget(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string): Promise<LoadedForm & { subId: number | null; currentDefId: number | null }> {
  const [row] = Number.isSafeInteger(projectId)
    ? await prepared(ctx.db, 'review_target', (d) => d
      .select({
        form: forms,
        project: projects,
        verbs: formVerbsSql(),
        // [id, current_def_id] of the live published submission.
        sub: sql<number[] | null>`(select array[s.id, s.current_def_id] from ${submissions} s where s.form_id = ${forms.id} and not s.draft
          and s.instance_id = ${sql.placeholder('instanceId')} and s.deleted_at is null and s.current_def_id is not null)`,
      })
      .from(forms)
      .innerJoin(projects, eq(projects.id, forms.projectId))
      .where(liveFormByKey())
      .prepare('review_target'))
      .execute({ projectId, xmlFormId, instanceId, actorId: ctx.auth.actor?.id ?? -1 })
    : [];
  if (!row) throw problems.user.notFound();
  const loaded = { form: row.form, project: row.project };
  primeVerbs(ctx, formActee(loaded), row.verbs);
  return { ...loaded, subId: row.sub == null ? null : Number(row.sub[0]), currentDefId: row.sub == null ? null : Number(row.sub[1]) };
}

/**
 * A review's write, prepared (reviewers approve one submission after another): placeholders `id`,
 * `reviewState` (null: left as it is), `now` (ISO).
 */
const reviewUpdate = (db: Db) => prepared(db, 'review_update', (d) => d
  .update(submissions)
  .set({ reviewState: sql`coalesce(${sql.placeholder('reviewState')}, ${submissions.reviewState})`, updatedAt: sql`${sql.placeholder('now')}::timestamptz` })
  .where(eq(submissions.id, sql.placeholder('id')))
  .returning()
  .prepare('review_update'));

async function load(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, draft: boolean, verb: string) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, verb, f);
  return { f, ...(await getSubmissionOrNotFound(ctx, f, instanceId, draft)) };
}

/** PATCH S's body: `reviewState` may be left out (Central then changes only updatedAt, and audits the update without it). */
export const ReviewInput = z.object({ reviewState: z.enum(['received', 'hasIssues', 'edited', 'approved', 'rejected']).optional() });

/**
 * Sets a submission's review state (PATCH S `{ reviewState }`).
 * @returns `{ instanceId, submitterId, deviceId, createdAt, updatedAt, reviewState, deletedAt }`, the
 *   shape Central answers (central-outputs/simple/api/review-*-response.json).
 * Without `reviewState` (or with an XML body, which the route reads as `{}`), only updatedAt
 * changes, as Central does. Effects: submissions row; audit `submission.update`
 * `{ submissionId, instanceId, reviewState? }` with `notes` (X-Action-Notes).
 * @throws 404.1; 403.1 without submission.update; 400.2/400.8 bad body.
 */
export async function setReviewState(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, body: unknown, notes: string | null = null) {
  return withJobs(ctx, async (tx) => {
    const f = await reviewTarget(tx, projectId, xmlFormId, instanceId);
    await canOnFormOrReject(tx, 'submission.update', f);
    if (f.subId == null) throw problems.user.notFound();
    const sub = { id: f.subId };
    const { reviewState } = parseInput(ReviewInput, body);
    // The update and its audit go out together, in either order (one round trip: neither needs the
    // other's answer; both commit or neither). An approval's entity work reads what it needs in
    // the same round trip, after them (lib/jobs' prefetch; lib/entities checks that its read saw
    // this update, by updatedAt, and reads again if not).
    const now = new Date().toISOString();
    const write = Promise.all([
      reviewUpdate(tx.db).execute({ id: sub.id, reviewState: reviewState ?? null, now }),
      audit(tx, tx, 'submission.update', f.form.acteeId, { submissionId: sub.id, instanceId, ...(reviewState === undefined ? {} : { reviewState }) }, notes),
    ]);
    const prefetched = reviewState === 'approved' && f.currentDefId != null
      ? prefetchInlineJob(tx, 'submission.entities', { defId: f.currentDefId, reviewedAt: now }) : null;
    const [[row], auditId] = await write;
    // Approval may create entities: lib/entities' handler runs in this transaction when this
    // process has it (one commit; the entity exists when the reviewer gets the answer), else as a
    // job after commit. The audit is its triggering event, so the handler need not look it up.
    if (reviewState === 'approved' && row!.currentDefId != null) {
      await enqueueJob(tx, 'submission.entities', {
        action: 'submission.update', submissionId: sub.id, submissionDefId: row!.currentDefId, reviewState, actorId: tx.auth.actor?.id ?? null, auditId,
      }, { inline: true, prefetched });
    }
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

/** Central's 409.11: the form has no Enketo id (never pushed to Enketo, or Enketo not configured). */
const enketoNotReady = () => new Problem(409.11, 'The form you tried to access is not ready for web use yet. Please wait some time and try again.');
/** Central's 409.12: only submissions of open forms are edited on the web. */
const editingClosingOrClosed = () => new Problem(409.12, 'You are trying to edit a submission of a Form that is in Closing or Closed state. In this version of Central, you can only edit the submissions of Open Forms. We will fix this in a future version for Central.');

/**
 * Web editing of a submission (GET S/edit). As Central, in this order: the form (404.1), the rights
 * (submission.update), a form without an Enketo id or no Enketo configured (409.11), a form not open (409.12), the
 * submission (404.1); then the redirect to the web editor, which this server does not do yet (501.1).
 * @throws 404.1; 401.2/403.1 without submission.update; 409.11; 409.12; else 501.1. Reads only.
 */
export async function editSubmission(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string): Promise<never> {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.update', f);
  // Without an Enketo server configured, the form's public ids are this server's own (Web Forms),
  // not Enketo's: answered as Central does when Enketo never gave the form an id.
  if (f.form.enketoId == null || !usesEnketo(ctx)) throw enketoNotReady();
  if (f.form.state !== 'open') throw editingClosingOrClosed();
  await getSubmissionOrNotFound(ctx, f, instanceId, false);
  throw problems.internal.notImplemented({ feature: 'submission editing' });
}

/** Audits newest first (ties by id), as GET /v1/audits. */
const auditOrder = keyset([{ expr: audits.loggedAt, type: 'timestamptz', desc: true }, { expr: audits.id, type: 'bigint', desc: true }]);

/**
 * A submission's audit log, newest first (GET S/audits, and its draft form): every entry whose details name it
 * (submission.*, comment.create). Extended adds `actor` and `actee` (the Form). Read by keyset in
 * batches of 1,000 (lib/db/keyset.ts), each batch's actors in one query, for a streamed answer
 * (lib/http/json-stream.ts).
 * @returns an async generator of batches of Audit JSON.
 * @throws 404.1; 401.2/403.1 without submission.read (before the first batch). Reads only.
 */
export async function listSubmissionAudits(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, extended: boolean, draft = false) {
  const { f, sub } = await loadReadable(ctx, projectId, xmlFormId, instanceId, draft);
  const rows = keysetRead(auditOrder, (after, limit) => ctx.db
    .select({ a: audits, ...auditOrder.fields })
    .from(audits)
    .where(and(sql`${audits.details} ? 'submissionId'`, sql`((${audits.details} ->> 'submissionId')::int) = ${sub.id}`, after))
    .orderBy(...auditOrder.orderBy).limit(limit));
  const actee = extended ? formJson(f.form, await getDefOrNotFound(ctx, f.form.currentDefId ?? f.form.draftDefId)) : null;
  return mapBatches(rows, async (batch) => {
    if (!extended) return batch.map((r) => auditJson(r.a));
    const people = await actorsById(ctx, batch.map((r) => r.a.actorId));
    return batch.map(({ a }) => ({ ...auditJson(a), actor: a.actorId != null && people.has(a.actorId) ? actorJson(people.get(a.actorId)!) : null, actee }));
  });
}

/**
 * The encryption keys of the form versions that have submissions (GET F/submissions/keys, also
 * draft): `[{ id, public, managed, hint, createdAt }]` (central-outputs/encrypted/api/submission-keys.json;
 * `managed` null for a self-supplied key, as Central). @throws 404.1; 401.2/403.1 without submission.read.
 */
export async function listSubmissionKeys(ctx: Ctx, projectId: number, xmlFormId: string, draft: boolean) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.read', f);
  const used = ctx.db
    .selectDistinct({ keyId: formDefs.keyId })
    .from(submissionDefs)
    .innerJoin(submissions, eq(submissions.id, submissionDefs.submissionId))
    .innerJoin(formDefs, eq(formDefs.id, submissionDefs.formDefId))
    .where(and(eq(submissions.formId, f.form.id), eq(submissions.draft, draft), isNotNull(formDefs.keyId)));
  const rows = await ctx.db.select().from(keys).where(inArray(keys.id, used)).orderBy(asc(keys.id));
  return rows.map((k) => ({ id: k.id, public: k.public, managed: k.managed ? true : null, hint: k.hint, createdAt: k.createdAt.toISOString() }));
}

/** Actors by display name (ties by id). */
const actorOrder = keyset([{ expr: actors.displayName, type: 'text' }, { expr: actors.id, type: 'int' }]);

/**
 * Every Actor who submitted to the form, once each, by display name (GET F/submissions/submitters).
 * Read by keyset in batches of 1,000 (lib/db/keyset.ts) for a streamed answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of Actor JSON.
 * @throws 404.1; 401.2/403.1 without submission.read (before the first batch). Reads only.
 */
export async function listSubmitters(ctx: Ctx, projectId: number, xmlFormId: string) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.read', f);
  const ids = ctx.db
    .selectDistinct({ id: submissions.submitterId })
    .from(submissions)
    .where(and(eq(submissions.formId, f.form.id), eq(submissions.draft, false), isNotNull(submissions.submitterId)));
  const rows = keysetRead(actorOrder, (after, limit) => ctx.db.select({ a: actors, ...actorOrder.fields }).from(actors)
    .where(and(inArray(actors.id, ids), after)).orderBy(...actorOrder.orderBy).limit(limit));
  return mapBatches(rows, (batch) => batch.map((r) => actorJson(r.a)));
}

/** Deletes submissions (ids from a subquery or list) with their versions, attachments and comments. */
async function deleteSubmissionRows(tx: Ctx, where: ReturnType<typeof eq>): Promise<number> {
  const subIds = tx.db.select({ id: submissions.id }).from(submissions).where(where);
  const defIds = tx.db.select({ id: submissionDefs.id }).from(submissionDefs).where(inArray(submissionDefs.submissionId, subIds));
  await tx.db.update(submissions).set({ currentDefId: null }).where(where);
  await tx.db.delete(submissionAttachments).where(inArray(submissionAttachments.submissionDefId, defIds));
  await tx.db.delete(comments).where(inArray(comments.submissionId, subIds));
  await tx.db.delete(submissionDefs).where(inArray(submissionDefs.submissionId, subIds));
  const gone = await tx.db.delete(submissions).where(where).returning({ id: submissions.id });
  return gone.length;
}

/**
 * Deletes a form's draft (test) submissions, as Central does when the draft is published, replaced
 * or deleted (Central soft-deletes them). Their versions, attachments and comments are removed (the
 * draft definition they were made against goes with the draft), but each submission row stays as
 * a deleted one (`deletedAt` set, no current version), so its instanceID stays taken in the form's
 * draft until the Trash is purged: a new draft submission reusing it is a 409, as in Central
 * (forms/draft.js "preserving submissions from old or deleted drafts"). Deleted rows are already
 * left out of every list, count, export and OData feed. Call inside the draft verb's transaction;
 * orphaned blobs go with the next `blobs-sweep` / purge.
 * @returns how many were deleted. Effects: rows (no audit, as Central).
 */
export async function deleteDraftSubmissions(tx: Ctx, form: FormRow): Promise<number> {
  const where = and(eq(submissions.formId, form.id), eq(submissions.draft, true))!;
  const subIds = tx.db.select({ id: submissions.id }).from(submissions).where(where);
  const defIds = tx.db.select({ id: submissionDefs.id }).from(submissionDefs).where(inArray(submissionDefs.submissionId, subIds));
  const gone = await tx.db.update(submissions).set({ currentDefId: null, deletedAt: sql`coalesce(${submissions.deletedAt}, now())` })
    .where(where).returning({ id: submissions.id });
  await tx.db.delete(submissionAttachments).where(inArray(submissionAttachments.submissionDefId, defIds));
  await tx.db.delete(comments).where(inArray(comments.submissionId, subIds));
  await tx.db.delete(submissionDefs).where(inArray(submissionDefs.submissionId, subIds));
  return gone.length;
}

const TRASH_DAYS = 30;

/**
 * Purges submissions in the Trash for over 30 days (all of them with `force`): the submission, its
 * versions, attachments, comments, and then the blobs nothing references any more. A maintenance
 * job (CLI `purge`, spec: Submission states "soft-deleted → purged after 30 days").
 * @returns how many were purged. Effects: deletes rows and blobs; one audit `submission.purge`
 *   `{ submissionsDeleted }` when any were purged.
 */
export async function purgeSubmissions(ctx: Ctx, opts: { force: boolean; now?: Date }): Promise<number> {
  const cutoff = new Date((opts.now ?? new Date()).getTime() - TRASH_DAYS * 86_400_000);
  const n = await withTx(ctx, async (tx) => {
    const count = await deleteSubmissionRows(tx, opts.force ? isNotNull(submissions.deletedAt) : and(isNotNull(submissions.deletedAt), lt(submissions.deletedAt, cutoff))!);
    if (count > 0) await audit(tx, tx, 'submission.purge', null, { submissionsDeleted: count });
    return count;
  });
  const { deleteUnreferencedBlobs } = await import('../forms/attachments');
  await deleteUnreferencedBlobs(ctx);
  return n;
}
