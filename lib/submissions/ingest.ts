import { and, eq, isNotNull, sql } from 'drizzle-orm';
import {
  audits, formDefs, submissionAttachments, submissionDefs, submissions, type FormDefRow, type FormRow,
  type SubmissionDefRow, type SubmissionRow,
} from '../../drizzle/schema';
import { audit } from '../audits/log';
import { storeStagedBlob, type StagedBlob } from '../blobs/staged';
import { enqueueJob, withJobs } from '../jobs';
import { withTx, type Ctx } from '../context';
import { canOnFormOrReject, getDefOrNotFound, getFormOrNotFound, formActee } from '../forms/queries';
import { formByDraftToken, submissionTarget } from '../forms/openrosa';
import { rawRows } from '../db/raw';
import { problemFromDbError } from '../db/errors';
import { problems } from '../problem';
import { can, rejection } from '../authz/can';
import { parseSubmission, readSubmission, rootColumnsOf, rootTextOf, rootValuesOf, type SubmissionDocument } from '../xforms/parse-submission';
import type { ParsedSubmission } from '../xforms/types';
import { getSubmissionOrNotFound, submissionJson, type SubmissionJson } from './queries';

/** A file part of an OpenRosa submission POST, hashed and staged as it streamed in (lib/blobs/staged.ts). */
export interface SubmittedFile {
  name: string;
  blob: StagedBlob;
  contentType: string | null;
}

/** Client metadata recorded with each version (spec, Submission Version). */
interface ClientInfo {
  deviceId: string | null;
  userAgent: string | null;
  /** The request's X-Action-Notes (decoded), kept as the notes of the audit entries it causes (as Central). */
  notes?: string | null;
}

export interface OpenRosaSubmission extends ClientInfo {
  projectId: number;
  /** The submission XML (the xml_submission_file part), byte for byte. */
  xml: Uint8Array;
  files: SubmittedFile[];
  /**
   * Submitting to the form's draft: through a Draft Token (`/v1/test/{token}/…`, no actor), or with
   * `token: null` as a signed-in actor (`F/draft/submission`, Central's test submissions).
   */
  draft?: { token: string | null; xmlFormId: string } | null;
}

export type IngestOutcome = 'created' | 'attachments' | 'edited';

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The submission XML as text, byte for byte (a BOM kept). @throws 400.1 `{ format: 'submission xml',
 * rawLength }` when the bytes are not UTF-8: refused, never stored with U+FFFD in their place.
 */
function decodeXml(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw problems.user.unparseable({ format: 'submission xml', rawLength: bytes.byteLength });
  }
}

/**
 * parseSubmission with the XML's hashes from the native hasher when the runtime has one
 * (Deps.hashStream): MD5 in JavaScript was several times the native cost per submission.
 */
function parseWithHashes(ctx: Ctx, doc: SubmissionDocument, fields: FormDefRow['fields']): ParsedSubmission {
  const parsed = parseSubmission(doc, fields);
  if (ctx.hashStream) {
    const hasher = ctx.hashStream();
    hasher.update(doc.bytes);
    const { md5, sha } = hasher.digest();
    parsed.hash = { md5, sha256: sha };
  }
  return parsed;
}

/** instanceIDs as clients make them (`uuid:…`), bounded so they stay sane in URLs and exports. */
const INSTANCE_ID = /^[A-Za-z0-9:._-]{1,64}$/;

/** @throws 400.8 for an instanceID / deprecatedID that is too long or has odd characters. */
function checkIds(instanceId: string, deprecatedId: string | null): void {
  for (const [field, value] of [['instanceID', instanceId], ['deprecatedID', deprecatedId]] as const) {
    if (value != null && !INSTANCE_ID.test(value)) {
      throw problems.user.unexpectedValue({ field, value, reason: 'expected at most 64 characters: letters, digits and : . _ -' });
    }
  }
}

/** The published definition a submission names by its version. @throws 404.6. */
async function publishedDefByVersion(ctx: Ctx, form: FormRow, version: string): Promise<FormDefRow> {
  const [def] = await ctx.db
    .select()
    .from(formDefs)
    .where(and(eq(formDefs.formId, form.id), isNotNull(formDefs.publishedAt), eq(formDefs.version, version)));
  if (!def) throw problems.submission.formVersionNotFound({ formVersion: version });
  return def;
}

/** What a version is written against: the definition's id and its fields (to read the XML with). */
type DefRef = Pick<FormDefRow, 'id' | 'fields'>;

/**
 * Fields of published definitions, keyed by id and the SHA-256 of the definition's XML. A published
 * definition never changes, so its fields (a few hundred entries on big forms) are read once per
 * process instead of once per submission. Not by id alone: after a database restore the same id can
 * name another definition, and the hash (read with the id on every submission) tells them apart.
 */
const publishedFields = new Map<string, FormDefRow['fields']>();
const PUBLISHED_FIELDS_MAX = 500;

