import { boolean, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { lifecycle } from './_columns';
import { actees } from './actees';

/** A project partitions forms, submissions, datasets and App Users. Deleting is soft. */
export const projects = pgTable('projects', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  name: text('name').notNull(),
  description: text('description'),
  /** null is the same as false (spec, Project). */
  archived: boolean('archived'),
  /** Managed encryption key id; set by POST P/key (a later issue). */
  keyId: integer('key_id'),
  acteeId: text('actee_id').notNull().references(() => actees.id),
  ...lifecycle,
});

export type ProjectRow = typeof projects.$inferSelect;
