import type { Context } from 'hono';
import { concatBytes } from '../bytes';
import { Problem, problems } from '../problem';
import type { AppEnv } from './app';
import type { ChunkReader } from './multipart';

/**
 * Reads the whole request body, counting bytes while it streams, so a chunked body (no
 * Content-Length) is refused the moment it passes `limit` and never costs more memory than that.
 * @param limit bytes. @returns the bytes (empty for no body).
 * @throws Problem 400.36 when the declared or streamed length passes `limit`.
 */
export async function readBodyBytes(c: Context<AppEnv>, limit: number): Promise<Uint8Array> {
  if (Number(c.req.header('content-length') ?? '0') > limit) throw problems.user.requestTooLarge();
  // The local server's IncomingMessage is read directly: asking node-server for `c.req.raw.body`
  // builds a full Web Request and stream first (about a third of a small PATCH's CPU).
  const incoming = untouchedIncoming(c);
  const body = incoming ? null : c.req.raw.body;
  if (!incoming && body == null) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let seen = 0;
  const reader: ChunkReader = incoming ? nodeBodyReader(incoming, () => new Error('The request body ended early.')) : body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    seen += value.byteLength;
    if (seen > limit) {
      await reader.cancel().catch(() => undefined);
      throw problems.user.requestTooLarge();
    }
    chunks.push(value);
  }
  return concatBytes(chunks);
}

/**
 * An upload's bytes (form definitions, XLSForms, form and submission attachments, REST submission
 * XML, images): readBodyBytes bounded by MAX_UPLOAD_BYTES, so a chunked body costs at most that.
 * @returns the bytes (empty for no body). @throws Problem 400.36 over MAX_UPLOAD_BYTES (declared or counted).
 */
export function readUploadBytes(c: Context<AppEnv>): Promise<Uint8Array> {
  return readBodyBytes(c, c.var.ctx.config.MAX_UPLOAD_BYTES);
}

/**
 * The request body as a stream that counts while it is read, for readers that parse as they go
 * (multipart): past `limit` bytes the stream errors, so its reader stops and whatever it buffered
 * is dropped. A declared Content-Length over `limit` is refused before any byte is read.
 * @param limit bytes.
 * @returns `stream` (null for no body) and `over()`, true once the limit was passed (to tell that
 *   error from the reader's own).
 * @throws `tooLarge()` (default Problem 400.36) when the declared length passes `limit`.
 */
export function countedBody(
  c: Context<AppEnv>, limit: number, tooLarge: () => Error = () => problems.user.requestTooLarge(),
): { stream: ReadableStream<Uint8Array> | null; over: () => boolean } {
  if (Number(c.req.header('content-length') ?? '0') > limit) throw tooLarge();
  let seen = 0;
  let over = false;
  const body = c.req.raw.body;
  const stream = body?.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, out) {
      seen += chunk.byteLength;
      if (seen > limit) {
        over = true;
        out.error(tooLarge());
        return;
      }
      out.enqueue(chunk);
    },
  })) ?? null;
  return { stream, over: () => over };
}

/**
 * The request body as text, read once with readBodyBytes and kept in Hono's body cache (so a later
 * `c.req.text()` or `c.req.json()` gets the same text). Invalid UTF-8 is refused rather than
 * silently replaced with U+FFFD.
 * @param format what the body should be, for the 400.1 message (`json`, `form`).
 * @throws Problem 400.36 over `limit`; 400.1 `{ format, rawLength }` for invalid UTF-8.
 */
export async function readBodyText(c: Context<AppEnv>, limit: number, format: string): Promise<string> {
  // Hono keeps each body read as a promise under its kind (typed loosely as Body's methods).
  const cache = c.req.bodyCache as unknown as Record<string, Promise<unknown> | undefined>;
  if (cache.text !== undefined) return (await cache.text) as string;
  if (cache.json !== undefined) return JSON.stringify(await cache.json);
  const bytes = await decodeContent(c, await readBodyBytes(c, limit), limit);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw problems.user.unparseable({ format, rawLength: bytes.byteLength });
  }
  cache.text = Promise.resolve(text);
  return text;
}

/**
 * A JSON or form body's bytes after its Content-Encoding, as Central's body parser reads them:
 * identity as it is, gzip and deflate inflated (bounded by `limit` once inflated), anything else
 * refused. @throws Problem 400.37 an encoding other than identity, gzip or deflate; 400.36 past
 * `limit` once inflated; 400.1 bytes that do not inflate.
 */
