/**
 * A streaming ZIP writer on fflate (pure JavaScript: runs on Node and Workers, unlike yazl, which
 * needs node:fs). Entries are produced one after the other as the reader pulls, so memory holds
 * at most one chunk of input and its deflated output.
 */
import { Zip, ZipDeflate, type AsyncFlateStreamHandler, type ZipInputFile } from 'fflate';
import { concatBytes } from '../bytes';

/**
 * A raw-deflate compressor fed chunk by chunk (Deps.deflateRaw; Node: zlib on its thread pool).
 * Writes are compressed in the order they are made.
 */
export interface RawDeflater {
  /**
   * Compresses `data`, which the caller leaves untouched until the promise settles; `final` ends
   * the deflate stream (`data` may then be empty).
   * @returns the compressed bytes produced since the last call, in order (maybe none; after the
   *   final call, all the rest). Rejects when the compressor fails.
   */
  write(data: Uint8Array, final: boolean): Promise<Uint8Array[]>;
  /** Frees the compressor without finishing it (the reader went away). */
  destroy(): void;
}

/** Makes one RawDeflater per ZIP entry (Deps.deflateRaw). */
export type DeflateRawFactory = () => RawDeflater;

const CRC_TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n += 1) {
    let c = n;
    for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
})();

/** Input bytes per call to the native compressor: each call is a round trip to its thread. */
const BATCH = 256 * 1024;
/**
 * How far production runs ahead of the reader: compressed bytes waiting for it, and input read
 * since it last took output (so a slow reader holds back the database reads too).
 */
const AHEAD = 1024 * 1024;
const AHEAD_INPUT = 2 * BATCH;

/**
 * A ZIP entry deflated by a native compressor off the main thread, so deflating overlaps with
 * producing the data. fflate's Zip writes the headers and the data descriptor; the CRC-32 and
 * size are counted here as the data goes through, and the input is gathered into BATCH-sized
 * calls.
 */
class NativeDeflateEntry implements ZipInputFile {
  size = 0;
  crc = 0;
  readonly compression = 8;
  mtime: Date;
  ondata?: AsyncFlateStreamHandler;
  private state = -1;
  private readonly deflater: RawDeflater;
  private parts: Uint8Array[] = [];
  private gathered = 0;
  /** Calls in the compressor, oldest first; each hands its output on in order when it settles. */
  private readonly inFlight: Array<Promise<void>> = [];
  private failed: unknown = null;

  constructor(readonly filename: string, mtime: Date, deflate: DeflateRawFactory, private readonly crc32?: (data: Uint8Array, value: number) => number) {
    this.mtime = mtime;
    this.deflater = deflate();
  }

  private emit(chunks: Uint8Array[]): void {
    for (const value of chunks) {
      if (value.byteLength === 0) continue;
      // zlib hands out views of its output chunk (256 kB): a small view queued for the socket
      // would pin the whole chunk, so a small one is copied out (a 50 kB photo's entry held
      // five times its size while it waited to be written).
      const data = value.byteLength * 2 < value.buffer.byteLength ? value.slice() : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
      this.ondata!(null, data as Uint8Array<ArrayBuffer>, false);
    }
  }

  /** Sends the gathered input to the compressor; waits while two calls are already in it. */
  private async send(final: boolean): Promise<void> {
    const data = concatBytes(this.parts, this.gathered);
    this.parts = [];
    this.gathered = 0;
    // At most two calls in the compressor: it works on one while the next is gathered, and
    // memory stays bounded when it is slower than the data.
    if (this.inFlight.length >= 2) await this.inFlight.shift();
    if (this.failed) throw this.failed;
    const previous = this.inFlight[this.inFlight.length - 1];
    const call = this.deflater.write(data, final);
    // Settles in call order, never rejects (the first failure is kept for push and end to throw).
    this.inFlight.push((async () => {
      const chunks = await call;
      if (previous) await previous;
      if (!this.failed) this.emit(chunks);
    })().catch((err: unknown) => { this.failed ??= err; }));
  }

  /** Counts a chunk into the CRC-32 and size, and hands it on once a batch is gathered. */
  async push(chunk: Uint8Array): Promise<void> {
    if (this.crc32) {
      this.crc = this.crc32(chunk, this.crc);
    } else {
      let c = this.state;
      for (let i = 0; i < chunk.length; i += 1) c = CRC_TABLE[(c ^ chunk[i]!) & 0xff]! ^ (c >>> 8);
      this.state = c;
    }
    this.size += chunk.byteLength;
    this.parts.push(chunk);
    this.gathered += chunk.byteLength;
    if (this.gathered >= BATCH) await this.send(false);
  }

