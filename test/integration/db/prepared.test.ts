import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { jobs } from '../../../drizzle/schema';
import type { Db } from '../../../lib/db/client';
import { prepared } from '../../../lib/db/prepared';
import { ownDatabase, type OwnDatabase } from '../../helpers/own-database';

// lib/db/prepared builds a named query once per driver and hands other handles (each request's
// transaction is a new one) a copy bound to their own client: the copy must run inside that
// transaction, not on the connection the first build came from.
let own: OwnDatabase;
beforeAll(async () => { own = await ownDatabase('fb_prepared'); });
afterAll(async () => { await own?.close(); });

const countByAction = (db: Db, name: string) => prepared(db, name, (d) => d
  .select({ n: sql<number>`count(*)::int` }).from(jobs).where(eq(jobs.action, sql.placeholder('action'))).prepare(name));

class Rollback extends Error {}

describe('prepared queries across handles', () => {
  test('a query first built on the database runs inside a later transaction, seeing its uncommitted rows', async () => {
    const db = own.database.db;
    expect((await countByAction(db, 'fb_test_count_a').execute({ action: 'prepared.test' }))[0]!.n).toBe(0);
    const seen: number[] = [];
    await db.transaction(async (tx) => {
      await tx.insert(jobs).values({ action: 'prepared.test', payload: {} });
      const copy = countByAction(tx as unknown as Db, 'fb_test_count_a');
      expect(copy).not.toBe(countByAction(db, 'fb_test_count_a'));
      seen.push((await copy.execute({ action: 'prepared.test' }))[0]!.n);
      throw new Rollback();
    }).catch((e) => { if (!(e instanceof Rollback)) throw e; });
    expect(seen).toEqual([1]);
    // Rolled back: the database's own handle sees nothing.
    expect((await countByAction(db, 'fb_test_count_a').execute({ action: 'prepared.test' }))[0]!.n).toBe(0);
  });

  test('a query first built in a transaction serves the database after that transaction ended', async () => {
    const db = own.database.db;
    await db.transaction(async (tx) => {
      expect((await countByAction(tx as unknown as Db, 'fb_test_count_b').execute({ action: 'prepared.other' }))[0]!.n).toBe(0);
    });
    await db.insert(jobs).values({ action: 'prepared.other', payload: {}, doneAt: new Date() });
    expect((await countByAction(db, 'fb_test_count_b').execute({ action: 'prepared.other' }))[0]!.n).toBe(1);
    // And the same handle gets the same query back (built once).
    expect(countByAction(db, 'fb_test_count_b')).toBe(countByAction(db, 'fb_test_count_b'));
  });
});
