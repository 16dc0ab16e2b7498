import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import { submissionDefs } from './submission-defs';
import { submissions } from './submissions';

/** An Entity: a stable uuid in a Dataset; its data lives in versions (entity_defs). */
export const entities = pgTable('entities', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  uuid: text('uuid').notNull(),
  // Keys to datasets and actors checked once per statement by triggers, not by per-row foreign
  // keys (migration 0027: a bulk create's rows share one Dataset and one creator).
  datasetId: integer('dataset_id').notNull(),
  creatorId: integer('creator_id'),
  /** null, 'soft' (based on an older version) or 'hard' (two updates touched one property). */
  conflict: text('conflict', { enum: ['soft', 'hard'] }),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at'),
  deletedAt: ts('deleted_at'),
}, (t) => [
  // Central: an entity uuid is unique across the server.
  uniqueIndex('entities_uuid').on(t.uuid),
  index('entities_dataset_created').on(t.datasetId, t.createdAt, t.id),
  // Live entities of a Dataset in feed order: OData pages and $count (index-only) at 100,000+ entities.
  index('entities_dataset_live').on(t.datasetId, t.createdAt, t.id).where(sql`${t.deletedAt} is null`),
]);

/**
 * Where a version came from: a submission (version), the API, or a bulk upload (shared by every
 * entity of the upload; `details` `{ source: { name, size } }`).
 */
export const entityDefSources = pgTable('entity_def_sources', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  type: text('type', { enum: ['submission', 'api', 'bulk'] }).notNull(),
  submissionDefId: integer('submission_def_id').references(() => submissionDefs.id),
  details: jsonb('details'),
  /** A held offline update applied out of order (Central's force-processed backlog). */
  forceProcessed: boolean('force_processed').notNull().default(false),
  /**
   * The audit event that made a submission's entity work run (submission.create, the approving
   * submission.update, …; Central's auditId): E/audits shows it as details.source.event. No
   * foreign key: audits may be archived; readers left-join.
   */
  auditId: bigint('audit_id', { mode: 'number' }),
}, (t) => [
  index('entity_def_sources_submission_def').on(t.submissionDefId),
]);

/** One version of an Entity: label and property values (all strings), with conflict bookkeeping. */
export const entityDefs = pgTable('entity_defs', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  // Keys to entities and entity_def_sources checked once per statement by a trigger (migrations
  // 0027, 0029: a bulk create's 10,000 version rows name 10,000 entities of the same statement).
  entityId: integer('entity_id').notNull(),
  sourceId: integer('source_id'),
  current: boolean('current').notNull().default(true),
  /** 1 for the first version, +1 per version. */
  version: integer('version').notNull(),
  /** The version this one was based on (null for the first). */
  baseVersion: integer('base_version'),
  label: text('label').notNull(),
  data: jsonb('data').$type<Record<string, string>>().notNull(),
  /** What the client sent, label included (spec, Entity Version dataReceived). */
  dataReceived: jsonb('data_received').$type<Record<string, string>>().notNull(),
  /** Properties this version changed that another version since its base also changed. */
  conflictingProperties: jsonb('conflicting_properties').$type<string[]>(),
  /** The entity's conflict state once this version was applied (for version listings). */
  conflict: text('conflict', { enum: ['soft', 'hard'] }),
  /** Offline branch (entities 2024.1): the device's chain of updates. */
  branchId: text('branch_id'),
  trunkVersion: integer('trunk_version'),
  branchBaseVersion: integer('branch_base_version'),
  // No key to actors: Central's has none (migration 0027).
  creatorId: integer('creator_id'),
  userAgent: text('user_agent'),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [
  uniqueIndex('entity_defs_entity_version').on(t.entityId, t.version),
  index('entity_defs_current').on(t.entityId).where(sql`${t.current}`),
  index('entity_defs_source').on(t.sourceId),
  // Current values by containment (`data @> '{"p":"v"}'`): an OData property `$filter` with eq on
  // any property of any Dataset, one index for all (lib/odata/entities.ts adds the containment).
  index('entity_defs_current_data').using('gin', t.data.op('jsonb_path_ops')).where(sql`${t.current}`),
]);

/**
 * Offline updates that arrived before the version they build on (entities 2024.1 branches): held
 * until the missing one arrives, or forced through later.
 */
export const entitySubmissionBacklog = pgTable('entity_submission_backlog', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  submissionId: integer('submission_id').notNull().references(() => submissions.id),
  submissionDefId: integer('submission_def_id').notNull().references(() => submissionDefs.id),
  entityUuid: text('entity_uuid').notNull(),
  branchId: text('branch_id').notNull(),
  branchBaseVersion: integer('branch_base_version').notNull(),
  loggedAt: ts('logged_at').notNull().defaultNow(),
}, (t) => [
  uniqueIndex('entity_submission_backlog_branch').on(t.branchId, t.branchBaseVersion),
]);

export type EntityRow = typeof entities.$inferSelect;
export type EntityDefRow = typeof entityDefs.$inferSelect;
