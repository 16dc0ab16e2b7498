/**
 * Usage analytics preview (GET /v1/analytics/preview): the report Central would send to its
 * maintainers when analytics are enabled, shown to an administrator before they opt in. Fieldbase
 * sends nothing anywhere; it answers the preview with the figures it can compute, in Central's
 * shape: `{ system: {…}, projects: [{ id, users, forms, submissions }] }`. "recent" means within
 * the last 45 days (Central's window). And POST /v1/backup: Central's removed direct backup; only
 * the rights check remains (spec: Differences).
 */
import { and, count, countDistinct, eq, gte, inArray, isNotNull, isNull, sql } from 'drizzle-orm';
import { actors, assignments, audits, fieldKeys, forms, projects, roles, submissions } from '../../drizzle/schema';
import { canOrReject, speciesActee } from '../authz/can';
import { species } from '../authz/verbs';
import type { Ctx } from '../context';
import { problems } from '../problem';

/** Central's "recent" window, in days. */
const RECENT_DAYS = 45;

type Pair = { recent: number; total: number };

/** Users holding a system role on the site or a project: total, and those with audit activity lately. */
async function roleHolders(ctx: Ctx, system: string, since: Date, projectActeeId?: string): Promise<Pair> {
  const holders = ctx.db
    .selectDistinct({ id: assignments.actorId })
    .from(assignments)
    .innerJoin(roles, eq(roles.id, assignments.roleId))
    .innerJoin(actors, eq(actors.id, assignments.actorId))
    .where(and(eq(roles.system, system), isNull(actors.deletedAt), eq(actors.type, 'user'),
      ...(projectActeeId ? [eq(assignments.acteeId, projectActeeId)] : [])));
  const [total] = await ctx.db.select({ n: count() }).from(holders.as('h'));
  const [recent] = await ctx.db
    .select({ n: countDistinct(audits.actorId) })
    .from(audits)
    .where(and(inArray(audits.actorId, holders), gte(audits.loggedAt, since)));
  return { recent: recent?.n ?? 0, total: total?.n ?? 0 };
}

/**
 * The analytics preview. @returns `{ system, projects }` (see the module comment).
 * @throws 401.2/403.1 without analytics.read. Reads only.
 */
export async function analyticsPreview(ctx: Ctx): Promise<{ system: Record<string, unknown>; projects: Array<Record<string, unknown>> }> {
  await canOrReject(ctx, 'analytics.read', speciesActee(species.system));
  const since = new Date(Date.now() - RECENT_DAYS * 86_400_000);
  const [auditTotal] = await ctx.db.select({ n: count() }).from(audits);
  const [auditRecent] = await ctx.db.select({ n: count() }).from(audits).where(gte(audits.loggedAt, since));
  const live = await ctx.db.select().from(projects).where(isNull(projects.deletedAt)).orderBy(projects.id);
  const projectsOut: Array<Record<string, unknown>> = [];
  for (const p of live) {
    const [formCount] = await ctx.db.select({ n: count() }).from(forms).where(and(eq(forms.projectId, p.id), isNull(forms.deletedAt)));
    const [appUsers] = await ctx.db.select({ n: count() }).from(fieldKeys)
      .innerJoin(actors, eq(actors.id, fieldKeys.actorId)).where(and(eq(fieldKeys.projectId, p.id), isNull(actors.deletedAt)));
    const subs = ctx.db.select({ id: submissions.id, createdAt: submissions.createdAt }).from(submissions)
      .innerJoin(forms, eq(forms.id, submissions.formId))
      .where(and(eq(forms.projectId, p.id), eq(submissions.draft, false), isNull(submissions.deletedAt))).as('s');
    const [subTotal] = await ctx.db.select({ n: count(), recent: sql<number>`count(*) filter (where ${subs.createdAt} >= ${since.toISOString()}::timestamptz)`.mapWith(Number) }).from(subs);
    projectsOut.push({
      id: p.id,
      users: {
        num_managers: await roleHolders(ctx, 'manager', since, p.acteeId),
        num_viewers: await roleHolders(ctx, 'viewer', since, p.acteeId),
        num_data_collectors: await roleHolders(ctx, 'formfill', since, p.acteeId),
        num_app_users: { recent: 0, total: appUsers?.n ?? 0 },
      },
      forms: { num_forms: { recent: 0, total: formCount?.n ?? 0 } },
      submissions: { num_submissions_received: { recent: subTotal?.recent ?? 0, total: subTotal?.n ?? 0 } },
    });
  }
  const [encrypted] = await ctx.db.select({ n: count() }).from(projects).where(and(isNull(projects.deletedAt), isNotNull(projects.keyId)));
  const [archived] = await ctx.db.select({ n: count() }).from(projects).where(and(isNull(projects.deletedAt), eq(projects.archived, true)));
  return {
    system: {
      num_admins: await roleHolders(ctx, 'admin', since),
      num_projects_encryption: { num_projects: live.length, num_encrypted: encrypted?.n ?? 0 },
      num_audit_log_entries: { recent: auditRecent?.n ?? 0, total: auditTotal?.n ?? 0 },
      num_archived_projects: archived?.n ?? 0,
      uses_external_db: 0,
      sso_enabled: 0,
    },
    projects: projectsOut,
  };
}

/**
 * POST /v1/backup: Central no longer makes backups over its API; the rights check stays (401 /
 * 403 as Central), an administrator is told it is not supported here (501.1; back up the
 * PostgreSQL database and the blob store instead). @throws 401.2/403.1; 501.1.
 */
export async function backupNow(ctx: Ctx): Promise<never> {
  await canOrReject(ctx, 'backup.run', speciesActee(species.system));
  throw problems.internal.notImplemented({ feature: 'direct backup' });
}
