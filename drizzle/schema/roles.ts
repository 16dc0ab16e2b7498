import { integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';

/** Roles: named verb lists. System roles are synced from lib/authz/verbs.ts at migration time. */
export const roles = pgTable('roles', {
  id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
  name: text('name').notNull(),
  system: text('system').unique(),
  verbs: jsonb('verbs').$type<string[]>().notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at'),
});

export type RoleRow = typeof roles.$inferSelect;
