/** Submissions (REST): list, create, one (301 for a version id), .xml, PUT (also draft), review, trash, audits, keys, submitters, attachments, versions, diffs, comments. */
import type { Context } from 'hono';
import { isExtended, newApp, success, type AppEnv } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { jsonArrayResponse } from '../../lib/http/json-stream';
import { projectId, stringParam } from '../../lib/http/params';
import { actionNotes, blobResponse, bodyBytes, xmlResponse } from '../../lib/http/responses';
import { Problem, problems } from '../../lib/problem';
import * as attachments from '../../lib/submissions/attachments';
import { submissionClient } from '../../lib/submissions/client';
import { withEntityDetails } from '../../lib/entities/audits';
import * as comments from '../../lib/submissions/comments';
import { createSubmission, updateSubmission } from '../../lib/submissions/ingest';
import * as manage from '../../lib/submissions/manage';
import * as queries from '../../lib/submissions/queries';
import * as versions from '../../lib/submissions/versions';

type C = Context<AppEnv, string>;
/** `?limit=` / `?offset=` as Central reads them (parseInt). @throws 400.11 when not a number. */
const intQuery = (c: C, name: string): number | null => {
  const raw = c.req.query(name);
  if (raw == null) return null;
  const n = Number.parseInt(raw, 10);
  if (Number.isNaN(n)) throw problems.user.invalidDataTypeOfParameter({ field: name, expected: 'integer' });
  return n;
};
const F = '/v1/projects/:projectId/forms/:xmlFormId';
const form = (c: C) => stringParam(c, 'xmlFormId');
const inst = (c: C) => stringParam(c, 'instanceId');
const client = (c: C) => ({
  ...submissionClient({ deviceId: c.req.query('deviceID'), userAgent: c.req.header('user-agent'), odkClient: c.req.header('odk-client') }),
  notes: actionNotes(c),
});
const target = (c: C, draft: boolean) => ({ projectId: projectId(c), xmlFormId: form(c), instanceId: inst(c), draft });
const file = async (c: C) => ({ bytes: await bodyBytes(c), contentType: c.req.header('content-type')?.split(';')[0]?.trim() || null });
/**
 * Central's redirect for an edit's instanceID (util/http convertToSubmissionVersion): 301 to
 * `…/submissions/{rootId}/versions/{the id as sent}{rest of the path}{query}`, as Express words it
 * (HTML when the client accepts it, else plain text).
 */
const moved = (c: C, root: string, instanceId: string) => {
  const url = new URL(c.req.url);
  const parts = url.pathname.split('/');
  const at = parts.findIndex((p, i) => i > 0 && parts[i - 1] === 'submissions' && decodeURIComponent(p.replace(/(.)\.xml$/, '$1')) === instanceId);
  const to = [...parts.slice(0, at), encodeURIComponent(root), 'versions', ...parts.slice(at)].join('/') + url.search;
  if ((c.req.header('accept') ?? '').includes('text/html')) {
    return c.html(`<p>Moved Permanently. Redirecting to <a href="${to}">${to}</a></p>`, 301, { Location: to });
  }
  return c.text(`Moved Permanently. Redirecting to ${to}`, 301, { Location: to });
};
/** Runs a read of S…; when the id is an edit's (404.1 and a root exists), answers Central's redirect. */
const orMoved = async (c: C, draft: boolean, read: () => Promise<Response>): Promise<Response> => {
  try {
    return await read();
  } catch (err) {
    if (!(err instanceof Problem) || err.code !== 404.1) throw err;
    const root = await queries.rootForVersion(c.var.ctx, projectId(c), form(c), inst(c), draft);
    if (root == null) throw err;
    return moved(c, root, inst(c));
  }
};

export const submissionRestRoutes = newApp();
// Before `submissions/:instanceId` below, which would otherwise take 'submitters' for an instanceId.
submissionRestRoutes.get(`${F}/submissions/submitters`, async (c) => jsonArrayResponse(await manage.listSubmitters(c.var.ctx, projectId(c), form(c))));
for (const [prefix, draft] of [[`${F}/submissions`, false], [`${F}/draft/submissions`, true]] as const) {
  submissionRestRoutes
    // Streamed as it is read (issue 21): 100,000 submissions in bounded memory, first byte at once.
    .get(prefix, async (c) => jsonArrayResponse(await queries.listSubmissions(c.var.ctx, projectId(c), form(c), draft, isExtended(c), undefined, {
      deleted: c.req.query('deleted') === 'true', limit: intQuery(c, 'limit'), offset: intQuery(c, 'offset'),
    }), (b) => b, true))
    .post(prefix, async (c) =>
      c.json(await createSubmission(c.var.ctx, { projectId: projectId(c), xmlFormId: form(c), draft, xml: await bodyBytes(c), ...client(c) })))
    // An edit by its new XML (PUT S); the draft form too, as Central routes both.
    .put(`${prefix}/:instanceId`, async (c) =>
      c.json(await updateSubmission(c.var.ctx, { projectId: projectId(c), xmlFormId: form(c), instanceId: inst(c), draft, xml: await bodyBytes(c), ...client(c) })))
    .get(`${prefix}/keys`, async (c) => c.json(await manage.listSubmissionKeys(c.var.ctx, projectId(c), form(c), draft)))
    .get(`${prefix}/:file{[^/]+\\.xml}`, async (c) => {
      const id = stringParam(c, 'file').replace(/\.xml$/, '');
      try {
        return xmlResponse(await queries.getSubmissionXml(c.var.ctx, projectId(c), form(c), id, draft));
      } catch (err) {
        const root = err instanceof Problem && err.code === 404.1 ? await queries.rootForVersion(c.var.ctx, projectId(c), form(c), id, draft) : null;
        if (root == null) throw err;
        return moved(c, root, id);
      }
    })
    .get(`${prefix}/:instanceId`, async (c) => {
      const found = await queries.getSubmission(c.var.ctx, projectId(c), form(c), inst(c), draft, isExtended(c));
      return 'redirectTo' in found ? moved(c, found.redirectTo, inst(c)) : c.json(found);
    })
    .get(`${prefix}/:instanceId/attachments`, (c) => orMoved(c, draft, async () => c.json(await attachments.listAttachments(c.var.ctx, target(c, draft)))))
    .get(`${prefix}/:instanceId/attachments/:filename`, (c) => orMoved(c, draft, async () =>
      blobResponse(c, c.var.ctx, await attachments.getAttachmentFile(c.var.ctx, target(c, draft), stringParam(c, 'filename')), { imageInline: true })))
    .post(`${prefix}/:instanceId/attachments/:filename`, async (c) => {
      await attachments.setAttachment(c.var.ctx, target(c, draft), stringParam(c, 'filename'), await file(c));
      return success(c);
    })
    .delete(`${prefix}/:instanceId/attachments/:filename`, async (c) => {
      await attachments.setAttachment(c.var.ctx, target(c, draft), stringParam(c, 'filename'), null);
      return success(c);
    });
}

