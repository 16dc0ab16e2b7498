import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { actorProperties, actorPropertyValues, type ActorRow } from '../../drizzle/schema';
import { audit } from '../audits/log';
import { canOrReject } from '../authz/can';
import { withTx, type Ctx } from '../context';
import { problems } from '../problem';
import { getProjectOrNotFound, projectActee } from '../projects';

/**
 * Actor properties (Central: lib/resources/actor-properties.js, lib/data/actor-properties.js):
 * names a project defines, and the values App Users and public links carry for them.
 */

/** A property value map as the API shows it: name → value; null when the actor has none. */
export type ActorPropertiesJson = Record<string, string> | null;

/**
 * Whether a name may be an actor property: the rules of Entity property names (a letter or `_`
 * first, then letters, digits, `.`, `_`, `-`; not starting `__`; not `name` or `label`, any case),
 * and not `displayName` (any case). Pure.
 */
export function isValidActorPropertyName(name: string): boolean {
  const lower = name.toLowerCase();
  return lower !== 'displayname' && /^(?!__)(?!name$)(?!label$)[\p{L}_][\p{L}\d._-]*$/u.test(lower);
}

/**
 * Defines a property name in a project (POST P/actor-properties).
 * @param body `{ name }`.
 * Effects: an actor_properties row; audit `actor_property.create` on the project `{ name }`.
 * @throws 404.1 unknown project; 401.2/403.1 without actor_property.update on it; 400.8 a missing
 *   or invalid name (`{ field: 'name', value, reason }`); 409.3 the project has the name already.
 */
export async function createActorProperty(ctx: Ctx, projectId: number, body: unknown): Promise<void> {
  await withTx(ctx, async (tx) => {
    const project = await getProjectOrNotFound(tx, projectId);
    await canOrReject(tx, 'actor_property.update', projectActee(project));
    const name = body != null && typeof body === 'object' ? (body as Record<string, unknown>).name : undefined;
    if (typeof name !== 'string' || !isValidActorPropertyName(name)) {
      throw problems.user.unexpectedValue({ field: 'name', value: name, reason: 'This is not a valid property name.' });
    }
    const inserted = await tx.db.insert(actorProperties).values({ projectId: project.id, name }).onConflictDoNothing().returning();
    if (inserted.length === 0) {
      throw problems.user.uniquenessViolation({ fields: ['projectId', 'name'], values: [String(project.id), name], table: 'actor_properties' });
    }
    await audit(tx, tx, 'actor_property.create', project.acteeId, { name });
  });
}

/**
 * Property names of a project, by name (GET P/actor-properties): `[{ name }]`; extended
 * `[{ name, values }]` with the distinct values in use, sorted (`[]` when none).
 * @throws 404.1 unknown project; 401.2/403.1 without actor_property.list. Reads only.
 */
export async function listActorProperties(
  ctx: Ctx,
  projectId: number,
  extended: boolean,
): Promise<Array<{ name: string } | { name: string; values: string[] }>> {
  const project = await getProjectOrNotFound(ctx, projectId);
  await canOrReject(ctx, 'actor_property.list', projectActee(project));
  if (!extended) {
    const rows = await ctx.db.select({ name: actorProperties.name }).from(actorProperties)
      .where(eq(actorProperties.projectId, project.id)).orderBy(asc(actorProperties.name));
    return rows.map((r) => ({ name: r.name }));
  }
  const rows = await ctx.db
    .select({
      name: actorProperties.name,
      values: sql<string[]>`coalesce(array_agg(distinct ${actorPropertyValues.value} order by ${actorPropertyValues.value})
        filter (where ${actorPropertyValues.value} is not null), '{}')`,
    })
    .from(actorProperties)
    .leftJoin(actorPropertyValues, eq(actorPropertyValues.actorPropertyId, actorProperties.id))
    .where(eq(actorProperties.projectId, project.id))
    .groupBy(actorProperties.id)
    .orderBy(asc(actorProperties.name));
  return rows.map((r) => ({ name: r.name, values: r.values }));
}

