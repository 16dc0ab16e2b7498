/**
 * The one ordered table of which group app answers which path (DESIGN rule 10). The local server
 * (infra/local/serve.ts) and the Workers gateway dispatch on it; first match wins, so the more
 * specific patterns come first. Patterns match the routing path, i.e. after a `/v1/key/{token}`
 * prefix is folded to `/v1`.
 */
export type GroupName = 'projects' | 'assignments' | 'users' | 'audits' | 'forms' | 'submissions' | 'exports' | 'entities';

export const routeTable: ReadonlyArray<readonly [RegExp, GroupName]> = [
  // Assignments nested under projects and forms, before the projects catch-all.
  [/^\/v1\/projects\/[^/]+\/assignments(\/|$)/, 'assignments'],
  [/^\/v1\/projects\/[^/]+\/forms\/[^/]+\/assignments(\/|$)/, 'assignments'],
  [/^\/v1\/roles(\/|$)/, 'assignments'],
  [/^\/v1\/assignments(\/|$)/, 'assignments'],
  // App Users live under projects but belong to the users group.
  [/^\/v1\/projects\/[^/]+\/app-users(\/|$)/, 'users'],
  [/^\/v1\/projects\/[^/]+\/actor-properties(\/|$)/, 'users'],
  [/^\/v1\/users(\/|$)/, 'users'],
  [/^\/v1\/sessions(\/|$)/, 'users'],
  [/^\/v1\/user-preferences(\/|$)/, 'users'],
  [/^\/v1\/config(\/|$)/, 'users'],
  [/^\/v1\/analytics\/preview$/, 'users'],
  [/^\/v1\/backup$/, 'users'],
  [/^\/v1\/audits(\/|$)/, 'audits'],
  // Exports (submissions.csv, submissions.csv.zip) and OData (F.svc, F/draft.svc), before the submissions and forms entries.
  [/^\/v1\/projects\/[^/]+\/forms\/[^/]+\.svc(\/|$)/, 'exports'],
  [/^\/v1\/projects\/[^/]+\/forms\/[^/]+\/draft\.svc(\/|$)/, 'exports'],
  [/^\/v1\/projects\/[^/]+\/forms\/[^/]+\/(draft\/)?submissions\.csv(\.zip)?$/, 'exports'],
  // Submissions' GeoJSON (the whole form's, one submission's, one version's).
  [/^\/v1\/projects\/[^/]+\/forms\/[^/]+\/submissions(\/[^/]+(\/versions\/[^/]+)?)?\.geojson$/, 'exports'],
  // OpenRosa submission (and its Draft Token form), before the forms entries.
  [/^\/v1\/projects\/[^/]+\/submission$/, 'submissions'],
  [/^\/v1\/projects\/[^/]+\/forms\/[^/]+\/draft\/submission$/, 'submissions'],
  [/^\/v1\/test\/[^/]+\/projects\/[^/]+\/forms\/[^/]+\/draft\/submissions?$/, 'submissions'],
  [/^\/v1\/projects\/[^/]+\/forms\/[^/]+\/(draft\/)?submissions(\/|$)/, 'submissions'],
  // Forms, drafts, versions, form attachments, the OpenRosa form list/manifest and Draft Token paths.
  [/^\/v1\/projects\/[^/]+\/formList$/, 'forms'],
  [/^\/v1\/form-links\/[^/]+\/form$/, 'forms'],
  [/^\/v1\/projects\/[^/]+\/forms(\/|$)/, 'forms'],
  [/^\/v1\/test\/[^/]+\/projects\/[^/]+\/forms\/[^/]+\/draft/, 'forms'],
  // Datasets (Entity Lists), their Entities, the Entities OData (D.svc) and GeoJSON.
  [/^\/v1\/projects\/[^/]+\/datasets(\/|$)/, 'entities'],
  [/^\/v1\/projects\/[^/]+\/trash\/datasets\//, 'entities'],
  [/^\/v1\/projects\/?$/, 'projects'],
  [/^\/v1\/projects\/[^/]+\/?$/, 'projects'],
  [/^\/v1\/projects\/[^/]+\/key$/, 'projects'],
];

/** @returns the group for a routing path, or null (the caller answers 404.x). Pure. */
export function groupFor(path: string): GroupName | null {
  for (const [pattern, group] of routeTable) if (pattern.test(path)) return group;
  return null;
}
