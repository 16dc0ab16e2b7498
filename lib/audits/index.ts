import { and, desc, eq, gte, inArray, lt, notInArray, sql, type SQL } from 'drizzle-orm';
import { actors, audits, datasets, formDefs, forms, projects, type AuditRow } from '../../drizzle/schema';
import { formJson, type FormJson } from '../forms/queries';
import { actorJson, type ActorJson } from '../actors';
import { canOrReject, speciesActee } from '../authz/can';
import { species } from '../authz/verbs';
import type { Ctx } from '../context';
import { keyset, keysetRead } from '../db/keyset';
import { mapBatches } from '../http/json-stream';
import { problems } from '../problem';
import { datasetJson } from '../datasets';
import { projectJson } from '../projects';

export { audit } from './log';

/** Central's `action` filter groups for GET /v1/audits; any other value matches one action exactly. */
export const actionGroups: Record<string, string[]> = {
  user: ['user.create', 'user.update', 'user.delete', 'user.assignment.create', 'user.assignment.delete', 'user.session.create', 'user.session.throttle'],
  field_key: ['field_key.create', 'field_key.assignment.create', 'field_key.assignment.delete', 'field_key.session.end', 'field_key.delete',
    'field_key.property.set'],
  public_link: ['public_link.create', 'public_link.assignment.create', 'public_link.assignment.delete', 'public_link.session.end', 'public_link.delete',
    'public_link.property.set'],
  project: ['project.create', 'project.update', 'project.delete', 'actor_property.create'],
  form: ['form.create', 'form.update', 'form.delete', 'form.restore', 'form.purge', 'form.attachment.update',
    'form.submission.export', 'form.update.draft.set', 'form.update.draft.delete', 'form.update.draft.replace', 'form.update.publish'],
  submission: ['submission.create', 'submission.update', 'submission.update.version', 'submission.attachment.update',
    'submission.backlog.hold', 'submission.backlog.reprocess', 'submission.backlog.force', 'submission.delete',
    'submission.restore', 'submission.purge'],
  dataset: ['dataset.create', 'dataset.update', 'entity.bulk.delete', 'entity.bulk.restore', 'dataset.delete',
    'dataset.update.property.delete'],
  entity: ['entity.create', 'entity.bulk.create', 'entity.error', 'entity.update.version', 'entity.update.resolve',
    'entity.delete', 'entity.restore', 'entity.purge', 'entity.bulk.delete', 'entity.bulk.restore'],
  config: ['config.set'],
  upgrade: ['upgrade.server', 'upgrade.process.form', 'upgrade.process.form.draft', 'upgrade.process.form.entities_version'],
};

/** Actions `nonverbose` leaves out (the web UI's default view). */
export const verboseActions = [
  'entity.create', 'entity.bulk.create', 'entity.error', 'entity.update.version', 'entity.update.resolve', 'entity.delete',
  'entity.restore', 'entity.purge', 'submission.create', 'submission.update', 'submission.update.version',
  'submission.attachment.update', 'submission.backlog.hold', 'submission.backlog.reprocess', 'submission.backlog.force',
  'submission.delete', 'submission.restore', 'user.preference.update', 'user.preference.delete', 'backup', 'analytics',
];

export interface AuditQuery {
  action?: string;
  start?: string;
  end?: string;
  limit?: number;
  offset?: number;
}

/** Audit JSON: actorId, action, acteeId, details, loggedAt, notes (Central's readable fields). Pure. */
export const auditJson = (a: AuditRow) => ({
  actorId: a.actorId,
  action: a.action,
  acteeId: a.acteeId,
  details: a.details,
  loggedAt: a.loggedAt.toISOString(),
  notes: a.notes,
});

/**
 * Parses a start/end filter the way Central does: PostgreSQL reads it as a timestamptz (date-only
 * means midnight; no zone means UTC, the session zone), so every ISO 8601 form Central accepts
 * ('2000-01-01z', '2000-01-01+08', '2001-01-01T00:00.000z') works here too.
 * @throws Problem 400.11 `{ field, expected: 'timestamp' }` when PostgreSQL cannot read it.
 */