  /** Finishes the deflate stream; its last bytes and the data descriptor go out. */
  async end(): Promise<void> {
    await this.send(true);
    while (this.inFlight.length > 0) await this.inFlight.shift();
    if (this.failed) throw this.failed;
    if (!this.crc32) this.crc = ~this.state >>> 0;
    this.ondata!(null, new Uint8Array(0), true);
  }

  /** Stops the compressor (the reader went away). */
  abort(): void {
    this.failed ??= new Error('ZIP entry aborted');
    this.deflater.destroy();
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
 * @param deflate a native raw-deflate compressor (Deps.deflateRaw); without it, fflate deflates in JS.
 * @param crc32 a native CRC-32 (Deps.crc32) for those entries; without it, a JavaScript table.
 * @returns the archive as a byte stream. Once first read, the entries are read and compressed
 *   ahead of the reader (AHEAD, AHEAD_INPUT), so producing, compressing and sending overlap;
 *   cancelling it (or a failure) stops the entries' iterators (and so the database reads behind
 *   them). Pure apart from the iteration it drives.
 */
export function zipStream(entries: AsyncIterable<ZipEntry>, deflate?: DeflateRawFactory, crc32?: (data: Uint8Array, value: number) => number): ReadableStream<Uint8Array> {
  const out: Uint8Array[] = [];
  let outBytes = 0;
  /** Input bytes read since the reader last took output. */
  let inputAhead = 0;
  let finished = false;
  let failure: unknown = null;
  let cancelled = false;
  /** Wakes the reader (output, the end or a failure) and the producer (room in `out`, or cancelled). */
  let wakeReader: (() => void) | null = null;
  let wakeProducer: (() => void) | null = null;
  const wake = (which: 'reader' | 'producer') => {
    const w = which === 'reader' ? wakeReader : wakeProducer;
    if (which === 'reader') wakeReader = null;
    else wakeProducer = null;
    w?.();
  };
  const zip = new Zip((err, chunk, final) => {
    if (err) failure ??= err;
    else {
      if (chunk.byteLength > 0) {
        out.push(chunk);
        outBytes += chunk.byteLength;
      }
      if (final) finished = true;
    }
    wake('reader');
  });
  const files = entries[Symbol.asyncIterator]();
  let file: ZipDeflate | NativeDeflateEntry | null = null;
  let data: AsyncIterator<Uint8Array> | null = null;
  const mtime = new Date();

  /** Reads every entry into the archive, pausing while it is AHEAD / AHEAD_INPUT ahead of the reader. */
  async function produce(): Promise<void> {
    try {
      for (;;) {
        const next = await files.next();
        if (cancelled) return;
        if (next.done) break;
        if (deflate) {
          file = new NativeDeflateEntry(next.value.name, mtime, deflate, crc32);
        } else {
          file = new ZipDeflate(next.value.name, { level: next.value.level });
          file.mtime = mtime;
        }
        zip.add(file);
        data = next.value.data[Symbol.asyncIterator]();
        for (;;) {
          while ((outBytes >= AHEAD || inputAhead >= AHEAD_INPUT) && !cancelled) await new Promise<void>((resolve) => { wakeProducer = resolve; });
          if (cancelled) return;
          const chunk = await data.next();
          if (cancelled) return;
          if (chunk.done) break;
          inputAhead += chunk.value.byteLength;
          if (file instanceof NativeDeflateEntry) await file.push(chunk.value);
          else file.push(chunk.value, false);
          if (failure) throw failure;
        }
        data = null;
        if (file instanceof NativeDeflateEntry) await file.end();
        else file.push(new Uint8Array(0), true);
        file = null;
      }
      zip.end();
    } catch (err) {
      failure ??= err;
      await stop();
    } finally {
      wake('reader');
    }
  }

  /** Ends the compressor and the iterators (the database reads behind them). */
  async function stop(): Promise<void> {
    if (file instanceof NativeDeflateEntry) file.abort();
    file = null;
    const d = data;
    data = null;
    await d?.return?.()?.catch(() => {});
    await files.return?.()?.catch(() => {});
  }

  let producing: Promise<void> | null = null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      producing ??= produce();
      while (out.length === 0 && !finished && failure == null) await new Promise<void>((resolve) => { wakeReader = resolve; });
      if (failure) throw failure;
      // One enqueue per pull: small deflate outputs joined, fewer writes to the socket.
      const chunks = out.splice(0);
      outBytes = 0;
      inputAhead = 0;
      wake('producer');
      if (chunks.length === 1) controller.enqueue(chunks[0]!);
      else if (chunks.length > 1) controller.enqueue(concatBytes(chunks));
      if (finished && out.length === 0) controller.close();
    },
    async cancel() {
      cancelled = true;
      wake('producer');
      await stop();
    },
  });
}
