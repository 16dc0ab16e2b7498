import { count, eq } from 'drizzle-orm';
import { actors, users } from '../../drizzle/schema';
import { grant, siteScope } from '../assignments';
import type { Ctx } from '../context';
import { problems } from '../problem';
import { createUser, findUserByEmail, setPasswordUnchecked, type UserJson } from './index';

/**
 * CLI `user-create`: creates a web user with a password, as the system.
 * @returns UserJson. @throws Problem 409.3 (email taken), 400.x (bad email or password).
 */
export async function createUserTask(ctx: Ctx, email: string, password: string): Promise<UserJson> {
  return createUser(ctx, { email, password });
}

/**
 * CLI `user-promote`: makes a user a site administrator (the admin role on '*').
 * @throws Problem 404.1 unknown email; 409.3 already an administrator. Effects: assignment + audit.
 */
export async function promoteUserTask(ctx: Ctx, email: string): Promise<void> {
  const found = await findUserByEmail(ctx, email);
  if (!found) throw problems.user.notFound();
  await grant(ctx, siteScope(), 'admin', found.actor.id);
}

/**
 * CLI `user-set-password`: sets a user's password without the old one.
 * @throws Problem 404.1 unknown email; 400.21/400.38 bad password.
 */
export async function setPasswordTask(ctx: Ctx, email: string, password: string): Promise<void> {
  const found = await findUserByEmail(ctx, email);
  if (!found) throw problems.user.notFound();
  await setPasswordUnchecked(ctx, found.actor, password);
}

/**
 * Start-up: when the database has no users and ADMIN_EMAIL / ADMIN_PASSWORD are set, creates that
 * administrator. @returns what happened, for the start-up message.
 */
export async function ensureFirstAdmin(ctx: Ctx): Promise<'exists' | 'created' | 'none'> {
  const [row] = await ctx.db.select({ n: count() }).from(users).innerJoin(actors, eq(actors.id, users.actorId));
  if ((row?.n ?? 0) > 0) return 'exists';
  const { ADMIN_EMAIL, ADMIN_PASSWORD } = ctx.config;
  if (!ADMIN_EMAIL || !ADMIN_PASSWORD) return 'none';
  await createUserTask(ctx, ADMIN_EMAIL, ADMIN_PASSWORD);
  await promoteUserTask(ctx, ADMIN_EMAIL);
  return 'created';
}
