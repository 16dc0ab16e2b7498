/**
 * The root CSV of an export written by PostgreSQL itself (`COPY (select …) TO STDOUT`): each
 * line is built in SQL from the stored root_text and the metadata columns, and the bytes go from
 * the database socket to the response without becoming JavaScript strings. The fast path of
 * lib/exports/index.ts for the common case: an unfiltered export of a form with one published
 * definition (or of its draft), laid out as its root leaves in order, without decryption. Any
 * other export (a `$filter`, passphrases, older versions, split columns, PGlite) takes the general
 * path; both write the same bytes (fact 3, 4 of shared/fixtures/central-outputs/README.md).
 *
 * copyCsv below is the same machinery for any select of no parameters in CSV format (entities.csv,
 * lib/entities/entity-lists.ts).
 *
 * The COPY is in binary format: a row is its one text column (the line, `\n` included) behind a
 * 6-byte frame, with no quoting or escaping to undo, and PostgreSQL skips the per-byte scan a CSV
 * COPY makes of each value. The rows are taken from the driver's stream as it delivers them
 * (views of its socket buffers, no copy) and joined once into chunks of 64 kB.
 */
import { sql, type SQL } from 'drizzle-orm';
import { actors, formDefs, submissionAttachments, submissionDefs, submissions } from '../../drizzle/schema';
import { concatBytes } from '../bytes';
import type { Ctx } from '../context';
import type { Db } from '../db/client';
import { rawRows } from '../db/raw';

/** A cell as CSV (RFC 4180 as csvLine in ./rows.ts): quoted, quotes doubled, when it holds `,` `"` CR or LF. */
const cell = (x: SQL): SQL => sql`(case when ${plain(x)} then ${x} else '"' || replace(${x}, '"', '""') || '"' end)`;

/** Whether a text needs no CSV quoting: four substring searches, several times cheaper than a regular expression. */
const plain = (x: SQL): SQL => sql`(strpos(${x}, ',') = 0 and strpos(${x}, '"') = 0 and strpos(${x}, E'\n') = 0 and strpos(${x}, E'\r') = 0)`;

/** The part of postgres.js's COPY OUT stream (a Node Readable) read here. */
interface CopyStream {
  on(event: 'data', fn: (chunk: Uint8Array) => void): unknown;
  on(event: 'end' | 'close', fn: () => void): unknown;
  on(event: 'error', fn: (err: unknown) => void): unknown;
  pause(): unknown;
  resume(): unknown;
  readonly readableEnded: boolean;
  _read(size?: number): void;
}
/** The postgres.js client under a Drizzle handle, when it can COPY to a stream (not PGlite). */
interface CopyQuery extends Promise<unknown> {
  readable(): Promise<CopyStream>;
  cancel(): void;
}
interface CopyClient {
  unsafe(query: string): CopyQuery;
  /** postgres.js ≥ 3.4: one pooled connection for this caller until `release()`. */
  reserve?(): Promise<CopyClient & { release(): void }>;
}
const copyClient = (db: Db): CopyClient | null => {
  const client = (db as unknown as { $client?: { unsafe?: unknown; options?: unknown } }).$client;
  return client && typeof client.unsafe === 'function' && client.options != null ? (client as unknown as CopyClient) : null;
};

/** What String.prototype.trim removes (ECMAScript WhiteSpace and LineTerminator), for btrim. */
const TRIMMED = '\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff';

/** Bytes per chunk handed on (PostgreSQL sends one message per row). */
const CHUNK = 64 * 1024;

export interface CopyTarget {
  formId: number;
  draft: boolean;
  /** The exported definition; every row must be a version of it (the caller knows: no other published one). */
  defId: number;
  /** How many field columns the table has (the definition's root leaves). */
  columns: number;
  /** Whether the definition has binary fields (else its versions expect no files). */
  binary: boolean;
}

/**
 * The root table's rows as CSV bytes, newest first (createdAt, id descending), after `head` (the
 * header line) when given, or null when this export cannot take the COPY path (not postgres.js,
 * or inside a transaction).
 * Encrypted rows are written as the general path writes them without passphrases (metadata,
 * `not decrypted` or `missing encrypted form data`). The generator stops
 * the COPY when it is returned early (the client went away).
 */
