/**
 * API Gateway (HTTP API) routes that go straight to a group's function. They are the route table's
 * (lib/http/route-table.ts) prefixes that an HTTP API route can express without changing the
 * answer: each covers paths of one group only, whatever order the table gives. Everything else,
 * the busy `/v1/projects/{id}/forms/…` tree (forms, submissions, exports, assignments share it and
 * `{xmlFormId}.svc` splits a segment), App User paths under `/v1/key/{token}/…`, `/v1/test/…` and
 * unknown paths, falls to the `$default` route and the router function (infra/aws/router.ts),
 * which applies the table itself. test/serverless/lambda.test.ts checks, on the synthesized
 * template, that every route table entry lands on its group.
 */
import type { GroupName } from '../../lib/http/route-table';

export interface DirectRoute {
  /** HTTP API path: literal segments, `{name}` for one segment, a final `{proxy+}` for one or more. */
  path: string;
  group: GroupName;
}

/** A prefix and everything below it (`/p` and `/p/{proxy+}`). */
const tree = (path: string, group: GroupName): DirectRoute[] => [{ path, group }, { path: `${path}/{proxy+}`, group }];

export const directRoutes: DirectRoute[] = [
  ...tree('/v1/projects/{projectId}/assignments', 'assignments'),
  ...tree('/v1/roles', 'assignments'),
  ...tree('/v1/assignments', 'assignments'),
  ...tree('/v1/projects/{projectId}/app-users', 'users'),
  ...tree('/v1/projects/{projectId}/actor-properties', 'users'),
  ...tree('/v1/users', 'users'),
  ...tree('/v1/sessions', 'users'),
  ...tree('/v1/user-preferences', 'users'),
  ...tree('/v1/config', 'users'),
  ...tree('/v1/audits', 'audits'),
  { path: '/v1/projects/{projectId}/submission', group: 'submissions' },
  { path: '/v1/projects/{projectId}/formList', group: 'forms' },
  { path: '/v1/form-links/{enketoId}/form', group: 'forms' },
  ...tree('/v1/projects/{projectId}/datasets', 'entities'),
  { path: '/v1/projects/{projectId}/trash/datasets/{proxy+}', group: 'entities' },
  { path: '/v1/projects', group: 'projects' },
  { path: '/v1/projects/{projectId}', group: 'projects' },
  { path: '/v1/projects/{projectId}/key', group: 'projects' },
];

/**
 * Which route an HTTP API picks for a path, by its documented precedence: a route whose segments
 * all match beats none; among matches, fewer greedy segments, then more literal segments, win.
 * @returns the matching route's path, or null for `$default`. Pure (used by the template check).
 */
export function matchHttpApiRoute(routes: readonly string[], path: string): string | null {
  const segs = path.split('/').slice(1);
  let best: { route: string; greedy: number; literal: number } | null = null;
  for (const route of routes) {
    const parts = route.split('/').slice(1);
    let ok = true;
    let literal = 0;
    let greedy = 0;
    for (let i = 0; i < parts.length && ok; i += 1) {
      const p = parts[i]!;
      if (p.endsWith('+}')) {
        greedy = 1;
        ok = segs.length > i && segs.slice(i).every((s) => s !== '');
        break;
      }
      if (i >= segs.length || segs[i] === '') ok = false;
      else if (p.startsWith('{')) continue;
      else if (p === segs[i]) literal += 1;
      else ok = false;
    }
    if (!ok || (greedy === 0 && parts.length !== segs.length)) continue;
    if (!best || greedy < best.greedy || (greedy === best.greedy && literal > best.literal)) best = { route, greedy, literal };
  }
  return best?.route ?? null;
}

/**
 * A path a route table pattern matches, derived from its source: `[^/]+` becomes `x1`, optional
 * groups and `/?` are left out, `s?` keeps the `s`. For the template check, so that an entry added
 * to the table is covered without a hand-written sample. Pure; returns null when the derived path
 * does not match the pattern after all.
 */
export function samplePathFor(pattern: RegExp): string | null {
  const path = pattern.source
    .replace(/^\^/, '')
    .replace(/\$$/, '')
    .replace(/\(\\\/\|\$\)/g, '')
    .replace(/\((?:[^()]|\([^()]*\))*\)\?/g, '')
    .replace(/\\\/\?/g, '')
    .replace(/\[\^\/\]\+/g, 'x1')
    .replace(/s\?/g, 's')
    .replace(/\\([/.])/g, '$1');
  return pattern.test(path) ? path : null;
}
