import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from '../../drizzle/schema';
import { s3BlobStoreFromConfig } from '../blobs/s3';
import type { Deps } from '../context';
import type { Db } from '../db/client';
import { createLogger } from '../log';
import { loadConfig } from './env';
import { nativeHashStream } from './native-hash';

/**
 * Builds Deps for one Workers request from its bindings: PostgreSQL through the Hyperdrive binding
 * (`HYPERDRIVE.connectionString`) or DATABASE_URL, and the S3 blob store (R2's S3 API or any S3).
 * Workers have no file system, so PGlite and the file blob store are not available there; nor is
 * SMTP mail (no mailer: lib/mail logs each message as a warning).
 * @returns the deps and `done`, which closes the request's database client (run it in waitUntil).
 * @throws ConfigError when settings are invalid or no database/bucket is configured.
 */
export function createWorkerDeps(env: Record<string, unknown>): { deps: Deps; done: () => Promise<void> } {
  const hyperdrive = env.HYPERDRIVE as { connectionString?: string } | undefined;
  const config = loadConfig(env, hyperdrive?.connectionString ? { DATABASE_URL: hyperdrive.connectionString } : {});
  if (!config.DATABASE_URL) throw new Error('Workers need DATABASE_URL or a HYPERDRIVE binding');
  if (!config.S3_BUCKET) throw new Error('Workers need S3_BUCKET (R2 through its S3 API, or any S3)');
  // One connection per request: Workers cannot share sockets across requests.
  const client = postgres(config.DATABASE_URL, { max: 1, fetch_types: false, prepare: false, connection: { TimeZone: 'UTC' } });
  const db = drizzle(client, { schema }) as unknown as Db;
  const blobs = s3BlobStoreFromConfig(config);
  // No SMTP client here yet (nodemailer needs Node sockets): account mail is logged as a warning
  // by lib/mail sendAfterCommit, with or without EMAIL_HOST.
  return { deps: { db, blobs, config, log: createLogger(config.LOG_LEVEL), hashStream: nativeHashStream }, done: () => client.end({ timeout: 5 }) };
}
