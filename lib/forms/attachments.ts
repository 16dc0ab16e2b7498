import { and, eq, notInArray, sql } from 'drizzle-orm';
import { blobs, configs, formAttachments, formDefs, submissionAttachments, type FormAttachmentRow, type ProjectRow } from '../../drizzle/schema';
import { iso } from '../actors';
import { audit } from '../audits/log';
import { deleteObjectIfUnreferenced, storeBlob } from '../blobs';
import { onCommit, withTx, type Ctx } from '../context';
import { canOrReject } from '../authz/can';
import { datasetActee, datasetByName } from '../datasets';
import type { EntityListState } from '../datasets/entity-lists';
import { Problem, problems } from '../problem';
import { XLS_TYPE, XLSX_TYPE } from './definitions';
import { canOnFormOrReject, canReadFormOrReject, getDefOrNotFound, getFormOrNotFound, type LoadedForm } from './queries';
import { getVersion } from './index';

/**
 * Form Attachment JSON as Central lists it (central-outputs/withAttachments/api/form-attachments.json);
 * as Central's frame, `updatedAt` only once set and `size` only with a file.
 */
export interface AttachmentJson {
  name: string;
  type: string;
  hash: string | null;
  exists: boolean;
  blobExists: boolean;
  datasetExists: boolean;
  /** Left out until the attachment first changes (Central's frame). */
  updatedAt?: string;
  /** Only with an uploaded file. */
  size?: number | null;
}

type Joined = { a: FormAttachmentRow; md5: string | null; size: number | null; sha: string | null };

const attachmentJson = (r: Joined): AttachmentJson => ({
  name: r.a.name,
  type: r.a.type,
  hash: r.md5,
  exists: r.a.blobId != null || r.a.datasetId != null,
  blobExists: r.a.blobId != null,
  datasetExists: r.a.datasetId != null,
  ...(r.a.updatedAt != null ? { updatedAt: iso(r.a.updatedAt)! } : {}),
  ...(r.a.blobId != null ? { size: r.size } : {}),
});

async function attachmentsOf(ctx: Ctx, defId: number): Promise<Joined[]> {
  return ctx.db
    .select({ a: formAttachments, md5: blobs.md5, size: blobs.size, sha: blobs.sha })
    .from(formAttachments)
    .leftJoin(blobs, eq(blobs.id, formAttachments.blobId))
    .where(eq(formAttachments.formDefId, defId))
    .orderBy(formAttachments.name);
}

/** Which definition of a form a request is about. */
export type Which = { kind: 'published' } | { kind: 'draft' } | { kind: 'version'; version: string };

async function resolveDef(ctx: Ctx, projectId: number, xmlFormId: string, which: Which, anyVersion = false): Promise<{ f: LoadedForm; defId: number }> {
  if (which.kind === 'version') {
    const { form, project, def } = await getVersion(ctx, projectId, xmlFormId, which.version);
    return { f: { form, project }, defId: def.id };
  }
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  if (which.kind === 'draft') {
    await canOnFormOrReject(ctx, 'form.update', f);
    return { f, defId: (await getDefOrNotFound(ctx, f.form.draftDefId)).id };
  }
  if (anyVersion && f.form.currentDefId == null && f.form.draftDefId != null) {
    // A form never published answers with its draft, which only form.update may see (Central's AnyVersion).
    await canOnFormOrReject(ctx, 'form.update', f);
    return { f, defId: (await getDefOrNotFound(ctx, f.form.draftDefId)).id };
  }
  await canReadFormOrReject(ctx, f);
  return { f, defId: (await getDefOrNotFound(ctx, f.form.currentDefId)).id };
}

/**
 * Attachments a definition expects, with what is uploaded (GET F/attachments, F/draft/attachments,
 * F/versions/{v}/attachments); F/attachments of a form never published lists its draft's.
 * @throws 404.1; 403.1 (form.read or open_form.read; drafts: form.update).
 */
export async function listAttachments(ctx: Ctx, projectId: number, xmlFormId: string, which: Which): Promise<AttachmentJson[]> {
  const { defId } = await resolveDef(ctx, projectId, xmlFormId, which, true);
  return (await attachmentsOf(ctx, defId)).map(attachmentJson);
}

/** A file to send: its blob key, MD5 (the ETag), type and name. */
export interface AttachmentFile {
  name: string;
  sha: string;
  md5: string;
  contentType: string;
}

