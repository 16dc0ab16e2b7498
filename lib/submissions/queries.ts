import { and, desc, eq, inArray, isNotNull, isNull, sql, type SQL } from 'drizzle-orm';
import { rawBytesRunner, rawRows } from '../db/raw';
import { actors, submissionDefs, submissions, type ActorRow, type SubmissionDefRow, type SubmissionRow } from '../../drizzle/schema';
import { actorJson, iso } from '../actors';
import type { Ctx } from '../context';
import { canOnFormOrReject, getFormOrNotFound, type LoadedForm } from '../forms/queries';
import { keysetBatches, mapBatches } from '../http/json-stream';
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

/** Central's ISO time (Date#toISOString: milliseconds, `Z`) of a timestamptz, quoted, as JSON text in SQL; `null` for null. */
const isoJsonSql = (col: string, nullable: boolean) => {
  const iso = `'"' || to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"'`;
  return nullable ? `coalesce(${iso}, 'null')` : iso;
};
/** A text column as JSON text in SQL (escaped by to_json), `null` for null. */
const textJsonSql = (col: string, nullable: boolean) => (nullable ? `coalesce(to_json(${col})::text, 'null')` : `to_json(${col})::text`);
/**
 * A list row's Submission JSON (submissionJson's keys and order, compact as JSON.stringify, as
 * row_to_json wrote it before) written by PostgreSQL with `||` in two parts, so the server can put
 * the extended metadata's `submitter` after each: `head` is `{"instanceId"…"deletedAt":…`, `version`
 * is `,"currentVersion":{"submitterId"…"userAgent":…`; both objects are closed by the server (`}}`).
 * Plain concatenation with to_json only for texts costs PostgreSQL about half of row_to_json over
 * subselects with to_char (issue 21: its one backend was the list's bottleneck).
 */
const LIST_HEAD = sql.raw(`'{"instanceId":' || ${textJsonSql('s.instance_id', false)} || ',"submitterId":' || coalesce(s.submitter_id::text, 'null')
  || ',"deviceId":' || ${textJsonSql('s.device_id', true)} || ',"createdAt":' || ${isoJsonSql('s.created_at', false)}
  || ',"updatedAt":' || ${isoJsonSql('s.updated_at', true)} || ',"reviewState":' || ${textJsonSql('s.review_state', true)}
  || ',"userAgent":' || ${textJsonSql('s.user_agent', true)} || ',"deletedAt":' || ${isoJsonSql('s.deleted_at', true)}`);
const LIST_VERSION = sql.raw(`',"currentVersion":{"submitterId":' || coalesce(d.submitter_id::text, 'null') || ',"createdAt":' || ${isoJsonSql('d.created_at', false)}
  || ',"instanceName":' || ${textJsonSql('d.instance_name', true)} || ',"instanceId":' || ${textJsonSql('d.instance_id', false)}
  || ',"current":' || d.current::text || ',"deviceId":' || ${textJsonSql('d.device_id', true)} || ',"userAgent":' || ${textJsonSql('d.user_agent', true)}`);

const utf8 = new TextEncoder();
const SUBMITTER = utf8.encode(',"submitter":');
const CLOSE = utf8.encode('}}');
const NULL = utf8.encode('null');

/**
 * Submissions of a form, newest first (GET F/submissions and F/draft/submissions), as batches read
 * by keyset on (createdAt, id) — the index submissions_form_created — so the list streams
 * (lib/http/json-stream.ts) with memory bounded by a batch or two. PostgreSQL writes each row's
 * JSON (LIST_HEAD, LIST_VERSION); on postgres.js the server takes its bytes as they came and copies
 * a batch into one chunk without making strings of them (PGlite: texts joined). Extended adds the
 * submitter (Actor) at both levels: each actor read once per request (a batch's new ones in one
 * query) and its JSON written once. Deleted submissions are left out. The form and rights are
 * checked before this returns, so they fail before the first byte.
 * @param batch rows per query (1,000).
 * @param opts Central's `?deleted=true` (the Trash: only deleted submissions, same order) and
 *   `?limit=` / `?offset=` (a page of the list).
 * @returns an async generator of batches, each one item: the batch's Submission JSON texts,
 *   comma-separated, as UTF-8 bytes or a string (jsonArrayStream's `serialized`).
 * @throws 404.1 unknown form; 401.2/403.1 without submission.list. Reads only.
 */
