import { concatBytes } from '../bytes';

/**
 * Where blob bytes live. Keys are the lowercase hex SHA-256 of the content (content-addressed: the
 * same bytes are stored once). Implementations: local files (lib/runtime/fs-blobs.ts, Node only)
 * and S3 (lib/blobs/s3.ts with the AWS SDK on Node and Lambda, lib/blobs/s3-fetch.ts on Workers).
 */
export interface BlobStore {
  /** Which implementation, for logs and tests. */
  readonly kind: 'fs' | 's3';
  /** Stores bytes under `key`; idempotent (the key is the content's hash). */
  put(key: string, body: Uint8Array, contentType?: string): Promise<void>;
  /** A stream of the bytes, or null when nothing is stored under `key`. */
  get(key: string): Promise<ReadableStream<Uint8Array> | null>;
  has(key: string): Promise<boolean>;
  /** Removes the object; no error when it is absent. */
  delete(key: string): Promise<void>;
  /** Every stored key (for the orphan sweep). */
  list(): AsyncIterable<string>;
  /** The stored size in bytes, or null when absent (S3: a HEAD request). */
  size?(key: string): Promise<number | null>;
  /**
   * A short-lived URL that GETs `key` straight from the store, with the response's Content-Type and
   * Content-Disposition set by the URL (S3 only). For responses over a platform's response cap.
   * @param key a blob key, or a key returned by putTemporary.
   */
  presignGet?(key: string, opts: PresignOptions): Promise<string>;
  /**
   * Writes a generated file (an export) under a temporary key, outside the content-addressed
   * blobs, streaming it in parts; a bucket lifecycle rule deletes such objects after a day (S3 only).
   * `body` is read one chunk at a time, and a chunk is done with (copied or written out) before the
   * next read: its producer may refill the chunk's buffer then (lib/blobs/staged.ts).
   * @returns the key to pass to presignGet.
   */
  putTemporary?(body: ReadableStream<Uint8Array>, contentType: string): Promise<string>;
  /**
   * Copies a temporary object (from putTemporary) to the blob key `key` (S3: a server-side copy;
   * files: a hard link), for media staged while they streamed in (lib/blobs/staged.ts). The
   * temporary object stays (a rolled-back transaction may copy it again); delete it after.
   * @param contentType recorded on the blob object.
   */
  copyTemporary?(tempKey: string, key: string, contentType?: string): Promise<void>;
}

export interface PresignOptions {
  /** Seconds the URL stays valid. */
  expiresInSeconds: number;
  contentType?: string;
  contentDisposition?: string;
}

/** Collects a blob stream into one buffer (small blobs, tests). */
export async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  return concatBytes(chunks, size);
}

/** Whether a string is a blob key (lowercase hex SHA-256). Pure. */
export const isBlobKey = (key: string): boolean => /^[0-9a-f]{64}$/.test(key);

/**
 * Key prefix of temporary objects (staged media, generated exports), outside the content-addressed
 * blobs: the orphan sweep never lists it; a bucket lifecycle rule expires it after a day.
 */
export const TEMP_PREFIX = 'tmp/';
