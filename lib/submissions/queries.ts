import { and, desc, eq, inArray, isNotNull, isNull, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { actors, submissionDefs, submissions, type ActorRow, type SubmissionDefRow, type SubmissionRow } from '../../drizzle/schema';
import { actorJson, iso } from '../actors';
import type { Ctx } from '../context';
import { canOnFormOrReject, getFormOrNotFound, type LoadedForm } from '../forms/queries';
import { keysetBatches } from '../http/json-stream';
import { problems } from '../problem';

/** Submission JSON (spec, Submission), in Central's key order. */
export type SubmissionJson = ReturnType<typeof submissionJson>;

/** Submission JSON in Central's key order (shared/fixtures/central-outputs/simple/api/submission.json). */
export function submissionJson(sub: SubmissionRow, def: SubmissionDefRow, submitter?: ActorRow | null, defSubmitter?: ActorRow | null) {
  const version = {
    submitterId: def.submitterId,
    createdAt: def.createdAt.toISOString(),
    instanceName: def.instanceName,
    instanceId: def.instanceId,
    current: def.current,
    deviceId: def.deviceId,
    userAgent: def.userAgent,
    ...(defSubmitter !== undefined ? { submitter: defSubmitter ? actorJson(defSubmitter) : null } : {}),
  };
  return {
    instanceId: sub.instanceId,
    submitterId: sub.submitterId,
    deviceId: sub.deviceId,
    createdAt: sub.createdAt.toISOString(),
    updatedAt: iso(sub.updatedAt),
    reviewState: sub.reviewState,
    userAgent: sub.userAgent,
    deletedAt: iso(sub.deletedAt),
    ...(submitter !== undefined ? { submitter: submitter ? actorJson(submitter) : null } : {}),
    currentVersion: version,
  };
}

/**
 * Actors by id, in one query (extended metadata of submissions, versions, comments, audits).
 * @param ids actor ids, nulls and repeats allowed. @returns id → actors row. Reads only.
 */
export async function actorsById(ctx: Ctx, ids: Array<number | null>): Promise<Map<number, ActorRow>> {
  const wanted = [...new Set(ids.filter((x): x is number => x != null))];
  if (wanted.length === 0) return new Map();
  const rows = await ctx.db.select().from(actors).where(inArray(actors.id, wanted));
  return new Map(rows.map((a) => [a.id, a]));
}

/** Where a newest-first page of submissions ends: the last row's (createdAt, id). */
type SubmissionKey = { createdAt: Date; id: number };

/** One row of the submissions list: what its JSON needs and nothing more (no XML, no values). */
const listColumns = {
  id: submissions.id,
  instanceId: submissions.instanceId,
  submitterId: submissions.submitterId,
  deviceId: submissions.deviceId,
  createdAt: submissions.createdAt,
  updatedAt: submissions.updatedAt,
  reviewState: submissions.reviewState,
  userAgent: submissions.userAgent,
  deletedAt: submissions.deletedAt,
  defSubmitterId: submissionDefs.submitterId,
  defCreatedAt: submissionDefs.createdAt,
  instanceName: submissionDefs.instanceName,
  defInstanceId: submissionDefs.instanceId,
  current: submissionDefs.current,
  defDeviceId: submissionDefs.deviceId,
  defUserAgent: submissionDefs.userAgent,
};
const subActor = alias(actors, 'sub_actor');
const defActor = alias(actors, 'def_actor');
const subActorColumns = { id: subActor.id, type: subActor.type, displayName: subActor.displayName, createdAt: subActor.createdAt, updatedAt: subActor.updatedAt, deletedAt: subActor.deletedAt };
const defActorColumns = { id: defActor.id, type: defActor.type, displayName: defActor.displayName, createdAt: defActor.createdAt, updatedAt: defActor.updatedAt, deletedAt: defActor.deletedAt };
interface ListRow {
  id: number; instanceId: string; submitterId: number | null; deviceId: string | null; createdAt: Date; updatedAt: Date | null;
  reviewState: SubmissionRow['reviewState']; userAgent: string | null; deletedAt: Date | null; defSubmitterId: number | null;
  defCreatedAt: Date; instanceName: string | null; defInstanceId: string; current: boolean; defDeviceId: string | null; defUserAgent: string | null;
}
type ActorPick = Pick<ActorRow, 'id' | 'type' | 'displayName' | 'createdAt' | 'updatedAt' | 'deletedAt'>;

/** A list row as Submission JSON: the same keys, in the same order, as submissionJson. */
function listJson(r: ListRow, sub?: ActorPick | null, def?: ActorPick | null) {
  const version = {
    submitterId: r.defSubmitterId,
    createdAt: r.defCreatedAt.toISOString(),
    instanceName: r.instanceName,
    instanceId: r.defInstanceId,
    current: r.current,
    deviceId: r.defDeviceId,
    userAgent: r.defUserAgent,
    ...(def !== undefined ? { submitter: def && def.id != null ? actorJson(def) : null } : {}),
  };
  return {
    instanceId: r.instanceId,
    submitterId: r.submitterId,
    deviceId: r.deviceId,
    createdAt: r.createdAt.toISOString(),
    updatedAt: iso(r.updatedAt),
    reviewState: r.reviewState,
    userAgent: r.userAgent,
    deletedAt: iso(r.deletedAt),
    ...(sub !== undefined ? { submitter: sub && sub.id != null ? actorJson(sub) : null } : {}),
    currentVersion: version,
  };
}

/**
 * Submissions of a form, newest first (GET F/submissions and F/draft/submissions), as batches of
 * Submission JSON read by keyset on (createdAt, id) — the index submissions_form_created — so the
 * list streams (lib/http/json-stream.ts) with memory bounded by a batch. Extended adds the
 * submitter (Actor) at both levels, joined in the same query. Deleted submissions are left out,
 * or, with `deleted`, only they are listed (Central's `?deleted=true`). `offset` skips that many
 * and `limit` stops after that many (Central's paging). Rights, the form and (draft) the draft's
 * existence are checked before this returns, so they fail before the first byte.
 * @param batch rows per query (1,000).
 * @returns an async generator of batches (arrays of Submission JSON).
 * @throws 404.1 unknown form, or no draft for the draft list; 401.2/403.1 without submission.list.
 *   Reads only.
 */
export async function listSubmissions(
  ctx: Ctx, projectId: number, xmlFormId: string, draft: boolean, extended: boolean,
  batch = 1000, page: { deleted?: boolean; limit?: number | null; offset?: number | null } = {},
) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.list', f);
  if (draft && f.form.draftDefId == null) throw problems.user.notFound();
  const base = and(eq(submissions.formId, f.form.id), eq(submissions.draft, draft), page.deleted ? isNotNull(submissions.deletedAt) : isNull(submissions.deletedAt));
  const after = (k: SubmissionKey | null) => (k ? and(base, sql`(${submissions.createdAt}, ${submissions.id}) < (${k.createdAt.toISOString()}::timestamptz, ${k.id})`) : base);
  const key = (r: { createdAt: Date; id: number }): SubmissionKey => ({ createdAt: r.createdAt, id: r.id });
  // Paging: the offset applies to the first read only (later reads continue by key); reads stop
  // once `limit` rows were taken.
  let taken = 0;
  const max = page.limit != null && page.limit >= 0 ? page.limit : Infinity;
  const offset = page.offset != null && page.offset > 0 ? page.offset : 0;
  const paged = <R>(read: (k: SubmissionKey | null, n: number) => Promise<R[]>) => async (k: SubmissionKey | null, size: number): Promise<R[]> => {
    const n = Math.min(size, max - taken);
    if (n <= 0) return [];
    const rows = await read(k, n);
    taken += rows.length;
    return rows;
  };
  if (!extended) {
    const pages = keysetBatches(paged((k, n) => ctx.db.select(listColumns).from(submissions)
      .innerJoin(submissionDefs, eq(submissionDefs.id, submissions.currentDefId))
      .where(after(k)).orderBy(desc(submissions.createdAt), desc(submissions.id)).limit(n).offset(k == null ? offset : 0)), key, batch);
    return mapBatches(pages, (r) => listJson(r));
  }
  const pages = keysetBatches(paged((k, n) => ctx.db.select({ ...listColumns, sub: subActorColumns, def: defActorColumns })
    .from(submissions)
    .innerJoin(submissionDefs, eq(submissionDefs.id, submissions.currentDefId))
    .leftJoin(subActor, eq(subActor.id, submissions.submitterId))
    .leftJoin(defActor, eq(defActor.id, submissionDefs.submitterId))
    .where(after(k)).orderBy(desc(submissions.createdAt), desc(submissions.id)).limit(n).offset(k == null ? offset : 0)), key, batch);
  return mapBatches(pages, (r) => listJson(r, r.sub, r.def));
}

