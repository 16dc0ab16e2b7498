import { sql } from 'drizzle-orm';
import { audits } from '../../drizzle/schema';
import type { Ctx } from '../context';
import type { Db } from '../db/client';
import { prepared } from '../db/prepared';

/** The audit insert, prepared: every write of every domain makes one. Details go as JSON text. */
const insertAudit = (db: Db) => prepared(db, 'audit_insert', (d) => d.insert(audits).values({
  actorId: sql`${sql.placeholder('actorId')}::int`,
  action: sql`${sql.placeholder('action')}::text`,
  acteeId: sql`${sql.placeholder('acteeId')}::text`,
  details: sql`${sql.placeholder('details')}::text::jsonb`,
  notes: sql`${sql.placeholder('notes')}::text`,
}).returning({ id: audits.id }).prepare('audit_insert'));

/**
 * Writes one audit row (Central's Server Audit Log) with the request's actor, in the caller's
 * transaction, so the entry exists exactly when the change does.
 * @param action Central's action name ('user.create', 'project.update', …).
 * @param acteeId what was acted on (its actee id), or null.
 * @param details JSON details as Central records them, or null.
 * @param notes X-Action-Notes, when the endpoint takes it.
 * @returns the new audit's id (a job it triggers can name it as its source).
 * Effects: inserts into `audits`. Actor is null for system work (CLI).
 */
export async function audit(
  tx: Ctx,
  ctx: Ctx,
  action: string,
  acteeId: string | null,
  details: unknown,
  notes?: string | null,
): Promise<number> {
  return auditAs(tx, ctx.system ? null : (ctx.auth.actor?.id ?? null), action, acteeId, details, notes);
}

/**
 * Writes one audit row as `audit` does, for an actor other than the request's (entity work done
 * on behalf of a submission's actor, the backlog's forced runs).
 * @param actorId the acting Actor's id, or null for the system.
 * @returns the new audit's id. Effects: inserts into `audits` in `tx`'s transaction.
 */
export async function auditAs(
  tx: Ctx,
  actorId: number | null,
  action: string,
  acteeId: string | null,
  details: unknown,
  notes?: string | null,
): Promise<number> {
  const [row] = await insertAudit(tx.db).execute({
    actorId,
    action,
    acteeId,
    details: details == null ? null : JSON.stringify(details),
    notes: notes ?? null,
  });
  return row!.id;
}
