/**
 * Entities: the API verbs (D/entities…), creation and updates from submissions (through lib/jobs:
 * ./from-submissions.ts registers its handlers when this module loads), and the entity list CSV.
 * Above lib/datasets, lib/forms and lib/submissions; nothing below imports it (DESIGN, Reactions
 * between domains). Spec: interface.md (Entity, Entity Version, Entities endpoints, States: Entity);
 * central-api.yaml (Entity Management).
 */
import { and, asc, desc, eq, inArray, isNotNull, isNull, sql, type SQL } from 'drizzle-orm';
import { actors, entities, entityDefs, entityDefSources, type ActorRow, type EntityDefRow, type EntityRow } from '../../drizzle/schema';
import { actorJson } from '../actors';
import { audit } from '../audits/log';
import { canOrReject } from '../authz/can';
import { withTx, type Ctx } from '../context';
import { datasetActee, getDatasetOrNotFound, publishedProperties, type LoadedDataset } from '../datasets';
import { problems } from '../problem';
import {
  entityJson, entityUniquenessViolationWithDeleted, entityVersionConflict, noConflictEntity, normalizeUuid, readEntityBody, unexpectedAttributes,
  versionDiff, versionJson, type VersionDiff, ConflictWalk, conflictFields, type EntityInput,
} from './model';
import { entityListHashes } from '../datasets/entity-lists';
import { entitiesCsvStream } from './entity-lists';
import { entityFilter, entitySearch } from '../odata/entities';
import { sanitizeOdataIdentifier } from '../xforms/parse-form';
import './from-submissions';
import { keyset, keysetRead } from '../db/keyset';
import { collectBatches, mapBatches } from '../http/json-stream';


/** Loads a published Dataset and checks `verb` on it. @throws 404.1; 401.2/403.1. */
async function loadDataset(ctx: Ctx, projectId: number, name: string, verb: string): Promise<LoadedDataset> {
  const d = await getDatasetOrNotFound(ctx, projectId, name);
  await canOrReject(ctx, verb, datasetActee(d));
  return d;
}

/**
 * An entity of a Dataset with its current version; `uuid` as given in a path (`uuid:` prefix and
 * case ignored, as Central). @throws 400.11 not a v4 UUID; 404.1. Reads only.
 */
export async function getEntityOrNotFound(ctx: Ctx, datasetId: number, uuid: string, deleted = false): Promise<{ entity: EntityRow; def: EntityDefRow }> {
  const [row] = await ctx.db.select({ entity: entities, def: entityDefs }).from(entities)
    .innerJoin(entityDefs, and(eq(entityDefs.entityId, entities.id), eq(entityDefs.current, true)))
    .where(and(eq(entities.datasetId, datasetId), eq(entities.uuid, normalizeUuid(uuid)),
      deleted ? isNotNull(entities.deletedAt) : isNull(entities.deletedAt)));
  if (!row) throw problems.user.notFound();
  return row;
}

async function actorMap(ctx: Ctx, ids: Array<number | null>): Promise<Map<number, ActorRow>> {
  const wanted = [...new Set(ids.filter((x): x is number => x != null))];
  if (wanted.length === 0) return new Map();
  return new Map((await ctx.db.select().from(actors).where(inArray(actors.id, wanted))).map((a) => [a.id, a]));
}

async function fullJson(ctx: Ctx, e: { entity: EntityRow; def: EntityDefRow }, extended: boolean) {
  if (!extended) return entityJson(e.entity, e.def, true);
  const people = await actorMap(ctx, [e.entity.creatorId, e.def.creatorId]);
  return entityJson(e.entity, e.def, true, {
    entity: people.get(e.entity.creatorId ?? -1) ?? null, version: people.get(e.def.creatorId ?? -1) ?? null,
  });
}

/**
 * Entities of a Dataset (GET D/entities), newest first (as Central; ties by id), without data;
 * `deleted` lists the deleted ones; extended adds the creators. Read by keyset in batches of 1,000
 * (lib/db/keyset.ts), each batch's creators in one query, for a streamed answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of Entity JSON.
 * @throws 404.1; 401.2/403.1 without entity.list (before the first batch). Reads only.
 */
