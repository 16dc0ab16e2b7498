import { sql } from 'drizzle-orm';
import { type AnyPgColumn, boolean, index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { lifecycle } from './_columns';
import { actors } from './actors';
import { forms } from './forms';
import { submissionDefs } from './submission-defs';

/**
 * A submission as a whole: its logical instanceId is the first version's instanceID. Versions
 * (edits) are rows in submission_defs; the current one is currentDefId. Draft test submissions are
 * kept apart by `draft`.
 */
export const submissions = pgTable('submissions', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  formId: integer('form_id').notNull().references(() => forms.id),
  instanceId: text('instance_id').notNull(),
  draft: boolean('draft').notNull().default(false),
  submitterId: integer('submitter_id').references(() => actors.id),
  deviceId: text('device_id'),
  userAgent: text('user_agent'),
  /** null until reviewed: Central writes null for a received submission (central-outputs api/submission.json). */
  reviewState: text('review_state', { enum: ['received', 'hasIssues', 'edited', 'approved', 'rejected'] }),
  currentDefId: integer('current_def_id').references((): AnyPgColumn => submissionDefs.id),
  ...lifecycle,
}, (t) => [
  uniqueIndex('submissions_form_instance_draft').on(t.formId, t.instanceId, t.draft),
  index('submissions_form_created').on(t.formId, t.draft, t.createdAt, t.id).where(sql`${t.deletedAt} is null`),
  // From a version to its submission: a selective field filter finds a few submission_defs rows by
  // a field index and reaches their submissions through this (without it, a scan of every
  // submission: 470 ms at 1,000,000 for a 1-row `$filter=q1 eq '…'`).
  index('submissions_current_def').on(t.currentDefId),
]);

export type SubmissionRow = typeof submissions.$inferSelect;
