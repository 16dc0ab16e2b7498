import { integer, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';

/**
 * Failed password checks (login and Basic auth), counted per submitted email and per client
 * address, in the database so the limit holds across serverless instances (lib/throttle).
 * `key` is `email:<lower-case email>` or `address:<ip>`; a row exists only after a failure.
 */
export const loginFailures = pgTable('login_failures', {
  key: text('key').primaryKey(),
  failures: integer('failures').notNull(),
  firstFailedAt: ts('first_failed_at').notNull(),
  lockedUntil: ts('locked_until'),
});

export type LoginFailureRow = typeof loginFailures.$inferSelect;