/** Maps each row of each batch. */
async function* mapBatches<R, T>(batches: AsyncGenerator<R[]>, fn: (r: R) => T): AsyncGenerator<T[]> {
  try {
    for await (const b of batches) yield b.map(fn);
  } finally {
    await batches.return(undefined);
  }
}

/** A live submission by its logical instanceId, with its current version. @throws 404.1. */
export async function getSubmissionOrNotFound(ctx: Ctx, f: LoadedForm, instanceId: string, draft: boolean) {
  const [row] = await ctx.db
    .select({ sub: submissions, def: submissionDefs })
    .from(submissions)
    .innerJoin(submissionDefs, eq(submissionDefs.id, submissions.currentDefId))
    .where(and(eq(submissions.formId, f.form.id), eq(submissions.draft, draft), eq(submissions.instanceId, instanceId), isNull(submissions.deletedAt)));
  if (!row) throw problems.user.notFound();
  return row;
}

/**
 * The logical instanceId of the live submission one of whose later versions has this instanceID,
 * or null (GET S answers 301 to the submission's own URL then, as Central).
 */
async function rootOfVersion(ctx: Ctx, f: LoadedForm, versionId: string, draft: boolean): Promise<string | null> {
  const [row] = await ctx.db
    .select({ instanceId: submissions.instanceId })
    .from(submissionDefs)
    .innerJoin(submissions, eq(submissions.id, submissionDefs.submissionId))
    .where(and(eq(submissions.formId, f.form.id), eq(submissions.draft, draft), eq(submissionDefs.instanceId, versionId), isNull(submissions.deletedAt)));
  return row && row.instanceId !== versionId ? row.instanceId : null;
}