async function publishedDef(ctx: Ctx, defId: number, sha256: string | null): Promise<DefRef> {
  const key = `${defId}:${sha256}`;
  let fields = sha256 == null ? undefined : publishedFields.get(key);
  if (!fields) {
    const [row] = await ctx.db.select({ fields: formDefs.fields, sha256: formDefs.sha256 }).from(formDefs).where(eq(formDefs.id, defId));
    if (!row) throw problems.user.notFound();
    fields = row.fields;
    if (row.sha256 === sha256) {
      if (publishedFields.size >= PUBLISHED_FIELDS_MAX) publishedFields.delete(publishedFields.keys().next().value!);
      publishedFields.set(key, fields);
    }
  }
  return { id: defId, fields };
}

/**
 * The form and definition an OpenRosa submission goes to. Read before the write transaction: one
 * prepared round trip (form, project, verbs, definition id) plus cached fields.
 */
async function openRosaTarget(ctx: Ctx, input: OpenRosaSubmission, doc: SubmissionDocument): Promise<{ form: FormRow; def: DefRef; draft: boolean }> {
  if (input.draft?.token != null) {
    const { form, draft } = await formByDraftToken(ctx, input.draft.token, input.projectId, input.draft.xmlFormId);
    if (doc.xmlFormId !== form.xmlFormId) throw problems.user.notFound();
    return { form, def: draft, draft: true };
  }
  if (input.draft) {
    // A signed-in tester: the form's draft, with submission.create on the form (401.2 on failure,
    // as Central's OpenRosa endpoints answer so that Collect asks for credentials).
    const f = await getFormOrNotFound(ctx, input.projectId, input.draft.xmlFormId);
    if (f.form.draftDefId == null || doc.xmlFormId !== f.form.xmlFormId) throw problems.user.notFound();
    if (!(await can(ctx, 'submission.create', formActee(f)))) throw problems.user.authenticationFailed();
    return { form: f.form, def: await getDefOrNotFound(ctx, f.form.draftDefId), draft: true };
  }
  const target = await submissionTarget(ctx, input.projectId, doc.xmlFormId, doc.version);
  // Central turns a rights failure into 401.2 on OpenRosa submission, so Collect asks for credentials.
  if (!(await can(ctx, 'submission.create', formActee(target)))) {
    const p = rejection(ctx);
    throw p.code === 403.1 ? problems.user.authenticationFailed() : p;
  }
  if (target.defId == null) throw problems.submission.formVersionNotFound({ formVersion: doc.version });
  if (target.form.state === 'closed') throw problems.submission.notAcceptingSubmissions();
  return { form: target.form, def: await publishedDef(ctx, target.defId, target.defSha256), draft: false };
}

/** The version with this instanceID among the form's (draft or live) submissions, if any. */
async function findVersion(ctx: Ctx, formId: number, draft: boolean, instanceId: string): Promise<{ sub: SubmissionRow; def: SubmissionDefRow } | null> {
  const [row] = await ctx.db
    .select({ sub: submissions, def: submissionDefs })
    .from(submissionDefs)
    .innerJoin(submissions, eq(submissions.id, submissionDefs.submissionId))
    .where(and(eq(submissions.formId, formId), eq(submissions.draft, draft), eq(submissionDefs.instanceId, instanceId)));
  return row ?? null;
}

/**
 * Serialises writers of one submission (a Collect retry racing its first attempt, two editors): the
 * row lock is held to the end of the transaction, and reads after it see what the other committed.
 */
async function lockSubmission(ctx: Ctx, submissionId: number): Promise<void> {
  await ctx.db.select({ id: submissions.id }).from(submissions).where(eq(submissions.id, submissionId)).for('update');
}

/**
 * Stores the files the version expects (others are ignored, as Central does), with one
 * `submission.attachment.update` per stored file, as Central logs them: every file of a `new`
 * version; for an `existing` one (a resubmission), only files whose content changed.
 */
async function attachFiles(
  ctx: Ctx, form: FormRow, sub: Pick<SubmissionRow, 'id' | 'instanceId'>, def: Pick<SubmissionDefRow, 'id'>, expected: string[], files: SubmittedFile[],
  version: 'new' | 'existing', notes: string | null = null,
): Promise<void> {
  const audited = version === 'existing';
  const wanted = new Set(expected);
  for (const file of files) {
    if (!wanted.has(file.name)) continue;
    const blob = await storeStagedBlob(ctx, file.blob, file.contentType);
    const [before] = audited
      ? await ctx.db
        .select({ blobId: submissionAttachments.blobId })
        .from(submissionAttachments)
        .where(and(eq(submissionAttachments.submissionDefId, def.id), eq(submissionAttachments.name, file.name)))
      : [];
    const update = ctx.db
      .update(submissionAttachments)
      .set({ blobId: blob.id, contentType: file.contentType, updatedAt: new Date() })
      .where(and(eq(submissionAttachments.submissionDefId, def.id), eq(submissionAttachments.name, file.name)));
    if (!audited) {
      // Independent statements issued together: pipelined on the connection, one round trip.
      await Promise.all([update, audit(ctx, ctx, 'submission.attachment.update', form.acteeId, {
        submissionId: sub.id, instanceId: sub.instanceId, submissionDefId: def.id, name: file.name, newBlobId: blob.id,
      }, notes)]);
      continue;
    }
    await update;
    if (before?.blobId !== blob.id) {
      await audit(ctx, ctx, 'submission.attachment.update', form.acteeId, {
        submissionId: sub.id, instanceId: sub.instanceId, submissionDefId: def.id, name: file.name,
        oldBlobId: before?.blobId ?? null, newBlobId: blob.id,
      }, notes);
    }
  }
}

