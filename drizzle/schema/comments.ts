import { index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import { actors } from './actors';
import { submissions } from './submissions';

/** A staff comment on a submission (GET/POST S/comments): Central's Comment. */
export const comments = pgTable('comments', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  submissionId: integer('submission_id').notNull().references(() => submissions.id),
  actorId: integer('actor_id').notNull().references(() => actors.id),
  body: text('body').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [index('comments_submission_created').on(t.submissionId, t.createdAt)]);

export type CommentRow = typeof comments.$inferSelect;
