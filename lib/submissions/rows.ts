import { eq, sql, type SQL } from 'drizzle-orm';
import { actors, formDefs, submissionAttachments, submissionDefs, submissions } from '../../drizzle/schema';
import type { Ctx } from '../context';
import type { SubmissionValue } from '../xforms/types';

/** A submission with its current version's values and the metadata every export and feed shows. */
export interface SubmissionDataRow {
  id: number;
  instanceId: string;
  createdAt: Date;
  updatedAt: Date | null;
  deletedAt: Date | null;
  submitterId: number | null;
  submitterName: string | null;
  reviewState: string | null;
  deviceId: string | null;
  defId: number;
  values: SubmissionValue[];
  encrypted: boolean;
  /** The version of the form the submission was first made against (its first version's), as Central's exports show. */
  formVersion: string;
  /** Number of versions after the first. */
  edits: number;
  /** Files the current version expects. */
  expected: number;
  /** Names of the files received for the current version, sorted. */
  received: string[];
  /** With `rootOnly`: the values outside repeats as stored (path → text); `values` is then empty. */
  root?: Record<string, string>;
  /** The version's form definition. */
  formDefId: number;
  /** With `rootText`: the version's root_text (its definition's root leaf texts, U+001F-separated). */
  cells?: string;
  /** With `rootText`, for an encrypted version: the name of its encrypted XML file. */
  encryptedFile?: string | null;
}

/**
 * One page of submissions with their current version (CSV exports, OData feeds): a single query
 * that joins the version, its form definition and the submitter, and counts edits and files.
 * @param q where (over `submissions`, `submission_defs`), order, limit, optional offset; `rootOnly`:
 *   `root` holds the leaves outside repeats (root_values) and `values` is empty;
 *   `rootText`: `cells` holds the stored root_text (and `encryptedFile` the encrypted XML file's
 *   name) and `values` is empty.
 * @returns rows in the given order. Reads only; runs outside any transaction (DESIGN rule 5).
 */
export async function selectSubmissionRows(
  ctx: Ctx,
  q: { where: SQL; orderBy: SQL[]; limit: number; offset?: number; rootOnly?: boolean; rootText?: boolean },
): Promise<SubmissionDataRow[]> {
  // The values outside repeats are a third of the data or less: when nothing inside a repeat is
  // needed (a root table, a form without repeats), read `root_values` instead of every leaf.
  const valuesColumn = q.rootText
    ? sql<SubmissionValue[]>`'[]'::jsonb`
    : q.rootOnly ? sql<SubmissionValue[]>`${submissionDefs.rootValues}` : sql<SubmissionValue[]>`${submissionDefs.values}`;
  // `rootText`: the row's texts as one stored string (no JSON for hundreds of short values, whose
  // parsing was the export's main cost).
  const cells = q.rootText ? sql<string>`${submissionDefs.rootText}` : sql<string>`null`;
  const encryptedFile = q.rootText
    ? sql<string | null>`case when ${submissionDefs.encrypted} then ${submissionDefs.rootValues} ->> '/encryptedXmlFile' end`
    : sql<string | null>`null`;
  let query = ctx.db
    .select({
      id: submissions.id,
      instanceId: submissions.instanceId,
      createdAt: submissions.createdAt,
      updatedAt: submissions.updatedAt,
      deletedAt: submissions.deletedAt,
      submitterId: submissions.submitterId,
      submitterName: actors.displayName,
      reviewState: submissions.reviewState,
      deviceId: submissions.deviceId,
      defId: submissionDefs.id,
      values: valuesColumn,
      formDefId: submissionDefs.formDefId,
      cells,
      encryptedFile,
      encrypted: submissionDefs.encrypted,
      // The first version's form version, not the current one's (Central: the root def's, so an
      // edit against a newer form version keeps the original in FormVersion / __system/formVersion).
      formVersion: sql<string>`(select fd.version from ${submissionDefs} r join ${formDefs} fd on fd.id = r.form_def_id
        where r.submission_id = ${submissions.id} order by r.id limit 1)`,
      edits: sql<number>`(select count(*) - 1 from ${submissionDefs} d2 where d2.submission_id = ${submissions.id})`.mapWith(Number),
      expected: sql<number>`(select count(*) from ${submissionAttachments} a where a.submission_def_id = ${submissionDefs.id})`.mapWith(Number),
      received: sql<string[]>`coalesce((select jsonb_agg(a.name order by a.name) from ${submissionAttachments} a where a.submission_def_id = ${submissionDefs.id} and a.blob_id is not null), '[]'::jsonb)`,
    })
    .from(submissions)
    .innerJoin(submissionDefs, eq(submissionDefs.id, submissions.currentDefId))
    .innerJoin(formDefs, eq(formDefs.id, submissionDefs.formDefId))
    .leftJoin(actors, eq(actors.id, submissions.submitterId))
    .where(q.where)
    .orderBy(...q.orderBy)
    .limit(q.limit)
    .$dynamic();
  if (q.offset) query = query.offset(q.offset);
  const raw = await query;
  const rows: SubmissionDataRow[] = raw.map(({ cells: text, ...r }) => (q.rootText ? { ...r, cells: text ?? '' } : r));
  if (q.rootOnly && !q.rootText) {
    for (const r of rows) {
      r.root = r.values as unknown as Record<string, string>;
      r.values = [];
    }
  }
  return rows;
}

/**
 * Status of an encrypted row: `missingEncryptedFormData` until its encrypted XML file has arrived,
 * then `notDecrypted` (decryption is a later issue). null for plain rows. Pure.
 */
export function encryptionStatus(row: Pick<SubmissionDataRow, 'encrypted' | 'values' | 'received' | 'root' | 'encryptedFile'>): 'notDecrypted' | 'missingEncryptedFormData' | null {
  if (!row.encrypted) return null;
  const file = (row.encryptedFile ?? row.root?.['/encryptedXmlFile'] ?? row.values.find((v) => v.path === '/encryptedXmlFile')?.value)?.trim();
  return file != null && row.received.includes(file) ? 'notDecrypted' : 'missingEncryptedFormData';
}