export async function copyRootRows(ctx: Ctx, t: CopyTarget, head?: Uint8Array): Promise<AsyncGenerator<Uint8Array> | null> {
  // Only where the driver's COPY stream is known to work (Node sockets; not Workers' shim).
  const client = ctx.tx || !ctx.copyToStream ? null : copyClient(ctx.db);
  if (!client) return null;
  const d = submissionDefs;
  const s = submissions;
  // Every value inlined is a number or a boolean (COPY takes no parameters).
  // An encrypted row (never decrypted here): empty fields and Central's status words, as
  // encryptionStatus in lib/submissions/rows.ts (the file name trimmed of what String.trim removes).
  const encryptedFile = sql`btrim(${d.rootValues} ->> '/encryptedXmlFile', ${sql.raw(`'${TRIMMED}'`)})`;
  const status = sql`case when not ${d.encrypted} then ''
    when exists (select 1 from ${submissionAttachments} a where a.submission_def_id = ${d.id} and a.blob_id is not null and a.name = ${encryptedFile})
    then 'not decrypted' else 'missing encrypted form data' end`;
  const fields = t.columns === 0 ? null : sql`case when ${d.encrypted} then ${sql.raw(`'${','.repeat(Math.max(0, Math.trunc(t.columns) - 1))}'`)}
    when ${plain(sql`${d.rootText}`)} then replace(${d.rootText}, E'\\x1f', ',')
    else (select string_agg(case when c ~ '[",\r\n]' then '"' || replace(c, '"', '""') || '"' else c end, ',' order by n)
      from unnest(string_to_array(${d.rootText}, E'\\x1f')) with ordinality as t(c, n) where n <= ${sql.raw(String(Math.trunc(t.columns)))}) end`;
  const line = sql.join([
    sql`to_char(${s.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
    ...(fields ? [fields] : []),
    cell(sql`${s.instanceId}`),
    sql`coalesce(${s.submitterId}::text, '')`,
    cell(sql`coalesce(${actors.displayName}, '')`),
    // A plain version of a definition without binary fields expects no file: no lookups.
    ...(t.binary
      ? [sql`att.received::text`, sql`att.expected::text`]
      : [
        sql`case when ${d.encrypted} then (select count(*) from ${submissionAttachments} a where a.submission_def_id = ${d.id} and a.blob_id is not null)::text else '0' end`,
        sql`case when ${d.encrypted} then (select count(*) from ${submissionAttachments} a where a.submission_def_id = ${d.id})::text else '0' end`,
      ]),
    status,
    cell(sql`coalesce(${s.reviewState}, '')`),
    cell(sql`coalesce(${s.deviceId}, '')`),
    // Only an edit (ingest.ts addVersion) adds a version, and it sets updated_at: never updated, never edited.
    sql`case when ${s.updatedAt} is null then '0' else ((select count(*) from ${submissionDefs} d2 where d2.submission_id = ${s.id}) - 1)::text end`,
    cell(sql`${formDefs.version}`),
  ], sql`, `);
  const query = sql`copy (
    select concat_ws(',', ${line}) || E'\\n'
    from ${s}
    -- A version per submission row (no flattening): the plan streams rows in index order from the
    -- first one instead of joining and sorting the whole form first (first byte after seconds).
    cross join lateral (select * from ${d} where ${d.id} = ${s.currentDefId} offset 0) as ${d}
    join ${formDefs} on ${formDefs.id} = ${d.formDefId}
    left join ${actors} on ${actors.id} = ${s.submitterId}
    ${t.binary ? sql`left join lateral (select count(*) as expected, count(a.blob_id) as received from ${submissionAttachments} a
      where a.submission_def_id = ${d.id}) att on true` : sql``}
    where ${s.formId} = ${sql.raw(String(Math.trunc(t.formId)))} and ${s.draft} = ${sql.raw(t.draft ? 'true' : 'false')} and ${s.deletedAt} is null
    order by ${s.createdAt} desc, ${s.id} desc
  ) to stdout with (format binary)`;
  return runCopy(client, inlineQuery(ctx.db, query), ['jit'], new BinaryCopyText(), head);
}

/** Takes a COPY's bytes apart: each piece of output bytes goes to `take`; `finish` checks the stream's end. */
interface CopyFrames {
  feed(chunk: Uint8Array, take: (part: Uint8Array) => void): void;
  finish(): void;
}

/** A text or CSV COPY: the stream's bytes are the output as they are. */
const RAW: CopyFrames = { feed: (chunk, take) => take(chunk), finish: () => {} };

/**
 * Runs a COPY on a connection of its own (when the driver can reserve one) with the settings named
 * in `off` turned off for its length (`jit`: compiling the plan's expressions cost 0.7–0.9 s before
 * the first row, and more than it saved, on 100,000 rows; `max_parallel_workers_per_gather`: a
 * streamed export gains nothing from workers on a busy box), and hands on its output in chunks.
 */
async function runCopy(client: CopyClient, text: string, off: Array<'jit' | 'max_parallel_workers_per_gather'>, frames: CopyFrames, head?: Uint8Array): Promise<AsyncGenerator<Uint8Array>> {
  const conn = client.reserve ? await client.reserve() : null;
  const done = async () => {
    if (!conn) return;
    for (const name of off) await conn.unsafe(`reset ${name}`).catch(() => {});
    conn.release();
  };
  let stream: CopyStream;
  let copy: CopyQuery;
  try {
    if (conn) for (const name of off) await conn.unsafe(name === 'jit' ? 'set jit = off' : `set ${name} = 0`).catch(() => {});
    copy = (conn ?? client).unsafe(text);
    copy.catch(() => {}); // a cancelled COPY rejects; its stream carries any error that matters
    stream = await copy.readable();
  } catch (err) {
    await done();
    throw err;
  }
  return copiedLines(stream, copy, done, frames, head);
}

/**
 * The bytes of `copy (<select>) to stdout with (format csv)`, PostgreSQL's own CSV writer, after
 * `head` when given; or null when the COPY path cannot be taken (not postgres.js, inside a
 * transaction, or `select` has parameters: COPY takes none, so every value must be inlined).
 * PostgreSQL quotes a value, doubling its quotes, when it holds `,` `"` CR or LF, as csvLine in
 * ./rows.ts does; but it writes an empty string as `""` and NULL as nothing, so a select whose
 * output must match csvLine gives NULL for ''. Lines end in LF. The settings in `off` are turned
 * off for the COPY (see runCopy). Side effects: holds a pooled connection of its own until the
 * generator ends; returned early, it stops the COPY.
 */
export async function copyCsv(ctx: Ctx, select: SQL, off: Array<'jit' | 'max_parallel_workers_per_gather'>, head?: Uint8Array): Promise<AsyncGenerator<Uint8Array> | null> {
  const client = ctx.tx || !ctx.copyToStream ? null : copyClient(ctx.db);
  if (!client) return null;
  const dialect = (ctx.db as unknown as { dialect: { sqlToQuery(q: SQL): { sql: string; params: unknown[] } } }).dialect;
  const { sql: text, params } = dialect.sqlToQuery(sql`copy (${select}) to stdout with (format csv)`);
  if (params.length > 0) return null;
  return runCopy(client, text, off, RAW, head);
}

/**
 * The output of a COPY stream (taken apart by `frames`) in chunks of about CHUNK bytes. The stream is read in flowing
 * mode, each row a view of the driver's buffers, and paused while a full chunk waits for its
 * reader (postgres.js then pauses the socket: PostgreSQL waits, memory stays at a chunk or two).
 * Returned early (the client went away), it cancels the COPY and reads what is still in flight,
 * so the connection goes back to the pool usable.
 */
async function* copiedLines(stream: CopyStream, copy: CopyQuery, done: () => Promise<void>, frames: CopyFrames, head?: Uint8Array): AsyncGenerator<Uint8Array> {
  let parts: Uint8Array[] = [];
  let size = 0;
  let ended = false;
  let failure: unknown = null;
  let wake: (() => void) | null = null;
  /** After an early return: rows still in flight are read and dropped. */
  let discarding = false;
  const take = (part: Uint8Array) => {
    parts.push(part);
    size += part.byteLength;
  };
  const wakeUp = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  stream.on('data', (chunk) => {
    if (discarding || failure != null) return;
    try {
      frames.feed(chunk, take);
    } catch (err) {
      failure = err;
    }
    if (size >= CHUNK || failure != null) {
      stream.pause();
      wakeUp();
    }
  });
  stream.on('end', () => {
    ended = true;
    wakeUp();
  });
  stream.on('close', () => {
    ended = true;
    wakeUp();
  });
  stream.on('error', (err) => {
    failure ??= err;
    wakeUp();
  });
  stream.pause();
  let finished = false;
  try {
    // Inside the try: a reader that stops after the header still ends the COPY (finally, below).
    if (head) yield head;
    for (;;) {
      while (size < CHUNK && !ended && failure == null) {
        const woken = new Promise<void>((resolve) => { wake = resolve; });
        stream.resume();
        await woken;
      }
      if (failure != null) throw failure;
      if (size > 0) {
        const out = concatBytes(parts, size);
        parts = [];
        size = 0;
        yield out;
      }
      if (ended && size === 0) break;
    }
    frames.finish();
    finished = true;
  } finally {
    if (!finished) {
      // The reader went away (or the stream failed): stop the COPY (the server answers the cancel
      // with an error) and let the rest drain, so the connection goes back to the pool usable.
      copy.cancel();
      parts = [];
      discarding = true;
      if (!ended) {
        const drained = new Promise<void>((resolve) => { wake = resolve; });
        stream.resume();
        await drained;
      }
    }
    // postgres.js pauses the connection's socket when a row does not fit the stream's buffer and
    // resumes it only when the stream is read again; a pause on the last rows is never undone, and
    // the pooled connection then hangs. Reading the stream's source once more resumes it.
    stream._read();
    await done();
  }
}

/** PGCOPY\n\377\r\n\0, then 32-bit flags and header-extension length (PostgreSQL's binary COPY header). */
const SIGNATURE = [0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00];
const HEADER = 19;

/**
 * Takes PostgreSQL's binary COPY format apart, for a query of one text column: a header, then per
 * row a 16-bit field count (1) and the value as a 32-bit length and its bytes, then a count of -1.
 * Bytes may arrive split anywhere; each value is handed on as views of the input (no copy). The
 * common case, a chunk that is one whole row, costs two reads and a view. Exported for its tests.
 */
export class BinaryCopyText {
  /** Framing bytes gathered across chunk boundaries. */
  private readonly frame = new Uint8Array(HEADER);
  private have = 0;
  /** What the next bytes are: header, header extension, row frame (count + length), value bytes, after the trailer. */
  private phase: 'header' | 'extension' | 'row' | 'value' | 'trailer' = 'header';
  private remaining = 0;

  /**
   * @param chunk the next bytes of the stream.
   * @param take receives each piece of value bytes, in order.
   * @throws Error when the bytes are not a binary COPY of one column.
   */
  feed(chunk: Uint8Array, take: (part: Uint8Array) => void): void {
    let at = 0;
    const n = chunk.byteLength;
    while (at < n) {
      if (this.phase === 'value') {
        const end = Math.min(n, at + this.remaining);
        take(at === 0 && end === n ? chunk : chunk.subarray(at, end));
        this.remaining -= end - at;
        at = end;
        if (this.remaining === 0) this.phase = 'row';
        continue;
      }
      if (this.phase === 'extension') {
        const skip = Math.min(n - at, this.remaining);
        at += skip;
        this.remaining -= skip;
        if (this.remaining === 0) this.phase = 'row';
        continue;
      }
      if (this.phase === 'trailer') throw new Error('binary COPY: bytes after the trailer');
      if (this.phase === 'row' && this.have === 0 && n - at >= 6) {
        // A whole row frame in this chunk (nearly always: one message per row).
        const fields = (chunk[at]! << 8) | chunk[at + 1]!;
        if (fields === 0xffff) {
          this.phase = 'trailer';
          at += 2;
          continue;
        }
        if (fields !== 1) throw new Error(`binary COPY: ${fields} fields, expected 1`);
        this.value(((chunk[at + 2]! << 24) | (chunk[at + 3]! << 16) | (chunk[at + 4]! << 8) | chunk[at + 5]!) >>> 0);
        at += 6;
        continue;
      }
      // Framing bytes split across chunks: gather them.
      const want = this.phase === 'header' ? HEADER : this.have >= 2 ? 6 : 2;
      const k = Math.min(n - at, want - this.have);
      this.frame.set(chunk.subarray(at, at + k), this.have);
      this.have += k;
      at += k;
      if (this.have < want) continue;
      const f = this.frame;
      if (this.phase === 'header') {
        if (SIGNATURE.some((b, i) => f[i] !== b)) throw new Error('binary COPY: bad signature');
        this.have = 0;
        this.remaining = ((f[15]! << 24) | (f[16]! << 16) | (f[17]! << 8) | f[18]!) >>> 0;
        this.phase = this.remaining > 0 ? 'extension' : 'row';
      } else if (want === 2) {
        const fields = (f[0]! << 8) | f[1]!;
        if (fields === 0xffff) {
          this.have = 0;
          this.phase = 'trailer';
        } else if (fields !== 1) throw new Error(`binary COPY: ${fields} fields, expected 1`);
      } else {
        this.have = 0;
        this.value(((f[2]! << 24) | (f[3]! << 16) | (f[4]! << 8) | f[5]!) >>> 0);
      }
    }
  }

  /** A value of `length` bytes follows (0xffffffff: NULL, none). */
  private value(length: number): void {
    if (length === 0xffffffff || length === 0) {
      this.phase = 'row';
      return;
    }
    this.remaining = length;
    this.phase = 'value';
  }

  /** @throws Error when the stream ended before its trailer. */
  finish(): void {
    if (this.phase !== 'trailer') throw new Error('binary COPY: the stream ended early');
  }
}

/** The SQL text of a query with no parameters (every value above is inlined). @throws if it has any. */
function inlineQuery(db: Db, query: SQL): string {
  const dialect = (db as unknown as { dialect: { sqlToQuery(q: SQL): { sql: string; params: unknown[] } } }).dialect;
  const { sql: text, params } = dialect.sqlToQuery(query);
  if (params.length > 0) throw new Error('a COPY query cannot take parameters');
  return text;
}