async function decodeContent(c: Context<AppEnv>, bytes: Uint8Array, limit: number): Promise<Uint8Array> {
  const encoding = (c.req.header('content-encoding') ?? '').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return bytes;
  if (encoding !== 'gzip' && encoding !== 'deflate') throw problems.user.encodingNotSupported();
  const reader = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream(encoding)).getReader();
  const chunks: Uint8Array[] = [];
  let seen = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      seen += value.byteLength;
      if (seen > limit) throw problems.user.requestTooLarge();
      chunks.push(value);
    }
  } catch (err) {
    await reader.cancel().catch(() => undefined);
    if (err instanceof Problem) throw err;
    throw problems.user.unparseable({ format: encoding, rawLength: bytes.byteLength });
  }
  return concatBytes(chunks);
}

/** POST D/entities, whose JSON body (a bulk upload) may be as large as MAX_UPLOAD_BYTES. */
const BULK_ENTITIES = /^\/v1\/projects\/[^/]+\/datasets\/[^/]+\/entities\/?$/;

/**
 * Reads and parses the request's JSON body once per request (authentication may need `__csrf`
 * from it before the handler does), bounded by MAX_JSON_BYTES while it streams.
 * @returns the parsed value; `{}` for an empty body (Central treats it as no fields).
 * @throws Problem 400.1 `{ format: 'json', rawLength }` when it is not JSON or not UTF-8; 400.36
 *   over MAX_JSON_BYTES (MAX_UPLOAD_BYTES for POST D/entities; declared or counted); 400.11 when a string holds a NUL character.
 */
export async function peekJsonBody(c: Context<AppEnv>): Promise<unknown> {
  if (c.var.jsonBody !== undefined) return c.var.jsonBody;
  // Central allows 100 MB on the bulk entity upload (POST D/entities) and 250 kB elsewhere.
  const bulk = c.req.method === 'POST' && BULK_ENTITIES.test(c.req.path);
  const text = await readBodyText(c, bulk ? c.var.ctx.config.MAX_UPLOAD_BYTES : c.var.ctx.config.MAX_JSON_BYTES, 'json');
  let value: unknown = {};
  if (text.trim() !== '') {
    try {
      value = JSON.parse(text);
    } catch {
      throw problems.user.unparseable({ format: 'json', rawLength: text.length });
    }
  }
  // JSON text holds a NUL only as the escape \u0000 (a raw one is not JSON): without that text,
  // no walk of the parsed value (a bulk upload's 10,000 entities).
  if (text.includes('\\u0000') && hasNul(value)) throw problems.user.invalidDataTypeOfParameter({ value: '\\u0000', expected: 'text without NUL characters' });
  c.set('jsonBody', value);
  return value;
}

/** Secrets that only ever reach bcrypt or PBKDF2, never a text column: NUL is theirs to hold (Central's bcrypt quirk). */
const SECRET_KEYS = new Set(['password', 'old', 'new', 'passphrase']);

/** Whether any string (or key) in a parsed JSON value holds a NUL character, which PostgreSQL text cannot. */
function hasNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\0');
  if (value == null || typeof value !== 'object' || depth > 64) return false;
  if (Array.isArray(value)) return value.some((v) => hasNul(v, depth + 1));
  return Object.entries(value).some(([k, v]) => k.includes('\0') || (!(depth === 0 && SECRET_KEYS.has(k)) && hasNul(v, depth + 1)));
}

/** The JSON body for a handler: as peekJsonBody. */
export const jsonBody = peekJsonBody;

/** What `nodeBodyReader` uses of a Node Readable (the local server's IncomingMessage). */
interface NodeReadable {
  read(): Uint8Array | null;
  readonly readableEnded: boolean;
  readonly readableFlowing: boolean | null;
  readonly readableDidRead: boolean;
  readonly errored: Error | null;
  readonly destroyed: boolean;
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
}

/**
 * The request's Node IncomingMessage (@hono/node-server passes it as the `incoming` binding) when
 * nothing has started reading it, else null. Reading it directly spares the Web Streams layers
 * (node-server's Request body over Readable.toWeb, then a counting TransformStream), which cost
 * more main-thread CPU than parsing a submission's multipart body itself.
 */
function untouchedIncoming(c: Context<AppEnv>): NodeReadable | null {
  const r = (c.env as Record<string, unknown> | undefined)?.incoming as Partial<NodeReadable> | undefined;
  if (!r || typeof r.read !== 'function' || typeof r.on !== 'function' || typeof r.off !== 'function') return null;
  // Flowing set (a Web stream over it exists) or data already read: someone else owns the body.
  if (r.readableFlowing !== null || r.readableDidRead !== false || r.destroyed) return null;
  return r as NodeReadable;
}

