/**
 * Property-based access filters of a Dataset (Central 2026.x): rules `{ datasetProperty,
 * actorProperty }` under which an App User, Data Collector or Public Link (an actor that may not
 * list every entity of the project) sees only the entities whose property value equals its own
 * value of the actor property; several rules combine with OR. Spec: central-api.yaml (Updating
 * Dataset: accessFilter); actor properties: lib/app-users.
 */
import { and, asc, eq, sql } from 'drizzle-orm';
import { actorProperties, datasetAccessFilters, dsProperties } from '../../drizzle/schema';
import type { Ctx } from '../context';
import { problems } from '../problem';

/** One rule as the API shows it. */
export interface AccessRule {
  datasetProperty: string;
  actorProperty: string;
}

/**
 * Reads PATCH D's `accessFilter`: `null` (no restriction), `{ type: 'ownerOnly' }` or
 * `{ type: 'property', rules: [...] }`. Pure.
 * @returns the ownerOnly flag to store and the rules that replace the Dataset's (none for the first two).
 * @throws Problem 400.8 unknown type, rules not a non-empty array, a rule without both names.
 */
export function readAccessFilter(value: unknown): { ownerOnly: boolean; rules: AccessRule[] } {
  if (value === null) return { ownerOnly: false, rules: [] };
  const type = (value as { type?: unknown } | undefined)?.type;
  if (type === 'ownerOnly') return { ownerOnly: true, rules: [] };
  if (type !== 'property') {
    throw problems.user.unexpectedValue({ field: 'accessFilter.type', value: type, reason: 'type must be ownerOnly or property.' });
  }
  const rules = (value as { rules?: unknown }).rules;
  if (!Array.isArray(rules) || rules.length === 0) {
    throw problems.user.unexpectedValue({ field: 'accessFilter.rules', value: rules, reason: 'rules must be a non-empty array.' });
  }
  for (const rule of rules as Array<Record<string, unknown> | null>) {
    if (typeof rule?.datasetProperty !== 'string' || rule.datasetProperty === ''
      || typeof rule.actorProperty !== 'string' || rule.actorProperty === '') {
      throw problems.user.unexpectedValue({ field: 'accessFilter.rules', value: rule, reason: 'Each rule must have datasetProperty and actorProperty.' });
    }
  }
  return { ownerOnly: false, rules: (rules as AccessRule[]).map((r) => ({ datasetProperty: r.datasetProperty, actorProperty: r.actorProperty })) };
}

/**
 * Replaces a Dataset's rules. As Central, a rule naming a property the Dataset has not published
 * or an actor property the project does not define is left out, and duplicates collapse.
 * Inside the caller's transaction. Effects: dataset_access_filters rows.
 */
export async function replaceAccessRules(tx: Ctx, datasetId: number, rules: AccessRule[]): Promise<void> {
  await tx.db.delete(datasetAccessFilters).where(eq(datasetAccessFilters.datasetId, datasetId));
  for (const r of rules) {
    await tx.db.execute(sql`insert into dataset_access_filters (dataset_id, dataset_property_id, actor_property_id)
      select ${datasetId}, dp.id, ap.id from ds_properties dp
      join datasets d on d.id = dp.dataset_id
      join actor_properties ap on ap.project_id = d.project_id and ap.name = ${r.actorProperty}
      where dp.dataset_id = ${datasetId} and dp.name = ${r.datasetProperty} and dp.published_at is not null and dp.deleted_at is null
      on conflict do nothing`);
  }
}

/** A Dataset's rules, by dataset property then actor property name. Reads only. */
export async function accessRules(ctx: Ctx, datasetId: number): Promise<AccessRule[]> {
  return ctx.db.select({ datasetProperty: dsProperties.name, actorProperty: actorProperties.name })
    .from(datasetAccessFilters)
    .innerJoin(dsProperties, eq(dsProperties.id, datasetAccessFilters.datasetPropertyId))
    .innerJoin(actorProperties, eq(actorProperties.id, datasetAccessFilters.actorPropertyId))
    .where(and(eq(datasetAccessFilters.datasetId, datasetId)))
    .orderBy(asc(dsProperties.name), asc(actorProperties.name));
}
