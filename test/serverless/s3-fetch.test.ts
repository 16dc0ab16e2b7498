/**
 * The fetch-based S3 store (lib/blobs/s3-fetch.ts, the Workers build's store) against a real S3
 * protocol server (s3rver, which checks SigV4 signatures): objects in and out, HEAD sizes, list,
 * delete, a multipart temporary upload of a stream larger than several parts, the server-side copy
 * to a blob key, presigned GETs with response headers, and refusals surfacing as S3Error.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createFetchS3BlobStore, S3Error, sigV4Signature, sigV4SigningKey } from '../../lib/blobs/s3-fetch';
import { readAll, type BlobStore } from '../../lib/blobs/store';
import { startS3, type RunningS3 } from '../helpers/s3rver';

let s3: RunningS3;
let store: BlobStore;
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  s3 = await startS3('fieldbase-fetch');
  store = createFetchS3BlobStore({
    bucket: s3.bucket, endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true,
    accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', partBytes: 5 * 1024 * 1024,
  });
});
afterAll(async () => {
  await s3?.stop();
});

/** A stream of `bytes` in uneven chunks (as a multipart reader hands them on). */
function chunked(bytes: Uint8Array, sizes = [1, 65_536, 100_003, 7]): ReadableStream<Uint8Array> {
  let off = 0;
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= bytes.byteLength) return c.close();
      const n = sizes[i++ % sizes.length]!;
      c.enqueue(bytes.subarray(off, off + n));
      off += n;
    },
  });
}

