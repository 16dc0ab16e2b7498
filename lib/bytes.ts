/** Byte helpers shared by request bodies, blob reads, exports and the XLSForm reader. Node and Workers. */

/**
 * Joins chunks into one buffer.
 * @param chunks the pieces, in order.
 * @param size their total length in bytes, when the caller already counted it.
 * @returns the single chunk itself when there is one, else a new buffer. Pure.
 */
export function concatBytes(chunks: Uint8Array[], size = chunks.reduce((n, c) => n + c.byteLength, 0)): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

/**
 * An async generator of byte chunks as a ReadableStream pulled on demand: the generator runs only
 * as fast as the reader reads, and cancelling the stream returns the generator (its `finally`
 * runs, e.g. a COPY is stopped). Empty chunks are skipped (a pull must enqueue something or end).
 * @param chunks the bytes, in order. @returns the stream. No side effects of its own.
 */
export function pullStream(chunks: AsyncGenerator<Uint8Array>): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const next = await chunks.next();
        if (next.done) return controller.close();
        if (next.value.byteLength > 0) return controller.enqueue(next.value);
      }
    },
    async cancel() {
      await chunks.return(undefined);
    },
  });
}
