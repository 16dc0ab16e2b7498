/** Public Access Links: F/public-links[/:actorId]; and /v1/form-links/:enketoId/form, the form behind a public URL. */
import { isExtended, newApp, success } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { jsonArrayResponse } from '../../lib/http/json-stream';
import { intParam, projectId, stringParam } from '../../lib/http/params';
import * as forms from '../../lib/forms';
import * as publicLinks from '../../lib/public-links';

const PATH = '/v1/projects/:projectId/forms/:xmlFormId/public-links';

export const publicLinksRoutes = newApp()
  .get('/v1/form-links/:enketoId/form', async (c) =>
    c.json(await forms.getFormByPublicId(c.var.ctx, stringParam(c, 'enketoId'))))
  .get(PATH, async (c) =>
    jsonArrayResponse(await publicLinks.listPublicLinks(c.var.ctx, { projectId: projectId(c), xmlFormId: stringParam(c, 'xmlFormId'), extended: isExtended(c) })))
  .post(PATH, async (c) =>
    c.json(await publicLinks.createPublicLink(c.var.ctx, { projectId: projectId(c), xmlFormId: stringParam(c, 'xmlFormId') }, await jsonBody(c))))
  .get(`${PATH}/:actorId`, async (c) =>
    c.json(await publicLinks.getPublicLink(c.var.ctx, {
      projectId: projectId(c), xmlFormId: stringParam(c, 'xmlFormId'), actorId: intParam(c, 'actorId'), extended: isExtended(c),
    })))
  .patch(`${PATH}/:actorId`, async (c) =>
    c.json(await publicLinks.updatePublicLink(c.var.ctx, {
      projectId: projectId(c), xmlFormId: stringParam(c, 'xmlFormId'), actorId: intParam(c, 'actorId'),
    }, await jsonBody(c))))
  .delete(`${PATH}/:actorId`, async (c) => {
    await publicLinks.deletePublicLink(c.var.ctx, { projectId: projectId(c), xmlFormId: stringParam(c, 'xmlFormId'), actorId: intParam(c, 'actorId') });
    return success(c);
  });
