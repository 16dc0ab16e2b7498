/** Published form versions: F/versions[/{version}[.xml|.xlsx|.xls|/fields|/attachments[/{filename}]]]. */
import { isExtended, newApp } from '../../lib/http/app';
import { projectId, stringParam } from '../../lib/http/params';
import { blobResponse, xmlResponse } from '../../lib/http/responses';
import * as attachments from '../../lib/forms/attachments';
import * as forms from '../../lib/forms';
import * as entityLists from '../../lib/entities/entity-lists';
import { attachmentResponse } from '../../lib/http/downloads';
import { ext } from './forms';
import { jsonArrayResponse } from '../../lib/http/json-stream';

const V = '/v1/projects/:projectId/forms/:xmlFormId/versions';
const id = (c: { req: { param(n: string): string | undefined } }) => c.req.param('xmlFormId') ?? '';

export const versionRoutes = newApp()
  .get(V, async (c) => jsonArrayResponse(await forms.listVersions(c.var.ctx, projectId(c), id(c), isExtended(c))))
  .get(`${V}/:file{[^/]+\\.xml}`, async (c) =>
    xmlResponse((await forms.getVersion(c.var.ctx, projectId(c), id(c), stringParam(c, 'file').replace(/\.xml$/, ''))).def.xml))
  .get(`${V}/:file{[^/]+\\.xlsx?}`, async (c) => {
    const file = stringParam(c, 'file');
    return blobResponse(c, c.var.ctx, await attachments.getSpreadsheet(
      c.var.ctx, projectId(c), id(c), { kind: 'version', version: file.replace(/\.xlsx?$/, '') }, ext(file)));
  })
  .get(`${V}/:version`, async (c) => c.json(await forms.getVersionJson(c.var.ctx, projectId(c), id(c), stringParam(c, 'version'), isExtended(c))))
  .get(`${V}/:version/fields`, async (c) =>
    c.json(await forms.getVersionFields(c.var.ctx, projectId(c), id(c), stringParam(c, 'version'), c.req.query('odata') === 'true')))
  .get(`${V}/:version/attachments`, async (c) =>
    c.json(await attachments.listAttachments(c.var.ctx, projectId(c), id(c), { kind: 'version', version: stringParam(c, 'version') })))
  .get(`${V}/:version/attachments/:filename`, async (c) =>
    attachmentResponse(c, await entityLists.formAttachmentDownload(
      c.var.ctx, projectId(c), id(c), { kind: 'version', version: stringParam(c, 'version') }, stringParam(c, 'filename'))));
