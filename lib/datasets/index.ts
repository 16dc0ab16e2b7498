/**
 * Datasets ("Entity Lists") and their properties: defined by forms (lib/forms calls
 * `defineDatasets` when it stores a definition and `publishDatasets` when it publishes one) or
 * through the API (P/datasets). Sits below lib/forms and lib/entities: it reads the forms tables
 * for its metadata but imports neither (DESIGN, Reactions between domains).
 * Spec: interface.md (Dataset, States: Dataset), central-api.yaml (Dataset Management).
 */
import { and, asc, count, eq, inArray, isNotNull, isNull, max, or, sql } from 'drizzle-orm';
import {
  actees, audits, datasetFormDefs, datasets, dsProperties, dsPropertyFields, entities, formAttachments, formDefs, forms,
  type DatasetRow, type FormDefRow, type FormRow, type ProjectRow,
} from '../../drizzle/schema';
import { iso } from '../actors';
import { audit } from '../audits/log';
import { canOrReject, type ActeeRef } from '../authz/can';
import { withTx, type Ctx } from '../context';
import { keyset, keysetRead } from '../db/keyset';
import { mapBatches } from '../http/json-stream';
import { Problem, problems } from '../problem';
import { getProjectOrNotFound, projectActee } from '../projects';
import { sanitizeOdataIdentifier } from '../xforms/parse-form';
import type { DatasetDeclaration } from '../xforms/types';
import { accessRules, readAccessFilter, replaceAccessRules } from './access-filters';
import { validDatasetName, validPropertyName } from './declarations';
import { lazyModule } from '../lazy';
const jobsModule = lazyModule(() => import('../jobs'));
// (cycles between lib folders: loaded on first use, then kept)

export { checkEntityDeclarations, invalidEntityForm, validDatasetName, validPropertyName } from './declarations';

/** The species of dataset actees. */
export const DATASET_SPECIES = 'dataset';

/** A live Dataset with its project. */
export interface LoadedDataset {
  dataset: DatasetRow;
  project: ProjectRow;
}

/** The actee of a dataset: grants on it, its project, 'dataset' or '*' apply. */
export const datasetActee = (d: LoadedDataset): ActeeRef =>
  ({ acteeId: d.dataset.acteeId, species: DATASET_SPECIES, parents: [d.project.acteeId] });

export const datasetNameConflict = (d: { current: string; provided: string }) =>
  new Problem(409.16, `A dataset named '${d.current}' exists and you provided '${d.provided}' with the same name but different capitalization.`, d);
export const propertyNameConflict = () =>
  new Problem(409.17, 'This form attempts to create new Entity properties that match with existing ones except for capitalization.');
export const pendingSubmissions = (d: { count: number }) => new Problem(400.29, `There are ${d.count} pending submissions`, d);

/** Dataset JSON (Central's readable fields, in order); a deleted one also shows its id. Pure. */
export function datasetJson(d: DatasetRow): Record<string, unknown> {
  return {
    name: d.name,
    createdAt: d.createdAt.toISOString(),
    projectId: d.projectId,
    approvalRequired: d.approvalRequired,
    ownerOnly: d.ownerOnly,
    deletedAt: iso(d.deletedAt),
    ...(d.deletedAt ? { id: d.id } : {}),
  };
}

/**
 * Loads a published, live Dataset by name (or any, with `published: false`; a deleted one with
 * `deleted`). @throws Problem 404.1 (project or dataset). Reads only.
 */
export async function getDatasetOrNotFound(
  ctx: Ctx, projectId: number, name: string, opts: { published?: boolean; deleted?: boolean } = {},
): Promise<LoadedDataset> {
  const project = await getProjectOrNotFound(ctx, projectId);
  const [dataset] = await ctx.db.select().from(datasets).where(and(
    eq(datasets.projectId, project.id), eq(datasets.name, name),
    opts.deleted ? isNotNull(datasets.deletedAt) : isNull(datasets.deletedAt),
    opts.published === false ? undefined : isNotNull(datasets.publishedAt),
  )).orderBy(sql`${datasets.deletedAt} desc nulls first`).limit(1);
  if (!dataset) throw problems.user.notFound();
  return { dataset, project };
}

/** Loads a published Dataset by id (deleted ones too). @throws 404.1. Reads only. */
export async function getDatasetByIdOrNotFound(ctx: Ctx, id: number): Promise<LoadedDataset> {
  const [dataset] = await ctx.db.select().from(datasets).where(and(eq(datasets.id, id), isNotNull(datasets.publishedAt)));
  if (!dataset) throw problems.user.notFound();
  return { dataset, project: await getProjectOrNotFound(ctx, dataset.projectId) };
}

/**
 * Published, live properties of a Dataset in Central's order: published time, then the position
 * of the earliest form field that saves to it (a form's order), then creation. Reads only.
 */
