import { sql } from 'drizzle-orm';
import { boolean, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import { actors } from './actors';

/** Web users: an actor of type 'user' with an email and a bcrypt password hash. */
export const users = pgTable('users', {
  actorId: integer('actor_id').primaryKey().references(() => actors.id),
  email: text('email').notNull(),
  /** Null until a password is set (a user created without one cannot log in). */
  passwordHash: text('password_hash'),
  /** Mirrors actors.deleted_at so that only live users reserve an email (Central's (email, deleted) key). */
  deleted: boolean('deleted').notNull().default(false),
  /** Set by each login through POST /v1/sessions (Central's lastLoginAt); null until the first. */
  lastLoginAt: ts('last_login_at'),
}, (t) => [
  uniqueIndex('users_email_live').on(sql`lower(${t.email})`).where(sql`${t.deleted} = false`),
]);

export type UserRow = typeof users.$inferSelect;
