/**
 * A streaming ZIP writer on fflate (pure JavaScript: runs on Node and Workers, unlike yazl, which
 * needs node:fs). Entries are produced one after the other as the reader pulls, so memory holds
 * at most one chunk of input and its deflated output.
 */
import { Zip, ZipDeflate } from 'fflate';

/** One file of the archive: its name and its bytes as they come. */
export interface ZipEntry {
  name: string;
  /** Deflate level (1 fastest … 9 smallest); exports use 1 for CSV and media alike. */
  level: 1 | 6;
  data: AsyncIterable<Uint8Array>;
}

/**
 * @param entries the files, in archive order.
 * @returns the archive as a byte stream; cancelling it stops the entries' iterators (and so the
 *   database reads behind them). Pure apart from the iteration it drives.
 */
export function zipStream(entries: AsyncIterable<ZipEntry>): ReadableStream<Uint8Array> {
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
  let current: { file: ZipDeflate; data: AsyncIterator<Uint8Array> } | null = null;
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
          const file = new ZipDeflate(next.value.name, { level: next.value.level });
          file.mtime = mtime;
          zip.add(file);
          current = { file, data: next.value.data[Symbol.asyncIterator]() };
        }
        const chunk = await current.data.next();
        if (chunk.done) {
          current.file.push(new Uint8Array(0), true);
          current = null;
        } else {
          current.file.push(chunk.value, false);
        }
      }
      if (failure) throw failure;
      while (out.length > 0) controller.enqueue(out.shift()!);
      if (finished) controller.close();
    },
    async cancel() {
      await current?.data.return?.();
      await files.return?.();
    },
  });
}
