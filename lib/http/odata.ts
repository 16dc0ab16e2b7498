import type { Context } from 'hono';
import { Problem } from '../problem';
import type { AppEnv } from './app';
import { publicOrigin } from './responses';

/** The query string's parameters in order, decoded (OData options keep their order in nextLink). */
export const odataQuery = (c: Context<AppEnv>): Array<[string, string]> => [...new URL(c.req.url).searchParams.entries()];

/** The absolute URL of a form's OData service (`…/forms/<id>.svc`, or `…/forms/<id>/draft.svc`). */
export function serviceUrl(c: Context<AppEnv>, xmlFormId: string, draft: boolean): string {
  const projectId = c.req.param('projectId') ?? '';
  return `${publicOrigin(c)}/v1/projects/${projectId}/forms/${encodeURIComponent(xmlFormId)}${draft ? '/draft' : ''}.svc`;
}

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * `$metadata` as `application/xml`; its errors are XML too, as Central writes them
 * (central-outputs/_errors/404.1-odata-metadata-not-found.json): `<error code>` with message and details.
 */
export async function odataMetadataResponse(load: () => Promise<string>): Promise<Response> {
  try {
    return new Response(await load(), { status: 200, headers: { 'Content-Type': 'application/xml; charset=utf-8', 'OData-Version': '4.0' } });
  } catch (err) {
    if (!(err instanceof Problem)) throw err;
    const body = `<?xml version="1.0" encoding="UTF-8"?>\n<error code="${err.code}">\n  <message>${xmlEscape(err.message)}</message>\n  <details>${err.details == null ? '' : xmlEscape(JSON.stringify(err.details))}</details>\n</error>`;
    return new Response(body, { status: err.status, headers: { 'Content-Type': 'text/xml; charset=utf-8', 'OData-Version': '4.0' } });
  }
}
