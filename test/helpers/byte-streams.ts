/** Web byte streams for tests of the body readers (lib/http/body.ts streamChunkReader). */

/**
 * A byte stream (`type: 'bytes'`) of `bytes` in chunks of `sizes()`: read through streamChunkReader
 * it is a BYOB read into one reused buffer, which each read detaches and refills.
 */
export function byteStreamOf(bytes: Uint8Array, sizes: () => number): ReadableStream<Uint8Array> {
  let off = 0;
  return new ReadableStream({
    type: 'bytes',
    pull(c) {
      if (off >= bytes.byteLength) {
        c.close();
        c.byobRequest?.respond(0);
        return;
      }
      const view = c.byobRequest!.view!;
      const n = Math.min(Math.max(1, sizes()), view.byteLength, bytes.byteLength - off);
      new Uint8Array(view.buffer, view.byteOffset, n).set(bytes.subarray(off, off + n));
      off += n;
      c.byobRequest!.respond(n);
    },
  });
}
