/**
 * The binary COPY reader of the export's fast path (lib/exports/copy.ts): whatever way the bytes
 * of PostgreSQL's binary COPY arrive (one message per row, or split anywhere by the socket), the
 * CSV lines come out whole and in order.
 */
import { describe, expect, test } from 'vitest';
import { BinaryCopyText } from '../../../lib/exports/copy';

const enc = new TextEncoder();

/** A one-text-column binary COPY of `lines`, as PostgreSQL sends it (header, rows, trailer). */
function binaryCopy(lines: string[], extension = 0): Uint8Array {
  const parts: number[] = [0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, extension];
  for (let i = 0; i < extension; i += 1) parts.push(7);
  for (const line of lines) {
    const bytes = enc.encode(line);
    parts.push(0, 1, (bytes.length >>> 24) & 255, (bytes.length >>> 16) & 255, (bytes.length >>> 8) & 255, bytes.length & 255, ...bytes);
  }
  parts.push(0xff, 0xff);
  return Uint8Array.from(parts);
}

function read(chunks: Uint8Array[]): string {
  const reader = new BinaryCopyText();
  const out: Uint8Array[] = [];
  for (const c of chunks) reader.feed(c, (part) => out.push(part.slice()));
  reader.finish();
  return Buffer.concat(out).toString('utf8');
}

describe('binary COPY reader', () => {
  const lines = ['2026-01-01T00:00:00.000Z,1,"a,b",uuid:x\n', 'ünïcödé ✓,"line one\nline two"\n', '\n', 'x'.repeat(70_000) + '\n'];
  const stream = binaryCopy(lines, 3);

  test('whole stream, one message per row, and every split point give the same lines', () => {
    expect(read([stream])).toBe(lines.join(''));
    for (let at = 0; at <= 120; at += 1) expect(read([stream.subarray(0, at), stream.subarray(at)])).toBe(lines.join(''));
    const bytes: Uint8Array[] = [];
    for (let i = 0; i < 400; i += 1) bytes.push(stream.subarray(i, i + 1));
    bytes.push(stream.subarray(400));
    expect(read(bytes)).toBe(lines.join(''));
  });

  test('a stream cut short or with more than one column fails', () => {
    expect(() => read([stream.subarray(0, stream.length - 2)])).toThrow(/ended early/);
    const two = binaryCopy(['a']);
    two[20] = 2;
    expect(() => read([two])).toThrow(/2 fields/);
    expect(() => read([enc.encode('not a copy at all, long enough')])).toThrow(/signature/);
  });
});
