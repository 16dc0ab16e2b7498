import { index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { actors } from './actors';
import { projects } from './projects';

/** App Users (field keys): an actor bound to one project, authenticated by a token in the URL. */
export const fieldKeys = pgTable('field_keys', {
  actorId: integer('actor_id').primaryKey().references(() => actors.id),
  projectId: integer('project_id').notNull().references(() => projects.id),
  createdBy: integer('created_by').notNull().references(() => actors.id),
  /**
   * The live token, kept so managers can show it again (Central's listing returns it for the QR
   * code); null once revoked. Lookups go through sessions.token_hash, never this column.
   */
  token: text('token'),
}, (t) => [index('field_keys_project_id').on(t.projectId)]);

export type FieldKeyRow = typeof fieldKeys.$inferSelect;
