import { and, eq, inArray, isNull } from 'drizzle-orm';
import { formAttachments, formDefs, keys, type FormDefRow, type FormRow } from '../../drizzle/schema';
import { storeBlob } from '../blobs';
import type { Ctx } from '../context';
import { checkEntityDeclarations, defineDatasets, forgetDefinition, publishDatasets } from '../datasets';
import { autoLinkDatasets } from '../datasets/entity-lists';
import { getProjectOrNotFound } from '../projects';
import { Problem, problems } from '../problem';
import type * as XlsForm from '../xlsform';
import { parseForm } from '../xforms/parse-form';
import type { FormField, ParsedForm } from '../xforms/types';

/** The spreadsheet Content-Types Central accepts (central-api.yaml, POST P/forms). */
export const XLSX_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
export const XLS_TYPE = 'application/vnd.ms-excel';
const spreadsheetTypes = [XLSX_TYPE, XLS_TYPE];
/** The attachment select_one_external reads (pyxform writes it; Central fills it at upload). */
const ITEMSETS = 'itemsets.csv';

/**
 * The spreadsheet a definition came from: new bytes to store, or (a draft copied from the
 * published version) the blob the published definition already refers to.
 */
export type XlsSource =
  | { bytes: Uint8Array; contentType: string }
  | { blobId: number; contentType: string };

/** A form definition as uploaded: the XML text (byte-faithful) and what the parser read from it. */
export interface Upload {
  xml: string;
  parsed: ParsedForm;
  /** The XLSForm it was converted from (kept with the definition), or null for an XForm upload. */
  xls: XlsSource | null;
  /** itemsets.csv text from select_one_external questions, filled in as that attachment. */
  itemsets: string | null;
  /** Conversion warnings in pyxform's words; they fail the upload unless ignoreWarnings. */
  xlsFormWarnings: string[];
  /** Workflow warnings of the entity declarations (`oldEntityVersion`), 400.16 unless ignored. */
  entityWarnings: unknown[];
}

/**
 * Percent-decodes X-XlsForm-FormId-Fallback (central-api.yaml: "accepts percent-encoded values").
 * Blank or absent gives null. @throws Problem 400.6 when the value is not valid percent-encoding
 * of UTF-8 (pyxform-http would pass it on; Fieldbase says so instead). Pure.
 */
export function decodeFormIdFallback(raw: string | null | undefined): string | null {
  if (raw == null || raw.trim() === '') return null;
  try {
    return decodeURIComponent(raw);
  } catch {
    throw problems.user.invalidHeader({ field: 'X-XlsForm-FormId-Fallback', value: raw });
  }
}

/**
 * Reads an uploaded form definition (POST P/forms, POST F/draft). XML bodies are parsed by
 * lib/xforms; spreadsheets (.xlsx, .xls by Content-Type) are converted by lib/xlsform first and
 * the XForm it produces then takes the XML path unchanged.
 * @param formIdFallback the raw X-XlsForm-FormId-Fallback header (spreadsheets only).
 * @param xlsform lib/xlsform, passed by the forms group's callers: a spreadsheet needs it, and
 *   groups that only re-read stored XForms (project encryption) then bundle no SheetJS.
 * @returns the XML, what the parser read, and for spreadsheets the bytes to keep, itemsets.csv and
 *   the conversion warnings (which the caller turns into 400.16 unless ignoreWarnings).
 * @throws Problem 400.25 invalid entity declarations (lib/datasets/declarations).
 * @throws Problem 400.1 / 400.2 from the parser (unparseable, no form id, DOCTYPE), 400.1 for bytes
 *   that are not UTF-8, 400.6 a malformed fallback header, 400.15 the spreadsheet does not convert
 *   (`{ error, warnings }`, also a missing form id with no fallback), 400.8 an xmlFormId ending in
 *   .xls, .xlsx or .xml (Central) or breaking checkFormId, 400.13 one over 64 characters. Pure (CPU only: call it outside a transaction).
 */
export function readUpload(
  body: Uint8Array,
  contentType: string | null,
  formIdFallback: string | null = null,
  xlsform: typeof XlsForm | null = null,
): Upload {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const spreadsheet = spreadsheetTypes.includes(type);
  if (spreadsheet && !xlsform) throw new Error('readUpload: a spreadsheet needs the lib/xlsform module');
  const upload = spreadsheet ? readSpreadsheet(xlsform!, body, type, formIdFallback) : readXml(body);
  checkFormId(upload.parsed.xmlFormId);
  if (/\.(xlsx?|xml)$/.test(upload.parsed.xmlFormId)) {
    throw problems.user.unexpectedValue({
      field: 'formId',
      value: upload.parsed.xmlFormId,
      reason: 'The Form ID cannot end in .xls, .xlsx, or .xml. Please either specify an allowed ID in the form itself, or rename the file (eg change form.xls.xls to form.xls).',
    });
  }
  // Entity declarations are checked at upload, before anything is stored (400.25).
  upload.entityWarnings = checkEntityDeclarations(upload.parsed).warnings;
  return upload;
}

