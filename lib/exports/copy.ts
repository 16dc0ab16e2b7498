/**
 * The root CSV of an export written by PostgreSQL itself (`COPY (select …) TO STDOUT`): each
 * line is built in SQL from the stored root_text and the metadata columns, and the bytes go from
 * the database socket to the response without becoming JavaScript strings. The fast path of
 * lib/exports/index.ts for the common case: an unfiltered export of a form with one published
 * definition (or of its draft), laid out as its root leaves in order, without decryption. Any
 * other export (a `$filter`, passphrases, older versions, split columns, PGlite) takes the general
 * path; both write the same bytes (fact 3, 4 of shared/fixtures/central-outputs/README.md).
 *
 * The line is one column of a COPY in CSV format whose quote and delimiter are U+0001 and U+0002:
 * characters XML 1.0 cannot carry, so no stored text holds them. PostgreSQL quotes a value only
 * when it holds the quote, the delimiter, CR or LF: here, only lines with a CR or LF inside a
 * (CSV-quoted) cell, which it wraps in U+0001. Removing every U+0001 byte gives the line back.
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

/** The postgres.js client under a Drizzle handle, when it can COPY to a stream (not PGlite). */
interface CopyQuery extends Promise<unknown> {
  readable(): Promise<{ iterator(o: { destroyOnReturn: boolean }): AsyncIterableIterator<Uint8Array>; _read(size?: number): void }>;
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
 * The root table's rows (no header) as CSV bytes, newest first (createdAt, id descending), or
 * null when this export cannot take the COPY path (not postgres.js, or inside a transaction).
 * Encrypted rows are written as the general path writes them without passphrases (metadata,
 * `not decrypted` or `missing encrypted form data`). The generator stops
 * the COPY when it is returned early (the client went away).
 */
export async function copyRootRows(ctx: Ctx, t: CopyTarget): Promise<AsyncGenerator<Uint8Array> | null> {
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
    select concat_ws(',', ${line})
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
  ) to stdout with (format csv, quote e'\\x01', delimiter e'\\x02')`;
  const text = inlineQuery(ctx.db, query);
  // On a connection of its own, without JIT: compiling this plan's expressions cost 0.7–0.9 s
  // before the first row (and more than it saved) on the bench's 100,000 rows.
  const conn = client.reserve ? await client.reserve() : null;
  const done = async () => {
    if (!conn) return;
    await conn.unsafe('reset jit').catch(() => {});
    conn.release();
  };
  let stream: Awaited<ReturnType<CopyQuery['readable']>>;
  let copy: CopyQuery;
  try {
    if (conn) await conn.unsafe('set jit = off').catch(() => {});
    copy = (conn ?? client).unsafe(text);
    copy.catch(() => {}); // a cancelled COPY rejects; its stream carries any error that matters
    stream = await copy.readable();
  } catch (err) {
    await done();
    throw err;
  }
  // postgres.js pauses the connection's socket when a row does not fit the stream's buffer and
  // resumes it only when the stream is read again; a pause on the last rows is never undone, and
  // the pooled connection then hangs. Reading the stream's source once more resumes it.
  const release = () => stream._read();
  return (async function* () {
    let parts: Uint8Array[] = [];
    let size = 0;
    const flush = (): Uint8Array => {
      const out = concatBytes(parts, size);
      parts = [];
      size = 0;
      return stripQuotes(out);
    };
    let finished = false;
    try {
      // Not destroyed when the loop is left early: the rest of the COPY must still be read (below).
      for await (const chunk of stream.iterator({ destroyOnReturn: false })) {
        parts.push(chunk);
        size += chunk.byteLength;
        if (size >= CHUNK) yield flush();
      }
      finished = true;
      if (size > 0) yield flush();
    } finally {
      if (!finished) {
        // The reader went away: stop the COPY (the server answers the cancel with an error) and
        // read what is still in flight, so the connection goes back to the pool usable.
        copy.cancel();
        try {
          for await (const _ of stream.iterator({ destroyOnReturn: false })) { /* discarded */ }
        } catch { /* the cancel's error */ }
      }
      release();
      await done();
    }
  })();
}

/** The SQL text of a query with no parameters (every value above is inlined). @throws if it has any. */
function inlineQuery(db: Db, query: SQL): string {
  const dialect = (db as unknown as { dialect: { sqlToQuery(q: SQL): { sql: string; params: unknown[] } } }).dialect;
  const { sql: text, params } = dialect.sqlToQuery(query);
  if (params.length > 0) throw new Error('a COPY query cannot take parameters');
  return text;
}

/** Removes the U+0001 quote bytes COPY put around lines with a CR or LF inside a cell (see above). */
function stripQuotes(bytes: Uint8Array): Uint8Array {
  let at = bytes.indexOf(1);
  if (at < 0) return bytes;
  const out = new Uint8Array(bytes.byteLength);
  let n = 0;
  let from = 0;
  while (at >= 0) {
    out.set(bytes.subarray(from, at), n);
    n += at - from;
    from = at + 1;
    at = bytes.indexOf(1, from);
  }
  out.set(bytes.subarray(from), n);
  n += bytes.byteLength - from;
  return out.subarray(0, n);
}
