/**
 * Concurrent uploads of the same bytes (issue 18): blobs are content-addressed, so two transactions
 * storing identical bytes share one store object. One of them rolling back must never delete the
 * object the other committed a row for, and the orphan sweep must never delete an upload in flight.
 *
 * Real concurrent transactions need a database of their own (the harness runs each test in one
 * rolled-back transaction): on PostgreSQL (DATABASE_URL) a fresh database on the same server,
 * dropped at the end; otherwise an in-memory PGlite (one transaction at a time, but the rollback
 * hook runs outside any transaction, so the race is there too). The interleavings are forced by a
 * store that holds chosen calls at a gate (it delegates every call to the real file store), with a
 * timeout so that a correct implementation, which waits on the other transaction, is not stuck.
 */
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { blobs } from '../../../drizzle/schema';
import { readAll, storeBlob, sweepOrphanBlobs, type BlobStore } from '../../../lib/blobs';
import { hashBytes } from '../../../lib/blobs/hash';
import { systemCtx, withTx, type Deps } from '../../../lib/context';
import { createLogger } from '../../../lib/log';
import { createFsBlobStore } from '../../../lib/runtime/fs-blobs';
import type { NodeDatabase } from '../../../lib/runtime/node';
import { ownDatabase, type OwnDatabase } from '../../helpers/own-database';

let own: OwnDatabase;
let database: NodeDatabase;
let deps: Deps;
let files: BlobStore;

/** Calls to hold: `delete` waits for `release()` (or the timeout) after telling `reached`. */
const gate = {
  deleteHeld: false,
  reached: () => {},
  released: Promise.resolve(),
};

beforeAll(async () => {
  own = await ownDatabase('fb_blob_race');
  database = own.database;
  const { config } = own;
  files = createFsBlobStore(own.blobDir);
  const gated: BlobStore = {
    kind: files.kind,
    put: (k, b, t) => files.put(k, b, t),
    get: (k) => files.get(k),
    has: (k) => files.has(k),
    list: () => files.list(),
    async delete(k) {
      if (gate.deleteHeld) {
        gate.reached();
        await gate.released;
      }
      return files.delete(k);
    },
  };
  deps = { db: database.db, blobs: gated, config, log: createLogger('silent') };
}, 60_000);

afterAll(async () => {
  await own?.close();
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Holds store deletions until `until` settles or `ms` pass; resolves `reached` at the first one. */
function holdDeletes(): { reached: Promise<void>; releaseWhen: (until: Promise<unknown>, ms?: number) => void } {
  let reach!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  let release!: () => void;
  gate.released = new Promise<void>((r) => (release = r));
  gate.reached = reach;
  gate.deleteHeld = true;
  return {
    reached,
    releaseWhen: (until, ms = 1500) => {
      void Promise.race([until.catch(() => undefined), sleep(ms)]).then(() => {
        gate.deleteHeld = false;
        release();
      });
    },
  };
}

async function stateOf(bytes: Uint8Array): Promise<{ rows: number; object: boolean; same: boolean }> {
  const { sha } = await hashBytes(bytes);
  const rows = await database.db.select().from(blobs).where(eq(blobs.sha, sha));
  const stream = await files.get(sha);
  const stored = stream ? await readAll(stream) : null;
  return { rows: rows.length, object: stored != null, same: stored != null && Buffer.from(stored).equals(Buffer.from(bytes)) };
}

class Planned extends Error {}

describe('two uploads of identical bytes, one rolled back', () => {
  test('the rollback hook deleting while the other upload stores the same bytes keeps the object', async () => {
    const bytes = randomBytes(4096);
    const held = holdDeletes();
    // A stores the bytes first (writing the object), then fails: its rollback hook goes to delete.
    const a = withTx(systemCtx(deps), async (tx) => {
      await storeBlob(tx, bytes, 'image/jpeg');
      throw new Planned('roll back');
    }).catch((e: unknown) => e);
    await Promise.race([held.reached, a]);
    // B uploads the same bytes while A's hook is about to delete the object, and commits.
    const b = withTx(systemCtx(deps), async (tx) => storeBlob(tx, bytes, 'image/jpeg'));
    held.releaseWhen(b);
    expect(await a).toBeInstanceOf(Planned);
    const row = await b;
    expect(row.size).toBe(4096);
    expect(await stateOf(bytes)).toEqual({ rows: 1, object: true, same: true });
  });

  test('the other upload waiting on the failing one, then committing after the hook ran, keeps the object', async () => {
    const bytes = randomBytes(4096);
    let failA!: () => void;
    const aMayFail = new Promise<void>((r) => (failA = r));
    let aStored!: () => void;
    const aHasStored = new Promise<void>((r) => (aStored = r));
    const a = withTx(systemCtx(deps), async (tx) => {
      await storeBlob(tx, bytes);
      aStored();
      await aMayFail;
      throw new Planned('roll back');
    }).catch((e: unknown) => e);
    await aHasStored;
    // B stores the same bytes (on PostgreSQL its insert waits on A's row) and commits only once A's
    // rollback (and its hook) is over, or after a while when the hook rightly waits on B. A store
    // deletion is held until B has stored (found the object present).
    const held = holdDeletes();
    let bStored!: () => void;
    const bHasStored = new Promise<void>((r) => (bStored = r));
    held.releaseWhen(bHasStored);
    const b = withTx(systemCtx(deps), async (tx) => {
      const row = await storeBlob(tx, bytes);
      bStored();
      await Promise.race([a, sleep(1500)]);
      return row;
    });
    await sleep(200);
    failA();
    expect(await a).toBeInstanceOf(Planned);
    await b;
    expect(await stateOf(bytes)).toEqual({ rows: 1, object: true, same: true });
  });

  test('both rolled back: the object goes, and no row is left', async () => {
    const bytes = randomBytes(2048);
    const fail = (ms: number) => withTx(systemCtx(deps), async (tx) => {
      await storeBlob(tx, bytes);
      await sleep(ms);
      throw new Planned('roll back');
    }).catch((e: unknown) => e);
    const [x, y] = await Promise.all([fail(50), fail(100)]);
    expect(x).toBeInstanceOf(Planned);
    expect(y).toBeInstanceOf(Planned);
    expect(await stateOf(bytes)).toEqual({ rows: 0, object: false, same: false });
  });
});

describe('the orphan sweep', () => {
  test('leaves an upload in flight alone and deletes a true orphan', async () => {
    const inFlight = randomBytes(1024);
    const orphan = randomBytes(1024);
    const { sha: orphanSha } = await hashBytes(orphan);
    await files.put(orphanSha, orphan);
    let stored!: () => void;
    const hasStored = new Promise<void>((r) => (stored = r));
    const upload = withTx(systemCtx(deps), async (tx) => {
      const row = await storeBlob(tx, inFlight);
      stored();
      await sleep(800); // the sweep runs meanwhile; on PostgreSQL it waits for this commit
      return row;
    });
    await hasStored;
    const swept = await sweepOrphanBlobs(systemCtx(deps));
    await upload;
    expect(swept).toContain(orphanSha);
    expect(await stateOf(inFlight)).toEqual({ rows: 1, object: true, same: true });
    expect(await files.has(orphanSha)).toBe(false);
  });
});
