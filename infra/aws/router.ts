/**
 * The router function: API Gateway's HTTP API cannot express the route table (`{xmlFormId}.svc`
 * splits a path segment, and order decides between overlapping patterns), so the routes it can
 * express go straight to their group's function (infra/aws/routes.ts) and every other path lands
 * here. The router picks the group with the same table as the local server and the Workers gateway
 * (lib/http/route-table.ts) and invokes that group's function synchronously with the unchanged
 * event, returning its result as it is: the group answers exactly as if API Gateway had called it.
 *
 * The Lambda Invoke call is signed here (SigV4 with the function's role credentials from its
 * environment) rather than through @aws-sdk/client-lambda, which is not a dependency: the router
 * bundle stays a few kilobytes and starts in milliseconds.
 */
import { SignatureV4 } from '@smithy/signature-v4';
import { createHash, createHmac } from 'node:crypto';
import { groupFor, type GroupName } from '../../lib/http/route-table';
import { notFoundProblem, routingPath } from '../../lib/http/routing';

/** The parts of an API Gateway v2 / Function URL event the router reads. */
export interface HttpEventV2 {
  rawPath: string;
  [key: string]: unknown;
}

/** What a group function returns to API Gateway (payload format 2.0). */
export type HttpResultV2 = { statusCode: number; headers?: Record<string, string>; body?: string; isBase64Encoded?: boolean; cookies?: string[] };

/** Invokes a group's function with an event and returns its result. */
export type InvokeGroup = (group: GroupName, event: HttpEventV2) => Promise<HttpResultV2>;

/**
 * The group an event's path belongs to, by the route table after folding `/v1/key/{token}`.
 * @returns the group, or null when no group owns the path. Pure.
 */
export function groupForEvent(event: HttpEventV2): GroupName | null {
  return groupFor(routingPath(new Request(`https://router.invalid${event.rawPath}`)));
}

/**
 * A router handler over any way of invoking the groups (Lambda Invoke in AWS; the bundles' handlers
 * in-process in the tests). Paths no group owns answer the local server's 404.2 / 404.3 / 404.1.
 */
export function createRouter(invoke: InvokeGroup): (event: HttpEventV2) => Promise<HttpResultV2> {
  return async (event) => {
    const group = groupForEvent(event);
    if (group == null) {
      const problem = notFoundProblem(routingPath(new Request(`https://router.invalid${event.rawPath}`)));
      return { statusCode: problem.status, headers: { 'content-type': 'application/json; charset=utf-8' }, body: JSON.stringify(problem.toJSON()), isBase64Encoded: false };
    }
    return invoke(group, event);
  };
}

class HmacSha256 {
  private readonly h;
  constructor(secret?: string | Uint8Array) {
    this.h = secret == null ? createHash('sha256') : createHmac('sha256', secret);
  }
  update(data: string | Uint8Array) {
    this.h.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.h.digest());
  }
}

/**
 * Lambda Invoke (RequestResponse) of the function named by the environment variable
 * `FUNCTION_<GROUP>` (set by the CDK stack), signed with the router's role credentials.
 * @throws Error when the function fails (X-Amz-Function-Error) or Lambda refuses the call; API
 *   Gateway then answers 500.
 */
export const lambdaInvoke: InvokeGroup = async (group, event) => {
  const env = process.env;
  const region = env.AWS_REGION ?? 'us-east-1';
  const fn = env[`FUNCTION_${group.toUpperCase()}`];
  if (!fn) throw new Error(`router: FUNCTION_${group.toUpperCase()} is not set`);
  const signer = new SignatureV4({
    service: 'lambda',
    region,
    sha256: HmacSha256 as never,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID ?? '', secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? '', ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) },
  });
  const hostname = `lambda.${region}.amazonaws.com`;
  const path = `/2015-03-31/functions/${encodeURIComponent(fn)}/invocations`;
  const body = JSON.stringify(event);
  const signed = await signer.sign({
    method: 'POST', protocol: 'https:', hostname, path,
    headers: { host: hostname, 'content-type': 'application/json', 'x-amz-invocation-type': 'RequestResponse' },
    body,
  });
  const res = await fetch(`https://${hostname}${path}`, { method: 'POST', headers: signed.headers as Record<string, string>, body });
  const text = await res.text();
  if (!res.ok || res.headers.get('x-amz-function-error')) throw new Error(`router: ${group} failed (${res.status}): ${text.slice(0, 500)}`);
  return JSON.parse(text) as HttpResultV2;
};

/** The Lambda entry. */
export const handler = createRouter(lambdaInvoke);
