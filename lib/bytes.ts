/** Byte helpers shared by request bodies, blob reads and the XLSForm reader. Pure; Node and Workers. */

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
