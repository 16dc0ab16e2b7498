import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from '../../drizzle/schema';
import { fetchS3BlobStoreFromConfig } from '../blobs/s3-fetch';
import type { Deps } from '../context';
import type { Db } from '../db/client';
import { createLogger } from '../log';
import { setFrequencyListSource } from '../users/zxcvbn-lists';
import { loadConfig } from './env';
import { nativeHashStream } from './native-hash';

/**
 * Builds Deps for one Workers request from its bindings: PostgreSQL through the Hyperdrive binding
 * (`HYPERDRIVE.connectionString`) or DATABASE_URL, and the S3 blob store (R2's S3 API or any S3)
 * through lib/blobs/s3-fetch.ts (fetch and WebCrypto: no AWS SDK in any Worker bundle).
 * With an ASSETS binding (the users Worker), zxcvbn's dictionaries are fetched from it on the
 * first password check (lib/users/zxcvbn.ts). Workers have no file system, so PGlite and the file blob store are not available there; nor is
 * SMTP mail (no mailer: lib/mail logs each message as a warning).
 * @returns the deps and `done`, which closes the request's database client (run it in waitUntil).
 * @throws ConfigError when settings are invalid; Error when no database, bucket or S3 credentials
 *   are configured.
 */
export function createWorkerDeps(env: Record<string, unknown>): { deps: Deps; done: () => Promise<void> } {
  const hyperdrive = env.HYPERDRIVE as { connectionString?: string } | undefined;
  const config = loadConfig(env, hyperdrive?.connectionString ? { DATABASE_URL: hyperdrive.connectionString } : {});
  if (!config.DATABASE_URL) throw new Error('Workers need DATABASE_URL or a HYPERDRIVE binding');
  if (!config.S3_BUCKET) throw new Error('Workers need S3_BUCKET (R2 through its S3 API, or any S3)');
  // One connection per request: Workers cannot share sockets across requests.
  const client = postgres(config.DATABASE_URL, { max: 1, fetch_types: false, prepare: false, connection: { TimeZone: 'UTC' } });
  const db = drizzle(client, { schema }) as unknown as Db;
  const blobs = fetchS3BlobStoreFromConfig(config);
  // The users Worker's static assets hold zxcvbn's dictionaries (lib/users/zxcvbn.ts).
  const assets = env.ASSETS as { fetch(url: string): Promise<Response> } | undefined;
  if (assets) {
    setFrequencyListSource(async () => {
      const res = await assets.fetch('https://assets.invalid/frequency_lists.js');
      if (!res.ok) throw new Error(`zxcvbn's frequency lists: ASSETS answered ${res.status}`);
      return res.text();
    });
  }
  // No SMTP client here yet (nodemailer needs Node sockets): account mail is logged as a warning
  // by lib/mail sendAfterCommit, with or without EMAIL_HOST.
  return { deps: { db, blobs, config, log: createLogger(config.LOG_LEVEL), hashStream: nativeHashStream }, done: () => client.end({ timeout: 5 }) };
}
