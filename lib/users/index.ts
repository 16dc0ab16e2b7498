import { compare } from 'bcryptjs';
import { and, asc, desc, eq, ilike, isNull, ne, or, sql } from 'drizzle-orm';
import * as z from 'zod';
import { actors, assignments, sessions, users, type ActorRow, type UserRow } from '../../drizzle/schema';
import { actorJson, iso, insertActor, type ActorJson } from '../actors';
import { audit } from '../audits/log';
import { can, canOrReject, requireActor, speciesActee, verbsOn, type ActeeRef } from '../authz/can';
import { species } from '../authz/verbs';
import { withTx, type Ctx } from '../context';
import { keyset, keysetRead } from '../db/keyset';
import { arrayBatches, mapBatches } from '../http/json-stream';
import { composeMail, sendAfterCommit, type MailMessage } from '../mail';
import { getRoleOrNotFound } from '../roles';
import { createSession } from '../sessions';
import { forgetSessions } from '../sessions/cache';
import { problems } from '../problem';
import { parseInput } from '../validation';
import { checkPassword, hashPassword } from './password-rules';
import { preferencesOf } from './preferences';

/**
 * Where account mail links point: the server's public origin (PUBLIC_URL, else the request's). A
 * verb given none sends no mail (the CLI and start-up tasks, as Central's tasks send none).
 */
export interface MailOrigin {
  origin: string;
}

/** User JSON in Central's key order: email, lastLoginAt, then the Actor fields. */
export type UserJson = { email: string; lastLoginAt: string | null } & ActorJson;

/** User JSON (email, lastLoginAt, then the Actor fields) from the actors and users rows. Pure. */
export const userJson = (a: ActorRow, u: Pick<UserRow, 'email' | 'lastLoginAt'>): UserJson =>
  ({ email: u.email, lastLoginAt: iso(u.lastLoginAt), ...actorJson(a) });

const userActee = (a: Pick<ActorRow, 'acteeId'>): ActeeRef => ({ acteeId: a.acteeId, species: species.user });

const email = z.string().trim().min(1).max(320).regex(/^[^\s@]+@[^\s@]+$/, 'must be an email address');

