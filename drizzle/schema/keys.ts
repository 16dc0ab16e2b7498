import { boolean, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';

/** Encryption public keys: one row per distinct key (self-supplied in a form, or managed). */
export const keys = pgTable('keys', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  public: text('public').notNull().unique(),
  managed: boolean('managed').notNull().default(false),
  hint: text('hint'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export type KeyRow = typeof keys.$inferSelect;
