/**
 * Deleting Datasets (DELETE D) and purging them from the Trash. As Central: a deleted Dataset
 * frees its name at once, stays in `P/datasets?deleted=true` with its entities downloadable as a
 * CSV snapshot (lib/entities), and is purged after 30 days (or at once with `force`) by the CLI
 * `purge`. Unlike forms it cannot be restored (central-api.yaml, Deleting a Dataset).
 */
import { and, eq, inArray, isNotNull, lt, sql } from 'drizzle-orm';
import {
  actees, audits, datasetFormDefs, datasets, dsProperties, dsPropertyFields, entities, entityDefs, entityDefSources,
  entitySubmissionBacklog, formAttachments, datasetAccessFilters, type DatasetRow,
} from '../../drizzle/schema';
import { audit } from '../audits/log';
import { canOrReject } from '../authz/can';
import { withTx, type Ctx } from '../context';
import { Problem, problems } from '../problem';
import { datasetActee, getDatasetOrNotFound } from './index';

/** Days a deleted Dataset stays in the Trash before `purge` removes it (Central's PURGE_DAY_RANGE). */
export const DATASET_TRASH_DAYS = 30;

/** 409.21: forms still create, update or consume the Dataset (their lists in `details`). */
export const formDependentOnTheDataset = (details: Record<string, unknown>) =>
  new Problem(409.21, "You can't delete this dataset because there are Form(s) dependent on it", details);

/**
 * Deletes a Dataset (DELETE P/datasets/{name}): moves it to the Trash. Refused while a live form
 * (published or draft) declares it or links it as an entity list: delete or change those first.
 * @throws 404.1 unknown or unpublished Dataset; 403.1 without `dataset.delete`; 409.21
 *   `{ sourceForms, linkedForms, draftSourceForms, draftLinkedForms }` ([{ xmlFormId, name }]).
 * Effects, in one transaction: datasets.deleted_at; audit `dataset.delete`.
 */
export async function deleteDataset(ctx: Ctx, projectId: number, name: string): Promise<void> {
  await withTx(ctx, async (tx) => {
    const d = await getDatasetOrNotFound(tx, projectId, name);
    await canOrReject(tx, 'dataset.delete', datasetActee(d));
    // Lock the row so a form published concurrently cannot start to depend on a Dataset going away.
    await tx.db.execute(sql`select 1 from datasets where id = ${d.dataset.id} for update`);
    const deps = await dependentForms(tx, d.dataset.id);
    if (Object.values(deps).some((l) => l.length > 0)) throw formDependentOnTheDataset(deps);
    await tx.db.update(datasets).set({ deletedAt: new Date() }).where(eq(datasets.id, d.dataset.id));
    await audit(tx, tx, 'dataset.delete', d.dataset.acteeId, null);
  });
}

/** Live forms whose current or draft definition declares or links a Dataset (Central's getMetadata lists). */
async function dependentForms(tx: Ctx, datasetId: number) {
  const res = await tx.db.execute<{ kind: string; draft: boolean; xmlFormId: string; name: string }>(sql`
    select distinct 'source' as kind, coalesce(fd.id = f.draft_def_id, false) as draft, f.xml_form_id as "xmlFormId", coalesce(fd.name, f.xml_form_id) as name
      from dataset_form_defs l join form_defs fd on fd.id = l.form_def_id
      join forms f on f.id = fd.form_id and f.deleted_at is null and (fd.id = f.current_def_id or fd.id = f.draft_def_id)
      where l.dataset_id = ${datasetId}
    union
    select distinct 'linked', coalesce(fd.id = f.draft_def_id, false), f.xml_form_id, coalesce(fd.name, f.xml_form_id)
      from form_attachments a join form_defs fd on fd.id = a.form_def_id
      join forms f on f.id = fd.form_id and f.deleted_at is null and (fd.id = f.current_def_id or fd.id = f.draft_def_id)
      where a.dataset_id = ${datasetId}
    order by 3`);
  const rows = Array.isArray(res) ? res : (res as unknown as { rows: Array<{ kind: string; draft: boolean; xmlFormId: string; name: string }> }).rows;
  const pick = (kind: string, draft: boolean) => rows.filter((r) => r.kind === kind && r.draft === draft)
    .map((r) => ({ xmlFormId: r.xmlFormId, name: r.name }));
  return {
    sourceForms: pick('source', false), linkedForms: pick('linked', false),
    draftSourceForms: pick('source', true), draftLinkedForms: pick('linked', true),
  };
}