export async function listEntities(ctx: Ctx, projectId: number, name: string, opts: { deleted: boolean; extended: boolean }) {
  const d = await loadDataset(ctx, projectId, name, 'entity.list');
  const ks = keyset([{ expr: entities.createdAt, type: 'timestamptz', desc: true }, { expr: entities.id, type: 'int', desc: true }]);
  const rows = keysetRead(ks, (after, limit) => ctx.db.select({ entity: entities, def: entityDefs, ...ks.fields }).from(entities)
    .innerJoin(entityDefs, and(eq(entityDefs.entityId, entities.id), eq(entityDefs.current, true)))
    .where(and(eq(entities.datasetId, d.dataset.id), opts.deleted ? isNotNull(entities.deletedAt) : isNull(entities.deletedAt), after))
    .orderBy(...ks.orderBy).limit(limit));
  return mapBatches(rows, async (batch) => {
    if (!opts.extended) return batch.map((r) => entityJson(r.entity, r.def, false));
    const people = await actorMap(ctx, batch.flatMap((r) => [r.entity.creatorId, r.def.creatorId]));
    return batch.map((r) => entityJson(r.entity, r.def, false, {
      entity: people.get(r.entity.creatorId ?? -1) ?? null, version: people.get(r.def.creatorId ?? -1) ?? null,
    }));
  });
}

/** One entity with its current data (GET E). @throws 404.1; 401.2/403.1 without entity.read. Reads only. */
export async function getEntity(ctx: Ctx, projectId: number, name: string, uuid: string, extended: boolean) {
  const d = await loadDataset(ctx, projectId, name, 'entity.read');
  const e = await getEntityOrNotFound(ctx, d.dataset.id, uuid);
  // Values of a property deleted since stay in the versions but are not shown (Central).
  const live = new Set((await publishedProperties(ctx, d.dataset.id)).map((p) => p.name));
  const data = Object.fromEntries(Object.entries(e.def.data).filter(([k]) => live.has(k)));
  return fullJson(ctx, { ...e, def: { ...e.def, data } }, extended);
}

/** Actors who created live entities of a Dataset, by displayName (GET D/entities/creators). @throws 404.1; 403.1. */
export async function listCreators(ctx: Ctx, projectId: number, name: string) {
  const d = await loadDataset(ctx, projectId, name, 'entity.list');
  const rows = await ctx.db.selectDistinct({ a: actors }).from(entities).innerJoin(actors, eq(actors.id, entities.creatorId))
    .where(and(eq(entities.datasetId, d.dataset.id), isNull(entities.deletedAt)));
  return rows.map((r) => r.a).sort((a, b) => a.displayName.localeCompare(b.displayName) || a.id - b.id).map(actorJson);
}

/** Rejects uuids already used by a deleted entity (409.19) or a live one (409.3). */
async function checkUuidsFree(tx: Ctx, uuids: string[]): Promise<void> {
  if (uuids.length === 0) return;
  // One parameter however many uuids (a bulk body holds tens of thousands; bind parameters stop at 65,535).
  const taken = await tx.db.select({ uuid: entities.uuid, deletedAt: entities.deletedAt }).from(entities)
    .where(uuids.length === 1 ? eq(entities.uuid, uuids[0]!) : sql`${entities.uuid} = any(array(select jsonb_array_elements_text(${JSON.stringify(uuids)}::jsonb)))`);
  const deleted = taken.filter((t) => t.deletedAt != null).map((t) => t.uuid);
  if (deleted.length > 0) throw entityUniquenessViolationWithDeleted({ entityUuids: deleted });
  if (taken.length > 0) throw problems.user.uniquenessViolation({ fields: ['uuid'], values: [taken[0]!.uuid], table: 'entities' });
  if (new Set(uuids).size !== uuids.length) {
    const dup = uuids.find((u, i) => uuids.indexOf(u) !== i)!;
    throw problems.user.uniquenessViolation({ fields: ['uuid'], values: [dup], table: 'entities' });
  }
}

/**
 * Inserts entities with their first versions from one source, in batches.
 * @returns the inserted entity and def rows in input order. Effects: entities, entity_defs rows.
 */
