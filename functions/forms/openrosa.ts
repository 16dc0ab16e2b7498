/** OpenRosa: P/formList, F/manifest, F/versions/{v}/manifest, F/draft/formList|manifest, and the Draft Token paths /v1/test/{token}/…/draft/…. */
import type { Context } from 'hono';
import { newApp, type AppEnv } from '../../lib/http/app';
import { projectId, stringParam } from '../../lib/http/params';
import { openRosaXml } from '../../lib/http/openrosa';
import { publicOrigin, xmlResponse } from '../../lib/http/responses';
import { keyToken } from '../../lib/http/app';
import * as openrosa from '../../lib/forms/openrosa';
import * as entityLists from '../../lib/entities/entity-lists';
import { attachmentResponse } from '../../lib/http/downloads';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const base = (c: Context<AppEnv, any>) => {
  const key = keyToken(c.req.raw);
  return { origin: publicOrigin(c), prefix: key == null ? '/v1' : `/v1/key/${key}` };
};
const T = '/v1/test/:token/projects/:projectId/forms/:xmlFormId/draft';
const token = (c: { req: { param(n: string): string | undefined } }) => c.req.param('token') ?? '';
const id = (c: { req: { param(n: string): string | undefined } }) => c.req.param('xmlFormId') ?? '';

export const openRosaRoutes = newApp()
  .get('/v1/projects/:projectId/formList', async (c) => openRosaXml(await openrosa.formList(c.var.ctx, projectId(c), base(c))))
  .get('/v1/projects/:projectId/forms/:xmlFormId/draft/formList', async (c) =>
    openRosaXml(await openrosa.draftDocumentsForActor(c.var.ctx, projectId(c), id(c), base(c), 'formList')))
  .get('/v1/projects/:projectId/forms/:xmlFormId/draft/manifest', async (c) =>
    openRosaXml(await openrosa.draftDocumentsForActor(c.var.ctx, projectId(c), id(c), base(c), 'manifest')))
  .get('/v1/projects/:projectId/forms/:xmlFormId/versions/:version/manifest', async (c) =>
    openRosaXml(await openrosa.versionManifest(c.var.ctx, projectId(c), id(c), stringParam(c, 'version'), base(c))))
  .get('/v1/projects/:projectId/forms/:xmlFormId/manifest', async (c) =>
    openRosaXml(await openrosa.manifest(c.var.ctx, projectId(c), id(c), base(c))))
  .get(`${T}/formList`, async (c) => openRosaXml(await openrosa.draftFormList(c.var.ctx, token(c), projectId(c), id(c), publicOrigin(c))))
  .get(`${T}/manifest`, async (c) => openRosaXml(await openrosa.draftManifest(c.var.ctx, token(c), projectId(c), id(c), publicOrigin(c))))
  .get('/v1/test/:token/projects/:projectId/forms/:xmlFormId/draft.xml', async (c) =>
    xmlResponse(await openrosa.draftXmlByToken(c.var.ctx, token(c), projectId(c), id(c))))
  .get(`${T}/attachments/:filename`, async (c) =>
    attachmentResponse(c, await entityLists.draftAttachmentDownloadByToken(
      c.var.ctx, { token: token(c), projectId: projectId(c), xmlFormId: id(c) }, stringParam(c, 'filename'))));
