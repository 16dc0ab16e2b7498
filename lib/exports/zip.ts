/**
 * A streaming ZIP writer on fflate (pure JavaScript: runs on Node and Workers, unlike yazl, which
 * needs node:fs). Entries are produced one after the other as the reader pulls, so memory holds
 * at most one chunk of input and its deflated output.
 */
import { Zip, ZipDeflate, type AsyncFlateStreamHandler, type ZipInputFile } from 'fflate';

/** A raw-deflate stream pair (Deps.deflateRaw). */
export type DeflateRawFactory = () => { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> };

const CRC_TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n += 1) {
    let c = n;
    for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
})();

/**
 * A ZIP entry deflated by a native stream (zlib on Node's thread pool), so deflating overlaps
 * with producing the CSV. fflate's Zip writes the headers and the data descriptor; the CRC-32 and
 * size are counted here as the data goes through.
 */
class NativeDeflateEntry implements ZipInputFile {
  size = 0;
  crc = 0;
  readonly compression = 8;
  mtime: Date;
  ondata?: AsyncFlateStreamHandler;
  private state = -1;
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  private readonly readable: ReadableStream<Uint8Array>;
  private reading: Promise<void> | null = null;
  private failed: unknown = null;
  private readonly inFlight: Array<Promise<void>> = [];

  constructor(readonly filename: string, mtime: Date, deflate: DeflateRawFactory, private readonly crc32?: (data: Uint8Array, value: number) => number) {
    this.mtime = mtime;
    const pair = deflate();
    this.writer = pair.writable.getWriter();
    this.readable = pair.readable;
  }

  private drain(): Promise<void> {
    this.reading ??= (async () => {
      const reader = this.readable.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        if (value.byteLength === 0) continue;
        // zlib hands out views of its output chunk (256 kB): a small view queued for the socket
        // would pin the whole chunk, so a small one is copied out (a 50 kB photo's entry held
        // five times its size while it waited to be written).
        const data = value.byteLength * 2 < value.buffer.byteLength ? value.slice() : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
        this.ondata!(null, data as Uint8Array<ArrayBuffer>, false);
      }
    })();
    return this.reading;
  }

  /** Hands a chunk to the compressor; waits while two are already being compressed. */
  async push(chunk: Uint8Array): Promise<void> {
    if (this.failed) throw this.failed;
    void this.drain().catch((err: unknown) => { this.failed = err; });
    if (this.crc32) {
      this.crc = this.crc32(chunk, this.crc);
    } else {
      let c = this.state;
      for (let i = 0; i < chunk.length; i += 1) c = CRC_TABLE[(c ^ chunk[i]!) & 0xff]! ^ (c >>> 8);
      this.state = c;
    }
    this.size += chunk.byteLength;
    // At most two chunks in the compressor: it works while the next is produced, and memory stays
    // bounded when it is slower than the CSV.
    if (this.inFlight.length >= 2) await this.inFlight.shift();
    this.inFlight.push(this.writer.write(chunk).catch((err: unknown) => { this.failed = err; }));
  }

  async end(): Promise<void> {
    const drained = this.drain();
    await this.writer.close();
    await drained;
    if (this.failed) throw this.failed;
    if (!this.crc32) this.crc = ~this.state >>> 0;
    this.ondata!(null, new Uint8Array(0), true);
  }

  /** Stops the compressor (the reader went away). */
  abort(): void {
    this.writer.abort().catch(() => {});
  }
}

/** One file of the archive: its name and its bytes as they come. */
export interface ZipEntry {
  name: string;
  /** Deflate level for the JavaScript deflate (1 fastest … 9 smallest); the native one uses 1. */
  level: 1 | 6;
  data: AsyncIterable<Uint8Array>;
}

/**
 * @param entries the files, in archive order.
 * @param deflate a native raw-deflate stream (Deps.deflateRaw); without it, fflate deflates in JS.
 * @param crc32 a native CRC-32 (Deps.crc32) for those entries; without it, a JavaScript table.
 * @returns the archive as a byte stream; cancelling it stops the entries' iterators (and so the
 *   database reads behind them). Pure apart from the iteration it drives.
 */
export function zipStream(entries: AsyncIterable<ZipEntry>, deflate?: DeflateRawFactory, crc32?: (data: Uint8Array, value: number) => number): ReadableStream<Uint8Array> {
  const out: Uint8Array[] = [];
  let finished = false;
  let failure: unknown = null;
  const zip = new Zip((err, chunk, final) => {
    if (err) failure = err;
    else {
      if (chunk.byteLength > 0) out.push(chunk);
      if (final) finished = true;
    }
  });
  const files = entries[Symbol.asyncIterator]();
  let current: { file: ZipDeflate | NativeDeflateEntry; data: AsyncIterator<Uint8Array> } | null = null;
  let ended = false;
  const mtime = new Date();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (out.length === 0 && !finished) {
        if (failure) throw failure;
        if (current == null) {
          if (ended) break;
          const next = await files.next();
          if (next.done) {
            ended = true;
            zip.end();
            continue;
          }
          let file: ZipDeflate | NativeDeflateEntry;
          if (deflate) {
            file = new NativeDeflateEntry(next.value.name, mtime, deflate, crc32);
          } else {
            file = new ZipDeflate(next.value.name, { level: next.value.level });
            file.mtime = mtime;
          }
          zip.add(file);
          current = { file, data: next.value.data[Symbol.asyncIterator]() };
        }
        const chunk = await current.data.next();
        if (chunk.done) {
          if (current.file instanceof NativeDeflateEntry) await current.file.end();
          else current.file.push(new Uint8Array(0), true);
          current = null;
        } else if (current.file instanceof NativeDeflateEntry) {
          await current.file.push(chunk.value);
        } else {
          current.file.push(chunk.value, false);
        }
      }
      if (failure) throw failure;
      // One enqueue per pull: small deflate outputs joined, fewer writes to the socket.
      if (out.length === 1) controller.enqueue(out.shift()!);
      else if (out.length > 1) {
        const joined = new Uint8Array(out.reduce((n, c) => n + c.byteLength, 0));
        let at = 0;
        for (const c of out.splice(0)) {
          joined.set(c, at);
          at += c.byteLength;
        }
        controller.enqueue(joined);
      }
      if (finished) controller.close();
    },
    async cancel() {
      if (current?.file instanceof NativeDeflateEntry) current.file.abort();
      await current?.data.return?.();
      await files.return?.();
    },
  });
}
