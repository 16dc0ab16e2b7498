import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../lib/config';
import type { Deps } from '../../lib/context';
import { createLogger } from '../../lib/log';
import { createFsBlobStore } from '../../lib/runtime/fs-blobs';
import { openDatabase, type NodeDatabase } from '../../lib/runtime/node';
import { testConfig } from './config';
import { seedFixtures, type SeededFixtures } from './seed';

export interface TestDatabase {
  database: NodeDatabase;
  config: Config;
  deps: Deps;
  fixtures: SeededFixtures;
}

let shared: Promise<TestDatabase> | null = null;

/**
 * The database for this test file (one per worker process): PostgreSQL from DATABASE_URL
 * (migrated and seeded by global setup), or a fresh in-memory PGlite migrated and seeded here.
 * Tests never commit to it: the harness wraps each test in a transaction that is rolled back.
 */
export function testDatabase(): Promise<TestDatabase> {
  shared ??= (async () => {
    const config = testConfig();
    const database = await openDatabase(config, { pgliteDir: 'memory://' });
    if (database.kind === 'pglite') await database.migrate();
    // Inside the run's folder (test/setup/global.ts), which is removed when the run ends.
    const blobDir = mkdtempSync(join(process.env.FIELDBASE_TEST_TMP ?? tmpdir(), 'fieldbase-blobs-'));
    const blobs = createFsBlobStore(blobDir);
    const deps: Deps = { db: database.db, blobs, config, log: createLogger('silent') };
    const fixtures = await seedFixtures(deps);
    return { database, config, deps, fixtures };
  })();
  return shared;
}
