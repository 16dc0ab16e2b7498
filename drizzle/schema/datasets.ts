import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import { actees } from './actees';
import { actorProperties } from './actor-properties';
import { formDefs } from './form-defs';
import { projects } from './projects';

/**
 * A Dataset ("Entity List"): a project's named collection of Entities. Defined by a form (its
 * `meta/entity` declaration) or through the API; `publishedAt` stays null while only a draft
 * defines it, which keeps it out of the Dataset APIs (spec, States: Dataset).
 */
export const datasets = pgTable('datasets', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  projectId: integer('project_id').notNull().references(() => projects.id),
  name: text('name').notNull(),
  acteeId: text('actee_id').notNull().references(() => actees.id),
  /** Entities are made from submissions only once approved (Central's default is false). */
  approvalRequired: boolean('approval_required').notNull().default(false),
  /** Data Collectors and App Users only see the entities they created. */
  ownerOnly: boolean('owner_only').notNull().default(false),
  createdAt: ts('created_at').notNull().defaultNow(),
  publishedAt: ts('published_at'),
  deletedAt: ts('deleted_at'),
}, (t) => [
  // Only live datasets reserve a name; a dataset in the Trash frees it.
  uniqueIndex('datasets_project_name_live').on(t.projectId, t.name).where(sql`${t.deletedAt} is null`),
]);

/**
 * A property of a Dataset; `publishedAt` null while only a draft form defines it; `deletedAt` set
 * when deleted through the API (DELETE D/properties/{name}), which frees its name.
 */
export const dsProperties = pgTable('ds_properties', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  datasetId: integer('dataset_id').notNull().references(() => datasets.id),
  name: text('name').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  publishedAt: ts('published_at'),
  deletedAt: ts('deleted_at'),
}, (t) => [
  uniqueIndex('ds_properties_dataset_name').on(t.datasetId, t.name).where(sql`${t.deletedAt} is null`),
]);

/** Which field of which form definition saves to a property (`entities:saveto`). */
export const dsPropertyFields = pgTable('ds_property_fields', {
  dsPropertyId: integer('ds_property_id').notNull().references(() => dsProperties.id),
  formDefId: integer('form_def_id').notNull().references(() => formDefs.id),
  /** Slash path of the field below the instance root. */
  path: text('path').notNull(),
}, (t) => [
  primaryKey({ name: 'ds_property_fields_pkey', columns: [t.dsPropertyId, t.formDefId] }),
  index('ds_property_fields_form_def').on(t.formDefId),
]);

/** The form definitions that declare a Dataset (source forms), with the actions they declare. */
export const datasetFormDefs = pgTable('dataset_form_defs', {
  datasetId: integer('dataset_id').notNull().references(() => datasets.id),
  formDefId: integer('form_def_id').notNull().references(() => formDefs.id),
  actions: jsonb('actions').$type<Array<'create' | 'update'>>().notNull(),
}, (t) => [
  primaryKey({ name: 'dataset_form_defs_pkey', columns: [t.datasetId, t.formDefId] }),
  index('dataset_form_defs_form_def').on(t.formDefId),
]);

/**
 * Property-based access filters (Central 2026.x, migration 20260602-01): an actor that may not list
 * every entity of the project sees only the entities whose `datasetPropertyId` value equals its own
 * value of `actorPropertyId`; several rules of a Dataset combine with OR.
 */
export const datasetAccessFilters = pgTable('dataset_access_filters', {
  datasetId: integer('dataset_id').notNull().references(() => datasets.id, { onDelete: 'cascade' }),
  datasetPropertyId: integer('dataset_property_id').notNull().references(() => dsProperties.id, { onDelete: 'cascade' }),
  actorPropertyId: integer('actor_property_id').notNull().references(() => actorProperties.id, { onDelete: 'cascade' }),
}, (t) => [
  primaryKey({ name: 'dataset_access_filters_pkey', columns: [t.datasetPropertyId, t.actorPropertyId] }),
  index('dataset_access_filters_dataset').on(t.datasetId),
  index('dataset_access_filters_actor_property').on(t.actorPropertyId),
]);

export type DatasetRow = typeof datasets.$inferSelect;
export type DsPropertyRow = typeof dsProperties.$inferSelect;
