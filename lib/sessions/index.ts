import { and, eq, gt, isNull, lte, sql } from 'drizzle-orm';
import { actees, actors, fieldKeys, sessions } from '../../drizzle/schema';
import { toActor } from '../actors';
import { audit } from '../audits/log';
import { sha256Hex } from '../blobs/hash';
import { canOrReject } from '../authz/can';
import { withTx, type Actor, type Ctx, type SessionInfo } from '../context';
import type { Db } from '../db/client';
import { prepared } from '../db/prepared';
import { problems } from '../problem';
import { parseInput } from '../validation';
import { markLoggedIn, verifyUserPassword } from '../users/passwords';
import { forgetSessions, generation, recall, remember } from './cache';
import { assertLoginAllowed, recordLoginFailure, recordLoginSuccess } from '../throttle';
import { generateToken, isValidToken } from './tokens';
import * as z from 'zod';

export { generateToken, isValidToken };
export { forgetSessions } from './cache';

/**
 * Session JSON as POST /v1/sessions answers it (central-api.yaml, Logging in), in Central's key
 * order (its Session frame: token, csrf, expiresAt, createdAt).
 */
export interface SessionJson {
  token: string;
  csrf: string;
  expiresAt: string;
  createdAt: string;
}

/** App User sessions never expire on their own (Central: year 9999); they end by revocation. */
export const NEVER = new Date('9999-12-31T23:59:59.000Z');

/**
 * Creates a session for an actor.
 * @param expiresAt when it ends (web users: now + SESSION_LIFETIME_HOURS; App Users: NEVER).
 * @returns the clear token (shown once) with csrf and times. Effects: inserts a sessions row holding
 *   only the token's SHA-256.
 */
export async function createSession(ctx: Ctx, actorId: number, expiresAt: Date): Promise<SessionJson> {
  const token = generateToken();
  const csrf = generateToken();
  const [row] = await ctx.db
    .insert(sessions)
    .values({ tokenHash: sha256Hex(token), actorId, csrf, expiresAt })
    .returning();
  return { token, csrf, expiresAt: row!.expiresAt.toISOString(), createdAt: row!.createdAt.toISOString() };
}

/**
 * Looks a presented token up: the live, unexpired session and its live actor.
 * @returns null for malformed, unknown, expired or deleted-actor tokens. Reads only.
 */
export async function findSession(ctx: Ctx, token: string): Promise<{ actor: Actor; session: SessionInfo } | null> {
  if (!isValidToken(token)) return null;
  const hash = sha256Hex(token);
  const cached = recall(ctx, hash);
  if (cached) return { actor: cached.actor, session: { ...cached.session, token } };
  const gen = generation(ctx);
  const [row] = await sessionQuery(ctx.db).execute({ hash, now: new Date().toISOString() });
  if (!row) return null;
  const session = { tokenHash: row.s.tokenHash, csrf: row.s.csrf, createdAt: row.s.createdAt, expiresAt: row.s.expiresAt };
  const actor = toActor(row.a);
  remember(ctx, hash, { actor, session }, gen);
  return { actor, session: { ...session, token } };
}

// Every authenticated request runs this lookup: prepared once per database handle (lib/db/prepared).
const sessionQuery = (db: Db) => prepared(db, 'find_session', (d) => d
  .select({ s: sessions, a: actors })
  .from(sessions)
  .innerJoin(actors, eq(actors.id, sessions.actorId))
  .where(and(eq(sessions.tokenHash, sql.placeholder('hash')), gt(sessions.expiresAt, sql.placeholder('now')), isNull(actors.deletedAt)))
  .prepare('find_session'));

/**
 * A password check behind the login throttle (lib/throttle), for POST /v1/sessions and Basic auth.
 * @param address the client's address (lib/http/client-address), or null.
 * @returns the user's Actor, or null for wrong credentials (counted as a failure).
 * @throws Problem 429.1 while locked, before bcrypt runs.
 * Effects: login_failures rows (a failure counted, or the email's count cleared on success).
 */
export async function checkPasswordThrottled(ctx: Ctx, email: string, password: string, address: string | null): Promise<Actor | null> {
  await assertLoginAllowed(ctx, email, address);
  const user = await verifyUserPassword(ctx, email, password);
  if (user) await recordLoginSuccess(ctx, email);
  else await recordLoginFailure(ctx, email, address);
  return user;
}

export const LoginInput = z.object({ email: z.string(), password: z.string() });

/**
 * Logs a web user in (POST /v1/sessions).
 * @param body `{ email, password }` as sent.
 * @returns SessionJson. Effects: a sessions row; audit `user.session.create` `{ userAgent }`;
 *   users.last_login_at set (Central's lastLoginAt).
 * @throws Problem 400.3 when email or password is missing, null or empty; 400.11 when the email is
 *   not a string; 401.2 on any wrong credential, a password that is not a string included (never
 *   saying which part); 429.1 while the email or client `address` is locked (lib/throttle).
 */
