import { asc, eq } from 'drizzle-orm';
import { actees, roles, type RoleRow } from '../../drizzle/schema';
import { species, systemRoles } from '../authz/verbs';
import type { Ctx } from '../context';
import type { Db } from '../db/client';
import { iso } from '../actors';
import { problems } from '../problem';

/** Role JSON in Central's key order: id, name, system, createdAt, updatedAt, verbs. */
export const roleJson = (r: RoleRow) => ({
  id: r.id,
  name: r.name,
  system: r.system,
  createdAt: r.createdAt.toISOString(),
  updatedAt: iso(r.updatedAt),
  verbs: r.verbs,
});

/** Every role (GET /v1/roles): open to anyone, as Central. Reads only. */
export async function listRoles(ctx: Ctx): Promise<ReturnType<typeof roleJson>[]> {
  const rows = await ctx.db.select().from(roles).orderBy(asc(roles.id));
  return rows.map(roleJson);
}

/**
 * A role by numeric id or system name ('admin', 'manager', 'app-user', …).
 * @throws Problem 404.1 when there is none. Reads only.
 */
export async function getRoleOrNotFound(ctx: Ctx, idOrSystem: string): Promise<RoleRow> {
  const [row] = /^\d{1,9}$/.test(idOrSystem)
    ? await ctx.db.select().from(roles).where(eq(roles.id, Number(idOrSystem)))
    : await ctx.db.select().from(roles).where(eq(roles.system, idOrSystem));
  if (!row) throw problems.user.notFound();
  return row;
}

/** One role (GET /v1/roles/{id}). @throws 404.1. */
export async function getRole(ctx: Ctx, idOrSystem: string) {
  return roleJson(await getRoleOrNotFound(ctx, idOrSystem));
}

/** Species actees that must exist for assignments on them ('*' for site-wide grants). */
const systemActees = [...Object.values(species), 'public_link', 'singleUse', 'submission', 'dataset'];

/**
 * Makes the system rows match the code: the species actees ('*', 'project', …) and the system roles
 * of lib/authz/verbs.ts (names and verbs), inserting missing roles in their fixed order. Run after
 * migrations; idempotent. Effects: inserts/updates `actees` and `roles` rows.
 */
export async function syncSystemRoles(db: Db): Promise<void> {
  await db.transaction(async (tx) => {
    await tx
      .insert(actees)
      .values([...new Set(systemActees)].map((id) => ({ id, species: 'species' })))
      .onConflictDoNothing();
    const existing = await tx.select().from(roles);
    const bySystem = new Map(existing.map((r) => [r.system, r]));
    for (const def of systemRoles) {
      const verbs = [...def.verbs];
      const row = bySystem.get(def.system);
      if (!row) {
        await tx.insert(roles).values({ name: def.name, system: def.system, verbs });
      } else if (row.name !== def.name || JSON.stringify(row.verbs) !== JSON.stringify(verbs)) {
        await tx.update(roles).set({ name: def.name, verbs, updatedAt: new Date() }).where(eq(roles.id, row.id));
      }
    }
  });
}
