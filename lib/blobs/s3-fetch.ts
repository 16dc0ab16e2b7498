/**
 * A BlobStore over the S3 REST API with nothing but `fetch` and WebCrypto (SigV4 signing): the
 * store of the Workers build, where the AWS SDK (~100 kB gzipped, half a Worker's budget) is not
 * bundled. Speaks to R2's S3 API, AWS S3, MinIO and s3rver alike. Node and Lambda keep the SDK
 * (lib/blobs/s3.ts), whose default credential chain a Lambda role needs.
 *
 * Memory: `putTemporary` copies the stream's chunks into one part buffer of PART_BYTES, reused for
 * every part (each sent as a fixed-length stream, UNSIGNED-PAYLOAD, no copy for fetch), so a 100 MB
 * media part costs one part buffer, allocated once, and no per-chunk garbage: the chunks it reads
 * may be views of a buffer the producer refills once the next chunk is read (lib/blobs/staged.ts).
 */
import type { Config } from '../config';
import { TEMP_PREFIX, type BlobStore, type PresignOptions } from './store';

export interface FetchS3Options {
  bucket: string;
  /** e.g. https://ACCOUNT.r2.cloudflarestorage.com; default https://s3.REGION.amazonaws.com. */
  endpoint?: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** Bucket in the path (R2, MinIO, s3rver) rather than in the host name. */
  forcePathStyle: boolean;
  /** Key prefix inside the bucket, default 'blobs/'. */
  prefix?: string;
  /** Bytes per multipart part of putTemporary (all but the last; S3's minimum is 5 MiB). */
  partBytes?: number;
  /** The fetch to use (tests); the global one by default. */
  fetch?: typeof fetch;
  /** The signing clock (tests); the current time by default. */
  now?: () => Date;
}

/** Part size of temporary uploads: R2 wants every part but the last of one size, S3 ≥ 5 MiB. */
const PART_BYTES = 8 * 1024 * 1024;
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const enc = new TextEncoder();

const hex = (buf: ArrayBuffer) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('');
const sha256Hex = async (data: Uint8Array | string) =>
  hex(await crypto.subtle.digest('SHA-256', (typeof data === 'string' ? enc.encode(data) : data) as Uint8Array<ArrayBuffer>));
