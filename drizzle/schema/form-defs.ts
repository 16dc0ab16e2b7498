import { index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import { actors } from './actors';
import { blobs } from './blobs';
import { forms } from './forms';
import { keys } from './keys';
import type { DatasetDeclaration, FormField } from '../../lib/xforms/types';

/**
 * One XForm definition of a form: a draft (publishedAt null) or a published version. The XML is kept
 * byte for byte (its MD5 is the OpenRosa hash); what reads need is extracted once at upload.
 */
export const formDefs = pgTable('form_defs', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  formId: integer('form_id').notNull().references(() => forms.id),
  xml: text('xml').notNull(),
  name: text('name'),
  version: text('version').notNull(),
  hash: text('hash').notNull(),
  sha: text('sha').notNull(),
  sha256: text('sha256').notNull(),
  keyId: integer('key_id').references(() => keys.id),
  fields: jsonb('fields').$type<FormField[]>().notNull(),
  datasets: jsonb('datasets').$type<DatasetDeclaration[]>().notNull(),
  entitiesVersion: text('entities_version'),
  createdAt: ts('created_at').notNull().defaultNow(),
  publishedAt: ts('published_at'),
  publishedBy: integer('published_by').references(() => actors.id),
  publishNotes: text('publish_notes'),
  /** The XLSForm spreadsheet this definition was converted from (GET F.xlsx / F.xls), or null. */
  xlsBlobId: integer('xls_blob_id').references(() => blobs.id),
  /**
   * Its Content-Type as uploaded (.xlsx or .xls). Kept here, not only on the blob: blobs are shared
   * by content and record the type of their first upload.
   */
  xlsContentType: text('xls_content_type'),
}, (t) => [
  index('form_defs_form_id').on(t.formId),
]);

export type FormDefRow = typeof formDefs.$inferSelect;
