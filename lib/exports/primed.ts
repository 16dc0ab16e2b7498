/**
 * Reads the first chunk of a lazily produced body before the response is sent, so a failure in
 * the first database read (a filter PostgreSQL rejects, a lost connection) still becomes a proper
 * error response instead of a 200 that breaks off. The rest streams as the client reads.
 * @returns a stream that yields that first chunk, then the rest; cancelling it cancels the source.
 * @throws whatever producing the first chunk threw.
 */
export async function primed(stream: ReadableStream<Uint8Array>): Promise<ReadableStream<Uint8Array>> {
  const reader = stream.getReader();
  const first = await reader.read();
  let sentFirst = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sentFirst) {
        sentFirst = true;
        if (first.done) return controller.close();
        return controller.enqueue(first.value);
      }
      const next = await reader.read();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