// The Draft Token form of REST creation (spec: Submissions (REST), draft variants).
submissionRestRoutes.post('/v1/test/:token/projects/:projectId/forms/:xmlFormId/draft/submissions', async (c) =>
  c.json(await createSubmission(c.var.ctx, { projectId: projectId(c), xmlFormId: form(c), draft: true, token: stringParam(c, 'token'), xml: await bodyBytes(c), ...client(c) })));

const S = `${F}/submissions/:instanceId`;
submissionRestRoutes
  // Central reads only a JSON body here: an XML one (an edit sent to PATCH instead of PUT) is an
  // empty change, answered 200 (Central's datasets.js pending-count test sends one).
  .patch(S, async (c) => c.json(await manage.setReviewState(c.var.ctx, projectId(c), form(c), inst(c),
    /\bxml\b/i.test(c.req.header('Content-Type') ?? '') ? {} : await jsonBody(c), actionNotes(c))))
  .delete(S, async (c) => {
    await manage.deleteSubmission(c.var.ctx, projectId(c), form(c), inst(c));
    return success(c);
  })
  .post(`${S}/restore`, async (c) => {
    await manage.restoreSubmission(c.var.ctx, projectId(c), form(c), inst(c));
    return success(c);
  })
  // Web editing needs Enketo or Web Forms editing; until then, Central's "not supported" (issue 4).
  .get(`${S}/edit`, async (c) => manage.editSubmission(c.var.ctx, projectId(c), form(c), inst(c)))
  .get(`${S}/comments`, async (c) => jsonArrayResponse(await comments.listComments(c.var.ctx, projectId(c), form(c), inst(c), isExtended(c))))
  .post(`${S}/comments`, async (c) => c.json(await comments.createComment(c.var.ctx, projectId(c), form(c), inst(c), await jsonBody(c))));

// Audits, diffs and versions, of live submissions and of draft (test) ones, as Central routes both.
for (const [base, draft] of [[S, false], [`${F}/draft/submissions/:instanceId`, true]] as const) {
  const V = `${base}/versions/:versionId`;
  const version = (c: C) => ({ ...target(c, draft), versionId: stringParam(c, 'versionId') });
  submissionRestRoutes
    .get(`${base}/audits`, async (c) => {
      const rows = await manage.listSubmissionAudits(c.var.ctx, projectId(c), form(c), inst(c), isExtended(c), draft);
      // Extended: events about an entity show it (lib/entities sits above lib/submissions).
      return jsonArrayResponse(rows, isExtended(c) ? (batch) => withEntityDetails(c.var.ctx, batch) : undefined);
    })
    .get(`${base}/diffs`, async (c) => c.json(await versions.diffVersions(c.var.ctx, projectId(c), form(c), inst(c), draft)))
    .get(`${base}/versions`, async (c) => jsonArrayResponse(await versions.listVersions(c.var.ctx, projectId(c), form(c), inst(c), isExtended(c), draft)))
    .get(`${base}/versions/:file{[^/]+\\.xml}`, async (c) =>
      xmlResponse(await versions.getVersionXml(c.var.ctx, projectId(c), form(c), inst(c), stringParam(c, 'file').replace(/\.xml$/, ''), draft)))
    .get(V, async (c) => c.json(await versions.getVersion(c.var.ctx, projectId(c), form(c), inst(c), stringParam(c, 'versionId'), isExtended(c), draft)))
    .get(`${V}/attachments`, async (c) => c.json(await attachments.listAttachments(c.var.ctx, version(c))))
    .get(`${V}/attachments/:filename`, async (c) =>
      blobResponse(c, c.var.ctx, await attachments.getAttachmentFile(c.var.ctx, version(c), stringParam(c, 'filename')), { imageInline: true }))
    .delete(`${V}/attachments/:filename`, async (c) => {
      await attachments.setAttachment(c.var.ctx, version(c), stringParam(c, 'filename'), null);
      return success(c);
    });
}