/**
 * Purges Datasets that have been in the Trash longer than 30 days (all of them with `force`;
 * `projectId` / `name` narrow it): their entities with every version, properties, form links and
 * held offline updates go; the actee is marked purged; audit notes on it are cleared as Central
 * does. A maintenance job (CLI `purge`), one transaction per Dataset.
 * @returns the purged Datasets `[{ id, projectId, name }]`. Effects: deletes rows; audit
 *   `dataset.purge` `{ name }` per Dataset.
 */
export async function purgeDatasets(
  ctx: Ctx, opts: { force: boolean; now?: Date; projectId?: number; name?: string },
): Promise<Array<Pick<DatasetRow, 'id' | 'projectId' | 'name'>>> {
  const cutoff = new Date((opts.now ?? new Date()).getTime() - DATASET_TRASH_DAYS * 86_400_000);
  const doomed = await ctx.db.select().from(datasets).where(and(
    isNotNull(datasets.deletedAt), opts.force ? undefined : lt(datasets.deletedAt, cutoff),
    opts.projectId == null ? undefined : eq(datasets.projectId, opts.projectId),
    opts.name == null ? undefined : eq(datasets.name, opts.name),
  )).orderBy(datasets.id);
  const purged: Array<Pick<DatasetRow, 'id' | 'projectId' | 'name'>> = [];
  for (const d of doomed) {
    await withTx(ctx, async (tx) => {
      await purgeOne(tx, d);
      await audit(tx, tx, 'dataset.purge', d.acteeId, { name: d.name });
    });
    purged.push({ id: d.id, projectId: d.projectId, name: d.name });
  }
  return purged;
}

async function purgeOne(tx: Ctx, d: DatasetRow): Promise<void> {
  await tx.db.update(audits).set({ notes: null }).where(eq(audits.acteeId, d.acteeId));
  const entityIds = tx.db.select({ id: entities.id }).from(entities).where(eq(entities.datasetId, d.id));
  const sourceIds = (await tx.db.selectDistinct({ id: entityDefs.sourceId }).from(entityDefs)
    .where(inArray(entityDefs.entityId, entityIds))).map((r) => r.id).filter((id): id is number => id != null);
  await tx.db.delete(entityDefs).where(inArray(entityDefs.entityId, entityIds));
  await tx.db.delete(entities).where(eq(entities.datasetId, d.id));
  if (sourceIds.length > 0) {
    await tx.db.delete(entityDefSources).where(and(inArray(entityDefSources.id, sourceIds),
      sql`not exists (select 1 from entity_defs e where e.source_id = entity_def_sources.id)`));
  }
  // Held offline updates of the forms that wrote to this Dataset.
  const defIds = tx.db.select({ id: datasetFormDefs.formDefId }).from(datasetFormDefs).where(eq(datasetFormDefs.datasetId, d.id));
  await tx.db.delete(entitySubmissionBacklog).where(sql`${entitySubmissionBacklog.submissionDefId} in
    (select sd.id from submission_defs sd where sd.form_def_id in (${defIds}))`);
  const propIds = tx.db.select({ id: dsProperties.id }).from(dsProperties).where(eq(dsProperties.datasetId, d.id));
  await tx.db.delete(dsPropertyFields).where(inArray(dsPropertyFields.dsPropertyId, propIds));
  await tx.db.delete(dsProperties).where(eq(dsProperties.datasetId, d.id));
  await tx.db.delete(datasetFormDefs).where(eq(datasetFormDefs.datasetId, d.id));
  // Definitions of deleted forms or old versions may still name it as an entity list.
  await tx.db.update(formAttachments).set({ datasetId: null }).where(eq(formAttachments.datasetId, d.id));
  await tx.db.delete(datasets).where(eq(datasets.id, d.id));
  await tx.db.update(actees).set({ purgedAt: new Date() }).where(eq(actees.id, d.acteeId));
}

/**
 * Whether a form's current or draft definition writes to or links a Dataset that is now in the
 * Trash, or writes to a property since deleted: such a form cannot be restored (Central's 409.23 datasetMissingForFormRestore). Reads only.
 */
