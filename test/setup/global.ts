/**
 * Runs once before all test files. With DATABASE_URL (CI, real PostgreSQL): apply migrations and
 * seed the fixtures once, so parallel test files share a ready database. Without it each test file
 * builds its own in-memory PGlite (test/setup/db.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../lib/log';
import { openDatabase } from '../../lib/runtime/node';
import { createFsBlobStore } from '../../lib/runtime/fs-blobs';
import { testConfig } from './config';
import { seedFixtures } from './seed';

export default async function setup() {
  // One temporary folder for the run's blob stores, removed at the end (workers inherit the env).
  const tmp = mkdtempSync(join(tmpdir(), 'fieldbase-test-'));
  process.env.FIELDBASE_TEST_TMP = tmp;
  const teardown = () => rmSync(tmp, { recursive: true, force: true });
  const config = testConfig();
  if (!config.DATABASE_URL) return teardown;
  const database = await openDatabase(config);
  try {
    await database.migrate();
    await seedFixtures({ db: database.db, config, log: createLogger('silent'), blobs: createFsBlobStore('/tmp/fieldbase-unused') });
  } finally {
    await database.close();
  }
  return teardown;
}
