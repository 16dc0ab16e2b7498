/**
 * Issue 20: a submission body is read into one reused buffer (a BYOB read on Workers) and its media
 * parts are handed to the blob store as views of that buffer, which the next read refills. Every
 * store's temporary upload (files, S3 over fetch, S3 through the AWS SDK) must therefore be done with
 * a chunk before it reads the next. Here a multi-chunk body whose parts straddle buffer refills and
 * S3 part boundaries goes through the real parser and staging into each store, with a reader that
 * scribbles over its buffer before every refill (and, separately, a real BYOB byte stream): every
 * stored blob must come back byte for byte, the earlier S3 parts included.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createFetchS3BlobStore } from '../../lib/blobs/s3-fetch';
import { createS3BlobStore } from '../../lib/blobs/s3';
import { stagePart, type StagedBlob } from '../../lib/blobs/staged';
import { readAll, type BlobStore } from '../../lib/blobs/store';
import { streamChunkReader } from '../../lib/http/body';
import { parseMultipart, type ChunkReader } from '../../lib/http/multipart';
import { createFsBlobStore } from '../../lib/runtime/fs-blobs';
import { nativeHashStream } from '../../lib/runtime/native-hash';
import { byteStreamOf } from '../helpers/byte-streams';
import { startS3, type RunningS3 } from '../helpers/s3rver';

const boundary = 'reuse-boundary-7';
const enc = new TextEncoder();
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

// Three S3 parts of 5 MiB for the big one; the small one stays in memory (the staging budget).
const big = new Uint8Array(randomBytes(11 * 1024 * 1024 + 12_345));
const small = new Uint8Array(randomBytes(300_000));
const xml = enc.encode('<data id="x"><a>1</a></data>');
const whole = Buffer.concat([
  enc.encode(`--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="s.xml"\r\n\r\n`), xml,
  enc.encode(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="small.jpg"; filename="small.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`), small,
  enc.encode(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="big.mp4"; filename="big.mp4"\r\nContent-Type: video/mp4\r\n\r\n`), big,
  enc.encode(`\r\n--${boundary}--\r\n`),
]);
/** Uneven chunk sizes, so delimiters, part bodies and S3 parts all straddle refills. */
const cycle = [65_537, 1, 100_003, 7, 40_000, 77];
const sizes = () => {
  let i = 0;
  return () => cycle[i++ % cycle.length]!;
};

/** One buffer for every chunk, filled with 0xEE before each refill: a kept view would show it. */
function scribblingReader(bytes: Uint8Array): ChunkReader {
  const buffer = new Uint8Array(128 * 1024);
  const next = sizes();
  let off = 0;
  return {
    read() {
      buffer.fill(0xee);
      if (off >= bytes.byteLength) return Promise.resolve({ done: true });
      const n = Math.min(next(), bytes.byteLength - off);
      buffer.set(bytes.subarray(off, off + n));
      off += n;
      return Promise.resolve({ done: false, value: buffer.subarray(0, n) });
    },
    cancel: () => Promise.resolve(),
  };
}

/** Parses the body and stages each media part into `store`, as readOpenRosaMultipart does. */
async function stageAll(store: BlobStore, reader: ChunkReader) {
  const budget = { bytes: 400_000 };
  const files = new Map<string, StagedBlob>();
  let xmlBytes: Uint8Array | null = null;
  await parseMultipart(reader, boundary, (head) => {
    if (head.name === 'xml_submission_file') {
      const chunks: Uint8Array[] = [];
      return { write: (c) => { chunks.push(c.slice()); }, end: () => { xmlBytes = Buffer.concat(chunks); } };
    }
    const stage = stagePart({ blobs: store, hashStream: nativeHashStream }, head.contentType, budget);
    return { write: (c) => stage.write(c), end: async () => { files.set(head.name, await stage.end()); } };
  });
  return { xml: xmlBytes!, files };
}

let s3: RunningS3;
let dir: string;
const stores: Record<string, () => BlobStore> = {
  'files': () => createFsBlobStore(dir),
  'S3 over fetch (Workers)': () => createFetchS3BlobStore({
    bucket: s3.bucket, endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true,
    accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', partBytes: 5 * 1024 * 1024,
  }),
  'S3 through the AWS SDK (Node, Lambda)': () => createS3BlobStore({
    bucket: s3.bucket, endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER',
  }),
};

beforeAll(async () => {
  s3 = await startS3('fieldbase-reuse');
  dir = mkdtempSync(join(tmpdir(), 'fb-reuse-'));
});
afterAll(async () => {
  await s3?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('media parts read through one reused buffer are stored byte-exact', () => {
  for (const [storeName, makeStore] of Object.entries(stores)) {
    for (const [readerName, makeReader] of Object.entries({
      'a reader that scribbles over its buffer before each refill': () => scribblingReader(whole),
      'a BYOB byte stream': () => streamChunkReader(byteStreamOf(whole, sizes())),
    })) {
      test(`${storeName}: ${readerName}`, async () => {
        const store = makeStore();
        const { xml: gotXml, files } = await stageAll(store, makeReader());
        expect(Buffer.from(gotXml).equals(xml)).toBe(true);
        // The small part stayed in memory (copied out of the buffer), the big one streamed.
        const s = files.get('small.jpg')!;
        expect(s.tempKey).toBeUndefined();
        expect(Buffer.from(s.bytes!).equals(small)).toBe(true);
        expect([s.sha, s.md5, s.size]).toEqual([sha(small), md5(small), small.byteLength]);
        const b = files.get('big.mp4')!;
        expect([b.sha, b.md5, b.size]).toEqual([sha(big), md5(big), big.byteLength]);
        expect(b.tempKey).toMatch(/^tmp\//);
        const stored = await readAll((await store.get(b.tempKey!))!);
        expect(stored.byteLength).toBe(big.byteLength);
        // Every 5 MiB S3 part (or file write) holds the body's bytes, the earlier ones included.
        expect(md5(stored)).toBe(md5(big));
        await store.copyTemporary!(b.tempKey!, b.sha, 'video/mp4');
        expect(md5(await readAll((await store.get(b.sha))!))).toBe(md5(big));
        await store.delete(b.tempKey!);
        await store.delete(b.sha);
      });
    }
  }
});