export async function insertEntities(
  tx: Ctx, datasetId: number, inputs: EntityInput[], sourceId: number,
  who: { creatorId: number | null; userAgent: string | null }, extra: Partial<EntityDefRow> = {},
): Promise<Array<{ entity: EntityRow; def: EntityDefRow }>> {
  const out: Array<{ entity: EntityRow; def: EntityDefRow }> = [];
  for (let i = 0; i < inputs.length; i += 1000) {
    const batch = inputs.slice(i, i + 1000);
    const now = new Date();
    const rows = await tx.db.insert(entities)
      .values(batch.map((e) => ({ uuid: e.uuid, datasetId, creatorId: who.creatorId, createdAt: now })))
      .returning();
    const byUuid = new Map(rows.map((r) => [r.uuid, r]));
    const defs = await tx.db.insert(entityDefs).values(batch.map((e) => ({
      entityId: byUuid.get(e.uuid)!.id, sourceId, current: true, version: 1, label: e.label ?? '', data: e.data,
      dataReceived: e.dataReceived, creatorId: who.creatorId, userAgent: who.userAgent, createdAt: now, ...extra,
    }))).returning();
    const defByEntity = new Map(defs.map((d) => [d.entityId, d]));
    for (const e of batch) {
      const entity = byUuid.get(e.uuid)!;
      out.push({ entity, def: defByEntity.get(entity.id)! });
    }
  }
  return out;
}

/**
 * Inserts entities with their first versions from one bulk source in one statement per 20,000
 * (the rows travel as one JSON parameter, unpacked by jsonb_to_recordset; each entity's id is
 * drawn from its sequence up front, so the version rows need no join back), in input order (ids
 * ascending, one createdAt). `dataReceived` is stored as the API create makes it: data and label.
 * For POST D/entities with `entities: [...]`, where nothing needs the rows back; `insertEntities`
 * for a few that do.
 * @returns how many were inserted. Effects: entities, entity_defs rows. @throws the database's
 *   unique violation when a uuid is taken (callers check first: checkUuidsFree).
 */
export async function insertEntitiesBulk(
  tx: Ctx, datasetId: number, inputs: EntityInput[], sourceId: number, who: { creatorId: number | null; userAgent: string | null },
): Promise<number> {
  const now = new Date().toISOString();
  for (let i = 0; i < inputs.length; i += 20_000) {
    const batch = inputs.slice(i, i + 20_000).map((e) => ({ uuid: e.uuid, label: e.label ?? '', data: e.data }));
    await tx.db.execute(sql`with input as (
        select x.uuid, x.label, x.data, nextval((select pg_get_serial_sequence('entities', 'id'))::regclass) as id
        -- A function scan yields the array in order, and the ids are drawn in that order. The
        -- sequence is looked up once (an initplan), not per row: it was a tenth of the statement's CPU.
        from jsonb_to_recordset(${JSON.stringify(batch)}::jsonb) as x(uuid text, label text, data jsonb)),
      ins as (
        insert into entities (id, uuid, dataset_id, creator_id, created_at) overriding system value
        select id, uuid, ${datasetId}::int, ${who.creatorId}::int, ${now}::timestamptz from input)
      insert into entity_defs (entity_id, source_id, current, version, label, data, data_received, creator_id, user_agent, created_at)
      select id, ${sourceId}::int, true, 1, label, data, data || jsonb_build_object('label', label), ${who.creatorId}::int, ${who.userAgent}::text, ${now}::timestamptz
      from input`);
  }
  return inputs.length;
}

/**
 * Creates entities through the API (POST D/entities): one (`{ uuid?, label, data }`, answering
 * the Entity) or many (`{ entities: [...], source: { name, size? } }`, answering `{ success: true }`).
 * Effects: entity_def_sources, entities, entity_defs rows; audit `entity.create`
 *   `{ entityId, entityDefId, entity: { uuid, dataset } }` or `entity.bulk.create` `{ sourceId }`.
 * @throws 404.1; 403.1 without entity.create; 400.x body errors (./model readEntityBody); 400.31 bulk
 *   `entities` not a non-empty array; 400.2 / 400.11 source; 409.3 / 409.19 uuid taken.
 */
