/**
 * The streaming multipart reader (lib/http/multipart.ts parseMultipart), as the Workers path feeds
 * it: the body in chunks of every small size and of random sizes, so every delimiter and every
 * near-delimiter (`\r\n--bound` without the rest) falls across chunk boundaries at every offset.
 * Each part's bytes must come out exactly, whatever the chunking; and a part's body reaches its
 * sink as views of the arriving chunks, not as copies (the memory figure of issue 20).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { parseMultipart, type PartHead } from '../../lib/http/multipart';

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

async function parse(stream: ReadableStream<Uint8Array>) {
  const out: Array<{ head: PartHead; bytes: Uint8Array; chunks: Uint8Array[] }> = [];
  await parseMultipart(stream, boundary, (head) => {
    const chunks: Uint8Array[] = [];
    return {
      write(chunk) { chunks.push(chunk); },
      end() { out.push({ head, bytes: Buffer.concat(chunks), chunks }); },
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

  test('every chunk size from 1 to 80 bytes, and random sizes, give the same parts', async () => {
    const runs: Array<() => number> = [];
    for (let n = 1; n <= 80; n += 1) runs.push(() => n);
    for (let seed = 0; seed < 20; seed += 1) runs.push(() => 1 + Math.floor(Math.random() * 120));
    for (const sizes of runs) {
      const got = await parse(streamOf(whole, sizes));
      expect(got.map((p) => [p.head.name, p.head.filename])).toEqual(parts.map((p) => [p.name, p.filename ?? null]));
      for (let i = 0; i < parts.length; i += 1) expect(Buffer.from(got[i]!.bytes).equals(Buffer.from(parts[i]!.bytes)), parts[i]!.name).toBe(true);
    }
  });

  test('a large part reaches the sink as views of the arriving chunks, not copies', async () => {
    const media = randomBytes(2 * 1024 * 1024);
    const big = body([{ name: 'big.bin', filename: 'big.bin', bytes: new Uint8Array(media) }]);
    const got = await parse(streamOf(big, () => 65_536));
    expect(Buffer.from(got[0]!.bytes).equals(media)).toBe(true);
    // Views share their chunk's buffer: the bytes written are (nearly all) chunk-sized buffers'.
    const large = got[0]!.chunks.filter((c) => c.buffer.byteLength === 65_536);
    const inLarge = large.reduce((n, c) => n + c.byteLength, 0);
    expect(inLarge / media.byteLength).toBeGreaterThan(0.99);
  });
});
