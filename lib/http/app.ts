import { Hono } from 'hono';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { matchedRoutes } from 'hono/route';
import { getPath } from 'hono/utils/url';
import type { Ctx, Deps } from '../context';
import { problemFromDbError } from '../db/errors';
import { Problem, problems } from '../problem';
import { authenticate } from './auth';
import { notFoundProblem, routingPath } from './routing';
import { checkOpenRosaVersion, isOpenRosaPath, openRosaError, openRosaHeaders, requiresOpenRosaHeader } from './openrosa';

// The gateway Worker imports these from ./routing alone (no Hono app, no database code).
export { notFoundProblem, routingPath } from './routing';

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

/**
 * The App User or public link token of a request, percent-decoded, or null: the `/v1/key/{token}/…`
 * prefix, else the `?st=` query parameter (Central's fieldKeyParser; the Web Forms page of a
 * public link sends `?st=` on every request).
 */
export function keyToken(request: Request): string | null {
  const m = /^\/v1\/key\/([^/]*)\//.exec(getPath(request));
  if (!m) {
    const q = request.url.indexOf('?');
    return q < 0 ? null : new URLSearchParams(request.url.slice(q + 1)).get('st');
  }
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return m[1]!;
  }
}

/**
 * Routes any caller may use without credentials (Central's `anonymousEndpoint`s): logging in,
 * requesting a password reset (not `?invalidate=true`), the public configuration, and the Draft
 * Token paths `/v1/test/{token}/…`, whose token in the path is checked by the verb. Every other
 * route answers an anonymous request with 401.2 before it loads anything (Central's authHandler).
 */
export function isAnonymousRoute(method: string, path: string, search: URLSearchParams): boolean {
  if (path.startsWith('/v1/test/')) return true;
  if (method === 'POST' && path === '/v1/sessions') return true;
  if (method === 'POST' && path === '/v1/users/reset/initiate') return search.get('invalidate') !== 'true';
  return (method === 'GET' || method === 'HEAD') && /^\/v1\/config\/public(\/|$)/.test(path);
}

/** `GET /v1/projects` without credentials: the spec answers `[]` (Central answers 401). */
const isAnonymousProjectList = (method: string, path: string): boolean => (method === 'GET' || method === 'HEAD') && path === '/v1/projects';

/** A Hono app that routes `/v1/key/{token}/…` like `/v1/…`. */
export const newApp = () => new Hono<AppEnv>({ getPath: routingPath });

let counter = 0;
const newRequestId = () => `${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

/** Renders an error as Central does: Problems as JSON, anything else logged and a bare 500. */
export function renderError(err: unknown, c: Context<AppEnv>): Response {
  const problem = err instanceof Problem ? err : problemFromDbError(err);
  // A body that does not parse as multipart is refused before the OpenRosa endpoint runs, so
  // Central answers it as JSON (400.39), like any API error.
  if (problem && c.var.openRosa && problem.status < 500 && problem.code !== 400.39) return openRosaError(problem);
  if (problem) {
    const retryAfter = (problem.details as { retryAfter?: unknown } | undefined)?.retryAfter;
    if (problem.status === 429 && typeof retryAfter === 'number') c.header('Retry-After', String(retryAfter));
    return c.json(problem.toJSON(), problem.status as ContentfulStatusCode);
  }
  const log = c.var.ctx?.log ?? c.env?.deps?.log;
  const requestId = c.var.requestId;
  if (log) log.error('unhandled error', { err, requestId, method: c.req.method, path: c.req.path });
  else console.error(err);
  return c.json({ message: 'Internal Server Error', requestId }, 500);
}

/**
 * NUL characters cannot be stored or looked up in PostgreSQL text: refused at the edge, before any
 * query. In the path nothing can match one (404.1); in the query string it is a bad value (400.11).
 * @throws Problem 404.1, 400.11.
 */
function rejectNul(url: string): void {
  if (!/%00/.test(url)) return;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (/%00/.test(path)) throw problems.user.notFound();
  for (const [name, value] of new URLSearchParams(url.slice(q + 1))) {
    if (name.includes('\0') || value.includes('\0')) {
      throw problems.user.invalidDataTypeOfParameter({ field: name.replace(/\0/g, ''), expected: 'text without NUL characters' });
    }
  }
}

/**
 * Central's caching policy for API answers (lib/http/service.js): GET and HEAD may be cached
 * privately but revalidated on every use (`private, no-cache`; `/v1/sessions/…` never); anything
 * else never (`no-store`, `Vary: *`). A response that set its own Cache-Control keeps it.
 */
function setCachePolicy(c: Context<AppEnv>, path: string): void {
  if (c.res.headers.has('cache-control')) return;
  const read = (c.req.method === 'GET' || c.req.method === 'HEAD') && !path.startsWith('/v1/sessions/');
  setHeader(c, 'Cache-Control', read ? 'private, no-cache' : 'no-store');
  setHeader(c, 'Vary', read ? 'Accept-Encoding, Origin' : '*');
}

/**
 * Sets a header on the response a handler returned, in place. Hono's c.header() on a finished
 * response wraps it anew on every call (`new Response(res.body, res)`), which turns the local
 * server's string body into a stream that is then copied out chunk by chunk (about 2 ms of CPU per
 * 100 kB form list). Immutable headers (a fetched or redirect Response on Workers) fall back to it.
 */
function setHeader(c: Context<AppEnv>, name: string, value: string): void {
  try {
    c.res.headers.set(name, value);
  } catch {
    c.header(name, value);
  }
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
      rejectNul(c.req.url);
      // Central's anonymousEndpoints read no credentials at all (a stale cookie must not stop a login).
      if (!isAnonymousRoute(c.req.method, path, new URL(c.req.url).searchParams)) {
        await authenticate(c, ctx);
        // Central checks X-OpenRosa-Version before an endpoint turns an anonymous caller away (but
        // after credentials that were sent and are wrong).
        if (requiresOpenRosaHeader(path)) checkOpenRosaVersion(c.req.header('x-openrosa-version'));
        // Anonymous on a route that needs an actor: 401.2 before anything is loaded, as Central
        // (only for routes that exist, so an unknown path still answers 404).
        // The spec's one exception (interface.md, GET /v1/projects): no credentials at all gives `[]`.
        if (ctx.auth.via === 'anonymous' && !isAnonymousProjectList(c.req.method, path) && matchedRoutes(c).some((r) => r.method !== 'ALL')) throw problems.user.authenticationFailed();
      }
      if (requiresOpenRosaHeader(path)) checkOpenRosaVersion(c.req.header('x-openrosa-version'));
      await next();
    } catch (err) {
      c.res = renderError(err, c); // here, so error responses get the headers below too
    }
    setHeader(c, 'X-Request-Id', requestId);
    setCachePolicy(c, path);
    if (c.var.openRosa) {
      for (const [k, v] of Object.entries(openRosaHeaders)) setHeader(c, k, v);
      // MAX_UPLOAD_BYTES (100 MB by default, spec rule 3) is enforced; a platform with a smaller
      // request cap advertises that (OPENROSA_MAX_BODY_BYTES) so Collect splits media across POSTs.
      setHeader(c, 'X-OpenRosa-Accept-Content-Length', String(ctx.config.OPENROSA_MAX_BODY_BYTES ?? ctx.config.MAX_UPLOAD_BYTES));
    }
    // Central (Express) answers JSON as 'application/json; charset=utf-8'.
    if (c.res.headers.get('content-type') === 'application/json') setHeader(c, 'Content-Type', 'application/json; charset=utf-8');
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
