import { integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import { blobs } from './blobs';
import { datasets } from './datasets';
import { formDefs } from './form-defs';
import { forms } from './forms';

/** A file a form definition expects (from its XML), with the uploaded blob once there is one. */
export const formAttachments = pgTable('form_attachments', {
  formId: integer('form_id').notNull().references(() => forms.id),
  formDefId: integer('form_def_id').notNull().references(() => formDefs.id),
  name: text('name').notNull(),
  type: text('type', { enum: ['image', 'audio', 'video', 'file'] }).notNull(),
  blobId: integer('blob_id').references(() => blobs.id),
  /** The Content-Type given at upload, served back on download. */
  contentType: text('content_type'),
  /** Linked entity list: the form gets the Dataset's entities as this CSV. */
  datasetId: integer('dataset_id').references(() => datasets.id),
  updatedAt: ts('updated_at'),
}, (t) => [primaryKey({ name: 'form_attachments_pkey', columns: [t.formDefId, t.name] })]);

export type FormAttachmentRow = typeof formAttachments.$inferSelect;
