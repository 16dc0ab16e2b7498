/**
 * Datasets as entity lists on devices: which entities an actor may see (ownerOnly), and the
 * OpenRosa hash of a Dataset's list (the manifest's `md5:` hash and the ETag of its CSV), so a
 * device downloads the list again only when it changed for that actor.
 * Spec: central-api.yaml (OpenRosa Form Manifest API: entityList, integrityUrl; Dataset
 * integrity); Central's behaviour: its datasets.js OpenRosa hash tests.
 */
import { and, eq, inArray, isNull, sql, type SQL } from 'drizzle-orm';
import { md5 } from '@noble/hashes/legacy.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { datasets, dsProperties, entities, type ProjectRow } from '../../drizzle/schema';
import { can } from '../authz/can';
import type { Ctx } from '../context';
import { projectActee } from '../projects';
import type { Db } from '../db/client';
import { prepared } from '../db/prepared';
import { jsonColumn } from '../db/raw';

/**
 * Whose entities an entity list is cut to: `null` when the actor may list every entity of the
 * project (`entity.list` on it: managers, viewers, administrators, system jobs, and the anonymous
 * Draft Token paths, which Central does not filter), else the actor's id (App Users, Data
 * Collectors, Public Links), whose view of an `ownerOnly` Dataset holds only what they created.
 * Reads only (the rights cache).
 */
export async function entityFilterActorId(ctx: Ctx, project: Pick<ProjectRow, 'acteeId'>): Promise<number | null> {
  const actor = ctx.auth.actor;
  if (actor == null) return null;
  return (await can(ctx, 'entity.list', projectActee(project))) ? null : actor.id;
}

/**
 * SQL condition on `entities` rows joined with their current `entity_defs` row: the entity is
 * visible to `actorId` (always true for `null`). An `ownerOnly` Dataset shows an actor only the
 * entities it created; a Dataset with property rules only those whose value of a rule's property
 * equals the actor's value of the rule's actor property (any rule; none when the actor has no
 * value). Pure.
 */
export function entityVisibleTo(actorId: number | null): SQL {
  if (actorId == null) return sql`true`;
  return sql`((not exists (select 1 from datasets d where d.id = entities.dataset_id and d.owner_only)
      or entities.creator_id = ${actorId})
    and (not exists (select 1 from dataset_access_filters f where f.dataset_id = entities.dataset_id)
      or exists (select 1 from dataset_access_filters f
        join ds_properties dp on dp.id = f.dataset_property_id
        join actor_property_values apv on apv.actor_property_id = f.actor_property_id and apv.actor_id = ${actorId}
        where f.dataset_id = entities.dataset_id and entity_defs.data ->> dp.name = apv.value)))`;
}

/** What a manifest says of a Dataset-backed attachment. */
export interface EntityListHash {
  /** Hex MD5 (the manifest's `md5:…` without the prefix, and the quoted ETag). */
  hash: string;
  /** `entityList`, or `approvalEntityList` when entities wait for approval. */
  type: 'entityList' | 'approvalEntityList';
}

const hex = (s: string) => bytesToHex(md5(new TextEncoder().encode(s)));

/**
 * The OpenRosa hashes of Datasets' entity lists for one viewer, as Central computes them: the MD5
 * of the newest audit on the Dataset (every entity change and settings change is audited there;
 * its id is hashed too, so two changes within one millisecond still differ); for an actor under
 * property rules, the MD5 of that actor, the rules with its values and the newest audit;
 * for an actor cut to its own entities of an `ownerOnly` Dataset, the MD5 of that actor, the
 * property names, its entity count and its newest entity creation or update, so that another
 * actor's work does not make its devices download again.
 * @param filterActorId from `entityFilterActorId`.
 * @returns Map datasetId → `{ hash, type }` (ids of unknown Datasets are left out). Reads only.
 */
