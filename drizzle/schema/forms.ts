import { sql } from 'drizzle-orm';
import { type AnyPgColumn, boolean, index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { lifecycle } from './_columns';
import { actees } from './actees';
import { actors } from './actors';
import { formDefs } from './form-defs';
import { projects } from './projects';

/**
 * A form's stable identity (project + xmlFormId). Each XML definition is a row in form_defs; the
 * form points at the published one (currentDefId) and at most one draft (draftDefId).
 */
export const forms = pgTable('forms', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  projectId: integer('project_id').notNull().references(() => projects.id),
  xmlFormId: text('xml_form_id').notNull(),
  state: text('state', { enum: ['open', 'closing', 'closed'] }).notNull().default('open'),
  acteeId: text('actee_id').notNull().references(() => actees.id),
  /** The published definition served to clients; null until the first publish. */
  currentDefId: integer('current_def_id').references((): AnyPgColumn => formDefs.id),
  /** The draft definition, if any. */
  draftDefId: integer('draft_def_id').references((): AnyPgColumn => formDefs.id),
  /**
   * Draft Token for /v1/test/{token}/… (not an Actor). Kept in clear: GET F/draft shows it, as
   * Central does; it only reaches the draft and dies on publish or draft delete.
   */
  draftToken: text('draft_token'),
  webformsEnabled: boolean('webforms_enabled').notNull().default(true),
  /**
   * Ids in the public form URLs Central's web UI builds (`/f/{enketoId}`, `/f/{enketoOnceId}` for
   * single-use public links), resolved by GET /v1/form-links/{id}/form. Central gets them from
   * Enketo (ENKETO_URL) as Central does; without Enketo, Fieldbase draws them itself when the form is
   * first published and keeps them across versions.
   */
  enketoId: text('enketo_id'),
  enketoOnceId: text('enketo_once_id'),
  /**
   * The draft's own Enketo id (Central keeps it on the draft definition): requested from Enketo
   * with the Draft Token URL when a draft is created, kept while the draft is replaced, dropped
   * with the draft (publish, delete). Null without Enketo (ENKETO_URL) or when Enketo failed.
   */
  draftEnketoId: text('draft_enketo_id'),
  createdBy: integer('created_by').references(() => actors.id),
  ...lifecycle,
}, (t) => [
  // Only live forms reserve an xmlFormId; a form in the Trash frees it.
  uniqueIndex('forms_project_xml_form_id_live').on(t.projectId, t.xmlFormId).where(sql`${t.deletedAt} is null`),
  index('forms_project_id').on(t.projectId),
  uniqueIndex('forms_draft_token').on(t.draftToken),
  // Not unique: Enketo answers the same id for the same OpenRosa URL and form id, so a form made
  // again under a deleted one's xmlFormId gets that one's ids (Central has no such constraint).
  index('forms_enketo_id').on(t.enketoId),
  index('forms_enketo_once_id').on(t.enketoOnceId),
  index('forms_draft_enketo_id').on(t.draftEnketoId),
]);

export type FormRow = typeof forms.$inferSelect;
