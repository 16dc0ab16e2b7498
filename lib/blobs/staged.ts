/**
 * Staged blobs: media parts of a submission POST written to the blob store while they arrive (the
 * streaming multipart reader, lib/http/multipart.ts), hashed as they stream, and made real blobs
 * inside the submission's transaction (`storeStagedBlob`). Memory per part is bounded by a part
 * buffer (the store's upload part, 8 MiB on S3), not by the file's size: the chunks written are
 * views of the reader's one buffer, handed to the store one at a time (`handoff`).
 *
 * A part small enough for the in-memory budget stays in memory and is stored as storeBlob stores
 * bytes. A larger one streams to a temporary key (`putTemporary`, outside the content-addressed
 * keys: the orphan sweep never sees it, a bucket lifecycle rule expires what a crash leaves), and
 * the transaction copies it to its hash key (`copyTemporary`: S3 CopyObject, a file hard link)
 * after inserting the `blobs` row, the same order storeBlob keeps, so a concurrent sweep or
 * rollback waits on the row (deleteObjectIfUnreferenced). The temporary objects are deleted by
 * `discardStaged` once the request ends (temporary objects always are).
 */
import { md5 as md5js } from '@noble/hashes/legacy.js';
import { sha256 as sha256js } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { eq } from 'drizzle-orm';
import { blobs, type BlobRow } from '../../drizzle/schema';
import { concatBytes } from '../bytes';
import { onRollback, type Ctx, type Deps } from '../context';
import { deleteObjectIfUnreferenced } from './index';
import type { BlobStore } from './store';

/** A blob whose bytes are hashed and held in memory or under a temporary key of the store. */
export interface StagedBlob {
  sha: string;
  md5: string;
  /** Bytes. */
  size: number;
  /** The bytes, when small enough to stay in memory. */
  bytes?: Uint8Array;
  /** The temporary key holding the bytes otherwise; cleared once discarded. */
  tempKey?: string;
}

/** SHA-256 and MD5 of a stream of chunks, as lowercase hex (Deps.hashStream or JavaScript). */
export interface StreamHasher {
  update(chunk: Uint8Array): void;
  digest(): { sha: string; md5: string };
}

/** The JavaScript hasher (@noble/hashes): where no native one is given (tests, plain runtimes). */
export function jsHasher(): StreamHasher {
  const sha = sha256js.create();
  const md5 = md5js.create();
  return {
    update(chunk) {
      sha.update(chunk);
      md5.update(chunk);
    },
    digest: () => ({ sha: bytesToHex(sha.digest()), md5: bytesToHex(md5.digest()) }),
  };
}

/** Whether the store can take a streamed upload (S3 and the file store can; a test double may not). */
export const canStream = (store: BlobStore): boolean =>
  typeof store.putTemporary === 'function' && typeof store.copyTemporary === 'function';

/**
 * A stream the store reads one chunk at a time (putTemporary's contract: it is done with a chunk
 * once it reads the next one): `offer(chunk)` resolves when the store reads again, so the caller
 * may then reuse the chunk's memory. `close` ends the stream, `fail` errors it (pending offers reject).
 */
function handoff(): {
  readable: ReadableStream<Uint8Array>;
  offer(chunk: Uint8Array): Promise<void>;
  close(): void;
  fail(err: unknown): void;
} {
  type Slot = { chunk: Uint8Array; taken: () => void; refused: (err: unknown) => void } | 'close';
  let slot: Slot | null = null;
  let wake: (() => void) | null = null;
  /** The offer whose chunk the store holds: settled when the store reads again or fails. */
  let held: { taken: () => void; refused: (err: unknown) => void } | null = null;
  let failure: { err: unknown } | null = null;
  let control!: ReadableStreamDefaultController<Uint8Array>;
  const refuse = (err: unknown) => {
    failure ??= { err };
    held?.refused(err);
    held = null;
    if (slot && slot !== 'close') slot.refused(err);
    slot = null;
    wake?.();
  };
  const readable = new ReadableStream<Uint8Array>({
    start: (c) => { control = c; },
    async pull(c) {
      // A read after a chunk: the store is done with it.
      held?.taken();
      held = null;
      while (!slot && !failure) await new Promise<void>((r) => { wake = r; });
      wake = null;
      const s = slot;
      slot = null;
      if (failure || !s) return;
      if (s === 'close') {
        c.close();
        return;
      }
      held = s;
      c.enqueue(s.chunk);
    },
    cancel: (reason) => refuse(reason ?? new Error('upload cancelled')),
  }, { highWaterMark: 0 });
  return {
    readable,
    offer(chunk) {
      if (failure) return Promise.reject(failure.err);
      return new Promise<void>((taken, refused) => {
        slot = { chunk, taken, refused };
        wake?.();
      });
    },
    close() {
      if (failure) return;
      slot = 'close';
      wake?.();
    },
    fail(err) {
      if (failure) return;
      refuse(err);
      try {
        control.error(err);
      } catch {
        // already closed
      }
    },
  };
}