/** Central's forms."xmlFormId" is varchar(64). */
const FORM_ID_MAX = 64;

/**
 * The rules a form id must meet before anything is stored: at most 64 characters (Central's
 * column, 400.13 as Central), and no path separator, control character, U+FFFD (bytes that were
 * not UTF-8, as a spreadsheet reader leaves them) or bare `.` / `..`: the id names files in exports
 * and downloads and is a URL path segment (Fieldbase; Central stores such ids as they are).
 * @throws Problem 400.13 `{ maxLength: '64' }` too long; 400.8 `{ field: 'formId', value, reason }`. Pure.
 */
export function checkFormId(xmlFormId: string): void {
  if ([...xmlFormId].length > FORM_ID_MAX) throw problems.user.valueTooLong({ maxLength: String(FORM_ID_MAX) });
  if (/[/\\\u0000-\u001f\u007f\ufffd]/.test(xmlFormId) || xmlFormId === '.' || xmlFormId === '..') {
    throw problems.user.unexpectedValue({
      field: 'formId',
      value: xmlFormId,
      reason: 'The Form ID may not contain a slash, a backslash or control characters, nor be . or .. on its own.',
    });
  }
}

function readXml(body: Uint8Array): Upload {
  let xml: string;
  try {
    // Keep a BOM as a character so the stored text encodes back to the exact bytes (the hash).
    xml = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(body);
  } catch {
    throw problems.user.unparseable({ format: 'xforms xml', rawLength: body.byteLength });
  }
  return { xml, parsed: parseForm(body), xls: null, itemsets: null, xlsFormWarnings: [], entityWarnings: [] };
}

function readSpreadsheet(xlsform: typeof XlsForm, body: Uint8Array, contentType: string, rawFallback: string | null): Upload {
  const formIdFallback = decodeFormIdFallback(rawFallback);
  let result;
  try {
    result = xlsform.convertXlsForm(body, { formIdFallback });
  } catch (err) {
    if (err instanceof xlsform.XlsFormError) throw problems.form.xlsformNotValid({ error: err.message, warnings: err.warnings });
    throw err;
  }
  const bytes = new TextEncoder().encode(result.xml);
  return {
    xml: result.xml,
    parsed: parseForm(bytes),
    xls: { bytes: body, contentType },
    itemsets: result.itemsets,
    xlsFormWarnings: result.warnings,
    entityWarnings: [],
  };
}

/**
 * Central's 400.16: conversion and workflow warnings together in one `warnings` object
 * (`{ xlsFormWarnings?, workflowWarnings? }`, in that order), or nothing when there are none.
 * @throws Problem 400.16. Pure.
 */
export function rejectIfWarnings(xlsFormWarnings: string[], workflowWarnings: unknown[]): void {
  const warnings: Record<string, unknown> = {};
  if (xlsFormWarnings.length > 0) warnings.xlsFormWarnings = xlsFormWarnings;
  if (workflowWarnings.length > 0) warnings.workflowWarnings = workflowWarnings;
  if (Object.keys(warnings).length > 0) throw problems.form.formWarnings(warnings);
}

/** The `keys` row id for a form's public key (one row per distinct key), or null. */
async function keyIdFor(ctx: Ctx, publicKey: string | null): Promise<number | null> {
  if (!publicKey) return null;
  await ctx.db.insert(keys).values({ public: publicKey }).onConflictDoNothing({ target: keys.public });
  const [row] = await ctx.db.select({ id: keys.id }).from(keys).where(eq(keys.public, publicKey));
  return row!.id;
}

/**
 * Stores a definition and the attachments it expects (empty until uploaded; itemsets.csv filled
 * when the spreadsheet produced one and the form expects it, as Central does).
 * @param publish when set, the definition is published by the request's actor: now, or at the
 *   given time (a form published as it is created: its creation time, as Central).
 * @param autoLink a new form: data-file attachments named after a published Dataset link to it.
 * Effects: form_defs row, form_attachments rows, a keys row for a new public key; blobs for the
 *   spreadsheet and itemsets.csv (removed from the store again if the transaction rolls back).
 *   Inside withTx.
 */
