/** Entities of a Dataset: D/entities, E, E/versions, E/diffs, E/audits, bulk delete/restore. Authz in lib/entities. */
import { groupApp, isExtended, success } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { jsonArrayResponse } from '../../lib/http/json-stream';
import { paging, projectId, stringParam } from '../../lib/http/params';
import { actionNotes } from '../../lib/http/responses';
import * as entities from '../../lib/entities';
import { listEntityAudits } from '../../lib/entities/audits';

const D = '/v1/projects/:projectId/datasets/:name';
const E = `${D}/entities/:uuid`;

export const entitiesRoutes = groupApp()
  .get(`${D}/entities`, async (c) =>
    jsonArrayResponse(await entities.listEntities(c.var.ctx, projectId(c), stringParam(c, 'name'), { deleted: c.req.query('deleted') === 'true', extended: isExtended(c) })))
  .post(`${D}/entities`, async (c) => {
    const out = await entities.createEntities(c.var.ctx, projectId(c), stringParam(c, 'name'), await jsonBody(c), c.req.header('user-agent') ?? null, actionNotes(c));
    return out.bulk ? new Response(JSON.stringify(out.json), { headers: { 'Content-Type': 'application/json; bulk' } }) : c.json(out.json);
  })
  .get(`${D}/entities/creators`, async (c) => c.json(await entities.listCreators(c.var.ctx, projectId(c), stringParam(c, 'name'))))
  .post(`${D}/entities/bulk-delete`, async (c) => c.json(await entities.bulkSetDeleted(c.var.ctx, projectId(c), stringParam(c, 'name'), await jsonBody(c), false)))
  .post(`${D}/entities/bulk-restore`, async (c) => c.json(await entities.bulkSetDeleted(c.var.ctx, projectId(c), stringParam(c, 'name'), await jsonBody(c), true)))
  .get(`${E}/versions`, async (c) =>
    jsonArrayResponse(await entities.listVersions(c.var.ctx, projectId(c), stringParam(c, 'name'), stringParam(c, 'uuid'), {
      extended: isExtended(c), relevantToConflict: c.req.query('relevantToConflict') === 'true',
    })))
  .get(`${E}/diffs`, async (c) => jsonArrayResponse(await entities.listDiffs(c.var.ctx, projectId(c), stringParam(c, 'name'), stringParam(c, 'uuid'))))
  .get(`${E}/audits`, async (c) =>
    jsonArrayResponse(await listEntityAudits(c.var.ctx, projectId(c), stringParam(c, 'name'), stringParam(c, 'uuid'), paging(c))))
  .post(`${E}/restore`, async (c) => {
    await entities.restoreEntity(c.var.ctx, projectId(c), stringParam(c, 'name'), stringParam(c, 'uuid'));
    return success(c);
  })
  .get(E, async (c) => c.json(await entities.getEntity(c.var.ctx, projectId(c), stringParam(c, 'name'), stringParam(c, 'uuid'), isExtended(c))))
  .patch(E, async (c) =>
    c.json(await entities.updateEntity(c.var.ctx, { projectId: projectId(c), name: stringParam(c, 'name'), uuid: stringParam(c, 'uuid') }, {
      baseVersion: c.req.query('baseVersion'), force: c.req.query('force'), resolve: c.req.query('resolve'),
    }, await jsonBody(c), c.req.header('user-agent') ?? null)))
  .delete(E, async (c) => {
    await entities.deleteEntity(c.var.ctx, projectId(c), stringParam(c, 'name'), stringParam(c, 'uuid'));
    return success(c);
  });


