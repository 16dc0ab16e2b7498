import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eq } from 'drizzle-orm';
import { blobs } from '../../../drizzle/schema';
import { readAll, storeBlob, sweepOrphanBlobs, type BlobStore } from '../../../lib/blobs';
import { hashBytes } from '../../../lib/blobs/hash';
import { createS3BlobStore } from '../../../lib/blobs/s3';
import { systemCtx, withTx } from '../../../lib/context';
import { createFsBlobStore } from '../../../lib/runtime/fs-blobs';
import { harness } from '../../helpers/harness';
import { startS3, type RunningS3 } from '../../helpers/s3rver';

let s3: RunningS3;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => {
  await s3?.stop();
});

const fsDirs: string[] = [];
afterAll(() => {
  for (const d of fsDirs) rmSync(d, { recursive: true, force: true });
});
const stores: Array<[string, () => BlobStore]> = [
  ['file store', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fieldbase-fs-'));
    fsDirs.push(dir);
    return createFsBlobStore(dir);
  }],
  ['S3 store (s3rver)', () => createS3BlobStore({
    bucket: s3.bucket, endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true,
    accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', prefix: `t${Date.now()}${Math.random().toString(36).slice(2)}/`,
  })],
];

const bytes = (s: string) => new TextEncoder().encode(s);

describe.each(stores)('%s', (_name, make) => {
  test('put, has, get, list and delete by content hash', async () => {
    const store = make();
    const body = bytes('hello, field team');
    const { sha } = await hashBytes(body);
    expect(await store.has(sha)).toBe(false);
    expect(await store.get(sha)).toBeNull();
    await store.put(sha, body, 'text/plain');
    await store.put(sha, body, 'text/plain'); // idempotent
    expect(await store.has(sha)).toBe(true);
    expect(new TextDecoder().decode(await readAll((await store.get(sha))!))).toBe('hello, field team');
    const keys: string[] = [];
    for await (const k of store.list()) keys.push(k);
    expect(keys).toEqual([sha]);
    await store.delete(sha);
    await store.delete(sha); // absent is fine
    expect(await store.has(sha)).toBe(false);
  });

  test('binary content round-trips byte for byte (1 MiB)', async () => {
    const store = make();
    const body = new Uint8Array(1 << 20).map((_, i) => (i * 7919) % 256);
    const { sha } = await hashBytes(body);
    await store.put(sha, body);
    expect(Buffer.from(await readAll((await store.get(sha))!)).equals(Buffer.from(body))).toBe(true);
  });

  test('storeBlob records SHA-256 and MD5 and writes the object in the same transaction', async () => {
    const h = await harness();
    const ctx = { ...systemCtx({ ...h.deps, blobs: make() }) };
    const body = bytes('attachment bytes');
    const row = await withTx(ctx, (tx) => storeBlob(tx, body, 'text/plain'));
    // md5("attachment bytes") and sha256 as the hashes OpenRosa and the store use.
    expect(row.md5).toBe((await hashBytes(body)).md5);
    expect(row.sha).toMatch(/^[0-9a-f]{64}$/);
    expect(row.size).toBe(body.byteLength);
    expect(await ctx.blobs.has(row.sha)).toBe(true);
    // Same content again: one row, one object.
    const again = await withTx(ctx, (tx) => storeBlob(tx, body, 'text/plain'));
    expect(again.id).toBe(row.id);
  });

  test('a failed transaction leaves neither a row nor an orphaned object', async () => {
    const h = await harness();
    const ctx = systemCtx({ ...h.deps, blobs: make() });
    const body = bytes(`doomed ${Math.random()}`);
    const { sha } = await hashBytes(body);
    await expect(withTx(ctx, async (tx) => {
      await storeBlob(tx, body);
      expect(await tx.blobs.has(sha)).toBe(true);
      throw new Error('request failed after the upload');
    })).rejects.toThrow('request failed');
    expect(await h.db.select().from(blobs).where(eq(blobs.sha, sha))).toEqual([]);
    expect(await ctx.blobs.has(sha)).toBe(false);
  });

  test('sweepOrphanBlobs deletes objects no row refers to and keeps the rest', async () => {
    const h = await harness();
    const ctx = systemCtx({ ...h.deps, blobs: make() });
    const kept = await withTx(ctx, (tx) => storeBlob(tx, bytes('kept')));
    const orphan = bytes('orphan');
    const orphanSha = (await hashBytes(orphan)).sha;
    await ctx.blobs.put(orphanSha, orphan);
    expect(await sweepOrphanBlobs(ctx)).toEqual([orphanSha]);
    expect(await ctx.blobs.has(kept.sha)).toBe(true);
  });
});