/** Inserts a version (current) with its expected-attachment rows. */
async function insertDef(ctx: Ctx, sub: SubmissionRow, formDef: DefRef, parsed: ParsedSubmission, xml: string, instanceId: string, client: ClientInfo): Promise<SubmissionDefRow> {
  const [def] = await ctx.db
    .insert(submissionDefs)
    .values({
      submissionId: sub.id,
      formDefId: formDef.id,
      instanceId,
      xml,
      md5: parsed.hash.md5,
      instanceName: parsed.instanceName,
      submitterId: ctx.auth.actor?.id ?? null,
      deviceId: client.deviceId,
      userAgent: client.userAgent,
      current: true,
      encrypted: parsed.encryption != null,
      values: parsed.values,
      ...((root) => ({ rootValues: root, rootText: rootTextOf(parsed.values, formDef.fields, root) }))(rootValuesOf(parsed.values)),
    })
    .returning();
  if (parsed.attachments.length > 0) {
    await ctx.db.insert(submissionAttachments).values(parsed.attachments.map((name) => ({ submissionDefId: def!.id, name })));
  }
  return def!;
}

/**
 * A new submission with its first version, its expected-attachment rows and its audit
 * `submission.create`, in one statement (data-modifying CTEs): the hot path of every field team.
 * The version's id is drawn first so the submission row can point at it; both foreign keys are
 * checked at the end of the statement.
 * @returns the new ids, or null when the (form, instanceID, draft) row already exists (a racing
 *   or repeated POST: the caller answers as rule 1 says).
 */
async function createNew(
  tx: Ctx, form: FormRow, formDef: DefRef, draft: boolean, parsed: ParsedSubmission, xml: string, instanceId: string, client: ClientInfo,
): Promise<{ sub: { id: number; instanceId: string }; def: { id: number } } | null> {
  const actorId = tx.auth.actor?.id ?? null;
  const root = rootColumnsOf(parsed.values, formDef.fields);
  const rows = await rawRows<{ id: number; def_id: number }>(tx.db, sql`
    with ids as (select nextval(pg_get_serial_sequence('submission_defs', 'id')) as def_id),
    s as (
      insert into ${submissions} (form_id, instance_id, draft, submitter_id, device_id, user_agent, current_def_id)
      select ${form.id}, ${instanceId}, ${draft}, ${actorId}, ${client.deviceId}, ${client.userAgent}, ids.def_id from ids
      on conflict (form_id, instance_id, draft) do nothing
      returning id, current_def_id
    ),
    d as (
      insert into ${submissionDefs} (id, submission_id, form_def_id, instance_id, xml, md5, instance_name, submitter_id,
        device_id, user_agent, current, encrypted, "values", root_values, root_text)
      overriding system value
      select s.current_def_id, s.id, ${formDef.id}, ${instanceId}, ${xml}, ${parsed.hash.md5}, ${parsed.instanceName}, ${actorId},
        ${client.deviceId}, ${client.userAgent}, true, ${parsed.encryption != null}, ${JSON.stringify(parsed.values)}::jsonb,
        ${root.json}::jsonb, ${root.text}
      from s
      returning id
    ),
    a as (
      insert into ${submissionAttachments} (submission_def_id, name)
      select d.id, x.name from d, jsonb_array_elements_text(${JSON.stringify(parsed.attachments)}::jsonb) as x(name)
    ),
    au as (
      insert into ${audits} (actor_id, action, actee_id, details, notes)
      select ${tx.system ? null : actorId}, 'submission.create', ${form.acteeId},
        jsonb_build_object('submissionId', s.id, 'instanceId', ${instanceId}::text, 'submissionDefId', s.current_def_id), ${client.notes ?? null}::text
      from s
    )
    select s.id, s.current_def_id as def_id from s`);
  const row = rows[0];
  if (!row) return null;
  if (!draft) await enqueueEntityWork(tx, parsed, { action: 'submission.create', submissionId: Number(row.id), submissionDefId: Number(row.def_id) });
  return { sub: { id: Number(row.id), instanceId }, def: { id: Number(row.def_id) } };
}