/**
 * A ChunkReader over a Node Readable, read in paused mode (`read()` on 'readable'). A body that
 * ends early (the client went away) rejects with the stream's error or MultipartError. `cancel`
 * reads nothing more: node-server drains an unread rest once the response is sent.
 */
function nodeBodyReader(r: NodeReadable, endedEarly: () => Error): ChunkReader {
  return {
    read() {
      if (r.errored) return Promise.reject(r.errored);
      if (r.readableEnded) return Promise.resolve({ done: true });
      const first = r.read();
      if (first !== null) return Promise.resolve({ done: false, value: first });
      return new Promise((resolve, reject) => {
        const settle = () => {
          r.off('readable', onReadable);
          r.off('end', onEnd);
          r.off('error', onError);
          r.off('close', onClose);
        };
        const onReadable = () => {
          const chunk = r.read();
          if (chunk === null) return; // the end: 'end' follows
          settle();
          resolve({ done: false, value: chunk });
        };
        const onEnd = () => {
          settle();
          resolve({ done: true });
        };
        const onError = (err: Error) => {
          settle();
          reject(err);
        };
        const onClose = () => {
          settle();
          if (r.readableEnded) resolve({ done: true });
          else reject(r.errored ?? endedEarly());
        };
        r.on('readable', onReadable);
        r.on('end', onEnd);
        r.on('error', onError);
        r.on('close', onClose);
      });
    },
    cancel: () => Promise.resolve(),
  };
}

/** Bytes a BYOB read asks for at most: one reused buffer of this size holds every chunk of a body. */
const READ_BYTES = 64 * 1024;

/**
 * A ChunkReader over a Web stream: where the stream is a byte stream (Workers' request bodies,
 * Node's `type: 'bytes'` streams) a BYOB reader that reads every chunk into one reused READ_BYTES
 * buffer, else the default reader. One buffer is the point: a 100 MB body read the default way is
 * 100 MB of chunk buffers that V8 frees only once enough external memory piles up (issue 20).
 * @returns a ChunkReader whose chunk is valid until the next `read()` call (the BYOB read detaches
 *   the buffer and refills it): a caller that keeps bytes past that copies them.
 */
export function streamChunkReader(stream: ReadableStream<Uint8Array>): ChunkReader {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = stream.getReader({ mode: 'byob' });
  } catch {
    // Not a byte stream: its chunks are fresh buffers, so they stay valid anyway.
    return stream.getReader();
  }
  let buffer: ArrayBuffer = new ArrayBuffer(READ_BYTES);
  return {
    async read() {
      const { done, value } = await byob.read(new Uint8Array(buffer, 0, READ_BYTES));
      // The read transferred `buffer`; the result views the same memory under a new ArrayBuffer.
      if (value) buffer = value.buffer as ArrayBuffer;
      if (done) return { done: true };
      return { done: false, value };
    },
    cancel: () => byob.cancel(),
  };
}

/**
 * The request body as a ChunkReader that counts as it reads: past `limit` bytes `read` rejects
 * with `tooLarge()` and `over()` turns true. The local server's IncomingMessage is read directly
 * (`untouchedIncoming`); elsewhere (Workers, Lambda, in-process requests) the Request's stream
 * through `streamChunkReader` (one reused buffer where it is a byte stream). A chunk is valid until
 * the next `read()` call.
 * A body that ends early on the Node path rejects with `endedEarly()` (or the stream's error).
 * @throws `tooLarge()` when the declared Content-Length passes `limit`.
 */
export function countedBodyReader(c: Context<AppEnv>, limit: number, tooLarge: () => Error, endedEarly: () => Error): { reader: ChunkReader; over: () => boolean } {
  if (Number(c.req.header('content-length') ?? '0') > limit) throw tooLarge();
  const incoming = untouchedIncoming(c);
  const stream = incoming ? null : c.req.raw.body;
  const inner: ChunkReader | null = incoming ? nodeBodyReader(incoming, endedEarly) : stream ? streamChunkReader(stream) : null;
  let seen = 0;
  let over = false;
  const reader: ChunkReader = {
    async read() {
      if (!inner) return { done: true };
      const r = await inner.read();
      if (!r.done) {
        seen += r.value.byteLength;
        if (seen > limit) {
          over = true;
          throw tooLarge();
        }
      }
      return r;
    },
    cancel: () => (inner ? inner.cancel() : Promise.resolve()),
  };
  return { reader, over: () => over };
}