describe('fetch-based S3 store (SigV4 over fetch, no AWS SDK)', () => {
  test('put, get, has, size, list and delete a blob', async () => {
    const bytes = new Uint8Array(randomBytes(70_000));
    const key = sha(bytes);
    expect(await store.has(key)).toBe(false);
    expect(await store.get(key)).toBeNull();
    await store.put(key, bytes, 'image/jpeg');
    expect(await store.has(key)).toBe(true);
    expect(await store.size!(key)).toBe(70_000);
    expect(md5(await readAll((await store.get(key))!))).toBe(md5(bytes));
    const keys: string[] = [];
    for await (const k of store.list()) keys.push(k);
    expect(keys).toContain(key);
    await store.delete(key);
    await store.delete(key); // absent: no error
    expect(await store.has(key)).toBe(false);
  });

  test('a streamed temporary upload in several parts, copied server-side to its blob key', async () => {
    const bytes = new Uint8Array(randomBytes(11 * 1024 * 1024 + 12_345)); // three 5 MiB parts
    const temp = await store.putTemporary!(chunked(bytes), 'video/mp4');
    expect(temp).toMatch(/^tmp\//);
    expect(await store.size!(temp)).toBe(bytes.byteLength);
    const key = sha(bytes);
    await store.copyTemporary!(temp, key, 'video/mp4');
    await store.delete(temp);
    expect(await store.has(temp)).toBe(false);
    expect(md5(await readAll((await store.get(key))!))).toBe(md5(bytes));
    // The temporary object is outside the blob prefix: list never shows it.
    const keys: string[] = [];
    for await (const k of store.list()) keys.push(k);
    expect(keys.every((k) => !k.startsWith('tmp/'))).toBe(true);
  });

  test('an empty stream and a stream of exactly one part', async () => {
    const empty = await store.putTemporary!(chunked(new Uint8Array(0)), 'application/octet-stream');
    expect(await store.size!(empty)).toBe(0);
    const exact = new Uint8Array(randomBytes(5 * 1024 * 1024));
    const temp = await store.putTemporary!(chunked(exact), 'application/octet-stream');
    expect(md5(await readAll((await store.get(temp))!))).toBe(md5(exact));
  });

  test('a presigned GET carries the response type and disposition', async () => {
    const bytes = new TextEncoder().encode('a,b\n1,2\n');
    const key = sha(bytes);
    await store.put(key, bytes, 'text/csv');
    const url = await store.presignGet!(key, { expiresInSeconds: 60, contentType: 'text/csv', contentDisposition: 'attachment; filename="a b.csv"' });
    expect(url).toContain('X-Amz-Signature=');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="a b.csv"');
    expect(await res.text()).toBe('a,b\n1,2\n');
  });

  test('a missing bucket is an S3Error with S3\'s code; the temporary upload is not left behind', async () => {
    const missing = createFetchS3BlobStore({ bucket: 'no-such-bucket', endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
    const err = await missing.putTemporary!(chunked(new Uint8Array(10)), 'text/plain').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(S3Error);
    expect((err as S3Error).code).toBe('NoSuchBucket');
    expect((err as S3Error).status).toBe(404);
  });
});

// s3rver does not check SigV4 signatures, so the signing is checked against known answers: AWS's
// documented header-signed examples (GET Object, PUT Object, GET Bucket Lifecycle, List Objects)
// and presigned URL example, and the AWS SDK's own signer (@smithy/signature-v4) on the requests
// the store sends.
describe('fetch-based S3 store: SigV4 signatures', () => {
  const example = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', region: 'us-east-1' };
  const at = () => new Date('2013-05-24T00:00:00Z');

  // The S3 API reference's worked examples of header-based SigV4 ("Signature Calculations for the
  // Authorization Header: Transferring Payload in a Single Chunk"), same credentials and date.
  const empty = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
  const host = 'examplebucket.s3.amazonaws.com';
  const docExamples: Array<{
    name: string; method: string; path: string; query: Record<string, string>; headers: Record<string, string>;
    payload: string; signedHeaders: string; signature: string;
  }> = [
    {
      name: 'GET Object with a Range', method: 'GET', path: '/test.txt', query: {},
      headers: { host, range: 'bytes=0-9', 'x-amz-content-sha256': empty, 'x-amz-date': '20130524T000000Z' },
      payload: empty, signedHeaders: 'host;range;x-amz-content-sha256;x-amz-date',
      signature: 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    },
    {
      // A signed payload (SHA-256 of 'Welcome to Amazon S3.') and a `$` in the key, encoded.
      name: 'PUT Object', method: 'PUT', path: '/test%24file.text', query: {},
      headers: {
        date: 'Fri, 24 May 2013 00:00:00 GMT', host, 'x-amz-content-sha256': '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072',
        'x-amz-date': '20130524T000000Z', 'x-amz-storage-class': 'REDUCED_REDUNDANCY',
      },
      payload: '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072', signedHeaders: 'date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class',
      signature: '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd',
    },
    {
      // A query parameter without a value (`?lifecycle` signs as `lifecycle=`).
      name: 'GET Bucket Lifecycle', method: 'GET', path: '/', query: { lifecycle: '' },
      headers: { host, 'x-amz-content-sha256': empty, 'x-amz-date': '20130524T000000Z' },
      payload: empty, signedHeaders: 'host;x-amz-content-sha256;x-amz-date',
      signature: 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543',
    },
    {
      // Query parameters sorted by name.
      name: 'GET Bucket (List Objects)', method: 'GET', path: '/', query: { prefix: 'J', 'max-keys': '2' },
      headers: { host, 'x-amz-content-sha256': empty, 'x-amz-date': '20130524T000000Z' },
      payload: empty, signedHeaders: 'host;x-amz-content-sha256;x-amz-date',
      signature: '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7',
    },
  ];
  for (const ex of docExamples) {
    test(`header-signed: the documentation's ${ex.name} example`, async () => {
      const key = await sigV4SigningKey(example.secretAccessKey, '20130524', example.region);
      const got = await sigV4Signature({ method: ex.method, path: ex.path, query: ex.query, headers: ex.headers, payload: ex.payload, amzDate: '20130524T000000Z', region: example.region }, key);
      expect(got).toEqual({ scope: '20130524/us-east-1/s3/aws4_request', signedHeaders: ex.signedHeaders, signature: ex.signature });
    });
  }

  test('presigned GET: the example of the S3 SigV4 query-authentication documentation', async () => {
    const s = createFetchS3BlobStore({ ...example, bucket: 'examplebucket', endpoint: 'https://s3.amazonaws.com', forcePathStyle: false, prefix: '', now: at });
    const url = new URL(await s.presignGet!('test.txt', { expiresInSeconds: 86400 }));
    expect(url.host).toBe('examplebucket.s3.amazonaws.com');
    expect(url.pathname).toBe('/test.txt');
    expect(url.searchParams.get('X-Amz-Credential')).toBe('AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request');
    expect(url.searchParams.get('X-Amz-Signature')).toBe('aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404');
  });

  test('header-signed requests match the AWS SDK signer (PUT with body, copy, multipart, list)', async () => {
    const { SignatureV4 } = await import('@smithy/signature-v4');
    const { createHash: ch, createHmac } = await import('node:crypto');
    const toBytes = (d: string | ArrayBuffer | ArrayBufferView) =>
      typeof d === 'string' ? d : d instanceof ArrayBuffer ? new Uint8Array(d) : new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
    class Sha256 {
      private h;
      constructor(secret?: string | ArrayBuffer | ArrayBufferView) { this.h = secret ? createHmac('sha256', toBytes(secret)) : ch('sha256'); }
      update(d: string | ArrayBuffer | ArrayBufferView) { this.h.update(toBytes(d)); }
      async digest() { return new Uint8Array(this.h.digest()); }
      reset() {}
    }
    const sdk = new SignatureV4({ credentials: { accessKeyId: example.accessKeyId, secretAccessKey: example.secretAccessKey }, region: 'us-east-1', service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: true });
    const sent: Array<{ url: string; init: RequestInit }> = [];
    const capture = (async (url: string, init: RequestInit) => {
      sent.push({ url, init });
      const q = new URL(url).searchParams;
      if (q.has('uploads')) return new Response('<InitiateMultipartUploadResult><UploadId>up&amp;1</UploadId></InitiateMultipartUploadResult>');
      if (q.has('partNumber')) {
        await new Response(init.body as ReadableStream).arrayBuffer();
        return new Response(null, { headers: { ETag: '"e1"' } });
      }
      return new Response('<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>');
    }) as unknown as typeof fetch;
    const s = createFetchS3BlobStore({ ...example, bucket: 'my-bucket', endpoint: 'http://127.0.0.1:9000', forcePathStyle: true, fetch: capture, now: at });
    await s.put('ab'.repeat(32), new TextEncoder().encode('Welcome to Amazon S3.'), 'text/plain');
    await s.copyTemporary!('tmp/x y', 'cd'.repeat(32), 'image/png');
    await s.putTemporary!(chunked(new Uint8Array(3)), 'video/mp4');
    for await (const _ of s.list()) { /* none */ }
    expect(sent.map((r) => r.init.method)).toEqual(['PUT', 'PUT', 'POST', 'PUT', 'POST', 'GET']);
    for (const { url, init } of sent) {
      const u = new URL(url);
      const headers = Object.fromEntries(Object.entries(init.headers as Record<string, string>).filter(([k]) => k.startsWith('x-amz-')));
      const signed = await sdk.sign({
        method: init.method!, protocol: u.protocol, hostname: u.hostname, port: Number(u.port), path: decodeURIComponent(u.pathname),
        query: Object.fromEntries(u.searchParams), headers: { host: u.host, ...headers },
      }, { signingDate: at() });
      expect((init.headers as Record<string, string>).authorization, `${init.method} ${url}`).toBe(signed.headers.authorization);
    }
    // The UploadId came back entity-decoded and went out as sent.
    expect(sent.some((r) => new URL(r.url).searchParams.get('uploadId') === 'up&1')).toBe(true);
  });
});