const byExtension: Record<string, string> = {
  csv: 'text/csv', xml: 'application/xml', geojson: 'application/geo+json', json: 'application/json',
  jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif', svg: 'image/svg+xml', webp: 'image/webp',
  mp3: 'audio/mpeg', wav: 'audio/wav', ogg: 'audio/ogg', m4a: 'audio/mp4', amr: 'audio/amr',
  mp4: 'video/mp4', '3gp': 'video/3gpp', webm: 'video/webm', txt: 'text/plain', pdf: 'application/pdf', zip: 'application/zip',
};

/** The Content-Type rule of the spec: as given at upload, else from the extension, else octet-stream. */
export function attachmentContentType(name: string, uploaded: string | null): string {
  if (uploaded) return uploaded;
  const ext = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1).toLowerCase() : '';
  return byExtension[ext] ?? 'application/octet-stream';
}

/**
 * One uploaded form attachment for download (GET F/attachments/{name}, the draft and version forms).
 * @throws 404.1 when the form does not expect that name or nothing is uploaded; 403.1.
 */
export async function getAttachmentFile(ctx: Ctx, projectId: number, xmlFormId: string, which: Which, name: string): Promise<AttachmentFile> {
  const { defId } = await resolveDef(ctx, projectId, xmlFormId, which);
  return fileOf(ctx, defId, name);
}

/**
 * What a form attachment download serves: the uploaded file, or the Dataset linked to it as an
 * entity list (lib/entities streams that one; Central's streamAttachment).
 */
export interface AttachmentTarget {
  project: ProjectRow;
  name: string;
  /** The uploaded file; null when a Dataset is linked instead. */
  file: AttachmentFile | null;
  /** The linked Dataset; null for an uploaded file. */
  datasetId: number | null;
  /** The linked Dataset's hash state when the target's query read it (then no second query is needed). */
  listState?: EntityListState | null;
}

/**
 * Finds a form attachment to download (GET F/attachments/{name}, the draft and version forms):
 * an uploaded file or a linked Dataset.
 * @throws 404.1 the definition does not expect that name, or it has neither file nor Dataset;
 *   403.1 / 401.2 (form.read or open_form.read; drafts: form.update). Reads only.
 */
export async function getAttachmentTarget(ctx: Ctx, projectId: number, xmlFormId: string, which: Which, name: string): Promise<AttachmentTarget> {
  const { f, defId } = await resolveDef(ctx, projectId, xmlFormId, which, true);
  return targetOf(ctx, f.project, defId, name);
}

/** The download target of `name` on a definition. @throws 404.1. Reads only. */
export async function targetOf(ctx: Ctx, project: ProjectRow, defId: number, name: string): Promise<AttachmentTarget> {
  const row = (await attachmentsOf(ctx, defId)).find((r) => r.a.name === name);
  return targetFromRow(project, name, row == null ? null : { datasetId: row.a.datasetId, contentType: row.a.contentType, sha: row.sha, md5: row.md5 });
}

/**
 * The download target of an attachment row already read (null: the definition does not expect
 * `name`): the linked Dataset, else the uploaded file. @throws 404.1 nothing uploaded or linked. Pure.
 */
export function targetFromRow(
  project: ProjectRow, name: string,
  row: { datasetId: number | null; contentType: string | null; sha: string | null; md5: string | null } | null,
): AttachmentTarget {
  if (row?.datasetId != null) return { project, name, file: null, datasetId: row.datasetId };
  if (!row || row.sha == null || row.md5 == null) throw problems.user.notFound();
  return { project, name, file: { name, sha: row.sha, md5: row.md5, contentType: attachmentContentType(name, row.contentType) }, datasetId: null };
}

/** The uploaded file of `name` on a definition. @throws 404.1. */
export async function fileOf(ctx: Ctx, defId: number, name: string): Promise<AttachmentFile> {
  const row = (await attachmentsOf(ctx, defId)).find((r) => r.a.name === name);
  if (!row || row.sha == null || row.md5 == null) throw problems.user.notFound();
  return { name, sha: row.sha, md5: row.md5, contentType: attachmentContentType(name, row.a.contentType) };
}

/** Which Content-Type each spreadsheet extension serves (Central's excelMimeTypes). */
const spreadsheetTypes = { xlsx: XLSX_TYPE, xls: XLS_TYPE } as const;

