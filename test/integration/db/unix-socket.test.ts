/**
 * DATABASE_URL may name PostgreSQL's Unix socket directory the libpq way (`?host=/var/run/postgresql`):
 * the server opens, migrates and answers over the socket (the server sees no client address).
 * Runs on PostgreSQL when the socket directory is there (this machine's cluster); else skipped.
 */
import { existsSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { openDatabase } from '../../../lib/runtime/node';
import { testConfig } from '../../setup/config';

const SOCKET_DIR = '/var/run/postgresql';
const mainUrl = process.env.DATABASE_URL;
const runs = mainUrl != null && existsSync(`${SOCKET_DIR}/.s.PGSQL.${new URL(mainUrl).port || '5432'}`);

describe.runIf(runs)('DATABASE_URL over a Unix socket', () => {
  test('opens, reads the migrated schema and answers with no client address', async () => {
    const url = new URL(mainUrl!);
    const database = await openDatabase(testConfig({ DATABASE_URL: `${url.protocol}//${url.username}@localhost:${url.port || '5432'}${url.pathname}?host=${SOCKET_DIR}` }));
    try {
      const rows = await database.db.execute(sql`select inet_server_addr()::text as addr, (select count(*)::int from actors) >= 0 as migrated`) as unknown as Array<{ addr: string | null; migrated: boolean }>;
      expect(rows).toEqual([{ addr: null, migrated: true }]);
    } finally {
      await database.close();
    }
  });
});