async function hmac(key: Uint8Array<ArrayBuffer> | ArrayBuffer, data: string): Promise<ArrayBuffer> {
  const k = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return crypto.subtle.sign('HMAC', k, enc.encode(data));
}
/** RFC 3986 encoding as SigV4 wants it (unreserved characters kept; `/` too when `path`). */
const uriEncode = (s: string, path = false) => {
  const e = encodeURIComponent(s).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
  return path ? e.replace(/%2F/g, '/') : e;
};
const xmlText = (s: string) => s.replace(/&(lt|gt|quot|apos|amp|#(\d+)|#x([0-9a-f]+));/gi, (_, name: string, dec?: string, hx?: string) =>
  dec ? String.fromCodePoint(Number(dec)) : hx ? String.fromCodePoint(parseInt(hx, 16)) : ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' } as Record<string, string>)[name.toLowerCase()]!);
const xmlValues = (xml: string, tag: string) => [...xml.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g'))].map((m) => xmlText(m[1]!));

/**
 * The SigV4 signing key of a day: HMAC-SHA256 chained over `AWS4` + secret, the date, the region,
 * `s3` and `aws4_request` (AWS Signature Version 4). Pure (WebCrypto).
 * @param date YYYYMMDD (UTC). @returns the 32-byte key.
 */
export async function sigV4SigningKey(secretAccessKey: string, date: string, region: string): Promise<ArrayBuffer> {
  let k = await hmac(enc.encode(`AWS4${secretAccessKey}`), date);
  for (const part of [region, 's3', 'aws4_request']) k = await hmac(k, part);
  return k;
}

/**
 * The SigV4 signature of one S3 request, for the Authorization header or (with the X-Amz-* query
 * parameters in `query` and `UNSIGNED-PAYLOAD`) a presigned URL. Pure (WebCrypto).
 * @param req.path the URI-encoded path as sent (`/bucket/key`); `query` unencoded names and values
 *   (encoded and sorted here); `headers` the signed headers, lowercase names (host included);
 *   `payload` the body's hex SHA-256 or `UNSIGNED-PAYLOAD`; `amzDate` YYYYMMDD'T'HHMMSS'Z'.
 * @param key sigV4SigningKey of amzDate's day and `region`.
 * @returns the credential scope, the SignedHeaders list and the hex signature.
 */
export async function sigV4Signature(req: {
  method: string; path: string; query: Record<string, string>; headers: Record<string, string>; payload: string; amzDate: string; region: string;
}, key: ArrayBuffer): Promise<{ scope: string; signedHeaders: string; signature: string }> {
  const names = Object.keys(req.headers).sort();
  // Header values trimmed, inner runs of spaces collapsed ("Trimall").
  const canonical = [req.method, req.path, canonicalQuery(req.query), ...names.map((n) => `${n}:${req.headers[n]!.trim().replace(/\s+/g, ' ')}`), '', names.join(';'), req.payload].join('\n');
  const scope = `${req.amzDate.slice(0, 8)}/${req.region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', req.amzDate, scope, await sha256Hex(canonical)].join('\n');
  return { scope, signedHeaders: names.join(';'), signature: hex(await hmac(key, toSign)) };
}

/** SigV4's canonical query string: names and values URI-encoded, sorted by name. */
const canonicalQuery = (query: Record<string, string>) =>
  Object.keys(query).sort().map((k) => `${uriEncode(k)}=${uriEncode(query[k]!)}`).join('&');

/** An S3 error answer (status and S3's Code), thrown by every method but the 404s they expect. */
export class S3Error extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
    this.name = 'S3Error';
  }
}

/**
 * Creates the fetch-based S3 store (see the module comment). Keys as lib/blobs/s3.ts lays them out:
 * blobs under `prefix` + SHA-256, temporary objects under `tmp/`.
 * @returns a BlobStore with putTemporary/copyTemporary (staged media) and presignGet.
 * Effects: HTTP requests to the S3 endpoint, none at creation.
 */
export function createFetchS3BlobStore(opts: FetchS3Options): BlobStore {
  const doFetch = opts.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => fetch(input, init));
  const prefix = opts.prefix ?? 'blobs/';
  const partBytes = opts.partBytes ?? PART_BYTES;
  const endpoint = new URL(opts.endpoint ?? `https://s3.${opts.region}.amazonaws.com`);
  const base = endpoint.pathname.replace(/\/$/, '');
  const objectKey = (key: string) => (key.startsWith(TEMP_PREFIX) ? key : prefix + key);
  /** The URL of an object (or of the bucket when key is ''), path- or host-style. */
  const urlOf = (key: string, query: Record<string, string> = {}) => {
    const u = new URL(endpoint.toString());
    if (!opts.forcePathStyle) u.hostname = `${opts.bucket}.${u.hostname}`;
    const path = `${base}${opts.forcePathStyle ? `/${opts.bucket}` : ''}/${key}`;
    u.pathname = uriEncode(path, true);
    u.search = canonicalQuery(query);
    return u;
  };
  let signingKey: { date: string; key: ArrayBuffer } | null = null;
  const keyFor = async (date: string) => {
    if (signingKey?.date !== date) signingKey = { date, key: await sigV4SigningKey(opts.secretAccessKey, date, opts.region) };
    return signingKey.key;
  };
  const stamp = (now = opts.now?.() ?? new Date()) => {
    const amzDate = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
    return { amzDate, date: amzDate.slice(0, 8) };
  };
  /** SigV4 signature of a canonical request; `headers` are the signed ones, lowercase names. */
  const signature = async (method: string, u: URL, query: Record<string, string>, headers: Record<string, string>, payload: string, amzDate: string, date: string) => {
    const s = await sigV4Signature({ method, path: u.pathname, query, headers, payload, amzDate, region: opts.region }, await keyFor(date));
    return { scope: s.scope, signed: s.signedHeaders, sig: s.signature };
  };
  /**
   * One signed request. `body` bytes are signed by their hash; a stream is sent as UNSIGNED-PAYLOAD
   * (over TLS, as the SDK does) with its length in `length`.
   */
  const request = async (method: string, key: string, init: {
    query?: Record<string, string>; headers?: Record<string, string>; body?: Uint8Array | string | ReadableStream<Uint8Array>; length?: number;
  } = {}): Promise<Response> => {
    const query = init.query ?? {};
    const u = urlOf(key, query);
    const { amzDate, date } = stamp();
    const body = typeof init.body === 'string' ? enc.encode(init.body) : init.body;
    const payload = body == null ? EMPTY_SHA256 : body instanceof Uint8Array ? await sha256Hex(body) : 'UNSIGNED-PAYLOAD';
    const signedHeaders: Record<string, string> = {
      host: u.host, 'x-amz-content-sha256': payload, 'x-amz-date': amzDate,
      ...(opts.sessionToken ? { 'x-amz-security-token': opts.sessionToken } : {}),
    };
    for (const [k, v] of Object.entries(init.headers ?? {})) if (k.toLowerCase().startsWith('x-amz-')) signedHeaders[k.toLowerCase()] = v;
    const { scope, signed, sig } = await signature(method, u, query, signedHeaders, payload, amzDate, date);
    const headers: Record<string, string> = { ...init.headers, ...signedHeaders };
    delete headers.host;
    headers.authorization = `AWS4-HMAC-SHA256 Credential=${opts.accessKeyId}/${scope}, SignedHeaders=${signed}, Signature=${sig}`;
    let sent: BodyInit | null = null;
    if (body instanceof Uint8Array) {
      sent = body as Uint8Array<ArrayBuffer>;
    } else if (body) {
      // A known length: workerd sends Content-Length for a FixedLengthStream; Node's fetch needs it
      // as a header plus half-duplex.
      const FixedLength = (globalThis as { FixedLengthStream?: new (n: number) => TransformStream<Uint8Array, Uint8Array> }).FixedLengthStream;
      if (FixedLength) {
        const fixed = new FixedLength(init.length!);
        void body.pipeTo(fixed.writable).catch(() => undefined);
        sent = fixed.readable;
      } else {
        headers['content-length'] = String(init.length);
        sent = body;
      }
    }
    const res = await doFetch(u.toString(), { method, headers, body: sent, ...(sent && !(sent instanceof Uint8Array) ? { duplex: 'half' } : {}) } as RequestInit);
    return res;
  };
  const fail = async (res: Response, what: string): Promise<never> => {
    const text = await res.text().catch(() => '');
    const code = xmlValues(text, 'Code')[0] ?? String(res.status);
    throw new S3Error(res.status, code, `S3 ${what}: ${res.status} ${code} ${xmlValues(text, 'Message')[0] ?? ''}`.trim());
  };
  const size = async (key: string): Promise<number | null> => {
    const res = await request('HEAD', objectKey(key));
    if (res.status === 404) return null;
    if (!res.ok) return fail(res, `HEAD ${key}`);
    return Number(res.headers.get('content-length') ?? 0);
  };
  const abortUpload = async (Key: string, uploadId: string) => {
    const res = await request('DELETE', Key, { query: { uploadId } });
    await res.body?.cancel();
  };
  return {
    kind: 's3',
    async put(key, body, contentType) {
      const res = await request('PUT', prefix + key, { body, headers: contentType ? { 'content-type': contentType } : {} });
      if (!res.ok) return fail(res, `PUT ${key}`);
      await res.body?.cancel();
    },
    async get(key) {
      const res = await request('GET', objectKey(key));
      if (res.status === 404) {
        await res.body?.cancel();
        return null;
      }
      if (!res.ok) return fail(res, `GET ${key}`);
      return res.body ?? new ReadableStream({ start: (c) => c.close() });
    },
    async has(key) {
      return (await size(key)) != null;
    },
    size,
    async delete(key) {
      const res = await request('DELETE', objectKey(key));
      if (!res.ok && res.status !== 404) return fail(res, `DELETE ${key}`);
      await res.body?.cancel();
    },
    async *list() {
      let token: string | undefined;
      do {
        const res = await request('GET', '', { query: { 'list-type': '2', prefix, ...(token ? { 'continuation-token': token } : {}) } });
        if (!res.ok) await fail(res, 'LIST');
        const xml = await res.text();
        for (const k of xmlValues(xml, 'Key')) yield k.slice(prefix.length);
        token = xmlValues(xml, 'IsTruncated')[0] === 'true' ? xmlValues(xml, 'NextContinuationToken')[0] : undefined;
      } while (token);
    },
    async presignGet(key: string, p: PresignOptions) {
      const query: Record<string, string> = {};
      if (p.contentType) query['response-content-type'] = p.contentType;
      if (p.contentDisposition) query['response-content-disposition'] = p.contentDisposition;
      const u = urlOf(objectKey(key));
      const { amzDate, date } = stamp();
      Object.assign(query, {
        'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
        'X-Amz-Credential': `${opts.accessKeyId}/${date}/${opts.region}/s3/aws4_request`,
        'X-Amz-Date': amzDate,
        'X-Amz-Expires': String(p.expiresInSeconds),
        'X-Amz-SignedHeaders': 'host',
        ...(opts.sessionToken ? { 'X-Amz-Security-Token': opts.sessionToken } : {}),
      });
      const { sig } = await signature('GET', u, query, { host: u.host }, 'UNSIGNED-PAYLOAD', amzDate, date);
      u.search = `${canonicalQuery(query)}&X-Amz-Signature=${sig}`;
      return u.toString();
    },
    async copyTemporary(tempKey: string, key: string, contentType?: string) {
      if (!tempKey.startsWith(TEMP_PREFIX)) throw new Error(`not a temporary key: ${tempKey}`);
      // A server-side copy: the bytes never come back through the Worker.
      const res = await request('PUT', prefix + key, {
        headers: {
          'x-amz-copy-source': uriEncode(`/${opts.bucket}/${tempKey}`, true),
          ...(contentType ? { 'x-amz-metadata-directive': 'REPLACE', 'content-type': contentType } : {}),
        },
      });
      // CopyObject may answer 200 with an <Error> body.
      const text = await res.text();
      if (!res.ok || /<Error>/.test(text)) {
        throw new S3Error(res.status, xmlValues(text, 'Code')[0] ?? String(res.status), `S3 copy ${tempKey} → ${key}: ${text.slice(0, 200)}`);
      }
    },
    async putTemporary(body, contentType) {
      const Key = `${TEMP_PREFIX}${crypto.randomUUID()}`;
      const created = await request('POST', Key, { query: { uploads: '' }, headers: { 'content-type': contentType } });
      if (!created.ok) return fail(created, 'CreateMultipartUpload');
      const uploadId = xmlValues(await created.text(), 'UploadId')[0];
      if (!uploadId) throw new S3Error(created.status, 'NoUploadId', 'S3 CreateMultipartUpload: no UploadId');
      const parts: string[] = [];
      const reader = body.getReader();
      try {
        // The current part: one buffer, allocated at the first byte and reused for every part.
        // The chunks read are copied in at once (their producer may refill them after the next
        // read); a chunk that straddles a part boundary is split.
        let part: Uint8Array | null = null;
        let used = 0;
        const send = async () => {
          const partNumber = String(parts.length + 1);
          const bytes = part ? part.subarray(0, used) : new Uint8Array(0);
          const stream = new ReadableStream<Uint8Array>({
            start(c) {
              if (bytes.byteLength > 0) c.enqueue(bytes);
              c.close();
            },
          });
          // The answer comes once S3 has read the whole part: the buffer is free again then.
          const res = await request('PUT', Key, { query: { partNumber, uploadId }, body: stream, length: bytes.byteLength });
          if (!res.ok) await fail(res, `UploadPart ${partNumber}`);
          await res.body?.cancel();
          const etag = res.headers.get('etag');
          if (!etag) throw new S3Error(res.status, 'NoETag', `S3 UploadPart ${partNumber}: no ETag`);
          parts.push(etag);
          used = 0;
          // A runtime that transferred the buffer on sending leaves it detached: start a new one.
          if (part?.byteLength === 0) part = null;
        };
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (let off = 0; off < value.byteLength;) {
            part ??= new Uint8Array(partBytes);
            const n = Math.min(partBytes - used, value.byteLength - off);
            part.set(value.subarray(off, off + n), used);
            used += n;
            off += n;
            if (used === partBytes) await send();
          }
        }
        if (used > 0 || parts.length === 0) await send();
        const xml = `<CompleteMultipartUpload>${parts.map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${etag.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;')}</ETag></Part>`).join('')}</CompleteMultipartUpload>`;
        const done = await request('POST', Key, { query: { uploadId }, body: xml, headers: { 'content-type': 'application/xml' } });
        // CompleteMultipartUpload may answer 200 with an <Error> body.
        const text = await done.text();
        if (!done.ok || /<Error>/.test(text)) {
          throw new S3Error(done.status, xmlValues(text, 'Code')[0] ?? String(done.status), `S3 CompleteMultipartUpload: ${text.slice(0, 200)}`);
        }
      } catch (err) {
        await reader.cancel(err).catch(() => undefined);
        await abortUpload(Key, uploadId).catch(() => undefined);
        throw err;
      }
      return Key;
    },
  };
}

/**
 * The fetch-based S3 store the config names (S3_BUCKET, S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY_ID,
 * S3_SECRET_ACCESS_KEY, S3_FORCE_PATH_STYLE).
 * @throws Error when S3_BUCKET or the credentials are unset (Workers have no credential chain).
 */
export function fetchS3BlobStoreFromConfig(config: Config): BlobStore {
  if (!config.S3_BUCKET) throw new Error('S3_BUCKET is not set');
  if (!config.S3_ACCESS_KEY_ID || !config.S3_SECRET_ACCESS_KEY) {
    throw new Error('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY are required here (an R2 API token on Workers)');
  }
  return createFetchS3BlobStore({
    bucket: config.S3_BUCKET,
    region: config.S3_REGION,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    accessKeyId: config.S3_ACCESS_KEY_ID,
    secretAccessKey: config.S3_SECRET_ACCESS_KEY,
    ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}),
  });
}