/**
 * The XLSForm spreadsheet a definition was created from (GET F.xlsx / F.xls, F/draft.xlsx,
 * F/versions/{v}.xlsx), named `<xmlFormId>.<ext>`, with its type as uploaded. As Central, the
 * extension must match that type (an .xls upload is not served as F.xlsx).
 * @throws 404.1 no such form, draft or version; the definition came from XML; the extension does
 *   not match; 403.1 / 401.2 as for the XML (form.read or open_form.read; drafts: form.update).
 */
export async function getSpreadsheet(ctx: Ctx, projectId: number, xmlFormId: string, which: Which, ext: 'xlsx' | 'xls'): Promise<AttachmentFile> {
  const { f, defId } = await resolveDef(ctx, projectId, xmlFormId, which);
  const [row] = await ctx.db
    .select({ contentType: formDefs.xlsContentType, sha: blobs.sha, md5: blobs.md5 })
    .from(formDefs)
    .innerJoin(blobs, eq(blobs.id, formDefs.xlsBlobId))
    .where(eq(formDefs.id, defId));
  if (!row || row.contentType !== spreadsheetTypes[ext]) throw problems.user.notFound();
  return { name: `${f.form.xmlFormId}.${ext}`, sha: row.sha, md5: row.md5, contentType: row.contentType };
}

/**
 * Uploads a draft attachment (POST F/draft/attachments/{name}): binary body, Content-Type kept.
 * Stored once by content hash; any linked entity list is unlinked.
 * @returns the attachment JSON. Effects: blob (store + row), attachment row; audit `form.attachment.update`.
 * @throws 404.1 no draft or the draft does not expect that name; 403.1 without form.update.
 */
export async function uploadDraftAttachment(ctx: Ctx, projectId: number, xmlFormId: string, name: string, body: Uint8Array, contentType: string | null): Promise<AttachmentJson> {
  return withTx(ctx, async (tx) => {
    const { f, defId } = await resolveDef(tx, projectId, xmlFormId, { kind: 'draft' });
    const [row] = await tx.db.select().from(formAttachments).where(and(eq(formAttachments.formDefId, defId), eq(formAttachments.name, name)));
    if (!row) throw problems.user.notFound();
    const type = contentType?.trim() || null; // kept whole, as Central serves it back
    const blob = await storeBlob(tx, body, type);
    await tx.db
      .update(formAttachments)
      .set({ blobId: blob.id, contentType: type, datasetId: null, updatedAt: new Date() })
      .where(and(eq(formAttachments.formDefId, defId), eq(formAttachments.name, name)));
    await audit(tx, tx, 'form.attachment.update', f.form.acteeId, {
      formDefId: defId, name, oldBlobId: row.blobId, newBlobId: blob.id, oldDatasetId: row.datasetId, newDatasetId: null,
    });
    return attachmentJson((await attachmentsOf(tx, defId)).find((r) => r.a.name === name)!);
  });
}

/**
 * Clears a draft attachment (DELETE F/draft/attachments/{name}): the expectation stays, the content
 * (or entity list link) goes. Effects: attachment row; audit `form.attachment.update`.
 * @throws 404.1 (also when there is nothing to clear, as Central); 403.1 without form.update.
 */
export async function clearDraftAttachment(ctx: Ctx, projectId: number, xmlFormId: string, name: string): Promise<void> {
  await withTx(ctx, async (tx) => {
    const { f, defId } = await resolveDef(tx, projectId, xmlFormId, { kind: 'draft' });
    const [row] = await tx.db.select().from(formAttachments).where(and(eq(formAttachments.formDefId, defId), eq(formAttachments.name, name)));
    if (!row || (row.blobId == null && row.datasetId == null)) throw problems.user.notFound();
    await tx.db
      .update(formAttachments)
      .set({ blobId: null, contentType: null, datasetId: null, updatedAt: new Date() })
      .where(and(eq(formAttachments.formDefId, defId), eq(formAttachments.name, name)));
    await audit(tx, tx, 'form.attachment.update', f.form.acteeId, {
      formDefId: defId, name, oldBlobId: row.blobId, newBlobId: null, oldDatasetId: row.datasetId, newDatasetId: null,
    });
  });
}

/**
 * Links or unlinks an entity list (PATCH F/draft/attachments/{name} `{ dataset }`): `people.csv`
 * names the published Dataset `people` (lib/datasets). As Central, that Dataset must exist and be
 * readable (`entity.list`) either way, and the attachment's content goes in both cases: linking
 * replaces an uploaded file, unlinking leaves the attachment empty.
 * @returns the attachment JSON without `hash` and `size`. Effects: attachment row; audit
 *   `form.attachment.update` `{ formDefId, name, oldBlobId, newBlobId: null, oldDatasetId, newDatasetId }`.
 * @throws 400.2/400.11 bad body; 400.26 linking a non-file attachment; 404.1 no draft, attachment
 *   or Dataset; 403.1 without form.update, or without entity.list on the Dataset.
 */
