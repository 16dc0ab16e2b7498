import type { Context } from 'hono';
import { problems } from '../problem';
import type { AppEnv } from './app';

/** More parts than any real submission has (Collect sends one per media file). */
const MAX_PARTS = 1000;

/**
 * Reads an OpenRosa submission POST (multipart/form-data): the `xml_submission_file` part and the
 * media parts, each named by its filename (OpenRosa Form Submission API, shared/reference/odk-docs).
 * The body is bounded by MAX_UPLOAD_BYTES (the advertised X-OpenRosa-Accept-Content-Length).
 * @throws Problem 400.39 not multipart, broken or over 1000 parts; 400.7 no xml_submission_file;
 *   400.8 a file name with a path; 413 over MAX_UPLOAD_BYTES.
 */
export async function readOpenRosaMultipart(c: Context<AppEnv>): Promise<{
  xml: Uint8Array;
  files: Array<{ name: string; bytes: Uint8Array; contentType: string | null }>;
}> {
  const type = c.req.header('content-type') ?? '';
  if (!/^multipart\/form-data/i.test(type)) throw problems.submission.multipartParsingFailed('Unsupported content type.');
  const max = c.var.ctx.config.MAX_UPLOAD_BYTES;
  if (Number(c.req.header('content-length') ?? '0') > max) throw problems.submission.tooLarge({ limit: max });
  // A chunked body declares no length: count while reading, so the parser never buffers more than
  // the limit (undici's formData() reads the whole body first).
  let seen = 0;
  let over = false;
  const counted = c.req.raw.body?.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, out) {
      seen += chunk.byteLength;
      if (seen > max) {
        over = true;
        out.error(new Error('body over the limit'));
        return;
      }
      out.enqueue(chunk);
    },
  }));
  let form: FormData;
  try {
    form = await new Response(counted ?? null, { headers: { 'Content-Type': type } }).formData();
  } catch (err) {
    if (over) throw problems.submission.tooLarge({ limit: max });
    throw problems.submission.multipartParsingFailed(err instanceof Error ? err.message : String(err));
  }
  let xml: Uint8Array | null = null;
  const files: Array<{ name: string; bytes: Uint8Array; contentType: string | null }> = [];
  let parts = 0;
  let size = 0;
  for (const [field, value] of form.entries()) {
    parts += 1;
    if (parts > MAX_PARTS) throw problems.submission.multipartParsingFailed(`more than ${MAX_PARTS} parts`);
    if (typeof value !== 'string') {
      size += value.size;
      if (size > max) throw problems.submission.tooLarge({ limit: max });
    }
    if (field === 'xml_submission_file') {
      xml = typeof value === 'string' ? new TextEncoder().encode(value) : new Uint8Array(await value.arrayBuffer());
      continue;
    }
    if (typeof value === 'string') continue;
    const name = value.name || field;
    // A media part is stored under the name the XML gives it; a path is never a valid one.
    if (/[/\\\0]|^\.\.?$/.test(name) || name.length > 255) {
      throw problems.user.unexpectedValue({ field: 'filename', value: name, reason: 'a media file name may not contain a path.' });
    }
    files.push({ name, bytes: new Uint8Array(await value.arrayBuffer()), contentType: value.type || null });
  }
  if (!xml) throw problems.submission.missingMultipartField();
  return { xml, files };
}
