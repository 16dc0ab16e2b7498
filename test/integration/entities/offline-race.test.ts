/**
 * Offline updates of one branch arriving all at once, in reverse order, over their own connections:
 * each is applied exactly once, in branch order, and nothing stays in the backlog. Real concurrent
 * transactions need a database the harness's single rolled-back transaction cannot give, so this
 * file runs its own server over its own database (as submissions/race.test.ts): on PostgreSQL
 * (DATABASE_URL) a fresh database, dropped at the end; without it an in-memory PGlite (one
 * connection: serialised, but the outcome must be the same).
 */
import { serve, type ServerType } from '@hono/node-server';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { audits, entityDefs, entities, entitySubmissionBacklog } from '../../../drizzle/schema';
import { localApp } from '../../../infra/local/app';
import { systemCtx, type Deps } from '../../../lib/context';
import { drainJobs } from '../../../lib/jobs';
import { createLogger } from '../../../lib/log';
import { withDeps } from '../../../lib/runtime/entry';
import { createFsBlobStore } from '../../../lib/runtime/fs-blobs';
import type { NodeDatabase } from '../../../lib/runtime/node';
import { createUserTask, promoteUserTask } from '../../../lib/users/admin-tasks';
import { ownDatabase, type OwnDatabase } from '../../helpers/own-database';

const N = 12;
const UUID = '12345678-1234-4123-8234-123456789abc';
const BRANCH = 'bbbbbbbb-1234-4123-8234-123456789abc';
const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');

let database: NodeDatabase;
let deps: Deps;
let server: ServerType | undefined;
let base: string;
let own: OwnDatabase;
let auth: Record<string, string> = {};
let P: string;

async function call(path: string, body: string, type = 'application/json'): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { ...auth, 'Content-Type': type }, body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`POST ${path} → ${res.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

beforeAll(async () => {
  own = await ownDatabase('fb_offline');
  database = own.database;
  deps = { db: own.database.db, blobs: createFsBlobStore(own.blobDir), config: own.config, log: createLogger('silent') };
  const ctx = systemCtx(deps);
  await createUserTask(ctx, 'offline-admin@example.org', 'offline admin password 1');
  await promoteUserTask(ctx, 'offline-admin@example.org');
  const app = withDeps(localApp(), () => ({ deps }));
  base = await new Promise<string>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(`http://127.0.0.1:${info.port}`));
  });
  const session = await call('/v1/sessions', JSON.stringify({ email: 'offline-admin@example.org', password: 'offline admin password 1' }));
  auth = { Authorization: `Bearer ${session.token as string}` };
  P = `/v1/projects/${(await call('/v1/projects', JSON.stringify({ name: 'Offline' }))).id as number}`;
  await call(`${P}/forms?publish=true`, fixture('forms/offlineEntity.xml'), 'application/xml');
  await call(`${P}/datasets/people/entities`, JSON.stringify({ uuid: UUID, label: 'Johnny Doe', data: { first_name: 'Johnny', age: '22' } }));
}, 60_000);

afterAll(async () => {
  if (server) await new Promise((r) => server!.close(r));
  await own?.close();
});

test(`${N} offline updates of one branch sent at once, last first: each applied once, in branch order`, async () => {
  const xml = (k: number) => fixture('submissions/offlineEntity.one.xml')
    .replace('<instanceID>one</instanceID>', `<instanceID>u${k}</instanceID>`)
    .replace('branchId=""', `branchId="${BRANCH}"`)
    .replace('baseVersion="1"', `baseVersion="${k}"`)
    .replace('<status>arrived</status>', `<status>s${k}</status>`);
  const answers = await Promise.all(Array.from({ length: N }, (_, i) => N - i).map(async (k) => {
    const res = await fetch(`${base}${P}/forms/offlineEntity/submissions`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/xml' }, body: xml(k) });
    return { status: res.status, body: await res.text() };
  }));
  for (const a of answers) expect(a.status, a.body).toBe(200);
  await drainJobs(systemCtx(deps));

  const [e] = await database.db.select().from(entities).where(eq(entities.uuid, UUID));
  const defs = await database.db.select().from(entityDefs).where(eq(entityDefs.entityId, e!.id)).orderBy(entityDefs.version);
  expect(defs.map((d) => d.version)).toEqual(Array.from({ length: N + 1 }, (_, i) => i + 1));
  // Branch order: version k+1 is the branch's update k, based on version k.
  expect(defs.slice(1).map((d) => [d.branchBaseVersion, d.baseVersion, d.data.status])).toEqual(
    Array.from({ length: N }, (_, i) => [i + 1, i + 1, `s${i + 1}`]),
  );
  expect(e!.conflict).toBeNull();
  expect(await database.db.select().from(entitySubmissionBacklog)).toEqual([]);
  const errors = await database.db.select().from(audits).where(eq(audits.action, 'entity.error'));
  expect(errors).toEqual([]);
  const versions = await database.db.select().from(audits).where(eq(audits.action, 'entity.update.version'));
  expect(versions.length).toBe(N);
}, 120_000);
