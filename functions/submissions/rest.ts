/** Submissions (REST, read side): F/submissions, S, S.xml, and their draft forms. */
import { isExtended, newApp } from '../../lib/http/app';
import { projectId, stringParam } from '../../lib/http/params';
import { xmlResponse } from '../../lib/http/responses';
import * as queries from '../../lib/submissions/queries';

const F = '/v1/projects/:projectId/forms/:xmlFormId';
const id = (c: { req: { param(n: string): string | undefined } }) => c.req.param('xmlFormId') ?? '';

export const submissionRestRoutes = newApp();
for (const [prefix, draft] of [[`${F}/submissions`, false], [`${F}/draft/submissions`, true]] as const) {
  submissionRestRoutes
    .get(prefix, async (c) => c.json(await queries.listSubmissions(c.var.ctx, projectId(c), id(c), draft, isExtended(c))))
    .get(`${prefix}/:file{[^/]+\\.xml}`, async (c) =>
      xmlResponse(await queries.getSubmissionXml(c.var.ctx, projectId(c), id(c), stringParam(c, 'file').replace(/\.xml$/, ''), draft)))
    .get(`${prefix}/:instanceId`, async (c) =>
      c.json(await queries.getSubmission(c.var.ctx, projectId(c), id(c), stringParam(c, 'instanceId'), draft, isExtended(c))));
}
