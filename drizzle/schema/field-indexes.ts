import { integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { ts } from './_columns';

/**
 * Indexes the server built for OData `$filter`s on form fields (lib/odata/field-indexes.ts): one
 * expression index on submission_defs per (root_values path, kind), shared by every form with that
 * path, built CONCURRENTLY outside any request transaction and dropped when unused.
 */
export const submissionFieldIndexes = pgTable('submission_field_indexes', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  /** The key in submission_defs.root_values (`/q1`, `/group/field`). */
  path: text('path').notNull(),
  /** How the field compares: text, number (fb_field_number) or time (fb_field_time). */
  kind: text('kind', { enum: ['text', 'number', 'time'] }).notNull(),
  /** The index's name in PostgreSQL. */
  name: text('name').notNull(),
  state: text('state', { enum: ['pending', 'building', 'ready', 'failed'] }).notNull().default('pending'),
  requestedAt: ts('requested_at').notNull().defaultNow(),
  startedAt: ts('started_at'),
  builtAt: ts('built_at'),
  lastUsedAt: ts('last_used_at').notNull().defaultNow(),
  error: text('error'),
}, (t) => [
  uniqueIndex('submission_field_indexes_path_kind').on(t.path, t.kind),
  uniqueIndex('submission_field_indexes_name').on(t.name),
]);

export type SubmissionFieldIndexRow = typeof submissionFieldIndexes.$inferSelect;
