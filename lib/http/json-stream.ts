/**
 * Streaming JSON lists (issue 21): an unpaged list (GET F/submissions, audits, comments, App Users…)
 * is written as its rows are read, in keyset batches, so memory is bounded by a batch or two, the
 * first byte leaves once the first batch is read, and a client that goes away stops the reads.
 * Batches, not a server-side cursor: each batch is one ordinary query (no connection held between
 * them, no transaction), which works the same on postgres.js and PGlite.
 *
 * The body is the same JSON array as `c.json(array)` would send (same element order and keys), as
 * `application/json; charset=utf-8`. The first batch is read before the Response exists, so a
 * failure there (rights, a bad parameter PostgreSQL refuses, a lost connection) is still Central's
 * problem JSON; a failure after the first byte can only break the connection off.
 */

const encoder = new TextEncoder();

/** Byte strings joined by commas, in one array. */
function commaJoined(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, parts.length - 1));
  let at = 0;
  parts.forEach((p, i) => {
    if (i > 0) out[at++] = 44; // ','
    out.set(p, at);
    at += p.byteLength;
  });
  return out;
}

/**
 * Reads rows in keyset batches: `read(after, limit)` returns the next at most `limit` rows after
 * the position `after` (null: from the start), in the list's order; `key(row)` is a row's
 * position. The next batch is asked for while the current one is written (one read ahead).
 * @returns batches of rows, none empty; ends after a short batch. Reads only.
 */
export async function* keysetBatches<R, K>(
  read: (after: K | null, limit: number) => Promise<R[]>,
  key: (row: R) => K,
  size = 1000,
): AsyncGenerator<R[]> {
  let next: Promise<R[]> | null = read(null, size);
  try {
    while (next) {
      const rows: R[] = await next;
      next = rows.length < size ? null : read(key(rows[rows.length - 1]!), size);
      // A read ahead that fails after the consumer stopped must not become an unhandled rejection.
      next?.catch(() => {});
      if (rows.length > 0) yield rows;
    }
  } finally {
    next = null;
  }
}

/** An array already in memory, as batches (small lists that keep their own queries). */
export async function* arrayBatches<R>(rows: R[], size = 1000): AsyncGenerator<R[]> {
  for (let i = 0; i < rows.length; i += size) yield rows.slice(i, i + size);
}

/**
 * Maps each batch of a batch generator; `fn` may be async, so a batch can load what its rows refer
 * to (extended metadata's actors…) in one query per batch. Batches that map to nothing are skipped.
 * Stopping the result stops the source. @returns an async generator of the mapped batches.
 */
export async function* mapBatches<R, T>(batches: AsyncGenerator<R[]>, fn: (batch: R[]) => T[] | Promise<T[]>): AsyncGenerator<T[]> {
  try {
    for await (const b of batches) {
      const out = await fn(b);
      if (out.length > 0) yield out;
    }
  } finally {
    await batches.return(undefined);
  }
}

/** Every row of a batch generator in one array (callers that need the whole list, and tests). */
export async function collectBatches<R>(batches: AsyncGenerator<R[]>): Promise<R[]> {
  const out: R[] = [];
  for await (const b of batches) out.push(...b);
  return out;
}

/**
 * A JSON array as a byte stream: `[`, each batch's elements (as `render` maps them) separated by
 * commas, `]`; one chunk per batch, pulled as the client reads. The first batch has been read by
 * the time this resolves. `serialized`: `render` gives JSON texts already (SQL-built rows), sent as
 * they are: strings, or UTF-8 bytes (Uint8Array, all of a batch's items), which are sent without
 * becoming strings (one item of a batch may hold several elements, comma-separated).
 * @throws what reading or rendering the first batch threw.
 */
export async function jsonArrayStream<R>(
  batches: AsyncGenerator<R[]>,
  render: (batch: R[]) => unknown[] | Promise<unknown[]>,
  serialized = false,
): Promise<ReadableStream<Uint8Array>> {
  /** A batch's chunks after `lead` ('[', ',' or ''); none when it renders to nothing. */
  const chunks = async (batch: R[], lead: string): Promise<Uint8Array[]> => {
    const items = await render(batch);
    if (items.length === 0) return [];
    if (serialized && items[0] instanceof Uint8Array) {
      // Bytes go out as they are (several items: copied into one chunk); the lead as a chunk of its own.
      const body = items.length === 1 ? (items[0] as Uint8Array) : commaJoined(items as Uint8Array[]);
      return lead === '' ? [body] : [encoder.encode(lead), body];
    }
    const texts = serialized ? (items as string[]) : items.map((x) => JSON.stringify(x));
    return [encoder.encode(lead + texts.join(','))];
  };
  const head = await batches.next();
  let pending: Uint8Array[] | null = head.done ? null : await chunks(head.value, '[');
  // A first batch that rendered to nothing leaves the next one first (no leading comma).
  let started = pending !== null && pending.length > 0;
  if (pending !== null && !started) pending = [encoder.encode('[')];
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (pending === null && head.done) {
        controller.enqueue(encoder.encode('[]'));
        controller.close();
        return;
      }
      // Until something is enqueued: a pull that enqueues nothing is not called again.
      while (pending === null || pending.length === 0) {
        const next = await batches.next();
        if (next.done) {
          controller.enqueue(encoder.encode(']'));
          controller.close();
          return;
        }
        pending = await chunks(next.value, started ? ',' : '');
        if (pending.length > 0) started = true;
      }
      for (const c of pending) controller.enqueue(c);
      pending = [];
    },
    async cancel() {
      await batches.return(undefined);
    },
  });
}

/**
 * A streamed JSON array response (200, `application/json; charset=utf-8`), see jsonArrayStream.
 * @throws what reading or rendering the first batch threw (rendered by the app as a Problem).
 */
export async function jsonArrayResponse<R>(
  batches: AsyncGenerator<R[]>,
  render: (batch: R[]) => unknown[] | Promise<unknown[]> = (b) => b,
  serialized = false,
): Promise<Response> {
  const body = await jsonArrayStream(batches, render, serialized);
  return new Response(body, { status: 200, headers: { 'Content-Type': 'application/json; charset=utf-8' } });
}
