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

/** to_char's pattern for Central's ISO time (Date#toISOString: milliseconds, `Z`), quotes included (`\\"` writes `"`). */
const ISO = `'\\"YYYY-MM-DD"T"HH24:MI:SS.MS"Z"\\"'`;
/** A timestamptz as that JSON text in SQL (`null` for null: to_char is strict). */
const isoJsonSql = (col: string) => `coalesce(to_char(${col} at time zone 'UTC', ${ISO}), 'null')`;
/** A text as JSON text in SQL (escaped by to_json; `null` for null: to_json is strict). */
const textJsonSql = (col: string) => `coalesce(to_json(${col})::text, 'null')`;
/**
 * The list's page of rows (the caller's WHERE, ORDER BY and LIMIT) with what their JSON needs:
 * the columns, and the submission's instanceId, deviceId, userAgent and createdAt as JSON text
 * once (iid, dev, ua, cat), as the current version repeats them as a rule (to_json and to_char are
 * most of PostgreSQL's work on this list). A LIMIT subquery, so each is computed once a row.
 */
const LIST_COLUMNS = sql.raw(`s.created_at as at, s.id, s.submitter_id as sb, s.instance_id as s_iid, s.device_id as s_dev,
  s.user_agent as s_ua, s.updated_at, s.review_state, s.deleted_at, d.submitter_id as dsb, d.created_at as d_at,
  d.instance_name, d.instance_id as d_iid, d.current, d.device_id as d_dev, d.user_agent as d_ua,
  to_json(s.instance_id)::text as iid, ${textJsonSql('s.device_id')} as dev, ${textJsonSql('s.user_agent')} as ua,
  to_char(s.created_at at time zone 'UTC', ${ISO}) as cat`);
/** `concat(…)` of SQL literals (`{ lit }`, quoted here) and SQL expressions, in order: one text built in one pass (a chain of `||` copies the text so far at each step). */
const concatSql = (parts: Array<{ lit: string } | string>) =>
  `concat(${parts.map((p) => (typeof p === 'string' ? p : `'${p.lit.replace(/'/g, "''")}'`)).join(', ')})`;
/** The version's text column `col` as JSON: the submission's (already JSON) when equal. */
const sameOr = (dCol: string, sCol: string, sJson: string) => `case when ${dCol} is not distinct from ${sCol} then ${sJson} else ${textJsonSql(dCol)} end`;
/**
 * A list row's Submission JSON (submissionJson's keys and order, compact as JSON.stringify) over
 * LIST_COLUMNS (as `p`), in two parts so the server can put the extended metadata's `submitter`
 * after each: `head` is `{"instanceId"…"deletedAt":…`, `version` is
 * `,"currentVersion":{"submitterId"…"userAgent":…`; both objects are closed after (`}}`).
 * Written by PostgreSQL with concat() and to_json for texts only (row_to_json over subselects cost
 * it about twice as much: issue 21, its one backend is the list's bottleneck).
 */
const LIST_HEAD_PARTS = [
  { lit: '{"instanceId":' }, 'p.iid', { lit: ',"submitterId":' }, "coalesce(p.sb::text, 'null')", { lit: ',"deviceId":' }, 'p.dev',
  { lit: ',"createdAt":' }, 'p.cat', { lit: ',"updatedAt":' }, isoJsonSql('p.updated_at'), { lit: ',"reviewState":' }, textJsonSql('p.review_state'),
  { lit: ',"userAgent":' }, 'p.ua', { lit: ',"deletedAt":' }, isoJsonSql('p.deleted_at'),
];
const LIST_VERSION_PARTS = [
  { lit: ',"currentVersion":{"submitterId":' }, "coalesce(p.dsb::text, 'null')",
  { lit: ',"createdAt":' }, `case when p.d_at = p.at then p.cat else ${isoJsonSql('p.d_at')} end`,
  { lit: ',"instanceName":' }, textJsonSql('p.instance_name'), { lit: ',"instanceId":' }, sameOr('p.d_iid', 'p.s_iid', 'p.iid'),
  { lit: ',"current":' }, 'p.current::text', { lit: ',"deviceId":' }, sameOr('p.d_dev', 'p.s_dev', 'p.dev'),
  { lit: ',"userAgent":' }, sameOr('p.d_ua', 'p.s_ua', 'p.ua'),
];
const LIST_HEAD = sql.raw(concatSql(LIST_HEAD_PARTS));
const LIST_VERSION = sql.raw(concatSql(LIST_VERSION_PARTS));
/** The whole row's JSON (LIST_HEAD, LIST_VERSION, `}}`) in one concat(). */
const LIST_ROW = sql.raw(concatSql([...LIST_HEAD_PARTS, ...LIST_VERSION_PARTS, { lit: '}}' }]));

