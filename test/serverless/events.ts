/**
 * AWS Lambda HTTP events as API Gateway's HTTP API (payload format 2.0) and Lambda Function URLs
 * send them, and the Node.js runtime's response-streaming globals, for driving the built bundles'
 * handlers in-process (test/serverless/lambda.test.ts, bench/serverless.ts).
 *
 * The shapes follow AWS's documented formats: cookies move from the Cookie header to a `cookies`
 * array; repeated headers are joined with commas; binary bodies are base64 with
 * `isBase64Encoded: true`; a synchronous invocation carries at most 6 MB each way.
 */
import { Writable } from 'node:stream';

/** Lambda's synchronous invocation payload cap, each way (6 MB). */
export const INVOKE_PAYLOAD_MAX = 6 * 1024 * 1024;

export type EventKind = 'apigw' | 'url';

export interface HttpRequestSpec {
  method: string;
  /** Path with an optional `?query`. */
  path: string;
  headers?: Record<string, string | string[]>;
  body?: Uint8Array | string;
}

export interface LambdaHttpEvent {
  version: '2.0';
  routeKey: string;
  rawPath: string;
  rawQueryString: string;
  cookies?: string[];
  headers: Record<string, string>;
  queryStringParameters?: Record<string, string>;
  requestContext: Record<string, unknown> & { http: { method: string; path: string; [k: string]: unknown } };
  body?: string;
  isBase64Encoded: boolean;
}

export interface LambdaHttpResult {
  statusCode: number;
  headers?: Record<string, string>;
  cookies?: string[];
  body?: string;
  isBase64Encoded?: boolean;
}

const TEXT = /^(text\/|application\/(json|xml|x-www-form-urlencoded)|[^;]*\+xml)/i;

/**
 * One HTTP request as a Lambda event. `apigw`: an HTTP API `$default` stage; `url`: a Function URL.
 * Text bodies (JSON, XML, text/*) travel as they are, everything else base64, as both services do.
 */
export function httpEvent(kind: EventKind, req: HttpRequestSpec): LambdaHttpEvent {
  const [rawPath, rawQueryString = ''] = req.path.split('?', 2) as [string, string?];
  const domainName = kind === 'apigw' ? 'r4nd0m1d.execute-api.eu-west-1.amazonaws.com' : 'f7url5ab3c.lambda-url.eu-west-1.on.aws';
  const headers: Record<string, string> = { host: domainName, 'x-forwarded-proto': 'https', 'x-forwarded-port': '443' };
  let cookies: string[] | undefined;
  for (const [name, value] of Object.entries(req.headers ?? {})) {
    const key = name.toLowerCase();
    const values = Array.isArray(value) ? value : [value];
    if (key === 'cookie') {
      cookies = [...(cookies ?? []), ...values.flatMap((v) => v.split(/;\s*/))];
      continue;
    }
    headers[key] = headers[key] && key !== 'host' ? `${headers[key]},${values.join(',')}` : values.join(',');
  }
  let body: string | undefined;
  let isBase64Encoded = false;
  if (req.body != null) {
    const type = headers['content-type'] ?? '';
    if (typeof req.body === 'string' && TEXT.test(type)) body = req.body;
    else {
      body = Buffer.from(typeof req.body === 'string' ? Buffer.from(req.body, 'utf8') : req.body).toString('base64');
      isBase64Encoded = true;
    }
  }
  const query = new URLSearchParams(rawQueryString);
  const queryStringParameters = rawQueryString ? Object.fromEntries([...query.keys()].map((k) => [k, query.getAll(k).join(',')])) : undefined;
  const now = new Date();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    ...(cookies ? { cookies } : {}),
    headers,
    ...(queryStringParameters ? { queryStringParameters } : {}),
    requestContext: {
      accountId: kind === 'apigw' ? '123456789012' : 'anonymous',
      apiId: domainName.split('.')[0],
      domainName,
      domainPrefix: domainName.split('.')[0],
      http: { method: req.method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: headers['user-agent'] ?? 'test' },
      requestId: crypto.randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(body != null ? { body } : {}),
    isBase64Encoded,
  };
}

/** A result's body bytes (decoding base64). */
export const resultBytes = (r: LambdaHttpResult): Buffer =>
  r.isBase64Encoded ? Buffer.from(r.body ?? '', 'base64') : Buffer.from(r.body ?? '', 'utf8');

/** A result's header, case-insensitively. */
export const resultHeader = (r: LambdaHttpResult, name: string): string | undefined => {
  const key = Object.keys(r.headers ?? {}).find((k) => k.toLowerCase() === name.toLowerCase());
  return key == null ? undefined : r.headers![key];
};

/**
 * The globals the Lambda Node.js runtime gives response-streaming functions: `streamifyResponse`
 * marks a handler (here it stays callable as `(event, responseStream, context)`), and
 * `HttpResponseStream.from` writes the HTTP prelude (the status, headers and cookies as JSON),
 * then eight NUL bytes, then the body, as the runtime's Function URL integration reads it.
 * Installed once, before a bundle defining a streaming handler is imported.
 */
export function installStreamingRuntime(): void {
  const g = globalThis as { awslambda?: unknown };
  g.awslambda ??= {
    streamifyResponse: <T>(fn: T) => fn,
    HttpResponseStream: {
      from(stream: Writable, prelude: unknown) {
        stream.write(Buffer.from(JSON.stringify(prelude), 'utf8'));
        stream.write(Buffer.alloc(8));
        return stream;
      },
    },
  };
}

/** Calls a streaming handler and splits what it wrote into the prelude and the body. */
export async function invokeStreaming(
  handler: (event: unknown, stream: Writable, context: unknown) => Promise<unknown>,
  event: LambdaHttpEvent,
): Promise<{ statusCode: number; headers: Record<string, string>; cookies: string[]; body: Buffer; writes: number }> {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(Buffer.from(chunk));
      cb();
    },
  });
  stream.on('error', () => {});
  await handler(event, stream, {});
  const all = Buffer.concat(chunks);
  const sep = all.indexOf(Buffer.alloc(8));
  const prelude = JSON.parse(all.subarray(0, sep).toString('utf8')) as { statusCode: number; headers: Record<string, string>; cookies: string[] };
  return { ...prelude, body: all.subarray(sep + 8), writes: chunks.length };
}