export async function publishedProperties(ctx: Ctx, datasetId: number): Promise<Array<{ id: number; name: string; publishedAt: Date }>> {
  // Aliased by hand: drizzle writes a one-table select's columns unqualified.
  const fieldOrder = sql`(select min(f.idx) from ds_property_fields pf join form_defs fd on fd.id = pf.form_def_id
    cross join lateral jsonb_array_elements(fd.fields) with ordinality as f(v, idx)
    where pf.ds_property_id = ds_properties.id and f.v ->> 'path' = pf.path)`;
  const rows = await ctx.db.select({ id: dsProperties.id, name: dsProperties.name, publishedAt: dsProperties.publishedAt })
    .from(dsProperties)
    .where(and(eq(dsProperties.datasetId, datasetId), isNotNull(dsProperties.publishedAt), isNull(dsProperties.deletedAt)))
    .orderBy(asc(dsProperties.publishedAt), sql`${fieldOrder} nulls last`, asc(dsProperties.id));
  return rows.map((r) => ({ ...r, publishedAt: r.publishedAt! }));
}

// ---------------------------------------------------------------------------------------------
// From forms

/**
 * Records the Datasets a form definition declares (draft or published): creates unpublished
 * Datasets and properties that do not exist yet, links the definition (with its actions) and each
 * `saveto` field. Call after `checkEntityDeclarations`, inside the definition's transaction.
 * Rights as Central: `dataset.create` when the Dataset is new or still unpublished,
 * `dataset.update` when published and the form adds properties.
 * @throws 409.16 a published Dataset differs only in case; 409.17 a new property differs from an
 *   existing one only in case; 403.1 without those verbs.
 * Effects: actees, datasets, ds_properties, ds_property_fields, dataset_form_defs rows. No audit
 *   (publishing audits).
 */
export async function defineDatasets(tx: Ctx, project: ProjectRow, def: Pick<FormDefRow, 'id'>, declared: DatasetDeclaration[]): Promise<void> {
  for (const d of declared) {
    const [similar] = await tx.db.select({ name: datasets.name }).from(datasets).where(and(
      eq(datasets.projectId, project.id), sql`lower(${datasets.name}) = lower(${d.name})`, sql`${datasets.name} <> ${d.name}`,
      isNotNull(datasets.publishedAt), isNull(datasets.deletedAt),
    )).limit(1);
    if (similar) throw datasetNameConflict({ current: similar.name, provided: d.name });
    let [dataset] = await tx.db.select().from(datasets)
      .where(and(eq(datasets.projectId, project.id), eq(datasets.name, d.name), isNull(datasets.deletedAt)));
    const created = !dataset;
    if (!dataset) {
      const acteeId = crypto.randomUUID();
      await tx.db.insert(actees).values({ id: acteeId, species: DATASET_SPECIES, parent: project.acteeId });
      [dataset] = await tx.db.insert(datasets).values({ projectId: project.id, name: d.name, acteeId }).returning();
    }
    const loaded = { dataset: dataset!, project };
    if (created || dataset!.publishedAt == null) await canOrReject(tx, 'dataset.create', datasetActee(loaded));
    const existing = await tx.db.select().from(dsProperties).where(and(eq(dsProperties.datasetId, dataset!.id), isNull(dsProperties.deletedAt)));
    const names = new Set(existing.map((p) => p.name));
    const added = d.properties.filter((p) => !names.has(p.name));
    if (!created && added.length > 0) {
      if (dataset!.publishedAt != null) await canOrReject(tx, 'dataset.update', datasetActee(loaded));
      const lower = new Map(existing.filter((p) => p.publishedAt != null).map((p) => [p.name.toLowerCase(), p.name]));
      if (added.some((p) => lower.has(p.name.toLowerCase()))) throw propertyNameConflict();
    }
    await tx.db.insert(datasetFormDefs).values({ datasetId: dataset!.id, formDefId: def.id, actions: d.actions }).onConflictDoNothing();
    if (added.length > 0) {
      await tx.db.insert(dsProperties).values(added.map((p) => ({ datasetId: dataset!.id, name: p.name }))).onConflictDoNothing();
    }
    if (d.properties.length > 0) {
      const props = await tx.db.select().from(dsProperties).where(and(
        eq(dsProperties.datasetId, dataset!.id), inArray(dsProperties.name, d.properties.map((p) => p.name)), isNull(dsProperties.deletedAt),
      ));
      const byName = new Map(props.map((p) => [p.name, p.id]));
      await tx.db.insert(dsPropertyFields)
        .values(d.properties.map((p) => ({ dsPropertyId: byName.get(p.name)!, formDefId: def.id, path: p.path })))
        .onConflictDoNothing();
    }
  }
}