/**
 * A new current version of `old` (spec, Submission rule 2 and PUT S): the old one stops being
 * current, still-relevant media carry over by file name, uploaded files then replace them, and the
 * review state becomes `edited` (as Central). Effects: rows; audit `submission.update.version`.
 */
async function addVersion(
  tx: Ctx, form: FormRow, formDef: DefRef, old: { sub: SubmissionRow; def: SubmissionDefRow },
  parsed: ParsedSubmission, xml: string, instanceId: string, client: ClientInfo, files: SubmittedFile[],
): Promise<{ sub: SubmissionRow; def: SubmissionDefRow }> {
  await tx.db.update(submissionDefs).set({ current: false }).where(eq(submissionDefs.id, old.def.id));
  const def = await insertDef(tx, old.sub, formDef, parsed, xml, instanceId, client);
  const oldFiles = await tx.db.select().from(submissionAttachments).where(eq(submissionAttachments.submissionDefId, old.def.id));
  for (const f of oldFiles) {
    if (f.blobId == null || !parsed.attachments.includes(f.name)) continue;
    await tx.db
      .update(submissionAttachments)
      .set({ blobId: f.blobId, contentType: f.contentType, updatedAt: f.updatedAt })
      .where(and(eq(submissionAttachments.submissionDefId, def.id), eq(submissionAttachments.name, f.name)));
  }
  await attachFiles(tx, form, old.sub, def, parsed.attachments, files, 'new', client.notes ?? null);
  const [sub] = await tx.db
    .update(submissions)
    .set({ currentDefId: def.id, reviewState: 'edited', updatedAt: new Date() })
    .where(eq(submissions.id, old.sub.id))
    .returning();
  await audit(tx, tx, 'submission.update.version', form.acteeId, { submissionId: old.sub.id, instanceId: old.sub.instanceId, submissionDefId: def.id }, client.notes ?? null);
  if (!old.sub.draft) await enqueueEntityWork(tx, parsed, { action: 'submission.update.version', submissionId: old.sub.id, submissionDefId: def.id });
  return { sub: sub!, def };
}

/**
 * Records entity work for a submission whose XML carries `meta/entity` (DESIGN, Reactions between
 * domains: lib/entities handles `submission.entities` jobs after commit). Effects: a jobs row.
 */
async function enqueueEntityWork(tx: Ctx, parsed: ParsedSubmission, ev: { action: string; submissionId: number; submissionDefId: number }) {
  if (parsed.entities.length === 0) return;
  await enqueueJob(tx, 'submission.entities', { ...ev, actorId: tx.system ? null : (tx.auth.actor?.id ?? null) });
}

// ─────────────────────────────────────────────────────────────────────────────
// Group commit: new submissions arriving together are stored in one transaction.

/** A new submission waiting for the group commit, with what its request needs back. */
interface Pending {
  ctx: Ctx;
  form: FormRow;
  formDef: DefRef;
  draft: boolean;
  parsed: ParsedSubmission;
  xml: string;
  instanceId: string;
  client: ClientInfo;
  files: SubmittedFile[];
  done: (stored: boolean) => void;
}

/** Submissions per batch transaction (one statement for the rows, then their media). */
const GROUP_MAX = 32;
/** Bytes (XML and media) per batch, so a batch of large uploads stays a short transaction. */
const GROUP_MAX_BYTES = 8 * 1024 * 1024;
/**
 * Batch transactions in flight at once per database handle (some commit or write media while the
 * next are built). 4 over 2: bench/ingest.ts on a quiet 2-core box, two A/B runs each, 299–303 vs
 * 258–267 submissions/s without media and 144–161 vs 114–131 with a 100 kB image.
 */
const GROUP_IN_FLIGHT = 4;
/** Separates a batch's large texts in their one parameter each (storeGroup): a control character. */
const GROUP_SEP = '\u001e';

interface Queue { waiting: Pending[]; running: number }
const queues = new WeakMap<object, Queue>();

/**
 * Stores a new submission (no deprecatedID, no entity work) together with the others arriving at
 * the same time: one transaction and one statement for the whole group, so each submission costs
 * one share of a commit and of a round trip instead of its own. There is no waiting for company:
 * a submission that arrives while no batch is running goes alone at once; those arriving during a
 * batch form the next one. The request is answered only once its batch has committed.
 * @returns true when this submission (its rows, expected-attachment rows, media and audit
 *   `submission.create`) was committed; false when it was not stored: its (form, instanceID,
 *   draft) already exists (possibly from the same batch), or the batch failed (one bad row fails
 *   the statement). The caller then runs the single-submission path, which answers exactly as
 *   without grouping (rule 1, 409s, a retry), so no submission fails for another's fault.
 */
function groupCommit(ctx: Ctx, item: Omit<Pending, 'ctx' | 'done'>): Promise<boolean> {
  let queue = queues.get(ctx.db);
  if (!queue) queues.set(ctx.db, (queue = { waiting: [], running: 0 }));
  const q = queue;
  return new Promise<boolean>((resolve) => {
    q.waiting.push({ ...item, ctx, done: resolve });
    pumpGroups(q);
  });
}

