/** OData feeds: F.svc, F.svc/$metadata, F.svc/<table or row path>, and the draft's F/draft.svc. */
import type { Context } from 'hono';
import { newApp, type AppEnv } from '../../lib/http/app';
import { odataMetadataResponse, odataQuery, serviceUrl } from '../../lib/http/odata';
import { projectId, stringParam } from '../../lib/http/params';
import { publicOrigin } from '../../lib/http/responses';
import { odataFeed, odataMetadata, odataServiceDocument } from '../../lib/odata';

type C = Context<AppEnv, string>;
const JSON_TYPE = { 'Content-Type': 'application/json; charset=utf-8; odata.metadata=minimal', 'OData-Version': '4.0' };
const FEED_TYPE = { 'Content-Type': 'application/json; charset=utf-8', 'OData-Version': '4.0' };
const formOf = (c: C, draft: boolean) => (draft ? stringParam(c, 'xmlFormId') : stringParam(c, 'svc').replace(/\.svc$/, ''));

const service = async (c: C, draft: boolean) =>
  c.json(await odataServiceDocument(c.var.ctx, projectId(c), formOf(c, draft), draft, serviceUrl(c, formOf(c, draft), draft)), 200, JSON_TYPE);
const rest = async (c: C, draft: boolean) => {
  const resource = stringParam(c, 'rest');
  if (resource === '$metadata') return odataMetadataResponse(() => odataMetadata(c.var.ctx, projectId(c), formOf(c, draft), draft));
  const feed = await odataFeed(c.var.ctx, {
    projectId: projectId(c), xmlFormId: formOf(c, draft), draft, resource, query: odataQuery(c), serviceUrl: serviceUrl(c, formOf(c, draft), draft),
    pageUrl: `${publicOrigin(c)}${new URL(c.req.url).pathname}`, ifNoneMatch: c.req.header('If-None-Match') ?? null,
  });
  const etag: Record<string, string> = feed.etag == null ? {} : { ETag: feed.etag };
  // If-None-Match named the ETag: 304 without a body (Central's withEtag).
  if (feed.body == null) return new Response(null, { status: 304, headers: etag });
  return new Response(feed.body, { status: 200, headers: { ...FEED_TYPE, ...etag } });
};

export const odataRoutes = newApp();
for (const [prefix, draft] of [['/v1/projects/:projectId/forms/:svc{[^/]+\\.svc}', false], ['/v1/projects/:projectId/forms/:xmlFormId/draft.svc', true]] as const) {
  odataRoutes
    .get(prefix, (c) => service(c, draft))
    .get(`${prefix}/`, (c) => service(c, draft))
    .get(`${prefix}/:rest{.+}`, (c) => rest(c, draft));
}