/**
 * Publishes what a form definition defines, when the form is published: its unpublished Datasets
 * and properties get `publishedAt`. Rights: `dataset.create` for a Dataset published now,
 * `dataset.update` for one that gains properties.
 * @throws 409.16 / 409.17 case-only name clashes with published ones; 403.1.
 * @returns the ids of the Datasets published now (their entity lists may link: lib/forms).
 * Effects: datasets / ds_properties publishedAt; audit `dataset.create` `{ properties: [names the
 *   definition saves to] }` or `dataset.update` `{ properties: [every property now] }` per Dataset that changed.
 */
export async function publishDatasets(tx: Ctx, defId: number): Promise<number[]> {
  const created: number[] = [];
  const links = await tx.db.select({ dataset: datasets }).from(datasetFormDefs)
    .innerJoin(datasets, eq(datasets.id, datasetFormDefs.datasetId))
    .where(eq(datasetFormDefs.formDefId, defId))
    .orderBy(asc(datasets.id));
  const now = new Date();
  for (const { dataset } of links) {
    const project = await getProjectOrNotFound(tx, dataset.projectId);
    const loaded = { dataset, project };
    if (dataset.publishedAt == null) {
      const [similar] = await tx.db.select({ name: datasets.name }).from(datasets).where(and(
        eq(datasets.projectId, dataset.projectId), sql`lower(${datasets.name}) = lower(${dataset.name})`, sql`${datasets.id} <> ${dataset.id}`,
        isNotNull(datasets.publishedAt), isNull(datasets.deletedAt),
      )).limit(1);
      if (similar) throw datasetNameConflict({ current: similar.name, provided: dataset.name });
    }
    const props = await tx.db.select({ p: dsProperties }).from(dsPropertyFields)
      .innerJoin(dsProperties, eq(dsProperties.id, dsPropertyFields.dsPropertyId))
      .where(and(eq(dsPropertyFields.formDefId, defId), eq(dsProperties.datasetId, dataset.id)))
      .orderBy(asc(dsProperties.id));
    const fresh = props.filter((r) => r.p.publishedAt == null).map((r) => r.p);
    if (fresh.length > 0) {
      const published = await tx.db.select({ name: dsProperties.name }).from(dsProperties)
        .where(and(eq(dsProperties.datasetId, dataset.id), isNotNull(dsProperties.publishedAt), isNull(dsProperties.deletedAt)));
      const lower = new Set(published.map((p) => p.name.toLowerCase()));
      if (fresh.some((p) => lower.has(p.name.toLowerCase()))) throw propertyNameConflict();
    }
    const names = props.map((r) => r.p.name);
    if (dataset.publishedAt == null) {
      await canOrReject(tx, 'dataset.create', datasetActee(loaded));
      await tx.db.update(datasets).set({ publishedAt: now }).where(eq(datasets.id, dataset.id));
    } else if (fresh.length > 0) {
      await canOrReject(tx, 'dataset.update', datasetActee(loaded));
    }
    if (fresh.length > 0) await tx.db.update(dsProperties).set({ publishedAt: now }).where(inArray(dsProperties.id, fresh.map((p) => p.id)));
    if (dataset.publishedAt == null) await audit(tx, tx, 'dataset.create', dataset.acteeId, { properties: names });
    // dataset.update lists every property the Dataset has now (Central).
    else if (fresh.length > 0) await audit(tx, tx, 'dataset.update', dataset.acteeId, { properties: (await publishedProperties(tx, dataset.id)).map((p) => p.name) });
    if (dataset.publishedAt == null) created.push(dataset.id);
  }
  return created;
}

/**
 * Removes a never-published definition's Dataset links (draft replaced or deleted), and the
 * Datasets and properties only it defined. Effects: deletes rows. Inside the caller's transaction.
 */
export async function forgetDefinition(tx: Ctx, defId: number): Promise<void> {
  const links = await tx.db.select().from(datasetFormDefs).where(eq(datasetFormDefs.formDefId, defId));
  const propIds = (await tx.db.select({ id: dsPropertyFields.dsPropertyId }).from(dsPropertyFields)
    .where(eq(dsPropertyFields.formDefId, defId))).map((r) => r.id);
  await tx.db.delete(dsPropertyFields).where(eq(dsPropertyFields.formDefId, defId));
  await tx.db.delete(datasetFormDefs).where(eq(datasetFormDefs.formDefId, defId));
  if (propIds.length > 0) {
    await tx.db.delete(dsProperties).where(and(inArray(dsProperties.id, propIds), isNull(dsProperties.publishedAt),
      sql`not exists (select 1 from ds_property_fields f where f.ds_property_id = ${dsProperties.id})`));
  }
  const ids = links.map((l) => l.datasetId);
  if (ids.length > 0) {
    await tx.db.delete(dsProperties).where(and(inArray(dsProperties.datasetId, ids),
      sql`(select published_at from datasets d where d.id = ${dsProperties.datasetId}) is null`,
      // Qualified by hand: drizzle writes a one-table statement's columns unqualified, and an
      // unqualified dataset_id here would be the subquery's own column.
      sql`not exists (select 1 from dataset_form_defs l where l.dataset_id = ds_properties.dataset_id)`));
    await tx.db.delete(datasets).where(and(inArray(datasets.id, ids), isNull(datasets.publishedAt),
      sql`not exists (select 1 from dataset_form_defs l where l.dataset_id = ${datasets.id})`,
      sql`not exists (select 1 from form_attachments a where a.dataset_id = ${datasets.id})`));
  }
}

