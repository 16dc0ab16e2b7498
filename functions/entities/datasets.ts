/** Datasets: P/datasets, D, D/properties[/{name}], D/entities.csv, D/integrity, P/trash/datasets/{id}/entities.csv. Authz in lib/datasets. */
import { groupApp, isExtended, success } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { jsonArrayResponse } from '../../lib/http/json-stream';
import { attachmentResponse } from '../../lib/http/downloads';
import { openRosaXml } from '../../lib/http/openrosa';
import { intParam, projectId, stringParam } from '../../lib/http/params';
import { contentDisposition } from '../../lib/http/responses';
import * as datasets from '../../lib/datasets';
import * as entities from '../../lib/entities';
import * as entityLists from '../../lib/entities/entity-lists';
import * as trash from '../../lib/datasets/trash';

const D = '/v1/projects/:projectId/datasets/:name';

export const datasetsRoutes = groupApp()
  .get('/v1/projects/:projectId/datasets', async (c) =>
    jsonArrayResponse(await datasets.listDatasets(c.var.ctx, projectId(c), { deleted: c.req.query('deleted') === 'true', extended: isExtended(c) })))
  .post('/v1/projects/:projectId/datasets', async (c) =>
    c.json(await datasets.createDataset(c.var.ctx, projectId(c), await jsonBody(c))))
  .get(`${D}/entities.csv`, async (c) => {
    const csv = await entities.entitiesCsv(c.var.ctx, projectId(c), stringParam(c, 'name'), { filter: c.req.query('$filter'), search: c.req.query('$search') });
    if (csv.etag != null) return attachmentResponse(c, { kind: 'entities', ...csv, etag: csv.etag });
    // Under $filter: no ETag, as Central.
    return new Response(csv.body(), { headers: { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': contentDisposition(csv.filename) } });
  })
  .get(`${D}/integrity`, async (c) =>
    openRosaXml(await entityLists.entityIntegrity(c.var.ctx, projectId(c), stringParam(c, 'name'), c.req.query('id'))))
  .get('/v1/projects/:projectId/trash/datasets/:datasetId/entities.csv', async (c) => {
    const file = await entityLists.deletedDatasetEntitiesCsv(c.var.ctx, projectId(c), intParam(c, 'datasetId'));
    return new Response(file.body, { headers: { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': contentDisposition(file.filename) } });
  })
  .delete(D, async (c) => {
    await trash.deleteDataset(c.var.ctx, projectId(c), stringParam(c, 'name'));
    return success(c);
  })
  .get(D, async (c) => c.json(await datasets.getDatasetMetadata(c.var.ctx, projectId(c), stringParam(c, 'name'), isExtended(c))))
  .patch(D, async (c) =>
    c.json(await datasets.patchDataset(c.var.ctx, projectId(c), stringParam(c, 'name'), await jsonBody(c), c.req.query('convert'))))
  .delete(`${D}/properties/:propertyName`, async (c) => {
    await trash.deleteProperty(c.var.ctx, projectId(c), stringParam(c, 'name'), stringParam(c, 'propertyName'));
    return success(c);
  })
  .post(`${D}/properties`, async (c) => {
    await datasets.createProperty(c.var.ctx, projectId(c), stringParam(c, 'name'), await jsonBody(c));
    return success(c);
  });