function pumpGroups(q: Queue): void {
  while (q.running < GROUP_IN_FLIGHT && q.waiting.length > 0) {
    let bytes = 0;
    let n = 0;
    while (n < q.waiting.length && n < GROUP_MAX) {
      const p = q.waiting[n]!;
      bytes += p.xml.length + p.files.reduce((t, f) => t + f.blob.size, 0);
      if (n > 0 && bytes > GROUP_MAX_BYTES) break;
      n += 1;
    }
    const batch = q.waiting.splice(0, n);
    q.running += 1;
    void storeGroup(batch).then(
      (stored) => { for (let i = 0; i < batch.length; i += 1) batch[i]!.done(stored[i]!); },
      (err: unknown) => {
        batch[0]!.ctx.log.debug('group commit failed; its submissions are stored one by one', { err, size: batch.length });
        for (const p of batch) p.done(false);
      },
    ).finally(() => {
      q.running -= 1;
      pumpGroups(q);
    });
  }
}

/**
 * One transaction for a batch: every submission row, version, expected-attachment rows and audit
 * in one statement (data-modifying CTEs over the batch as JSON, as createNew does for one), then
 * the media of those stored. @returns per item whether it was stored. @throws on any failure
 * (nothing of the batch is then committed).
 */
async function storeGroup(batch: Pending[]): Promise<boolean[]> {
  const big = { xml: [] as string[], values: [] as string[], root: [] as string[], text: [] as string[] };
  const rows = batch.map((p, i) => {
    const root = rootColumnsOf(p.parsed.values, p.formDef.fields);
    const actorId = p.ctx.auth.actor?.id ?? null;
    big.xml.push(p.xml);
    big.values.push(JSON.stringify(p.parsed.values));
    big.root.push(root.json);
    big.text.push(root.text);
    return {
      i, form_id: p.form.id, instance_id: p.instanceId, draft: p.draft, submitter_id: actorId,
      device_id: p.client.deviceId, user_agent: p.client.userAgent, form_def_id: p.formDef.id,
      md5: p.parsed.hash.md5, instance_name: p.parsed.instanceName, encrypted: p.parsed.encryption != null,
      attachments: p.parsed.attachments, actee_id: p.form.acteeId, audit_actor_id: p.ctx.system ? null : actorId,
      notes: p.client.notes ?? null,
    };
  });
  // A text holding the separator cannot be split back: such a batch goes one by one (never seen
  // in practice: XML 1.0 cannot carry the character, JSON.stringify escapes it).
  if (big.xml.some((x) => x.includes(GROUP_SEP)) || big.text.some((x) => x.includes(GROUP_SEP))) return batch.map(() => false);
  // Without media the batch is that one statement, atomic on its own: no begin/commit round trips
  // (two of a submission's four); with media, its blobs and audits join it in a transaction.
  const media = batch.some((p) => p.files.length > 0 && p.parsed.attachments.length > 0);
  const store = async (tx: Ctx) => {
    // The small columns travel as one JSON array; the four large texts (XML, `values`,
    // `root_values`, root_text: 30 kB a soak submission) each as one text of the batch's items,
    // each preceded by GROUP_SEP (chr(30)), split by string_to_array (the first element is empty,
    // the next ones are the rows in order). Nested in the
    // JSON they were lexed three times by PostgreSQL (the json parameter, json_to_recordset, jsonb
    // input) with their escapes undone; split, `values` and `root_values` are parsed once, by jsonb
    // input: PostgreSQL's CPU per soak submission 1.80 → 1.14 ms (bench microbenchmark, A/B).
    const stored = await rawRows<{ i: number; id: number; def_id: number }>(tx.db, sql`
      with x as (
        select * from json_to_recordset(${JSON.stringify(rows)}::json) as x(i int, form_id int, instance_id text, draft boolean,
          submitter_id int, device_id text, user_agent text, form_def_id int, md5 text, instance_name text, encrypted boolean,
          attachments jsonb, actee_id text, audit_actor_id int, notes text)
      ),
      big as (
        select (n - 2)::int as i, xml, "values"::jsonb as "values", root_values::jsonb as root_values, root_text
        from unnest(string_to_array(${GROUP_SEP + big.xml.join(GROUP_SEP)}::text, chr(30)),
          string_to_array(${GROUP_SEP + big.values.join(GROUP_SEP)}::text, chr(30)),
          string_to_array(${GROUP_SEP + big.root.join(GROUP_SEP)}::text, chr(30)),
          string_to_array(${GROUP_SEP + big.text.join(GROUP_SEP)}::text, chr(30)))
          with ordinality as b(xml, "values", root_values, root_text, n)
        where n > 1
      ),
      ids as (select x.*, big.xml, big."values", big.root_values, big.root_text, nextval((select pg_get_serial_sequence('submission_defs', 'id'))::regclass)::int as def_id
        from x join big using (i)),
      s as (
        insert into ${submissions} (form_id, instance_id, draft, submitter_id, device_id, user_agent, current_def_id)
        select form_id, instance_id, draft, submitter_id, device_id, user_agent, def_id from ids order by i
        on conflict (form_id, instance_id, draft) do nothing
        returning id, current_def_id
      ),
      sx as (select s.id, ids.* from s join ids on ids.def_id = s.current_def_id),
      d as (
        insert into ${submissionDefs} (id, submission_id, form_def_id, instance_id, xml, md5, instance_name, submitter_id,
          device_id, user_agent, current, encrypted, "values", root_values, root_text)
        overriding system value
        select def_id, id, form_def_id, instance_id, xml, md5, instance_name, submitter_id, device_id, user_agent, true, encrypted,
          "values", root_values, root_text from sx order by i
      ),
      a as (
        insert into ${submissionAttachments} (submission_def_id, name)
        select sx.def_id, n.name from sx, jsonb_array_elements_text(sx.attachments) as n(name)
      ),
      au as (
        insert into ${audits} (actor_id, action, actee_id, details, notes)
        select audit_actor_id, 'submission.create', actee_id,
          jsonb_build_object('submissionId', id, 'instanceId', instance_id, 'submissionDefId', def_id), notes
        from sx order by i
      )
      select i, id, def_id from sx order by i`);
    const out = batch.map(() => false);
    const attaching: Array<Promise<void>> = [];
    for (const r of stored) {
      const p = batch[Number(r.i)]!;
      out[Number(r.i)] = true;
      if (p.files.length > 0 && p.parsed.attachments.length > 0) {
        // Each request's own actor on its attachment audits, in the batch's transaction. The
        // submissions' media go together: their statements pipeline on the connection.
        const own: Ctx = { ...p.ctx, db: tx.db, tx: tx.tx };
        attaching.push(attachFiles(own, p.form, { id: Number(r.id), instanceId: p.instanceId }, { id: Number(r.def_id) }, p.parsed.attachments, p.files, 'new', p.client.notes ?? null));
      }
    }
    // All settled before a failure is thrown, so every written blob's rollback hook is registered.
    const failed = (await Promise.allSettled(attaching)).find((x) => x.status === 'rejected');
    if (failed) throw failed.reason;
    return out;
  };
  return media ? withTx(batch[0]!.ctx, store) : store(batch[0]!.ctx);
}

