import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import { actors } from './actors';
import { formDefs } from './form-defs';
import { submissions } from './submissions';
import type { SubmissionValue } from '../../lib/xforms/types';

/**
 * One version of a submission: the byte-exact XML and what every later read needs, extracted once
 * at ingestion (instanceName, the flattened field values, the encryption flag).
 */
export const submissionDefs = pgTable('submission_defs', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  submissionId: integer('submission_id').notNull().references(() => submissions.id),
  formDefId: integer('form_def_id').notNull().references(() => formDefs.id),
  /** This version's instanceID (the first version's equals submissions.instance_id). */
  instanceId: text('instance_id').notNull(),
  xml: text('xml').notNull(),
  md5: text('md5').notNull(),
  instanceName: text('instance_name'),
  submitterId: integer('submitter_id').references(() => actors.id),
  deviceId: text('device_id'),
  userAgent: text('user_agent'),
  current: boolean('current').notNull().default(true),
  encrypted: boolean('encrypted').notNull().default(false),
  values: jsonb('values').$type<SubmissionValue[]>().notNull(),
  /**
   * The values outside repeats as one object (path → text), for OData `$filter` / `$orderby` on
   * form fields in SQL (lib/odata); derived at ingestion from `values` (rootValuesOf).
   */
  rootValues: jsonb('root_values').$type<Record<string, string>>().notNull().default({}),
  /**
   * The texts of the definition's root leaf fields in its order, joined by U+001F (rootTextOf):
   * the CSV export's root rows come from it without parsing any JSON.
   */
  rootText: text('root_text').notNull().default(''),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [
  uniqueIndex('submission_defs_submission_instance').on(t.submissionId, t.instanceId),
  index('submission_defs_instance_id').on(t.instanceId),
  // No GIN index on root_values: measured at ~1 GB per 100,000 250-field versions and 5x slower
  // inserts (bench/odata), for filters that scan one form's rows quickly enough without it.
]);

export type SubmissionDefRow = typeof submissionDefs.$inferSelect;
