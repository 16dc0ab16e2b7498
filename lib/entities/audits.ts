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
import { and, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
import {
  actors, audits, datasets, entities, entityDefs, entityDefSources, forms, submissionDefs, submissions, type ActorRow, type AuditRow, type EntityRow,
} from '../../drizzle/schema';
import { actorJson } from '../actors';
import { auditJson } from '../audits';
import { canOrReject } from '../authz/can';
import type { Ctx } from '../context';
import { datasetActee, getDatasetOrNotFound } from '../datasets';
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
 * The audit log of one Entity, newest first, `limit` / `offset` as Central's paging.
 * @returns Audit JSON with `actor` and `details.source` (see the module comment).
 * @throws 404.1 unknown Dataset or Entity (a malformed uuid is 400.11); 401.2/403.1 without entity.read. Reads only.
 */
export async function listEntityAudits(
  ctx: Ctx, projectId: number, name: string, uuidParam: string, page: { limit?: number; offset?: number } = {},
): Promise<EntityAuditJson[]> {
  const d = await getDatasetOrNotFound(ctx, projectId, name);
  await canOrReject(ctx, 'entity.read', datasetActee(d));
  const { entity } = await getEntityOrNotFound(ctx, d.dataset.id, uuidParam);
  return entityAuditLog(ctx, d.dataset.acteeId, entity, page);
}

/** One event of an Entity's audit log: Audit JSON, `details.source`, `actor`. */
export type EntityAuditJson = ReturnType<typeof auditJson> & { details: Record<string, unknown>; actor: ReturnType<typeof actorJson> | null };

/**
 * The audit log of an Entity already loaded (E/audits, and E/versions for each version's source
 * and the last resolve), newest first. Rights are the caller's. Reads only.
 */
export async function entityAuditLog(
  ctx: Ctx, datasetActeeId: string, entity: EntityRow, page: { limit?: number; offset?: number } = {},
): Promise<EntityAuditJson[]> {
  const defs = await ctx.db.select({ def: entityDefs, source: entityDefSources }).from(entityDefs)
    .leftJoin(entityDefSources, eq(entityDefSources.id, entityDefs.sourceId))
    .where(eq(entityDefs.entityId, entity.id));
  const sourceIds = [...new Set(defs.map((r) => r.def.sourceId).filter((x): x is number => x != null))];
  const uuid = entity.uuid;
  // On the Dataset's actee (indexed); an entity's uuid is unique across the server.
  let query = ctx.db.select().from(audits).where(and(eq(audits.acteeId, datasetActeeId), sql`(
      ${audits.details} -> 'entity' ->> 'uuid' = ${uuid}
      or (${audits.action} in ('entity.bulk.delete', 'entity.bulk.restore') and ${audits.details} -> 'entityUuids' ? ${uuid})
      or (${audits.action} = 'entity.bulk.create' and (${audits.details} ->> 'sourceId') in (select jsonb_array_elements_text(${JSON.stringify(sourceIds.map(String))}::jsonb))))`))
    .orderBy(desc(audits.loggedAt), desc(audits.id)).$dynamic();
  if (page.limit != null) query = query.limit(page.limit);
  if (page.offset != null) query = query.offset(page.offset);
  const rows = await query;

  const defById = new Map(defs.map((r) => [r.def.id, r]));
  const sourceById = new Map(defs.filter((r) => r.source != null).map((r) => [r.source!.id, r.source!]));
  const sourceOf = (a: AuditRow) => {
    const det = (a.details ?? {}) as Record<string, unknown>;
    const defId = num(det.entityDefId);
    if (defId != null) return defById.get(defId)?.source ?? null;
    const srcId = num(det.sourceId);
    return srcId != null ? (sourceById.get(srcId) ?? null) : null;
  };

  // Triggering events, and the submission.create event of each one's submission.
  const eventIds = [...new Set(rows.map((a) => sourceOf(a)?.auditId).filter((x): x is number => x != null))];
  const events = eventIds.length === 0 ? [] : await ctx.db.select().from(audits).where(inArray(audits.id, eventIds));
  const eventById = new Map(events.map((e) => [e.id, e]));
  const subIds = [...new Set(events.map((e) => num((e.details as Record<string, unknown> | null)?.submissionId)).filter((x): x is number => x != null))];
  const creates = subIds.length === 0 ? [] : await ctx.db.select().from(audits).where(and(
    eq(audits.action, 'submission.create'), sql`${audits.details} ? 'submissionId'`,
    sql`(${audits.details} ->> 'submissionId')::int in (select jsonb_array_elements_text(${JSON.stringify(subIds)}::jsonb)::int)`,
  )).orderBy(audits.id);
  const createBySub = new Map(creates.map((c) => [num((c.details as Record<string, unknown>).submissionId)!, c]));

  // Live submissions (and forms) behind the entity's versions, with their current versions.
  const linkedDefIds = [...new Set(defs.map((r) => r.source?.submissionDefId).filter((x): x is number => x != null))];
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

  return rows.map((a) => {
    const source = sourceOf(a);
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
