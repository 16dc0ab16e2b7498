/** Entities' GeoJSON: D/entities.geojson (streamed) and E/geojson. Authz in lib/entities/geojson. */
import { newApp } from '../../lib/http/app';
import { projectId, stringParam } from '../../lib/http/params';
import { entitiesGeoJson, entityGeoJson } from '../../lib/entities/geojson';

const JSON_TYPE = { 'Content-Type': 'application/json; charset=utf-8' };
const D = '/v1/projects/:projectId/datasets/:name';

export const geojsonRoutes = newApp()
  .get(`${D}/entities.geojson`, async (c) =>
    new Response(await entitiesGeoJson(c.var.ctx, {
      projectId: projectId(c), name: stringParam(c, 'name'),
      filter: c.req.query('$filter') ?? null, search: c.req.query('$search') ?? null, limit: c.req.query('limit') ?? null,
    }), { status: 200, headers: JSON_TYPE }))
  .get(`${D}/entities/:uuid/geojson`, async (c) =>
    c.body(await entityGeoJson(c.var.ctx, projectId(c), stringParam(c, 'name'), stringParam(c, 'uuid')), 200, JSON_TYPE));