/**
 * What publishing a form (its draft, or its current version) does to Datasets: Central's
 * dataset-diff `[{ name, isNew?, properties: [{ name, isNew?, inForm }] }]`. Properties already
 * published but not in the form come first with `inForm: false`; `isNew` only for the draft.
 * Rights are the caller's (lib/forms). Reads only.
 */
export async function datasetDiffForDef(ctx: Ctx, def: Pick<FormDefRow, 'id' | 'fields'>, forDraft: boolean) {
  const links = await ctx.db.select({ dataset: datasets }).from(datasetFormDefs)
    .innerJoin(datasets, eq(datasets.id, datasetFormDefs.datasetId))
    .where(eq(datasetFormDefs.formDefId, def.id)).orderBy(asc(datasets.id));
  const order = new Map(def.fields.map((f, i) => [f.path, i]));
  const out = [];
  for (const { dataset } of links) {
    const inForm = await ctx.db.select({ p: dsProperties, path: dsPropertyFields.path }).from(dsPropertyFields)
      .innerJoin(dsProperties, eq(dsProperties.id, dsPropertyFields.dsPropertyId))
      .where(and(eq(dsPropertyFields.formDefId, def.id), eq(dsProperties.datasetId, dataset.id), isNull(dsProperties.deletedAt)));
    const formProps = inForm
      .filter((r) => forDraft || r.p.publishedAt != null)
      .sort((a, b) => (order.get(a.path) ?? 0) - (order.get(b.path) ?? 0))
      .map((r) => ({ name: r.p.name, ...(forDraft ? { isNew: r.p.publishedAt == null } : {}), inForm: true }));
    const names = new Set(formProps.map((p) => p.name));
    const others = (await publishedProperties(ctx, dataset.id)).filter((p) => !names.has(p.name))
      .map((p) => ({ name: p.name, ...(forDraft ? { isNew: false } : {}), inForm: false }));
    out.push({ name: dataset.name, ...(forDraft ? { isNew: dataset.publishedAt == null } : {}), properties: [...others, ...formProps] });
  }
  return out;
}

/** Published, live Datasets of a project by name (form attachments link to them). Reads only. */
export async function datasetByName(ctx: Ctx, projectId: number, name: string): Promise<DatasetRow | null> {
  const [row] = await ctx.db.select().from(datasets).where(and(
    eq(datasets.projectId, projectId), eq(datasets.name, name), isNotNull(datasets.publishedAt), isNull(datasets.deletedAt),
  ));
  return row ?? null;
}

// ---------------------------------------------------------------------------------------------
// Read models for projects

/**
 * Per project: published live Datasets and the newest entity's creation time (project counts,
 * `?datasets=true`). @returns Map projectId → { datasets, lastEntity, list }. Reads only.
 */
