import { constants as zlibConstants, crc32 as zlibCrc32, createDeflateRaw, deflateRaw, type DeflateRaw, type ZlibOptions } from 'node:zlib';
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
import type { RawDeflater } from '../exports/zip';
import { postgresOptions, postgresTarget, type Db } from '../db/client';
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
    const target = postgresTarget(config.DATABASE_URL);
    const client = postgres(target.url, { ...postgresOptions(config), ...(target.host ? { host: target.host } : {}) });
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

/** Input bytes deflated twice, on the first write of a large entry, to choose the strategy. */
const PROBE = 64 * 1024;
/** Huffman-only is taken when its output is at most this much larger than level 1's on the probe. */
const PROBE_SLACK = 1.05;

/**
 * Whether string matching (LZ77) pays on this data: the probe deflated at level 1 and with
 * Huffman coding only, both on the thread pool at once. Matching is most of level 1's time; on
 * data with few repeats (columns of unrelated numbers) it saves under 1% of the size at more
 * than twice the CPU.
 */
async function huffmanSuffices(probe: Uint8Array): Promise<boolean> {
  const size = (options: ZlibOptions) => new Promise<number>((resolve, reject) => {
    deflateRaw(probe, options, (err, out) => (err ? reject(err) : resolve(out.byteLength)));
  });
  const [matched, huffman] = await Promise.all([size({ level: 1 }), size({ level: 1, strategy: zlibConstants.Z_HUFFMAN_ONLY })]);
  return huffman <= matched * PROBE_SLACK;
}

/**
 * zlib's raw deflate, driven write by write (no stream adapters): each write is compressed on
 * libuv's thread pool, so a ZIP export deflates on the second core while the first produces the
 * CSV (fflate would do both in turn). Level 1; an entry whose first write is large (≥ PROBE bytes)
 * is Huffman-coded only when string matching would shrink it by under 5% (huffmanSuffices).
 * @returns a RawDeflater (lib/exports/zip.ts); its outputs are views of zlib's 256 kB output chunks.
 */
export function nativeDeflateRaw(): RawDeflater {
  let z: DeflateRaw | null = null;
  let opening: Promise<DeflateRaw> | null = null;
  let destroyed = false;
  let out: Uint8Array[] = [];
  let failure: Error | null = null;
  let ended = false;
  const waiting: Array<() => void> = [];
  const open = (huffman: boolean) => {
    const stream = createDeflateRaw({ level: 1, chunkSize: 256 * 1024, ...(huffman ? { strategy: zlibConstants.Z_HUFFMAN_ONLY } : {}) });
    stream.on('data', (chunk: Buffer) => out.push(chunk));
    stream.on('error', (err) => {
      failure ??= err;
      for (const w of waiting.splice(0)) w();
    });
    stream.on('end', () => {
      ended = true;
      for (const w of waiting.splice(0)) w();
    });
    if (destroyed) stream.destroy();
    return stream;
  };
  const take = () => {
    const o = out;
    out = [];
    return o;
  };
  return {
    async write(data, final) {
      // The first call chooses; later ones wait for the same stream, in call order.
      opening ??= (async () => (z = open(data.byteLength >= PROBE && await huffmanSuffices(data.subarray(0, PROBE)))))();
      const stream = await opening;
      return new Promise((resolve, reject) => {
        if (failure) return reject(failure);
        if (final) {
          waiting.push(() => (failure ? reject(failure) : resolve(take())));
          stream.end(data.byteLength > 0 ? data : undefined);
          if (ended) waiting.shift()!();
        } else {
          stream.write(data, (err) => (err || failure ? reject(err ?? failure) : resolve(take())));
        }
      });
    },
    destroy() {
      destroyed = true;
      z?.destroy();
    },
  };
}

/**
 * The Deps fields only Node provides: native raw deflate and CRC-32 (ZIP exports), AES-CFB
 * (encrypted submissions), streamed MD5/SHA-256 (blobs) and COPY to a stream (entities.csv, CSV
 * exports). What createNodeDeps adds; the bench scripts spread it into their own Deps so they
 * measure the paths the server runs. Pure.
 */
export function nodeNatives() {
  return { deflateRaw: nativeDeflateRaw, crc32: zlibCrc32, aesCfb: nativeAesCfb, hashStream: nativeHashStream, copyToStream: true } as const;
}

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
  return { db: database.db, blobs: openBlobStore(config), config, log, database, ...nodeNatives(), mailer };
}
