/**
 * Entities from submissions, run by lib/jobs after the submission's transaction committed
 * (DESIGN, Reactions between domains). lib/submissions records a `submission.entities` job on
 * receipt, edit and review; lib/datasets a `dataset.convert` job when approval is turned off
 * with `?convert=true`. Behaviour follows Central's entity worker: create on receipt unless the
 * Dataset requires approval (then on approval), updates on receipt; a failure rolls back that
 * submission's entity work and records `entity.error` with the Problem, and the submission stays.
 * Spec: odk-xforms-spec-entities.md; interface.md Events (entity.create, entity.error).
 */
import { and, eq, inArray, isNull } from 'drizzle-orm';
import {
  audits, datasetFormDefs, datasets, entities, entityDefs, entityDefSources, formDefs, forms, submissionDefs, submissions,
  type DatasetRow, type EntityDefRow, type EntityRow,
} from '../../drizzle/schema';
import type { Ctx } from '../context';
import { registerJobHandler } from '../jobs';
import { Problem, problems } from '../problem';
import { parseSubmission } from '../xforms/parse-submission';
import type { SubmissionEntity } from '../xforms/types';
import {
  datasetNotFoundInSubmission, diffProps, entityActionNotPermitted, entityDeleted, entityNotFound, entityUniquenessViolationWithDeleted,
  entityVersionNotFound, normalizeUuid,
} from './model';

/** The job payload lib/submissions records. */
interface SubmissionEvent {
  /** 'submission.create' | 'submission.update.version' | 'submission.update' (review). */
  action: string;
  submissionId: number;
  submissionDefId: number;
  reviewState?: string | null;
  actorId: number | null;
}

const truthy = (v: string | null) => v === '1' || v === 'true';

async function writeAudit(tx: Ctx, actorId: number | null, action: string, acteeId: string | null, details: unknown) {
  await tx.db.insert(audits).values({ actorId, action, acteeId, details: details as object });
}

/**
 * Processes one submission event. Never throws a Problem: those become `entity.error`
 * `{ submissionId, submissionDefId, errorMessage, problem }`; the entity work of the submission is
 * rolled back (savepoint). Other errors propagate (the job is retried).
 */
export async function processSubmissionEvent(tx: Ctx, ev: SubmissionEvent): Promise<void> {
  try {
    await tx.db.transaction(async (inner) => { await processInner({ ...tx, db: inner as unknown as Ctx['db'] }, ev); });
  } catch (err) {
    if (!(err instanceof Problem)) throw err;
    await writeAudit(tx, ev.actorId, 'entity.error', null, {
      submissionId: ev.submissionId, submissionDefId: ev.submissionDefId, errorMessage: err.message,
      problem: { problemCode: err.code, problemDetails: err.details ?? null },
    });
  }
}