export async function createEntities(ctx: Ctx, projectId: number, name: string, body: unknown, userAgent: string | null, notes: string | null) {
  return withTx(ctx, async (tx) => {
    const d = await loadDataset(tx, projectId, name, 'entity.create');
    const names = (await publishedProperties(tx, d.dataset.id)).map((p) => p.name);
    const b = (body ?? {}) as Record<string, unknown>;
    const who = { creatorId: tx.auth.actor?.id ?? null, userAgent: userAgent?.trim() ? userAgent : null };
    if (b.entities === undefined) {
      const input = readEntityBody(b, names, false);
      await checkUuidsFree(tx, [input.uuid]);
      const [source] = await tx.db.insert(entityDefSources).values({ type: 'api', details: null }).returning();
      const [created] = await insertEntities(tx, d.dataset.id, [input], source!.id, who);
      await audit(tx, tx, 'entity.create', d.dataset.acteeId, {
        entityId: created!.entity.id, entityDefId: created!.def.id, entity: { uuid: input.uuid, dataset: d.dataset.name },
      }, notes);
      return { bulk: false as const, json: await fullJson(tx, created!, false) };
    }
    if (!Array.isArray(b.entities)) throw unexpectedAttributes({ expected: ['entities: [...]'], actual: ['not an array'] });
    if (b.entities.length === 0) throw unexpectedAttributes({ expected: ['entities: [...]'], actual: ['empty array'] });
    const inputs = b.entities.map((e) => readEntityBody(e, names, false));
    const src = b.source as Record<string, unknown> | undefined;
    if (src == null) throw problems.user.missingParameter({ field: 'source' });
    if (!src.name) throw problems.user.missingParameter({ field: 'source.name' });
    if (typeof src.name !== 'string') throw problems.user.invalidDataTypeOfParameter({ field: 'name', expected: 'string' });
    if (src.size != null && typeof src.size !== 'number') throw problems.user.invalidDataTypeOfParameter({ field: 'size', expected: 'number' });
    await checkUuidsFree(tx, inputs.map((i) => i.uuid));
    const details = { name: src.name, ...(src.size ? { size: src.size } : {}), count: inputs.length, userAgent: who.userAgent };
    const [source] = await tx.db.insert(entityDefSources).values({ type: 'bulk', details }).returning();
    await insertEntitiesBulk(tx, d.dataset.id, inputs, source!.id, who);
    await audit(tx, tx, 'entity.bulk.create', d.dataset.acteeId, { sourceId: source!.id }, notes);
    return { bulk: true as const, json: { success: true } };
  });
}

/**
 * Takes the transaction-scoped advisory lock of an entity uuid (Central's _lockEntity). The key
 * folds all 128 bits (high half xor low half), so uuids that share a prefix (made by a script,
 * not random) do not share a lock and wait on each other.
 */
export async function lockEntity(tx: Ctx, uuid: string): Promise<void> {
  const hex = uuid.replaceAll('-', '').padEnd(32, '0').slice(0, 32);
  const id = BigInt.asIntN(64, BigInt(`0x${hex.slice(0, 16)}`) ^ BigInt(`0x${hex.slice(16)}`));
  await tx.db.execute(sql`select pg_advisory_xact_lock(${id.toString()}::bigint)`);
}

/**
 * Adds a version (PATCH E `{ label?, data? }`); `baseVersion` must be the current version unless
 * `force`; `resolve` clears a conflict (without a body: no new version).
 * @returns Entity JSON with data. Effects: entity_defs row (the old one not current), entities
 *   updatedAt/conflict; audits `entity.update.version` and/or `entity.update.resolve`.
 * @throws 404.1; 403.1 without entity.update; 400.32 resolve without conflict; 409.15 stale or
 *   missing baseVersion; body errors as create.
 */