/**
 * Checks a `properties` object from a request body against the project's names, as Central's
 * extractActorProperties: values are trimmed strings, and null, `''` or blank mean "unset".
 * @returns name → value or null (null-prototype object, in the order sent).
 * @throws 400.8 not an object (`field: 'properties'`), an unknown name (`field: 'properties', value: name`),
 *   a value neither string nor null (`field: name`). Reads the project's names.
 */
export async function parseActorProperties(ctx: Ctx, projectId: number, properties: unknown): Promise<Record<string, string | null>> {
  if (typeof properties !== 'object' || properties == null || Array.isArray(properties)) {
    throw problems.user.unexpectedValue({ field: 'properties', value: properties, reason: 'Must be an object.' });
  }
  const known = new Set((await ctx.db.select({ name: actorProperties.name }).from(actorProperties)
    .where(eq(actorProperties.projectId, projectId))).map((r) => r.name));
  const out: Record<string, string | null> = Object.create(null);
  for (const [name, value] of Object.entries(properties)) {
    if (!known.has(name)) throw problems.user.unexpectedValue({ field: 'properties', value: name, reason: 'Unknown property name.' });
    if (value !== null && typeof value !== 'string') {
      throw problems.user.unexpectedValue({ field: name, value, reason: 'Property values must be strings or null.' });
    }
    out[name] = value == null || value.trim() === '' ? null : value.trim();
  }
  return out;
}

/**
 * Sets and unsets an App User's or public link's property values (the `properties` of POST/PATCH
 * P/app-users and F/public-links). Call inside withTx, after the rights check.
 * @param actor the App User or public link (its type names the audit action).
 * @param properties a body's `properties` (validated here); undefined or null changes nothing.
 * Effects: upserts / deletes actor_property_values rows; when `properties` names anything, audit
 *   `field_key.property.set` / `public_link.property.set` on the actor `{ properties }` (the
 *   cleaned values, null for unset).
 * @throws 400.8 as parseActorProperties.
 */
export async function setActorProperties(
  tx: Ctx,
  projectId: number,
  actor: Pick<ActorRow, 'id' | 'type' | 'acteeId'>,
  properties: unknown,
): Promise<void> {
  if (properties == null) return;
  const values = await parseActorProperties(tx, projectId, properties);
  const entries = Object.entries(values);
  if (entries.length === 0) return;
  const ids = new Map((await tx.db.select().from(actorProperties).where(eq(actorProperties.projectId, projectId)))
    .map((p) => [p.name, p.id]));
  const unset = entries.filter(([, v]) => v == null).map(([n]) => ids.get(n)!);
  const set = entries.filter(([, v]) => v != null).map(([n, v]) => ({ actorId: actor.id, actorPropertyId: ids.get(n)!, value: v! }));
  if (unset.length > 0) {
    await tx.db.delete(actorPropertyValues)
      .where(and(eq(actorPropertyValues.actorId, actor.id), inArray(actorPropertyValues.actorPropertyId, unset)));
  }
  if (set.length > 0) {
    await tx.db.insert(actorPropertyValues).values(set)
      .onConflictDoUpdate({ target: [actorPropertyValues.actorId, actorPropertyValues.actorPropertyId], set: { value: sql`excluded.value` } });
  }
  await audit(tx, tx, `${actor.type}.property.set`, actor.acteeId, { properties: { ...values } });
}

/**
 * Property values of some actors, for extended App User and public link JSON.
 * @returns actor id → `{ name: value }`; actors without values are absent (show them as null). Reads only.
 */
export async function actorPropertiesOf(ctx: Ctx, actorIds: number[]): Promise<Map<number, Record<string, string>>> {
  const out = new Map<number, Record<string, string>>();
  if (actorIds.length === 0) return out;
  const rows = await ctx.db
    .select({ actorId: actorPropertyValues.actorId, name: actorProperties.name, value: actorPropertyValues.value })
    .from(actorPropertyValues)
    .innerJoin(actorProperties, eq(actorProperties.id, actorPropertyValues.actorPropertyId))
    .where(inArray(actorPropertyValues.actorId, actorIds))
    .orderBy(asc(actorPropertyValues.actorId), asc(actorProperties.id));
  for (const r of rows) {
    const props = out.get(r.actorId) ?? {};
    props[r.name] = r.value;
    out.set(r.actorId, props);
  }
  return out;
}
