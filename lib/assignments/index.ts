import { and, eq, isNull } from 'drizzle-orm';
import { actors, assignments, forms, type ActorRow, type RoleRow } from '../../drizzle/schema';
import { actorJson, findLiveActor, type ActorJson } from '../actors';
import { audit } from '../audits/log';
import { canOrReject, speciesActee, type ActeeRef } from '../authz/can';
import { species } from '../authz/verbs';
import { withTx, type Ctx } from '../context';
import { keyset, keysetRead } from '../db/keyset';
import { mapBatches } from '../http/json-stream';
import { problems } from '../problem';
import { formActee, getFormOrNotFound } from '../forms/queries';
import { getProjectOrNotFound, projectActee } from '../projects';
import { getRoleOrNotFound } from '../roles';
import { canAssignRole } from './rules';

/**
 * Where an assignment applies: the whole site ('*'), a project, or a form. `scope.actee` is what
 * rights are checked on; `scope.acteeId` is stored on the assignment.
 */
export interface Scope {
  acteeId: string;
  actee: ActeeRef;
}

const siteActee = speciesActee(species.all);

/** The site-wide scope (/v1/assignments). */
export const siteScope = (): Scope => ({ acteeId: species.all, actee: siteActee });

/** A project's scope (P/assignments). @throws 404.1 for an unknown project. */
export async function projectScope(ctx: Ctx, projectId: number): Promise<Scope> {
  const project = await getProjectOrNotFound(ctx, projectId);
  return { acteeId: project.acteeId, actee: projectActee(project) };
}

/** A form's scope (F/assignments). @throws 404.1 for an unknown project or form. */
export async function formScope(ctx: Ctx, projectId: number, xmlFormId: string): Promise<Scope> {
  const loaded = await getFormOrNotFound(ctx, projectId, xmlFormId);
  return { acteeId: loaded.form.acteeId, actee: formActee(loaded) };
}

/**
 * Assignments in a scope (GET /v1/assignments, P/assignments, F/assignments), by actor then role.
 * Read by keyset in batches of 1,000 (lib/db/keyset.ts) for a streamed answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of `{ actorId, roleId }`, or extended `{ actorId, roleId,
 *   actor }` (Central's key order). @throws 403.1 without assignment.list (before the first batch). Reads only.
 */
export async function listAssignments(ctx: Ctx, scope: Scope, extended: boolean): Promise<AsyncGenerator<Array<Record<string, unknown>>>> {
  await canOrReject(ctx, 'assignment.list', scope.actee);
  const ks = keyset([{ expr: assignments.actorId, type: 'int' }, { expr: assignments.roleId, type: 'int' }]);
  const rows = keysetRead(ks, (after, limit) => ctx.db
    .select({ a: assignments, actor: actors, ...ks.fields })
    .from(assignments)
    .innerJoin(actors, eq(actors.id, assignments.actorId))
    .where(and(eq(assignments.acteeId, scope.acteeId), isNull(actors.deletedAt), after))
    .orderBy(...ks.orderBy).limit(limit));
  return mapBatches(rows, (b) => b.map((r) => (extended ? { actorId: r.a.actorId, roleId: r.a.roleId, actor: actorJson(r.actor) } : { actorId: r.a.actorId, roleId: r.a.roleId })));
}

/**
 * Actors holding one role in a scope (GET …/assignments/{roleId}; roleId numeric or system name), by
 * id. Read by keyset in batches of 1,000 for a streamed answer.
 * @returns an async generator of batches of ActorJson. @throws 404.1 unknown role; 403.1 without
 *   assignment.list (before the first batch). Reads only.
 */
export async function listActorsWithRole(ctx: Ctx, scope: Scope, roleIdOrSystem: string): Promise<AsyncGenerator<ActorJson[]>> {
  const role = await getRoleOrNotFound(ctx, roleIdOrSystem);
  await canOrReject(ctx, 'assignment.list', scope.actee);
  const ks = keyset([{ expr: actors.id, type: 'int' }]);
  const rows = keysetRead(ks, (after, limit) => ctx.db
    .select({ actor: actors, ...ks.fields })
    .from(assignments)
    .innerJoin(actors, eq(actors.id, assignments.actorId))
    .where(and(eq(assignments.acteeId, scope.acteeId), eq(assignments.roleId, role.id), isNull(actors.deletedAt), after))
    .orderBy(...ks.orderBy).limit(limit));
  return mapBatches(rows, (b) => b.map((r) => actorJson(r.actor)));
}

async function loadGrant(ctx: Ctx, roleIdOrSystem: string, actorId: number): Promise<{ role: RoleRow; actor: ActorRow }> {
  const role = await getRoleOrNotFound(ctx, roleIdOrSystem);
  const actor = await findLiveActor(ctx, actorId);
  if (!actor) throw problems.user.notFound();
  return { role, actor };
}

