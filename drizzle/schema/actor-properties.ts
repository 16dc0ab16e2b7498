import { sql } from 'drizzle-orm';
import { check, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { actors } from './actors';
import { projects } from './projects';

/**
 * Actor property names a project defines (Central 2026.x, migration 20260505-01): extra named
 * values App Users and public links can carry (`region`, `worker_id`). Names are unique per project.
 */
export const actorProperties = pgTable('actor_properties', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  projectId: integer('project_id').notNull().references(() => projects.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
}, (t) => [
  uniqueIndex('actor_properties_project_id_name').on(t.projectId, t.name),
  check('actor_properties_name_not_empty', sql`length(${t.name}) > 0`),
]);

/**
 * One actor's value of one property; at most one value per actor and property (Central keeps
 * properties single-valued so filters stay simple). Unsetting deletes the row.
 */
export const actorPropertyValues = pgTable('actor_property_values', {
  actorId: integer('actor_id').notNull().references(() => actors.id, { onDelete: 'cascade' }),
  actorPropertyId: integer('actor_property_id').notNull().references(() => actorProperties.id, { onDelete: 'cascade' }),
  value: text('value').notNull(),
}, (t) => [
  primaryKey({ name: 'actor_property_values_pkey', columns: [t.actorId, t.actorPropertyId] }),
  index('actor_property_values_actor_property_id').on(t.actorPropertyId),
  check('actor_property_values_value_not_empty', sql`length(${t.value}) > 0`),
]);

export type ActorPropertyRow = typeof actorProperties.$inferSelect;
