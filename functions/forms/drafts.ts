/** Draft forms: F/draft, F/draft.xml, F/draft.xlsx / .xls, F/draft/attachments, F/draft/fields, F/draft/publish; F[/draft]/dataset-diff. */
import { isExtended, newApp, success } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { projectId, stringParam } from '../../lib/http/params';
import { actionNotes, blobResponse, bodyBytes, xmlResponse } from '../../lib/http/responses';
import * as attachments from '../../lib/forms/attachments';
import * as forms from '../../lib/forms';
import * as entityLists from '../../lib/entities/entity-lists';
import { attachmentResponse } from '../../lib/http/downloads';
import { upload } from './forms';

const F = '/v1/projects/:projectId/forms/:xmlFormId';
const id = (c: { req: { param(n: string): string | undefined } }) => c.req.param('xmlFormId') ?? '';

export const draftRoutes = newApp()
  .get(`${F}/draft.xml`, async (c) => xmlResponse(await forms.getDraftXml(c.var.ctx, projectId(c), id(c))))
  .get(`${F}/draft.xlsx`, async (c) =>
    blobResponse(c, c.var.ctx, await attachments.getSpreadsheet(c.var.ctx, projectId(c), id(c), { kind: 'draft' }, 'xlsx')))
  .get(`${F}/draft.xls`, async (c) =>
    blobResponse(c, c.var.ctx, await attachments.getSpreadsheet(c.var.ctx, projectId(c), id(c), { kind: 'draft' }, 'xls')))
  .get(`${F}/draft`, async (c) => c.json(await forms.getDraft(c.var.ctx, projectId(c), id(c), isExtended(c))))
  .get(`${F}/draft/dataset-diff`, async (c) => c.json(await forms.datasetDiff(c.var.ctx, projectId(c), id(c), true)))
  .get(`${F}/dataset-diff`, async (c) => c.json(await forms.datasetDiff(c.var.ctx, projectId(c), id(c), false)))
  .post(`${F}/draft`, async (c) => {
    await forms.setDraft(c.var.ctx, projectId(c), id(c), await upload(c));
    return success(c);
  })
  .delete(`${F}/draft`, async (c) => {
    await forms.deleteDraft(c.var.ctx, projectId(c), id(c));
    return success(c);
  })
  .get(`${F}/draft/fields`, async (c) =>
    c.json(await forms.getDraftFields(c.var.ctx, projectId(c), id(c), c.req.query('odata') === 'true')))
  .post(`${F}/draft/publish`, async (c) => {
    await forms.publishDraft(c.var.ctx, projectId(c), id(c), c.req.query('version'), actionNotes(c), new URL(c.req.url).origin);
    return success(c);
  })
  .get(`${F}/draft/attachments`, async (c) =>
    c.json(await attachments.listAttachments(c.var.ctx, projectId(c), id(c), { kind: 'draft' })))
  .get(`${F}/draft/attachments/:filename`, async (c) =>
    attachmentResponse(c, await entityLists.formAttachmentDownload(c.var.ctx, projectId(c), id(c), { kind: 'draft' }, stringParam(c, 'filename'))))
  .post(`${F}/draft/attachments/:filename`, async (c) =>
    c.json(await attachments.uploadDraftAttachment(c.var.ctx, projectId(c), id(c), stringParam(c, 'filename'), await bodyBytes(c), c.req.header('content-type') ?? null)))
  .delete(`${F}/draft/attachments/:filename`, async (c) => {
    await attachments.clearDraftAttachment(c.var.ctx, projectId(c), id(c), stringParam(c, 'filename'));
    return success(c);
  })
  .patch(`${F}/draft/attachments/:filename`, async (c) =>
    c.json(await attachments.linkDraftAttachment(c.var.ctx, projectId(c), id(c), stringParam(c, 'filename'), await jsonBody(c))));