export async function updateEntity(
  ctx: Ctx, t: { projectId: number; name: string; uuid: string },
  q: { baseVersion?: string; force?: string; resolve?: string }, body: unknown, userAgent: string | null,
) {
  return withTx(ctx, async (tx) => {
    const d = await loadDataset(tx, t.projectId, t.name, 'entity.update');
    const found = await getEntityOrNotFound(tx, d.dataset.id, t.uuid);
    await lockEntity(tx, found.entity.uuid);
    const current = await getEntityOrNotFound(tx, d.dataset.id, t.uuid);
    const resolve = q.resolve === 'true';
    if (resolve && current.entity.conflict == null) throw noConflictEntity();
    if (q.baseVersion !== String(current.def.version) && q.force !== 'true') {
      throw entityVersionConflict({ current: current.def.version, provided: q.baseVersion as string });
    }
    const empty = body == null || (typeof body === 'object' && Object.keys(body as object).length === 0);
    let result = current;
    if (!(resolve && empty)) {
      const names = (await publishedProperties(tx, d.dataset.id)).map((p) => p.name);
      const input = readEntityBody(body, names, true);
      result = await addVersion(tx, current, {
        label: input.label ?? current.def.label, data: { ...current.def.data, ...input.data }, dataReceived: input.dataReceived,
        baseVersion: current.def.version, conflict: current.entity.conflict, conflictingProperties: null,
        source: { type: 'api' }, creatorId: tx.auth.actor?.id ?? null, userAgent: userAgent?.trim() ? userAgent : null,
      });
      await audit(tx, tx, 'entity.update.version', d.dataset.acteeId, {
        entityId: result.entity.id, entityDefId: result.def.id, entity: { uuid: result.entity.uuid, dataset: d.dataset.name },
      });
    }
    if (resolve) {
      const [e] = await tx.db.update(entities).set({ conflict: null, updatedAt: new Date() }).where(eq(entities.id, result.entity.id)).returning();
      result = { entity: e!, def: result.def };
      await audit(tx, tx, 'entity.update.resolve', d.dataset.acteeId, {
        entityId: result.entity.id, entityDefId: result.def.id, entity: { uuid: result.entity.uuid, dataset: d.dataset.name },
      });
    }
    return fullJson(tx, result, false);
  });
}

/** A new version's content and bookkeeping (./from-submissions and PATCH). */
export interface NewVersion {
  label: string;
  data: Record<string, string>;
  dataReceived: Record<string, string>;
  baseVersion: number;
  conflict: 'soft' | 'hard' | null;
  conflictingProperties: string[] | null;
  source: { type: 'api' | 'submission'; submissionDefId?: number; details?: unknown; id?: number };
  creatorId: number | null;
  userAgent: string | null;
  branchId?: string | null;
  trunkVersion?: number | null;
  branchBaseVersion?: number | null;
}

/**
 * Appends a version to an entity (the caller holds its lock). Effects: entity_def_sources (unless
 * `source.id`), entity_defs, entities updatedAt/conflict. @returns the entity and new version.
 */
export async function addVersion(tx: Ctx, current: { entity: EntityRow; def: EntityDefRow }, v: NewVersion) {
  const sourceId = v.source.id ?? (await tx.db.insert(entityDefSources)
    .values({ type: v.source.type, submissionDefId: v.source.submissionDefId ?? null, details: v.source.details ?? null })
    .returning())[0]!.id;
  await tx.db.update(entityDefs).set({ current: false }).where(and(eq(entityDefs.entityId, current.entity.id), eq(entityDefs.current, true)));
  const [def] = await tx.db.insert(entityDefs).values({
    entityId: current.entity.id, sourceId, current: true, version: current.def.version + 1, baseVersion: v.baseVersion,
    label: v.label, data: v.data, dataReceived: v.dataReceived, conflictingProperties: v.conflictingProperties, conflict: v.conflict,
    creatorId: v.creatorId, userAgent: v.userAgent, branchId: v.branchId ?? null, trunkVersion: v.trunkVersion ?? null,
    branchBaseVersion: v.branchBaseVersion ?? null,
  }).returning();
  const [entity] = await tx.db.update(entities).set({ updatedAt: new Date(), conflict: v.conflict })
    .where(eq(entities.id, current.entity.id)).returning();
  return { entity: entity!, def: def! };
}

/**
 * Soft-deletes an entity (DELETE E). Effects: deletedAt; audit `entity.delete` `{ entity: { uuid } }`.
 * @throws 404.1; 403.1 without entity.delete.
 */
export async function deleteEntity(ctx: Ctx, projectId: number, name: string, uuid: string) {
  await withTx(ctx, async (tx) => {
    const d = await loadDataset(tx, projectId, name, 'entity.delete');
    const { entity } = await getEntityOrNotFound(tx, d.dataset.id, uuid);
    await tx.db.update(entities).set({ deletedAt: new Date() }).where(eq(entities.id, entity.id));
    await audit(tx, tx, 'entity.delete', d.dataset.acteeId, { entity: { uuid: entity.uuid } });
  });
}

