/** OpenRosa submission: HEAD/POST P/submission, F/draft/submission (signed in) and the Draft Token form /v1/test/{token}/…/draft/submission. */
import type { Context } from 'hono';
import { newApp, type AppEnv } from '../../lib/http/app';
import { projectId, stringParam } from '../../lib/http/params';
import { openRosaXml } from '../../lib/http/openrosa';
import { actionNotes } from '../../lib/http/responses';
import { readOpenRosaMultipart } from '../../lib/http/multipart';
import { submissionClient } from '../../lib/submissions/client';
import { ingestOpenRosaSubmission } from '../../lib/submissions/ingest';
import { problems } from '../../lib/problem';
import { renderOpenRosaMessage } from '../../lib/xforms/openrosa-xml';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const submit = async (c: Context<AppEnv, any>, draft: { token: string | null; xmlFormId: string } | null) => {
  // X-Action-Notes becomes the notes of the audit entries (as Central); a bad one is refused first.
  const notes = actionNotes(c);
  // Media parts stream into the blob store as they arrive; what the submission does not keep (or
  // all of it, when it is refused) is deleted once it is stored or refused.
  const { xml, files, discard } = await readOpenRosaMultipart(c);
  try {
    await ingestOpenRosaSubmission(c.var.ctx, {
      projectId: projectId(c),
      xml,
      files,
      ...submissionClient({ deviceId: c.req.query('deviceID'), userAgent: c.req.header('user-agent'), odkClient: c.req.header('odk-client') }),
      notes,
      draft,
    });
  } finally {
    await discard();
  }
  return openRosaXml(renderOpenRosaMessage('full submission upload was successful!', ''), 201);
};
// The preflight Collect sends before uploading: 204 with the OpenRosa headers (spec, rule 3). Hono
// routes HEAD through GET handlers, so GET itself (not an OpenRosa call) stays a 404.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const preflight = (c: Context<AppEnv, any>) => {
  if (c.req.method !== 'HEAD') throw problems.user.notFound();
  return new Response(null, { status: 204 });
};

export const submissionOpenRosaRoutes = newApp()
  .get('/v1/projects/:projectId/submission', preflight)
  .post('/v1/projects/:projectId/submission', (c) => submit(c, null))
  // A signed-in tester's submission to the form's draft (Central: F/draft/submission).
  .get('/v1/projects/:projectId/forms/:xmlFormId/draft/submission', preflight)
  .post('/v1/projects/:projectId/forms/:xmlFormId/draft/submission', (c) => submit(c, { token: null, xmlFormId: stringParam(c, 'xmlFormId') }))
  .get('/v1/test/:token/projects/:projectId/forms/:xmlFormId/draft/submission', preflight)
  .post('/v1/test/:token/projects/:projectId/forms/:xmlFormId/draft/submission', (c) =>
    submit(c, { token: stringParam(c, 'token'), xmlFormId: stringParam(c, 'xmlFormId') }));
