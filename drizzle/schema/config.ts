import { integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import { blobs } from './blobs';

/**
 * Server configuration (Central's `config` table): one row per key. JSON configs (analytics,
 * login-appearance) keep `value`; image configs (logo, hero-image) keep `blobId`.
 */
export const configs = pgTable('config', {
  key: text('key').primaryKey(),
  value: jsonb('value'),
  blobId: integer('blob_id').references(() => blobs.id),
  setAt: ts('set_at').notNull().defaultNow(),
});

export type ConfigRow = typeof configs.$inferSelect;
