import { sql } from 'drizzle-orm';
import { integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { actors } from './actors';
import { projects } from './projects';

/**
 * A web user's preference (PUT /v1/user-preferences/site|project/…): site-wide when projectId is
 * null, else for that project. The value is any JSON, as the UI stores it.
 */
export const userPreferences = pgTable('user_preferences', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  userId: integer('user_id').notNull().references(() => actors.id),
  projectId: integer('project_id').references(() => projects.id),
  propertyName: text('property_name').notNull(),
  propertyValue: jsonb('property_value').notNull(),
}, (t) => [
  uniqueIndex('user_preferences_site').on(t.userId, t.propertyName).where(sql`${t.projectId} is null`),
  uniqueIndex('user_preferences_project').on(t.userId, t.projectId, t.propertyName).where(sql`${t.projectId} is not null`),
]);

export type UserPreferenceRow = typeof userPreferences.$inferSelect;
