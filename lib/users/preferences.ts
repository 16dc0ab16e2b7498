import { and, eq, isNull, sql } from 'drizzle-orm';
import { userPreferences } from '../../drizzle/schema';
import { rejection } from '../authz/can';
import { withTx, type Ctx } from '../context';
import { Problem, problems } from '../problem';
import { getProjectOrNotFound } from '../projects';

/** Preferences belong to web users (the UI's); anyone else is refused as Central does. */
function userOrReject(ctx: Ctx): number {
  const actor = ctx.auth.actor;
  if (actor == null || actor.type !== 'user') throw rejection(ctx);
  return actor.id;
}

const where = (userId: number, projectId: number | null, name: string) =>
  and(eq(userPreferences.userId, userId), projectId == null ? isNull(userPreferences.projectId) : eq(userPreferences.projectId, projectId), eq(userPreferences.propertyName, name));

/**
 * Stores one preference of the signed-in user (PUT /v1/user-preferences/site/{name} and
 * /v1/user-preferences/project/{projectId}/{name}), replacing any earlier value.
 * @param body `{ propertyValue: any JSON }`.
 * Effects: upserts a user_preferences row (no audit: Central logs preferences only as verbose
 *   `user.preference.update`, which the UI never reads; not written here).
 * @throws 400.23 `{ property: 'propertyValue' }` without it; 400.33 `{ expected, actual }` with
 *   other keys beside it (Central); 404.1 unknown project; 401.2/403.1 anonymous or not a web user.
 */
export async function setPreference(ctx: Ctx, projectId: number | null, name: string, body: unknown): Promise<void> {
  await withTx(ctx, async (tx) => {
    const userId = userOrReject(tx);
    if (projectId != null) await getProjectOrNotFound(tx, projectId);
    if (body == null || typeof body !== 'object' || !('propertyValue' in body)) {
      throw new Problem(400.23, "Could not find a property named 'propertyValue'", { property: 'propertyValue' });
    }
    const keys = Object.keys(body);
    if (keys.length > 1) {
      throw new Problem(400.33, `Expected properties: (propertyValue). Got (${keys.join(', ')}).`, { expected: ['propertyValue'], actual: keys });
    }
    // Sent as JSON text and cast, so every JSON value is stored as itself, a JSON null included
    // (Central stores `null`; a bound SQL NULL would break the not-null column).
    const value = sql`${JSON.stringify((body as { propertyValue: unknown }).propertyValue ?? null)}::jsonb`;
    const [found] = await tx.db.select({ id: userPreferences.id }).from(userPreferences).where(where(userId, projectId, name)).for('update');
    if (found) await tx.db.update(userPreferences).set({ propertyValue: value }).where(eq(userPreferences.id, found.id));
    else await tx.db.insert(userPreferences).values({ userId, projectId, propertyName: name, propertyValue: value });
  });
}

/**
 * Deletes one preference of the signed-in user (DELETE …/site/{name}, …/project/{projectId}/{name}).
 * @throws 404.1 when there is none; 401.2/403.1 anonymous or not a web user.
 */
export async function deletePreference(ctx: Ctx, projectId: number | null, name: string): Promise<void> {
  const userId = userOrReject(ctx);
  const gone = await ctx.db.delete(userPreferences).where(where(userId, projectId, name)).returning({ id: userPreferences.id });
  if (gone.length === 0) throw problems.user.notFound();
}

/**
 * A user's preferences as the extended `/v1/users/current` carries them:
 * `{ site: { name: value }, projects: { [projectId]: { name: value } } }`. Reads only.
 * The value is read as JSON text and parsed here: drizzle's jsonb mapping JSON.parses any string
 * the driver hands back, so a stored JSON string such as the UI's `"2026.2"` (whatsNewDismissed)
 * would come back as the number 2026.2.
 */
export async function preferencesOf(ctx: Ctx, userId: number): Promise<{ site: Record<string, unknown>; projects: Record<string, Record<string, unknown>> }> {
  const rows = await ctx.db
    .select({ projectId: userPreferences.projectId, propertyName: userPreferences.propertyName, json: sql<string>`${userPreferences.propertyValue}::text` })
    .from(userPreferences)
    .where(eq(userPreferences.userId, userId));
  const out = { site: {} as Record<string, unknown>, projects: {} as Record<string, Record<string, unknown>> };
  for (const r of rows) {
    const value: unknown = JSON.parse(r.json);
    if (r.projectId == null) out.site[r.propertyName] = value;
    else (out.projects[String(r.projectId)] ??= {})[r.propertyName] = value;
  }
  return out;
}
