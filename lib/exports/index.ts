/**
 * CSV and ZIP exports of a form's submissions (spec: Submissions (REST) CSV export rows and query
 * parameters; central-api.yaml `submissions.csv.zip` / `submissions.csv`; the layout facts in
 * shared/fixtures/central-outputs/README.md). The layout is the contract: file names, column
 * names and order, metadata columns and value formats are Central's.
 *
 * Streaming (DESIGN rule 5): rows are read in keyset-ordered batches outside any transaction, CSV
 * text and ZIP entries are produced as the client reads (a ReadableStream pulled on demand), and
 * blobs are streamed from the store. Memory is bounded by one batch; a client that disconnects
 * cancels the stream, which stops the reads.
 */
import { and, asc, desc, eq, inArray, isNotNull, isNull, ne, sql, type SQL } from 'drizzle-orm';
import { blobs, formDefs, submissionAttachments, submissionDefs, submissions } from '../../drizzle/schema';
import { primed } from './primed';
import { encryptionStatus, selectSubmissionRows, type SubmissionDataRow } from '../submissions/rows';
import { ROOT_TEXT_SEPARATOR, rootLeafPaths } from '../xforms/parse-submission';
import { pullStream } from '../bytes';
import type { Ctx } from '../context';
import { canOnFormOrReject, getDefOrNotFound, getFormOrNotFound } from '../forms/queries';
import { compileODataFilter, type FilterField } from './filter';
import { csvLine, repeatRows } from './rows';
import { cell, exportTables, selectTokens, type ExportOptions, type ExportTable } from './tables';
import { zipStream, type ZipEntry } from './zip';
import { copyRootRows, type CopyTarget } from './copy';
import { mediaEntryName } from './media-name';
import { loadDecryptor, type Decryptor } from '../encryption/decryptor';
import { blobChunks, decryptedChunks, decryptValues, envelopesFor } from './decrypt';
import { rootCells } from './rows';
import { CLIENT_AUDIT_ENC, clientAuditCsv, isClientAuditSql } from './client-audits';
import type { FormField, SubmissionValue } from '../xforms/types';
import { audit } from '../audits/log';

export interface ExportQuery extends ExportOptions {
  /** OData `$filter` (Central's subset on `__id` and `__system/…`). */
  filter?: string | null;
  /** ZIP only: false leaves the media out (and names the file `<xmlFormId>.csv.zip`). */
  attachments: boolean;
  /**
   * `{keyId}={passphrase}` pairs (query string or POST body): rows under those managed keys are
   * decrypted; a wrong passphrase fails the request before any byte (400.12).
   */
  passphrases?: Record<string, string>;
}

export interface ExportFile {
  fileName: string;
  contentType: string;
  stream: ReadableStream<Uint8Array>;
}

/** Rows per database round trip: bounds memory (≈ one batch of values) and keeps latency low. */
const BATCH = 250;

const META_COLUMNS = ['KEY', 'SubmitterID', 'SubmitterName', 'AttachmentsPresent', 'AttachmentsExpected', 'Status', 'ReviewState', 'DeviceID', 'Edits', 'FormVersion'];

/**
 * The `$filter` fields Central allows on submissions (central-problem-codes.md 501.5), for exports
 * and OData (which adds form fields). Reads only the `submissions` columns.
 */
export function systemFilterField(path: string): FilterField | null {
  switch (path) {
    case '__id': return { sql: sql`${submissions.instanceId}`, type: 'text' };
    case '__system/submissionDate': return { sql: sql`${submissions.createdAt}`, type: 'time' };
    case '__system/updatedAt': return { sql: sql`${submissions.updatedAt}`, type: 'time' };
    case '__system/submitterId': return { sql: sql`${submissions.submitterId}`, type: 'number' };
    case '__system/reviewState': return { sql: sql`${submissions.reviewState}`, type: 'text' };
    case '__system/deletedAt': return { sql: sql`${submissions.deletedAt}`, type: 'time' };
    default: return null;
  }
}