export async function entityListHashes(ctx: Ctx, datasetIds: number[], filterActorId: number | null): Promise<Map<number, EntityListHash>> {
  const out = new Map<number, EntityListHash>();
  const ids = [...new Set(datasetIds)].filter((id) => Number.isSafeInteger(id));
  if (ids.length === 0) return out;
  const actor = filterActorId ?? -1;
  const viewer = filterActorId != null;
  // One prepared round trip per Dataset (a form consumes one or two; they run side by side).
  const rows = (await Promise.all(ids.map((id) => hashQuery(ctx.db).execute({ id, actor, viewer })))).flat() as HashRow[];
  const iso = (t: string | Date | null | undefined) => (t == null ? null : new Date(t).toISOString());
  for (const r of rows) {
    // Rules in Central's order and key order (PostgreSQL's jsonb: value, actorProperty, datasetProperty).
    const rules = jsonColumn<Array<[string | null, string, string]>>(r.rules)?.map(([value, actorProperty, datasetProperty]) => ({ value, actorProperty, datasetProperty }));
    const input = viewer && r.ownerOnly
      ? JSON.stringify({
        owner: filterActorId, propertyList: jsonColumn<string[]>(r.propertyList), entities: Number(r.ownedCount ?? 0),
        latestEntityCreatedOrUpdated: iso(r.ownedLast),
      })
      : viewer && rules != null
        ? JSON.stringify({ owner: filterActorId, filterRules: rules, latestAuditEntry: iso(r.lastAudit) })
        : null;
    out.set(Number(r.id), input == null ? unfilteredEntityListHash(r) : { hash: hex(input), type: r.approvalRequired ? 'approvalEntityList' : 'entityList' });
  }
  return out;
}

/**
 * What a Dataset's entity list hash needs when its viewer is not cut to part of it, read in the
 * same query as the form or attachment a device asks for (lib/forms/openrosa), so that the usual
 * manifest and list download need no second round trip.
 */
export interface EntityListState {
  ownerOnly: boolean;
  approvalRequired: boolean;
  /** The Dataset has property rules (dataset_access_filters). */
  hasRules: boolean;
  lastAudit: string | Date | null;
  lastAuditId: number | string | null;
}

/**
 * SQL giving the EntityListState of the Dataset whose id is `datasetId` as jsonb (null for a null id).
 * `datasetId` must be a qualified column. Pure.
 */
export const entityListStateSql = (datasetId: SQL) => sql`(select jsonb_build_object('ownerOnly', ds.owner_only,
    'approvalRequired', ds.approval_required,
    'hasRules', exists (select 1 from dataset_access_filters f where f.dataset_id = ds.id),
    'lastAudit', (select max(a.logged_at) from audits a where a.actee_id = ds.actee_id),
    'lastAuditId', (select max(a.id) from audits a where a.actee_id = ds.actee_id))
  from datasets ds where ds.id = ${datasetId})`;

/**
 * The hash from an EntityListState when the viewer sees the whole list (`filterActorId` null, or
 * the Dataset is neither ownerOnly nor ruled); else null (call entityListHashes). Pure.
 */
export function entityListHashFromState(state: EntityListState | null, filterActorId: number | null): EntityListHash | null {
  if (state == null) return null;
  if (filterActorId != null && (state.ownerOnly || state.hasRules)) return null;
  return unfilteredEntityListHash(state);
}

/** The hash every viewer of the whole list gets: the newest audit's time and id. Pure. */
function unfilteredEntityListHash(r: { lastAudit: string | Date | null; lastAuditId: number | string | null; approvalRequired: boolean }): EntityListHash {
  // Central hashes the newest audit's time only; its id too tells apart two changes in one millisecond.
  const input = JSON.stringify({ latestAuditEntry: r.lastAudit == null ? null : new Date(r.lastAudit).toISOString(), latestAuditId: r.lastAuditId == null ? null : Number(r.lastAuditId) });
  return { hash: hex(input), type: r.approvalRequired ? 'approvalEntityList' : 'entityList' };
}

