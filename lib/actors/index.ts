import { and, eq, isNull } from 'drizzle-orm';
import { actees, actors, type ActorRow } from '../../drizzle/schema';
import type { Actor, Ctx } from '../context';

/** Actor JSON in Central's key order: id, type, displayName, createdAt, updatedAt, deletedAt. */
export interface ActorJson {
  id: number;
  type: string;
  displayName: string;
  createdAt: string;
  updatedAt: string | null;
  deletedAt: string | null;
}

/** A timestamp as Central writes it (ISO 8601 UTC with milliseconds), or null. Pure. */
export const iso = (d: Date | null | undefined): string | null => (d == null ? null : d.toISOString());

/** @returns the API shape of an actors row (spec, Actor). Pure. */
export function actorJson(a: Pick<ActorRow, 'id' | 'type' | 'displayName' | 'createdAt' | 'updatedAt' | 'deletedAt'>): ActorJson {
  return {
    id: a.id,
    type: a.type,
    displayName: a.displayName,
    createdAt: a.createdAt.toISOString(),
    updatedAt: iso(a.updatedAt),
    deletedAt: iso(a.deletedAt),
  };
}

/** Narrows an actors row to the request Actor. Pure. */
export const toActor = (r: ActorRow): Actor => ({
  id: r.id, type: r.type, displayName: r.displayName, acteeId: r.acteeId,
  createdAt: r.createdAt, updatedAt: r.updatedAt, deletedAt: r.deletedAt,
});

/**
 * Creates an actee row and an actor row (one thing that can act and be acted on).
 * @param input type, displayName, optional parent actee (an App User's project).
 * @returns the actors row. Effects: two inserts; call inside withTx. No audit (callers audit).
 */
export async function insertActor(
  ctx: Ctx,
  input: { type: ActorRow['type']; displayName: string; parentActeeId?: string | null },
): Promise<ActorRow> {
  const acteeId = crypto.randomUUID();
  await ctx.db.insert(actees).values({ id: acteeId, species: input.type, parent: input.parentActeeId ?? null });
  const [row] = await ctx.db
    .insert(actors)
    .values({ type: input.type, displayName: input.displayName, acteeId })
    .returning();
  return row!;
}

/** @returns a live (not deleted) actor by id, or null. Reads only. */
export async function findLiveActor(ctx: Ctx, id: number): Promise<ActorRow | null> {
  if (!Number.isSafeInteger(id)) return null;
  const [row] = await ctx.db.select().from(actors).where(and(eq(actors.id, id), isNull(actors.deletedAt)));
  return row ?? null;
}