/** Runs `once`, and once more when it lost a race on the unique (form, instanceId, draft) index. */
async function retryOnDuplicate<T>(ctx: Ctx, once: () => Promise<T>): Promise<T> {
  try {
    return await once();
  } catch (err) {
    // Two identical POSTs racing (Collect retries): the loser hits the unique index. Run it again;
    // it now finds the winner's row and answers as for a resubmission (rule 1), never a duplicate.
    if (!ctx.tx && problemFromDbError(err)?.code === 409.3) return once();
    throw err;
  }
}

/**
 * Ingests an OpenRosa submission (POST P/submission, the App User and Draft Token forms of it):
 * the OpenRosa Form Submission API and the spec's Submission rules 1 and 2.
 * - New instanceID: a submission and its first version are stored (XML byte for byte, the values
 *   every later read needs), with the media parts the XML names.
 * - Same instanceID and identical XML (rule 1): the media parts add or replace attachments
 *   (audit `submission.attachment.update` per file).
 * - deprecatedID naming the current version (rule 2): a new current version; still-relevant media
 *   carry over by file name; the review state becomes `edited`.
 * @returns what happened. Effects, in one transaction (blobs included): rows in submissions,
 *   submission_defs, submission_attachments, blobs; audit `submission.create` or
 *   `submission.update.version`.
 * @throws 400.1/400.2 unparseable XML or no form id; 401.2 anonymous or not allowed to submit
 *   (Central answers 401 so clients ask for credentials); 404.1 unknown form; 404.4 bad Draft Token;
 *   404.5 deprecatedID unknown; 404.6 unknown form version; 409.1 same instanceID, different XML;
 *   409.2 form closed; 409.3 `{ fields: 'instanceID' }` an edit's new instanceID is already a
 *   version of this form; 409.9 the edited or resubmitted version is no longer current; 409.18 deleted;
 *   400.8 an instanceID or deprecatedID over 64 characters or with other than [A-Za-z0-9:._-].
 */