export async function listSubmissions(
  ctx: Ctx, projectId: number, xmlFormId: string, draft: boolean, extended: boolean, batch = 1000,
  opts: { deleted?: boolean; limit?: number | null; offset?: number | null } = {},
): Promise<AsyncGenerator<Array<Uint8Array | string>>> {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.list', f);
  // No draft: the draft list is 404.1, as Central.
  if (draft && f.form.draftDefId == null) throw problems.user.notFound();
  // Columns: the keyset position (k, id), the JSON's two parts, and (extended) both submitters' ids.
  const query = (after: { k: string; id: number } | null, limit: number) => sql`
    select s.created_at::text as k, s.id, ${LIST_HEAD} as head, ${LIST_VERSION} as version${extended ? sql`, s.submitter_id as sb, d.submitter_id as dsb` : sql``}
    from submissions s join submission_defs d on d.id = s.current_def_id
    where s.form_id = ${f.form.id} and s.draft = ${draft} and s.deleted_at is ${opts.deleted ? sql`not null` : sql`null`}
      ${after ? sql`and (s.created_at, s.id) < (${after.k}::text::timestamptz, ${after.id})` : sql``}
    order by s.created_at desc, s.id desc limit ${limit}${after || opts.offset == null ? sql`` : sql` offset ${opts.offset}`}`;
  let left = opts.limit ?? Infinity;
  const paged = <R>(run: (after: { k: string; id: number } | null, limit: number) => Promise<R[]>) =>
    async (after: { k: string; id: number } | null, size: number): Promise<R[]> => {
      if (left <= 0 && after) return [];
      const rows = await run(after, Math.min(size, left));
      left -= rows.length;
      return rows;
    };
  // Extended: each actor's JSON text by id, for the whole request ('null' for an id with no actor).
  const people = new Map<number, string>();
  const learn = async (ids: Array<number | null>) => {
    const missing = ids.filter((id): id is number => id !== null && !people.has(id));
    if (missing.length === 0) return;
    const found = await actorsById(ctx, missing);
    for (const id of missing) people.set(id, found.get(id) ? JSON.stringify(actorJson(found.get(id)!)) : 'null');
  };

  const bytes = rawBytesRunner(ctx.db);
  if (!bytes) {
    type Row = { k: string; id: number; head: string; version: string; sb?: number | null; dsb?: number | null };
    const read = paged((after, limit) => rawRows<Row>(ctx.db, query(after, limit)));
    return mapBatches(keysetBatches(read, (r) => ({ k: r.k, id: r.id }), batch), async (rows) => {
      if (!extended) return [rows.map((r) => r.head + r.version + '}}').join(',')];
      await learn(rows.flatMap((r) => [r.sb ?? null, r.dsb ?? null]));
      const who = (id: number | null | undefined) => (id == null ? 'null' : people.get(id)!);
      return [rows.map((r) => r.head + ',"submitter":' + who(r.sb) + r.version + ',"submitter":' + who(r.dsb) + '}}').join(',')];
    });
  }
  // postgres.js: each column's bytes (k, id, head, version[, sb, dsb]); ids parsed only when extended.
  type Raw = Array<Uint8Array | null>;
  // k and the ids are ASCII (a timestamp's text, digits).
  const text = (b: Uint8Array | null | undefined) => (b == null ? null : String.fromCharCode(...b));
  const read = paged((after, limit) => bytes(query(after, limit)));
  const actorBytes = new Map<number, Uint8Array>();
  const whoBytes = (b: Uint8Array | null | undefined) => {
    if (b == null) return NULL;
    const id = Number(text(b));
    let out = actorBytes.get(id);
    if (!out) actorBytes.set(id, (out = utf8.encode(people.get(id)!)));
    return out;
  };
  return mapBatches(keysetBatches(read, (r: Raw) => ({ k: text(r[0])!, id: Number(text(r[1])) }), batch), async (rows) => {
    if (extended) await learn(rows.flatMap((r) => [r[4] == null ? null : Number(text(r[4])), r[5] == null ? null : Number(text(r[5]))]));
    // Two passes: the chunk's length, then each row copied in ('{…}' rows, comma-separated).
    let size = rows.length - 1;
    for (const r of rows) {
      size += r[2]!.byteLength + r[3]!.byteLength + CLOSE.byteLength;
      if (extended) size += 2 * SUBMITTER.byteLength + whoBytes(r[4]).byteLength + whoBytes(r[5]).byteLength;
    }
    const out = new Uint8Array(size);
    let at = 0;
    const put = (b: Uint8Array) => {
      out.set(b, at);
      at += b.byteLength;
    };
    for (let i = 0; i < rows.length; i += 1) {
      const r = rows[i]!;
      if (i > 0) out[at++] = 44; // ','
      put(r[2]!);
      if (extended) {
        put(SUBMITTER);
        put(whoBytes(r[4]));
      }
      put(r[3]!);
      if (extended) {
        put(SUBMITTER);
        put(whoBytes(r[5]));
      }
      put(CLOSE);
    }
    return [out];
  });
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
