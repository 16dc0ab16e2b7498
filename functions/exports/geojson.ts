/** Submissions' GeoJSON: F/submissions.geojson (streamed), S.geojson and S/versions/{versionId}.geojson. */
import type { Context } from 'hono';
import { newApp, type AppEnv } from '../../lib/http/app';
import { projectId, stringParam } from '../../lib/http/params';
import { submissionGeoJson, submissionsGeoJson } from '../../lib/exports/geojson';

type C = Context<AppEnv, string>;
const JSON_TYPE = { 'Content-Type': 'application/json; charset=utf-8' };
const F = '/v1/projects/:projectId/forms/:xmlFormId';
const geojsonParam = (c: C, name: string) => stringParam(c, name).replace(/\.geojson$/, '');
const one = async (c: C, instanceId: string, versionId: string | null) =>
  c.body(await submissionGeoJson(c.var.ctx, {
    projectId: projectId(c), xmlFormId: stringParam(c, 'xmlFormId'), instanceId, versionId, fieldpaths: c.req.queries('fieldpath') ?? [],
  }), 200, JSON_TYPE);

export const geojsonRoutes = newApp()
  .get(`${F}/submissions.geojson`, async (c) =>
    new Response(await submissionsGeoJson(c.var.ctx, {
      projectId: projectId(c), xmlFormId: stringParam(c, 'xmlFormId'),
      filter: c.req.query('$filter') ?? null, fieldpaths: c.req.queries('fieldpath') ?? [], limit: c.req.query('limit') ?? null,
    }), { status: 200, headers: JSON_TYPE }))
  .get(`${F}/submissions/:instanceId/versions/:versionId{[^/]+\\.geojson}`, (c) => one(c, stringParam(c, 'instanceId'), geojsonParam(c, 'versionId')))
  .get(`${F}/submissions/:file{[^/]+\\.geojson}`, (c) => one(c, geojsonParam(c, 'file'), null));
