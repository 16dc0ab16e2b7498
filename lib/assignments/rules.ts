import type { RoleRow } from '../../drizzle/schema';
import { verbsOn, rejection, type ActeeRef } from '../authz/can';
import type { Ctx } from '../context';

/**
 * Central's rule for granting: an actor may only grant a role whose every verb it holds itself on
 * the same actee (so a project manager cannot make anyone an administrator).
 * @throws Problem 403.1 (401.2 when anonymous).
 */
export async function canAssignRole(ctx: Ctx, role: Pick<RoleRow, 'verbs'>, actee: ActeeRef): Promise<void> {
  if (ctx.system) return;
  const held = await verbsOn(ctx, actee);
  if (!role.verbs.every((v) => held.has(v))) throw rejection(ctx);
}
