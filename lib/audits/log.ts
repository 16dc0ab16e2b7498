import { audits } from '../../drizzle/schema';
import type { Ctx } from '../context';

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
  const [row] = await tx.db.insert(audits).values({
    actorId: ctx.system ? null : (ctx.auth.actor?.id ?? null),
    action,
    acteeId,
    details: details ?? null,
    notes: notes ?? null,
  }).returning({ id: audits.id });
  return row!.id;
}