/**
 * entityListHashes' query, prepared (devices ask on every manifest and every list download): the
 * newest audit, and for a filtered viewer its property rules and, on an ownerOnly Dataset, its
 * entity count, newest change and the property names; CASE keeps the viewer-only subqueries from
 * running otherwise. Placeholders: `id`, `actor` (-1 for none), `viewer`.
 */
const hashQuery = (db: Db) => prepared(db, 'entity_list_hash', (d) => {
  const actor = sql.placeholder('actor');
  const viewer = sql`${sql.placeholder('viewer')}::boolean`;
  // Qualified by hand inside the subqueries: drizzle writes a one-table select's columns unqualified.
  return d.select({
    id: datasets.id, ownerOnly: datasets.ownerOnly, approvalRequired: datasets.approvalRequired,
    lastAudit: sql<string | null>`(select max(a.logged_at) from audits a where a.actee_id = datasets.actee_id)`,
    lastAuditId: sql<number | null>`(select max(a.id) from audits a where a.actee_id = datasets.actee_id)`,
    rules: sql<unknown>`case when ${viewer} then (select jsonb_agg(jsonb_build_array(apv.value, ap.name, dp.name) order by dp.name, ap.name, apv.value)
      from dataset_access_filters f
      join ds_properties dp on dp.id = f.dataset_property_id
      join actor_properties ap on ap.id = f.actor_property_id
      left join actor_property_values apv on apv.actor_property_id = f.actor_property_id and apv.actor_id = ${actor}
      where f.dataset_id = datasets.id) end`,
    ownedCount: sql<number | null>`case when ${viewer} and datasets.owner_only then (select count(*)::int from entities e
      where e.dataset_id = datasets.id and e.deleted_at is null and e.creator_id = ${actor}) end`,
    ownedLast: sql<string | null>`case when ${viewer} and datasets.owner_only then (select greatest(max(e.created_at), max(e.updated_at)) from entities e
      where e.dataset_id = datasets.id and e.deleted_at is null and e.creator_id = ${actor}) end`,
    propertyList: sql<unknown>`case when ${viewer} and datasets.owner_only then (select jsonb_agg(p.name order by p.name) from ds_properties p
      where p.dataset_id = datasets.id and p.deleted_at is null) end`,
  }).from(datasets).where(eq(datasets.id, sql.placeholder('id'))).prepare('entity_list_hash');
});

/** A row of entityListHashes' query (jsonb columns arrive parsed from postgres.js, as text from some drivers). */
type HashRow = {
  id: number; ownerOnly: boolean; approvalRequired: boolean; lastAudit: string | Date | null; lastAuditId: number | string | null;
  rules: unknown; ownedCount: number | null; ownedLast: string | Date | null; propertyList: unknown;
};

/**
 * Links a definition's empty data-file attachments to the live published Datasets they are named
 * after (`people.csv` → `people`), as Central does when a form is created (every such Dataset) and
 * when publishing creates Datasets (`datasetIds`: only those; itemsets.csv not). An attachment
 * with a file (a spreadsheet's own itemsets.csv included) or a link already stays as it is.
 * Inside the caller's transaction; no audit (Central logs none).
 * Effects: form_attachments.dataset_id (and updated_at when publishing).
 */
export async function autoLinkDatasets(tx: Ctx, projectId: number, defId: number, datasetIds?: number[]): Promise<void> {
  if (datasetIds?.length === 0) return;
  await tx.db.execute(sql`update form_attachments fa set dataset_id = d.id, updated_at = ${datasetIds ? sql`now()` : sql`fa.updated_at`}
    from datasets d
    where fa.form_def_id = ${defId} and fa.type = 'file'
      ${datasetIds ? sql`and fa.name <> 'itemsets.csv'` : sql``} and fa.blob_id is null and fa.dataset_id is null
      and d.project_id = ${projectId} and d.published_at is not null and d.deleted_at is null
      and fa.name = d.name || '.csv'
      ${datasetIds ? sql`and d.id in (${sql.join(datasetIds.map((id) => sql`${id}`), sql`, `)})` : sql``}`);
}