async function processInner(tx: Ctx, ev: SubmissionEvent): Promise<void> {
  const [row] = await tx.db.select({ sub: submissions, def: submissionDefs, form: forms, formDef: formDefs }).from(submissionDefs)
    .innerJoin(submissions, eq(submissions.id, submissionDefs.submissionId))
    .innerJoin(forms, eq(forms.id, submissions.formId))
    .innerJoin(formDefs, eq(formDefs.id, submissionDefs.formDefId))
    .where(and(eq(submissionDefs.id, ev.submissionDefId), isNull(forms.deletedAt)));
  if (!row || row.sub.draft || row.sub.deletedAt != null || row.def.encrypted) return;
  // A submission already used for an entity version is not processed again.
  const [used] = await tx.db.select({ id: entityDefs.id }).from(entityDefs)
    .innerJoin(entityDefSources, eq(entityDefSources.id, entityDefs.sourceId))
    .innerJoin(submissionDefs, eq(submissionDefs.id, entityDefSources.submissionDefId))
    .where(eq(submissionDefs.submissionId, row.sub.id)).limit(1);
  if (used) return;
  const links = await tx.db.select().from(datasetFormDefs).where(eq(datasetFormDefs.formDefId, row.formDef.id));
  if (links.length === 0 || row.formDef.datasets.length === 0) return;

  const parsed = parseSubmission(row.def.xml, row.formDef.fields);
  const declared = row.formDef.datasets;
  const found = parsed.entities.filter((e) => declared.some((d) => d.entityPath === e.path));
  if (found.length === 0) return;
  const names = [...new Set(found.map((e) => e.dataset).filter((x): x is string => !!x))];
  const dsRows = names.length === 0 ? [] : await tx.db.select().from(datasets).where(and(
    eq(datasets.projectId, row.form.projectId), inArray(datasets.name, names), isNull(datasets.deletedAt),
  ));
  const byName = new Map(dsRows.filter((d) => d.publishedAt != null).map((d) => [d.name, d]));
  const ctxSub = { sub: row.sub, def: row.def };
  let sourceId: number | null = null;
  const source = async () => {
    sourceId ??= (await tx.db.insert(entityDefSources)
      .values({ type: 'submission', submissionDefId: row.def.id, details: { submission: { instanceId: row.def.instanceId } } })
      .returning())[0]!.id;
    return sourceId;
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
      count: errors.length, total: found.length, errors: errors.map((x) => ({ errorMessage: x.message, index: x.index })),
    });
  }
}

