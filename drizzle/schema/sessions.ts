import { index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import { actors } from './actors';

/**
 * Bearer sessions for users and App Users. Only the SHA-256 of the token is stored: a database
 * leak does not hand out live credentials.
 */
export const sessions = pgTable('sessions', {
  tokenHash: text('token_hash').primaryKey(),
  actorId: integer('actor_id').notNull().references(() => actors.id),
  csrf: text('csrf').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  expiresAt: ts('expires_at').notNull(),
}, (t) => [index('sessions_actor_id').on(t.actorId)]);

export type SessionRow = typeof sessions.$inferSelect;
