import { index, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { lifecycle } from './_columns';
import { actees } from './actees';

/** Anyone who can act: web users, App Users (field keys), public links, single-use actors. */
export const actors = pgTable('actors', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  type: text('type', { enum: ['user', 'field_key', 'public_link', 'singleUse'] }).notNull(),
  displayName: text('display_name').notNull(),
  /** An actor is also something rights can be granted on (user.update on bob). */
  acteeId: text('actee_id').notNull().references(() => actees.id),
  meta: jsonb('meta'),
  ...lifecycle,
}, (t) => [index('actors_type').on(t.type)]);

export type ActorRow = typeof actors.$inferSelect;