/**
 * Receives one file part's bytes as they arrive and stages them: in memory up to `memoryBudget`
 * bytes (shared by the request's parts, see `budget`), beyond that streamed to a temporary key.
 * Call `write` for each chunk (awaiting it: that is the backpressure), then `end` or `abort`. A
 * chunk is done with once its `write` settles (bytes kept in memory are copied), so the caller may
 * refill its buffer then (lib/http/multipart.ts PartSink).
 * @param deps blob store and, optionally, the native hasher.
 * @param budget the request's remaining in-memory bytes, decreased by what this part keeps.
 */
export function stagePart(
  deps: Pick<Deps, 'blobs' | 'hashStream'>, contentType: string | null, budget: { bytes: number },
): { write(chunk: Uint8Array): Promise<void>; end(): Promise<StagedBlob>; abort(): Promise<void> } {
  const hasher = deps.hashStream?.() ?? jsHasher();
  const streaming = canStream(deps.blobs);
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  let size = 0;
  let pipe: ReturnType<typeof handoff> | null = null;
  let upload: Promise<string> | null = null;
  const startUpload = async (chunk: Uint8Array) => {
    // One chunk in flight between the parser and the upload: the store's part buffer is the bound.
    pipe = handoff();
    const p = pipe;
    upload = deps.blobs.putTemporary!(p.readable, contentType ?? 'application/octet-stream');
    // An upload that fails errors the pipe, so an offer waiting on it fails rather than waits
    // forever for a reader that is gone.
    upload.catch((err: unknown) => p.fail(err));
    const first = held;
    budget.bytes += heldBytes;
    held = [];
    heldBytes = 0;
    for (const c of first) await p.offer(c);
    await p.offer(chunk);
  };
  return {
    async write(chunk) {
      if (chunk.byteLength === 0) return;
      hasher.update(chunk);
      size += chunk.byteLength;
      if (pipe) return pipe.offer(chunk);
      if (!streaming || chunk.byteLength <= budget.bytes) {
        // A copy: the chunk's buffer is refilled once this write returns.
        held.push(chunk.slice());
        heldBytes += chunk.byteLength;
        budget.bytes -= chunk.byteLength;
        return;
      }
      await startUpload(chunk);
    },
    async end() {
      const { sha, md5 } = hasher.digest();
      if (!pipe) return { sha, md5, size, bytes: concatBytes(held, heldBytes) };
      pipe.close();
      return { sha, md5, size, tempKey: await upload! };
    },
    async abort() {
      budget.bytes += heldBytes;
      held = [];
      if (!pipe) return;
      pipe.fail(new Error('part aborted'));
      const key = await upload!.catch(() => null);
      if (key) await deps.blobs.delete(key).catch(() => undefined);
    },
  };
}

/**
 * Makes a staged blob a stored blob inside the caller's transaction, as storeBlob does for bytes:
 * the `blobs` row first (content-addressed: an existing row is reused), then the object under its
 * hash key when the store has none (bytes put, or the temporary object copied).
 * @returns the `blobs` row. Effects: a `blobs` row; the store object; on rollback the object is
 *   removed again unless a row refers to it (deleteObjectIfUnreferenced). Must run inside withTx.
 */
export async function storeStagedBlob(ctx: Ctx, staged: StagedBlob, contentType?: string | null): Promise<BlobRow> {
  const { sha, md5, size } = staged;
  const inserted = await ctx.db
    .insert(blobs)
    .values({ sha, md5, size, contentType: contentType ?? null })
    .onConflictDoNothing({ target: blobs.sha })
    .returning();
  const row = inserted[0] ?? (await ctx.db.select().from(blobs).where(eq(blobs.sha, sha)))[0]!;
  if (!(await ctx.blobs.has(sha))) {
    if (staged.bytes) {
      await ctx.blobs.put(sha, staged.bytes, contentType ?? undefined);
    } else {
      // A copy: the temporary object stays until discardStaged, so a rolled-back batch (the group
      // commit) can store it again on the single-submission path.
      await ctx.blobs.copyTemporary!(staged.tempKey!, sha, contentType ?? undefined);
    }
    const root = ctx.tx?.root ?? ctx.db;
    onRollback(ctx, async () => {
      await deleteObjectIfUnreferenced(root, ctx.blobs, sha);
    });
  }
  return row;
}

/**
 * Deletes the temporary objects of staged blobs, once the request is done with them (copied to
 * their hash key or not: unwanted parts, a refused submission, bytes the store already had). Errors are logged, never thrown: a lifecycle rule on the
 * temporary prefix removes anything left. Effects: store deletes.
 */
export async function discardStaged(deps: Pick<Deps, 'blobs' | 'log'>, staged: Iterable<StagedBlob>): Promise<void> {
  for (const s of staged) {
    if (!s.tempKey) continue;
    const key = s.tempKey;
    s.tempKey = undefined;
    await deps.blobs.delete(key).catch((err: unknown) => deps.log.warn('temporary blob not deleted', { key, err }));
  }
}
