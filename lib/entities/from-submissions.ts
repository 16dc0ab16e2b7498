/**
 * Entities from submissions, run by lib/jobs after the submission's transaction committed
 * (DESIGN, Reactions between domains). lib/submissions records a `submission.entities` job on
 * receipt, edit and review; lib/datasets a `dataset.convert` job when approval is turned off
 * with `?convert=true`. Behaviour follows Central's entity worker: create on receipt unless the
 * Dataset requires approval (then on approval), updates on receipt; a failure rolls back that
 * submission's entity work and records `entity.error` with the Problem, and the submission stays.
 * Spec: odk-xforms-spec-entities.md; interface.md Events (entity.create, entity.error).
 */
import { and, eq, inArray, isNull, sql } from 'drizzle-orm';
import {
  audits, datasetFormDefs, datasets, entities, entityDefs, entityDefSources, entitySubmissionBacklog, formDefs, forms, submissionDefs,
  submissions, type DatasetRow, type EntityDefRow, type EntityRow,
} from '../../drizzle/schema';
import { auditAs } from '../audits/log';
import type { Ctx } from '../context';
import type { Db } from '../db/client';
import { prepared } from '../db/prepared';
import { jsonColumn } from '../db/raw';
import { enqueueJob, registerJobHandler, type Prefetched } from '../jobs';
import { Problem, problems } from '../problem';
import { parseSubmission } from '../xforms/parse-submission';
import type { SubmissionEntity } from '../xforms/types';
import {
  datasetNotFoundInSubmission, diffProps, entityActionNotPermitted, entityDeleted, entityNotFound, entityUniquenessViolationWithDeleted,
  entityVersionNotFound, normalizeUuid,
} from './model';
import { lazyModule } from '../lazy';
const entitiesModule = lazyModule(() => import('./index'));
const datasetsModule = lazyModule(() => import('../datasets'));
// (cycles between lib folders: loaded on first use, then kept)

/** The job payload lib/submissions records (and ./backlog, for held offline updates). */
export interface SubmissionEvent {
  /**
   * 'submission.create' | 'submission.update.version' | 'submission.update' (review), or
   * 'submission.backlog.reprocess' (a held offline update whose predecessor was just applied).
   */
  action: string;
  submissionId: number;
  submissionDefId: number;
  reviewState?: string | null;
  actorId: number | null;
  /** Force-processing from the backlog (./backlog): no holding, base on the latest version, update as create. */
  force?: boolean;
  /**
   * The audit event behind this work (Central's triggering event), when the producer knows it;
   * otherwise the latest `action` audit of the submission is taken (triggeringEventId).
   */
  auditId?: number;
}

/** What an entity action of one submission works with. */
interface SubCtx {
  sub: Pick<typeof submissions.$inferSelect, 'id' | 'draft' | 'deletedAt'>;
  def: Pick<typeof submissionDefs.$inferSelect, 'id' | 'xml' | 'encrypted' | 'instanceId' | 'submitterId' | 'userAgent'>;
  /** The form's actee (submission.backlog.* audits go on it, as Central's). */
  formActeeId: string;
}

/**
 * The entity_def_sources row of one submission's entity work, written once and shared by its
 * entities: `get` inserts it on first use; a create writes it in its own statement (`row`, then `set`).
 */
interface SourceRef {
  known(): number | null;
  set(id: number): void;
  row(): Promise<{ type: 'submission'; submissionDefId: number; details: unknown; forceProcessed: boolean; auditId: number | null }>;
  get(): Promise<number>;
}

/** One entity of a Dataset with its current version. */
type Current = { entity: EntityRow; def: EntityDefRow };

const truthy = (v: string | null) => v === '1' || v === 'true';

/**
 * The audit event that triggered a submission's entity work: `ev.auditId`, else the submission's
 * latest `ev.action` audit (its submission.create, the approving submission.update, …; the
 * audits_submission_id index). Null when there is none (archived audits). Reads only.
 */
async function triggeringEventId(tx: Ctx, ev: SubmissionEvent): Promise<number | null> {
  if (ev.auditId != null) return ev.auditId;
  const [row] = await tx.db.select({ id: audits.id }).from(audits)
    .where(and(sql`${audits.details} ? 'submissionId'`, sql`(${audits.details} ->> 'submissionId')::int = ${ev.submissionId}`,
      eq(audits.action, ev.action)))
    .orderBy(sql`${audits.id} desc`).limit(1);
  return row?.id ?? null;
}

/**
 * Processes one submission event. Never throws a Problem: those become `entity.error`
 * `{ submissionId, submissionDefId, errorMessage, problem }`; the entity work of the submission is
 * rolled back (savepoint). Other errors propagate after the same rollback (the job is retried), so
 * the caller's transaction is left as it was: the handler is inline-safe (lib/jobs).
 */
