import { eq, sql } from 'drizzle-orm';
import { blobs, type BlobRow } from '../../drizzle/schema';
import { onRollback, type Ctx } from '../context';
import type { Db } from '../db/client';
import { hashBytes } from './hash';
import { isBlobKey } from './store';

export type { BlobStore } from './store';
export { readAll } from './store';

/**
 * Stores bytes as a content-addressed blob, inside the caller's transaction.
 * @param bytes the content; `contentType` is recorded on first store only.
 * @returns the `blobs` row (id, sha, md5, size, contentType).
 * Effects: writes the object to the blob store when it is not there yet and inserts the row. If the
 * transaction then rolls back, the object written by this call is removed again (unless a committed
 * row now refers to it), so a failed request leaves no orphaned blob. Must run inside withTx.
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
    // The hook runs after the transaction ended, so it asks the database outside it.
    onRollback(ctx, async () => {
      if (!(await blobRowExists(root, sha))) await ctx.blobs.delete(sha);
    });
  }
  return row;
}

async function blobRowExists(db: Db, sha: string): Promise<boolean> {
  const rows = await db.select({ one: sql`1` }).from(blobs).where(eq(blobs.sha, sha));
  return rows.length > 0;
}

/**
 * Deletes store objects that no `blobs` row refers to (left by a process crash between the store
 * write and the commit). A maintenance job (CLI `blobs-sweep`); an upload in flight has no
 * committed row yet, so run it when the server is quiet.
 * @returns the keys deleted. Effects: deletes store objects; never touches the database.
 */
export async function sweepOrphanBlobs(ctx: Ctx): Promise<string[]> {
  const deleted: string[] = [];
  for await (const key of ctx.blobs.list()) {
    if (!isBlobKey(key)) continue;
    if (!(await blobRowExists(ctx.db, key))) {
      await ctx.blobs.delete(key);
      deleted.push(key);
    }
  }
  return deleted;
}
