import { Hono } from 'hono';
import type { Deps } from '../context';
import { withDeps, type FetchApp } from './entry';
import { loadConfig, processEnv } from './env';
import { createNodeDeps } from './node';

/**
 * How a Lambda function answers: `buffered` (API Gateway, or a Function URL in BUFFERED mode: the
 * response is one payload of at most 6 MB, base64 for binary bodies) or `streaming` (a Function
 * URL in RESPONSE_STREAM mode: no size cap, bytes leave as they are produced).
 */
export type LambdaMode = 'buffered' | 'streaming';

/**
 * Settings Lambda changes from the Node defaults; the function's environment still wins.
 * - One connection per instance (an instance serves one request at a time), closed after 20 s idle
 *   so frozen instances do not hold PostgreSQL connections.
 * - X-OpenRosa-Accept-Content-Length 4,400,000: a 6 MB invocation payload holds the body base64
 *   encoded (4/3) plus headers, so Collect splits media across POSTs that fit.
 * - Responses over 4,000,000 bytes (6 MB once base64-encoded, with room for headers) go through a
 *   presigned S3 URL on the buffered path.
 */
export const LAMBDA_DEFAULTS: Readonly<Record<string, string>> = {
  DATABASE_POOL_MAX: '1',
  DATABASE_IDLE_TIMEOUT: '20',
  OPENROSA_MAX_BODY_BYTES: '4400000',
  RESPONSE_MAX_BYTES: '4000000',
};

const shared = new Map<LambdaMode, Promise<Deps>>();

/**
 * Deps shared by every invocation of one Lambda instance (a postgres.js client of one connection),
 * per mode: the streaming mode has no response cap.
 */
function lambdaDeps(mode: LambdaMode): Promise<Deps> {
  let deps = shared.get(mode);
  if (!deps) {
    const env = { ...LAMBDA_DEFAULTS, ...processEnv() };
    const config = loadConfig(env, mode === 'streaming' ? { RESPONSE_MAX_BYTES: '' } : {});
    deps = createNodeDeps(config, { mailOutbox: false });
    // A failed start (bad configuration, database down) is retried by the next invocation.
    deps.catch(() => shared.delete(mode));
    shared.set(mode, deps);
  }
  return deps;
}

/**
 * A Hono app for hono/aws-lambda's `handle` (mode `buffered`) or `streamHandle` (`streaming`) that
 * runs `app` with Lambda deps. On the buffered path a response body over RESPONSE_MAX_BYTES (an
 * export, a large listing) is written to a temporary S3 object and answered with 307 to a presigned
 * URL for it (attachments are presigned where they are stored: lib/http/responses.ts blobResponse).
 * Migrations are not run here: the migrate function does (infra/aws/migrate.ts).
 */
export function lambdaApp(app: FetchApp, mode: LambdaMode = 'buffered'): Hono {
  const outer = new Hono();
  outer.all('*', async (c) => {
    const deps = await lambdaDeps(mode);
    const response = await withDeps(app, () => ({ deps })).fetch(c.req.raw, c.env);
    return mode === 'buffered' ? capResponse(deps, response) : response;
  });
  return outer;
}

/**
 * The buffered path's response cap: a body that fits is returned buffered; a larger one is
 * streamed to a temporary S3 object (one upload part of memory) and answered with 307 to a
 * presigned URL carrying the original Content-Type and Content-Disposition. Without an S3 store
 * with presigning, the response is returned as it is (the platform will refuse it).
 */
async function capResponse(deps: Deps, response: Response): Promise<Response> {
  const cap = deps.config.RESPONSE_MAX_BYTES;
  if (cap == null || response.body == null || response.status !== 200) return response;
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared <= cap) return response;
  const { blobs } = deps;
  if (!blobs.putTemporary || !blobs.presignGet) return response;
  // Read up to the cap: most bodies of unknown length (CSV of a small form) end before it.
  const reader = response.body.getReader();
  const head: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      return new Response(new Blob(head as BlobPart[]), { status: response.status, statusText: response.statusText, headers: response.headers });
    }
    head.push(value);
    size += value.byteLength;
    if (size > cap) break;
  }
  const rest = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of head) controller.enqueue(chunk);
      head.length = 0;
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  const contentType = response.headers.get('content-type') ?? 'application/octet-stream';
  const key = await blobs.putTemporary(rest, contentType);
  const disposition = response.headers.get('content-disposition');
  const url = await blobs.presignGet(key, {
    expiresInSeconds: deps.config.PRESIGN_TTL_SECONDS, contentType, ...(disposition ? { contentDisposition: disposition } : {}),
  });
  deps.log.info('response over the Lambda cap sent through a presigned URL', { bytesOver: size, key });
  return new Response(null, { status: 307, headers: { Location: url, 'Cache-Control': 'private, no-store' } });
}