export async function processSubmissionEvent(tx: Ctx, ev: SubmissionEvent, prefetched?: Prefetched): Promise<void> {
  // The savepoint is issued first and not awaited on its own: it goes out in one write with the
  // first read, or, when a review already read the prelude with its own writes (lib/jobs'
  // prefetch), with this work's first writes (postgres.js writes what was issued in one turn of
  // the event loop together, and one connection runs statements in the order issued).
  // (Drizzle's query runs again on every `then`: made a promise once.)
  const savepoint = tx.db.execute(sql`savepoint entity_work`).then(() => undefined);
  savepoint.catch(() => {}); // awaited below
  try {
    const pre = prefetched != null ? await freshPrelude(prefetched, ev) : undefined;
    const rows = pre ?? await preludeQuery(tx.db).execute({ defId: ev.submissionDefId });
    await Promise.all([savepoint, processInner(tx, ev, rows[0])]);
  } catch (err) {
    await tx.db.execute(sql`rollback to savepoint entity_work`);
    if (!(err instanceof Problem)) throw err;
    await auditAs(tx, ev.actorId, 'entity.error', null, {
      submissionId: ev.submissionId, submissionDefId: ev.submissionDefId, errorMessage: err.message,
      problem: { problemCode: err.code, problemDetails: err.details ?? null },
    });
  }
}

/** What a review's prefetch is keyed by: the submission version it read and the review's updatedAt (ISO). */
export interface PreludeKey { defId: number; reviewedAt: string }

/**
 * The prelude a review read ahead (`readPrelude` as the `submission.entities` prefetch), when it
 * is for this event's version and was read after the review's update (the submission's updatedAt
 * is the review's: were it read before, the flags it holds could be stale), else undefined (read
 * it again). A failed read: undefined too (its error is the review's own, already thrown).
 */
async function freshPrelude(prefetched: Prefetched, ev: SubmissionEvent): Promise<Prelude[] | undefined> {
  const key = prefetched.key as PreludeKey;
  if (key.defId !== ev.submissionDefId) return undefined;
  const rows = await (prefetched.result as Promise<Prelude[]>).catch(() => undefined);
  if (rows == null) return undefined;
  const seen = rows[0]?.sub.updatedAt;
  return rows.length === 0 || (seen != null && new Date(seen).toISOString() === key.reviewedAt) ? rows : undefined;
}

/**
 * The entity work's first read (preludeQuery) of submission version `defId`, as the
 * `submission.entities` job's prefetch: a review issues it with its own writes, after them.
 * @returns the prelude rows (none: the version is gone). Reads only.
 */
function readPrelude(tx: Ctx, key: PreludeKey): Promise<Prelude[]> {
  return preludeQuery(tx.db).execute({ defId: key.defId });
}

/** The row preludeQuery answers. */
type Prelude = Awaited<ReturnType<ReturnType<typeof preludeQuery>['execute']>>[number];

