import { and, desc, eq, inArray, isNull, max, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { z } from 'zod';
import { actors, assignments, audits, fieldKeys, sessions, type ActorRow, type FieldKeyRow } from '../../drizzle/schema';
import { actorJson, insertActor, iso, type ActorJson } from '../actors';
import { audit } from '../audits/log';
import { canOrReject, type ActeeRef } from '../authz/can';
import { species } from '../authz/verbs';
import { withTx, type Ctx } from '../context';
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

export const CreateAppUserInput = z.object({ displayName: z.string().trim().min(1).max(255) });

const fieldKeyActee = (a: Pick<ActorRow, 'acteeId'>, projectActeeId: string): ActeeRef => ({
  acteeId: a.acteeId, species: species.fieldKey, parents: [projectActeeId],
});

/**
 * App Users of a project (GET P/app-users), live ones only, those with a token first, newest first.
 * Extended adds `createdBy` (Actor) and `lastUsed` (last submission by it, or null).
 * @throws 404.1 unknown project; 403.1 without field_key.list.
 */
export async function listAppUsers(
  ctx: Ctx,
  projectId: number,
  extended: boolean,
): Promise<Array<AppUserJson | (AppUserJson & { createdBy: ActorJson; lastUsed: string | null })>> {
  const project = await getProjectOrNotFound(ctx, projectId);
  await canOrReject(ctx, 'field_key.list', projectActee(project));
  const creator = alias(actors, 'creator');
  const rows = await ctx.db
    .select({ a: actors, k: fieldKeys, creator })
    .from(fieldKeys)
    .innerJoin(actors, eq(actors.id, fieldKeys.actorId))
    .innerJoin(creator, eq(creator.id, fieldKeys.createdBy))
    .where(and(eq(fieldKeys.projectId, project.id), isNull(actors.deletedAt)))
    .orderBy(sql`(${fieldKeys.token} is not null) desc`, desc(actors.createdAt), desc(actors.id));
  if (!extended) return rows.map((r) => appUserJson(r.a, r.k));
  const lastUsed = await lastUsedByActor(ctx, rows.map((r) => r.a.id));
  return rows.map((r) => ({ ...appUserJson(r.a, r.k), createdBy: actorJson(r.creator), lastUsed: lastUsed.get(r.a.id) ?? null }));
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
 * @param body `{ displayName }`.
 * @returns AppUserJson with the token. Effects: actee, actor, field_keys and a never-expiring
 *   session; audit `field_key.create`.
 * @throws 404.1; 403.1 without field_key.create; 400.2 no displayName.
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

/** One App User (GET P/app-users/{id}). @throws 404.1; 403.1 without field_key.list. */
export async function getAppUser(ctx: Ctx, projectId: number, actorId: number): Promise<AppUserJson> {
  const { project, a, k } = await getAppUserOrNotFound(ctx, projectId, actorId);
  await canOrReject(ctx, 'field_key.list', fieldKeyActee(a, project.acteeId));
  return appUserJson(a, k);
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
