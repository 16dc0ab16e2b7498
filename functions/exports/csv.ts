/** CSV exports: GET/POST F/submissions.csv.zip and F/submissions.csv, also draft. */
import type { Context } from 'hono';
import { newApp, type AppEnv } from '../../lib/http/app';
import { exportQuery, passphrases } from '../../lib/http/export-query';
import { projectId, stringParam } from '../../lib/http/params';
import { contentDisposition } from '../../lib/http/responses';
import { exportCsv, exportZip, type ExportFile } from '../../lib/exports';

type C = Context<AppEnv, string>;
const send = (file: ExportFile) =>
  new Response(file.stream, { status: 200, headers: { 'Content-Type': file.contentType, 'Content-Disposition': contentDisposition(file.fileName) } });
const run = async (c: C, draft: boolean, kind: 'zip' | 'csv') => {
  const query = { ...exportQuery(c), passphrases: await passphrases(c) };
  const fn = kind === 'zip' ? exportZip : exportCsv;
  return send(await fn(c.var.ctx, projectId(c), stringParam(c, 'xmlFormId'), draft, query));
};

export const csvRoutes = newApp();
for (const [prefix, draft] of [['/v1/projects/:projectId/forms/:xmlFormId/submissions', false], ['/v1/projects/:projectId/forms/:xmlFormId/draft/submissions', true]] as const) {
  csvRoutes
    .get(`${prefix}.csv.zip`, (c) => run(c, draft, 'zip'))
    .post(`${prefix}.csv.zip`, (c) => run(c, draft, 'zip'))
    .get(`${prefix}.csv`, (c) => run(c, draft, 'csv'))
    .post(`${prefix}.csv`, (c) => run(c, draft, 'csv'));
}