async function processInner(tx: Ctx, ev: SubmissionEvent, row: Prelude | undefined): Promise<void> {
  // preludeQuery read, in the same round trip as the savepoint, everything known before the XML is
  // read (every approval and every entity submission comes here): the submission and its version,
  // the form's project and actee, the definition's declarations and fields (not its XML), whether
  // the submission already made an entity version or waits in the backlog, the definition's
  // Dataset links and the live Datasets it declares.
  if (!row || row.sub.draft || row.sub.deletedAt != null || row.def.encrypted) return;
  // A submission already used for an entity version is not processed again; one held in the
  // backlog waits for its predecessor (or the force run) to requeue it.
  if (row.used || row.held) return;
  const links = row.links ?? [];
  if (links.length === 0 || row.formDef.datasets.length === 0) return;

  const parsed = parseSubmission(row.def.xml, row.formDef.fields);
  const declared = row.formDef.datasets;
  const found = parsed.entities.filter((e) => declared.some((d) => d.entityPath === e.path));
  if (found.length === 0) return;
  const names = [...new Set(found.map((e) => e.dataset).filter((x): x is string => !!x))];
  const known = (row.declaredDatasets ?? []).map(datasetFromJson);
  // The submission names its Datasets itself; any it names beyond the declared ones are read now.
  const missing = names.filter((n) => !known.some((d) => d.name === n));
  const dsRows = [...known.filter((d) => names.includes(d.name)), ...(missing.length === 0 ? [] : await tx.db.select().from(datasets).where(and(
    eq(datasets.projectId, row.form.projectId), inArray(datasets.name, missing), isNull(datasets.deletedAt),
  )))];
  const byName = new Map(dsRows.filter((d) => d.publishedAt != null).map((d) => [d.name, d]));
  const ctxSub: SubCtx = { sub: row.sub, def: row.def, formActeeId: row.form.acteeId };
  let sourceId: number | null = null;
  const sourceRow = async () => ({
    type: 'submission' as const, submissionDefId: row.def.id, details: { submission: { instanceId: row.def.instanceId } },
    forceProcessed: ev.force === true, auditId: await triggeringEventId(tx, ev),
  });
  const source: SourceRef = {
    known: () => sourceId,
    set: (id) => { sourceId = id; },
    row: sourceRow,
    async get() {
      sourceId ??= (await tx.db.insert(entityDefSources).values(await sourceRow()).returning())[0]!.id;
      return sourceId;
    },
  };
  const errors: Array<{ index: number; message: string; problem: Problem }> = [];
  for (const [i, e] of found.entries()) {
    try {
      if (!e.dataset || e.dataset.trim() === '') throw problems.user.missingParameter({ field: 'dataset' });
      const dataset = byName.get(e.dataset);
      if (!dataset) throw datasetNotFoundInSubmission({ datasetName: e.dataset });
      const decl = declared.find((d) => d.entityPath === e.path)!;
      const data: Record<string, string> = {};
      for (const p of decl.properties) {
        const v = parsed.values.find((x) => x.path === p.path && sameIndex(x.repeatIndex, e.repeatIndex));
        if (v) data[p.name] = v.value;
      }
      const link = links.find((l) => l.datasetId === dataset.id);
      await processEntity(tx, ev, ctxSub, dataset, e, data, link?.actions ?? [], source);
    } catch (err) {
      if (!(err instanceof Problem) || found.length === 1) throw err;
      errors.push({ index: i, message: err.message, problem: err });
    }
  }
  if (errors.length > 0) {
    const joined = errors.map((x) => `(Entity ${x.index + 1}) ${x.message}`).join(' ');
    throw new Problem(400.43, `Failed to process ${found.length} entities in submission due to ${errors.length} errors: ${joined}`, {
      count: errors.length, total: found.length,
      errors: errors.map((x) => ({ errorMessage: x.message, problem: { problemCode: x.problem.code, problemDetails: x.problem.details ?? null }, index: x.index })),
    });
  }
}

/** A Dataset row as preludeQuery's jsonb gives it (timestamps as text). */
type DatasetJson = Omit<DatasetRow, 'createdAt' | 'publishedAt' | 'deletedAt'> & { createdAt: string; publishedAt: string | null; deletedAt: string | null };

const datasetFromJson = (d: DatasetJson): DatasetRow => ({
  ...d, createdAt: new Date(d.createdAt), publishedAt: d.publishedAt == null ? null : new Date(d.publishedAt), deletedAt: d.deletedAt == null ? null : new Date(d.deletedAt),
});

/** processInner's first read, prepared (placeholder `defId`, the submission version). */
const preludeQuery = (db: Db) => prepared(db, 'entity_work_prelude', (d) => d
  .select({
    // Only what the entity work reads: not the stored values (a large form's are large).
    sub: { id: submissions.id, draft: submissions.draft, deletedAt: submissions.deletedAt, updatedAt: submissions.updatedAt },
    def: {
      id: submissionDefs.id, xml: submissionDefs.xml, encrypted: submissionDefs.encrypted, instanceId: submissionDefs.instanceId,
      submitterId: submissionDefs.submitterId, userAgent: submissionDefs.userAgent,
    },
    form: { projectId: forms.projectId, acteeId: forms.acteeId },
    formDef: { id: formDefs.id, fields: formDefs.fields, datasets: formDefs.datasets },
    // Whether an entity version came from any version of this submission. A source row of a
    // submission exists only with the versions it made (inserted in their statement or savepoint;
    // a Dataset's purge deletes the sources it orphans), so the source row alone answers it:
    // joining entity_defs let skewed statistics (one bulk source behind 10,000 versions) choose a
    // sequential scan of entity_defs (5-60 ms) over the index (0.06 ms).
    used: sql<boolean>`exists (select 1 from entity_def_sources es
      where es.submission_def_id = any(array(select sd.id from submission_defs sd where sd.submission_id = ${submissions.id})))`,
    held: sql<boolean>`exists (select 1 from entity_submission_backlog b where b.submission_id = ${submissions.id})`,
    links: sql<Array<{ datasetId: number; actions: string[] }> | null>`(select jsonb_agg(jsonb_build_object('datasetId', l.dataset_id, 'actions', l.actions))
      from dataset_form_defs l where l.form_def_id = ${formDefs.id})`,
    declaredDatasets: sql<DatasetJson[] | null>`(select jsonb_agg(jsonb_build_object('id', ds.id, 'projectId', ds.project_id, 'name', ds.name,
        'acteeId', ds.actee_id, 'approvalRequired', ds.approval_required, 'ownerOnly', ds.owner_only,
        'createdAt', ds.created_at, 'publishedAt', ds.published_at, 'deletedAt', ds.deleted_at))
      from datasets ds where ds.project_id = ${forms.projectId} and ds.deleted_at is null
        and ds.name in (select jsonb_array_elements(${formDefs.datasets}) ->> 'name'))`,
  })
  .from(submissionDefs)
  .innerJoin(submissions, eq(submissions.id, submissionDefs.submissionId))
  .innerJoin(forms, eq(forms.id, submissions.formId))
  .innerJoin(formDefs, eq(formDefs.id, submissionDefs.formDefId))
  .where(and(eq(submissionDefs.id, sql.placeholder('defId')), isNull(forms.deletedAt)))
  .prepare('entity_work_prelude'));

