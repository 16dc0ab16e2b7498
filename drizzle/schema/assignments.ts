import { index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { actees } from './actees';
import { actors } from './actors';
import { roles } from './roles';

/** A role granted to an actor on an actee ('*' = site-wide, a project's or a form's actee id). */
export const assignments = pgTable('assignments', {
  actorId: integer('actor_id').notNull().references(() => actors.id),
  roleId: integer('role_id').notNull().references(() => roles.id),
  acteeId: text('actee_id').notNull().references(() => actees.id),
}, (t) => [
  primaryKey({ name: 'assignments_pkey', columns: [t.actorId, t.roleId, t.acteeId] }),
  index('assignments_actee_id').on(t.acteeId),
]);

export type AssignmentRow = typeof assignments.$inferSelect;
