import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import assignments from '../../functions/assignments/app';
import audits from '../../functions/audits/app';
import projects from '../../functions/projects/app';
import forms from '../../functions/forms/app';
import submissions from '../../functions/submissions/app';
import exports from '../../functions/exports/app';
import users from '../../functions/users/app';
import entities from '../../functions/entities/app';
import { groupFor, type GroupName } from '../../lib/http/route-table';

// Every path + method of Central's published API that the route table sends to a group app must be
// answered by a route of that app. Paths no group owns yet belong to later issues (forms,
// submissions, …) and are listed by the test below so that gap stays visible.
const spec = parse(readFileSync(new URL('../../../shared/reference/central-api.yaml', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, unknown>>;
};
const apps: Record<GroupName, { routes: Array<{ method: string; path: string }> }> = { projects, assignments, users, audits, forms, submissions, exports, entities };
const methods = ['get', 'post', 'put', 'patch', 'delete', 'head'];

/** Operations deliberately left to later issues (matched on "METHOD path"), with the reason. */
const deferred: Array<[RegExp, string]> = [
  [/^POST \/v1\/projects\/\{id\}\/key$/, 'managed encryption (encryption issue)'],
  [/(?<!entities)\.geojson$/, 'GeoJSON (not in the spec table; a later issue)'],
  [/submissions\.geojson/, 'GeoJSON (a later issue)'],
  [/\/datasets\/\{name\}\/integrity/, 'entity integrity for offline clients (not yet)'],
  [/^DELETE \/v1\/projects\/\{projectId\}\/datasets\/\{name\}(\/properties\/\{propertyName\})?$/, 'Dataset and property deletion (not yet)'],
];

/** A regex for a Hono route path: `:name{re}` keeps its pattern, `:name` is one segment. */
const honoPathRegex = (path: string) =>
  new RegExp(`^${path
    .replace(/:[A-Za-z]+\{((?:[^{}]|\{[^}]*\})+)\}/g, (_m, re: string) => `(?:${re})`)
    .replace(/:[A-Za-z]+/g, '[^/]+')}$`);
const operations = Object.entries(spec.paths).flatMap(([path, ops]) =>
  Object.keys(ops).filter((m) => methods.includes(m)).map((m) => ({ method: m.toUpperCase(), path })));
const sample = (p: string) => p.replace(/\{[^}]+\}/g, 'x1');

describe('central-api.yaml ↔ group apps', () => {
  const routed = operations.filter((o) => groupFor(sample(o.path)) != null);

  test.each(routed.map((o) => [`${o.method} ${o.path}`, o] as const))('%s has a route', (key, o) => {
    if (deferred.some(([re]) => re.test(key))) return;
    const group = groupFor(sample(o.path))!;
    const matching = apps[group].routes.filter((r) => r.method === o.method && honoPathRegex(r.path).test(sample(o.path)));
    expect(matching.length, `${key} in group ${group}`).toBeGreaterThan(0);
  });

  test('the foundation covers users, sessions, app users, roles, assignments, projects and audits', () => {
    const prefixes = ['/v1/users', '/v1/sessions', '/v1/roles', '/v1/assignments', '/v1/audits', '/v1/projects'];
    const unrouted = operations
      .filter((o) => prefixes.some((p) => o.path === p || o.path.startsWith(`${p}/`)))
      .filter((o) => groupFor(sample(o.path)) == null)
      .map((o) => `${o.method} ${o.path}`);
    // What remains unrouted under these prefixes belongs to later issues.
    for (const op of unrouted) {
      expect(op, op).toMatch(/\/(forms|datasets|formList|submission|trash|actor-properties|key$)|\/v1\/users\/reset|\/v1\/user-preferences/);
    }
  });
});
