import { bigint, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';

/**
 * Content-addressed blobs: the bytes live in the blob store under their SHA-256; this row records
 * that they are committed (a store object without a row is garbage) and keeps the MD5 OpenRosa needs.
 */
export const blobs = pgTable('blobs', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  sha: text('sha').notNull().unique(),
  md5: text('md5').notNull(),
  size: bigint('size', { mode: 'number' }).notNull(),
  contentType: text('content_type'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export type BlobRow = typeof blobs.$inferSelect;
