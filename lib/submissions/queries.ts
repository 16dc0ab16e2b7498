import { and, desc, eq, inArray, isNotNull, isNull, sql, type SQL } from 'drizzle-orm';
import { rawRows } from '../db/raw';
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

/** Central's ISO time (Date#toISOString: milliseconds, `Z`) of a timestamptz, in SQL. */
const isoSql = (col: SQL) => sql`to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/** An Actor's JSON (actorJson) from an `actors` alias, in SQL; null without one. */
const actorSql = (a: string) => sql.raw(`case when ${a}.id is null then null else (select row_to_json(x) from (select ${a}.id, ${a}.type, ` +
  `${a}.display_name as "displayName", to_char(${a}.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "createdAt", ` +
  `to_char(${a}.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "updatedAt", ` +
  `to_char(${a}.deleted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "deletedAt") x) end`);

/**
 * Submissions of a form, newest first (GET F/submissions and F/draft/submissions), as batches of
 * Submission JSON texts read by keyset on (createdAt, id) — the index submissions_form_created — so
 * the list streams (lib/http/json-stream.ts) with memory bounded by a batch. PostgreSQL writes each
 * row's JSON (row_to_json: compact, the keys in submissionJson's order, times as toISOString writes
 * them), so a row costs the server no parsing or serialising. Extended adds the submitter (Actor)
 * at both levels, joined in the same query. Deleted submissions are left out. The form and rights
 * are checked before this returns, so they fail before the first byte.
 * @param batch rows per query (1,000).
 * @param opts Central's `?deleted=true` (the Trash: only deleted submissions, same order) and
 *   `?limit=` / `?offset=` (a page of the list).
 * @returns an async generator of batches of JSON texts (one Submission each).
 * @throws 404.1 unknown form; 401.2/403.1 without submission.list. Reads only.
 */
export async function listSubmissions(
  ctx: Ctx, projectId: number, xmlFormId: string, draft: boolean, extended: boolean, batch = 1000,
  opts: { deleted?: boolean; limit?: number | null; offset?: number | null } = {},
) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.list', f);
  // No draft: the draft list is 404.1, as Central.
  if (draft && f.form.draftDefId == null) throw problems.user.notFound();
  // row_to_json writes compact JSON (as JSON.stringify), its keys in the select's order.
  const json = sql`(select row_to_json(x)::text from (select s.instance_id as "instanceId", s.submitter_id as "submitterId",
    s.device_id as "deviceId", ${isoSql(sql`s.created_at`)} as "createdAt", ${isoSql(sql`s.updated_at`)} as "updatedAt",
    s.review_state as "reviewState", s.user_agent as "userAgent", ${isoSql(sql`s.deleted_at`)} as "deletedAt",
    ${extended ? sql`${actorSql('sa')} as "submitter", ` : sql``}(select row_to_json(v) from (select d.submitter_id as "submitterId",
      ${isoSql(sql`d.created_at`)} as "createdAt", d.instance_name as "instanceName", d.instance_id as "instanceId", d.current,
      d.device_id as "deviceId", d.user_agent as "userAgent"${extended ? sql`, ${actorSql('da')} as "submitter"` : sql``}) v) as "currentVersion") x)`;
  const joins = extended ? sql`left join actors sa on sa.id = s.submitter_id left join actors da on da.id = d.submitter_id` : sql``;
  type Row = { k: string; id: number; j: string };
  let left = opts.limit ?? Infinity;
  const read = async (after: { k: string; id: number } | null, size: number): Promise<Row[]> => {
    if (left <= 0 && after) return [];
    const limit = Math.min(size, left);
    const rows = await rawRows<Row>(ctx.db, sql`
    select s.created_at::text as k, s.id, ${json} as j
    from submissions s join submission_defs d on d.id = s.current_def_id ${joins}
    where s.form_id = ${f.form.id} and s.draft = ${draft} and s.deleted_at is ${opts.deleted ? sql`not null` : sql`null`}
      ${after ? sql`and (s.created_at, s.id) < (${after.k}::timestamptz, ${after.id})` : sql``}
    order by s.created_at desc, s.id desc limit ${limit}${after || opts.offset == null ? sql`` : sql` offset ${opts.offset}`}`);
    left -= rows.length;
    return rows;
  };
  const pages = keysetBatches(read, (r) => ({ k: r.k, id: r.id }), batch);
  return mapBatches(pages, (r) => r.j);
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
