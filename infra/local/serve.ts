/**
 * `npm start`: load the configuration, apply migrations, create the first administrator when
 * ADMIN_EMAIL/ADMIN_PASSWORD are set, then serve every group app on one port (8383 by default),
 * with Central's web UI in front when UI_DIR points at a central-frontend build.
 */
import { serve } from '@hono/node-server';
import { ConfigError } from '../../lib/config';
import { systemCtx } from '../../lib/context';
import { withDeps } from '../../lib/runtime/entry';
import { loadConfig, processEnv } from '../../lib/runtime/env';
import { createNodeDeps } from '../../lib/runtime/node';
import { ensureFirstAdmin } from '../../lib/users/admin-tasks';
import { drainJobs } from '../../lib/jobs';
import { processEntityBacklog } from '../../lib/entities/backlog';
import { localApp } from './app';
import { withUi } from './ui';

async function main() {
  let config;
  try {
    config = loadConfig(processEnv(), {}, { localServer: true });
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  const deps = await createNodeDeps(config);
  await deps.database.migrate();
  const admin = await ensureFirstAdmin(systemCtx(deps));
  const app = withDeps(localApp(), () => ({ deps }));
  const fetch = withUi((request) => app.fetch(request), config.UI_DIR);
  // 1 MiB of request head, not Node's 16 KiB: a device's D/integrity?id=… names every entity it holds (10,000 uuids ≈ 370 kB).
  const server = serve({ fetch, port: config.PORT, hostname: config.HOST, serverOptions: { maxHeaderSize: 1 << 20 } }, (info) => {
    const where = config.DATABASE_URL ? 'PostgreSQL (DATABASE_URL)' : `embedded PGlite in ${config.DATA_DIR}/db`;
    console.log(`Fieldbase listening on http://${config.HOST}:${info.port} — database: ${where}; blobs: ${deps.blobs.kind}`);
    if (config.UI_DIR) console.log(`Serving the web UI from ${config.UI_DIR} at http://${config.HOST}:${info.port}/`);
    if (admin === 'created') console.log(`Created the administrator ${config.ADMIN_EMAIL}.`);
    if (admin === 'none') {
      console.log('No users yet. Create the first administrator with:');
      console.log('  npm run cli -- user-create --email you@example.org --password "a long password"');
      console.log('  npm run cli -- user-promote --email you@example.org');
      console.log('(stop the server first when using the embedded database), or start with ADMIN_EMAIL and ADMIN_PASSWORD set.');
    }
  });
  // The scheduled sweep of deferred work (lib/jobs): jobs normally run right after their request's
  // commit; this picks up any left behind (a crash, a handler error) every few seconds.
  let draining = false;
  const sweep = setInterval(() => {
    if (draining) return;
    draining = true;
    void drainJobs(systemCtx(deps)).catch((err: unknown) => console.error('job sweep failed', err)).finally(() => { draining = false; });
  }, 5000);
  sweep.unref();
  // Offline entity updates held past the backlog timeout are forced through hourly (the embedded
  // database admits no second process for `npm run cli -- entity-backlog`).
  const backlog = setInterval(() => {
    void processEntityBacklog(systemCtx(deps)).catch((err: unknown) => console.error('entity backlog run failed', err));
  }, 3_600_000);
  backlog.unref();
  const stop = () => {
    clearInterval(sweep);
    clearInterval(backlog);
    server.close(() => {
      void deps.database.close().finally(() => process.exit(0));
    });
    setTimeout(() => process.exit(0), 5000).unref();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
