import { compare } from 'bcryptjs';
import { and, asc, eq, ilike, isNull, or, sql } from 'drizzle-orm';
import { z } from 'zod';
import { actors, assignments, sessions, users, type ActorRow, type UserRow } from '../../drizzle/schema';
import { actorJson, insertActor, type ActorJson } from '../actors';
import { audit } from '../audits/log';
import { can, canOrReject, requireActor, speciesActee, verbsOn, type ActeeRef } from '../authz/can';
import { species } from '../authz/verbs';
import { withTx, type Ctx } from '../context';
import { forgetSessions } from '../sessions/cache';
import { problems } from '../problem';
import { parseInput } from '../validation';
import { checkPassword, hashPassword } from './passwords';
import { preferencesOf } from './preferences';

/** User JSON in Central's key order: email first, then the Actor fields. */
export type UserJson = { email: string } & ActorJson;

/** User JSON (email, then the Actor fields) from the actors and users rows. Pure. */
export const userJson = (a: ActorRow, u: Pick<UserRow, 'email'>): UserJson => ({ email: u.email, ...actorJson(a) });

const userActee = (a: Pick<ActorRow, 'acteeId'>): ActeeRef => ({ acteeId: a.acteeId, species: species.user });

const email = z.string().trim().min(1).max(320).regex(/^[^\s@]+@[^\s@]+$/, 'must be an email address');

export const CreateUserInput = z.object({
  email,
  password: z.string().optional(),
  displayName: z.string().trim().min(1).max(255).optional(),
});
export const UpdateUserInput = z.object({
  email: email.optional(),
  displayName: z.string().trim().min(1).max(255).optional(),
});
export const SetPasswordInput = z.object({ old: z.string(), new: z.string() });

const emailTaken = (value: string) =>
  problems.user.uniquenessViolation({ fields: ['email', 'deleted'], values: [value, 'false'], table: 'users' });

async function assertEmailFree(ctx: Ctx, value: string, exceptActorId?: number): Promise<void> {
  const holder = await findUserByEmail(ctx, value);
  if (holder && holder.actor.id !== exceptActorId) throw emailTaken(value);
}

/** Loads a live user by actor id. @throws Problem 404.1. Reads only. */
export async function getUserOrNotFound(ctx: Ctx, actorId: number): Promise<{ actor: ActorRow; user: UserRow }> {
  const [row] = Number.isSafeInteger(actorId)
    ? await ctx.db
        .select({ actor: actors, user: users })
        .from(users)
        .innerJoin(actors, eq(actors.id, users.actorId))
        .where(and(eq(users.actorId, actorId), isNull(actors.deletedAt)))
    : [];
  if (!row) throw problems.user.notFound();
  return row;
}

/** Loads a live user by email (case-insensitive). @returns null when there is none. */
export async function findUserByEmail(ctx: Ctx, value: string): Promise<{ actor: ActorRow; user: UserRow } | null> {
  const [row] = await ctx.db
    .select({ actor: actors, user: users })
    .from(users)
    .innerJoin(actors, eq(actors.id, users.actorId))
    .where(and(sql`lower(${users.email}) = lower(${value})`, eq(users.deleted, false)));
  return row ?? null;
}

/**
 * Creates a web user (POST /v1/users). Without a password the account cannot log in until one is
 * set (Central e-mails a claim link; Fieldbase sends no e-mail: set it with the CLI or PUT password).
 * @param body `{ email, password?, displayName? }`; displayName defaults to the email.
 * @returns UserJson. Effects: actee, actor and users rows; audit `user.create` `{ data }`.
 * @throws 401.2/403.1 without `user.create`; 400.2 when email is missing (reported as displayName,
 *   as Central's NOT NULL does); 400.11 for a non-string; 400.8 for a malformed email; 400.21/400.38
 *   for a bad password; 409.3 when a live user has the email.
 */
export async function createUser(ctx: Ctx, body: unknown): Promise<UserJson> {
  await canOrReject(ctx, 'user.create', speciesActee(species.user));
  const raw = (body ?? {}) as Record<string, unknown>;
  if (raw.email == null && raw.displayName == null) throw problems.user.missingParameter({ field: 'displayName' });
  const input = parseInput(CreateUserInput, raw);
  if (input.password != null) checkPassword(input.password);
  return withTx(ctx, async (tx) => {
    await assertEmailFree(tx, input.email);
    const passwordHash = input.password != null ? await hashPassword(tx, input.password) : null;
    const actor = await insertActor(tx, { type: 'user', displayName: input.displayName ?? input.email });
    const [user] = await tx.db.insert(users).values({ actorId: actor.id, email: input.email, passwordHash }).returning();
    const json = userJson(actor, user!);
    await audit(tx, tx, 'user.create', actor.acteeId, { data: { email: json.email, displayName: json.displayName } });
    return json;
  });
}

