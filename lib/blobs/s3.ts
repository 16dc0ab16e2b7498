import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { Config } from '../config';
import type { BlobStore } from './store';

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
  err instanceof NoSuchKey ||
  err instanceof NotFound ||
  (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode === 404 ||
  (err as { name?: string })?.name === 'NoSuchKey' ||
  (err as { name?: string })?.name === 'NotFound';

/**
 * A BlobStore on any S3-compatible service (AWS, R2, MinIO, s3rver). Runs on Node and Workers.
 * @param opts bucket, endpoint, region, credentials (from config S3_*; absent credentials fall back to
 *   the SDK's default chain, e.g. a Lambda role).
 */
export function createS3BlobStore(opts: S3StoreOptions): BlobStore {
  const client = new S3Client({
    region: opts.region,
    forcePathStyle: opts.forcePathStyle,
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    ...(opts.accessKeyId && opts.secretAccessKey
      ? { credentials: { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey } }
      : {}),
  });
  const prefix = opts.prefix ?? 'blobs/';
  const Bucket = opts.bucket;
  return {
    kind: 's3',
    async put(key, body, contentType) {
      await client.send(new PutObjectCommand({
        Bucket, Key: prefix + key, Body: body, ContentLength: body.byteLength,
        ...(contentType ? { ContentType: contentType } : {}),
      }));
    },
    async get(key) {
      try {
        const res = await client.send(new GetObjectCommand({ Bucket, Key: prefix + key }));
        return res.Body ? (res.Body.transformToWebStream() as ReadableStream<Uint8Array>) : null;
      } catch (err) {
        if (isMissing(err)) return null;
        throw err;
      }
    },
    async has(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket, Key: prefix + key }));
        return true;
      } catch (err) {
        if (isMissing(err)) return false;
        throw err;
      }
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket, Key: prefix + key }));
    },
    async *list() {
      let ContinuationToken: string | undefined;
      do {
        const res = await client.send(new ListObjectsV2Command({ Bucket, Prefix: prefix, ContinuationToken }));
        for (const o of res.Contents ?? []) if (o.Key) yield o.Key.slice(prefix.length);
        ContinuationToken = res.IsTruncated ? res.NextContinuationToken : undefined;
      } while (ContinuationToken);
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
