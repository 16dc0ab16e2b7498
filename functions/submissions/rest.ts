/** Submissions (REST): list, one, .xml, attachments (also draft); review state, trash, restore, versions. */
import { isExtended, newApp, success } from '../../lib/http/app';
import { projectId, stringParam } from '../../lib/http/params';
import { blobResponse, xmlResponse } from '../../lib/http/responses';
import * as manage from '../../lib/submissions/manage';
import * as queries from '../../lib/submissions/queries';
import { jsonBody } from '../../lib/http/body';

const F = '/v1/projects/:projectId/forms/:xmlFormId';
const id = (c: { req: { param(n: string): string | undefined } }) => c.req.param('xmlFormId') ?? '';

export const submissionRestRoutes = newApp();
for (const [prefix, draft] of [[`${F}/submissions`, false], [`${F}/draft/submissions`, true]] as const) {
  submissionRestRoutes
    .get(prefix, async (c) => c.json(await queries.listSubmissions(c.var.ctx, projectId(c), id(c), draft, isExtended(c))))
    .get(`${prefix}/:file{[^/]+\\.xml}`, async (c) =>
      xmlResponse(await queries.getSubmissionXml(c.var.ctx, projectId(c), id(c), stringParam(c, 'file').replace(/\.xml$/, ''), draft)))
    .get(`${prefix}/:instanceId`, async (c) =>
      c.json(await queries.getSubmission(c.var.ctx, projectId(c), id(c), stringParam(c, 'instanceId'), draft, isExtended(c))))
    .get(`${prefix}/:instanceId/attachments`, async (c) =>
      c.json(await manage.listAttachments(c.var.ctx, projectId(c), id(c), stringParam(c, 'instanceId'), draft)))
    .get(`${prefix}/:instanceId/attachments/:filename`, async (c) =>
      blobResponse(c, c.var.ctx, await manage.getAttachmentFile(c.var.ctx, projectId(c), id(c), stringParam(c, 'instanceId'), draft, stringParam(c, 'filename'))));
}

const S = `${F}/submissions/:instanceId`;
submissionRestRoutes
  .patch(S, async (c) => c.json(await manage.setReviewState(c.var.ctx, projectId(c), id(c), stringParam(c, 'instanceId'), await jsonBody(c))))
  .delete(S, async (c) => {
    await manage.deleteSubmission(c.var.ctx, projectId(c), id(c), stringParam(c, 'instanceId'));
    return success(c);
  })
  .post(`${S}/restore`, async (c) => {
    await manage.restoreSubmission(c.var.ctx, projectId(c), id(c), stringParam(c, 'instanceId'));
    return success(c);
  })
  .get(`${S}/versions`, async (c) => c.json(await manage.listVersions(c.var.ctx, projectId(c), id(c), stringParam(c, 'instanceId'))));
