/** Datasets: P/datasets, D, D/properties, D/entities.csv. Authz in lib/datasets. */
import { groupApp, isExtended, success } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { projectId, stringParam } from '../../lib/http/params';
import { contentDisposition } from '../../lib/http/responses';
import * as datasets from '../../lib/datasets';
import * as entities from '../../lib/entities';

const D = '/v1/projects/:projectId/datasets/:name';

export const datasetsRoutes = groupApp()
  .get('/v1/projects/:projectId/datasets', async (c) =>
    c.json(await datasets.listDatasets(c.var.ctx, projectId(c), { deleted: c.req.query('deleted') === 'true', extended: isExtended(c) })))
  .post('/v1/projects/:projectId/datasets', async (c) =>
    c.json(await datasets.createDataset(c.var.ctx, projectId(c), await jsonBody(c))))
  .get(`${D}/entities.csv`, async (c) => {
    const file = await entities.entitiesCsv(c.var.ctx, projectId(c), stringParam(c, 'name'));
    return new Response(file.body, { headers: { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': contentDisposition(file.filename) } });
  })
  .get(D, async (c) => c.json(await datasets.getDatasetMetadata(c.var.ctx, projectId(c), stringParam(c, 'name'), isExtended(c))))
  .patch(D, async (c) =>
    c.json(await datasets.patchDataset(c.var.ctx, projectId(c), stringParam(c, 'name'), await jsonBody(c), c.req.query('convert'))))
  .post(`${D}/properties`, async (c) => {
    await datasets.createProperty(c.var.ctx, projectId(c), stringParam(c, 'name'), await jsonBody(c));
    return success(c);
  });