/**
 * Restores a deleted entity (POST E/restore). Effects: deletedAt cleared, updatedAt; audit
 * `entity.restore`. @throws 404.1 not deleted; 403.1 without entity.restore.
 */
export async function restoreEntity(ctx: Ctx, projectId: number, name: string, uuid: string) {
  await withTx(ctx, async (tx) => {
    const d = await loadDataset(tx, projectId, name, 'entity.restore');
    const { entity } = await getEntityOrNotFound(tx, d.dataset.id, uuid, true);
    await tx.db.update(entities).set({ deletedAt: null, updatedAt: new Date() }).where(eq(entities.id, entity.id));
    await audit(tx, tx, 'entity.restore', d.dataset.acteeId, { entity: { uuid: entity.uuid } });
  });
}

/**
 * Soft-deletes or restores several entities (POST D/entities/bulk-delete, bulk-restore `{ ids }`).
 * @returns `{ count }`. Effects: deletedAt; audit `entity.delete`/`entity.restore` for one,
 *   `entity.bulk.delete`/`entity.bulk.restore` `{ entityUuids }` for several.
 * @throws 404.1; 403.1; 400.2 / 400.11 ids.
 */
export async function bulkSetDeleted(ctx: Ctx, projectId: number, name: string, body: unknown, restore: boolean) {
  return withTx(ctx, async (tx) => {
    const d = await loadDataset(tx, projectId, name, restore ? 'entity.restore' : 'entity.delete');
    const ids = (body as { ids?: unknown } | null)?.ids;
    if (ids == null) throw problems.user.missingParameter({ field: 'ids' });
    if (!Array.isArray(ids) || ids.some((x) => typeof x !== 'string')) throw problems.user.invalidDataTypeOfParameter({ field: 'ids', expected: 'array' });
    if (ids.length === 0) return { count: 0 };
    const rows = await tx.db.update(entities).set(restore ? { deletedAt: null, updatedAt: new Date() } : { deletedAt: new Date() })
      .where(and(eq(entities.datasetId, d.dataset.id), inArray(entities.uuid, (ids as string[]).map((x) => x.toLowerCase())),
        restore ? isNotNull(entities.deletedAt) : isNull(entities.deletedAt)))
      .returning({ uuid: entities.uuid });
    // In the order the request named them (RETURNING's order follows the plan; Central's tests
    // read the audit's list in request order).
    const asked = new Map((ids as string[]).map((x, i) => [x.toLowerCase(), i] as const));
    const uuids = rows.map((r) => r.uuid).sort((a, b) => (asked.get(a) ?? 0) - (asked.get(b) ?? 0));
    if (uuids.length === 1) await audit(tx, tx, restore ? 'entity.restore' : 'entity.delete', d.dataset.acteeId, { entity: { uuid: uuids[0] } });
    else if (uuids.length > 1) await audit(tx, tx, restore ? 'entity.bulk.restore' : 'entity.bulk.delete', d.dataset.acteeId, { entityUuids: uuids });
    return { count: uuids.length };
  });
}

/** An Entity's versions in order (version is unique per entity). */
const versionOrder = keyset([{ expr: entityDefs.version, type: 'int' }]);

/** An Entity's versions with their sources, oldest first, in keyset batches. */
function readVersions(ctx: Ctx, entityId: number) {
  return keysetRead(versionOrder, (after, limit) => ctx.db.select({ def: entityDefs, source: entityDefSources, ...versionOrder.fields }).from(entityDefs)
    .leftJoin(entityDefSources, eq(entityDefSources.id, entityDefs.sourceId))
    .where(and(eq(entityDefs.entityId, entityId), after)).orderBy(...versionOrder.orderBy).limit(limit));
}

const isCreateAsUpdate = (source: { details: unknown } | null) => (source?.details as { action?: string } | null)?.action === 'create';

