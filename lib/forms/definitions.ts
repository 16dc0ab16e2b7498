import { and, eq, inArray } from 'drizzle-orm';
import { formAttachments, formDefs, keys, type FormDefRow, type FormRow } from '../../drizzle/schema';
import type { Ctx } from '../context';
import { Problem, problems } from '../problem';
import { parseForm } from '../xforms/parse-form';
import type { FormField, ParsedForm } from '../xforms/types';

const spreadsheetTypes = [
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.ms-excel',
];

/** A form definition as uploaded: the XML text (byte-faithful) and what the parser read from it. */
export interface Upload {
  xml: string;
  parsed: ParsedForm;
}

/**
 * Reads an uploaded form definition (POST P/forms, POST F/draft). XML bodies are parsed by
 * lib/xforms; spreadsheets await the XLSForm issue.
 * @throws Problem 400.1 / 400.2 from the parser (unparseable, no form id, DOCTYPE), 400.1 for bytes
 *   that are not UTF-8, 501.3 for XLSForm spreadsheets. Pure.
 */
export function readUpload(body: Uint8Array, contentType: string | null): Upload {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (spreadsheetTypes.includes(type)) throw problems.form.xlsformNotConfigured();
  let xml: string;
  try {
    // Keep a BOM as a character so the stored text encodes back to the exact bytes (the hash).
    xml = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(body);
  } catch {
    throw problems.user.unparseable({ format: 'xforms xml', rawLength: body.byteLength });
  }
  return { xml, parsed: parseForm(body) };
}

/** The `keys` row id for a form's public key (one row per distinct key), or null. */
async function keyIdFor(ctx: Ctx, publicKey: string | null): Promise<number | null> {
  if (!publicKey) return null;
  await ctx.db.insert(keys).values({ public: publicKey }).onConflictDoNothing({ target: keys.public });
  const [row] = await ctx.db.select({ id: keys.id }).from(keys).where(eq(keys.public, publicKey));
  return row!.id;
}

/**
 * Stores a definition and the attachments it expects (empty until uploaded).
 * @param publish when set, the definition is published now by the request's actor.
 * Effects: form_defs row, form_attachments rows, a keys row for a new public key. Inside withTx.
 */
export async function insertDef(ctx: Ctx, form: FormRow, upload: Upload, publish: boolean, notes: string | null = null): Promise<FormDefRow> {
  const p = upload.parsed;
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
      publishedAt: publish ? new Date() : null,
      publishedBy: publish ? (ctx.auth.actor?.id ?? null) : null,
      publishNotes: publish ? notes : null,
    })
    .returning();
  if (p.attachments.length > 0) {
    await ctx.db.insert(formAttachments).values(p.attachments.map((a) => ({ formId: form.id, formDefId: def!.id, name: a.name, type: a.type })));
  }
  return def!;
}

/**
 * Copies uploaded files from an earlier definition to a new one where the name and type still match
 * (spec, Form lifecycle: a new draft keeps matching attachments). Effects: updates form_attachments.
 */
export async function carryAttachments(ctx: Ctx, fromDefId: number, toDefId: number): Promise<void> {
  const old = await ctx.db.select().from(formAttachments).where(eq(formAttachments.formDefId, fromDefId));
  for (const a of old) {
    if (a.blobId == null && a.datasetId == null) continue;
    await ctx.db
      .update(formAttachments)
      .set({ blobId: a.blobId, contentType: a.contentType, datasetId: a.datasetId, updatedAt: a.updatedAt })
      .where(and(eq(formAttachments.formDefId, toDefId), eq(formAttachments.name, a.name), eq(formAttachments.type, a.type)));
  }
}

/** Deletes a definition that was never published, with its attachment rows. */
export async function deleteUnpublishedDef(ctx: Ctx, defId: number): Promise<void> {
  await ctx.db.delete(formAttachments).where(eq(formAttachments.formDefId, defId));
  await ctx.db.delete(formDefs).where(and(eq(formDefs.id, defId)));
}

/**
 * Central's type rule across versions: a field may keep its type or become `string`; a group or
 * repeat may not become a field and a field may not become a group.
 * @throws Problem 400.17 `{ path, type }` naming the first conflicting path and its old type. Pure.
 */
export function checkFieldTypes(previous: FormField[][], next: FormField[]): void {
  const old = new Map<string, string>();
  for (const fields of previous) for (const f of fields) if (!old.has(f.path)) old.set(f.path, f.type);
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
  return published.filter((f) => !now.has(f.path)).map((f) => f.path.replace(/^\//, ''));
}

/** Defs of a form by id list (versions, purge). */
export async function defsByIds(ctx: Ctx, ids: number[]): Promise<FormDefRow[]> {
  return ids.length ? ctx.db.select().from(formDefs).where(inArray(formDefs.id, ids)) : [];
}

export { Problem };
