import { Duplex } from 'node:stream';
import { crc32 as zlibCrc32, createDeflateRaw } from 'node:zlib';
import { nativeAesCfb } from './native-crypto';
import { nativeHashStream } from './native-hash';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import * as schema from '../../drizzle/schema';
import { s3BlobStoreFromConfig } from '../blobs/s3';
import type { BlobStore } from '../blobs/store';
import type { Config } from '../config';
import type { Deps } from '../context';
import { postgresOptions, type Db } from '../db/client';
import { preparingClient } from '../db/statement-cache';
import { createLogger } from '../log';
import { syncSystemRoles } from '../roles';
import { createFsBlobStore } from './fs-blobs';
import { nodeMailer } from './mail';

export const migrationsFolder = fileURLToPath(new URL('../../drizzle/migrations', import.meta.url));

/** A database handle with the way to migrate and close it. */
export interface NodeDatabase {
  db: Db;
  kind: 'postgres' | 'pglite';
  migrate(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens the database the config names: PostgreSQL through postgres.js when DATABASE_URL is set,
 * else embedded PGlite persisted in DATA_DIR/db (`memory://` keeps it in memory, for tests).
 * Node and Lambda only. PGlite is loaded on demand, so a Lambda bundle need not ship it.
 */
export async function openDatabase(config: Config, opts: { pgliteDir?: string } = {}): Promise<NodeDatabase> {
  if (config.DATABASE_URL) {
    // UTC sessions: timestamps without a zone (audit filters) mean UTC, as in Central's deployment.
    const client = postgres(config.DATABASE_URL, postgresOptions(config));
    // Drizzle's ordinary queries prepared per connection: one round trip each instead of two.
    const db = drizzlePostgres(config.DATABASE_PREPARE ? preparingClient(client) : client, { schema }) as unknown as Db;
    return {
      db,
      kind: 'postgres',
      async migrate() {
        await migratePostgres(db as never, { migrationsFolder });
        await syncSystemRoles(db);
      },
      close: () => client.end({ timeout: 5 }),
    };
  }
  const dir = opts.pgliteDir ?? join(config.DATA_DIR, 'db');
  if (!dir.startsWith('memory://')) mkdirSync(resolve(dir), { recursive: true });
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle: drizzlePglite } = await import('drizzle-orm/pglite');
  const { migrate: migratePglite } = await import('drizzle-orm/pglite/migrator');
  // pg_trgm: user search ranks by trigram similarity (migration 0013), as Central.
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
  const client = new PGlite(dir.startsWith('memory://') ? dir : resolve(dir), { extensions: { pg_trgm } });
  await client.exec("set time zone 'UTC'");
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  return {
    db,
    kind: 'pglite',
    async migrate() {
      await migratePglite(db as never, { migrationsFolder });
      await syncSystemRoles(db);
    },
    close: () => client.close(),
  };
}

/** The blob store the config names: S3 when S3_BUCKET is set, else files in DATA_DIR/blobs. */
export function openBlobStore(config: Config): BlobStore {
  if (config.S3_BUCKET) return s3BlobStoreFromConfig(config);
  return createFsBlobStore(resolve(config.DATA_DIR, 'blobs'));
}

/**
 * zlib's raw deflate at level 1 as a web stream pair: it runs on libuv's thread pool, so a ZIP
 * export deflates on the second core while the first formats CSV (fflate would do both in turn).
 */
export const nativeDeflateRaw = () =>
  Duplex.toWeb(createDeflateRaw({ level: 1, chunkSize: 256 * 1024 })) as unknown as { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> };

/**
 * Everything a Node process (local server, CLI, Lambda) needs, built once.
 * @param opts.mailOutbox without EMAIL_HOST, write mail as .eml files in DATA_DIR/mail (default true;
 *   Lambda passes false: its disk is not kept, so mail is only logged there).
 * @returns Deps plus the database handle (to migrate and close).
 */
export async function createNodeDeps(config: Config, opts: { mailOutbox?: boolean } = {}): Promise<Deps & { database: NodeDatabase }> {
  const database = await openDatabase(config);
  const log = createLogger(config.LOG_LEVEL);
  const mailer = nodeMailer(config, { outbox: opts.mailOutbox ?? true });
  if (!mailer) log.warn('no mail transport is configured (EMAIL_HOST): account mail will be logged, not sent');
  return { db: database.db, blobs: openBlobStore(config), config, log, database, deflateRaw: nativeDeflateRaw, crc32: zlibCrc32, aesCfb: nativeAesCfb, hashStream: nativeHashStream, copyToStream: true, mailer };
}
