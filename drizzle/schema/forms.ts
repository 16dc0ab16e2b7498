import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { lifecycle } from './_columns';
import { actees } from './actees';
import { projects } from './projects';

/**
 * A form's stable identity (project + xmlFormId). The foundation needs it for form assignments and
 * the project deep PUT; definitions, drafts and versions arrive with the forms issue.
 */
export const forms = pgTable('forms', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  projectId: integer('project_id').notNull().references(() => projects.id),
  xmlFormId: text('xml_form_id').notNull(),
  state: text('state', { enum: ['open', 'closing', 'closed'] }).notNull().default('open'),
  acteeId: text('actee_id').notNull().references(() => actees.id),
  ...lifecycle,
}, (t) => [
  // Only live forms reserve an xmlFormId; a form in the Trash frees it.
  uniqueIndex('forms_project_xml_form_id_live').on(t.projectId, t.xmlFormId).where(sql`${t.deletedAt} is null`),
  index('forms_project_id').on(t.projectId),
]);

export type FormRow = typeof forms.$inferSelect;
