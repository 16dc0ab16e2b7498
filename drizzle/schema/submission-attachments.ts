import { integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import { blobs } from './blobs';
import { submissionDefs } from './submission-defs';

/** A file a submission version expects (named in its XML), with the uploaded blob once received. */
export const submissionAttachments = pgTable('submission_attachments', {
  submissionDefId: integer('submission_def_id').notNull().references(() => submissionDefs.id),
  name: text('name').notNull(),
  blobId: integer('blob_id').references(() => blobs.id),
  contentType: text('content_type'),
  updatedAt: ts('updated_at'),
}, (t) => [primaryKey({ name: 'submission_attachments_pkey', columns: [t.submissionDefId, t.name] })]);

export type SubmissionAttachmentRow = typeof submissionAttachments.$inferSelect;
