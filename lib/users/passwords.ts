import { compare } from 'bcryptjs';
import { and, eq, sql } from 'drizzle-orm';
import { actors, users } from '../../drizzle/schema';
import { toActor } from '../actors';
import type { Actor, Ctx } from '../context';

// A real bcrypt hash of a random string: comparing against it when the email is unknown keeps the
// response time the same, so timing does not tell which part of the credentials was wrong.
const DUMMY_HASH = '$2b$12$Q0p6w9dKQ1kC6b0rS3e8xO0m0sXv7b7sQqI0a4l7pP0JmQv8H9y0e';

/**
 * Checks an email and password against live users (login, Basic auth).
 * @returns the user's Actor, or null when the email is unknown, the user is deleted, has no
 *   password, or the password is wrong. Always runs one bcrypt comparison. Reads only.
 */
export async function verifyUserPassword(ctx: Ctx, email: string, password: string): Promise<Actor | null> {
  const [row] = await ctx.db
    .select({ a: actors, hash: users.passwordHash })
    .from(users)
    .innerJoin(actors, eq(actors.id, users.actorId))
    .where(and(sql`lower(${users.email}) = lower(${email})`, eq(users.deleted, false)));
  const ok = await compare(password, row?.hash ?? DUMMY_HASH);
  return ok && row?.hash != null ? toActor(row.a) : null;
}

/**
 * Records a successful login (POST /v1/sessions): users.last_login_at = now, as Central's
 * updateLastLoginAt (lib/http/sessions.js). Basic auth does not count, as in Central.
 * Effects: one update; no audit (the login itself is audited as user.session.create).
 */
export async function markLoggedIn(ctx: Ctx, actorId: number): Promise<void> {
  await ctx.db.update(users).set({ lastLoginAt: sql`clock_timestamp()` }).where(eq(users.actorId, actorId));
}