/**
 * Versions of an entity, oldest first, with conflict details (GET E/versions); `relevantToConflict`
 * keeps only those the conflict resolution needs; extended adds each creator. A version's `source`
 * is its create/update event's `details.source` in the entity's audit log (./audits.ts: the
 * triggering event and submission), else the source's details (a bulk upload's `{ name, size, … }`).
 * Streamed (issue 21) in two keyset passes of 1,000 versions: the first reads only what the
 * conflict state needs (no data) up to the first unresolved conflict, which decides every
 * version's lastGoodVersion and relevantToConflict; the second reads the versions with their
 * data, each batch's base and previous versions (baseDiff, serverDiff), sources, creators and the
 * later versions based on them in one query each (model.ts ConflictWalk, conflictFields).
 * @returns an async generator of batches of Entity Version JSON.
 * @throws 404.1; 401.2/403.1 without entity.read (before the first batch). Reads only.
 */
export async function listVersions(ctx: Ctx, projectId: number, name: string, uuid: string, opts: { extended: boolean; relevantToConflict: boolean }) {
  const d = await loadDataset(ctx, projectId, name, 'entity.read');
  const { entity } = await getEntityOrNotFound(ctx, d.dataset.id, uuid);
  const { entityAuditLog, lastResolvedDefId } = await import('./audits');
  const resolvedDefId = await lastResolvedDefId(ctx, d.dataset.acteeId, entity);
  // First pass: the first unresolved conflict (or, when none, the last version).
  let firstUnresolved: number | null = null;
  let lastVersion: number | null = null;
  const facts = keysetRead(versionOrder, (after, limit) => ctx.db.select({
    id: entityDefs.id, version: entityDefs.version, baseVersion: entityDefs.baseVersion, branchId: entityDefs.branchId,
    trunkVersion: entityDefs.trunkVersion, conflictingProperties: entityDefs.conflictingProperties, source: { details: entityDefSources.details },
    ...versionOrder.fields,
  }).from(entityDefs).leftJoin(entityDefSources, eq(entityDefSources.id, entityDefs.sourceId))
    .where(and(eq(entityDefs.entityId, entity.id), after)).orderBy(...versionOrder.orderBy).limit(limit));
  const scan = new ConflictWalk(resolvedDefId);
  scanning: for await (const batch of facts) {
    for (const r of batch) {
      lastVersion = r.version;
      const state = scan.next({ ...r, isCreateAsUpdate: isCreateAsUpdate(r.source) });
      if (state.conflict != null && !state.resolved) {
        firstUnresolved = r.version;
        break scanning;
      }
    }
  }
  const lastGood = firstUnresolved == null ? 0 : firstUnresolved - 1;
  // As GET E: the current version leaves out values of properties deleted since (Central).
  const live = new Set((await publishedProperties(ctx, d.dataset.id)).map((p) => p.name));
  const shown = (def: EntityDefRow): EntityDefRow =>
    (def.current ? { ...def, data: Object.fromEntries(Object.entries(def.data).filter(([k]) => live.has(k))) } : def);
  const walk = new ConflictWalk(resolvedDefId);
  return mapBatches(readVersions(ctx, entity.id), async (batch) => {
    const versions = batch.map((r) => r.def.version);
    // Bases and previous versions outside the batch (any earlier version can be a base).
    const inBatch = new Map(batch.map((r) => [r.def.version, r.def as Pick<EntityDefRow, 'label' | 'data'>]));
    const wanted = [...new Set(batch.flatMap((r) => (r.def.version > 1 && r.def.baseVersion != null ? [r.def.baseVersion, r.def.version - 1] : [])))]
      .filter((v) => !inBatch.has(v));
    const near = new Map(inBatch);
    if (wanted.length > 0) {
      for (const r of await ctx.db.select({ version: entityDefs.version, label: entityDefs.label, data: entityDefs.data }).from(entityDefs)
        .where(and(eq(entityDefs.entityId, entity.id), inArray(entityDefs.version, wanted)))) near.set(r.version, r);
    }
    // Versions before lastGood that a version from the first unresolved conflict on is based on.
    const early = versions.filter((v) => v < lastGood);
    const baseOfLater = new Set(early.length === 0 ? [] : (await ctx.db.selectDistinct({ v: entityDefs.baseVersion }).from(entityDefs)
      .where(and(eq(entityDefs.entityId, entity.id), sql`${entityDefs.version} >= ${firstUnresolved}`, sql`${entityDefs.version} > 1`,
        inArray(entityDefs.baseVersion, early)))).map((r) => r.v));
    const ids = batch.map((r) => r.def.id);
    const range = { from: Math.min(...ids), to: Math.max(...ids) };
    const eventSource = new Map((await collectBatches(entityAuditLog(ctx, d.dataset.acteeId, entity, { versionEvents: range })))
      .map((a) => [Number(a.details.entityDefId), a.details.source]));
    const people = opts.extended ? await actorMap(ctx, batch.map((r) => r.def.creatorId)) : null;
    const out = batch.map(({ def, source }) => ({
      ...versionJson(shown(def), true, people ? (people.get(def.creatorId ?? -1) ?? null) : undefined),
      source: eventSource.get(def.id) ?? source?.details ?? {},
      ...conflictFields(def, walk.next({ ...def, isCreateAsUpdate: isCreateAsUpdate(source) }),
        { base: def.baseVersion == null ? undefined : near.get(def.baseVersion), prev: near.get(def.version - 1) },
        { lastGood, lastVersion, baseOfLater: baseOfLater.has(def.version) }),
    }));
    return opts.relevantToConflict ? out.filter((v) => v.relevantToConflict) : out;
  });
}

