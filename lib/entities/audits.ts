/**
 * An Entity's audit log (GET E/audits): its own events (create, versions, resolve, delete,
 * restore), the bulk create that made it and the bulk deletes/restores that named it, newest
 * first, each with its actor and `details.source`: for a version made by a submission, the event
 * that triggered the work (`event`, with its actor) and the submission (`submission`: instanceId,
 * createdAt and submitter from its submission.create event, merged over the live submission with
 * its current version and xmlFormId while the submission and its form are live); otherwise the
 * version's source details (`{}` for the API, `{ name, size, count, userAgent }` for a bulk upload).
 * Also the entity shown in extended submission audits (`withEntityDetails`).
 * Behaviour of Central's Audits.getByEntityId and getBySubmissionId. Spec: central-api.yaml (Entity Management, audits).
 */
import { and, eq, inArray, isNull, sql } from 'drizzle-orm';
import {
  actors, audits, datasets, entities, entityDefs, entityDefSources, forms, submissionDefs, submissions, type ActorRow, type AuditRow, type EntityRow,
} from '../../drizzle/schema';
import { actorJson } from '../actors';
import { auditJson } from '../audits';
import { canOrReject } from '../authz/can';
import type { Ctx } from '../context';
import { datasetActee, getDatasetOrNotFound } from '../datasets';
import { keyset, keysetRead } from '../db/keyset';
import { mapBatches } from '../http/json-stream';
import { submissionJson } from '../submissions/queries';
import { getEntityOrNotFound } from './index';
import { entityJson } from './model';

async function actorsOf(ctx: Ctx, ids: Array<number | null | undefined>): Promise<Map<number, ActorRow>> {
  const wanted = [...new Set(ids.filter((x): x is number => x != null))];
  if (wanted.length === 0) return new Map();
  return new Map((await ctx.db.select().from(actors).where(inArray(actors.id, wanted))).map((a) => [a.id, a]));
}

const num = (v: unknown): number | null => (v == null || v === '' || Number.isNaN(Number(v)) ? null : Number(v));

/**
 * The audit log of one Entity, newest first, `limit` / `offset` as Central's paging. Read by keyset
 * in batches of 1,000 (lib/db/keyset.ts), each batch's sources, events and submissions in one query
 * per table, for a streamed answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of Audit JSON with `actor` and `details.source` (see the module comment).
 * @throws 404.1 unknown Dataset or Entity (a malformed uuid is 400.11); 401.2/403.1 without entity.read
 *   (before the first batch). Reads only.
 */
export async function listEntityAudits(
  ctx: Ctx, projectId: number, name: string, uuidParam: string, page: { limit?: number; offset?: number } = {},
): Promise<AsyncGenerator<EntityAuditJson[]>> {
  const d = await getDatasetOrNotFound(ctx, projectId, name);
  await canOrReject(ctx, 'entity.read', datasetActee(d));
  const { entity } = await getEntityOrNotFound(ctx, d.dataset.id, uuidParam);
  return entityAuditLog(ctx, d.dataset.acteeId, entity, page);
}

/** One event of an Entity's audit log: Audit JSON, `details.source`, `actor`. */
export type EntityAuditJson = ReturnType<typeof auditJson> & { details: Record<string, unknown>; actor: ReturnType<typeof actorJson> | null };

/** Audits newest first (ties by id), as GET /v1/audits. */
const auditOrder = keyset([{ expr: audits.loggedAt, type: 'timestamptz', desc: true }, { expr: audits.id, type: 'bigint', desc: true }]);

/** The audits of an Entity: on its Dataset's actee (indexed), naming its uuid (unique across the server) or its bulk upload. */
const entityAuditsWhere = (datasetActeeId: string, entity: EntityRow) => and(eq(audits.acteeId, datasetActeeId), sql`(
  ${audits.details} -> 'entity' ->> 'uuid' = ${entity.uuid}
  or (${audits.action} in ('entity.bulk.delete', 'entity.bulk.restore') and ${audits.details} -> 'entityUuids' ? ${entity.uuid})
  or (${audits.action} = 'entity.bulk.create' and (${audits.details} ->> 'sourceId') in
    (select ${entityDefs.sourceId}::text from ${entityDefs} where ${entityDefs.entityId} = ${entity.id})))`);

/**
 * The audit log of an Entity already loaded (E/audits), newest first, in keyset batches. Rights
 * are the caller's. `versionEvents` (E/versions): only the entity.create / entity.update.version
 * events of the entity_defs ids in this range, inclusive (each version's `details.source`; a range,
 * not a list, which the planner joined badly). Reads only.
 * @returns an async generator of batches of EntityAuditJson.
 */