async function parseTime(ctx: Ctx, field: string, value: string | undefined): Promise<Date | undefined> {
  if (value == null || value === '') return undefined;
  try {
    // Its own (sub)transaction: a failed cast must not abort a transaction the caller has open.
    const [row] = await ctx.db.transaction((tx) =>
      tx.select({ t: sql<string>`(${value}::timestamptz)::text` }).from(sql`(values (1)) as one(x)`));
    return new Date(row!.t.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'));
  } catch {
    throw problems.user.invalidDataTypeOfParameter({ field, expected: 'timestamp' });
  }
}

/**
 * The server audit log (GET /v1/audits), newest first (ties by id). Read by keyset in batches of
 * 1,000 (lib/db/keyset.ts), the extended fields of each batch in one query per table, for a streamed
 * answer (lib/http/json-stream.ts).
 * @param q action (exact, a group name, or `nonverbose`), start (inclusive) / end (exclusive) ISO timestamps,
 *   limit/offset (of the whole list). Extended adds `actor` and `actee` (the user, App User, project, form or Dataset acted on).
 * @returns an async generator of batches of Audit JSON.
 * @throws 401.2/403.1 without audit.read; 400.11 for an unparseable start/end (before the first batch). Reads only.
 */
export async function listAudits(ctx: Ctx, q: AuditQuery, extended: boolean): Promise<AsyncGenerator<Array<Record<string, unknown>>>> {
  await canOrReject(ctx, 'audit.read', speciesActee(species.audit));
  const where: SQL[] = [];
  if (q.action === 'nonverbose') where.push(notInArray(audits.action, verboseActions));
  else if (q.action != null && actionGroups[q.action]) where.push(inArray(audits.action, actionGroups[q.action]!));
  else if (q.action != null && q.action !== '') where.push(eq(audits.action, q.action));
  const start = await parseTime(ctx, 'start', q.start);
  const end = await parseTime(ctx, 'end', q.end);
  if (start) where.push(gte(audits.loggedAt, start));
  if (end) where.push(lt(audits.loggedAt, end)); // Central: start inclusive, end exclusive
  const ks = keyset([{ expr: audits.loggedAt, type: 'timestamptz', desc: true }, { expr: audits.id, type: 'bigint', desc: true }]);
  const rows = keysetRead(ks, (after, limit, offset) => ctx.db.select({ a: audits, ...ks.fields }).from(audits)
    .where(and(...where, after)).orderBy(...ks.orderBy).limit(limit).offset(offset), q);
  return mapBatches(rows, (batch) => (extended ? extendAudits(ctx, batch.map((r) => r.a)) : batch.map((r) => auditJson(r.a))));
}

/** Audit JSON with `actor` and `actee` for a batch of audits, one query per kind of actee. Reads only. */
async function extendAudits(ctx: Ctx, rows: AuditRow[]): Promise<Array<Record<string, unknown>>> {
  const actorIds = [...new Set(rows.map((r) => r.actorId).filter((x): x is number => x != null))];
  const acteeIds = [...new Set(rows.map((r) => r.acteeId).filter((x): x is string => x != null))];
  const actorRows = actorIds.length ? await ctx.db.select().from(actors).where(inArray(actors.id, actorIds)) : [];
  const acteeActors = acteeIds.length ? await ctx.db.select().from(actors).where(inArray(actors.acteeId, acteeIds)) : [];
  const acteeProjects = acteeIds.length ? await ctx.db.select().from(projects).where(inArray(projects.acteeId, acteeIds)) : [];
  // Forms (form.* and submission.* actions), shown with their current (else draft) definition.
  const acteeForms = acteeIds.length
    ? await ctx.db.select({ form: forms, def: formDefs }).from(forms)
      .innerJoin(formDefs, eq(formDefs.id, sql`coalesce(${forms.currentDefId}, ${forms.draftDefId})`))
      .where(inArray(forms.acteeId, acteeIds))
    : [];
  const acteeDatasets = acteeIds.length ? await ctx.db.select().from(datasets).where(inArray(datasets.acteeId, acteeIds)) : [];
  const byId = new Map(actorRows.map((a) => [a.id, actorJson(a)]));
  const actees = new Map<string, ActorJson | ReturnType<typeof projectJson> | FormJson | ReturnType<typeof datasetJson>>([
    ...acteeDatasets.map((d) => [d.acteeId, datasetJson(d)] as const),
    ...acteeActors.map((a) => [a.acteeId, actorJson(a)] as const),
    ...acteeProjects.map((p) => [p.acteeId, projectJson(p)] as const),
    // A form in the Trash shows deletedAt and its numeric id (for restoring), as Central's Form.
    ...acteeForms.map((r) => [r.form.acteeId,
      r.form.deletedAt == null ? formJson(r.form, r.def) : { ...formJson(r.form, r.def), deletedAt: r.form.deletedAt.toISOString(), id: r.form.id }] as const),
  ]);
  return rows.map((r) => ({
    ...auditJson(r),
    actor: r.actorId != null ? (byId.get(r.actorId) ?? null) : null,
    actee: r.acteeId != null ? (actees.get(r.acteeId) ?? null) : null,
  }));
}