interface Plan {
  where: SQL;
  tables: ExportTable[];
  /** The exported definition (the rows written without rearranging are those of this one). */
  defId: number;
  /** Root leaf paths (rootLeafPaths) of every definition rows may come from, by id. */
  rootPaths: Map<number, string[]>;
  /** Fields of every definition rows may come from, by id (to parse decrypted submissions). */
  fieldsOf: Map<number, FormField[]>;
  /** The managed keys this request unlocked (Decryptor.none without passphrases). */
  decryptor: Decryptor;
  /** What the COPY fast path of the root table needs (./copy.ts); null with a `$filter` or decryption. */
  copy: Omit<CopyTarget, 'columns'> | null;
}

/**
 * The values of the page's encrypted rows that this request can decrypt (their XML file received,
 * their managed key unlocked), by submission def id; empty without passphrases.
 */
async function decryptPage(ctx: Ctx, plan: Plan, page: BatchRow[]): Promise<Map<number, SubmissionValue[]>> {
  if (!plan.decryptor.active) return new Map();
  const rows = page.filter((r) => r.encrypted && encryptionStatus(r) === 'notDecrypted');
  if (rows.length === 0) return new Map();
  const envelopes = await envelopesFor(ctx, plan.decryptor, rows.map((r) => r.defId));
  return decryptValues(ctx, envelopes, new Map(rows.map((r) => [r.defId, r.formDefId])), (id) => plan.fieldsOf.get(id));
}

type BatchRow = SubmissionDataRow;

/**
 * The exported submissions in batches (keyset paging: no cursor, no open transaction): newest
 * first (the CSV rows, fact 4), or oldest first (`asc`: the media entries, in the order Central's
 * capture has them, central-outputs/binaryType requests.json).
 */
async function* batches(ctx: Ctx, where: SQL, order: 'desc' | 'asc', read: { rootOnly?: boolean; rootText?: boolean }): AsyncGenerator<BatchRow[]> {
  const fetchPage = (after: { createdAt: string; id: number } | null) => selectSubmissionRows(ctx, {
    where: after ? and(where, order === 'desc'
      ? sql`(${submissions.createdAt}, ${submissions.id}) < (${after.createdAt}::timestamptz, ${after.id})`
      : sql`(${submissions.createdAt}, ${submissions.id}) > (${after.createdAt}::timestamptz, ${after.id})`)! : where,
    orderBy: order === 'desc' ? [desc(submissions.createdAt), desc(submissions.id)] : [asc(submissions.createdAt), asc(submissions.id)],
    limit: BATCH,
    ...read,
  });
  let next: Promise<BatchRow[]> | null = fetchPage(null);
  try {
    while (next) {
      const page: BatchRow[] = await next;
      next = null;
      if (page.length === 0) return;
      if (page.length === BATCH) {
        // Read the next batch while this one is formatted: the database and the formatting then
        // use both cores instead of taking turns.
        const last = page[page.length - 1]!;
        next = fetchPage({ createdAt: last.createdAt.toISOString(), id: last.id });
      }
      yield page;
    }
  } finally {
    // A reader that went away leaves a read in flight: let it finish quietly.
    next?.catch(() => {});
  }
}

const encoder = new TextEncoder();

/** Status of an encrypted row in the CSV (fact 3): Central's words for it. */
const encryptedStatus = (row: BatchRow): string =>
  (encryptionStatus(row) === 'notDecrypted' ? 'not decrypted' : 'missing encrypted form data');

/**
 * The CSV text of one table, one chunk per batch; the header travels with the first batch, so
 * reading the first chunk runs the first query (lib/http/primed).
 */
