/** Forms: P/forms, F, F.xml, F.xlsx / F.xls, F/fields, F/attachments, P/forms/{id}/restore. */
import type { Context } from 'hono';
import { isExtended, newApp, success, type AppEnv } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { intParam, projectId, stringParam } from '../../lib/http/params';
import { actionNotes, blobResponse, bodyBytes, xmlResponse } from '../../lib/http/responses';
import * as attachments from '../../lib/forms/attachments';
import * as forms from '../../lib/forms';
import * as entityLists from '../../lib/entities/entity-lists';
import { attachmentResponse } from '../../lib/http/downloads';
import { jsonArrayResponse } from '../../lib/http/json-stream';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const upload = async (c: Context<AppEnv, any>) => ({
  body: await bodyBytes(c),
  contentType: c.req.header('content-type') ?? null,
  ignoreWarnings: c.req.query('ignoreWarnings') === 'true',
  formIdFallback: c.req.header('x-xlsform-formid-fallback') ?? null,
  origin: new URL(c.req.url).origin,
});
/** A query flag as Central's isTrue reads it: `true` in any case. */
const isTrue = (v: string | undefined) => v?.toLowerCase() === 'true';
const ext = (file: string) => (file.endsWith('.xlsx') ? 'xlsx' : 'xls');

export const formsRoutes = newApp()
  .get('/v1/projects/:projectId/forms', async (c) =>
    jsonArrayResponse(await forms.listForms(c.var.ctx, projectId(c), { deleted: c.req.query('deleted') === 'true', extended: isExtended(c) })))
  .post('/v1/projects/:projectId/forms', async (c) =>
    c.json(await forms.createForm(c.var.ctx, projectId(c), { ...(await upload(c)), publish: isTrue(c.req.query('publish')), notes: actionNotes(c) })))
  .post('/v1/projects/:projectId/forms/:formId/restore', async (c) => {
    await forms.restoreForm(c.var.ctx, projectId(c), intParam(c, 'formId'));
    return success(c);
  })
  .get('/v1/projects/:projectId/forms/:file{[^/]+\\.xml}', async (c) =>
    xmlResponse(await forms.getFormXml(c.var.ctx, projectId(c), stringParam(c, 'file').replace(/\.xml$/, ''))))
  .get('/v1/projects/:projectId/forms/:file{[^/]+\\.xlsx?}', async (c) => {
    const file = stringParam(c, 'file');
    return blobResponse(c, c.var.ctx, await attachments.getSpreadsheet(c.var.ctx, projectId(c), file.replace(/\.xlsx?$/, ''), { kind: 'published' }, ext(file)));
  })
  .get('/v1/projects/:projectId/forms/:xmlFormId', async (c) =>
    c.json(await forms.getForm(c.var.ctx, projectId(c), stringParam(c, 'xmlFormId'), isExtended(c))))
  .patch('/v1/projects/:projectId/forms/:xmlFormId', async (c) =>
    c.json(await forms.patchForm(c.var.ctx, projectId(c), stringParam(c, 'xmlFormId'), await jsonBody(c))))
  .delete('/v1/projects/:projectId/forms/:xmlFormId', async (c) => {
    await forms.deleteForm(c.var.ctx, projectId(c), stringParam(c, 'xmlFormId'));
    return success(c);
  })
  .get('/v1/projects/:projectId/forms/:xmlFormId/fields', async (c) =>
    c.json(await forms.getFields(c.var.ctx, projectId(c), stringParam(c, 'xmlFormId'), c.req.query('odata') === 'true')))
  .get('/v1/projects/:projectId/forms/:xmlFormId/attachments', async (c) =>
    c.json(await attachments.listAttachments(c.var.ctx, projectId(c), stringParam(c, 'xmlFormId'), { kind: 'published' })))
  .get('/v1/projects/:projectId/forms/:xmlFormId/attachments/:filename', async (c) =>
    attachmentResponse(c, await entityLists.formAttachmentDownload(c.var.ctx, projectId(c), stringParam(c, 'xmlFormId'), { kind: 'published' }, stringParam(c, 'filename'))));

export { upload, ext };
