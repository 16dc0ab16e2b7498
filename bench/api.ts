/**
 * Latency of authenticated API requests through the full route table (in-process fetch, no
 * network), on PGlite in memory or on DATABASE_URL. Prints p50/p95 per request kind and the ratio of
 * p95 to a 50 ms budget (no issue sets a target for these yet).
 */
import { createLogger } from '../lib/log';
import { systemCtx } from '../lib/context';
import { withDeps } from '../lib/runtime/entry';
import { loadConfig, processEnv } from '../lib/runtime/env';
import { createFsBlobStore } from '../lib/runtime/fs-blobs';
import { nodeNatives, openDatabase } from '../lib/runtime/node';
import { createUserTask, promoteUserTask } from '../lib/users/admin-tasks';
import { createProject } from '../lib/projects';
import { localApp } from '../infra/local/app';
import { tmpdir } from 'node:os';

const config = loadConfig(processEnv(), { LOG_LEVEL: 'silent', BCRYPT_COST: '12' });
const database = await openDatabase(config, { pgliteDir: 'memory://' });
await database.migrate();
// The native helpers the local server has (createNodeDeps: COPY to a stream, zlib, hashing).
const deps = { db: database.db, config, log: createLogger('silent'), blobs: createFsBlobStore(`${tmpdir()}/fieldbase-bench`), ...nodeNatives() };
const ctx = systemCtx(deps);
const email = `bench-${Date.now()}@example.org`;
await createUserTask(ctx, email, 'bench password 123');
await promoteUserTask(ctx, email);
for (let i = 0; i < 50; i += 1) await createProject(ctx, { name: `Bench project ${i}` });
const app = withDeps(localApp(), () => ({ deps }));
const login = async () => {
  const res = await app.fetch(new Request('http://x/v1/sessions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email, password: 'bench password 123' }),
  }));
  return ((await res.json()) as { token: string }).token;
};
const token = await login();

async function time(name: string, n: number, fn: () => Promise<unknown>) {
  for (let i = 0; i < 5; i += 1) await fn();
  const samples: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const t = performance.now();
    await fn();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  const p = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  console.log(`${name.padEnd(38)} n=${n}  p50=${p(0.5).toFixed(2)} ms  p95=${p(0.95).toFixed(2)} ms  ratio p95/50ms=${(p(0.95) / 50).toFixed(3)}`);
}

const get = (path: string) => () => app.fetch(new Request(`http://x${path}`, { headers: { Authorization: `Bearer ${token}` } })).then((r) => r.arrayBuffer());
console.log(`database: ${database.kind}`);
await time('GET /v1/projects (50 projects)', 300, get('/v1/projects'));
await time('GET /v1/projects extended', 300, () => app.fetch(new Request('http://x/v1/projects', { headers: { Authorization: `Bearer ${token}`, 'X-Extended-Metadata': 'true' } })).then((r) => r.arrayBuffer()));
await time('GET /v1/users/current', 300, get('/v1/users/current'));
await time('POST /v1/sessions (bcrypt cost 12)', 20, login);
await database.close();
