import { eq } from 'drizzle-orm';
import { projects, sessions, users } from '../../drizzle/schema';
import { grant, projectScope, siteScope } from '../../lib/assignments';
import { sha256Hex } from '../../lib/blobs/hash';
import { systemCtx, withTx, type Deps } from '../../lib/context';
import { createProject } from '../../lib/projects';
import { createUser } from '../../lib/users';
import { DEFAULT_PROJECT, fixtureUsers } from '../fixtures/users';

export interface SeededFixtures {
  ids: Record<keyof typeof fixtureUsers, number>;
  projectId: number;
}

/**
 * Seeds alice (admin), bob (manager of 'Default Project'), chelsea (no role) and their sessions,
 * once: a database that already has alice is left as it is. Goes through the lib verbs, as the
 * CLI would. @returns the fixture actor ids and the project id.
 */
export async function seedFixtures(deps: Deps): Promise<SeededFixtures> {
  const ctx = systemCtx(deps);
  const existing = await deps.db.select().from(users).where(eq(users.email, fixtureUsers.alice.email));
  if (existing.length === 0) {
    await withTx(ctx, async (c) => {
      const ids: Record<string, number> = {};
      for (const [name, u] of Object.entries(fixtureUsers)) {
        const created = await createUser(c, { email: u.email, password: u.password, displayName: name });
        ids[name] = created.id;
        await c.db.insert(sessions).values({
          tokenHash: sha256Hex(u.token), actorId: created.id, csrf: u.csrf, expiresAt: new Date('9999-12-31T00:00:00Z'),
        });
      }
      await grant(c, siteScope(), 'admin', ids.alice!);
      const project = await createProject(c, { name: DEFAULT_PROJECT });
      await grant(c, await projectScope(c, project.id), 'manager', ids.bob!);
    });
  }
  const rows = await deps.db.select({ id: users.actorId, email: users.email }).from(users);
  const byEmail = new Map(rows.map((r) => [r.email, r.id]));
  const [project] = await deps.db.select().from(projects).where(eq(projects.name, DEFAULT_PROJECT));
  return {
    ids: {
      alice: byEmail.get(fixtureUsers.alice.email)!,
      bob: byEmail.get(fixtureUsers.bob.email)!,
      chelsea: byEmail.get(fixtureUsers.chelsea.email)!,
    },
    projectId: project!.id,
  };
}
