import type { Context } from 'hono';
import type { Ctx } from '../context';
import { Problem, problems } from '../problem';
import type { AppEnv } from './app';
import { readUploadBytes } from './body';

/** `attachment; filename="…"; filename*=UTF-8''…` as Central writes it (or `inline; …`). */
export function contentDisposition(filename: string, disposition: 'attachment' | 'inline' = 'attachment'): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `${disposition}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/** Image types a submission attachment is shown `inline` with (Central's lib/util/blob.js); others download. */
const INLINE_IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif']);

/** An XML document (form definitions): application/xml as Central sends F.xml. */
export const xmlResponse = (body: string) =>
  new Response(body, { status: 200, headers: { 'Content-Type': 'application/xml; charset=utf-8' } });

/**
 * Streams a stored blob as a download with ETag (the MD5, quoted) and 304 on a matching
 * If-None-Match. `imageInline` (submission attachments, as Central) sends JPEG, PNG and GIF
 * `inline` so the browser shows them. Without a `name` the disposition is a bare `attachment`
 * (Central's config images); `cacheControl` adds that header. Over RESPONSE_MAX_BYTES (a buffered
 * Lambda) it answers 307 to a presigned store URL carrying the same type and disposition.
 * @throws Problem 404.1 when the store has lost the object.
 */
export async function blobResponse(
  c: Context<AppEnv>,
  ctx: Ctx,
  file: { name?: string; sha: string; md5: string; contentType: string },
  opts: { imageInline?: boolean; cacheControl?: string } = {},
): Promise<Response> {
  const etag = `"${file.md5}"`;
  const cache: Record<string, string> = opts.cacheControl ? { 'Cache-Control': opts.cacheControl, Vary: 'Accept-Encoding' } : {};
  const match = c.req.header('if-none-match');
  if (match != null && match.split(',').map((t) => t.trim().replace(/^W\//, '')).includes(etag)) {
    return new Response(null, { status: 304, headers: { ETag: etag, ...cache } });
  }
  const disposition = opts.imageInline && INLINE_IMAGE_TYPES.has(file.contentType) ? 'inline' : 'attachment';
  const contentDispositionValue = file.name == null ? disposition : contentDisposition(file.name, disposition);
  // Over the platform's response cap (Lambda behind API Gateway): 307 to a short-lived S3 URL.
  const cap = ctx.config.RESPONSE_MAX_BYTES;
  if (cap != null && ctx.blobs.presignGet && ctx.blobs.size) {
    const size = await ctx.blobs.size(file.sha);
    if (size == null) throw problems.user.notFound();
    if (size > cap) {
      const url = await ctx.blobs.presignGet(file.sha, {
        expiresInSeconds: ctx.config.PRESIGN_TTL_SECONDS, contentType: file.contentType, contentDisposition: contentDispositionValue,
      });
      return new Response(null, { status: 307, headers: { Location: url, 'Cache-Control': 'private, no-store', ETag: etag } });
    }
  }
  const stream = await ctx.blobs.get(file.sha);
  if (!stream) throw problems.user.notFound();
  return new Response(stream, {
    status: 200,
    headers: {
      // As Central (Express adds the charset of text types): text/csv → text/csv; charset=utf-8.
      'Content-Type': /^text\//i.test(file.contentType) && !/;\s*charset=/i.test(file.contentType) ? `${file.contentType}; charset=utf-8` : file.contentType,
      'Content-Disposition': contentDispositionValue,
      ETag: etag,
      ...cache,
    },
  });
}

/** The origin for URLs in OpenRosa documents: PUBLIC_URL when configured, else the request's. */
export const publicOrigin = (c: Context<AppEnv>) => c.var.ctx.config.PUBLIC_URL ?? new URL(c.req.url).origin;

/**
 * X-Action-Notes, percent-decoded. @throws Problem 400.6 when it does not decode.
 */
export function actionNotes(c: Context<AppEnv>): string | null {
  const raw = c.req.header('x-action-notes');
  if (raw == null) return null;
  try {
    return decodeURIComponent(raw);
  } catch {
    // Central's answer names the header in lower case and leaves the value out.
    throw new Problem(400.6, 'An expected header field (x-action-notes) did not match the expected format.', { field: 'x-action-notes' });
  }
}

/**
 * The request body as bytes (form definitions, attachments, submission XML), at most
 * MAX_UPLOAD_BYTES: lib/http/body.ts readUploadBytes, the one guard every body reader goes through.
 * @throws Problem 400.36 (Central's requestTooLarge).
 */
export const bodyBytes = (c: Context<AppEnv>): Promise<Uint8Array> => readUploadBytes(c);