export async function datasetCountsByProject(ctx: Ctx, projectIds: number[]) {
  const out = new Map<number, { datasets: number; lastEntity: string | null; list: Array<Record<string, unknown>> }>();
  for (const id of projectIds) out.set(id, { datasets: 0, lastEntity: null, list: [] });
  if (projectIds.length === 0) return out;
  // datasets.id written out: drizzle writes a one-table select's columns unqualified, and an
  // unqualified id in these subqueries would be the entity's own.
  const rows = await ctx.db.select({
    d: datasets,
    entities: sql<number>`(select count(*)::int from entities e where e.dataset_id = datasets.id and e.deleted_at is null)`,
    lastEntity: sql<string | null>`(select max(e.created_at) from entities e where e.dataset_id = datasets.id and e.deleted_at is null)`,
    conflicts: sql<number>`(select count(*)::int from entities e where e.dataset_id = datasets.id and e.deleted_at is null and e.conflict is not null)`,
  }).from(datasets)
    .where(and(inArray(datasets.projectId, projectIds), isNotNull(datasets.publishedAt), isNull(datasets.deletedAt)))
    .orderBy(asc(datasets.name));
  for (const r of rows) {
    const c = out.get(r.d.projectId)!;
    c.datasets += 1;
    const last = r.lastEntity == null ? null : new Date(r.lastEntity).toISOString();
    if (last != null && (c.lastEntity == null || last > c.lastEntity)) c.lastEntity = last;
    c.list.push({ ...datasetJson(r.d), entities: r.entities, lastEntity: last, conflicts: r.conflicts });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The Dataset API

/**
 * Datasets of a project (GET P/datasets), by name (ties by id); `deleted` lists those in the Trash
 * instead; extended adds `entities`, `lastEntity`, `conflicts`. Read by keyset in batches of 1,000
 * (lib/db/keyset.ts) for a streamed answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of Dataset JSON.
 * @throws 404.1 project; 401.2/403.1 without dataset.list (before the first batch). Reads only.
 */
export async function listDatasets(ctx: Ctx, projectId: number, opts: { deleted: boolean; extended: boolean }) {
  const project = await getProjectOrNotFound(ctx, projectId);
  await canOrReject(ctx, 'dataset.list', projectActee(project));
  const ks = keyset([{ expr: datasets.name, type: 'text' }, { expr: datasets.id, type: 'int' }]);
  // datasets.id written out: drizzle writes a one-table select's columns unqualified, and an
  // unqualified id in these subqueries would be the entity's own.
  const counts = {
    entities: sql<number>`(select count(*)::int from entities e where e.dataset_id = datasets.id and e.deleted_at is null)`,
    lastEntity: sql<string | null>`(select max(e.created_at) from entities e where e.dataset_id = datasets.id and e.deleted_at is null)`,
    conflicts: sql<number>`(select count(*)::int from entities e where e.dataset_id = datasets.id and e.deleted_at is null and e.conflict is not null)`,
  };
  const rows = keysetRead(ks, (after, limit) => ctx.db.select({ d: datasets, ...(opts.extended ? counts : {}), ...ks.fields }).from(datasets).where(and(
    eq(datasets.projectId, project.id), isNotNull(datasets.publishedAt),
    opts.deleted ? isNotNull(datasets.deletedAt) : isNull(datasets.deletedAt), after,
  )).orderBy(...ks.orderBy).limit(limit) as Promise<Array<{ d: DatasetRow; entities?: number; lastEntity?: string | null; conflicts?: number }>>);
  return mapBatches(rows, (batch) => batch.map((r) => ({
    ...datasetJson(r.d),
    ...(opts.extended ? { entities: r.entities, lastEntity: r.lastEntity == null ? null : new Date(r.lastEntity).toISOString(), conflicts: r.conflicts } : {}),
  })));
}

/**
 * A Dataset with its metadata (GET P/datasets/{name}): Dataset JSON (extended: counts), `lastUpdate`,
 * `linkedForms` / `sourceForms` (published) and `draftLinkedForms` / `draftSourceForms`, and the
 * published `properties` `[{ name, publishedAt, odataName, forms: [{ xmlFormId, name }] }]`.
 * @throws 404.1; 401.2/403.1 without dataset.read. Reads only.
 */
export async function getDatasetMetadata(ctx: Ctx, projectId: number, name: string, extended: boolean) {
  const d = await getDatasetOrNotFound(ctx, projectId, name);
  await canOrReject(ctx, 'dataset.read', datasetActee(d));
  return metadataOf(ctx, d.dataset, extended);
}

/** `accessFilter` of a Dataset's metadata: ownerOnly, property rules, or left out when neither. */
async function accessFilterJson(ctx: Ctx, dataset: DatasetRow) {
  if (dataset.ownerOnly) return { accessFilter: { type: 'ownerOnly' } };
  const rules = await accessRules(ctx, dataset.id);
  return rules.length > 0 ? { accessFilter: { type: 'property', rules } } : {};
}

async function metadataOf(ctx: Ctx, dataset: DatasetRow, extended: boolean) {
  const live = and(isNull(forms.deletedAt), or(eq(formDefs.id, forms.currentDefId), eq(formDefs.id, forms.draftDefId)));
  const formCols = { xmlFormId: forms.xmlFormId, name: sql<string>`coalesce(${formDefs.name}, ${forms.xmlFormId})`, draft: sql<boolean>`${formDefs.id} = ${forms.draftDefId}` };
  const linked = await ctx.db.selectDistinct(formCols).from(formAttachments)
    .innerJoin(formDefs, eq(formDefs.id, formAttachments.formDefId)).innerJoin(forms, and(eq(forms.id, formDefs.formId), live))
    .where(eq(formAttachments.datasetId, dataset.id)).orderBy(asc(forms.xmlFormId));
  // An entity declared in a repeat: the repeat's path ('/members/person/'), as Central's repeatPath.
  const repeatPath = sql<string | null>`(select regexp_replace(d ->> 'entityPath', 'meta/entity$', '') from jsonb_array_elements(${formDefs.datasets}) d
    where d ->> 'name' = ${dataset.name} and exists (select 1 from jsonb_array_elements(${formDefs.fields}) f
      where f ->> 'type' = 'repeat' and f ->> 'path' = regexp_replace(d ->> 'entityPath', '/meta/entity$', '')) limit 1)`;
  const sources = await ctx.db.selectDistinct({ ...formCols, repeatPath }).from(datasetFormDefs)
    .innerJoin(formDefs, eq(formDefs.id, datasetFormDefs.formDefId)).innerJoin(forms, and(eq(forms.id, formDefs.formId), live))
    .where(eq(datasetFormDefs.datasetId, dataset.id)).orderBy(asc(forms.xmlFormId));
  const strip = (r: { xmlFormId: string; name: string; repeatPath?: string | null }) =>
    ({ name: r.name, xmlFormId: r.xmlFormId, ...(r.repeatPath ? { repeatPath: r.repeatPath } : {}) });
  const props = await publishedProperties(ctx, dataset.id);
  const propForms = props.length === 0 ? [] : await ctx.db.select({ id: dsPropertyFields.dsPropertyId, xmlFormId: forms.xmlFormId, name: sql<string>`coalesce(${formDefs.name}, ${forms.xmlFormId})` })
    .from(dsPropertyFields)
    .innerJoin(forms, and(eq(forms.currentDefId, dsPropertyFields.formDefId), isNull(forms.deletedAt)))
    .innerJoin(formDefs, eq(formDefs.id, forms.currentDefId))
    .where(inArray(dsPropertyFields.dsPropertyId, props.map((p) => p.id)))
    .orderBy(asc(forms.id));
  const [last] = await ctx.db.select({ at: max(audits.loggedAt) }).from(audits).where(eq(audits.acteeId, dataset.acteeId));
  let counts = {};
  if (extended) {
    const [c] = await ctx.db.select({
      n: count(), last: max(entities.createdAt), conflicts: sql<number>`count(*) filter (where ${entities.conflict} is not null)::int`,
    }).from(entities).where(and(eq(entities.datasetId, dataset.id), isNull(entities.deletedAt)));
    counts = { entities: c?.n ?? 0, lastEntity: iso(c?.last ?? null), conflicts: c?.conflicts ?? 0 };
  }
  return {
    ...datasetJson(dataset),
    ...counts,
    lastUpdate: iso(last?.at ?? null),
    linkedForms: linked.filter((f) => !f.draft).map(strip),
    sourceForms: sources.filter((f) => !f.draft).map(strip),
    draftLinkedForms: linked.filter((f) => f.draft).map(strip),
    draftSourceForms: sources.filter((f) => f.draft).map(strip),
    properties: props.map((p) => ({
      name: p.name,
      publishedAt: p.publishedAt.toISOString(),
      odataName: sanitizeOdataIdentifier(p.name),
      forms: propForms.filter((f) => f.id === p.id).map((f) => ({ xmlFormId: f.xmlFormId, name: f.name })),
    })),
    ...(await accessFilterJson(ctx, dataset)),
  };
}

/**
 * Creates a published Dataset without a form (POST P/datasets `{ name, approvalRequired?, ownerOnly? }`);
 * an unpublished one of that name (defined by a draft) is published instead.
 * @returns the Dataset's metadata. Effects: actee + datasets row; audit `dataset.create` `{ properties: [] }`.
 * @throws 404.1; 403.1 without dataset.create; 400.8 invalid name; 409.3 exists; 409.16 case clash.
 */
export async function createDataset(ctx: Ctx, projectId: number, body: unknown) {
  const project = await getProjectOrNotFound(ctx, projectId);
  await canOrReject(ctx, 'dataset.create', projectActee(project));
  const b = (body ?? {}) as Record<string, unknown>;
  const name = b.name;
  if (typeof name !== 'string' || !validDatasetName(name)) {
    throw problems.user.unexpectedValue({ field: 'name', value: name, reason: 'This is not a valid dataset name.' });
  }
  const flags = booleanFlags(b);
  return withTx(ctx, async (tx) => {
    const [similar] = await tx.db.select({ name: datasets.name }).from(datasets).where(and(
      eq(datasets.projectId, project.id), sql`lower(${datasets.name}) = lower(${name})`, sql`${datasets.name} <> ${name}`,
      isNotNull(datasets.publishedAt), isNull(datasets.deletedAt),
    )).limit(1);
    if (similar) throw datasetNameConflict({ current: similar.name, provided: name });
    const [existing] = await tx.db.select().from(datasets)
      .where(and(eq(datasets.projectId, project.id), eq(datasets.name, name), isNull(datasets.deletedAt)));
    let row: DatasetRow;
    if (existing) {
      if (existing.publishedAt) {
        throw problems.user.uniquenessViolation({ fields: ['name', 'projectId'], values: [name, String(project.id)], table: 'datasets' });
      }
      [row] = await tx.db.update(datasets).set({ publishedAt: new Date(), ...flags }).where(eq(datasets.id, existing.id)).returning() as [DatasetRow];
    } else {
      const acteeId = crypto.randomUUID();
      await tx.db.insert(actees).values({ id: acteeId, species: DATASET_SPECIES, parent: project.acteeId });
      const now = new Date();
      [row] = await tx.db.insert(datasets).values({ projectId: project.id, name, acteeId, createdAt: now, publishedAt: now, ...flags }).returning() as [DatasetRow];
    }
    await audit(tx, tx, 'dataset.create', row.acteeId, { properties: [] });
    return metadataOf(tx, row, false);
  });
}

function booleanFlags(b: Record<string, unknown>): { approvalRequired?: boolean; ownerOnly?: boolean } {
  const out: { approvalRequired?: boolean; ownerOnly?: boolean } = {};
  for (const k of ['approvalRequired', 'ownerOnly'] as const) {
    if (b[k] === undefined) continue;
    if (typeof b[k] !== 'boolean') throw problems.user.invalidDataTypeOfParameter({ field: k, expected: 'boolean' });
    out[k] = b[k];
  }
  return out;
}

/**
 * Changes a Dataset's settings (PATCH P/datasets/{name} `{ approvalRequired?, ownerOnly?,
 * accessFilter? }`, `?convert=true|false`). Turning approval off while submissions wait for
 * approval needs `convert`: `true` makes their entities now (through lib/jobs: `dataset.convert`).
 * `accessFilter` (Central 2026.x) wins over `ownerOnly`: `null` clears every restriction,
 * `{ type: 'ownerOnly' }`, or `{ type: 'property', rules: [{ datasetProperty, actorProperty }] }`
 * replacing all rules (lib/datasets/access-filters.ts); legacy `ownerOnly: true` clears the rules.
 * @returns the Dataset's metadata. Effects: datasets row, dataset_access_filters rows; audit
 *   `dataset.update` `{ data: { approvalRequired?, ownerOnly?, accessFilter? }, autoConvert }`; a
 *   `dataset.convert` job.
 * @throws 404.1; 403.1 without dataset.update; 400.8 bad convert, accessFilter type or rules;
 *   400.29 pending submissions.
 */
export async function patchDataset(ctx: Ctx, projectId: number, name: string, body: unknown, convert: string | undefined) {
  const { enqueueJob, withJobs } = await jobsModule();
  return withJobs(ctx, async (tx) => {
    const d = await getDatasetOrNotFound(tx, projectId, name);
    await canOrReject(tx, 'dataset.update', datasetActee(d));
    const b = (body ?? {}) as Record<string, unknown>;
    const flags = booleanFlags(b);
    if (convert !== undefined && convert !== 'true' && convert !== 'false') {
      throw problems.user.unexpectedValue({ field: 'convert', value: convert, reason: 'expected true or false' });
    }
    if (flags.approvalRequired === false && convert === undefined) {
      const n = await countPendingSubmissions(tx, d.dataset.id);
      if (n > 0) throw pendingSubmissions({ count: n });
    }
    const autoConvert = flags.approvalRequired === false ? convert === 'true' : undefined;
    const updates: { approvalRequired?: boolean; ownerOnly?: boolean } = {};
    if (flags.approvalRequired !== undefined) updates.approvalRequired = flags.approvalRequired;
    const filter = Object.hasOwn(b, 'accessFilter') ? readAccessFilter(b.accessFilter) : null;
    if (filter != null) {
      updates.ownerOnly = filter.ownerOnly;
      await replaceAccessRules(tx, d.dataset.id, filter.rules);
    } else if (flags.ownerOnly !== undefined) {
      updates.ownerOnly = flags.ownerOnly;
      if (flags.ownerOnly) await replaceAccessRules(tx, d.dataset.id, []);
    }
    if (Object.keys(updates).length === 0) return metadataOf(tx, d.dataset, false);
    const [row] = await tx.db.update(datasets).set(updates).where(eq(datasets.id, d.dataset.id)).returning();
    await audit(tx, tx, 'dataset.update', row!.acteeId, {
      data: { ...updates, ...(filter != null ? { accessFilter: b.accessFilter } : {}) }, autoConvert,
    });
    if (autoConvert && d.dataset.approvalRequired) await enqueueJob(tx, 'dataset.convert', { datasetId: row!.id });
    return metadataOf(tx, row!, false);
  });
}

/** A submission still waiting for its entity, with the event that would have made it (Central's unprocessed submissions). */
export interface PendingSubmission {
  submissionId: number;
  submissionDefId: number;
  /** The submission's latest submission.create or submission.update.version audit. */
  auditId: number;
  action: string;
  actorId: number | null;
}

/**
 * Submissions waiting for approval to make an entity of a Dataset (Central's unprocessed
 * submissions): current versions of live submissions to live forms that declare it, not reviewed
 * (received, hasIssues, edited), with no entity version in this Dataset from any of their versions
 * and no entity.error for the current version; each with its latest submission.create /
 * submission.update.version audit (without one it is not counted). Oldest first. Reads only.
 */
export async function pendingSubmissionEvents(ctx: Ctx, datasetId: number): Promise<PendingSubmission[]> {
  const res = await ctx.db.execute<{ submission_id: number; submission_def_id: number; audit_id: number; action: string; actor_id: number | null }>(sql`
    select s.id as submission_id, sd.id as submission_def_id, a.id as audit_id, a.action, a.actor_id
    from dataset_form_defs dfd
    join submission_defs sd on sd.form_def_id = dfd.form_def_id and sd.current
    join submissions s on s.id = sd.submission_id and not s.draft and s.deleted_at is null
    join forms f on f.id = s.form_id and f.deleted_at is null
    join lateral (select a.id, a.action, a.actor_id from audits a
      where a.details ? 'submissionId' and (a.details ->> 'submissionId')::int = s.id
        and a.action in ('submission.create', 'submission.update.version')
      order by a.id desc limit 1) a on true
    where dfd.dataset_id = ${datasetId}
      and (s.review_state is null or s.review_state in ('hasIssues', 'edited'))
      and not exists (select 1 from submission_defs any_def
        join entity_def_sources es on es.submission_def_id = any_def.id
        join entity_defs ed on ed.source_id = es.id
        join entities e on e.id = ed.entity_id and e.dataset_id = ${datasetId}
        where any_def.submission_id = s.id)
      and not exists (select 1 from audits err
        where err.details ? 'submissionId' and (err.details ->> 'submissionId')::int = s.id
          and err.action = 'entity.error' and (err.details ->> 'submissionDefId')::int = sd.id)
    order by s.id`);
  const rows = (Array.isArray(res) ? res : (res as unknown as { rows: unknown[] }).rows) as Array<{
    submission_id: number; submission_def_id: number; audit_id: number | string; action: string; actor_id: number | null;
  }>;
  return rows.map((r) => ({
    submissionId: Number(r.submission_id), submissionDefId: Number(r.submission_def_id), auditId: Number(r.audit_id),
    action: r.action, actorId: r.actor_id == null ? null : Number(r.actor_id),
  }));
}

/** How many submissions wait for approval to make an entity of a Dataset (`pendingSubmissionEvents`). Reads only. */
export async function countPendingSubmissions(ctx: Ctx, datasetId: number): Promise<number> {
  return (await pendingSubmissionEvents(ctx, datasetId)).length;
}

/**
 * Adds a published property without a form (POST P/datasets/{name}/properties `{ name }`).
 * @returns `{ success: true }`. Effects: ds_properties row; audit `dataset.update` `{ properties: [name] }`.
 * @throws 404.1; 403.1 without dataset.update; 400.8 invalid name; 409.3 exists (any case).
 */
export async function createProperty(ctx: Ctx, projectId: number, datasetName: string, body: unknown) {
  return withTx(ctx, async (tx) => {
    const d = await getDatasetOrNotFound(tx, projectId, datasetName);
    await canOrReject(tx, 'dataset.update', datasetActee(d));
    const name = (body as { name?: unknown } | null)?.name;
    if (typeof name !== 'string' || !validPropertyName(name)) {
      throw problems.user.unexpectedValue({ field: 'name', value: name, reason: 'This is not a valid property name.' });
    }
    const existing = await tx.db.select().from(dsProperties).where(and(
      eq(dsProperties.datasetId, d.dataset.id), sql`lower(${dsProperties.name}) = lower(${name})`, isNull(dsProperties.deletedAt),
    ));
    const published = existing.find((p) => p.publishedAt != null);
    if (published) {
      throw problems.user.uniquenessViolation({ fields: ['name', 'datasetId'], values: [published.name, String(d.dataset.id)], table: 'ds_properties' });
    }
    const same = existing.find((p) => p.name === name);
    if (same) await tx.db.update(dsProperties).set({ publishedAt: new Date() }).where(eq(dsProperties.id, same.id));
    else await tx.db.insert(dsProperties).values({ datasetId: d.dataset.id, name, publishedAt: new Date() });
    await audit(tx, tx, 'dataset.update', d.dataset.acteeId, { properties: [name] });
    return { success: true };
  });
}

/** The definitions of live forms that declare a Dataset (published: current defs). Reads only. */
export async function sourceDefinitions(ctx: Ctx, datasetId: number): Promise<Array<{ form: FormRow; defId: number; actions: string[] }>> {
  const rows = await ctx.db.select({ form: forms, defId: datasetFormDefs.formDefId, actions: datasetFormDefs.actions })
    .from(datasetFormDefs)
    .innerJoin(formDefs, eq(formDefs.id, datasetFormDefs.formDefId))
    .innerJoin(forms, eq(forms.id, formDefs.formId))
    .where(and(eq(datasetFormDefs.datasetId, datasetId), isNull(forms.deletedAt)));
  return rows;
}