/**
 * Lists users (GET /v1/users). `q` equal to an existing email returns that one user to any
 * authenticated actor (so managers can pick whom to assign); otherwise `user.list` is needed and
 * actors without it get `[]`. With `q`, matches email or display name containing it, best first.
 * @returns UserJson[] sorted by email. @throws Problem 403.1 for anonymous requests (Central).
 */
export async function listUsers(ctx: Ctx, q?: string): Promise<UserJson[]> {
  if (ctx.auth.actor == null && !ctx.system) throw problems.user.insufficientRights();
  if (q != null && q !== '') {
    const exact = await findUserByEmail(ctx, q);
    if (exact) return [userJson(exact.actor, exact.user)];
  }
  if (!(await can(ctx, 'user.list', speciesActee(species.user)))) return [];
  const base = ctx.db.select({ actor: actors, user: users }).from(users).innerJoin(actors, eq(actors.id, users.actorId));
  const rows = q
    ? await base
        .where(and(eq(users.deleted, false), or(ilike(users.email, `%${escapeLike(q)}%`), ilike(actors.displayName, `%${escapeLike(q)}%`))))
        .orderBy(sql`least(nullif(strpos(lower(${users.email}), lower(${q})), 0), nullif(strpos(lower(${actors.displayName}), lower(${q})), 0))`, asc(users.email))
    : await base.where(eq(users.deleted, false)).orderBy(asc(users.email));
  return rows.map((r) => userJson(r.actor, r.user));
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (m) => `\\${m}`);

/**
 * One user (GET /v1/users/{id}). @throws 404.1 unknown/deleted; 403.1 without `user.read` (a user may
 * always read itself).
 */
export async function getUser(ctx: Ctx, actorId: number): Promise<UserJson> {
  const { actor, user } = await getUserOrNotFound(ctx, actorId);
  await canOrReject(ctx, 'user.read', userActee(actor));
  return userJson(actor, user);
}

/**
 * The authenticated user (GET /v1/users/current); extended adds `verbs` (site-wide) and
 * `preferences` first, as Central orders them.
 * @throws 401.2 anonymous; 404.1 when the actor is not a web user (an App User).
 */
export async function getCurrentUser(ctx: Ctx, extended: boolean): Promise<UserJson | ({ verbs: string[]; preferences: unknown } & UserJson)> {
  const me = requireActor(ctx);
  if (me.type !== 'user') throw problems.user.notFound();
  const { actor, user } = await getUserOrNotFound(ctx, me.id);
  const json = userJson(actor, user);
  if (!extended) return json;
  const verbs = [...(await verbsOn(ctx, speciesActee(species.all)))];
  return { verbs, preferences: await preferencesOf(ctx, me.id), ...json };
}

/**
 * Updates displayName and/or email (PATCH /v1/users/{id}).
 * @returns UserJson. Effects: updates rows, sets updatedAt; audit `user.update` `{ data: changes }`.
 * @throws 404.1; 403.1 without `user.update` (self allowed); 400.x bad body; 409.3 email taken.
 */
export async function updateUser(ctx: Ctx, actorId: number, body: unknown): Promise<UserJson> {
  return withTx(ctx, async (tx) => {
    const { actor } = await getUserOrNotFound(tx, actorId);
    await canOrReject(tx, 'user.update', userActee(actor));
    const input = parseInput(UpdateUserInput, body);
    const now = new Date();
    if (input.email != null) {
      await assertEmailFree(tx, input.email, actorId);
      await tx.db.update(users).set({ email: input.email }).where(eq(users.actorId, actorId));
    }
    await tx.db
      .update(actors)
      .set({ updatedAt: now, ...(input.displayName != null ? { displayName: input.displayName } : {}) })
      .where(eq(actors.id, actorId));
    await audit(tx, tx, 'user.update', actor.acteeId, { data: input });
    const fresh = await getUserOrNotFound(tx, actorId);
    return userJson(fresh.actor, fresh.user);
  });
}