export async function insertDef(
  ctx: Ctx, form: FormRow, upload: Upload, publish: boolean | Date, notes: string | null = null, autoLink = false,
): Promise<FormDefRow> {
  const publishedAt = publish === false ? null : publish === true ? new Date() : publish;
  const p = upload.parsed;
  const xls = upload.xls == null ? null
    : 'blobId' in upload.xls ? upload.xls
      : { blobId: (await storeBlob(ctx, upload.xls.bytes, upload.xls.contentType)).id, contentType: upload.xls.contentType };
  const itemsets = upload.itemsets != null && p.attachments.some((a) => a.name === ITEMSETS)
    ? await storeBlob(ctx, new TextEncoder().encode(upload.itemsets), 'text/csv')
    : null;
  const [def] = await ctx.db
    .insert(formDefs)
    .values({
      formId: form.id,
      xml: upload.xml,
      name: p.name,
      version: p.version,
      hash: p.hash,
      sha: p.sha,
      sha256: p.sha256,
      keyId: await keyIdFor(ctx, p.base64RsaPublicKey),
      fields: p.fields,
      datasets: p.datasets,
      entitiesVersion: p.entitiesVersion,
      publishedAt,
      publishedBy: publish ? (ctx.auth.actor?.id ?? null) : null,
      publishNotes: publish ? notes : null,
      xlsBlobId: xls?.blobId ?? null,
      xlsContentType: xls?.contentType ?? null,
    })
    .returning();
  if (p.attachments.length > 0) {
    await ctx.db.insert(formAttachments).values(p.attachments.map((a) => ({
      formId: form.id,
      formDefId: def!.id,
      name: a.name,
      type: a.type,
      ...(a.name === ITEMSETS && itemsets ? { blobId: itemsets.id, contentType: 'text/csv' } : {}),
    })));
    // A new form's data files link to the Datasets published before it (Central's createNew).
    if (autoLink) await autoLinkDatasets(ctx, form.projectId, def!.id);
  }
  // Encrypted forms declare no Datasets (Central reads none from them).
  if (p.datasets.length > 0 && !p.base64RsaPublicKey) {
    await defineDatasets(ctx, await getProjectOrNotFound(ctx, form.projectId), def!, p.datasets);
    // Publishing at creation links the Datasets it publishes too (Central's publish).
    if (publish) await autoLinkDatasets(ctx, form.projectId, def!.id, await publishDatasets(ctx, def!.id));
  }
  return def!;
}

/**
 * Copies uploaded files from an earlier definition to a new one where the name and type still match
 * (spec, Form lifecycle: a new draft keeps matching attachments). A file the new definition already
 * has (itemsets.csv from its own spreadsheet) wins over the carried one, as in Central.
 * Effects: updates form_attachments.
 */
export async function carryAttachments(ctx: Ctx, fromDefId: number, toDefId: number): Promise<void> {
  const old = await ctx.db.select().from(formAttachments).where(eq(formAttachments.formDefId, fromDefId));
  for (const a of old) {
    if (a.blobId == null && a.datasetId == null) continue;
    await ctx.db
      .update(formAttachments)
      .set({ blobId: a.blobId, contentType: a.contentType, datasetId: a.datasetId, updatedAt: a.updatedAt })
      .where(and(eq(formAttachments.formDefId, toDefId), eq(formAttachments.name, a.name), eq(formAttachments.type, a.type), isNull(formAttachments.blobId)));
  }
}

/** Deletes a definition that was never published, with its attachment rows and Dataset links. */
export async function deleteUnpublishedDef(ctx: Ctx, defId: number): Promise<void> {
  await ctx.db.delete(formAttachments).where(eq(formAttachments.formDefId, defId));
  await forgetDefinition(ctx, defId);
  await ctx.db.delete(formDefs).where(and(eq(formDefs.id, defId)));
}

/**
 * Central's type rule across versions: a field may keep its type or become `string`; a group or
 * repeat may not become a field and a field may not become a group. @param previous the fields of
 * each published definition, oldest first (a path's latest type is the one compared).
 * @throws Problem 400.17 `{ path, type }` naming the first conflicting path and its old type. Pure.
 */
export function checkFieldTypes(previous: FormField[][], next: FormField[]): void {
  const old = new Map<string, string>();
  // The latest published type of each path counts (Central merges versions oldest first).
  for (const fields of previous) for (const f of fields) old.set(f.path, f.type);
  for (const f of next) {
    const before = old.get(f.path);
    if (before == null || before === f.type) continue;
    const structural = (t: string) => t === 'structure' || t === 'repeat';
    if (!structural(before) && f.type === 'string') continue;
    throw problems.form.fieldTypeConflict({ path: f.path, type: before });
  }
}

/**
 * Structure Change warning: fields of the published version missing from the new one (removed,
 * renamed or moved). @returns their paths without the leading slash, or [] when nothing was removed.
 */
export function removedFields(published: FormField[] | null, next: FormField[]): string[] {
  if (!published) return [];
  const now = new Set(next.map((f) => f.path));
  // A meta or entity block that moved (an entity into a repeat) is no warning (Central).
  return published.filter((f) => !now.has(f.path) && !/\/meta(\/entity(\/label)?)?$/.test(f.path)).map((f) => f.path.replace(/^\//, ''));
}

/** Defs of a form by id list (versions, purge). */
export async function defsByIds(ctx: Ctx, ids: number[]): Promise<FormDefRow[]> {
  return ids.length ? ctx.db.select().from(formDefs).where(inArray(formDefs.id, ids)) : [];
}

export { Problem };