const sameIndex = (a: number[], b: number[]) => {
  // A property's value sits in the same repeat instance as its entity (outer indexes equal).
  for (let i = 0; i < b.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
};

async function processEntity(
  tx: Ctx, ev: SubmissionEvent, sub: SubCtx,
  dataset: DatasetRow, e: SubmissionEntity, data: Record<string, string>, permitted: string[], source: SourceRef,
): Promise<void> {
  for (const action of ['create', 'update'] as const) {
    if (truthy(e[action]) && !permitted.includes(action)) throw entityActionNotPermitted({ action, permitted });
  }
  const uuid = normalizeUuid(e.id, 'uuid');
  // A create only, that this event does not make (a receipt into a Dataset that requires approval,
  // a review without it): nothing to read or write, so no lock (a round trip each receipt).
  if (!truthy(e.update) && (!truthy(e.create) || !createsNow(ev, dataset))) return;
  const { lockEntity } = await entitiesModule();
  // Locked before anything is read, even before the entity exists (an offline create and its
  // updates may be processed at once): holding and requeueing below happen under this lock. The
  // lock goes out now; a create's statement follows it in the same round trip (queries on one
  // connection run in the order they are issued, so the statement still runs under the lock).
  const locked = lockEntity(tx, uuid);
  locked.catch(() => {}); // awaited below; a failure is not left unhandled meanwhile
  let result: Current | null = null;
  // A create's statement also takes the branch's next held submission out of the backlog.
  let next: BacklogRow | null | undefined;
  if (truthy(e.update)) {
    await locked;
    try {
      result = await updateFromSubmission(tx, ev, sub, dataset, e, uuid, data, source, false);
    } catch (err) {
      const fallback = err instanceof Problem && (err.code === 404.8 || (err.code === 400.2 && (err.details as { field?: string })?.field === 'baseVersion'));
      if (!(fallback && (truthy(e.create) || ev.force === true))) throw err;
      ({ result, next } = await createFromSubmission(tx, ev, sub, dataset, e, uuid, data, source));
    }
  } else if (truthy(e.create)) {
    try {
      ({ result, next } = await createFromSubmission(tx, ev, sub, dataset, e, uuid, data, source, locked));
    } catch (err) {
      // A create arriving after a force-processed update made the entity: applied as an update.
      if (!(err instanceof Problem && err.code === 409.3 && (await createdByForce(tx, uuid)))) throw err;
      result = await updateFromSubmission(tx, ev, sub, dataset, e, uuid, data, source, true);
    }
  }
  await locked;
  if (result != null && ev.force !== true) await requeueNextHeld(tx, ev, sub, result, next);
}

/** Whether this event makes a create's entity (not a receipt awaiting approval, not a review of a Dataset without approval). Pure. */
const createsNow = (ev: SubmissionEvent, dataset: DatasetRow) => (dataset.approvalRequired
  ? ev.reviewState === 'approved'
  : ev.action !== 'submission.update');

type BacklogRow = typeof entitySubmissionBacklog.$inferSelect;

/**
 * Where the held submission that comes after `version` waits (Central's
 * _getNextHeldSubmissionInBranch): by branch and branchBaseVersion + 1, or, after an offline
 * create outside any branch, the entity's held update based on version 1. Pure.
 */
const nextHeldPlace = (uuid: string, branchId: string | null, branchBaseVersion: number | null) => (branchId == null
  ? { entityUuid: uuid, branchId: null, branchBaseVersion: 1 }
  : { entityUuid: null, branchId, branchBaseVersion: (branchBaseVersion ?? 0) + 1 });

/** Whether an entity's first version came from a force-processed backlog submission. */
async function createdByForce(tx: Ctx, uuid: string): Promise<boolean> {
  const [root] = await tx.db.select({ forced: entityDefSources.forceProcessed }).from(entityDefs)
    .innerJoin(entities, eq(entities.id, entityDefs.entityId))
    .innerJoin(entityDefSources, eq(entityDefSources.id, entityDefs.sourceId))
    .where(and(eq(entities.uuid, uuid), eq(entityDefs.version, 1), isNull(entities.deletedAt)));
  return root?.forced === true;
}

/**
 * After a version was applied, the held submission that comes next in its branch (Central's
 * _getNextHeldSubmissionInBranch: by branch and branchBaseVersion + 1, or, after an offline create
 * outside any branch, the entity's held update based on version 1) leaves the backlog and is
 * queued as a `submission.backlog.reprocess` job, in this transaction. Audit
 * `submission.backlog.reprocess` `{ submissionId, submissionDefId }` on the form. `taken`: the
 * backlog row the applying statement already deleted (null: none), so it is not looked up again.
 */
async function requeueNextHeld(tx: Ctx, ev: SubmissionEvent, sub: SubCtx, applied: Current, taken?: BacklogRow | null): Promise<void> {
  const b = entitySubmissionBacklog;
  let next = taken;
  if (next === undefined) {
    const place = nextHeldPlace(applied.entity.uuid, applied.def.branchId, applied.def.branchBaseVersion);
    [next] = await tx.db.delete(b).where(place.branchId == null
      ? and(eq(b.entityUuid, place.entityUuid!), eq(b.branchBaseVersion, place.branchBaseVersion))
      : and(eq(b.branchId, place.branchId), eq(b.branchBaseVersion, place.branchBaseVersion)))
      .returning();
  }
  if (!next) return;
  const auditId = await auditAs(tx, ev.actorId, 'submission.backlog.reprocess', sub.formActeeId, {
    submissionId: next.submissionId, submissionDefId: next.submissionDefId,
  });
  await enqueueJob(tx, 'submission.entities', {
    action: 'submission.backlog.reprocess', submissionId: next.submissionId, submissionDefId: next.submissionDefId, actorId: ev.actorId, auditId,
  });
}

async function createFromSubmission(
  tx: Ctx, ev: SubmissionEvent, sub: SubCtx,
  dataset: DatasetRow, e: SubmissionEntity, uuid: string, data: Record<string, string>, source: SourceRef,
  locked: Promise<void> = Promise.resolve(),
): Promise<{ result: Current | null; next?: BacklogRow | null }> {
  if (!createsNow(ev, dataset)) return { result: null };
  // Force-processing an update as a create: Central gives it a label if it has none.
  const label = ev.force === true && (e.label == null || e.label.trim() === '') ? 'auto generated' : e.label;
  if (label == null || label.trim() === '') throw problems.user.missingParameter({ field: 'label' });
  const baseVersion = e.baseVersion == null || e.baseVersion.trim() === '' ? null : e.baseVersion;
  if (baseVersion != null && !/^\d+$/.test(baseVersion)) throw problems.user.invalidDataTypeOfParameter({ field: 'baseVersion', expected: 'integer' });
  const branch = branchOf(e);
  // The entity, the submission's source row (unless an earlier entity of it wrote it), the first
  // version, the entity.create audit and, unless force-processing, the next held submission of
  // its branch out of the backlog: one statement (approvals and receipts come here one by one; a
  // round trip each adds up). A uuid already taken inserts nothing (`on conflict do nothing`).
  const now = new Date().toISOString();
  const creatorId = sub.def.submitterId;
  // A forced update-as-create keeps its place in the branch, so the branch's next update finds it.
  const branchBaseVersion = ev.force === true && baseVersion != null ? Number(baseVersion) : null;
  const knownSource = source.known();
  const src = knownSource == null ? await source.row() : null;
  const place = ev.force === true ? null : nextHeldPlace(uuid, branch.branchId, branchBaseVersion);
  // The entity lock's answer comes back with this statement's (one round trip).
  const [, res] = await Promise.all([locked, tx.db.execute(sql`with e as (
      insert into entities (uuid, dataset_id, creator_id, created_at)
      values (${uuid}::text, ${dataset.id}::int, ${creatorId}::int, ${now}::timestamptz)
      on conflict (uuid) do nothing returning *),
    s as (
      insert into entity_def_sources (type, submission_def_id, details, force_processed, audit_id)
      select 'submission', ${src?.submissionDefId ?? null}::int, ${src == null ? null : JSON.stringify(src.details)}::jsonb,
        ${src?.forceProcessed ?? false}::boolean, ${src?.auditId ?? null}::bigint
      from e where ${src != null}::boolean returning id),
    d as (
      insert into entity_defs (entity_id, source_id, current, version, label, data, data_received, creator_id, user_agent, created_at,
        branch_id, trunk_version, branch_base_version)
      select e.id, coalesce((select id from s), ${knownSource}::int), true, 1, ${label}::text, ${JSON.stringify(data)}::jsonb,
        ${JSON.stringify({ ...data, label })}::jsonb, ${creatorId}::int, ${sub.def.userAgent}::text, ${now}::timestamptz,
        ${branch.branchId}::text, ${branch.trunkVersion}::int, ${branchBaseVersion}::int
      from e returning *),
    a as (
      insert into audits (actor_id, action, actee_id, details)
      select ${ev.actorId}::int, 'entity.create', ${dataset.acteeId}::text, jsonb_build_object('entityId', e.id, 'entityDefId', d.id,
        'entity', jsonb_build_object('uuid', ${uuid}::text, 'dataset', ${dataset.name}::text),
        'submissionId', ${sub.sub.id}::int, 'submissionDefId', ${sub.def.id}::int)
      from e, d returning id),
    b as (
      delete from entity_submission_backlog where ${place != null}::boolean and exists (select 1 from e)
        and (entity_uuid = ${place?.entityUuid ?? null}::text or ${place?.entityUuid == null}::boolean)
        and (branch_id = ${place?.branchId ?? null}::text or ${place?.branchId == null}::boolean)
        and branch_base_version = ${place?.branchBaseVersion ?? null}::int
      returning *)
    select row_to_json(e) as e, row_to_json(d) as d, (select id from s) as source_id,
      (select row_to_json(b) from b limit 1) as next, (select count(*) from a) as audited
    from e, d`)]);
  const row = ((Array.isArray(res) ? res : (res as unknown as { rows: unknown[] }).rows) as Array<{ e: unknown; d: unknown; source_id: unknown; next: unknown }>)[0];
  if (!row) {
    // Nothing inserted: the uuid is taken (by a deleted entity, or a live one).
    const [taken] = await tx.db.select({ deletedAt: entities.deletedAt }).from(entities).where(eq(entities.uuid, uuid));
    if (taken?.deletedAt) throw entityUniquenessViolationWithDeleted({ entityUuids: [uuid] });
    throw problems.user.uniquenessViolation({ fields: ['uuid'], values: [uuid] });
  }
  if (row.source_id != null) source.set(Number(row.source_id));
  return {
    result: { entity: entityRowFromJson(jsonColumn<Record<string, unknown>>(row.e)!), def: entityDefRowFromJson(jsonColumn<Record<string, unknown>>(row.d)!) },
    next: place == null ? undefined : (row.next == null ? null : backlogRowFromJson(jsonColumn<Record<string, unknown>>(row.next)!)),
  };
}

/** An entity_submission_backlog row from row_to_json (snake_case, timestamps as text). Pure. */
function backlogRowFromJson(r: Record<string, unknown>): BacklogRow {
  return {
    id: Number(r.id), submissionId: Number(r.submission_id), submissionDefId: Number(r.submission_def_id), entityUuid: r.entity_uuid as string,
    branchId: r.branch_id as string, branchBaseVersion: Number(r.branch_base_version), loggedAt: new Date(r.logged_at as string),
  };
}

const dateOrNull = (v: unknown) => (v == null ? null : new Date(v as string));

/** An entities row from row_to_json (snake_case, timestamps as text). Pure. */
function entityRowFromJson(r: Record<string, unknown>): EntityRow {
  return {
    id: Number(r.id), uuid: r.uuid as string, datasetId: Number(r.dataset_id), creatorId: r.creator_id == null ? null : Number(r.creator_id),
    conflict: (r.conflict ?? null) as EntityRow['conflict'], createdAt: new Date(r.created_at as string),
    updatedAt: dateOrNull(r.updated_at), deletedAt: dateOrNull(r.deleted_at),
  };
}

/** An entity_defs row from row_to_json (snake_case, timestamps as text). Pure. */
function entityDefRowFromJson(r: Record<string, unknown>): EntityDefRow {
  const int = (v: unknown) => (v == null ? null : Number(v));
  return {
    id: Number(r.id), entityId: Number(r.entity_id), sourceId: int(r.source_id), current: r.current as boolean, version: Number(r.version),
    baseVersion: int(r.base_version), label: r.label as string, data: r.data as Record<string, string>,
    dataReceived: r.data_received as Record<string, string>, conflictingProperties: (r.conflicting_properties ?? null) as string[] | null,
    conflict: (r.conflict ?? null) as EntityDefRow['conflict'], branchId: (r.branch_id ?? null) as string | null,
    trunkVersion: int(r.trunk_version), branchBaseVersion: int(r.branch_base_version), creatorId: int(r.creator_id),
    userAgent: (r.user_agent ?? null) as string | null, createdAt: new Date(r.created_at as string),
  };
}

function branchOf(e: SubmissionEntity): { branchId: string | null; trunkVersion: number | null } {
  const branchId = e.branchId == null || e.branchId === '' ? null : normalizeUuid(e.branchId, 'branchId');
  let trunkVersion: number | null = null;
  if (e.trunkVersion) {
    if (!branchId) throw problems.user.missingParameter({ field: 'branchId' });
    if (!/^\d+$/.test(e.trunkVersion)) throw problems.user.invalidDataTypeOfParameter({ field: 'trunkVersion', expected: 'integer' });
    trunkVersion = Number(e.trunkVersion);
  }
  return { branchId, trunkVersion };
}

const UPDATE_ACTIONS = new Set(['submission.create', 'submission.update.version', 'submission.backlog.reprocess']);

/**
 * The version an update builds on (Central's _computeBaseVersion): without a branch, `baseVersion`
 * itself; in an offline branch, version 1 or the trunk version at the branch's start, else the
 * version this branch made from `baseVersion - 1`. When that one has not arrived yet the
 * submission is held (null), unless force-processing, which builds on the latest version.
 * Deleted entities have no versions here. @throws 404.8 no such entity; 404.9 no such version.
 */
async function baseVersionOf(
  tx: Ctx, ev: SubmissionEvent, sub: SubCtx, dataset: DatasetRow, uuid: string, baseVersion: number,
  branch: { branchId: string | null; trunkVersion: number | null }, createAsUpdate: boolean,
): Promise<EntityDefRow | null> {
  const defOf = async (cond: ReturnType<typeof and>) => (await tx.db.select({ def: entityDefs }).from(entityDefs)
    .innerJoin(entities, eq(entities.id, entityDefs.entityId))
    .where(and(eq(entities.datasetId, dataset.id), eq(entities.uuid, uuid), isNull(entities.deletedAt), cond)).limit(1))[0]?.def;
  const latest = async () => {
    const d = await defOf(eq(entityDefs.current, true));
    if (!d) throw entityNotFound({ entityUuid: uuid, datasetName: dataset.name });
    return d;
  };
  if (createAsUpdate) return latest();
  if (branch.branchId == null) {
    const d = await defOf(eq(entityDefs.version, baseVersion));
    if (d) return d;
    await latest();
    throw entityVersionNotFound({ baseVersion, entityUuid: uuid, datasetName: dataset.name });
  }
  const d = await defOf(baseVersion === 1 || baseVersion === branch.trunkVersion
    ? eq(entityDefs.version, baseVersion)
    : and(eq(entityDefs.branchId, branch.branchId), eq(entityDefs.branchBaseVersion, baseVersion - 1)));
  if (d) return d;
  if (ev.force === true) return latest();
  await holdSubmission(tx, ev, sub, uuid, branch.branchId, baseVersion);
  return null;
}

/**
 * Holds an offline update whose predecessor in its branch has not been applied: a backlog row
 * (unique per branch and base version) and audit `submission.backlog.hold` `{ submissionId,
 * submissionDefId }` on the form. @throws 409.3 another submission already holds that place.
 */
async function holdSubmission(tx: Ctx, ev: SubmissionEvent, sub: SubCtx, uuid: string, branchId: string, baseVersion: number): Promise<void> {
  const [row] = await tx.db.insert(entitySubmissionBacklog).values({
    submissionId: sub.sub.id, submissionDefId: sub.def.id, entityUuid: uuid, branchId, branchBaseVersion: baseVersion,
    loggedAt: sql`clock_timestamp()`,
  }).onConflictDoNothing().returning({ id: entitySubmissionBacklog.id });
  if (!row) throw problems.user.uniquenessViolation({ fields: ['branchId', 'baseVersion'], values: [branchId, String(baseVersion)] });
  await auditAs(tx, ev.actorId, 'submission.backlog.hold', sub.formActeeId, { submissionId: sub.sub.id, submissionDefId: sub.def.id });
}

async function updateFromSubmission(
  tx: Ctx, ev: SubmissionEvent, sub: SubCtx, dataset: DatasetRow, e: SubmissionEntity, uuid: string,
  data: Record<string, string>, source: SourceRef, createAsUpdate: boolean,
): Promise<Current | null> {
  if (!UPDATE_ACTIONS.has(ev.action)) return null;
  let baseVersion = 0;
  if (!createAsUpdate) {
    if (e.baseVersion == null || e.baseVersion.trim() === '') throw problems.user.missingParameter({ field: 'baseVersion' });
    if (!/^\d+$/.test(e.baseVersion)) throw problems.user.invalidDataTypeOfParameter({ field: 'baseVersion', expected: 'integer' });
    baseVersion = Number(e.baseVersion);
  }
  const branch = branchOf(e);
  const label = e.label == null || e.label.trim() === '' ? null : e.label;
  let base: EntityDefRow | null;
  try {
    base = await baseVersionOf(tx, ev, sub, dataset, uuid, baseVersion, branch, createAsUpdate);
  } catch (err) {
    if (err instanceof Problem && err.code === 404.8) {
      const [gone] = await tx.db.select({ id: entities.id }).from(entities)
        .where(and(eq(entities.datasetId, dataset.id), eq(entities.uuid, uuid), sql`${entities.deletedAt} is not null`));
      if (gone) throw entityDeleted({ entityUuid: uuid });
    }
    throw err;
  }
  if (base == null) return null;
  const [server] = await tx.db.select({ entity: entities, def: entityDefs }).from(entities)
    .innerJoin(entityDefs, and(eq(entityDefs.entityId, entities.id), eq(entityDefs.current, true)))
    .where(and(eq(entities.datasetId, dataset.id), eq(entities.uuid, uuid), isNull(entities.deletedAt)));
  if (!server) throw entityNotFound({ entityUuid: uuid, datasetName: dataset.name });
  if (branch.trunkVersion != null && branch.trunkVersion > server.def.version) {
    throw entityVersionNotFound({ baseVersion: `trunkVersion=${branch.trunkVersion}`, entityUuid: uuid, datasetName: dataset.name });
  }
  const dataReceived: Record<string, string> = { ...data, ...(label != null ? { label } : {}) };
  let conflict = server.entity.conflict;
  let conflictingProperties: string[] | null = null;
  const hardOrSoft = (serverDiff: Record<string, string>) => {
    conflictingProperties = Object.keys(dataReceived).filter((k) => k in serverDiff && dataReceived[k] !== serverDiff[k]);
    if (conflict !== 'hard') conflict = conflictingProperties.length > 0 ? 'hard' : 'soft';
  };
  if (base.version !== server.def.version) {
    const serverDiff: Record<string, string> = {};
    for (const k of diffProps(server.def.data, base.data)) serverDiff[k] = server.def.data[k]!;
    if (server.def.label !== base.label) serverDiff.label = server.def.label;
    hardOrSoft(serverDiff);
  } else if (createAsUpdate) {
    // A create applied as an update: what it sends that the entity already has otherwise conflicts.
    const diff: Record<string, string> = {};
    for (const k of diffProps(server.def.data, dataReceived)) diff[k] = server.def.data[k]!;
    if (server.def.label !== (dataReceived.label ?? null)) diff.label = server.def.label;
    hardOrSoft(diff);
    await tx.db.update(entityDefSources).set({ details: sql`coalesce(${entityDefSources.details}, '{}'::jsonb) || '{"action":"create"}'::jsonb` })
      .where(eq(entityDefSources.id, await source.get()));
  } else if (branch.branchId != null && conflict !== 'hard') {
    // Central's _interruptedBranch: a version from outside the branch after its trunk version.
    const [other] = await tx.db.select({ v: entityDefs.version }).from(entityDefs)
      .where(and(eq(entityDefs.entityId, server.entity.id), sql`${entityDefs.branchId} is distinct from ${branch.branchId}`,
        sql`${entityDefs.version} > ${branch.trunkVersion ?? 1}`))
      .limit(1);
    if (other) conflict = 'soft';
  }
  const { addVersion } = await entitiesModule();
  const result = await addVersion(tx, server as Current, {
    label: label ?? server.def.label, data: { ...server.def.data, ...data }, dataReceived, baseVersion: base.version,
    conflict, conflictingProperties, source: { type: 'submission', id: await source.get() },
    creatorId: sub.def.submitterId, userAgent: sub.def.userAgent, branchId: branch.branchId, trunkVersion: branch.trunkVersion,
    branchBaseVersion: branch.branchId != null && !createAsUpdate ? baseVersion : null,
  });
  await auditAs(tx, ev.actorId, 'entity.update.version', dataset.acteeId, {
    entityId: result.entity.id, entityDefId: result.def.id, entity: { uuid, dataset: dataset.name },
    submissionId: sub.sub.id, submissionDefId: sub.def.id,
  });
  return result;
}

/**
 * `dataset.convert`: after approval was turned off with `?convert=true`, makes the entities of the
 * Dataset's pending submissions (lib/datasets pendingSubmissionEvents: not reviewed, no entity in
 * it yet, no entity.error for their current version), each as its latest submission.create /
 * submission.update.version event would have, by that event's actor.
 */
async function convertPending(tx: Ctx, payload: Record<string, unknown>): Promise<void> {
  const { pendingSubmissionEvents } = await datasetsModule();
  for (const p of await pendingSubmissionEvents(tx, Number(payload.datasetId))) {
    await processSubmissionEvent(tx, {
      action: p.action, submissionId: p.submissionId, submissionDefId: p.submissionDefId, actorId: p.actorId, auditId: p.auditId,
    });
  }
}

registerJobHandler('submission.entities', (tx, payload, prefetched) => processSubmissionEvent(tx, payload as unknown as SubmissionEvent, prefetched), {
  inline: true, prefetch: (tx, key) => readPrelude(tx, key as PreludeKey),
});
registerJobHandler('dataset.convert', convertPending);
