import type { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '../config';
import { TEMP_PREFIX, type BlobStore, type PresignOptions } from './store';

export { TEMP_PREFIX } from './store';

export interface S3StoreOptions {
  bucket: string;
  endpoint?: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
  /** Key prefix inside the bucket, default 'blobs/'. */
  prefix?: string;
}

const isMissing = (err: unknown) =>
  (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode === 404 ||
  (err as { name?: string })?.name === 'NoSuchKey' ||
  (err as { name?: string })?.name === 'NotFound';

// The SDK is loaded on first use, not at module init: a Lambda or Worker that serves a request
// without touching blobs (most of them) does not pay for parsing it at cold start.
type Sdk = typeof import('@aws-sdk/client-s3');
// A bundler that resolves the SDK's CommonJS build hands its exports over as `default`.
const namespaceOf = <T extends object>(m: T, probe: string): T => (probe in m ? m : (m as { default: T }).default);
const loadSdk = async (): Promise<Sdk> => namespaceOf(await import('@aws-sdk/client-s3'), 'S3Client');

/** Part size of temporary uploads (S3's minimum is 5 MiB for all parts but the last). */
const PART_BYTES = 8 * 1024 * 1024;

/**
 * A BlobStore on any S3-compatible service (AWS, R2, MinIO, s3rver), through the AWS SDK: the
 * store of Node and Lambda (whose role credentials come from the SDK's default chain). The Workers
 * build uses lib/blobs/s3-fetch.ts instead, which keeps the SDK out of every Worker bundle.
 * @param opts bucket, endpoint, region, credentials (from config S3_*; absent credentials fall back to
 *   the SDK's default chain, e.g. a Lambda role).
 */
export function createS3BlobStore(opts: S3StoreOptions): BlobStore {
  let ready: Promise<{ sdk: Sdk; client: S3Client }> | null = null;
  const s3 = () => (ready ??= loadSdk().then((sdk) => ({
    sdk,
    client: new sdk.S3Client({
      region: opts.region,
      forcePathStyle: opts.forcePathStyle,
      ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
      ...(opts.accessKeyId && opts.secretAccessKey
        ? { credentials: { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey } }
        : {}),
    }),
  })));
  const prefix = opts.prefix ?? 'blobs/';
  const Bucket = opts.bucket;
  // Temporary keys (putTemporary) start with `tmp/`, outside the blob prefix: the orphan sweep
  // never sees them and the bucket's lifecycle rule expires them.
  const objectKey = (key: string) => (key.startsWith(TEMP_PREFIX) ? key : prefix + key);
  const size = async (key: string): Promise<number | null> => {
    const { sdk, client } = await s3();
    try {
      const res = await client.send(new sdk.HeadObjectCommand({ Bucket, Key: objectKey(key) }));
      return res.ContentLength ?? 0;
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  };
  return {
    kind: 's3',
    async put(key, body, contentType) {
      const { sdk, client } = await s3();
      await client.send(new sdk.PutObjectCommand({
        Bucket, Key: prefix + key, Body: body, ContentLength: body.byteLength,
        ...(contentType ? { ContentType: contentType } : {}),
      }));
    },
    async get(key) {
      const { sdk, client } = await s3();
      try {
        const res = await client.send(new sdk.GetObjectCommand({ Bucket, Key: objectKey(key) }));
        return res.Body ? (res.Body.transformToWebStream() as ReadableStream<Uint8Array>) : null;
      } catch (err) {
        if (isMissing(err)) return null;
        throw err;
      }
    },
    async has(key) {
      return (await size(key)) != null;
    },
    size,
    async delete(key) {
      const { sdk, client } = await s3();
      await client.send(new sdk.DeleteObjectCommand({ Bucket, Key: objectKey(key) }));
    },
    async *list() {
      const { sdk, client } = await s3();
      let ContinuationToken: string | undefined;
      do {
        const res = await client.send(new sdk.ListObjectsV2Command({ Bucket, Prefix: prefix, ContinuationToken }));
        for (const o of res.Contents ?? []) if (o.Key) yield o.Key.slice(prefix.length);
        ContinuationToken = res.IsTruncated ? res.NextContinuationToken : undefined;
      } while (ContinuationToken);
    },
    async presignGet(key: string, p: PresignOptions) {
      const { sdk, client } = await s3();
      const { getSignedUrl } = namespaceOf(await import('@aws-sdk/s3-request-presigner'), 'getSignedUrl');
      return getSignedUrl(client, new sdk.GetObjectCommand({
        Bucket, Key: objectKey(key),
        ...(p.contentType ? { ResponseContentType: p.contentType } : {}),
        ...(p.contentDisposition ? { ResponseContentDisposition: p.contentDisposition } : {}),
      }), { expiresIn: p.expiresInSeconds });
    },
    async copyTemporary(tempKey: string, key: string, contentType?: string) {
      if (!tempKey.startsWith(TEMP_PREFIX)) throw new Error(`not a temporary key: ${tempKey}`);
      const { sdk, client } = await s3();
      // A server-side copy (R2 and S3 up to 5 GB): the bytes never come back through the Worker.
      await client.send(new sdk.CopyObjectCommand({
        Bucket, Key: prefix + key, CopySource: `${Bucket}/${tempKey}`,
        ...(contentType ? { ContentType: contentType, MetadataDirective: 'REPLACE' } : {}),
      }));
    },
    async putTemporary(body, contentType) {
      const { sdk, client } = await s3();
      const Key = `${TEMP_PREFIX}${crypto.randomUUID()}`;
      const { UploadId } = await client.send(new sdk.CreateMultipartUploadCommand({ Bucket, Key, ContentType: contentType }));
      try {
        const parts: { ETag: string; PartNumber: number }[] = [];
        const send = async (bytes: Uint8Array) => {
          const PartNumber = parts.length + 1;
          const res = await client.send(new sdk.UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body: bytes, ContentLength: bytes.byteLength }));
          parts.push({ ETag: res.ETag!, PartNumber });
        };
        // One part buffer at a time: memory stays at PART_BYTES whatever the file's size.
        let buf = new Uint8Array(PART_BYTES);
        let used = 0;
        const reader = body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          let off = 0;
          while (off < value.byteLength) {
            const n = Math.min(PART_BYTES - used, value.byteLength - off);
            buf.set(value.subarray(off, off + n), used);
            used += n;
            off += n;
            if (used === PART_BYTES) {
              await send(buf);
              buf = new Uint8Array(PART_BYTES);
              used = 0;
            }
          }
        }
        if (used > 0 || parts.length === 0) await send(buf.subarray(0, used));
        await client.send(new sdk.CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
      } catch (err) {
        await client.send(new sdk.AbortMultipartUploadCommand({ Bucket, Key, UploadId })).catch(() => {});
        throw err;
      }
      return Key;
    },
  };
}

/**
 * The S3 store the config names (S3_BUCKET, S3_ENDPOINT, S3_REGION, credentials, path style).
 * @throws Error when S3_BUCKET is unset (callers check first).
 */
export function s3BlobStoreFromConfig(config: Config): BlobStore {
  if (!config.S3_BUCKET) throw new Error('S3_BUCKET is not set');
  return createS3BlobStore({
    bucket: config.S3_BUCKET,
    region: config.S3_REGION,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}),
    ...(config.S3_ACCESS_KEY_ID ? { accessKeyId: config.S3_ACCESS_KEY_ID } : {}),
    ...(config.S3_SECRET_ACCESS_KEY ? { secretAccessKey: config.S3_SECRET_ACCESS_KEY } : {}),
  });
}
