/**
 * The client audit log of a ZIP export (`<xmlFormId> - audit.csv`): the events of every exported
 * submission's client audit file, each row prefixed with the submission's instance ID, in
 * Central's column set (lib/data/client-audits.js and model/query/client-audits.js, behaviour only).
 * A client audit file is the attachment named by the submission's `/meta/audit` field (Collect
 * calls it `audit.csv`, but any name the XML gives counts), or `audit.csv.enc` of an encrypted
 * submission, which is decrypted when the request unlocked its key.
 */
import { and, asc, eq, sql, type SQL } from 'drizzle-orm';
import { blobs, submissionAttachments, submissionDefs, submissions } from '../../drizzle/schema';
import type { Ctx } from '../context';
import type { Decryptor } from '../encryption/decryptor';
import { blobChunks, collect, decryptedChunks, envelopesFor } from './decrypt';
import { csvLine } from './rows';

/** Central's client audit columns, in its order (after `instance ID`). */
export const CLIENT_AUDIT_HEADERS = ['event', 'node', 'start', 'end', 'latitude', 'longitude', 'accuracy', 'old-value', 'new-value', 'user', 'change-reason'];

/**
 * Parses a client audit CSV as Central reads it (csv-parse with bom, trim, skip_empty_lines,
 * relax_column_count, relax_quotes): the first row names the columns; each later row becomes
 * the cells of CLIENT_AUDIT_HEADERS by name ('' for a column it lacks); unknown columns are dropped.
 * @returns rows of CLIENT_AUDIT_HEADERS.length cells. Pure.
 */
export function parseClientAudit(text: string): string[][] {
  const records = parseCsvRecords(text.replace(/^\uFEFF/, ''));
  const header = records.shift();
  if (!header) return [];
  const at = CLIENT_AUDIT_HEADERS.map((h) => header.indexOf(h));
  return records.map((r) => at.map((i) => (i < 0 ? '' : r[i] ?? '')));
}

/** RFC 4180 records, cells trimmed, blank lines skipped; a quote inside an unquoted cell is text. */
function parseCsvRecords(text: string): string[][] {
  const out: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  let inQuotes = false;
  const endCell = () => {
    row.push(quoted ? cell : cell.trim());
    cell = '';
    quoted = false;
  };
  const endRow = () => {
    endCell();
    if (!(row.length === 1 && row[0] === '')) out.push(row);
    row = [];
  };
  for (let i = 0; i < text.length; i += 1) {
    const ch = text[i]!;
    if (inQuotes) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i += 1;
      } else if (ch === '"') inQuotes = false;
      else cell += ch;
    } else if (ch === '"' && cell.trim() === '' && !quoted) {
      cell = '';
      quoted = true;
      inQuotes = true;
    } else if (ch === ',') endCell();
    else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i += 1;
      endRow();
    } else if (!(quoted && /\s/.test(ch))) cell += ch;
  }
  if (cell !== '' || row.length > 0) endRow();
  return out;
}

/** The encrypted client audit log's file name (Central: `isClientAudit` of an encrypted attachment). */
export const CLIENT_AUDIT_ENC = 'audit.csv.enc';

/**
 * SQL true for the attachment row that is its version's client audit file: the name in the plain
 * version's `/meta/audit` field, or `audit.csv.enc` of an encrypted one. Over `submission_attachments`
 * joined to `submission_defs`.
 */
export const isClientAuditSql = (): SQL => sql`(case when ${submissionDefs.encrypted} then ${submissionAttachments.name} = ${CLIENT_AUDIT_ENC}
  else ${submissionAttachments.name} = btrim(${submissionDefs.rootValues} ->> '/meta/audit') end)`;

const utf8 = new TextDecoder();

/** Audit files per database round trip (each is read whole: they are small text files). */
const AUDIT_BATCH = 100;

/**
 * The consolidated client audit CSV of a ZIP export: `instance ID` then CLIENT_AUDIT_HEADERS, one
 * row per event, submissions in the order their current version was made (Central's), keyset
 * paged. Which submissions: those `where` selects (over `submissions`: the form, draft, not
 * deleted, the export's `$filter`), current versions only, plain ones always and encrypted ones
 * when `decryptor` unlocked their key. A version whose client audit file was never received gives
 * one row with its instance ID and empty cells, as Central's export does.
 * @returns CSV chunks (the header with the first); nothing at all when no version has a client
 *   audit slot, so that the caller can leave the ZIP entry out, as Central.
 * @throws Problem 400.12 (through the stream) when an encrypted log does not decrypt.
 */
export async function* clientAuditCsv(ctx: Ctx, where: SQL, decryptor: Decryptor): AsyncGenerator<Uint8Array> {
  const encoder = new TextEncoder();
  const empty = CLIENT_AUDIT_HEADERS.map(() => '');
  let header = true;
  let after: { createdAt: string; id: number } | null = null;
  for (;;) {
    const page: Array<{ defId: number; createdAt: Date; instanceId: string; encrypted: boolean; sha: string | null }> = await ctx.db
      .select({
        defId: submissionDefs.id, createdAt: submissionDefs.createdAt, instanceId: submissions.instanceId,
        encrypted: submissionDefs.encrypted, sha: blobs.sha,
      })
      .from(submissions)
      .innerJoin(submissionDefs, eq(submissionDefs.id, submissions.currentDefId))
      .innerJoin(submissionAttachments, eq(submissionAttachments.submissionDefId, submissionDefs.id))
      .leftJoin(blobs, eq(blobs.id, submissionAttachments.blobId))
      .where(and(where, isClientAuditSql(), after
        ? sql`(${submissionDefs.createdAt}, ${submissionDefs.id}) > (${after.createdAt}::timestamptz, ${after.id})` : undefined))
      .orderBy(asc(submissionDefs.createdAt), asc(submissionDefs.id))
      .limit(AUDIT_BATCH);
    if (page.length === 0) return;
    const last = page[page.length - 1]!;
    after = { createdAt: last.createdAt.toISOString(), id: last.defId };
    const sealed = page.filter((r) => r.encrypted).map((r) => r.defId);
    const envelopes = sealed.length > 0 ? await envelopesFor(ctx, decryptor, sealed) : new Map();
    let text = '';
    for (const row of page) {
      let rows: string[][];
      if (row.encrypted) {
        // Rows under a key this request did not unlock stay out, as Central leaves them out.
        const envelope = envelopes.get(row.defId);
        if (!envelope?.open) continue;
        const index = envelope.mediaFiles.indexOf(CLIENT_AUDIT_ENC);
        if (row.sha == null || index < 0) rows = [empty];
        else rows = parseClientAudit(utf8.decode(await collect(decryptedChunks(ctx, row.sha, envelope.open(index)))));
      } else {
        rows = row.sha == null ? [empty] : parseClientAudit(utf8.decode(await collect(blobChunks(ctx, row.sha))));
      }
      if (header) text += csvLine(['instance ID', ...CLIENT_AUDIT_HEADERS]);
      header = false;
      for (const cells of rows) text += csvLine([row.instanceId, ...cells]);
    }
    if (text !== '') yield encoder.encode(text);
    if (page.length < AUDIT_BATCH) return;
  }
}