export async function ingestOpenRosaSubmission(ctx: Ctx, input: OpenRosaSubmission): Promise<IngestOutcome> {
  if (!input.draft && ctx.auth.actor == null) throw problems.user.authenticationFailed();
  // One parse: the tree read here is reused once the form version's fields are known.
  const xml = decodeXml(input.xml);
  const doc = readSubmission(input.xml);
  // Found and parsed before the transaction: the write transaction stays short.
  const { form, def: formDef, draft } = await openRosaTarget(ctx, input, doc);
  const parsed = parseWithHashes(ctx, doc, formDef.fields);
  const instanceId = parsed.instanceId ?? crypto.randomUUID();
  checkIds(instanceId, parsed.deprecatedId);
  // The common case (a new submission, no edit, no entity work) joins the group commit; a
  // submission it did not store (its instanceID exists, or the batch failed) takes the path below.
  if (!ctx.tx && parsed.deprecatedId == null && parsed.entities.length === 0
    && await groupCommit(ctx, { form, formDef, draft, parsed, xml, instanceId, client: input, files: input.files })) {
    return 'created';
  }
  return retryOnDuplicate(ctx, () => withJobs(ctx, async (tx) => {
    if (parsed.deprecatedId == null) {
      // The common case first: a new submission in one statement; an existing one falls through.
      const created = await createNew(tx, form, formDef, draft, parsed, xml, instanceId, input);
      if (created) {
        await attachFiles(tx, form, created.sub, created.def, parsed.attachments, input.files, 'new', input.notes ?? null);
        return 'created';
      }
    }

    if (parsed.deprecatedId != null) {
      // An edit (rule 2), read as Central does: first the version it deprecates.
      const found = await findVersion(tx, form.id, draft, parsed.deprecatedId);
      if (!found) throw problems.submission.deprecatedIdNotFound({ deprecatedId: parsed.deprecatedId });
      await lockSubmission(tx, found.sub.id);
      // Read again under the lock: a racing identical edit (a retry) may have landed meanwhile.
      const old = (await findVersion(tx, form.id, draft, parsed.deprecatedId))!;
      if (old.sub.deletedAt != null) throw problems.submission.duplicateSubmission();
      const usurper = await findVersion(tx, form.id, draft, instanceId);
      if (old.def.current) {
        // The new instanceID is already a version of this form: Central's 409 from its unique index.
        if (usurper) throw problems.user.uniquenessViolation({ fields: 'instanceID', values: instanceId });
        await addVersion(tx, form, formDef, old, parsed, xml, instanceId, input, input.files);
        return 'edited';
      }
      // No longer current: allowed only as a resubmission of the edit that replaced it (media for it).
      if (!usurper || !usurper.def.current || usurper.sub.deletedAt != null) {
        throw problems.submission.deprecatingOldSubmission({ deprecatedId: parsed.deprecatedId });
      }
      if (usurper.def.xml !== xml) throw problems.submission.xmlConflict();
      await attachFiles(tx, form, usurper.sub, usurper.def, parsed.attachments, input.files, 'existing', input.notes ?? null);
      return 'attachments';
    }

    const existing = await findVersion(tx, form.id, draft, instanceId);
    if (existing) {
      await lockSubmission(tx, existing.sub.id);
      const now = (await findVersion(tx, form.id, draft, instanceId))!;
      if (now.sub.deletedAt != null) throw problems.submission.duplicateSubmission();
      if (!now.def.current) throw problems.submission.deprecatingOldSubmission({ instanceId });
      if (now.def.xml !== xml) throw problems.submission.xmlConflict();
      await attachFiles(tx, form, now.sub, now.def, parsed.attachments, input.files, 'existing', input.notes ?? null);
      return 'attachments';
    }
    // A deleted draft's test submission keeps its instanceID (deleteDraftSubmissions): Central's 409.
    const [kept] = await tx.db.select({ deletedAt: submissions.deletedAt }).from(submissions)
      .where(and(eq(submissions.formId, form.id), eq(submissions.draft, draft), eq(submissions.instanceId, instanceId)));
    if (kept?.deletedAt != null) throw problems.submission.duplicateSubmission();

    // Neither new nor found: the row that blocked the insert went away (rolled back); run again.
    throw problems.user.uniquenessViolation({ fields: ['formId', 'instanceId', 'draft'], values: [String(form.id), instanceId, draft ? 't' : 'f'], table: 'submissions' });
  }));
}

/** A REST submission body: XML (text/xml or application/xml), no attachments. */
export interface RestSubmission extends ClientInfo {
  projectId: number;
  xmlFormId: string;
  draft: boolean;
  /** The Draft Token of /v1/test/{token}/…/draft/submissions (no actor then). */
  token?: string | null;
  xml: Uint8Array;
}

/** The form of a REST submission URL and the definition its XML names. */
async function restTarget(tx: Ctx, input: Pick<RestSubmission, 'projectId' | 'xmlFormId' | 'draft' | 'token'>, doc: SubmissionDocument, verb: string) {
  let form: FormRow;
  if (input.token != null) {
    form = (await formByDraftToken(tx, input.token, input.projectId, input.xmlFormId)).form;
  } else {
    const f = await getFormOrNotFound(tx, input.projectId, input.xmlFormId);
    await canOnFormOrReject(tx, verb, f);
    form = f.form;
  }
  if (doc.xmlFormId !== form.xmlFormId) {
    throw problems.user.unexpectedValue({ field: 'form id', value: doc.xmlFormId, reason: 'did not match the form ID in the URL' });
  }
  let def: FormDefRow;
  if (input.draft) {
    // The draft, whatever version the XML names (Central: a test submission goes to the draft).
    def = await getDefOrNotFound(tx, form.draftDefId);
  } else {
    def = await publishedDefByVersion(tx, form, doc.version);
  }
  return { form, def };
}

