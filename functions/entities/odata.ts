/** Entities' OData: D.svc, D.svc/$metadata, D.svc/Entities. Authz in lib/odata/entities. */
import type { Context } from 'hono';
import { newApp, type AppEnv } from '../../lib/http/app';
import { odataMetadataResponse, odataQuery } from '../../lib/http/odata';
import { projectId, stringParam } from '../../lib/http/params';
import { publicOrigin } from '../../lib/http/responses';
import { entityFeed, entityMetadata, entityServiceDocument } from '../../lib/odata/entities';

type C = Context<AppEnv, string>;
const JSON_TYPE = { 'Content-Type': 'application/json; charset=utf-8; odata.metadata=minimal', 'OData-Version': '4.0' };
const FEED_TYPE = { 'Content-Type': 'application/json; charset=utf-8', 'OData-Version': '4.0' };
const SVC = '/v1/projects/:projectId/datasets/:svc{[^/]+\\.svc}';
const nameOf = (c: C) => stringParam(c, 'svc').replace(/\.svc$/, '');
const serviceUrl = (c: C) => `${publicOrigin(c)}/v1/projects/${projectId(c)}/datasets/${encodeURIComponent(nameOf(c))}.svc`;
const service = async (c: C) => c.json(await entityServiceDocument(c.var.ctx, projectId(c), nameOf(c), serviceUrl(c)), 200, JSON_TYPE);

export const odataRoutes = newApp()
  .get(SVC, service)
  .get(`${SVC}/`, service)
  .get(`${SVC}/:rest{.+}`, async (c) => {
    const resource = stringParam(c, 'rest');
    if (resource === '$metadata') return odataMetadataResponse(() => entityMetadata(c.var.ctx, projectId(c), nameOf(c)));
    const stream = await entityFeed(c.var.ctx, { projectId: projectId(c), name: nameOf(c), resource, query: odataQuery(c), serviceUrl: serviceUrl(c) });
    return new Response(stream, { status: 200, headers: FEED_TYPE });
  });