/**
 * Grants a role to an actor in a scope (POST …/assignments/{roleId}/{actorId}; any body ignored).
 * Effects: an assignments row; audit `{type}.assignment.create` on the assignee `{ roleId, grantedActeeId }`.
 * @throws 404.1 unknown role/actor; 403.1 without assignment.create or when the granter lacks a verb
 *   of the role; 409.3 when the actor already holds it there.
 */
export async function grant(ctx: Ctx, scope: Scope, roleIdOrSystem: string, actorId: number): Promise<void> {
  await withTx(ctx, async (tx) => {
    const { role, actor } = await loadGrant(tx, roleIdOrSystem, actorId);
    await canOrReject(tx, 'assignment.create', scope.actee);
    await canAssignRole(tx, role, scope.actee);
    const inserted = await tx.db
      .insert(assignments)
      .values({ actorId: actor.id, roleId: role.id, acteeId: scope.acteeId })
      .onConflictDoNothing()
      .returning();
    if (inserted.length === 0) {
      throw problems.user.uniquenessViolation({
        fields: ['actorId', 'roleId', 'acteeId'],
        values: [String(actor.id), String(role.id), scope.acteeId],
        table: 'assignments',
      });
    }
    if (actor.type !== 'singleUse') {
      await audit(tx, tx, `${actor.type}.assignment.create`, actor.acteeId, { roleId: role.id, grantedActeeId: scope.acteeId });
    }
  });
}

/**
 * Revokes a role from an actor in a scope (DELETE …/assignments/{roleId}/{actorId}).
 * Effects: deletes the row; audit `{type}.assignment.delete` `{ roleId, revokedActeeId }`.
 * @throws 404.1 unknown role/actor or no such assignment; 403.1 without assignment.delete.
 */
export async function revoke(ctx: Ctx, scope: Scope, roleIdOrSystem: string, actorId: number): Promise<void> {
  await withTx(ctx, async (tx) => {
    const { role, actor } = await loadGrant(tx, roleIdOrSystem, actorId);
    await canOrReject(tx, 'assignment.delete', scope.actee);
    const deleted = await tx.db
      .delete(assignments)
      .where(and(eq(assignments.actorId, actor.id), eq(assignments.roleId, role.id), eq(assignments.acteeId, scope.acteeId)))
      .returning();
    if (deleted.length === 0) throw problems.user.notFound();
    if (actor.type !== 'singleUse') {
      await audit(tx, tx, `${actor.type}.assignment.delete`, actor.acteeId, { roleId: role.id, revokedActeeId: scope.acteeId });
    }
  });
}

/**
 * Every form assignment in a project (GET P/assignments/forms[/{roleId}]), on live forms, by actor
 * then role (then form). Read by keyset in batches of 1,000 (lib/db/keyset.ts) for a streamed
 * answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of `{ actorId, xmlFormId, roleId }`, extended `{ actor, xmlFormId, roleId }`.
 * @throws 404.1 unknown project or role; 403.1 without assignment.list on the project (before the first batch). Reads only.
 */
export async function listFormAssignments(
  ctx: Ctx,
  projectId: number,
  roleIdOrSystem: string | null,
  extended: boolean,
): Promise<AsyncGenerator<Array<Record<string, unknown>>>> {
  const scope = await projectScope(ctx, projectId);
  const role = roleIdOrSystem == null ? null : await getRoleOrNotFound(ctx, roleIdOrSystem);
  await canOrReject(ctx, 'assignment.list', scope.actee);
  const ks = keyset([{ expr: assignments.actorId, type: 'int' }, { expr: assignments.roleId, type: 'int' }, { expr: assignments.acteeId, type: 'text' }]);
  const rows = keysetRead(ks, (after, limit) => ctx.db
    .select({ a: assignments, actor: actors, xmlFormId: forms.xmlFormId, ...ks.fields })
    .from(assignments)
    .innerJoin(forms, and(eq(forms.acteeId, assignments.acteeId), eq(forms.projectId, projectId), isNull(forms.deletedAt)))
    .innerJoin(actors, eq(actors.id, assignments.actorId))
    .where(and(isNull(actors.deletedAt), role ? eq(assignments.roleId, role.id) : undefined, after))
    .orderBy(...ks.orderBy).limit(limit));
  return mapBatches(rows, (b) => b.map((r) => (extended
    ? { actor: actorJson(r.actor), xmlFormId: r.xmlFormId, roleId: r.a.roleId }
    : { actorId: r.a.actorId, xmlFormId: r.xmlFormId, roleId: r.a.roleId })));
}
