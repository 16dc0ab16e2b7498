/**
 * Connection settings per platform (lib/db/client.ts postgresOptions, lib/runtime/lambda.ts
 * LAMBDA_DEFAULTS) on real PostgreSQL: Lambda keeps one connection that closes when idle, and
 * DATABASE_PREPARE=false leaves no prepared statement on the server (what poolers need).
 */
import postgres from 'postgres';
import { describe, expect, test } from 'vitest';
import { postgresOptions } from '../../lib/db/client';
import { loadConfig } from '../../lib/runtime/env';
import { LAMBDA_DEFAULTS } from '../../lib/runtime/lambda';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

describe('PostgreSQL connection settings', () => {
  test('Node keeps its pool; Lambda one connection with an idle timeout; the environment wins', () => {
    const node = postgresOptions(loadConfig({}));
    expect([node.max, node.idle_timeout, node.prepare]).toEqual([10, undefined, true]);
    const lambda = postgresOptions(loadConfig({ ...LAMBDA_DEFAULTS }));
    expect([lambda.max, lambda.idle_timeout, lambda.prepare]).toEqual([1, 20, true]);
    const pooled = postgresOptions(loadConfig({ ...LAMBDA_DEFAULTS, DATABASE_POOL_MAX: '2', DATABASE_PREPARE: 'false' }));
    expect([pooled.max, pooled.prepare]).toEqual([2, false]);
  });

  for (const prepare of [true, false]) {
    test(`DATABASE_PREPARE=${prepare}: ${prepare ? 'named statements on the server' : 'none left on the server'}`, async () => {
      const sql = postgres(url, postgresOptions(loadConfig({ DATABASE_POOL_MAX: '1', DATABASE_PREPARE: String(prepare) })));
      try {
        for (let i = 0; i < 3; i += 1) expect((await sql`select ${i}::int + 1 as n`)[0]!.n).toBe(i + 1);
        const prepared = await sql`select count(*)::int as count from pg_prepared_statements where statement like 'select $1::int + 1%'`;
        expect(prepared[0]!.count > 0).toBe(prepare);
      } finally {
        await sql.end({ timeout: 5 });
      }
    });
  }

  test('an idle connection is closed after DATABASE_IDLE_TIMEOUT seconds', async () => {
    const sql = postgres(url, postgresOptions(loadConfig({ DATABASE_POOL_MAX: '1', DATABASE_IDLE_TIMEOUT: '1' })));
    const watcher = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const pid = (await sql`select pg_backend_pid() as pid`)[0]!.pid as number;
      await new Promise((r) => setTimeout(r, 2500));
      const alive = await watcher`select count(*)::int as n from pg_stat_activity where pid = ${pid}`;
      expect(alive[0]!.n).toBe(0);
    } finally {
      await sql.end({ timeout: 5 });
      await watcher.end({ timeout: 5 });
    }
  });
});