/**
 * Changes a password given the old one (PUT /v1/users/{id}/password).
 * @param body `{ old, new }`.
 * Effects: new bcrypt hash, updatedAt; audit `user.update` `{ data: { password: true } }`.
 * @throws 404.1; 403.1 without `user.update` (self allowed); 400.2 missing fields; 401.2 when `old`
 *   is wrong; 400.21/400.38 for a bad new password.
 */
export async function changePassword(ctx: Ctx, actorId: number, body: unknown): Promise<void> {
  const { actor, user } = await getUserOrNotFound(ctx, actorId);
  await canOrReject(ctx, 'user.update', userActee(actor));
  const input = parseInput(SetPasswordInput, body);
  if (user.passwordHash == null || !(await compare(input.old, user.passwordHash))) {
    throw problems.user.authenticationFailed();
  }
  await setPasswordUnchecked(ctx, actor, input.new);
}

/**
 * Sets a password without the old one: the CLI (`user-set-password`) runs it as the system.
 * @throws 400.21/400.38. Effects as changePassword.
 */
export async function setPasswordUnchecked(ctx: Ctx, actor: ActorRow, password: string): Promise<void> {
  const passwordHash = await hashPassword(ctx, password);
  await withTx(ctx, async (tx) => {
    await tx.db.update(users).set({ passwordHash }).where(eq(users.actorId, actor.id));
    await tx.db.update(actors).set({ updatedAt: new Date() }).where(eq(actors.id, actor.id));
    await audit(tx, tx, 'user.update', actor.acteeId, { data: { password: true } });
  });
}

/**
 * Deletes a user (DELETE /v1/users/{id}): the record stays (its name still shows on what it did),
 * but it can no longer log in, its sessions end, its assignments go, and its email is free again.
 * Effects: actors.deletedAt, users.deleted, sessions and assignments removed; audit `user.delete`.
 * @throws 404.1; 403.1 without `user.delete`.
 */
export async function deleteUser(ctx: Ctx, actorId: number): Promise<void> {
  await withTx(ctx, async (tx) => {
    const { actor } = await getUserOrNotFound(tx, actorId);
    await canOrReject(tx, 'user.delete', userActee(actor));
    const now = new Date();
    await tx.db.update(actors).set({ deletedAt: now, updatedAt: now }).where(eq(actors.id, actorId));
    await tx.db.update(users).set({ deleted: true }).where(eq(users.actorId, actorId));
    await tx.db.delete(sessions).where(eq(sessions.actorId, actorId));
    forgetSessions(tx);
    await tx.db.delete(assignments).where(eq(assignments.actorId, actorId));
    await audit(tx, tx, 'user.delete', actor.acteeId, null);
  });
}

/**
 * Starts a password reset (POST /v1/users/reset/initiate). Anyone may ask; the answer never says
 * whether the email has an account. Fieldbase has no mail transport yet, so the request is logged
 * (an administrator sets a password with the CLI or PUT …/password); with `invalidate` the current
 * password stops working at once.
 * @param body `{ email }`. @param invalidate `?invalidate=true`.
 * Effects with invalidate: password cleared, the user's sessions ended; audit `user.update`
 *   `{ data: { password: null } }`.
 * @throws 400.2 no email; 401.2/403.1 with invalidate but without `user.password.invalidate`.
 */
export async function initiatePasswordReset(ctx: Ctx, body: unknown, invalidate: boolean): Promise<void> {
  const { email: address } = parseInput(z.object({ email: z.string().trim().min(1) }), body);
  const found = await findUserByEmail(ctx, address);
  if (invalidate) {
    await canOrReject(ctx, 'user.password.invalidate', found ? userActee(found.actor) : speciesActee(species.user));
    if (found) {
      await withTx(ctx, async (tx) => {
        await tx.db.update(users).set({ passwordHash: null }).where(eq(users.actorId, found.actor.id));
        await tx.db.delete(sessions).where(eq(sessions.actorId, found.actor.id));
        forgetSessions(tx);
        await audit(tx, tx, 'user.update', found.actor.acteeId, { data: { password: null } });
      });
    }
  }
  ctx.log.warn('password reset requested; no mail transport is configured, so no email was sent', {
    requestId: ctx.requestId, accountExists: found != null, invalidated: invalidate && found != null,
  });
}