/**
 * Property diffs between consecutive versions (GET E/diffs), streamed: versions read by keyset in
 * batches, each diffed against the one before it (carried across batches).
 * @returns batches of `[[{ old, new, propertyName }]]` for lib/http/json-stream (one per version
 *   after the first). @throws 404.1; 403.1 (before the first byte). Reads only.
 */
export async function listDiffs(ctx: Ctx, projectId: number, name: string, uuid: string) {
  const d = await loadDataset(ctx, projectId, name, 'entity.read');
  const { entity } = await getEntityOrNotFound(ctx, d.dataset.id, uuid);
  let prev: Pick<EntityDefRow, 'label' | 'data'> | null = null;
  const versions = keysetRead(versionOrder, (after, limit) => ctx.db.select({ label: entityDefs.label, data: entityDefs.data, ...versionOrder.fields })
    .from(entityDefs).where(and(eq(entityDefs.entityId, entity.id), after)).orderBy(...versionOrder.orderBy).limit(limit));
  return mapBatches(versions, (batch) => {
    const out: VersionDiff[] = [];
    for (const v of batch) {
      if (prev) out.push(versionDiff(prev, v));
      prev = v;
    }
    return out;
  });
}

/**
 * The entity list as CSV (GET D/entities.csv): `__id,label,<properties>,__createdAt,__creatorId,
 * __creatorName,__updates,__updatedAt,__version`, newest first as Central, streamed in batches;
 * `q.filter` / `q.search` cut it as OData's `$filter` / `$search` do (lib/odata/entities; deleted
 * entities stay out). `etag` is the Dataset's OpenRosa hash (the one a manifest shows managers), for
 * conditional GETs; null under `$filter` (Central sends none then).
 * @throws 404.1; 401.2/403.1 without entity.list; 400.18 / 501.x a bad `$filter`. Reads only.
 */
export async function entitiesCsv(
  ctx: Ctx, projectId: number, name: string, q: { filter?: string | null; search?: string | null } = {},
): Promise<{ filename: string; etag: string | null; body: () => ReadableStream<Uint8Array> }> {
  const d = await loadDataset(ctx, projectId, name, 'entity.list');
  const props = (await publishedProperties(ctx, d.dataset.id)).map((p) => p.name);
  const cut: SQL[] = [];
  if (q.filter != null && q.filter !== '') {
    cut.push(entityFilter(q.filter, props.map((p) => ({ name: p, odataName: sanitizeOdataIdentifier(p) }))).where);
  }
  if (q.search != null && q.search !== '') cut.push(entitySearch(q.search));
  const etag = cut.length > 0 && q.filter ? null : (await entityListHashes(ctx, [d.dataset.id], null)).get(d.dataset.id)!.hash;
  const where = cut.length > 0 ? and(...cut)! : undefined;
  return { filename: `${d.dataset.name}.csv`, etag, body: () => entitiesCsvStream(ctx, d.dataset.id, props, where) };
}
