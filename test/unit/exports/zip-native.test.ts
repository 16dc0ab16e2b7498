/**
 * The ZIP writer with Node's native deflate (lib/runtime/node.ts nativeDeflateRaw, what `npm start`
 * uses) on entries larger than one compressor call: data that repeats is deflated with string
 * matching, data that barely repeats (columns of random numbers) Huffman-coded only; either way
 * every entry reads back byte for byte with the CRC-32 and size its central directory states,
 * whatever size the chunks come in. A reader that cancels ends the entry's iterator.
 */
import { randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { unzipSync } from 'fflate';
import { expect, test } from 'vitest';
import { zipStream, type ZipEntry } from '../../../lib/exports/zip';
import { nativeDeflateRaw } from '../../../lib/runtime/node';

const enc = new TextEncoder();

/** The central directory: entry name → method, CRC-32, compressed and uncompressed size. */
function centralDirectory(zip: Uint8Array): Map<string, { method: number; crc: number; compressed: number; size: number }> {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let eocd = zip.byteLength - 22;
  while (view.getUint32(eocd, true) !== 0x06054b50) eocd -= 1;
  let at = view.getUint32(eocd + 16, true);
  const out = new Map<string, { method: number; crc: number; compressed: number; size: number }>();
  for (let n = view.getUint16(eocd + 10, true); n > 0; n -= 1) {
    const nameLength = view.getUint16(at + 28, true);
    const name = new TextDecoder().decode(zip.subarray(at + 46, at + 46 + nameLength));
    out.set(name, { method: view.getUint16(at + 10, true), crc: view.getUint32(at + 16, true), compressed: view.getUint32(at + 20, true), size: view.getUint32(at + 24, true) });
    at += 46 + nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
  }
  return out;
}

/** `bytes` in chunks of varying sizes (1 byte … 100 kB), as a database or blob store hands them. */
async function* chunked(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  const sizes = [1, 7, 4096, 65536, 100_000, 333];
  for (let at = 0, k = 0; at < bytes.byteLength; k += 1) {
    const end = Math.min(bytes.byteLength, at + sizes[k % sizes.length]!);
    yield bytes.slice(at, end);
    at = end;
  }
}

/** CSV lines of `columns` random integers each, about `size` bytes. */
function numbers(size: number, columns: number): Uint8Array {
  const lines: string[] = [];
  for (let n = 0; n < size;) {
    const line = `${Array.from({ length: columns }, () => randomInt(1_000_000)).join(',')}\n`;
    lines.push(line);
    n += line.length;
  }
  return enc.encode(lines.join(''));
}

test('large entries that repeat and that barely repeat read back exactly, with their CRC-32 and sizes', async () => {
  const files: Record<string, Uint8Array> = {
    'numbers.csv': numbers(900_000, 250),
    'repeats.csv': enc.encode(Array.from({ length: 12_000 }, (_, i) => `2024-01-0${i % 9 + 1},yes,no,"Some, choice",${i % 17}\n`).join('')),
    'small.csv': enc.encode('a,b\n1,2\n'),
    'empty.csv': new Uint8Array(0),
  };
  async function* entries(): AsyncGenerator<ZipEntry> {
    for (const [name, bytes] of Object.entries(files)) yield { name, level: 1, data: chunked(bytes) };
  }
  const zip = new Uint8Array(await new Response(zipStream(entries(), nativeDeflateRaw, crc32)).arrayBuffer());
  const unzipped = unzipSync(zip);
  expect(Object.keys(unzipped)).toEqual(Object.keys(files));
  const dir = centralDirectory(zip);
  for (const [name, bytes] of Object.entries(files)) {
    expect(Buffer.from(unzipped[name]!).equals(Buffer.from(bytes)), name).toBe(true);
    expect(dir.get(name), name).toMatchObject({ method: 8, crc: crc32(bytes), size: bytes.byteLength });
  }
  // String matching kept where it pays (here ~12×); random digits still shrink (~2×) with Huffman coding alone.
  expect(dir.get('repeats.csv')!.compressed).toBeLessThan(files['repeats.csv']!.byteLength / 8);
  expect(dir.get('numbers.csv')!.compressed).toBeLessThan(files['numbers.csv']!.byteLength / 1.8);
});

test('a reader that cancels mid-way ends the entry iterator, and nothing escapes', async () => {
  let ended = false;
  let produced = 0;
  async function* endless(): AsyncGenerator<Uint8Array> {
    try {
      for (;;) {
        produced += 1;
        yield numbers(64 * 1024, 20);
      }
    } finally {
      ended = true;
    }
  }
  async function* entries(): AsyncGenerator<ZipEntry> {
    yield { name: 'endless.csv', level: 1, data: endless() };
  }
  const reader = zipStream(entries(), nativeDeflateRaw, crc32).getReader();
  for (let k = 0; k < 3; k += 1) expect((await reader.read()).done).toBe(false);
  await reader.cancel();
  expect(ended).toBe(true);
  const after = produced;
  await new Promise((r) => setTimeout(r, 100));
  // Reading ahead of the reader is bounded, and stops at the cancel.
  expect(produced).toBe(after);
  expect(after).toBeLessThan(40);
});