export function entityAuditLog(
  ctx: Ctx, datasetActeeId: string, entity: EntityRow,
  opts: { limit?: number; offset?: number; versionEvents?: { from: number; to: number } } = {},
): AsyncGenerator<EntityAuditJson[]> {
  const range = opts.versionEvents;
  const only = range == null ? undefined : sql`${audits.action} in ('entity.create', 'entity.update.version')
    and (${audits.details} ->> 'entityDefId')::int between ${range.from} and ${range.to}`;
  const rows = keysetRead(auditOrder, (after, limit, offset) => ctx.db.select({ a: audits, ...auditOrder.fields }).from(audits)
    .where(and(entityAuditsWhere(datasetActeeId, entity), only, after)).orderBy(...auditOrder.orderBy).limit(limit).offset(offset), opts);
  return mapBatches(rows, (batch) => withSources(ctx, entity, batch.map((r) => r.a)));
}

/**
 * The id of the entity_defs row the Entity's latest `entity.update.resolve` names, or null (E/versions:
 * conflicts of versions up to it are resolved). Reads only.
 */
export async function lastResolvedDefId(ctx: Ctx, datasetActeeId: string, entity: EntityRow): Promise<number | null> {
  const [row] = await ctx.db.select({ details: audits.details }).from(audits)
    .where(and(entityAuditsWhere(datasetActeeId, entity), eq(audits.action, 'entity.update.resolve')))
    .orderBy(...auditOrder.orderBy).limit(1);
  return row ? Number((row.details as { entityDefId?: number } | null)?.entityDefId ?? 0) : null;
}

/** A batch of an Entity's audits with their actors and `details.source` (see the module comment), one query per table. */
async function withSources(ctx: Ctx, entity: EntityRow, rows: AuditRow[]): Promise<EntityAuditJson[]> {
  const detailsOf = (a: AuditRow) => (a.details ?? {}) as Record<string, unknown>;
  // The versions and sources (of this entity's versions) that the batch names.
  const defIds = [...new Set(rows.map((a) => num(detailsOf(a).entityDefId)).filter((x): x is number => x != null))];
  const srcIds = [...new Set(rows.map((a) => num(detailsOf(a).sourceId)).filter((x): x is number => x != null))];
  const defs = defIds.length === 0 ? [] : await ctx.db.select({ def: entityDefs, source: entityDefSources }).from(entityDefs)
    .leftJoin(entityDefSources, eq(entityDefSources.id, entityDefs.sourceId))
    .where(and(eq(entityDefs.entityId, entity.id), inArray(entityDefs.id, defIds)));
  const sources = srcIds.length === 0 ? [] : await ctx.db.select().from(entityDefSources).where(and(inArray(entityDefSources.id, srcIds),
    inArray(entityDefSources.id, ctx.db.select({ id: entityDefs.sourceId }).from(entityDefs).where(eq(entityDefs.entityId, entity.id)))));

  const defById = new Map(defs.map((r) => [r.def.id, r]));
  const sourceById = new Map(sources.map((src) => [src.id, src]));
  const sourceOf = (a: AuditRow) => {
    const det = detailsOf(a);
    const defId = num(det.entityDefId);
    if (defId != null) return defById.get(defId)?.source ?? null;
    const srcId = num(det.sourceId);
    return srcId != null ? (sourceById.get(srcId) ?? null) : null;
  };
  const batchSources = rows.map(sourceOf);

  // Triggering events, and the submission.create event of each one's submission.
  const eventIds = [...new Set(batchSources.map((src) => src?.auditId).filter((x): x is number => x != null))];
  const events = eventIds.length === 0 ? [] : await ctx.db.select().from(audits).where(inArray(audits.id, eventIds));
  const eventById = new Map(events.map((e) => [e.id, e]));
  const subIds = [...new Set(events.map((e) => num((e.details as Record<string, unknown> | null)?.submissionId)).filter((x): x is number => x != null))];
  const creates = subIds.length === 0 ? [] : await ctx.db.select().from(audits).where(and(
    eq(audits.action, 'submission.create'), sql`${audits.details} ? 'submissionId'`,
    sql`(${audits.details} ->> 'submissionId')::int in (select jsonb_array_elements_text(${JSON.stringify(subIds)}::jsonb)::int)`,
  )).orderBy(audits.id);
  const createBySub = new Map(creates.map((c) => [num((c.details as Record<string, unknown>).submissionId)!, c]));

  // Live submissions (and forms) behind the entity's versions, with their current versions.
  const linkedDefIds = [...new Set(batchSources.map((src) => src?.submissionDefId).filter((x): x is number => x != null))];
  const linked = linkedDefIds.length === 0 ? [] : await ctx.db.select({ linkedId: submissionDefs.id, sub: submissions, xmlFormId: forms.xmlFormId })
    .from(submissionDefs)
    .innerJoin(submissions, and(eq(submissions.id, submissionDefs.submissionId), isNull(submissions.deletedAt)))
    .innerJoin(forms, and(eq(forms.id, submissions.formId), isNull(forms.deletedAt)))
    .where(inArray(submissionDefs.id, linkedDefIds));
  const currentIds = [...new Set(linked.map((l) => l.sub.currentDefId).filter((x): x is number => x != null))];
  const currents = currentIds.length === 0 ? [] : await ctx.db.select().from(submissionDefs).where(inArray(submissionDefs.id, currentIds));
  const currentById = new Map(currents.map((c) => [c.id, c]));
  const linkedById = new Map(linked.map((l) => [l.linkedId, l]));

  const people = await actorsOf(ctx, [
    ...rows.map((a) => a.actorId), ...events.map((e) => e.actorId), ...creates.map((c) => c.actorId),
    ...linked.map((l) => l.sub.submitterId), ...currents.map((c) => c.submitterId),
  ]);
  const actorOf = (id: number | null) => (id != null && people.has(id) ? actorJson(people.get(id)!) : null);

  return rows.map((a, i) => {
    const source = batchSources[i];
    const event = source?.auditId != null ? eventById.get(source.auditId) : undefined;
    let detailsSource: unknown;
    if (event) {
      const create = createBySub.get(num((event.details as Record<string, unknown> | null)?.submissionId) ?? -1);
      const base = create
        ? { instanceId: (create.details as Record<string, unknown>).instanceId, createdAt: create.loggedAt.toISOString(), submitter: actorOf(create.actorId) }
        : undefined;
      const live = source?.submissionDefId != null ? linkedById.get(source.submissionDefId) : undefined;
      const current = live?.sub.currentDefId != null ? currentById.get(live.sub.currentDefId) : undefined;
      const full = live && current
        ? {
          ...submissionJson(live.sub, current, live.sub.submitterId != null ? (people.get(live.sub.submitterId) ?? null) : null,
            current.submitterId != null ? (people.get(current.submitterId) ?? null) : null),
          xmlFormId: live.xmlFormId,
        }
        : undefined;
      // Central merges the submission.create facts over the live submission.
      const submission = source?.submissionDefId != null && (base || full) ? { ...(full ?? {}), ...(base ?? {}) } : undefined;
      detailsSource = { event: { ...auditJson(event), actor: actorOf(event.actorId) }, ...(submission ? { submission } : {}) };
    } else {
      detailsSource = source?.details ?? {};
    }
    const details = (a.details ?? {}) as Record<string, unknown>;
    return { ...auditJson(a), details: { ...details, source: details.source ?? detailsSource }, actor: actorOf(a.actorId) };
  });
}