const sameIndex = (a: number[], b: number[]) => {
  // A property's value sits in the same repeat instance as its entity (outer indexes equal).
  for (let i = 0; i < b.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
};

async function processEntity(
  tx: Ctx, ev: SubmissionEvent, sub: { sub: typeof submissions.$inferSelect; def: typeof submissionDefs.$inferSelect },
  dataset: DatasetRow, e: SubmissionEntity, data: Record<string, string>, permitted: string[], source: () => Promise<number>,
): Promise<void> {
  for (const action of ['create', 'update'] as const) {
    if (truthy(e[action]) && !permitted.includes(action)) throw entityActionNotPermitted({ action, permitted });
  }
  const uuid = normalizeUuid(e.id, 'uuid');
  const { lockEntity } = await import('./index');
  await lockEntity(tx, uuid);
  if (truthy(e.update)) {
    try {
      await updateFromSubmission(tx, ev, sub, dataset, e, uuid, data, source);
      return;
    } catch (err) {
      const fallback = err instanceof Problem && (err.code === 404.8 || (err.code === 400.2 && (err.details as { field?: string })?.field === 'baseVersion'));
      if (!(fallback && truthy(e.create))) throw err;
    }
  }
  if (truthy(e.create)) await createFromSubmission(tx, ev, sub, dataset, e, uuid, data, source);
}

async function createFromSubmission(
  tx: Ctx, ev: SubmissionEvent, sub: { sub: typeof submissions.$inferSelect; def: typeof submissionDefs.$inferSelect },
  dataset: DatasetRow, e: SubmissionEntity, uuid: string, data: Record<string, string>, source: () => Promise<number>,
) {
  if ((dataset.approvalRequired && ev.reviewState !== 'approved') || (!dataset.approvalRequired && ev.action === 'submission.update')) return;
  if (e.label == null || e.label.trim() === '') throw problems.user.missingParameter({ field: 'label' });
  const baseVersion = e.baseVersion == null || e.baseVersion.trim() === '' ? null : e.baseVersion;
  if (baseVersion != null && !/^\d+$/.test(baseVersion)) throw problems.user.invalidDataTypeOfParameter({ field: 'baseVersion', expected: 'integer' });
  const branch = branchOf(e);
  const [taken] = await tx.db.select().from(entities).where(eq(entities.uuid, uuid));
  if (taken?.deletedAt) throw entityUniquenessViolationWithDeleted({ entityUuids: [uuid] });
  if (taken) throw problems.user.uniquenessViolation({ fields: ['uuid'], values: [uuid] });
  const { insertEntities } = await import('./index');
  const [created] = await insertEntities(tx, dataset.id, [{ uuid, label: e.label, data, dataReceived: { ...data, label: e.label } }],
    await source(), { creatorId: sub.def.submitterId, userAgent: sub.def.userAgent }, {
      branchId: branch.branchId, trunkVersion: branch.trunkVersion,
    });
  await writeAudit(tx, ev.actorId, 'entity.create', dataset.acteeId, {
    entityId: created!.entity.id, entityDefId: created!.def.id, entity: { uuid, dataset: dataset.name },
    submissionId: sub.sub.id, submissionDefId: sub.def.id,
  });
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

async function updateFromSubmission(
  tx: Ctx, ev: SubmissionEvent, sub: { sub: typeof submissions.$inferSelect; def: typeof submissionDefs.$inferSelect },
  dataset: DatasetRow, e: SubmissionEntity, uuid: string, data: Record<string, string>, source: () => Promise<number>,
) {
  if (!(ev.action === 'submission.create' || ev.action === 'submission.update.version')) return;
  if (e.baseVersion == null || e.baseVersion.trim() === '') throw problems.user.missingParameter({ field: 'baseVersion' });
  if (!/^\d+$/.test(e.baseVersion)) throw problems.user.invalidDataTypeOfParameter({ field: 'baseVersion', expected: 'integer' });
  const baseVersion = Number(e.baseVersion);
  const branch = branchOf(e);
  const label = e.label == null || e.label.trim() === '' ? null : e.label;
  const [server] = await tx.db.select({ entity: entities, def: entityDefs }).from(entities)
    .innerJoin(entityDefs, and(eq(entityDefs.entityId, entities.id), eq(entityDefs.current, true)))
    .where(and(eq(entities.datasetId, dataset.id), eq(entities.uuid, uuid)));
  if (!server) throw entityNotFound({ entityUuid: uuid, datasetName: dataset.name });
  if (server.entity.deletedAt) throw entityDeleted({ entityUuid: uuid });
  let base: EntityDefRow | undefined;
  if (branch.branchId != null && baseVersion !== 1 && baseVersion !== branch.trunkVersion) {
    [base] = await tx.db.select().from(entityDefs).where(and(eq(entityDefs.entityId, server.entity.id),
      eq(entityDefs.branchId, branch.branchId), eq(entityDefs.branchBaseVersion, baseVersion - 1)));
    base ??= server.def; // Fieldbase does not hold out-of-order offline updates yet: apply on the latest.
  } else {
    [base] = await tx.db.select().from(entityDefs).where(and(eq(entityDefs.entityId, server.entity.id), eq(entityDefs.version, baseVersion)));
  }
  if (!base) throw entityVersionNotFound({ baseVersion, entityUuid: uuid, datasetName: dataset.name });
  if (branch.trunkVersion != null && branch.trunkVersion > server.def.version) {
    throw entityVersionNotFound({ baseVersion: `trunkVersion=${branch.trunkVersion}`, entityUuid: uuid, datasetName: dataset.name });
  }
  const dataReceived: Record<string, string> = { ...data, ...(label != null ? { label } : {}) };
  let conflict = server.entity.conflict;
  let conflictingProperties: string[] | null = null;
  if (base.version !== server.def.version) {
    const changed = diffProps(server.def.data, base.data);
    const serverDiff: Record<string, string> = {};
    for (const k of changed) serverDiff[k] = server.def.data[k]!;
    if (server.def.label !== base.label) serverDiff.label = server.def.label;
    conflictingProperties = Object.keys(dataReceived).filter((k) => k in serverDiff && dataReceived[k] !== serverDiff[k]);
    if (conflict !== 'hard') conflict = conflictingProperties.length > 0 ? 'hard' : 'soft';
  } else if (branch.branchId != null && conflict !== 'hard') {
    // Central's _interruptedBranch: a version from outside the branch after its trunk version.
    const others = await tx.db.select({ v: entityDefs.version, b: entityDefs.branchId }).from(entityDefs)
      .where(eq(entityDefs.entityId, server.entity.id));
    if (others.some((o) => o.b !== branch.branchId && o.v > (branch.trunkVersion ?? 1))) conflict = 'soft';
  }
  const { addVersion } = await import('./index');
  const result = await addVersion(tx, server as { entity: EntityRow; def: EntityDefRow }, {
    label: label ?? server.def.label, data: { ...server.def.data, ...data }, dataReceived, baseVersion: base.version,
    conflict, conflictingProperties, source: { type: 'submission', id: await source() },
    creatorId: sub.def.submitterId, userAgent: sub.def.userAgent, branchId: branch.branchId, trunkVersion: branch.trunkVersion,
    branchBaseVersion: branch.branchId != null ? baseVersion : null,
  });
  await writeAudit(tx, ev.actorId, 'entity.update.version', dataset.acteeId, {
    entityId: result.entity.id, entityDefId: result.def.id, entity: { uuid, dataset: dataset.name },
    submissionId: sub.sub.id, submissionDefId: sub.def.id,
  });
}

/**
 * For version listings: the submission behind each submission source `{ submission: { instanceId,
 * submitter, createdAt, reviewState, … }, event }` (a small subset of Central's). Reads only.
 * @returns Map submissionDefId → source JSON.
 */
export async function submissionRefs(ctx: Ctx, defIds: Array<number | null>): Promise<Map<number, unknown>> {
  const ids = [...new Set(defIds.filter((x): x is number => x != null))];
  const out = new Map<number, unknown>();
  if (ids.length === 0) return out;
  const rows = await ctx.db.select({ def: submissionDefs, sub: submissions, form: forms }).from(submissionDefs)
    .innerJoin(submissions, eq(submissions.id, submissionDefs.submissionId))
    .innerJoin(forms, eq(forms.id, submissions.formId))
    .where(inArray(submissionDefs.id, ids));
  for (const r of rows) {
    out.set(r.def.id, {
      submission: {
        instanceId: r.def.instanceId, submitterId: r.def.submitterId, createdAt: r.def.createdAt.toISOString(),
        reviewState: r.sub.reviewState, deletedAt: r.sub.deletedAt ? r.sub.deletedAt.toISOString() : null,
        xmlFormId: r.form.xmlFormId, currentVersion: { instanceName: r.def.instanceName, current: r.def.current },
      },
    });
  }
  return out;
}

/**
 * `dataset.convert`: after approval was turned off with `?convert=true`, makes the entities of the
 * Dataset's pending submissions (not yet reviewed, no entity yet) as if they had just arrived.
 */
async function convertPending(tx: Ctx, payload: Record<string, unknown>): Promise<void> {
  const datasetId = Number(payload.datasetId);
  const pending = await tx.db.select({ defId: submissionDefs.id, subId: submissions.id, submitterId: submissions.submitterId })
    .from(datasetFormDefs)
    .innerJoin(submissionDefs, and(eq(submissionDefs.formDefId, datasetFormDefs.formDefId), eq(submissionDefs.current, true)))
    .innerJoin(submissions, and(eq(submissions.id, submissionDefs.submissionId), eq(submissions.draft, false), isNull(submissions.deletedAt)))
    .where(eq(datasetFormDefs.datasetId, datasetId))
    .orderBy(submissions.id);
  for (const p of pending) {
    await processSubmissionEvent(tx, {
      action: 'submission.create', submissionId: p.subId, submissionDefId: p.defId, actorId: (payload.actorId as number | null) ?? null,
    });
  }
}

registerJobHandler('submission.entities', (tx, payload) => processSubmissionEvent(tx, payload as unknown as SubmissionEvent));
registerJobHandler('dataset.convert', convertPending);
