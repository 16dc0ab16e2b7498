import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';

// End to end on the embedded default: the real `infra/local/serve.ts` process, PGlite on disk,
// file blobs, real HTTP. DATABASE_URL is removed from the child's environment on purpose.
const root = new URL('../..', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'fieldbase-embedded-'));
const tsx = join(root, 'node_modules/.bin/tsx');
const env = (extra: Record<string, string> = {}) => {
  const e: Record<string, string> = { ...(process.env as Record<string, string>), DATA_DIR: dataDir, PORT: '0', BCRYPT_COST: '4', ...extra };
  delete e.DATABASE_URL;
  delete e.S3_BUCKET;
  return e;
};

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(extra: Record<string, string> = {}): Promise<{ base: string; output: () => string; stop: () => Promise<void> }> {
  const child = spawn(tsx, ['infra/local/serve.ts'], { cwd: root, env: env(extra) });
  children.push(child);
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 45_000);
    child.stdout.on('data', () => {
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}:\n${out}`)));
  });
  return {
    base,
    output: () => out,
    stop: () => new Promise((r) => {
      child.once('exit', () => r());
      child.kill('SIGTERM');
    }),
  };
}

describe('embedded default (npm start without DATABASE_URL)', () => {
  test('first start creates the administrator; data survives a restart; CLI works on the same data', async () => {
    const first = await start({ ADMIN_EMAIL: 'admin@example.org', ADMIN_PASSWORD: 'a long enough password' });
    expect(first.output()).toContain('embedded PGlite');
    const basic = `Basic ${Buffer.from('admin@example.org:a long enough password').toString('base64')}`;
    const created = await fetch(`${first.base}/v1/projects`, {
      method: 'POST', headers: { Authorization: basic, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Survives restart' }),
    });
    expect(created.status).toBe(200);
    const project = (await created.json()) as { id: number };
    const appUser = await fetch(`${first.base}/v1/projects/${project.id}/app-users`, {
      method: 'POST', headers: { Authorization: basic, 'Content-Type': 'application/json' }, body: JSON.stringify({ displayName: 'Tablet' }),
    });
    expect(appUser.status).toBe(200);
    await first.stop();

    // The CLI, with the server stopped (PGlite allows one process), on the same DATA_DIR.
    const cli = (...args: string[]) => spawnSync(tsx, ['infra/local/cli.ts', ...args], { cwd: root, env: env(), encoding: 'utf8' });
    expect(cli('user-create', '--email', 'second@example.org', '--password', 'another long password').status).toBe(0);
    const short = cli('user-set-password', '--email', 'second@example.org', '--password', 'short');
    expect(short.status).toBe(1);
    expect(short.stderr).toContain('400.21');

    const second = await start();
    expect(second.output()).not.toContain('No users yet');
    const session = await fetch(`${second.base}/v1/sessions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: 'second@example.org', password: 'another long password' }),
    });
    expect(session.status).toBe(200);
    const { token } = (await session.json()) as { token: string };
    // Not an administrator yet: sees no projects.
    expect(await (await fetch(`${second.base}/v1/projects`, { headers: { Authorization: `Bearer ${token}` } })).json()).toEqual([]);
    const list = await fetch(`${second.base}/v1/projects`, { headers: { Authorization: basic } });
    expect(((await list.json()) as Array<{ name: string }>).map((p) => p.name)).toEqual(['Survives restart']);
    await second.stop();
  }, 120_000);

  test('a wrong setting stops the server with a message naming the variable', () => {
    const r = spawnSync(tsx, ['infra/local/serve.ts'], { cwd: root, env: env({ PORT: 'not-a-port' }), encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('PORT');
  }, 70_000);
});
