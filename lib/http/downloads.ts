/** Form attachment downloads: an uploaded file, or an entity list streamed with its OpenRosa hash as ETag. */
import type { Context } from 'hono';
import type { AttachmentDownload } from '../entities/entity-lists';
import type { AppEnv } from './app';
import { blobResponse, contentDisposition } from './responses';

/**
 * The response for a form attachment: a file through `blobResponse`; an entity list as `text/csv`
 * with `ETag: "<hash>"`, or 304 without a body when `If-None-Match` names that ETag (weak too, as
 * nginx may weaken it), so a device re-downloads only a changed list (Central's withEtag).
 */
export async function attachmentResponse(c: Context<AppEnv>, download: AttachmentDownload): Promise<Response> {
  if (download.kind === 'file') return blobResponse(c, c.var.ctx, download.file);
  const etag = `"${download.etag}"`;
  const match = c.req.header('if-none-match');
  if (match === etag || match === `W/${etag}`) return new Response(null, { status: 304, headers: { ETag: etag } });
  return new Response(download.body(), {
    headers: { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': contentDisposition(download.filename), ETag: etag },
  });
}
