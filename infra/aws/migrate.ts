/**
 * The migration step of an AWS deploy: a CloudFormation custom resource (infra/aws/cdk/stack.ts)
 * invokes this function on every deploy whose migrations changed, before the group functions are
 * updated. It applies drizzle/migrations (copied next to the bundle by infra/aws/build.ts) and
 * syncs the system roles, as `npm run db:migrate` does locally. Deleting the stack leaves the
 * database as it is.
 */
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import * as schema from '../../drizzle/schema';
import { postgresOptions, type Db } from '../../lib/db/client';
import { syncSystemRoles } from '../../lib/roles';
import { loadConfig, processEnv } from '../../lib/runtime/env';

/** The custom resource event fields used here (CloudFormation, through the CDK Provider). */
export interface MigrateEvent {
  RequestType?: 'Create' | 'Update' | 'Delete';
  PhysicalResourceId?: string;
}

/**
 * Applies pending migrations to DATABASE_URL.
 * @param opts.migrationsFolder default: `migrations` beside the bundle.
 * @returns the custom resource's answer (its physical id stays the same across updates).
 * @throws whatever the migration throws: the deploy fails and CloudFormation rolls back.
 */
export async function runMigrations(event: MigrateEvent = {}, opts: { migrationsFolder?: string } = {}): Promise<{ PhysicalResourceId: string; Data: { applied: string } }> {
  const PhysicalResourceId = event.PhysicalResourceId ?? 'fieldbase-migrations';
  if (event.RequestType === 'Delete') return { PhysicalResourceId, Data: { applied: 'none' } };
  const config = loadConfig(processEnv());
  if (!config.DATABASE_URL) throw new Error('migrate: DATABASE_URL is not set');
  const client = postgres(config.DATABASE_URL, { ...postgresOptions({ ...config, DATABASE_POOL_MAX: 1 }) });
  try {
    const db = drizzle(client, { schema }) as unknown as Db;
    const migrationsFolder = opts.migrationsFolder ?? fileURLToPath(new URL('./migrations', import.meta.url));
    await migrate(db as never, { migrationsFolder });
    await syncSystemRoles(db);
  } finally {
    await client.end({ timeout: 5 });
  }
  return { PhysicalResourceId, Data: { applied: new Date().toISOString() } };
}

/** The Lambda entry (the CDK Provider's onEvent handler). */
export const handler = (event: MigrateEvent) => runMigrations(event);
