import { boolean, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { lifecycle } from './_columns';
import { actees } from './actees';
import { keys } from './keys';

/** A project partitions forms, submissions, datasets and App Users. Deleting is soft. */
export const projects = pgTable('projects', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  name: text('name').notNull(),
  description: text('description'),
  /** null is the same as false (spec, Project). */
  archived: boolean('archived'),
  /** The managed encryption key (POST P/key); null while managed encryption is off. */
  keyId: integer('key_id').references(() => keys.id),
  acteeId: text('actee_id').notNull().references(() => actees.id),
  ...lifecycle,
});

export type ProjectRow = typeof projects.$inferSelect;
