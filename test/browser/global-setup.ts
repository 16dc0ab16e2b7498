/**
 * globalSetup of the `browser` project: checks that Chromium is there, then starts Fieldbase the way
 * a user does (`npm start`) on the embedded PGlite in a fresh temporary DATA_DIR, serving Central's
 * web UI from ../shared/central-frontend/dist on a free port, and hands its address to the test
 * files (inject('fieldbase')). The server log goes to a file in the temporary folder; its path is
 * printed when a test fails. Stopped (its whole process group) and cleaned up at the end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { findChromium } from './chromium';

export interface FieldbaseServer {
  /** http://127.0.0.1:<port> (FIELDBASE_BROWSER_HOST overrides the host, for debugging only) */
  base: string;
  email: string;
  password: string;
  chromium: string;
  /** The server's stdout and stderr. */
  logFile: string;
  /** Screenshots of failed tests go here. */
  artifacts: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    fieldbase: FieldbaseServer;
  }
}

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const UI_DIR = resolve(ROOT, '../shared/central-frontend/dist');

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => done(port));
    });
  });
}

export default async function setup(project: TestProject) {
  const chromium = findChromium();
  if (!existsSync(join(UI_DIR, 'index.html'))) throw new Error(`The browser tests need Central's web UI build at ${UI_DIR} (index.html missing).`);
  const tmp = mkdtempSync(join(tmpdir(), 'fieldbase-browser-'));
  // Kept after a failed run: the server log and the screenshots of failed tests.
  const artifacts = mkdtempSync(join(tmpdir(), 'fieldbase-browser-artifacts-'));
  const logFile = join(artifacts, 'server.log');
  const port = await freePort();
  const email = 'admin@fieldbase.test';
  const password = 'browser-suite-password';
  const env = { ...process.env };
  delete env.DATABASE_URL; // the embedded PGlite, as a newcomer runs it
  delete env.S3_BUCKET;
  Object.assign(env, {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: join(tmp, 'data'),
    UI_DIR,
    ADMIN_EMAIL: email,
    ADMIN_PASSWORD: password,
    BCRYPT_COST: '4',
    LOG_LEVEL: process.env.FIELDBASE_BROWSER_LOG_LEVEL ?? 'info',
  });
  writeFileSync(logFile, '');
  const log = createWriteStream(logFile, { flags: 'a' });
  const child: ChildProcess = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  // If vitest itself goes away first, take the server with it.
  const killGroup = () => {
    try {
      if (child.exitCode == null && child.pid != null) process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  };
  process.once('exit', killGroup);

  const stop = async () => {
    if (child.exitCode == null && child.pid != null) {
      try {
        process.kill(-child.pid, 'SIGTERM'); // npm, tsx and node: the group this setup started
      } catch {
        /* already gone */
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* gone */
        }
      }, 8000);
      await exited;
      clearTimeout(timer);
    }
    log.end();
    rmSync(tmp, { recursive: true, force: true });
    if (readdirSync(artifacts).every((f) => f === 'server.log') && !process.env.FIELDBASE_BROWSER_KEEP) rmSync(artifacts, { recursive: true, force: true });
  };

  const base = `http://${process.env.FIELDBASE_BROWSER_HOST ?? '127.0.0.1'}:${port}`;
  try {
    await waitUntilServing(base, logFile, child);
  } catch (err) {
    await stop();
    throw err;
  }
  project.provide('fieldbase', { base, email, password, chromium, logFile, artifacts });
  return stop;
}

async function waitUntilServing(base: string, logFile: string, child: ChildProcess) {
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode != null) throw new Error(`npm start exited with ${child.exitCode}:\n${readFileSync(logFile, 'utf8')}`);
    if (readFileSync(logFile, 'utf8').includes('Fieldbase listening')) {
      try {
        const res = await fetch(`${base}/client-config.json`);
        if (res.ok) break;
      } catch {
        /* not yet */
      }
    }
    if (Date.now() > deadline) throw new Error(`npm start did not answer within 90 s:\n${readFileSync(logFile, 'utf8')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
