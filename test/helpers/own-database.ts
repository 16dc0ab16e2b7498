/**
 * A migrated database and a blob folder of a test file's own, for tests that need real concurrent
 * transactions (the harness runs each test in one rolled-back transaction): on PostgreSQL
 * (DATABASE_URL) a fresh database on the same server, dropped by close(); otherwise an in-memory
 * PGlite (one transaction at a time).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import type { Config } from '../../lib/config';
import { openDatabase, type NodeDatabase } from '../../lib/runtime/node';
import { testConfig } from '../setup/config';

export interface OwnDatabase {
  config: Config;
  database: NodeDatabase;
  /** An empty folder for a file blob store, removed by close(). */
  blobDir: string;
  /** Closes the database, drops it (PostgreSQL) and removes the blob folder. */
  close(): Promise<void>;
}

async function adminSql(mainUrl: string, statement: string): Promise<void> {
  const admin = postgres(mainUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(statement);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

/** @param prefix names the database (`<prefix>_<random>`) and the blob folder. */
export async function ownDatabase(prefix: string): Promise<OwnDatabase> {
  const mainUrl = process.env.DATABASE_URL;
  let config = testConfig();
  let name: string | null = null;
  if (mainUrl) {
    name = `${prefix}_${randomBytes(6).toString('hex')}`;
    await adminSql(mainUrl, `CREATE DATABASE "${name}"`);
    const url = new URL(mainUrl);
    url.pathname = `/${name}`;
    config = testConfig({ DATABASE_URL: url.toString() });
  }
  const database = await openDatabase(config, { pgliteDir: 'memory://' });
  await database.migrate();
  const blobDir = mkdtempSync(join(process.env.FIELDBASE_TEST_TMP ?? tmpdir(), `${prefix}-blobs-`));
  return {
    config,
    database,
    blobDir,
    close: async () => {
      await database.close();
      if (mainUrl && name) await adminSql(mainUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      rmSync(blobDir, { recursive: true, force: true });
    },
  };
}
