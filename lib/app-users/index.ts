import { and, eq, inArray, isNull, max, sql, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import * as z from 'zod';
import { actors, assignments, audits, fieldKeys, sessions, type ActorRow, type FieldKeyRow } from '../../drizzle/schema';
import { actorPropertiesOf, setActorProperties, type ActorPropertiesJson } from '../actor-properties';
import { actorJson, insertActor, iso, type ActorJson } from '../actors';
import { audit } from '../audits/log';
import { canOrReject, type ActeeRef } from '../authz/can';
import { species } from '../authz/verbs';
import { withTx, type Ctx } from '../context';
import { keyset, keysetRead } from '../db/keyset';
import { mapBatches } from '../http/json-stream';
import { forgetSessions } from '../sessions/cache';
import { problems } from '../problem';
import { getProjectOrNotFound, projectActee } from '../projects';
import { createSession, NEVER } from '../sessions';
import { parseInput } from '../validation';

/** App User JSON in Central's key order: projectId, the Actor fields, token (null once revoked). */
export type AppUserJson = { projectId: number } & ActorJson & { token: string | null };

const appUserJson = (a: ActorRow, k: Pick<FieldKeyRow, 'projectId' | 'token'>): AppUserJson => ({
  projectId: k.projectId,
  ...actorJson(a),
  token: k.token,
});

/** POST P/app-users body: a displayName (trimmed, 1–255 characters); `properties` is read separately. */
export const CreateAppUserInput = z.object({ displayName: z.string().trim().min(1).max(255) });

const fieldKeyActee = (a: Pick<ActorRow, 'acteeId'>, projectActeeId: string): ActeeRef => ({
  acteeId: a.acteeId, species: species.fieldKey, parents: [projectActeeId],
});

/** Extended App User JSON: createdBy, lastUsed (last submission by it, or null), properties (or null). */
export type ExtendedAppUserJson = AppUserJson & { createdBy: ActorJson; lastUsed: string | null; properties: ActorPropertiesJson };

/** Central's order of App Users: with a token first, newest first (ties by id). */
const appUserOrder = keyset([
  { expr: sql`(${fieldKeys.token} is not null)`, type: 'boolean', desc: true },
  { expr: actors.createdAt, type: 'timestamptz', desc: true },
  { expr: actors.id, type: 'int', desc: true },
]);

/**
 * Live App Users of a project (or the one with `actorId`), in Central's order: with a token first,
 * newest first; `page` reads one keyset batch (`after`: appUserOrder's WHERE part).
 */
async function selectAppUsers(ctx: Ctx, projectId: number, actorId?: number, page?: { after: SQL | undefined; limit: number }) {
  const creator = alias(actors, 'creator');
  const query = ctx.db
    .select({ a: actors, k: fieldKeys, creator, ...appUserOrder.fields })
    .from(fieldKeys)
    .innerJoin(actors, eq(actors.id, fieldKeys.actorId))
    .innerJoin(creator, eq(creator.id, fieldKeys.createdBy))
    .where(and(eq(fieldKeys.projectId, projectId), isNull(actors.deletedAt), actorId == null ? undefined : eq(fieldKeys.actorId, actorId), page?.after))
    .orderBy(...appUserOrder.orderBy)
    .$dynamic();
  return page ? query.limit(page.limit) : query;
}

async function extendAppUsers(ctx: Ctx, rows: Awaited<ReturnType<typeof selectAppUsers>>): Promise<ExtendedAppUserJson[]> {
  const ids = rows.map((r) => r.a.id);
  const [lastUsed, properties] = [await lastUsedByActor(ctx, ids), await actorPropertiesOf(ctx, ids)];
  return rows.map((r) => ({
    ...appUserJson(r.a, r.k),
    createdBy: actorJson(r.creator),
    lastUsed: lastUsed.get(r.a.id) ?? null,
    properties: properties.get(r.a.id) ?? null,
  }));
}

/**
 * App Users of a project (GET P/app-users), live ones only, those with a token first, newest first.
 * Extended adds `createdBy` (Actor), `lastUsed` (last submission by it, or null) and `properties`
 * (`{ name: value }`, null when it has none). Read by keyset in batches of 1,000 (lib/db/keyset.ts),
 * each batch's extended fields in one query each, for a streamed answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of App User JSON.
 * @throws 404.1 unknown project; 403.1 without field_key.list (before the first batch). Reads only.
 */
export async function listAppUsers(ctx: Ctx, projectId: number, extended: boolean): Promise<AsyncGenerator<Array<AppUserJson | ExtendedAppUserJson>>> {
  const project = await getProjectOrNotFound(ctx, projectId);
  await canOrReject(ctx, 'field_key.list', projectActee(project));
  const rows = keysetRead(appUserOrder, (after, limit) => selectAppUsers(ctx, project.id, undefined, { after, limit }));
  return mapBatches(rows, (b) => (extended ? extendAppUsers(ctx, b) : b.map((r) => appUserJson(r.a, r.k))));
}

async function lastUsedByActor(ctx: Ctx, ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const rows = await ctx.db
    .select({ actorId: audits.actorId, at: max(audits.loggedAt) })
    .from(audits)
    .where(and(inArray(audits.actorId, ids), eq(audits.action, 'submission.create')))
    .groupBy(audits.actorId);
  return new Map(rows.filter((r) => r.at != null).map((r) => [r.actorId!, iso(r.at)!]));
}

/**
 * Creates an App User (POST P/app-users) with a fresh token; it has no rights until assigned to
 * forms (app-user role) or the project.
 * @param body `{ displayName, properties? }`; `properties` as PATCH P/app-users/{id}.
 * @returns AppUserJson with the token (without properties, as Central). Effects, in one
 *   transaction: actee, actor, field_keys and a never-expiring session; audit `field_key.create`;
 *   property values and audit `field_key.property.set` when properties are given.
 * @throws 404.1; 403.1 without field_key.create; 400.2 no displayName; 400.8 bad properties.
 */
export async function createAppUser(ctx: Ctx, projectId: number, body: unknown): Promise<AppUserJson> {
  const project = await getProjectOrNotFound(ctx, projectId);
  await canOrReject(ctx, 'field_key.create', projectActee(project));
  const input = parseInput(CreateAppUserInput, body);
  return withTx(ctx, async (tx) => {
    const actor = await insertActor(tx, { type: 'field_key', displayName: input.displayName, parentActeeId: project.acteeId });
    const session = await createSession(tx, actor.id, NEVER);
    const [key] = await tx.db
      .insert(fieldKeys)
      .values({ actorId: actor.id, projectId: project.id, createdBy: tx.auth.actor?.id ?? actor.id, token: session.token })
      .returning();
    await audit(tx, tx, 'field_key.create', actor.acteeId, null);
    await setActorProperties(tx, project.id, actor, (body as { properties?: unknown }).properties);
    return appUserJson(actor, key!);
  });
}

async function getAppUserOrNotFound(ctx: Ctx, projectId: number, actorId: number) {
  const project = await getProjectOrNotFound(ctx, projectId);
  const [row] = Number.isSafeInteger(actorId)
    ? await ctx.db
        .select({ a: actors, k: fieldKeys })
        .from(fieldKeys)
        .innerJoin(actors, eq(actors.id, fieldKeys.actorId))
        .where(and(eq(fieldKeys.actorId, actorId), eq(fieldKeys.projectId, project.id), isNull(actors.deletedAt)))
    : [];
  if (!row) throw problems.user.notFound();
  return { project, ...row };
}

/**
 * One App User (GET P/app-users/{id}); extended as in the listing (createdBy, lastUsed, properties).
 * @throws 404.1; 403.1 without field_key.list.
 */
export async function getAppUser(ctx: Ctx, projectId: number, actorId: number, extended = false): Promise<AppUserJson | ExtendedAppUserJson> {
  const { project, a, k } = await getAppUserOrNotFound(ctx, projectId, actorId);
  await canOrReject(ctx, 'field_key.list', fieldKeyActee(a, project.acteeId));
  if (!extended) return appUserJson(a, k);
  return (await extendAppUsers(ctx, await selectAppUsers(ctx, project.id, a.id)))[0]!;
}

/**
 * Sets and unsets an App User's property values (PATCH P/app-users/{id}).
 * @param body `{ properties?: { name: string | null } }`: a string sets (trimmed), null or blank
 *   unsets, names left out stay; no `properties` changes nothing.
 * @returns the extended App User JSON. Effects, in one transaction: actor_property_values rows;
 *   audit `field_key.property.set` `{ properties }` unless `properties` is empty.
 * @throws 404.1 unknown project or App User; 401.2/403.1 without field_key.update on the project;
 *   400.8 properties not an object, an unknown name or a non-string value.
 */
export async function updateAppUser(ctx: Ctx, projectId: number, actorId: number, body: unknown): Promise<ExtendedAppUserJson> {
  return withTx(ctx, async (tx) => {
    const project = await getProjectOrNotFound(tx, projectId);
    await canOrReject(tx, 'field_key.update', projectActee(project));
    const { a } = await getAppUserOrNotFound(tx, projectId, actorId);
    const properties = body != null && typeof body === 'object' ? (body as { properties?: unknown }).properties : undefined;
    await setActorProperties(tx, project.id, a, properties);
    return (await extendAppUsers(tx, await selectAppUsers(tx, project.id, a.id)))[0]!;
  });
}

/**
 * Deletes an App User (DELETE P/app-users/{id}): it disappears from listings, its token stops
 * working and its assignments go.
 * Effects: actors.deletedAt, sessions and assignments deleted, token cleared; audit `field_key.delete`.
 * @throws 404.1; 403.1 without field_key.delete.
 */
export async function deleteAppUser(ctx: Ctx, projectId: number, actorId: number): Promise<void> {
  await withTx(ctx, async (tx) => {
    const { project, a } = await getAppUserOrNotFound(tx, projectId, actorId);
    await canOrReject(tx, 'field_key.delete', fieldKeyActee(a, project.acteeId));
    const now = new Date();
    await tx.db.update(actors).set({ deletedAt: now, updatedAt: now }).where(eq(actors.id, a.id));
    await tx.db.update(fieldKeys).set({ token: null }).where(eq(fieldKeys.actorId, a.id));
    await tx.db.delete(sessions).where(eq(sessions.actorId, a.id));
    forgetSessions(tx);
    await tx.db.delete(assignments).where(eq(assignments.actorId, a.id));
    await audit(tx, tx, 'field_key.delete', a.acteeId, null);
  });
}
