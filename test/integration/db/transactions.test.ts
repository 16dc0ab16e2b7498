import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { jobs } from '../../../drizzle/schema';
import { systemCtx, withTx, type Ctx } from '../../../lib/context';
import type { Db } from '../../../lib/db/client';
import { createLogger } from '../../../lib/log';
import { ownDatabase, type OwnDatabase } from '../../helpers/own-database';

// On postgres.js a transaction's `begin` goes out with its first statement (lib/db/statement-cache
// pipelinedBegin) instead of a round trip of its own: what a caller of withTx relies on must hold
// as with postgres.js's own `begin` (commit, rollback, nested savepoints, the pool given back).
let own: OwnDatabase;
let ctx: Ctx;
beforeAll(async () => {
  own = await ownDatabase('fb_transactions');
  ctx = systemCtx({ db: own.database.db, config: own.config, log: createLogger('silent') } as Parameters<typeof systemCtx>[0]);
});
afterAll(async () => { await own?.close(); });

const count = async (db: Db, action: string) => (await db.select({ n: sql<number>`count(*)::int` }).from(jobs).where(eq(jobs.action, action)))[0]!.n;
const insert = (db: Db, action: string) => db.insert(jobs).values({ action, payload: {} });

describe('transactions (withTx)', () => {
  test('the first statement runs inside the transaction, and what it wrote commits', async () => {
    const out = await withTx(ctx, async (tx) => {
      await insert(tx.db, 'tx.commit');
      // Inside a transaction: now() is its start time, the same for every statement.
      const [a] = await tx.db.execute<{ t: string }>(sql`select now()::text as t, pg_sleep(0.01)`) as unknown as Array<{ t: string }>;
      const [b] = await tx.db.execute<{ t: string }>(sql`select now()::text as t`) as unknown as Array<{ t: string }>;
      return own.config.DATABASE_URL ? a!.t === b!.t : true;
    });
    expect(out).toBe(true);
    expect(await count(own.database.db, 'tx.commit')).toBe(1);
  });

  test('an error thrown in the transaction rolls back all of it, and the pool keeps serving', async () => {
    // More failed transactions than the pool has connections: each must give its connection back.
    for (let i = 0; i < 12; i += 1) {
      await expect(withTx(ctx, async (tx) => {
        await insert(tx.db, 'tx.rollback');
        throw new Error('no');
      })).rejects.toThrow('no');
    }
    expect(await count(own.database.db, 'tx.rollback')).toBe(0);
  });

  test('a statement that failed without being awaited fails the transaction; nothing of it commits', async () => {
    await expect(withTx(ctx, async (tx) => {
      await insert(tx.db, 'tx.unnoticed');
      // Fired and forgotten: the caller never sees its error, the transaction must.
      tx.db.execute(sql`select 1 / 0`).then(() => {}, () => {});
      await tx.db.execute(sql`select 1`).catch(() => {});
    })).rejects.toThrow();
    expect(await count(own.database.db, 'tx.unnoticed')).toBe(0);
  });

  test('a nested transaction is a savepoint: its rollback leaves the outer work to commit', async () => {
    await withTx(ctx, async (tx) => {
      await insert(tx.db, 'tx.outer');
      await tx.db.transaction(async (inner) => {
        await insert(inner as unknown as Db, 'tx.inner');
        throw new Error('inner');
      }).catch((e: Error) => { if (e.message !== 'inner') throw e; });
      await tx.db.transaction(async (inner) => { await insert(inner as unknown as Db, 'tx.inner.kept'); });
    });
    expect([await count(own.database.db, 'tx.outer'), await count(own.database.db, 'tx.inner'), await count(own.database.db, 'tx.inner.kept')])
      .toEqual([1, 0, 1]);
  });

  test('concurrent transactions each commit their own work', async () => {
    await Promise.all(Array.from({ length: 30 }, (_, i) => withTx(ctx, async (tx) => {
      await insert(tx.db, 'tx.concurrent');
      if (i % 3 === 0) throw new Error('skip');
    }).catch((e: Error) => { if (e.message !== 'skip') throw e; })));
    expect(await count(own.database.db, 'tx.concurrent')).toBe(20);
  });
});
