import type { Context } from 'hono';
import { concatBytes } from '../bytes';
import { discardStaged, stagePart, type StagedBlob } from '../blobs/staged';
import { problems } from '../problem';
import type { AppEnv } from './app';
import { countedBodyReader, streamChunkReader } from './body';

/** More parts than any real submission has (Collect sends one per media file). */
const MAX_PARTS = 1000;
/** A part's header block past this many bytes is not a form part (browsers send a few hundred). */
const MAX_HEADER_BYTES = 16 * 1024;
/**
 * Bytes of a request's media parts kept in memory (small photos, audio); a part that would pass it
 * streams into the blob store instead (lib/blobs/staged.ts), so memory stays bounded by this plus
 * the store's part buffer whatever the body's size.
 */
const MEMORY_BUDGET = 4 * 1024 * 1024;

/** The head of one multipart/form-data part: its Content-Disposition name and filename, and type. */
export interface PartHead {
  name: string;
  /** null for a text field (no filename parameter). */
  filename: string | null;
  contentType: string | null;
}

/**
 * Receives one part's body: `write` per chunk (awaited: backpressure), then `end`. A chunk is valid
 * only until its `write` settles: it views the reader's buffer, which the next read refills (one
 * reused buffer, so a 100 MB part is not 100 MB of garbage). A sink that keeps bytes copies them.
 */
export interface PartSink {
  write(chunk: Uint8Array): void | Promise<void>;
  end(): void | Promise<void>;
}

/** A malformed body; the caller maps it to its Problem (400.39 for OpenRosa). */
export class MultipartError extends Error {}

const CRLF = new Uint8Array([13, 10]);
const latin1 = new TextDecoder('latin1');
const utf8 = new TextDecoder('utf-8');

/** The boundary parameter of a multipart Content-Type, or null. Pure. */
export function multipartBoundary(contentType: string): string | null {
  const m = /;\s*boundary\s*=\s*(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(contentType);
  return m ? (m[1] ?? m[2]!) : null;
}

/**
 * Whether `needle` starts inside `tail` and runs on into `next` (tail shorter than the needle,
 * next at least as long as needle - 1), without joining the two.
 */
function startsAcross(tail: Uint8Array, next: Uint8Array, needle: Uint8Array): boolean {
  for (let i = tail.indexOf(needle[0]!); i !== -1; i = tail.indexOf(needle[0]!, i + 1)) {
    let j = 1;
    while (j < needle.byteLength && (i + j < tail.byteLength ? tail[i + j] : next[i + j - tail.byteLength]) === needle[j]) j += 1;
    if (j === needle.byteLength) return true;
  }
  return false;
}

/** Index of `needle` in `hay` at or after `from`, or -1 (a first-byte scan: native indexOf). */
function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0]!;
  const last = hay.byteLength - needle.byteLength;
  for (let i = hay.indexOf(first, from); i !== -1 && i <= last; i = hay.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.byteLength && hay[i + j] === needle[j]) j += 1;
    if (j === needle.byteLength) return i;
  }
  return -1;
}

