import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import { actors } from './actors';

/** The server audit log: one row per mutation, written in the mutation's own transaction. */
export const audits = pgTable('audits', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  /** null for actions of the system itself (the CLI, start-up). */
  actorId: integer('actor_id').references(() => actors.id),
  action: text('action').notNull(),
  acteeId: text('actee_id'),
  details: jsonb('details'),
  /** X-Action-Notes, where an endpoint takes them. */
  notes: text('notes'),
  loggedAt: ts('logged_at').notNull().defaultNow(),
}, (t) => [
  index('audits_logged_at').on(t.loggedAt),
  index('audits_actee_id_logged_at').on(t.acteeId, t.loggedAt),
  // The newest audit id of an actee (a Dataset's entity list hash, lib/datasets/entity-lists.ts) in one index probe.
  index('audits_actee_id_id').on(t.acteeId, t.id),
  index('audits_actor_id_logged_at').on(t.actorId, t.loggedAt),
  index('audits_action_logged_at').on(t.action, t.loggedAt),
  // S/audits: a submission's own entries (details.submissionId, as Central records them).
  index('audits_submission_id').on(sql`((${t.details} ->> 'submissionId')::int)`).where(sql`${t.details} ? 'submissionId'`),
]);

export type AuditRow = typeof audits.$inferSelect;
