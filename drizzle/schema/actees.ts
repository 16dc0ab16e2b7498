import { pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';

/**
 * Everything rights can be granted on. Assignments point at an actee id: '*' (everything), a species
 * name ('project', 'form', 'user', …: every thing of that kind) or one thing's own uuid.
 */
export const actees = pgTable('actees', {
  id: text('id').primaryKey(),
  species: text('species').notNull(),
  /** The actee this one lives in (a form's project), so project grants reach it. */
  parent: text('parent'),
  purgedAt: ts('purged_at'),
});
