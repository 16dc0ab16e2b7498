/**
 * The streaming multipart reader (lib/http/multipart.ts parseMultipart), as the Workers path feeds
 * it: the body in chunks of every small size and of random sizes, so every delimiter and every
 * near-delimiter (`\r\n--bound` without the rest) falls across chunk boundaries at every offset.
 * Each part's bytes must come out exactly, whatever the chunking; and with a reader that refills
 * one buffer (a BYOB read of a byte stream, as on Workers: the memory figure of issue 20) too, so
 * nothing the parser hands on or keeps may outlive a read.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { streamChunkReader } from '../../lib/http/body';
import { parseMultipart, type ChunkReader, type PartHead } from '../../lib/http/multipart';
import { byteStreamOf } from '../helpers/byte-streams';

const boundary = 'XyZ-boundary-42';
const enc = new TextEncoder();

function body(parts: Array<{ name: string; filename?: string; bytes: Uint8Array }>): Uint8Array {
  const pieces: Uint8Array[] = [enc.encode('preamble\r\n')];
  for (const p of parts) {
    pieces.push(enc.encode(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}\r\n\r\n`));
    pieces.push(p.bytes, enc.encode('\r\n'));
  }
  pieces.push(enc.encode(`--${boundary}--\r\n`));
  return Buffer.concat(pieces);
}

function streamOf(bytes: Uint8Array, sizes: () => number): ReadableStream<Uint8Array> {
  let off = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= bytes.byteLength) return c.close();
      const n = Math.max(1, sizes());
      // A fresh buffer per chunk, as a network stream hands them over.
      c.enqueue(new Uint8Array(bytes.subarray(off, off + n)));
      off += n;
    },
  });
}

/**
 * A ChunkReader that hands out every chunk in one buffer, scribbled over before each refill: any
 * view the parser (or a sink) kept past a read would hold 0xEE bytes instead of the body's.
 */
function reusingReader(bytes: Uint8Array, sizes: () => number): ChunkReader {
  const buffer = new Uint8Array(200_000);
  let off = 0;
  return {
    read() {
      buffer.fill(0xee);
      if (off >= bytes.byteLength) return Promise.resolve({ done: true });
      const n = Math.min(Math.max(1, sizes()), buffer.byteLength, bytes.byteLength - off);
      buffer.set(bytes.subarray(off, off + n));
      off += n;
      return Promise.resolve({ done: false, value: buffer.subarray(0, n) });
    },
    cancel: () => Promise.resolve(),
  };
}

async function parse(stream: ReadableStream<Uint8Array> | ChunkReader) {
  const out: Array<{ head: PartHead; bytes: Uint8Array }> = [];
  await parseMultipart(stream, boundary, (head) => {
    const chunks: Uint8Array[] = [];
    return {
      // A chunk is valid until write returns (PartSink): keep a copy.
      write(chunk) { chunks.push(chunk.slice()); },
      end() { out.push({ head, bytes: Buffer.concat(chunks) }); },
    };
  });
  return out;
}

describe('parseMultipart over chunked streams', () => {
  // Body bytes that look like the start of a delimiter, at the start, middle and end of a part.
  const tricky = Buffer.concat([enc.encode(`\r\n--${boundary.slice(0, 7)}`), randomBytes(300), enc.encode(`\r\n--${boundary.slice(0, -1)}x\r\n-`), randomBytes(50), enc.encode('\r\n--')]);
  const parts = [
    { name: 'xml_submission_file', filename: 'submission.xml', bytes: enc.encode('<data id="x"><a>1</a></data>') },
    { name: 'tricky.bin', filename: 'tricky.bin', bytes: new Uint8Array(tricky) },
    { name: 'empty.bin', filename: 'empty.bin', bytes: new Uint8Array(0) },
    { name: 'note', bytes: enc.encode('text field') },
  ];
  const whole = body(parts);

  const sources = {
    'fresh chunks': streamOf,
    'a byte stream read BYOB into one buffer': byteStreamOf,
    'one buffer scribbled over before each refill': reusingReader,
  };
  for (const [name, source] of Object.entries(sources)) {
    test(`every chunk size from 1 to 80 bytes, and random sizes, give the same parts: ${name}`, async () => {
      const runs: Array<() => number> = [];
      for (let n = 1; n <= 80; n += 1) runs.push(() => n);
      for (let seed = 0; seed < 20; seed += 1) runs.push(() => 1 + Math.floor(Math.random() * 120));
      for (const sizes of runs) {
        const got = await parse(source(whole, sizes));
        expect(got.map((p) => [p.head.name, p.head.filename])).toEqual(parts.map((p) => [p.name, p.filename ?? null]));
        for (let i = 0; i < parts.length; i += 1) expect(Buffer.from(got[i]!.bytes).equals(Buffer.from(parts[i]!.bytes)), parts[i]!.name).toBe(true);
      }
    });
  }

  test('streamChunkReader reads a byte stream into one reused buffer; other streams as they come', async () => {
    const bytes = new Uint8Array(randomBytes(200_000));
    const byob = streamChunkReader(byteStreamOf(bytes, () => 65_536));
    const first = await byob.read();
    expect(first.done ? 0 : first.value.byteLength).toBe(65_536);
    const second = await byob.read();
    // The second read took the first chunk's buffer (BYOB transfer): the first view is detached.
    expect(first.done ? -1 : first.value.byteLength).toBe(0);
    expect(second.done ? null : Buffer.from(second.value).equals(bytes.subarray(65_536, 131_072))).toBe(true);
    await byob.cancel();
    const plain = streamChunkReader(streamOf(bytes, () => 65_536));
    const a = await plain.read();
    await plain.read();
    expect(a.done ? null : Buffer.from(a.value).equals(bytes.subarray(0, 65_536))).toBe(true);
  });
});