async function* tableCsv(ctx: Ctx, plan: Plan, table: ExportTable): AsyncGenerator<Uint8Array> {
  const root = table.repeatPath == null;
  const header = root ? ['SubmissionDate', ...table.columns.map((c) => c.header), ...META_COLUMNS] : [...table.columns.map((c) => c.header), 'PARENT_KEY', 'KEY'];
  let pending = csvLine(header);
  // The root table reads each version's stored root_text (its definition's root leaf texts, in
  // order); a repeat table needs every value.
  const columnsOf = new Map<number, number[]>();
  const indexFor = (defId: number): number[] => {
    let index = columnsOf.get(defId);
    if (!index) {
      const at = new Map((plan.rootPaths.get(defId) ?? []).map((p, i) => [p, i]));
      index = table.columns.map((c) => at.get(c.path) ?? -1);
      columnsOf.set(defId, index);
    }
    return index;
  };
  // Rows of the exported definition whose columns are its root leaves, in order, unsplit: copied.
  const direct = root && table.columns.length === (plan.rootPaths.get(plan.defId) ?? []).length
    && indexFor(plan.defId).every((x, i) => x === i && table.columns[i]!.part == null);
  const empty = table.columns.map(() => '').join(',');
  if (direct && plan.copy) {
    // The common export: PostgreSQL writes the rows (./copy.ts); the general path below otherwise,
    // or when the COPY cannot start (it fails before any byte is sent).
    const copied = await copyRootRows(ctx, { ...plan.copy, columns: table.columns.length }, encoder.encode(pending))
      .catch((err: unknown) => { ctx.log.warn('COPY export path failed; using the general one', { err, requestId: ctx.requestId }); return null; });
    if (copied) {
      yield* copied;
      return;
    }
  }
  for await (const page of batches(ctx, plan.where, 'desc', root ? { rootText: true } : {})) {
    let text = pending;
    pending = '';
    const decrypted = await decryptPage(ctx, plan, page);
    const outside = root ? await valuesOutsideDef(ctx, page, indexFor) : new Map<number, Record<string, string>>();
    for (const row of page) {
      const plain = row.encrypted ? decrypted.get(row.defId) : undefined;
      if (!root) {
        // Encrypted rows have no readable data unless decrypted, so no repeat rows.
        if (!row.encrypted || plain) for (const cells of repeatRows(table, plain ?? row.values, row.instanceId)) text += csvLine(cells);
        continue;
      }
      const raw = row.cells!;
      let fields: string;
      if (plain) fields = csvLine(rootCells(table, plain)).slice(0, -1);
      else if (row.encrypted) fields = empty;
      else if (direct && row.formDefId === plan.defId && !/[",\r\n]/.test(raw)) fields = raw.replaceAll(ROOT_TEXT_SEPARATOR, ',');
      else {
        const cells = raw.split(ROOT_TEXT_SEPARATOR);
        const index = indexFor(row.formDefId);
        const extra = outside.get(row.defId);
        fields = csvLine(table.columns.map((c, i) => cell(c, index[i]! < 0 ? extra?.[c.path] : cells[index[i]!]))).slice(0, -1);
      }
      const status = row.encrypted && !plain ? encryptedStatus(row) : '';
      const tail = csvLine([
        row.instanceId, row.submitterId == null ? '' : String(row.submitterId),
        row.submitterName ?? '', String(row.received.length), String(row.expected), status,
        row.reviewState ?? '', row.deviceId ?? '', String(row.edits), row.formVersion,
      ]);
      text += table.columns.length === 0 ? `${row.createdAt.toISOString()},${tail}` : `${row.createdAt.toISOString()},${fields},${tail}`;
    }
    if (text !== '') yield encoder.encode(text);
  }
  if (pending !== '') yield encoder.encode(pending);
}

/**
 * The root values of the page's plain versions whose form definition lacks some of the table's
 * columns (a field another version added or dropped, `deletedFields`), by submission def id: as
 * Central reads every column from the submission's XML, a value the XML holds is exported even
 * when the version's own definition does not declare it. One query for the page, only when such
 * rows exist; their stored root_values (path → text, every leaf outside repeats) hold it.
 */
async function valuesOutsideDef(ctx: Ctx, page: BatchRow[], indexFor: (defId: number) => number[]): Promise<Map<number, Record<string, string>>> {
  const ids = page.filter((r) => !r.encrypted && indexFor(r.formDefId).includes(-1)).map((r) => r.defId);
  if (ids.length === 0) return new Map();
  const rows = await ctx.db.select({ id: submissionDefs.id, root: submissionDefs.rootValues }).from(submissionDefs).where(inArray(submissionDefs.id, ids));
  return new Map(rows.map((r) => [r.id, (r.root ?? {}) as Record<string, string>]));
}

/**
 * The received media of the exported (readable) submissions: oldest submission first (unlike the
 * CSV rows; Central's capture has them so), each submission's files by name.
 */
async function* mediaEntries(ctx: Ctx, plan: Plan): AsyncGenerator<ZipEntry> {
  for await (const page of batches(ctx, plan.where, 'asc', { rootText: true })) {
    // Encrypted rows give their media only when this request unlocked their key: decrypted, with
    // `.enc` dropped from the name; never the encrypted XML itself, nor the client audit log
    // (which goes to the audit CSV), as Central's export.
    const sealed = plan.decryptor.active ? page.filter((r) => r.encrypted && r.received.length > 0) : [];
    const envelopes = await envelopesFor(ctx, plan.decryptor, sealed.map((r) => r.defId));
    const defIds = page.filter((r) => (r.encrypted ? envelopes.has(r.defId) : r.received.length > 0)).map((r) => r.defId);
    if (defIds.length === 0) continue;
    // Client audit files go to the audit CSV, never to media/ (Central).
    const files = await ctx.db
      .select({ defId: submissionAttachments.submissionDefId, name: submissionAttachments.name, sha: blobs.sha })
      .from(submissionAttachments)
      .innerJoin(blobs, eq(blobs.id, submissionAttachments.blobId))
      .innerJoin(submissionDefs, eq(submissionDefs.id, submissionAttachments.submissionDefId))
      .where(and(inArray(submissionAttachments.submissionDefId, defIds), sql`${isClientAuditSql()} is not true`));
    const byDef = new Map<number, Array<{ name: string; sha: string }>>();
    for (const f of files) byDef.set(f.defId, [...(byDef.get(f.defId) ?? []), f]);
    for (const defId of defIds) {
      const envelope = envelopes.get(defId);
      for (const f of (byDef.get(defId) ?? []).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
        if (!envelope) {
          const entry = mediaEntryName(f.name);
          if (entry) yield { name: entry, level: 1, data: blobChunks(ctx, f.sha) };
          continue;
        }
        const index = envelope.mediaFiles.indexOf(f.name);
        if (index < 0 || f.name === envelope.xmlFile || f.name === CLIENT_AUDIT_ENC || !envelope.open) continue;
        const entry = mediaEntryName(f.name.replace(/\.enc$/, ''));
        if (entry) yield { name: entry, level: 1, data: decryptedChunks(ctx, f.sha, envelope.open(index)) };
      }
    }
  }
}

/**
 * Loads the form, checks rights and lays out the export (everything that can fail with a Problem
 * happens here, before the first byte is sent).
 */
async function planExport(ctx: Ctx, projectId: number, xmlFormId: string, draft: boolean, query: ExportQuery) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.read', f);
  const def = await getDefOrNotFound(ctx, draft ? f.form.draftDefId : f.form.currentDefId);
  const olderDefs = draft
    ? []
    : await ctx.db.select({ id: formDefs.id, fields: formDefs.fields }).from(formDefs)
      .where(and(eq(formDefs.formId, f.form.id), isNotNull(formDefs.publishedAt), ne(formDefs.id, def.id)))
      .orderBy(desc(formDefs.publishedAt), desc(formDefs.id));
  const older = olderDefs.map((d) => d.fields);
  const rootPaths = new Map([[def.id, rootLeafPaths(def.fields)], ...olderDefs.map((d) => [d.id, rootLeafPaths(d.fields)] as const)]);
  const fieldsOf = new Map([[def.id, def.fields], ...olderDefs.map((d) => [d.id, d.fields] as const)]);
  // A wrong passphrase fails here, before any byte is sent (spec: export passphrase rules).
  const decryptor = await loadDecryptor(ctx, query.passphrases);
  const conditions: SQL[] = [eq(submissions.formId, f.form.id), eq(submissions.draft, draft), isNull(submissions.deletedAt)];
  if (query.filter != null && query.filter !== '') conditions.push(compileODataFilter(query.filter, systemFilterField));
  const where = and(...conditions)!;
  const selectOptions = new Map<string, string[]>();
  if (query.splitSelectMultiples) {
    const paths = [...def.fields, ...older.flat()].filter((x) => x.selectMultiple).map((x) => x.path);
    if (paths.length > 0) {
      // The options come from the data (fact 10): one pass over the exported rows' stored values.
      const rows = await ctx.db
        .selectDistinct({ path: sql<string>`v->>'path'`, value: sql<string>`v->>'value'` })
        .from(submissions)
        .innerJoin(submissionDefs, eq(submissionDefs.id, submissions.currentDefId))
        .innerJoin(sql`jsonb_array_elements(${submissionDefs.values}) as v`, sql`true`)
        .where(and(where, eq(submissionDefs.encrypted, false), inArray(sql`v->>'path'`, paths)));
      const seen = new Map<string, Set<string>>();
      for (const r of rows) for (const t of selectTokens(r.value ?? '')) seen.set(r.path, (seen.get(r.path) ?? new Set()).add(t));
      for (const [path, options] of seen) selectOptions.set(path, [...options].sort());
    }
  }
  // Central logs each live export (not a draft's) once it can start: `form.submission.export`, no details.
  if (!draft) await audit(ctx, ctx, 'form.submission.export', f.form.acteeId, null);
  // The COPY path needs every row to be of `def`: true without another published definition
  // (live submissions are of published ones; draft ones of the current draft).
  const copy = conditions.length === 3 && !decryptor.active && (draft || olderDefs.length === 0) ? { formId: f.form.id, draft, defId: def.id, binary: def.fields.some((x) => x.binary === true) } : null;
  return { form: f.form, plan: { where, tables: exportTables(f.form.xmlFormId, def.fields, older, query, selectOptions), defId: def.id, rootPaths, fieldsOf, decryptor, copy } };
}

/**
 * The root table as CSV (GET/POST F/submissions.csv, also draft): `text/csv; charset=utf-8`,
 * `<xmlFormId>.csv`, no repeats, no media.
 * @returns the file name, content type and a stream that reads as the client consumes it.
 * @throws 404.1 unknown form (or no draft / no published version); 401.2/403.1 without
 *   submission.read; 400.18/501.4/501.5 a bad `$filter`; 400.12 a wrong passphrase. Effects: audit
 *   `form.submission.export` (no details) for a published form's export, none for a draft's (Central).
 */
export async function exportCsv(ctx: Ctx, projectId: number, xmlFormId: string, draft: boolean, query: ExportQuery): Promise<ExportFile> {
  const { form, plan } = await planExport(ctx, projectId, xmlFormId, draft, query);
  return { fileName: `${form.xmlFormId}.csv`, contentType: 'text/csv; charset=utf-8', stream: await primed(pullStream(tableCsv(ctx, plan, plan.tables[0]!))) };
}

/**
 * The ZIP export (GET/POST F/submissions.csv.zip, also draft): the root CSV, one CSV per repeat
 * in form order, then `media/<name>` for every received file of each exported submission (unless
 * `attachments` is false). Named `<xmlFormId>.zip`, or `<xmlFormId>.csv.zip` without media (fact 8).
 * @throws as exportCsv.
 */
export async function exportZip(ctx: Ctx, projectId: number, xmlFormId: string, draft: boolean, query: ExportQuery): Promise<ExportFile> {
  const { form, plan } = await planExport(ctx, projectId, xmlFormId, draft, query);
  async function* entries(): AsyncGenerator<ZipEntry> {
    // Level 1: CSV still shrinks ~10x, at a fraction of level 6's CPU (the export's other big cost).
    for (const table of plan.tables) yield { name: table.fileName, level: 1, data: tableCsv(ctx, plan, table) };
    if (query.attachments) yield* mediaEntries(ctx, plan);
    // Client audit logs (plain, and decrypted ones), as Central: the entry exists only when there
    // is a row for it. Only forms with a /meta/audit field (or encrypted rows) can have any.
    const auditable = plan.decryptor.active || [...plan.fieldsOf.values()].some((fields) => fields.some((f) => f.path === '/meta/audit'));
    if (!auditable) return;
    const audits = clientAuditCsv(ctx, plan.where, plan.decryptor);
    const first = await audits.next();
    if (!first.done) {
      yield { name: `${form.xmlFormId} - audit.csv`, level: 1, data: (async function* () { yield first.value; yield* audits; })() };
    }
  }
  return {
    fileName: query.attachments ? `${form.xmlFormId}.zip` : `${form.xmlFormId}.csv.zip`,
    contentType: 'application/zip',
    stream: await primed(zipStream(entries(), ctx.deflateRaw, ctx.crc32)),
  };
}