/**
 * The logical instanceID of the submission that `versionId` is a later version of (an edit), for
 * Central's redirect of S, S.xml and S/attachments… to S/versions/{versionId}…; null when the id
 * names no such version. Checks `submission.read` first, so the redirect reveals nothing.
 * @throws 404.1 unknown form; 401.2/403.1 without submission.read. Reads only.
 */
export async function rootForVersion(ctx: Ctx, projectId: number, xmlFormId: string, versionId: string, draft: boolean): Promise<string | null> {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.read', f);
  return rootOfVersion(ctx, f, versionId, draft);
}

/** GET S answers this instead of JSON when the id is one of a submission's later versions. */
export interface SubmissionRedirect {
  redirectTo: string;
}

/**
 * One submission (GET S, also draft). An instanceID of a later version (an edit) is not the
 * submission's id: the answer is then a redirect to the submission's own id (Central's 301).
 * @returns Submission JSON, or `{ redirectTo }` holding the logical instanceId.
 * @throws 404.1; 401.2/403.1 without submission.read.
 */
export async function getSubmission(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, draft: boolean, extended: boolean): Promise<SubmissionJson | SubmissionRedirect> {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.read', f);
  const found = await getSubmissionOrNotFound(ctx, f, instanceId, draft).catch(async (err: unknown) => {
    const root = await rootOfVersion(ctx, f, instanceId, draft);
    if (root != null) return { redirectTo: root } as const;
    throw err;
  });
  if ('redirectTo' in found) return found;
  const { sub, def } = found;
  if (!extended) return submissionJson(sub, def);
  const people = await actorsById(ctx, [sub.submitterId, def.submitterId]);
  const who = (id: number | null) => (id == null ? null : people.get(id) ?? null);
  return submissionJson(sub, def, who(sub.submitterId), who(def.submitterId));
}

/** The current version's XML, byte for byte (GET S.xml, also draft). @throws 404.1; 403.1. */
export async function getSubmissionXml(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, draft: boolean): Promise<string> {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.read', f);
  return (await getSubmissionOrNotFound(ctx, f, instanceId, draft)).def.xml;
}
