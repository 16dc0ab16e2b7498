import { eq } from 'drizzle-orm';
import { blobs, type BlobRow } from '../../drizzle/schema';
import { onRollback, type Ctx } from '../context';
import type { Db } from '../db/client';
import { hashBytes } from './hash';
import { isBlobKey, type BlobStore } from './store';

export type { BlobStore } from './store';
export { readAll } from './store';

/**
 * Stores bytes as a content-addressed blob, inside the caller's transaction.
 * @param bytes the content; `contentType` is recorded on first store only.
 * @returns the `blobs` row (id, sha, md5, size, contentType).
 * Effects: writes the object to the blob store when it is not there yet and inserts the row. If the
 * transaction then rolls back, the object written by this call is removed again unless a row refers
 * to it, committed or being committed by a concurrent upload of the same bytes (the rollback hook
 * waits for that upload), so a failed request leaves no orphaned blob. Must run inside withTx.
 */
export async function storeBlob(ctx: Ctx, bytes: Uint8Array, contentType?: string | null): Promise<BlobRow> {
  const { sha, md5 } = await hashBytes(bytes);
  const inserted = await ctx.db
    .insert(blobs)
    .values({ sha, md5, size: bytes.byteLength, contentType: contentType ?? null })
    .onConflictDoNothing({ target: blobs.sha })
    .returning();
  const row = inserted[0] ?? (await ctx.db.select().from(blobs).where(eq(blobs.sha, sha)))[0]!;
  if (!(await ctx.blobs.has(sha))) {
    await ctx.blobs.put(sha, bytes, contentType ?? undefined);
    const root = ctx.tx?.root ?? ctx.db;
    // The hook runs after the transaction ended, so it works on the database outside it.
    onRollback(ctx, async () => {
      await deleteObjectIfUnreferenced(root, ctx.blobs, sha);
    });
  }
  return row;
}

/**
 * Deletes the store object `sha` unless a `blobs` row refers to it, safely against a concurrent
 * storeBlob of the same bytes. A check of committed rows alone is not: another transaction may
 * have inserted its row (not yet committed) and found the object present, so it never writes it
 * again. Here, in a transaction of its own, the row for `sha` is claimed first (inserted): a
 * concurrent storer's insert then waits on the unique index until the object is gone and the claim
 * removed, and writes the object itself; and if a row exists, or the storer it waited on commits
 * one, the insert claims nothing and the object stays. (PGlite runs one transaction at a time.)
 * Used by storeBlob's rollback hook, the orphan sweep and the purge (lib/forms/attachments.ts).
 * @param db the database outside any transaction. @returns whether the object was deleted.
 * Effects: deletes the store object; the claim row never outlives the transaction.
 */
export async function deleteObjectIfUnreferenced(db: Db, store: BlobStore, sha: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const claimed = await tx.insert(blobs).values({ sha, md5: '', size: 0 })
      .onConflictDoNothing({ target: blobs.sha }).returning({ id: blobs.id });
    if (claimed.length === 0) return false;
    await store.delete(sha);
    await tx.delete(blobs).where(eq(blobs.id, claimed[0]!.id));
    return true;
  });
}

/**
 * Deletes store objects that no `blobs` row refers to (left by a process crash between the store
 * write and the commit). A maintenance job (CLI `blobs-sweep`); safe while uploads are in flight:
 * an object whose row is not committed yet is waited for, not deleted (deleteObjectIfUnreferenced).
 * Run it outside a transaction.
 * @returns the keys deleted. Effects: deletes store objects; never touches the database.
 */
export async function sweepOrphanBlobs(ctx: Ctx): Promise<string[]> {
  const deleted: string[] = [];
  for await (const key of ctx.blobs.list()) {
    if (!isBlobKey(key)) continue;
    if (await deleteObjectIfUnreferenced(ctx.db, ctx.blobs, key)) deleted.push(key);
  }
  return deleted;
}
