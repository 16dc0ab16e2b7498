import type { Context } from 'hono';
import { problems } from '../problem';
import type { AppEnv } from './app';

/**
 * Reads an OpenRosa submission POST (multipart/form-data): the `xml_submission_file` part and the
 * media parts, each named by its filename (OpenRosa Form Submission API, shared/reference/odk-docs).
 * The body is bounded by MAX_UPLOAD_BYTES (the advertised X-OpenRosa-Accept-Content-Length).
 * @throws Problem 400.39 not multipart or broken; 400.7 no xml_submission_file; 400.36 too large.
 */
export async function readOpenRosaMultipart(c: Context<AppEnv>): Promise<{
  xml: Uint8Array;
  files: Array<{ name: string; bytes: Uint8Array; contentType: string | null }>;
}> {
  const type = c.req.header('content-type') ?? '';
  if (!/^multipart\/form-data/i.test(type)) throw problems.submission.multipartParsingFailed('Unsupported content type.');
  const max = c.var.ctx.config.MAX_UPLOAD_BYTES;
  if (Number(c.req.header('content-length') ?? '0') > max) throw problems.user.requestTooLarge();
  let form: FormData;
  try {
    form = await c.req.raw.formData();
  } catch (err) {
    throw problems.submission.multipartParsingFailed(err instanceof Error ? err.message : String(err));
  }
  let xml: Uint8Array | null = null;
  const files: Array<{ name: string; bytes: Uint8Array; contentType: string | null }> = [];
  for (const [field, value] of form.entries()) {
    if (field === 'xml_submission_file') {
      xml = typeof value === 'string' ? new TextEncoder().encode(value) : new Uint8Array(await value.arrayBuffer());
      continue;
    }
    if (typeof value === 'string') continue;
    files.push({ name: value.name || field, bytes: new Uint8Array(await value.arrayBuffer()), contentType: value.type || null });
  }
  if (!xml) throw problems.submission.missingMultipartField();
  return { xml, files };
}
