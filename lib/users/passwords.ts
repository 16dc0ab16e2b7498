import { compare, hash } from 'bcryptjs';
import { and, eq, sql } from 'drizzle-orm';
import { actors, users } from '../../drizzle/schema';
import { toActor } from '../actors';
import type { Actor, Ctx } from '../context';
import { problems } from '../problem';

// A real bcrypt hash of a random string: comparing against it when the email is unknown keeps the
// response time the same, so timing does not tell which part of the credentials was wrong.
const DUMMY_HASH = '$2b$12$Q0p6w9dKQ1kC6b0rS3e8xO0m0sXv7b7sQqI0a4l7pP0JmQv8H9y0e';

/**
 * Central's password rules: at least 10 characters (400.21), at most 72 bytes, bcrypt's limit (400.38).
 * @throws Problem 400.21 / 400.38. Pure.
 */
export function checkPassword(password: string): void {
  if (password.length < 10) throw problems.user.passwordTooShort();
  if (new TextEncoder().encode(password).byteLength > 72) throw problems.user.passwordTooLong();
}

/** @returns the bcrypt hash of a password that passed checkPassword, at the configured cost. */
export async function hashPassword(ctx: Ctx, password: string): Promise<string> {
  checkPassword(password);
  return hash(password, ctx.config.BCRYPT_COST);
}

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