/**
 * Creates a submission from its XML (POST F/submissions, F/draft/submissions and the Draft Token
 * path /v1/test/{token}/…/draft/submissions). Unlike OpenRosa, an existing instanceID is a
 * conflict, and no attachments come with it (they are uploaded to S/attachments/{name}).
 * @returns Submission JSON (queries.submissionJson). Effects: rows; audit `submission.create`.
 * @throws 400.1/400.2 unparseable XML or no form id; 400.8 form id differs from the URL, or a bad
 *   instanceID; 401.2/403.1 without submission.create; 404.1 unknown form (or no draft); 404.4 bad
 *   Draft Token; 404.6 the XML's version is not a published version (a draft submission goes to
 *   the draft whatever version it names, as Central);
 *   409.2 form closed; 409.3 `{ fields: [formId, instanceId, draft] }` instanceID exists.
 */
export async function createSubmission(ctx: Ctx, input: RestSubmission): Promise<SubmissionJson> {
  const xml = decodeXml(input.xml);
  const doc = readSubmission(input.xml);
  return withJobs(ctx, async (tx) => {
    const { form, def: formDef } = await restTarget(tx, input, doc, 'submission.create');
    if (!input.draft && form.state === 'closed') throw problems.submission.notAcceptingSubmissions();
    const parsed = parseWithHashes(ctx, doc, formDef.fields);
    const instanceId = parsed.instanceId ?? crypto.randomUUID();
    checkIds(instanceId, parsed.deprecatedId);
    // Central's message comes from the unique index; the same words whether or not a race got there first.
    const duplicate = () => problems.user.uniquenessViolation({ fields: ['formId', 'instanceId', 'draft'], values: [String(form.id), instanceId, input.draft ? 't' : 'f'], table: 'submissions' });
    if (await findVersion(tx, form.id, input.draft, instanceId)) throw duplicate();
    const created = await createNew(tx, form, formDef, input.draft, parsed, xml, instanceId, input);
    if (!created) throw duplicate();
    const { sub, def } = (await findVersion(tx, form.id, input.draft, instanceId))!;
    return submissionJson(sub, def);
  });
}

/**
 * Replaces a submission's data by a new version (PUT S, and PUT F/draft/submissions/{instanceId}
 * for a draft's test submission, as Central routes both). The XML must carry a deprecatedID naming
 * the current version; it becomes the new current version, with media carried over by file name.
 * @returns Submission JSON. Effects: rows; review state `edited`; audit `submission.update.version`
 *   (with X-Action-Notes as its notes).
 * @throws 400.1/400.2 bad XML; 400.8 form id differs from the URL or a bad instanceID; 400.19 no
 *   deprecatedID; 401.2/403.1 without submission.update; 404.1 unknown form (or no draft) or
 *   submission; 404.6 unknown form version (published forms only); 409.3 `{ fields: 'instanceID' }`
 *   the new instanceID is already used in this form; 409.9 deprecatedID is not the current version.
 */
export async function updateSubmission(ctx: Ctx, input: Omit<RestSubmission, 'token' | 'draft'> & { instanceId: string; draft?: boolean }): Promise<SubmissionJson> {
  const xml = decodeXml(input.xml);
  const doc = readSubmission(input.xml);
  const draft = input.draft ?? false;
  return withJobs(ctx, async (tx) => {
    const f = await getFormOrNotFound(tx, input.projectId, input.xmlFormId);
    await canOnFormOrReject(tx, 'submission.update', f);
    if (draft && f.form.draftDefId == null) throw problems.user.notFound();
    const target = await getSubmissionOrNotFound(tx, f, input.instanceId, draft);
    const { form, def: formDef } = await restTarget(tx, { ...input, draft, token: null }, doc, 'submission.update');
    const parsed = parseWithHashes(ctx, doc, formDef.fields);
    if (parsed.deprecatedId == null) throw problems.submission.deprecatedIdRequired();
    const instanceId = parsed.instanceId ?? crypto.randomUUID();
    checkIds(instanceId, parsed.deprecatedId);
    await lockSubmission(tx, target.sub.id);
    const current = await getSubmissionOrNotFound(tx, f, input.instanceId, draft);
    if (current.def.instanceId !== parsed.deprecatedId) throw problems.submission.deprecatingOldSubmission({ deprecatedId: parsed.deprecatedId });
    if (await findVersion(tx, form.id, draft, instanceId)) throw problems.user.uniquenessViolation({ fields: 'instanceID', values: instanceId });
    const { sub, def } = await addVersion(tx, form, formDef, current, parsed, xml, instanceId, input, []);
    return submissionJson(sub, def);
  });
}