/** A Content-Disposition parameter (quoted or token; RFC 5987 `name*=` wins), or null. */
function dispositionParam(value: string, name: string): string | null {
  const star = new RegExp(`;\\s*${name}\\*\\s*=\\s*([^;]*)`, 'i').exec(value);
  if (star) {
    const m = /^([\w!#$%&+^`{}~-]*)'[^']*'(.*)$/.exec(star[1]!.trim());
    if (m) {
      try {
        return decodeURIComponent(m[2]!);
      } catch {
        // fall back to the plain parameter
      }
    }
  }
  const re = new RegExp(`;\\s*${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;]*))`, 'i');
  const m = re.exec(value);
  if (!m) return null;
  return m[1] != null ? m[1].replace(/\\(.)/g, '$1') : m[2]!.trim();
}

/** Parses a part's header block (UTF-8, as browsers and Collect send file names). */
function parseHead(block: Uint8Array): PartHead {
  const headers = new Map<string, string>();
  for (const line of utf8.decode(block).split('\r\n')) {
    if (line === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new MultipartError('Malformed part header');
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const disposition = headers.get('content-disposition');
  if (!disposition || !/^form-data\s*(;|$)/i.test(disposition)) throw new MultipartError('a part without Content-Disposition: form-data');
  const name = dispositionParam(disposition, 'name');
  if (name == null) throw new MultipartError('a part without a name');
  return { name, filename: dispositionParam(disposition, 'filename'), contentType: headers.get('content-type') || null };
}

/**
 * A pull source of body chunks: a Web stream's reader has this shape, and so do `nodeBodyReader`
 * and `streamChunkReader` (lib/http/body.ts). A chunk is valid until the next `read()` call (a
 * reader may refill one buffer). `cancel` is called once the parser is done with the body.
 */
export interface ChunkReader {
  read(): Promise<{ done: true; value?: Uint8Array } | { done: false; value: Uint8Array }>;
  cancel(): Promise<void>;
}

/**
 * Parses a multipart/form-data body as it streams (RFC 7578), handing each part's body to the sink
 * `onPart` returns, chunk by chunk: memory is the reader's buffer plus a boundary's length, whatever
 * the parts' sizes. Works on any Web Streams runtime (Node, Workers); a stream is read through
 * streamChunkReader (BYOB into one buffer where it is a byte stream).
 * @param onPart called with each part's head; its sink receives the body, then `end`.
 * @throws MultipartError for a body that does not parse (no opening boundary, bad part headers, an
 *   end before the closing boundary); errors of the stream or of a sink as they are.
 */
export async function parseMultipart(
  body: ReadableStream<Uint8Array> | ChunkReader, boundary: string, onPart: (head: PartHead) => PartSink | Promise<PartSink>,
): Promise<void> {
  const enc = new TextEncoder();
  const dash = enc.encode(`--${boundary}`);
  // Inside a body the delimiter is CRLF--boundary; the first one may start the stream directly.
  const delimiter = enc.encode(`\r\n--${boundary}`);
  const reader: ChunkReader = body instanceof ReadableStream ? streamChunkReader(body) : body;
  // `buf` may view the reader's buffer, which the next read refills: whatever of it is still
  // needed is copied out before each read.
  let buf: Uint8Array = new Uint8Array(0);
  let ended = false;
  /** A part body's held-back tail (shorter than a delimiter) across a read: one buffer per body. */
  const carry = new Uint8Array(delimiter.byteLength);
  /** Reads one more chunk onto `buf`; false at the end of the stream. */
  const more = async (): Promise<boolean> => {
    if (ended) return false;
    const kept = buf.byteLength === 0 ? null : buf.slice();
    const { done, value } = await reader.read();
    if (done) {
      ended = true;
      buf = kept ?? new Uint8Array(0);
      return false;
    }
    buf = kept ? concatBytes([kept, value]) : value;
    return true;
  };
  /**
   * `more` for a part's body, without joining the new chunk to the held-back tail (kept in
   * `carry`): when no delimiter starts in the tail, the tail is body, so it goes to the sink and
   * the chunk becomes `buf` as it is. A 100 MB part then allocates nothing per chunk (a reused
   * reader buffer, a reused carry). Only a delimiter starting in the tail, or a chunk shorter than
   * the delimiter, joins the two.
   */
  const moreBody = async (sink: PartSink): Promise<boolean> => {
    if (ended) return false;
    carry.set(buf);
    const tail = carry.subarray(0, buf.byteLength);
    const { done, value } = await reader.read();
    if (done) {
      ended = true;
      buf = tail;
      return false;
    }
    if (tail.byteLength === 0) {
      buf = value;
      return true;
    }
    if (value.byteLength >= delimiter.byteLength - 1 && !startsAcross(tail, value, delimiter)) {
      await sink.write(tail);
      buf = value;
      return true;
    }
    buf = concatBytes([tail, value]);
    return true;
  };
  try {
    // Preamble: skip to the first boundary (at the very start, or after a CRLF).
    for (let atStart = true; ;) {
      if (atStart && buf.byteLength >= dash.byteLength) {
        if (indexOf(buf.subarray(0, dash.byteLength), dash, 0) === 0) {
          buf = buf.subarray(dash.byteLength);
          break;
        }
        atStart = false;
      }
      const at = indexOf(buf, delimiter, 0);
      if (at >= 0) {
        buf = buf.subarray(at + delimiter.byteLength);
        break;
      }
      if (!atStart && buf.byteLength >= delimiter.byteLength) buf = buf.subarray(buf.byteLength - delimiter.byteLength + 1);
      if (!(await more())) throw new MultipartError('Unexpected end of form');
    }
    for (;;) {
      // After a boundary: `--` ends the body; else optional padding and CRLF, then a part's head.
      while (buf.byteLength < 2) if (!(await more())) throw new MultipartError('Unexpected end of form');
      if (buf[0] === 45 && buf[1] === 45) return;
      let eol = indexOf(buf, CRLF, 0);
      while (eol < 0) {
        if (buf.byteLength > 256) throw new MultipartError('malformed boundary line');
        if (!(await more())) throw new MultipartError('Unexpected end of form');
        eol = indexOf(buf, CRLF, 0);
      }
      if (!/^[ \t]*$/.test(latin1.decode(buf.subarray(0, eol)))) throw new MultipartError('malformed boundary line');
      buf = buf.subarray(eol + 2);
      let headEnd = buf[0] === 13 && buf[1] === 10 ? -2 : indexOf(buf, new Uint8Array([13, 10, 13, 10]), 0);
      while (headEnd === -1) {
        if (buf.byteLength > MAX_HEADER_BYTES) throw new MultipartError('part headers too large');
        if (!(await more())) throw new MultipartError('Unexpected end of form');
        headEnd = buf[0] === 13 && buf[1] === 10 ? -2 : indexOf(buf, new Uint8Array([13, 10, 13, 10]), 0);
      }
      // A delimiter that takes the head's closing CRLF as its own (`…\r\n\r\n--boundary`: no
      // body, not even the CRLF before the delimiter) leaves the head unfinished, as busboy reads it.
      const bodyAt = headEnd === -2 ? 2 : headEnd + 4;
      while (buf.byteLength < bodyAt - 2 + delimiter.byteLength && (await more()));
      if (indexOf(buf.subarray(bodyAt - 2, bodyAt - 2 + delimiter.byteLength), delimiter, 0) === 0) throw new MultipartError('Malformed part header');
      const head = parseHead(headEnd === -2 ? new Uint8Array(0) : buf.subarray(0, headEnd));
      buf = buf.subarray(bodyAt);
      const sink = await onPart(head);
      // The body: everything up to the next CRLF--boundary. Bytes that could begin a delimiter
      // split across chunks are held back until the next chunk decides.
      for (;;) {
        const at = indexOf(buf, delimiter, 0);
        if (at >= 0) {
          if (at > 0) await sink.write(buf.subarray(0, at));
          buf = buf.subarray(at + delimiter.byteLength);
          await sink.end();
          break;
        }
        const keep = Math.min(buf.byteLength, delimiter.byteLength - 1);
        if (buf.byteLength > keep) {
          await sink.write(buf.subarray(0, buf.byteLength - keep));
          buf = buf.subarray(buf.byteLength - keep);
        }
        if (!(await moreBody(sink))) throw new MultipartError('Unexpected end of form');
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** A media part of an OpenRosa submission, staged in memory or in the blob store. */
export interface OpenRosaFile {
  name: string;
  contentType: string | null;
  blob: StagedBlob;
}

/**
 * Reads an OpenRosa submission POST (multipart/form-data) as it streams: the `xml_submission_file`
 * part buffered (bounded by MAX_UPLOAD_BYTES), each media part (named by its filename) hashed and
 * staged as it arrives (lib/blobs/staged.ts: in memory up to a 4 MiB per-request budget, beyond that
 * streamed to a temporary key of the blob store), so a 100 MB submission costs the reader's buffer
 * and the store's part buffer, not its size. OpenRosa Form Submission API (shared/reference/odk-docs).
 * @returns the XML bytes, the staged media parts, and `discard()`, which deletes staged temporary
 *   objects the submission did not keep: call it once the submission is stored or refused.
 * @throws Problem 400.39 not multipart, broken or over 1000 parts; 400.7 no xml_submission_file;
 *   400.8 a file name with a path or not valid UTF-8; 400.1 a text xml_submission_file part that
 *   is not valid UTF-8; 413 over MAX_UPLOAD_BYTES (declared, or counted while it streams). Nothing
 *   staged is left behind when it throws.
 */
export async function readOpenRosaMultipart(c: Context<AppEnv>): Promise<{
  xml: Uint8Array;
  files: OpenRosaFile[];
  discard: () => Promise<void>;
}> {
  const type = c.req.header('content-type') ?? '';
  // As Central (multer): a body that is not multipart at all has no xml_submission_file part;
  // another multipart type is one the parser does not support.
  if (!/^multipart\//i.test(type)) throw problems.submission.missingMultipartField();
  if (!/^multipart\/form-data/i.test(type)) throw problems.submission.multipartParsingFailed('Unsupported content type.');
  const boundary = multipartBoundary(type);
  if (!boundary) throw problems.submission.multipartParsingFailed('Multipart: Boundary not found');
  const ctx = c.var.ctx;
  const max = ctx.config.MAX_UPLOAD_BYTES;
  const tooLarge = () => problems.submission.tooLarge({ limit: max });
  // A chunked body declares no length: count while reading.
  const { reader, over } = countedBodyReader(c, max, tooLarge, () => new MultipartError('Unexpected end of form'));
  // Set by the xml_submission_file part's sink (a later one replaces an earlier one).
  const found: { xml: Uint8Array | null; text: boolean } = { xml: null, text: false };
  const files: OpenRosaFile[] = [];
  const staging: Array<{ abort(): Promise<void> }> = [];
  const budget = { bytes: MEMORY_BUDGET };
  let parts = 0;
  let size = 0;
  const ignore: PartSink = { write() {}, end() {} };
  try {
    await parseMultipart(reader, boundary, (head) => {
      parts += 1;
      if (parts > MAX_PARTS) throw problems.submission.multipartParsingFailed(`more than ${MAX_PARTS} parts`);
      if (head.name === 'xml_submission_file') {
        const chunks: Uint8Array[] = [];
        return {
          write(chunk) {
            chunks.push(chunk.slice()); // the chunk's buffer is refilled after write
            if (head.filename != null) {
              size += chunk.byteLength;
              if (size > max) throw tooLarge();
            }
          },
          end() {
            found.xml = concatBytes(chunks);
            found.text = head.filename == null;
          },
        };
      }
      if (head.filename == null) return ignore; // other text fields: not part of a submission
      // Stored under the part's field name, as Central (multer's fieldname), not its filename.
      const name = head.name;
      // A media part is stored under the name the XML gives it; a path is never a valid one.
      if (/[/\\\0]|^\.\.?$/.test(name) || name.length > 255) {
        throw problems.user.unexpectedValue({ field: 'filename', value: name, reason: 'a media file name may not contain a path.' });
      }
      // File names are decoded as UTF-8 with U+FFFD for invalid bytes (as undici did).
      if (name.includes('\uFFFD')) {
        throw problems.user.unexpectedValue({ field: 'filename', value: name, reason: 'a media file name must be valid UTF-8.' });
      }
      const stage = stagePart(ctx, head.contentType, budget);
      staging.push(stage);
      return {
        async write(chunk) {
          size += chunk.byteLength;
          if (size > max) throw tooLarge();
          await stage.write(chunk);
        },
        async end() {
          const blob = await stage.end();
          staging.splice(staging.indexOf(stage), 1);
          files.push({ name, contentType: head.contentType, blob });
        },
      };
    });
  } catch (err) {
    for (const s of staging) await s.abort();
    await discardStaged(ctx, files.map((f) => f.blob));
    if (over()) throw tooLarge();
    if (err instanceof MultipartError) throw problems.submission.multipartParsingFailed(err.message);
    throw err;
  }
  const discard = () => discardStaged(ctx, files.map((f) => f.blob));
  const xml = found.xml;
  if (!xml) {
    await discard();
    throw problems.submission.missingMultipartField();
  }
  if (found.text) {
    // A part without a filename is text: refuse invalid UTF-8 rather than store U+FFFD in its place.
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(xml);
    } catch {
      await discard();
      throw problems.user.unparseable({ format: 'submission xml', rawLength: xml.byteLength });
    }
  }
  return { xml, files, discard };
}
