import { boolean, index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { actors } from './actors';
import { forms } from './forms';

/**
 * Public Access Links: an actor bound to one form (it holds the 'pub-link' role there), whose
 * never-expiring session token anyone with the link's URL fills the form with.
 */
export const publicLinks = pgTable('public_links', {
  actorId: integer('actor_id').primaryKey().references(() => actors.id),
  formId: integer('form_id').notNull().references(() => forms.id),
  createdBy: integer('created_by').notNull().references(() => actors.id),
  /** Single-use link (Central: the browser-side form client lets each browser submit once); null if not given. */
  once: boolean('once'),
  /**
   * The token, kept so managers can copy the link again; shown only while the link's session
   * exists. Lookups go through sessions.token_hash, never this column.
   */
  token: text('token'),
}, (t) => [index('public_links_form_id').on(t.formId)]);

export type PublicLinkRow = typeof publicLinks.$inferSelect;
