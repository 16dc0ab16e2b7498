import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { desc, eq } from 'drizzle-orm';
import { onTestFinished } from 'vitest';
import { audits, type AuditRow } from '../../drizzle/schema';
import type { Config } from '../../lib/config';
import type { Deps } from '../../lib/context';
import type { Db } from '../../lib/db/client';
import { withDeps } from '../../lib/runtime/entry';
import { localApp } from '../../infra/local/app';
import { fixtureUsers, type FixtureUser } from '../fixtures/users';
import { testDatabase } from '../setup/db';

/** Who makes a request: a fixture user (Bearer), anonymous, or explicit credentials. */
export type As =
  | FixtureUser
  | 'anonymous'
  | { bearer: string }
  | { basic: [email: string, password: string] }
  | { key: string }
  | { cookie: string; csrf?: string };

export interface RequestOptions {
  as?: As;
  /** A JSON-serialisable body (sent as application/json), or a raw string / bytes. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Harness {
  /** The transaction every request of this test runs in (rolled back when the test ends). */
  db: Db;
  deps: Deps;
  ids: Record<FixtureUser, number>;
  /** Id of 'Default Project' (bob manages it). */
  projectId: number;
  /** Sends a real Request through the route table to the group apps, as the server does. */
  request(method: string, path: string, opts?: RequestOptions): Promise<Response>;
  get(path: string, opts?: RequestOptions): Promise<Response>;
  post(path: string, opts?: RequestOptions): Promise<Response>;
  patch(path: string, opts?: RequestOptions): Promise<Response>;
  put(path: string, opts?: RequestOptions): Promise<Response>;
  delete(path: string, opts?: RequestOptions): Promise<Response>;
  /** Actions of the audit rows written during this test, oldest first. */
  auditActions(): Promise<string[]>;
  /** Audit rows written during this test, oldest first. */
  audits(): Promise<AuditRow[]>;
  /** Starts a real HTTP server on a loopback port over this test's transaction; closed at test end. */
  listen(): Promise<string>;
}

class Rollback extends Error {}

function authHeaders(as: As): Record<string, string> {
  if (as === 'anonymous') return {};
  if (typeof as === 'string') return { Authorization: `Bearer ${fixtureUsers[as].token}` };
  if ('bearer' in as) return { Authorization: `Bearer ${as.bearer}` };
  if ('basic' in as) return { Authorization: `Basic ${Buffer.from(`${as.basic[0]}:${as.basic[1]}`).toString('base64')}` };
  if ('cookie' in as) return { Cookie: `session=${as.cookie}`, ...(as.csrf ? { 'X-CSRF-Token': as.csrf } : {}) };
  return {};
}

/**
 * Opens a transaction that stays open until `release()` and is then rolled back: everything done
 * through `db` meanwhile is undone. `txDone` settles once the rollback has happened.
 */
export async function rolledBackTransaction(base: Db): Promise<{ db: Db; release: () => void; txDone: Promise<void> }> {
  let release!: () => void;
  const finished = new Promise<void>((r) => (release = r));
  let ready!: (tx: Db) => void;
  const txReady = new Promise<Db>((r) => (ready = r));
  const txDone = base
    .transaction(async (tx) => {
      ready(tx as unknown as Db);
      await finished;
      throw new Rollback();
    })
    .catch((err: unknown) => {
      if (!(err instanceof Rollback)) throw err;
    });
  return { db: await txReady, release, txDone };
}

/**
 * A test's view of the server: every request runs inside one transaction that is rolled back when
 * the test finishes, so each test starts from the seeded fixtures and leaves nothing behind.
 * @param configOverrides settings for this test (e.g. `{ ALLOW_HTTP_AUTH: false }`).
 */
export async function harness(configOverrides: Partial<Config> = {}): Promise<Harness> {
  const base = await testDatabase();
  const { db, release, txDone } = await rolledBackTransaction(base.deps.db);
  const servers: ServerType[] = [];
  onTestFinished(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    release();
    await txDone;
  });
  const [startMark] = await db.select({ id: audits.id }).from(audits).orderBy(desc(audits.id)).limit(1);
  const firstAudit = (startMark?.id ?? 0) + 1;

  const deps: Deps = { ...base.deps, db, config: { ...base.config, ...configOverrides } };
  const app = withDeps(localApp(), () => ({ deps }));

  const request = async (method: string, path: string, opts: RequestOptions = {}) => {
    const headers: Record<string, string> = { ...authHeaders(opts.as ?? 'anonymous'), ...(opts.headers ?? {}) };
    let body: BodyInit | undefined;
    if (opts.body !== undefined) {
      if (typeof opts.body === 'string' || opts.body instanceof Uint8Array) {
        body = opts.body as BodyInit;
      } else {
        body = JSON.stringify(opts.body);
        headers['Content-Type'] ??= 'application/json';
      }
    }
    const url = new URL(path, 'http://localhost');
    if (opts.as != null && typeof opts.as === 'object' && 'key' in opts.as) {
      const key = opts.as.key; // a function replacement: tokens may contain `$$`, a replacement pattern
      url.pathname = url.pathname.replace(/^\/v1\//, () => `/v1/key/${key}/`);
    }
    return app.fetch(new Request(url, { method, headers, body }));
  };

  const auditRows = async () => {
    const rows = await db.select().from(audits).orderBy(audits.id);
    return rows.filter((r) => r.id >= firstAudit);
  };

  return {
    db,
    deps,
    ids: base.fixtures.ids,
    projectId: base.fixtures.projectId,
    request,
    get: (p, o) => request('GET', p, o),
    post: (p, o) => request('POST', p, o),
    patch: (p, o) => request('PATCH', p, o),
    put: (p, o) => request('PUT', p, o),
    delete: (p, o) => request('DELETE', p, o),
    audits: auditRows,
    auditActions: async () => (await auditRows()).map((r) => r.action),
    listen: () =>
      new Promise<string>((resolve) => {
        const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) =>
          resolve(`http://127.0.0.1:${info.port}`));
        servers.push(server);
      }),
  };
}

/** Reads a JSON response body (asserting nothing). */
export const json = async <T = any>(res: Response): Promise<T> => (await res.json()) as T; // eslint-disable-line @typescript-eslint/no-explicit-any

export { eq };