const utf8 = new TextEncoder();
const SUBMITTER = utf8.encode(',"submitter":');
const CLOSE = utf8.encode('}}');
const NULL = utf8.encode('null');

/**
 * Submissions of a form, newest first (GET F/submissions and F/draft/submissions), as batches read
 * by keyset on (createdAt, id) — the index submissions_form_created — so the list streams
 * (lib/http/json-stream.ts) with memory bounded by a batch or two. PostgreSQL writes each row's
 * JSON (LIST_HEAD, LIST_VERSION). Plain: PostgreSQL also joins a batch's rows into one text
 * (string_agg), so a batch is one value on the wire that the server sends as it came (postgres.js:
 * its bytes, no per-row objects, no copy; PGlite: the string). Extended adds the submitter (Actor)
 * at both levels: rows come one by one (postgres.js raw() bytes, copied into one chunk), each actor
 * read once per request (a batch's new ones in one query) and its JSON written once. Deleted
 * submissions are left out. The form and rights are checked before this returns, so they fail
 * before the first byte.
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
  const rows = (after: { k: string; id: number } | null, limit: number) => sql`
    select ${LIST_COLUMNS}
    from submissions s join submission_defs d on d.id = s.current_def_id
    where s.form_id = ${f.form.id} and s.draft = ${draft} and s.deleted_at is ${opts.deleted ? sql`not null` : sql`null`}
      ${after ? sql`and (s.created_at, s.id) < (${after.k}::text::timestamptz, ${after.id})` : sql``}
    order by s.created_at desc, s.id desc limit ${limit}${after || opts.offset == null ? sql`` : sql` offset ${opts.offset}`}`;
  let left = opts.limit ?? Infinity;
  const paged = <R>(run: (after: { k: string; id: number } | null, limit: number) => Promise<R[]>) =>
    async (after: { k: string; id: number } | null, size: number): Promise<R[]> => {
      if (left <= 0 && after) return [];
      const got = await run(after, Math.min(size, left));
      left -= got.length;
      return got;
    };
  const bytes = rawBytesRunner(ctx.db);
  if (!extended) {
    // One row per batch: the rows' JSON in list order, their count, and the last one's keyset
    // position (k as created_at::text, the key the next batch compares with; id the smallest of
    // the rows at k). The aggregates' ORDER BY keep the order exact whatever the plan (a CTE
    // instead of the subquery cost PostgreSQL 2-3 us a row more).
    const query = (after: { k: string; id: number } | null, limit: number) => sql`
      select string_agg(p.j, ',' order by p.at desc, p.id desc) as body, count(*)::int as n, min(p.at)::text as k,
        (array_agg(p.id order by p.at, p.id))[1] as id
      from (select p.at, p.id, ${LIST_ROW} as j from (${rows(after, limit)}) p) p`;
    return aggregatedBatches(async (after, limit) => {
      if (left <= 0 && after) return null;
      const size = Math.min(limit, left);
      let got: AggregatedBatch;
      if (bytes) {
        const [r] = await bytes(query(after, size));
        got = { body: r![0]!, n: Number(text(r![1])), last: r![2] == null ? null : { k: text(r![2])!, id: Number(text(r![3])) } };
      } else {
        const [r] = await rawRows<{ body: string | null; n: number; k: string | null; id: number | null }>(ctx.db, query(after, size));
        got = { body: r!.body, n: Number(r!.n), last: r!.k == null ? null : { k: r!.k, id: Number(r!.id) } };
      }
      left -= got.n;
      return got;
    }, batch);
  }
  // Extended, one row a row: the keyset position (k, id), the JSON's two parts, both submitters' ids.
  const query = (after: { k: string; id: number } | null, limit: number) =>
    sql`select p.at::text as k, p.id, ${LIST_HEAD} as head, ${LIST_VERSION} as version, p.sb, p.dsb from (${rows(after, limit)}) p order by p.at desc, p.id desc`;
  // Each actor's JSON text by id, for the whole request ('null' for an id with no actor).
  const people = new Map<number, string>();
  const learn = async (ids: Array<number | null>) => {
    const missing = ids.filter((id): id is number => id !== null && !people.has(id));
    if (missing.length === 0) return;
    const found = await actorsById(ctx, missing);
    for (const id of missing) people.set(id, found.get(id) ? JSON.stringify(actorJson(found.get(id)!)) : 'null');
  };
  if (!bytes) {
    type Row = { k: string; id: number; head: string; version: string; sb: number | null; dsb: number | null };
    const read = paged((after, limit) => rawRows<Row>(ctx.db, query(after, limit)));
    return mapBatches(keysetBatches(read, (r) => ({ k: r.k, id: r.id }), batch), async (got) => {
      await learn(got.flatMap((r) => [r.sb ?? null, r.dsb ?? null]));
      const who = (id: number | null | undefined) => (id == null ? 'null' : people.get(id)!);
      return [got.map((r) => r.head + ',"submitter":' + who(r.sb) + r.version + ',"submitter":' + who(r.dsb) + '}}').join(',')];
    });
  }
  // postgres.js: each column's bytes (k, id, head, version, sb, dsb).
  type Raw = Array<Uint8Array | null>;
  const read = paged((after, limit) => bytes(query(after, limit)));
  const actorBytes = new Map<number, Uint8Array>();
  const whoBytes = (b: Uint8Array | null | undefined) => {
    if (b == null) return NULL;
    const id = Number(text(b));
    let out = actorBytes.get(id);
    if (!out) actorBytes.set(id, (out = utf8.encode(people.get(id)!)));
    return out;
  };
  return mapBatches(keysetBatches(read, (r: Raw) => ({ k: text(r[0])!, id: Number(text(r[1])) }), batch), async (got) => {
    await learn(got.flatMap((r) => [r[4] == null ? null : Number(text(r[4])), r[5] == null ? null : Number(text(r[5]))]));
    // Two passes: the chunk's length, then each row copied in ('{…}' rows, comma-separated).
    let size = got.length - 1;
    for (const r of got) size += r[2]!.byteLength + r[3]!.byteLength + CLOSE.byteLength + 2 * SUBMITTER.byteLength + whoBytes(r[4]).byteLength + whoBytes(r[5]).byteLength;
    const out = new Uint8Array(size);
    let at = 0;
    const put = (b: Uint8Array) => {
      out.set(b, at);
      at += b.byteLength;
    };
    for (let i = 0; i < got.length; i += 1) {
      const r = got[i]!;
      if (i > 0) out[at++] = 44; // ','
      put(r[2]!);
      put(SUBMITTER);
      put(whoBytes(r[4]));
      put(r[3]!);
      put(SUBMITTER);
      put(whoBytes(r[5]));
      put(CLOSE);
    }
    return [out];
  });
}

/** k and the ids are ASCII (a timestamp's text, digits): their bytes as a string; null for NULL. */
const text = (b: Uint8Array | null | undefined) => (b == null ? null : String.fromCharCode(...b));

/** A batch PostgreSQL joined: its rows' JSON comma-separated (null for none), their count, the last one's position (null for none). */
interface AggregatedBatch {
  body: Uint8Array | string | null;
  n: number;
  last: { k: string; id: number } | null;
}

/**
 * keysetBatches for batches that come as one joined value: `read(after, limit)` gives the next
 * at most `limit` rows after `after` (null: from the start) as one AggregatedBatch, or null when
 * there is nothing more to read. The next batch is asked for while the current one is written (one
 * read ahead); ends after a short batch. @returns batches of one item (the body), none empty.
 */
async function* aggregatedBatches(
  read: (after: { k: string; id: number } | null, limit: number) => Promise<AggregatedBatch | null>,
  size: number,
): AsyncGenerator<Array<Uint8Array | string>> {
  let next: Promise<AggregatedBatch | null> | null = read(null, size);
  try {
    while (next) {
      const got: AggregatedBatch | null = await next;
      next = got && got.n >= size && got.last ? read(got.last, size) : null;
      // A read ahead that fails after the consumer stopped must not become an unhandled rejection.
      next?.catch(() => {});
      if (got?.body != null && got.n > 0) yield [got.body];
    }
  } finally {
    next = null;
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