export async function linkDraftAttachment(
  ctx: Ctx, projectId: number, xmlFormId: string, name: string, body: unknown,
): Promise<Omit<AttachmentJson, 'hash' | 'size'>> {
  const dataset = (body as { dataset?: unknown } | null)?.dataset;
  if (dataset === undefined) throw problems.user.missingParameter({ field: 'dataset' });
  if (typeof dataset !== 'boolean') throw problems.user.invalidDataTypeOfParameter({ field: 'dataset', expected: 'boolean' });
  return withTx(ctx, async (tx) => {
    const { f, defId } = await resolveDef(tx, projectId, xmlFormId, { kind: 'draft' });
    const found = await datasetByName(tx, f.project.id, name.replace(/\.csv$/i, ''));
    if (!found) throw problems.user.notFound();
    await canOrReject(tx, 'entity.list', datasetActee({ dataset: found, project: f.project }));
    const [row] = await tx.db.select().from(formAttachments).where(and(eq(formAttachments.formDefId, defId), eq(formAttachments.name, name)));
    if (!row) throw problems.user.notFound();
    if (dataset && row.type !== 'file') throw new Problem(400.26, 'Dataset can only be linked to attachments with "Data File" type.');
    const datasetId = dataset ? found.id : null;
    await tx.db.update(formAttachments).set({ datasetId, blobId: null, contentType: null, updatedAt: new Date() })
      .where(and(eq(formAttachments.formDefId, defId), eq(formAttachments.name, name)));
    await audit(tx, tx, 'form.attachment.update', f.form.acteeId, {
      formDefId: defId, name, oldBlobId: row.blobId, newBlobId: null, oldDatasetId: row.datasetId, newDatasetId: datasetId,
    });
    // Central answers the updated row without its blob join: no hash and no size.
    const { hash: _hash, size: _size, ...json } = attachmentJson((await attachmentsOf(tx, defId)).find((r) => r.a.name === name)!);
    return json;
  });
}

/**
 * Deletes blobs no row refers to any more (after a purge), from the database and the store.
 * Form attachments, form definitions (their XLSForm spreadsheet), submission attachments and the
 * server's config (logo, hero image) refer to blobs: every table that later references `blobs`
 * must be added here, or a purge would fail on its foreign key. Store objects are deleted through
 * lib/blobs deleteObjectIfUnreferenced, so an upload of the same bytes racing the purge keeps them.
 * @returns how many. Effects: deletes blobs rows and store objects.
 */
export async function deleteUnreferencedBlobs(ctx: Ctx): Promise<number> {
  const usedByForms = ctx.db.select({ id: formAttachments.blobId }).from(formAttachments).where(sql`${formAttachments.blobId} is not null`);
  const usedByDefs = ctx.db.select({ id: formDefs.xlsBlobId }).from(formDefs).where(sql`${formDefs.xlsBlobId} is not null`);
  const usedBySubmissions = ctx.db.select({ id: submissionAttachments.blobId }).from(submissionAttachments).where(sql`${submissionAttachments.blobId} is not null`);
  const usedByConfig = ctx.db.select({ id: configs.blobId }).from(configs).where(sql`${configs.blobId} is not null`);
  const gone = await ctx.db
    .delete(blobs)
    .where(and(
      notInArray(blobs.id, usedByForms), notInArray(blobs.id, usedByDefs), notInArray(blobs.id, usedBySubmissions), notInArray(blobs.id, usedByConfig),
    ))
    .returning({ sha: blobs.sha });
  // Once the rows are gone for good (inside a transaction: after its commit, else its own claim
  // would wait on it), and never under a concurrent upload of the same bytes.
  const root = ctx.tx?.root ?? ctx.db;
  const deleteObjects = async () => {
    for (const b of gone) await deleteObjectIfUnreferenced(root, ctx.blobs, b.sha);
  };
  if (ctx.tx) {
    onCommit(ctx, () => void deleteObjects().catch((err: unknown) => ctx.log.error('blob purge failed', { err, requestId: ctx.requestId })));
  } else {
    await deleteObjects();
  }
  return gone.length;
}
