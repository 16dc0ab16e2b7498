import { Hono } from 'hono';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { getPath } from 'hono/utils/url';
import type { Ctx, Deps } from '../context';
import { problemFromDbError } from '../db/errors';
import { Problem, problems } from '../problem';
import { authenticate } from './auth';
import { checkOpenRosaVersion, isOpenRosaPath, openRosaError, openRosaHeaders, requiresOpenRosaHeader } from './openrosa';

export interface AppEnv {
  Bindings: { deps: Deps } & Record<string, unknown>;
  Variables: {
    ctx: Ctx;
    requestId: string;
    /** The parsed JSON body, once read (lib/http/body.ts). */
    jsonBody?: unknown;
    /** Set on OpenRosa routes: errors render as OpenRosaResponse XML (lib/http/openrosa.ts). */
    openRosa?: boolean;
  };
}

const keyPrefix = /^\/v1\/key\/[^/]*(?=\/)/;

/**
 * The path Hono routes on: App User requests `/v1/key/{token}/…` route as `/v1/…` (the token is read
 * by authenticate()), so every route is reachable under the key prefix (Central's behaviour).
 */
export function routingPath(request: Request): string {
  return getPath(request).replace(keyPrefix, '/v1');
}

/** The App User token in a `/v1/key/{token}/…` URL, percent-decoded, or null. */
export function keyToken(request: Request): string | null {
  const m = /^\/v1\/key\/([^/]*)\//.exec(getPath(request));
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return m[1]!;
  }
}

/** A Hono app that routes `/v1/key/{token}/…` like `/v1/…`. */
export const newApp = () => new Hono<AppEnv>({ getPath: routingPath });

let counter = 0;
const newRequestId = () => `${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

/** Renders an error as Central does: Problems as JSON, anything else logged and a bare 500. */
export function renderError(err: unknown, c: Context<AppEnv>): Response {
  const problem = err instanceof Problem ? err : problemFromDbError(err);
  if (problem && c.var.openRosa && problem.status < 500) return openRosaError(problem);
  if (problem) return c.json(problem.toJSON(), problem.status as ContentfulStatusCode);
  const log = c.var.ctx?.log ?? c.env?.deps?.log;
  const requestId = c.var.requestId;
  if (log) log.error('unhandled error', { err, requestId, method: c.req.method, path: c.req.path });
  else console.error(err);
  return c.json({ message: 'Internal Server Error', requestId }, 500);
}

/** Unknown route: 404.2 without an API version, 404.3 for another version, else 404.1 (Central). */
export function notFoundProblem(path: string): Problem {
  const m = /^\/v(\d+)(\/|$)/.exec(path);
  if (!m) return problems.user.missingApiVersion();
  if (m[1] !== '1') return problems.user.unexpectedApiVersion({ got: m[1]! });
  return problems.user.notFound();
}

/**
 * Every group app starts here: request id, dependency context, authentication (which builds
 * `ctx.auth`; rights are checked in lib verbs), and Central's error rendering.
 * A group app is a Workers module as it is; Lambda wraps it with hono/aws-lambda.
 */
export function groupApp() {
  const app = newApp();
  app.use('*', async (c, next) => {
    const requestId = c.req.header('x-request-id') ?? newRequestId();
    c.set('requestId', requestId);
    const deps = c.env?.deps;
    if (!deps) throw new Error('group app called without deps (wrap it with withDeps)');
    const ctx: Ctx = { ...deps, auth: { actor: null, session: null, via: 'anonymous' }, requestId, system: false };
    c.set('ctx', ctx);
    const path = routingPath(c.req.raw);
    if (isOpenRosaPath(path)) c.set('openRosa', true);
    try {
      await authenticate(c, ctx);
      if (requiresOpenRosaHeader(path)) checkOpenRosaVersion(c.req.header('x-openrosa-version'));
      await next();
    } catch (err) {
      c.res = renderError(err, c); // here, so error responses get the headers below too
    }
    c.header('X-Request-Id', requestId);
    if (c.var.openRosa) {
      for (const [k, v] of Object.entries(openRosaHeaders)) c.header(k, v);
      // The advertised limit is the one enforced (MAX_UPLOAD_BYTES; 100 MB by default, spec rule 3).
      c.header('X-OpenRosa-Accept-Content-Length', String(ctx.config.MAX_UPLOAD_BYTES));
    }
    // Central (Express) answers JSON as 'application/json; charset=utf-8'.
    if (c.res.headers.get('content-type') === 'application/json') c.header('Content-Type', 'application/json; charset=utf-8');
  });
  app.onError(renderError);
  app.notFound((c) => {
    const p = notFoundProblem(c.req.path);
    return c.json(p.toJSON(), p.status as ContentfulStatusCode);
  });
  return app;
}

/** True when the request asks for Central's extended metadata (`X-Extended-Metadata: true`). */
export const isExtended = (c: Context<AppEnv>) => c.req.header('x-extended-metadata') === 'true';

/** `{ success: true }`, Central's answer for mutations with nothing else to return. */
export const success = (c: Context<AppEnv>) => c.json({ success: true });
