import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';

/**
 * Deferred work one domain records for another in its own transaction (DESIGN, Reactions between
 * domains): e.g. `submission.approved` → entity processing in lib/entities. lib/jobs runs the
 * registered handler right after commit; a scheduled drain picks up whatever is left.
 * Pending = `done_at is null` (the conformance harness's QUEUE_PENDING_SQL).
 */
export const jobs = pgTable('jobs', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  action: text('action').notNull(),
  payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  attempts: integer('attempts').notNull().default(0),
  lastError: text('last_error'),
  doneAt: ts('done_at'),
}, (t) => [
  index('jobs_pending').on(t.id).where(sql`${t.doneAt} is null`),
]);

export type JobRow = typeof jobs.$inferSelect;
