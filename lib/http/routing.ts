import { getPath } from 'hono/utils/url';
import { problems, type Problem } from '../problem';

// Kept apart from lib/http/app.ts so the gateway Worker (lib/http/dispatch.ts) bundles neither the
// group apps' middleware nor the database code they pull in.

const keyPrefix = /^\/v1\/key\/[^/]*(?=\/)/;

/**
 * The path Hono routes on: App User requests `/v1/key/{token}/…` route as `/v1/…` (the token is read
 * by authenticate()), so every route is reachable under the key prefix (Central's behaviour); one
 * trailing slash is ignored (`/v1/projects/1/assignments/forms/`), as Express routes for Central.
 */
export function routingPath(request: Request): string {
  return getPath(request).replace(keyPrefix, '/v1').replace(/(.)\/$/, '$1');
}

/** Unknown route: 404.2 without an API version, 404.3 for another version, else 404.1 (Central). */
export function notFoundProblem(path: string): Problem {
  const m = /^\/v(\d+)(\/|$)/.exec(path);
  if (!m) return problems.user.missingApiVersion();
  if (m[1] !== '1') return problems.user.unexpectedApiVersion({ got: m[1]! });
  return problems.user.notFound();
}