export const CreateUserInput = z.object({
  email,
  /** Blank is no password, as Central (isPresent). */
  password: z.preprocess((v) => (v === '' ? undefined : v), z.unknown().optional()),
  displayName: z.string().trim().min(1).max(255).optional(),
});
export const UpdateUserInput = z.object({
  email: email.optional(),
  displayName: z.string().trim().min(1).max(255).optional(),
});

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
 * Creates a web user (POST /v1/users), as Central: with a password, the account can log in at once
 * and the person is told so by mail; without one, a single-use reset token is made and mailed as a
 * link to the UI's claim page, where they choose a password (POST /v1/users/reset/verify).
 * @param body `{ email, password?, displayName? }`; displayName defaults to the email; a blank
 *   password counts as none.
 * @param mail where links point; without it (CLI, seeds) no token is made and no mail is sent.
 * @returns UserJson. Effects, in one transaction: actee, actor and users rows; audit `user.create`
 *   `{ data: { actorId, email, password: null, lastLoginAt: null } }` (Central's User row), then
 *   with a password `user.update` `{ data: { password: true } }`; without one, the reset token (a
 *   singleUse actor, its pwreset grant and session). After commit: mail accountCreatedWithPassword
 *   or accountCreated (lib/mail).
 * @throws 403.1 without `user.create`; 400.2 when email is missing (reported as displayName, as
 *   Central's NOT NULL does); 400.11 for a non-string; 400.8 for a malformed email; 400.21/400.38/
 *   400.44 for a short, long or guessable password; 409.3 when a live user has the email.
 */
export async function createUser(ctx: Ctx, body: unknown, mail?: MailOrigin): Promise<UserJson> {
  await canOrReject(ctx, 'user.create', speciesActee(species.user));
  const raw = (body ?? {}) as Record<string, unknown>;
  if (raw.email == null && raw.displayName == null) throw problems.user.missingParameter({ field: 'displayName' });
  const input = parseInput(CreateUserInput, raw);
  if (input.password != null) await checkPassword(input.password);
  const outgoing: MailMessage[] = [];
  const json = await withTx(ctx, async (tx) => {
    await assertEmailFree(tx, input.email);
    const actor = await insertActor(tx, { type: 'user', displayName: input.displayName ?? input.email });
    const [user] = await tx.db.insert(users).values({ actorId: actor.id, email: input.email }).returning();
    await audit(tx, tx, 'user.create', actor.acteeId, {
      data: { actorId: actor.id, email: user!.email, password: null, lastLoginAt: null },
    });
    if (input.password != null) {
      await writePassword(tx, actor, await hashPassword(tx, input.password));
      if (mail) outgoing.push(composeMail('accountCreatedWithPassword', user!.email, mail.origin));
    } else if (mail) {
      const token = await provisionResetToken(tx, actor);
      outgoing.push(composeMail('accountCreated', user!.email, mail.origin, { token }));
    }
    return userJson(actor, user!);
  });
  await sendAfterCommit(ctx, outgoing);
  return json;
}

/**
 * Lists users (GET /v1/users), as Central: with `q` equal to a live user's email, that one user, to
 * any authenticated actor (so a project manager can find whom to assign). Otherwise `user.list` is
 * needed (others get `[]`): all live users by email, or with `q` those whose display name or email
 * contains it (LIKE wildcards in `q` taken literally) or resembles it (pg_trgm word_similarity +
 * similarity above 0.5, so "chelsea getodk" finds every getodk.org address), most similar first.
 * Read by keyset in batches (lib/db/keyset.ts), for a streamed answer (lib/http/json-stream.ts);
 * ties broken by actor id.
 * @returns an async generator of batches of UserJson. @throws 403.1 for anonymous requests (the app
 *   answers 401.2 before), before the first batch. Reads only.
 */
export async function listUsers(ctx: Ctx, q?: string): Promise<AsyncGenerator<UserJson[]>> {
  if (ctx.auth.actor == null && !ctx.system) throw problems.user.insufficientRights();
  if (q != null && q !== '') {
    const exact = await findUserByEmail(ctx, q);
    if (exact) return arrayBatches([userJson(exact.actor, exact.user)]);
  }
  if (!(await can(ctx, 'user.list', speciesActee(species.user)))) return arrayBatches([]);
  const live = and(eq(users.deleted, false), isNull(actors.deletedAt));
  const search = q != null && q !== '';
  const score = sql`greatest(
    word_similarity(${actors.displayName}, ${q ?? ''}::text) + similarity(${actors.displayName}, ${q ?? ''}::text),
    word_similarity(${users.email}, ${q ?? ''}::text) + similarity(${users.email}, ${q ?? ''}::text))`;
  const pattern = `%${escapeLike(q ?? '')}%`;
  const where = search ? and(live, or(sql`${score} > 0.5`, ilike(users.email, pattern), ilike(actors.displayName, pattern))) : live;
  const ks = keyset([
    ...(search ? [{ expr: score, type: 'real' as const, desc: true }] : []),
    { expr: users.email, type: 'text' }, { expr: actors.id, type: 'int' },
  ]);
  const rows = keysetRead(ks, (after, limit, offset) =>
    ctx.db.select({ actor: actors, user: users, ...ks.fields }).from(users).innerJoin(actors, eq(actors.id, users.actorId))
      .where(and(where, after)).orderBy(...ks.orderBy).limit(limit).offset(offset));
  return mapBatches(rows, (b) => b.map((r) => userJson(r.actor, r.user)));
}

// LIKE's default escape character is the backslash: escape it first, then the wildcards.
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
 * Updates displayName and/or email (PATCH /v1/users/{id}); other fields are ignored, as Central.
 * @returns UserJson. Effects: updates rows, sets updatedAt; audit `user.update` `{ data: changes }`;
 *   after commit, when the email changed, mail accountEmailChanged to the previous address.
 * @throws 404.1; 403.1 without `user.update` (self allowed); 400.x bad body; 409.3 email taken.
 */
export async function updateUser(ctx: Ctx, actorId: number, body: unknown): Promise<UserJson> {
  const outgoing: MailMessage[] = [];
  const json = await withTx(ctx, async (tx) => {
    const { actor, user } = await getUserOrNotFound(tx, actorId);
    await canOrReject(tx, 'user.update', userActee(actor));
    const input = parseInput(UpdateUserInput, body);
    const now = new Date();
    if (input.email != null) {
      await assertEmailFree(tx, input.email, actorId);
      await tx.db.update(users).set({ email: input.email }).where(eq(users.actorId, actorId));
      // Told at the old address, so the owner learns of a change they did not make.
      if (input.email !== user.email) {
        outgoing.push(composeMail('accountEmailChanged', user.email, '', { oldEmail: user.email, newEmail: input.email }));
      }
    }
    await tx.db
      .update(actors)
      .set({ updatedAt: now, ...(input.displayName != null ? { displayName: input.displayName } : {}) })
      .where(eq(actors.id, actorId));
    await audit(tx, tx, 'user.update', actor.acteeId, { data: input });
    const fresh = await getUserOrNotFound(tx, actorId);
    return userJson(fresh.actor, fresh.user);
  });
  await sendAfterCommit(ctx, outgoing);
  return json;
}

/**
 * Changes a password given the old one (PUT /v1/users/{id}/password), as Central: every other
 * session of the user ends (all of them when the request used Basic auth), and the user is told by
 * mail.
 * @param body `{ old, new }`.
 * Effects, in one transaction: new bcrypt hash, sessions deleted; audit `user.update`
 *   `{ data: { password: true } }`. After commit: mail accountPasswordChanged to the user.
 * @throws 404.1; 403.1 without `user.update` (self allowed); 401.2 when `old` is missing or wrong;
 *   400.2 when `new` is missing; 400.11/400.21/400.38/400.44 for a bad new password.
 */
export async function changePassword(ctx: Ctx, actorId: number, body: unknown): Promise<void> {
  const { actor, user } = await getUserOrNotFound(ctx, actorId);
  await canOrReject(ctx, 'user.update', userActee(actor));
  const raw = (body != null && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const old = raw.old;
  if (typeof old !== 'string' || old === '' || user.passwordHash == null || !(await compare(old, user.passwordHash))) {
    throw problems.user.authenticationFailed();
  }
  if (raw.new == null) throw problems.user.missingParameter({ field: 'new' });
  const passwordHash = await hashPassword(ctx, raw.new);
  const keep = ctx.auth.session?.tokenHash;
  await withTx(ctx, async (tx) => {
    await writePassword(tx, actor, passwordHash);
    await tx.db.delete(sessions).where(and(eq(sessions.actorId, actor.id), keep != null ? ne(sessions.tokenHash, keep) : undefined));
    forgetSessions(tx);
  });
  await sendAfterCommit(ctx, [composeMail('accountPasswordChanged', user.email, '')]);
}

/**
 * Sets a password without the old one: the CLI (`user-set-password`) runs it as the system.
 * @throws 400.11/400.21/400.38/400.44. Effects: hash, audit `user.update`
 *   `{ data: { password: true } }`; the user's sessions end. No mail.
 */
export async function setPasswordUnchecked(ctx: Ctx, actor: ActorRow, password: string): Promise<void> {
  const passwordHash = await hashPassword(ctx, password);
  await withTx(ctx, async (tx) => {
    await writePassword(tx, actor, passwordHash);
    await tx.db.delete(sessions).where(eq(sessions.actorId, actor.id));
    forgetSessions(tx);
  });
}

/**
 * Stores a password hash and audits `user.update` `{ data: { password: true } }`. The actor's
 * updatedAt stays as it is, as Central's updatePassword leaves it.
 */
async function writePassword(tx: Ctx, actor: Pick<ActorRow, 'id' | 'acteeId'>, passwordHash: string): Promise<void> {
  await tx.db.update(users).set({ passwordHash }).where(eq(users.actorId, actor.id));
  await audit(tx, tx, 'user.update', actor.acteeId, { data: { password: true } });
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

/** A single-use reset token lives this long (Central: one day). */
const RESET_TOKEN_HOURS = 24;

/**
 * Makes a single-use password reset token for a user, as Central: a `singleUse` actor (meta
 * `{ resetPassword: userActorId }`) holding the pwreset role (`user.password.reset`) on that user
 * only, and a session for it that expires in 24 hours. Its clear token is the Bearer credential
 * for POST /v1/users/reset/verify, which consumes it. Call inside withTx.
 * @returns the clear token (64 characters of [A-Za-z0-9!$]). Effects: actee, actor, assignment and
 *   session rows; no audit (Central audits neither).
 */
export async function provisionResetToken(tx: Ctx, user: Pick<ActorRow, 'id' | 'acteeId'>): Promise<string> {
  const single = await insertActor(tx, { type: 'singleUse', displayName: `Reset token for ${user.id}` });
  await tx.db.update(actors).set({ meta: { resetPassword: user.id } }).where(eq(actors.id, single.id));
  const role = await getRoleOrNotFound(tx, 'pwreset');
  await tx.db.insert(assignments).values({ actorId: single.id, roleId: role.id, acteeId: user.acteeId });
  const { token } = await createSession(tx, single.id, new Date(Date.now() + RESET_TOKEN_HOURS * 3_600_000));
  return token;
}

/**
 * Starts a password reset (POST /v1/users/reset/initiate), as Central. Anyone may ask; the answer
 * is the same whether the address has an account or not. With an account, a single-use token is
 * mailed as a claim link; for an address whose account was deleted, a mail says so; for an unknown
 * address nothing is sent. With `invalidate` (`?invalidate=true`, an administrator's "reset
 * password"), the current password also stops working at once and the user's sessions end.
 * @param body `{ email }`. @param mail where links point.
 * Effects, in one transaction: the reset token (provisionResetToken); with invalidate, password
 *   cleared, sessions deleted, audit `user.update` `{ data: { password: null } }`. After commit:
 *   mail accountReset (to the address as given) or accountResetDeleted.
 * @throws 400.2 `{ field: 'email' }` when email is missing or blank; 400.11 when it is not a string;
 *   403.1 with invalidate but without `user.password.invalidate` (on the user, or on users when
 *   there is no such account).
 */
export async function initiatePasswordReset(ctx: Ctx, body: unknown, invalidate: boolean, mail: MailOrigin): Promise<void> {
  const raw = (body != null && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const address = raw.email;
  if (address == null || address === '' || address === false || address === 0) throw problems.user.missingParameter({ field: 'email' });
  if (typeof address !== 'string') throw problems.user.invalidDataTypeOfParameter({ field: 'email', expected: 'string' });
  const found = await findUserByEmail(ctx, address);
  if (!found) {
    if (invalidate) await canOrReject(ctx, 'user.password.invalidate', speciesActee(species.user));
    if (await emailEverExisted(ctx, address)) await sendAfterCommit(ctx, [composeMail('accountResetDeleted', address, mail.origin)]);
    return;
  }
  if (invalidate) await canOrReject(ctx, 'user.password.invalidate', userActee(found.actor));
  const token = await withTx(ctx, async (tx) => {
    if (invalidate) {
      await tx.db.update(users).set({ passwordHash: null }).where(eq(users.actorId, found.actor.id));
      await tx.db.delete(sessions).where(eq(sessions.actorId, found.actor.id));
      forgetSessions(tx);
      await audit(tx, tx, 'user.update', found.actor.acteeId, { data: { password: null } });
    }
    return provisionResetToken(tx, found.actor);
  });
  await sendAfterCommit(ctx, [composeMail('accountReset', address, mail.origin, { token })]);
}

/** Whether any user, live or deleted, ever had this address (case-insensitive). Reads only. */
async function emailEverExisted(ctx: Ctx, address: string): Promise<boolean> {
  const [row] = await ctx.db.select({ one: sql<number>`1` }).from(users).where(sql`lower(${users.email}) = lower(${address})`).limit(1);
  return row != null;
}

/**
 * Sets a new password with a reset token (POST /v1/users/reset/verify), as Central: the request
 * authenticates with the token as Bearer (a singleUse actor made by provisionResetToken); the
 * password changes, every session of the user ends, and the token is consumed, so a replay gets
 * 401.2. Logged-in users cannot use this to skip the old password (403.1).
 * @param body `{ new }`.
 * Effects, in one transaction: new hash, audit `user.update` `{ data: { password: true } }`
 *   (the token's actor as actor); the user's sessions deleted; the singleUse actor deleted with its
 *   session and grant (not audited, as Central). No mail.
 * @throws 401.2 anonymous; 403.1 when the actor is not a reset token; 404.1 when its user is gone;
 *   403.1 without `user.password.reset` on the user; 400.2 when `new` is missing;
 *   400.11/400.21/400.38/400.44 for a bad password.
 */
export async function resetPasswordWithToken(ctx: Ctx, body: unknown): Promise<void> {
  const me = requireActor(ctx);
  const [row] = await ctx.db.select({ meta: actors.meta }).from(actors).where(eq(actors.id, me.id));
  const target = (row?.meta as { resetPassword?: unknown } | null)?.resetPassword;
  if (me.type !== 'singleUse' || typeof target !== 'number') throw problems.user.insufficientRights();
  const { actor } = await getUserOrNotFound(ctx, target);
  await canOrReject(ctx, 'user.password.reset', userActee(actor));
  const raw = (body != null && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  if (raw.new == null) throw problems.user.missingParameter({ field: 'new' });
  const passwordHash = await hashPassword(ctx, raw.new);
  await withTx(ctx, async (tx) => {
    await writePassword(tx, actor, passwordHash);
    await tx.db.delete(sessions).where(eq(sessions.actorId, actor.id));
    const now = new Date();
    await tx.db.update(actors).set({ deletedAt: now, updatedAt: now }).where(eq(actors.id, me.id));
    await tx.db.delete(sessions).where(eq(sessions.actorId, me.id));
    await tx.db.delete(assignments).where(eq(assignments.actorId, me.id));
    forgetSessions(tx);
  });
}