export async function formDependsOnDeletedDataset(ctx: Ctx, form: { currentDefId: number | null; draftDefId: number | null }): Promise<boolean> {
  const defIds = [form.currentDefId, form.draftDefId].filter((id): id is number => id != null);
  if (defIds.length === 0) return false;
  const list = sql.join(defIds.map((id) => sql`${id}`), sql`, `);
  const res = await ctx.db.execute(sql`select 1 from datasets d where d.deleted_at is not null and (
    exists (select 1 from dataset_form_defs l where l.dataset_id = d.id and l.form_def_id in (${list}))
    or exists (select 1 from form_attachments a where a.dataset_id = d.id and a.form_def_id in (${list})))
    union all
    select 1 from ds_property_fields pf join ds_properties p on p.id = pf.ds_property_id
    where p.deleted_at is not null and pf.form_def_id in (${list}) limit 1`);
  return (Array.isArray(res) ? res : (res as unknown as { rows: unknown[] }).rows).length > 0;
}

/** 409.23: the form writes to or links a Dataset that was deleted since the form was. */
export const datasetMissingForFormRestore = () =>
  new Problem(409.23, 'This Form cannot be restored because the related dataset(s) has been modified or deleted.');

/** 409.22: a property still written by forms or holding values. */
export const deletePropPrereqViolation = (d: { propertyName: string; prerequisites: Record<string, unknown> }) =>
  new Problem(409.22, `Prerequisites for deleting the property "${d.propertyName}" are not met.`, d);

/**
 * Deletes a published property (DELETE P/datasets/{name}/properties/{propertyName}) once no live
 * form (published or draft) writes to it and no live entity holds a non-blank value for it; its
 * name is then free again, and its access rules go with it. Old entity versions keep their values.
 * @throws 404.1 unknown Dataset or property; 403.1 without `dataset.update`; 409.22
 *   `{ propertyName, prerequisites: { dependentForms?: { message, details: { forms } },
 *   nonEmptyEntities?: { message, details: { totalCount, entities } } } }`.
 * Effects, in one transaction: ds_properties.deleted_at, dataset_access_filters rows; audit
 *   `dataset.update.property.delete` `{ properties: [name] }`.
 */
export async function deleteProperty(ctx: Ctx, projectId: number, name: string, propertyName: string): Promise<void> {
  await withTx(ctx, async (tx) => {
    const d = await getDatasetOrNotFound(tx, projectId, name);
    await canOrReject(tx, 'dataset.update', datasetActee(d));
    const [prop] = await tx.db.select().from(dsProperties).where(and(eq(dsProperties.datasetId, d.dataset.id),
      eq(dsProperties.name, propertyName), isNotNull(dsProperties.publishedAt), sql`ds_properties.deleted_at is null`));
    if (!prop) throw problems.user.notFound();
    await tx.db.execute(sql`select 1 from ds_properties where id = ${prop.id} for update`);
    const prerequisites: Record<string, unknown> = {};
    const forms = rowsOf<{ formName: string | null; xmlFormId: string }>(await tx.db.execute(sql`
      select distinct fd.name as "formName", f.xml_form_id as "xmlFormId" from ds_property_fields pf
      join form_defs fd on fd.id = pf.form_def_id
      join forms f on f.id = fd.form_id and f.deleted_at is null and (fd.id = f.current_def_id or fd.id = f.draft_def_id)
      where pf.ds_property_id = ${prop.id} order by 2`));
    if (forms.length > 0) {
      prerequisites.dependentForms = { message: "You can't delete this property because there are Form(s) writing to it", details: { forms } };
    }
    const valued = rowsOf<{ uuid: string; label: string; total: number }>(await tx.db.execute(sql`
      select e.uuid, ed.label, count(*) over ()::int as total from entities e
      join entity_defs ed on ed.entity_id = e.id and ed.current
      where e.dataset_id = ${d.dataset.id} and e.deleted_at is null and nullif(trim(ed.data ->> ${propertyName}), '') is not null
      order by e.id limit 3`));
    if (valued.length > 0) {
      prerequisites.nonEmptyEntities = {
        message: `You can't delete this property because there are Entity(ies) with the non-empty value for the '${propertyName}'`,
        details: { totalCount: valued[0]!.total, entities: valued.map((v) => ({ uuid: v.uuid, label: v.label })) },
      };
    }
    if (Object.keys(prerequisites).length > 0) throw deletePropPrereqViolation({ propertyName, prerequisites });
    await tx.db.delete(datasetAccessFilters).where(eq(datasetAccessFilters.datasetPropertyId, prop.id));
    await tx.db.update(dsProperties).set({ deletedAt: new Date() }).where(eq(dsProperties.id, prop.id));
    await audit(tx, tx, 'dataset.update.property.delete', d.dataset.acteeId, { properties: [propertyName] });
  });
}

const rowsOf = <T>(res: unknown): T[] => (Array.isArray(res) ? res : (res as { rows: T[] }).rows) as T[];
