import type { Context } from 'hono';
import { problems } from '../problem';
import type { AppEnv } from './app';
import { countedBody } from './body';

/** More parts than any real submission has (Collect sends one per media file). */
const MAX_PARTS = 1000;
/** What undici puts for bytes that are not UTF-8 in a part's name or text value. */
const REPLACEMENT = '\uFFFD';

/**
 * Reads an OpenRosa submission POST (multipart/form-data): the `xml_submission_file` part and the
 * media parts, each named by its filename (OpenRosa Form Submission API, shared/reference/odk-docs).
 * The body is bounded by MAX_UPLOAD_BYTES (the advertised X-OpenRosa-Accept-Content-Length).
 * @throws Problem 400.39 not multipart, broken or over 1000 parts; 400.7 no xml_submission_file;
 *   400.8 a file name with a path or not valid UTF-8; 400.1 a text xml_submission_file part that
 *   is not valid UTF-8; 413 over MAX_UPLOAD_BYTES (declared, or counted while it streams).
 */
export async function readOpenRosaMultipart(c: Context<AppEnv>): Promise<{
  xml: Uint8Array;
  files: Array<{ name: string; bytes: Uint8Array; contentType: string | null }>;
}> {
  const type = c.req.header('content-type') ?? '';
  if (!/^multipart\/form-data/i.test(type)) throw problems.submission.multipartParsingFailed('Unsupported content type.');
  const max = c.var.ctx.config.MAX_UPLOAD_BYTES;
  // A chunked body declares no length: count while reading (lib/http/body.ts), so the parser never
  // buffers more than the limit (undici's formData() reads the whole body first).
  const { stream: counted, over } = countedBody(c, max, () => problems.submission.tooLarge({ limit: max }));
  let form: FormData;
  try {
    form = await new Response(counted ?? null, { headers: { 'Content-Type': type } }).formData();
  } catch (err) {
    if (over()) throw problems.submission.tooLarge({ limit: max });
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
      // A part without a filename arrives as text, decoded with U+FFFD for invalid UTF-8: refuse it
      // rather than store the replacement (file parts keep their bytes, checked by ingestion).
      if (typeof value === 'string' && value.includes(REPLACEMENT)) throw problems.user.unparseable({ format: 'submission xml', rawLength: value.length });
      xml = typeof value === 'string' ? new TextEncoder().encode(value) : new Uint8Array(await value.arrayBuffer());
      continue;
    }
    if (typeof value === 'string') continue;
    const name = value.name || field;
    // A media part is stored under the name the XML gives it; a path is never a valid one.
    if (/[/\\\0]|^\.\.?$/.test(name) || name.length > 255) {
      throw problems.user.unexpectedValue({ field: 'filename', value: name, reason: 'a media file name may not contain a path.' });
    }
    // undici decodes the Content-Disposition file name as UTF-8 with U+FFFD for invalid bytes.
    if (name.includes(REPLACEMENT)) {
      throw problems.user.unexpectedValue({ field: 'filename', value: name, reason: 'a media file name must be valid UTF-8.' });
    }
    files.push({ name, bytes: new Uint8Array(await value.arrayBuffer()), contentType: value.type || null });
  }
  if (!xml) throw problems.submission.missingMultipartField();
  return { xml, files };
}