/**
 * Extended submission audits (GET S/audits with X-Extended-Metadata): an event about an entity
 * (details.entityId: entity.create, entity.update.version, entity.update.resolve) gets
 * `details.entity` as `{ entityAvailable, ...the Entity with its current version, ...details.entity }`;
 * `entityAvailable` is false once the entity or its Dataset is deleted (the entity's fields are then
 * left out). Central's getBySubmissionId. Other events pass through. Reads only.
 */
export async function withEntityDetails<T extends { details: unknown }>(ctx: Ctx, rows: T[]): Promise<T[]> {
  const idOf = (r: T) => num((r.details as Record<string, unknown> | null)?.entityId);
  const ids = [...new Set(rows.map(idOf).filter((x): x is number => x != null))];
  if (ids.length === 0) return rows;
  const found = await ctx.db.select({ entity: entities, def: entityDefs, datasetDeletedAt: datasets.deletedAt }).from(entities)
    .innerJoin(entityDefs, and(eq(entityDefs.entityId, entities.id), eq(entityDefs.current, true)))
    .innerJoin(datasets, eq(datasets.id, entities.datasetId))
    .where(and(inArray(entities.id, ids), isNull(entities.deletedAt)));
  const byId = new Map(found.map((f) => [f.entity.id, f]));
  return rows.map((r) => {
    const id = idOf(r);
    if (id == null) return r;
    const details = r.details as Record<string, unknown>;
    const f = byId.get(id);
    const entity = {
      entityAvailable: f != null && f.datasetDeletedAt == null,
      ...(f ? entityJson(f.entity, f.def, true) : {}),
      ...((details.entity as Record<string, unknown> | undefined) ?? {}),
    };
    return { ...r, details: { ...details, entity } };
  });
}