export async function logIn(ctx: Ctx, body: unknown, userAgent: string | null, address: string | null = null): Promise<SessionJson> {
  const raw = (body != null && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  if (raw.email == null || raw.password == null || raw.email === '' || raw.password === '') {
    const got: Record<string, unknown> = {};
    if (raw.email !== undefined) got.email = raw.email;
    if (raw.password !== undefined) got.password = raw.password;
    throw problems.user.missingParameters({ expected: ['email', 'password'], got });
  }
  // Central: an email of another type is a 400.11; a password of another type simply fails.
  if (typeof raw.email !== 'string') throw problems.user.invalidDataTypeOfParameter({ field: 'email', expected: 'string' });
  if (typeof raw.password !== 'string') throw problems.user.authenticationFailed();
  const { email, password } = parseInput(LoginInput, raw);
  const user = await checkPasswordThrottled(ctx, email, password, address);
  if (!user) throw problems.user.authenticationFailed();
  return withTx(ctx, async (tx) => {
    const expires = new Date(Date.now() + tx.config.SESSION_LIFETIME_HOURS * 3_600_000);
    const session = await createSession(tx, user.id, expires);
    await audit(tx, { ...tx, auth: { actor: user, session: null, via: 'basic' } }, 'user.session.create', user.acteeId, { userAgent });
    await markLoggedIn(tx, user.id);
    return session;
  });
}

/**
 * Ends a session by its token (DELETE /v1/sessions/{token}): logging out, or revoking an App User.
 * @throws Problem 403.1 when the token matches no session (Central does not say whether it exists)
 *   or the actor may not end it (`session.end` on its owner; a user may end its own).
 * Effects: deletes the session; for App Users and public links clears the shown token and audits
 *   `field_key.session.end` / `public_link.session.end` (user logouts are not audited, as Central).
 */
export async function endSession(ctx: Ctx, token: string): Promise<void> {
  await withTx(ctx, async (tx) => {
    const found = await findSession(tx, token);
    if (!found) throw problems.user.insufficientRights();
    const { actor } = found;
    const parents = actor.type === 'user' ? [] : await acteeAncestors(tx, actor.acteeId);
    await canOrReject(tx, 'session.end', { acteeId: actor.acteeId, species: actor.type, parents });
    await tx.db.delete(sessions).where(eq(sessions.tokenHash, found.session.tokenHash));
    forgetSessions(tx);
    if (actor.type === 'field_key') {
      await tx.db.update(fieldKeys).set({ token: null }).where(eq(fieldKeys.actorId, actor.id));
    }
    if (actor.type !== 'user') await audit(tx, tx, `${actor.type}.session.end`, actor.acteeId, null);
  });
}

/**
 * Ends the session the request authenticated with (DELETE /v1/sessions/current).
 * @throws Problem 404.1 when the request did not use a session (Basic auth); 401.2 when anonymous;
 *   403.1 for an App User (it may not end its own session, as Central: only its managers revoke it).
 * Effects: deletes that session row.
 */
export async function endCurrentSession(ctx: Ctx): Promise<void> {
  const actor = ctx.auth.actor;
  if (actor == null) throw problems.user.authenticationFailed();
  const s = ctx.auth.session;
  if (s == null) throw problems.user.notFound();
  if (actor.type !== 'user') {
    await canOrReject(ctx, 'session.end', { acteeId: actor.acteeId, species: actor.type, parents: await acteeAncestors(ctx, actor.acteeId) });
  }
  await ctx.db.delete(sessions).where(eq(sessions.tokenHash, s.tokenHash));
  forgetSessions(ctx);
}

/**
 * The current session (GET /v1/sessions/restore), for a browser reloading the UI (its cookie), or
 * any session token (Bearer, an App User or public link key, as Central: `/v1/key/{token}/sessions/restore`
 * shows an App User's year-9999 expiry): `{ createdAt, expiresAt }` only, as Central answers. The token
 * stays in its HttpOnly cookie (page scripts never see it); the CSRF token is in the readable `__csrf` cookie.
 * @throws 401.2 without a session (anonymous, Basic).
 */
export function restoreSession(ctx: Ctx): { createdAt: string; expiresAt: string } {
  const s = ctx.auth.session;
  if (s == null) throw problems.user.authenticationFailed();
  return { createdAt: s.createdAt.toISOString(), expiresAt: s.expiresAt.toISOString() };
}

/**
 * The actees an App User or public link lives in (its project; a public link's form, then the
 * form's project), so project managers may revoke them as in Central (rights on an actee's parents apply).
 */
async function acteeAncestors(ctx: Ctx, acteeId: string): Promise<string[]> {
  const out: string[] = [];
  let current = acteeId;
  for (let depth = 0; depth < 2; depth++) {
    const [row] = await ctx.db.select({ parent: actees.parent }).from(actees).where(eq(actees.id, current));
    if (row?.parent == null) break;
    out.push(row.parent);
    current = row.parent;
  }
  return out;
}

/**
 * Deletes expired sessions (a maintenance job: CLI `sessions-purge`, a cron trigger on Workers).
 * Expired sessions already fail authentication; this only keeps the table small.
 * @returns how many rows were deleted. Effects: deletes `sessions` rows; no audit.
 */
export async function purgeExpiredSessions(ctx: Ctx, now = new Date()): Promise<number> {
  const deleted = await ctx.db.delete(sessions).where(lte(sessions.expiresAt, now)).returning({ t: sessions.tokenHash });
  return deleted.length;
}
