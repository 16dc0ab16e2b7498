import { and, asc, desc, eq, inArray, isNotNull, isNull, lt, ne, or, sql } from 'drizzle-orm';
import * as z from 'zod';
import {
  actees, actors, assignments, audits, formAttachments, formDefs, forms, publicLinks, sessions, submissionAttachments, submissionDefs, submissions,
  type FormRow,
} from '../../drizzle/schema';
import { actorJson, iso } from '../actors';
import { audit } from '../audits/log';
import { can, canOrReject } from '../authz/can';
import { species } from '../authz/verbs';
import { withTx, type Ctx } from '../context';
import { keyset, keysetRead } from '../db/keyset';
import { mapBatches } from '../http/json-stream';
import { datasetDiffForDef, forgetDefinition, publishDatasets } from '../datasets';
import { autoLinkDatasets } from '../datasets/entity-lists';
import { datasetMissingForFormRestore, formDependsOnDeletedDataset } from '../datasets/trash';
import { problems } from '../problem';
import { getProjectOrNotFound, projectActee } from '../projects';
import { generateToken } from '../sessions/tokens';
import { parseInput } from '../validation';
import { odataFields } from '../xforms/parse-form';
import { setFormVersion } from '../xforms/rewrite';
import type { FormField } from '../xforms/types';
import {
  carryAttachments, checkFieldTypes, deleteUnpublishedDef, insertDef, readUpload, rejectIfWarnings, removedFields, type Upload,
} from './definitions';
import {
  canOnFormOrReject, canReadFormOrReject, displayedDef, extendedFormFields, formActee, formJson, getDefOrNotFound,
  getFormOrNotFound, publishedDefs, type FormJson,
} from './queries';
import { deleteDraftSubmissions } from '../submissions/manage';
import { applyProjectKey } from './managed-key';

// lib/xlsform (SheetJS) loads with the first form upload: the bundles that reach this module for
// other verbs (form attachments from submissions and entity lists) never load it at start-up.
const loadXlsForm = () => import('../xlsform');
import {
  ENKETO_REQUEST_BOUND_MS, requestDraftEnketoId, requestFormEnketoIds, retryDraftLater, retryPublishLater, usesEnketo,
} from './enketo';

export { getFormOrNotFound, type LoadedForm } from './queries';

export interface UploadInput {
  body: Uint8Array;
  contentType: string | null;
  ignoreWarnings: boolean;
  /** X-XlsForm-FormId-Fallback as sent (percent-encoded); used for spreadsheets only. */
  formIdFallback?: string | null;
  /** The request's origin, for the OpenRosa URLs given to Enketo when PUBLIC_URL is not set. */
  origin?: string | null;
  /** X-Action-Notes (decoded): recorded with the audit entries, and as the publish notes when published. */
  notes?: string | null;
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `length` random characters from [A-Za-z0-9] (Web Crypto, unbiased). Pure apart from the randomness. */
function randomAlphanumeric(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of crypto.getRandomValues(new Uint8Array(length))) {
      if (b < 248 && out.length < length) out += ALPHANUMERIC[b % 62];
    }
  }
  return out;
}

/**
 * Fresh public ids for a form's first publication: `enketoId` (16 characters) and `enketoOnceId`
 * (64), both alphanumeric as the web UI's `/f/:enketoId([a-zA-Z0-9]+)` route needs. Central has
 * Enketo make them; Fieldbase draws them and keeps them across versions. Pure apart from the randomness.
 */
export function publicFormIds(): { enketoId: string; enketoOnceId: string } {
  return { enketoId: randomAlphanumeric(16), enketoOnceId: randomAlphanumeric(64) };
}

/**
 * Whether a version string was already published for this xmlFormId in the project, by this form
 * or one in the Trash (Central's check_form_version trigger: a published (xmlFormId, version) is
 * never reused in a project until the old form is purged). Reads only.
 */
async function versionPublishedBefore(ctx: Ctx, projectId: number, xmlFormId: string, version: string): Promise<boolean> {
  const [row] = await ctx.db
    .select({ id: formDefs.id })
    .from(formDefs)
    .innerJoin(forms, eq(forms.id, formDefs.formId))
    .where(and(eq(forms.projectId, projectId), eq(forms.xmlFormId, xmlFormId), eq(formDefs.version, version), isNotNull(formDefs.publishedAt)))
    .limit(1);
  return row != null;
}

/** Days a form stays restorable in the Trash (spec, Form lifecycle). */
export const TRASH_DAYS = 30;

/**
 * Forms of a project (GET P/forms), by xmlFormId. `deleted` lists the Trash instead, each with its
 * numeric `id` for restoring. Actors with only `open_form.list` (Data Collectors) see published,
 * open or closing forms. Read by keyset in batches of 1,000 (lib/db/keyset.ts) for a streamed
 * answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of Form JSON (extended: with the extended fields).
 * @throws 404.1 unknown project; 403.1 without form.list / open_form.list (before the first batch). Reads only.
 */
export async function listForms(ctx: Ctx, projectId: number, opts: { deleted: boolean; extended: boolean }) {
  const project = await getProjectOrNotFound(ctx, projectId);
  const full = await can(ctx, 'form.list', projectActee(project));
  if (!full) await canOrReject(ctx, opts.deleted ? 'form.list' : 'open_form.list', projectActee(project));
  const ks = keyset([{ expr: forms.xmlFormId, type: 'text' }, { expr: forms.id, type: 'int' }]);
  const rows = keysetRead(ks, (after, limit) => ctx.db
    .select({ form: forms, ...ks.fields })
    .from(forms)
    .where(and(eq(forms.projectId, project.id), opts.deleted ? isNotNull(forms.deletedAt) : isNull(forms.deletedAt),
      full ? undefined : and(isNotNull(forms.currentDefId), ne(forms.state, 'closed')), after))
    .orderBy(...ks.orderBy).limit(limit));
  return mapBatches(rows, async (batch) => {
    const out: Array<Record<string, unknown>> = [];
    for (const { form } of batch) {
      const def = await displayedDef(ctx, form);
      const json: Record<string, unknown> = { ...formJson(form, def) };
      if (opts.deleted) Object.assign(json, { id: form.id, deletedAt: iso(form.deletedAt) });
      if (opts.extended) Object.assign(json, await extendedFormFields(ctx, form, def));
      out.push(json);
    }
    return out;
  });
}

/**
 * Creates a form from an XForm or an XLSForm spreadsheet (POST P/forms): as a draft (with a Draft
 * Token), or published with `publish`. Conversion warnings and the workflow warning
 * deletedFormExists (same xmlFormId in the Trash) fail together as one 400.16 unless ignored.
 * @returns Form JSON. Effects: actee, form (published: with its public ids enketoId and
 *   enketoOnceId), definition, expected attachment rows; for a spreadsheet
 *   its blob (F.xlsx) and a filled itemsets.csv; audit `form.create`.
 * @throws 404.1 project; 403.1 without form.create; 400.1/400.2 unparseable or no id; 400.6 a
 *   malformed X-XlsForm-FormId-Fallback; 400.8 an id ending in .xls/.xlsx/.xml; 400.15 the
 *   spreadsheet does not convert; 400.27 no meta group; 400.16 warnings; 409.3 a live form has
 *   the xmlFormId; 409.6 publishing a version a form in the Trash already published.
 */
export async function createForm(ctx: Ctx, projectId: number, input: UploadInput & { publish: boolean }): Promise<FormJson> {
  const project = await getProjectOrNotFound(ctx, projectId);
  await canOrReject(ctx, 'form.create', projectActee(project));
  const upload = readUpload(input.body, input.contentType, input.formIdFallback ?? null, await loadXlsForm());
  // As Central: some field named meta must be a group (a childless <meta/> is not).
  if (!upload.parsed.fields.some((f) => f.name === 'meta' && f.type === 'structure')) throw problems.form.missingMeta();
  const { xmlFormId } = upload.parsed;
  return withTx(ctx, async (tx) => {
    const existing = await tx.db.select().from(forms).where(and(eq(forms.projectId, project.id), eq(forms.xmlFormId, xmlFormId)));
    if (existing.some((f) => f.deletedAt == null)) {
      throw problems.user.uniquenessViolation({ fields: ['projectId', 'xmlFormId'], values: [String(project.id), xmlFormId], table: 'forms' });
    }
    if (!input.ignoreWarnings) {
      rejectIfWarnings(upload.xlsFormWarnings, [
        ...(existing.length > 0 ? [{ type: 'deletedFormExists', details: { xmlFormId } }] : []), ...upload.entityWarnings]);
    }
    if (input.publish && existing.length > 0 && await versionPublishedBefore(tx, project.id, xmlFormId, upload.parsed.version)) {
      throw problems.form.versionUniquenessViolation({ xmlFormId, version: upload.parsed.version });
    }
    const acteeId = crypto.randomUUID();
    await tx.db.insert(actees).values({ id: acteeId, species: species.form, parent: project.acteeId });
    // As Central, the draft's Enketo id is asked for even when the form is published at once.
    const draftToken = generateToken();
    const draftEnketoId = await requestDraftEnketoId(tx, { projectId: project.id, xmlFormId, draftToken }, input.origin, ENKETO_REQUEST_BOUND_MS);
    const [form] = await tx.db
      .insert(forms)
      .values({
        projectId: project.id, xmlFormId, acteeId, createdBy: tx.auth.actor?.id ?? null,
        draftToken: input.publish ? null : draftToken, draftEnketoId: input.publish ? null : draftEnketoId,
      })
      .returning();
    // form.create comes before what publishing logs (dataset.create / dataset.update), as Central.
    await audit(tx, tx, 'form.create', acteeId, null, input.notes);
    // Published at creation: published "when created" (publishedAt = createdAt, as Central).
    const def = await insertDef(tx, form!, await applyProjectKey(tx, project.id, upload), input.publish ? form!.createdAt : false, input.notes ?? null, true);
    let ids: { enketoId: string; enketoOnceId: string } | null = null;
    if (input.publish) {
      ids = usesEnketo(tx) ? await requestFormEnketoIds(tx, form!, input.origin, ENKETO_REQUEST_BOUND_MS) : publicFormIds();
      if (ids == null) await retryPublishLater(tx, form!.id, input.origin);
    } else if (usesEnketo(tx) && draftEnketoId == null) {
      await retryDraftLater(tx, form!.id, draftToken, input.origin);
    }
    const [saved] = await tx.db
      .update(forms)
      .set(input.publish ? { currentDefId: def.id, ...(ids ?? {}) } : { draftDefId: def.id })
      .where(eq(forms.id, form!.id))
      .returning();
    if (input.publish) await audit(tx, tx, 'form.update.publish', acteeId, { oldDefId: null, newDefId: def.id }, input.notes);
    return formJson(saved!, def);
  });
}

/** One form (GET F); extended adds counts, createdBy and, for form.update holders, publishNotes. */
export async function getForm(ctx: Ctx, projectId: number, xmlFormId: string, extended: boolean) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canReadFormOrReject(ctx, f);
  const def = await displayedDef(ctx, f.form);
  const json = formJson(f.form, def);
  if (!extended) return json;
  const mayUpdate = await can(ctx, 'form.update', { acteeId: f.form.acteeId, species: species.form, parents: [f.project.acteeId] });
  return { ...json, ...(await extendedFormFields(ctx, f.form, def)), ...(mayUpdate ? { publishNotes: def.publishNotes } : {}) };
}

/**
 * A published form by its public id (GET /v1/form-links/{enketoId}/form), as the Web Forms app
 * resolves a public link's `/f/{enketoId}?st=…` URL, or a draft by its own Enketo id (form.update
 * only). Also accepts the form's `enketoOnceId`:
 * Central's single-use link URLs carry it and Enketo resolves it; without Enketo, this is where it
 * must resolve.
 * @returns Form JSON (published version). Rights as Central's canReadForm: `form.read`, or
 *   `open_form.read` while the form is not closed.
 * @throws 404.1 no live form has that id; 401.2 anonymous; 403.1 without those rights. Reads only.
 */
export async function getFormByPublicId(ctx: Ctx, enketoId: string): Promise<FormJson> {
  // A draft's own Enketo id (Enketo configured) names the draft; only form.update reads it.
  const [draft] = await ctx.db
    .select({ projectId: forms.projectId, xmlFormId: forms.xmlFormId })
    .from(forms)
    .where(and(eq(forms.draftEnketoId, enketoId), isNull(forms.deletedAt), isNotNull(forms.draftDefId)));
  if (draft) {
    const f = await getFormOrNotFound(ctx, draft.projectId, draft.xmlFormId);
    await canOnFormOrReject(ctx, 'form.update', f);
    return formJson(f.form, await getDefOrNotFound(ctx, f.form.draftDefId));
  }
  const [row] = await ctx.db
    .select({ projectId: forms.projectId, xmlFormId: forms.xmlFormId })
    .from(forms)
    .where(and(or(eq(forms.enketoId, enketoId), eq(forms.enketoOnceId, enketoId)), isNull(forms.deletedAt), isNotNull(forms.currentDefId)));
  if (!row) throw problems.user.notFound();
  const f = await getFormOrNotFound(ctx, row.projectId, row.xmlFormId);
  await canReadFormOrReject(ctx, f);
  return formJson(f.form, await getDefOrNotFound(ctx, f.form.currentDefId));
}

export const PatchFormInput = z.object({
  state: z.enum(['open', 'closing', 'closed']).optional(),
  webformsEnabled: z.boolean().optional(),
});

/**
 * Changes a form's state (open, closing, closed) or webformsEnabled (PATCH F).
 * @returns Form JSON. Effects: forms row, updatedAt; audit `form.update` `{ data }`.
 * @throws 404.1; 403.1 without form.update; 400.x bad body (unknown state: 400.8).
 */
export async function patchForm(ctx: Ctx, projectId: number, xmlFormId: string, body: unknown): Promise<FormJson> {
  return withTx(ctx, async (tx) => {
    const f = await getFormOrNotFound(tx, projectId, xmlFormId);
    await canOnFormOrReject(tx, 'form.update', f);
    const data = parseInput(PatchFormInput, body);
    const [form] = await tx.db.update(forms).set({ ...data, updatedAt: new Date() }).where(eq(forms.id, f.form.id)).returning();
    await audit(tx, tx, 'form.update', f.form.acteeId, { data });
    return formJson(form!, await displayedDef(tx, form!));
  });
}

/**
 * Moves a form to the Trash (DELETE F); its xmlFormId is free again. Restorable for 30 days.
 * Effects: forms.deletedAt, draft token cleared; audit `form.delete`. @throws 404.1; 403.1 without form.delete.
 */
export async function deleteForm(ctx: Ctx, projectId: number, xmlFormId: string): Promise<void> {
  await withTx(ctx, async (tx) => {
    const f = await getFormOrNotFound(tx, projectId, xmlFormId);
    await canOnFormOrReject(tx, 'form.delete', f);
    await tx.db.update(forms).set({ deletedAt: new Date(), draftToken: null }).where(eq(forms.id, f.form.id));
    await audit(tx, tx, 'form.delete', f.form.acteeId, null);
  });
}

/**
 * Restores a form from the Trash by numeric id (POST P/forms/{id}/restore).
 * Effects: clears deletedAt; audit `form.restore`.
 * @throws 404.1 not in the Trash (or purged); 403.1 without form.restore; 409.3 a live form now has
 *   the same xmlFormId; 409.23 it writes to or links a Dataset deleted since.
 */
export async function restoreForm(ctx: Ctx, projectId: number, formId: number): Promise<void> {
  await withTx(ctx, async (tx) => {
    const project = await getProjectOrNotFound(tx, projectId);
    const [form] = await tx.db.select().from(forms).where(and(eq(forms.id, formId), eq(forms.projectId, project.id), isNotNull(forms.deletedAt)));
    if (!form) throw problems.user.notFound();
    await canOrReject(tx, 'form.restore', projectActee(project));
    const [live] = await tx.db.select().from(forms).where(and(eq(forms.projectId, project.id), eq(forms.xmlFormId, form.xmlFormId), isNull(forms.deletedAt)));
    if (live) throw problems.user.uniquenessViolation({ fields: ['projectId', 'xmlFormId'], values: [String(project.id), form.xmlFormId], table: 'forms' });
    if (await formDependsOnDeletedDataset(tx, form)) throw datasetMissingForFormRestore();
    await tx.db.update(forms).set({ deletedAt: null }).where(eq(forms.id, form.id));
    await audit(tx, tx, 'form.restore', form.acteeId, null);
  });
}

/**
 * The XML of the published definition (GET F.xml), or of the draft of a form never published (as
 * Central's F resources, which read the published version, else the draft; form.update only).
 * @throws 404.1; 403.1.
 */
export async function getFormXml(ctx: Ctx, projectId: number, xmlFormId: string): Promise<string> {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canReadFormOrReject(ctx, f);
  return (await displayedDef(ctx, f.form)).xml;
}

/** Schema fields (GET F/fields, F/draft/fields, F/versions/{v}/fields); `odata` sanitises names. */
function fieldsOut(fields: FormField[], odata: boolean): FormField[] {
  // jsonb storage reorders keys (name before path): rebuild Central's key order.
  const ordered = fields.map((f) => ({ path: f.path, name: f.name, type: f.type, binary: f.binary, selectMultiple: f.selectMultiple }));
  return odata ? odataFields(ordered) : ordered;
}

/** GET F/fields: of the published definition, else (never published) the draft's. @throws 404.1; 403.1. */
export async function getFields(ctx: Ctx, projectId: number, xmlFormId: string, odata: boolean): Promise<FormField[]> {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canReadFormOrReject(ctx, f);
  return fieldsOut((await displayedDef(ctx, f.form)).fields, odata);
}

// ---------------------------------------------------------------------------------------------
// Drafts

async function loadDraft(ctx: Ctx, projectId: number, xmlFormId: string, verb: string) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, verb, f);
  return { ...f, draft: await getDefOrNotFound(ctx, f.form.draftDefId) };
}

/** GET F/draft: Form JSON of the draft plus its draftToken. @throws 404.1 no draft; 403.1 without form.update. */
export async function getDraft(ctx: Ctx, projectId: number, xmlFormId: string, extended: boolean) {
  const { form, draft } = await loadDraft(ctx, projectId, xmlFormId, 'form.update');
  const json = formJson(form, draft, form.draftToken);
  return extended ? { ...json, ...(await extendedFormFields(ctx, form, draft, true)) } : json;
}

/** GET F/draft.xml. */
export async function getDraftXml(ctx: Ctx, projectId: number, xmlFormId: string): Promise<string> {
  return (await loadDraft(ctx, projectId, xmlFormId, 'form.update')).draft.xml;
}

/** GET F/draft/fields. */
export async function getDraftFields(ctx: Ctx, projectId: number, xmlFormId: string, odata: boolean): Promise<FormField[]> {
  return fieldsOut((await loadDraft(ctx, projectId, xmlFormId, 'form.update')).draft.fields, odata);
}

/**
 * Creates or replaces the draft (POST F/draft): from an uploaded XForm or XLSForm spreadsheet, or,
 * with an empty body and no Content-Type, a copy of the published definition (which keeps its
 * spreadsheet). The Draft Token and attachments whose name and type still match carry over. A
 * field may not change type from any earlier version (400.17); conversion warnings and removed
 * fields (a Structure Change) fail together as one 400.16 unless ignoreWarnings.
 * Effects: new draft definition (the previous draft and its test submissions are deleted); for a
 *   spreadsheet its blob and itemsets.csv; audit `form.update.draft.set` or `form.update.draft.replace`.
 * @throws 404.1; 403.1 without form.update; 400.2 `{ field: 'xml' }` no body and nothing published
 *   to copy; 400.x parse errors; 400.6 a malformed fallback
 *   header; 400.8 a different xmlFormId; 400.15 the spreadsheet does not convert; 400.16; 400.17.
 */
export async function setDraft(ctx: Ctx, projectId: number, xmlFormId: string, input: UploadInput): Promise<void> {
  const copy = input.body.byteLength === 0 && (input.contentType == null || input.contentType === '');
  let uploaded: Upload | null = null;
  if (!copy) {
    // 404 and 403 come before parse errors; the conversion (CPU work) then runs outside the transaction.
    await canOnFormOrReject(ctx, 'form.update', await getFormOrNotFound(ctx, projectId, xmlFormId));
    uploaded = readUpload(input.body, input.contentType, input.formIdFallback ?? null, await loadXlsForm());
  }
  await withTx(ctx, async (tx) => {
    const f = await getFormOrNotFound(tx, projectId, xmlFormId);
    await canOnFormOrReject(tx, 'form.update', f);
    const published = f.form.currentDefId == null ? null : await getDefOrNotFound(tx, f.form.currentDefId);
    let upload: Upload;
    if (uploaded) {
      upload = uploaded;
    } else {
      // Nothing to copy (never published): as Central, the missing body is the problem.
      if (!published) throw problems.user.missingParameter({ field: 'xml' });
      upload = readUpload(new TextEncoder().encode(published.xml), 'application/xml');
      if (published.xlsBlobId != null) upload.xls = { blobId: published.xlsBlobId, contentType: published.xlsContentType ?? 'application/octet-stream' };
    }
    const p = upload.parsed;
    if (p.xmlFormId !== f.form.xmlFormId) {
      throw problems.user.unexpectedValue({ field: 'xmlFormId', value: p.xmlFormId, reason: 'does not match the form you are updating' });
    }
    // No meta check here: Central checks it only when a form is created (a later version may drop
    // meta, e.g. to stop writing entities).
    const earlier = await tx.db.select({ fields: formDefs.fields }).from(formDefs)
      .where(and(eq(formDefs.formId, f.form.id), isNotNull(formDefs.publishedAt))).orderBy(asc(formDefs.publishedAt), asc(formDefs.id));
    checkFieldTypes(earlier.map((d) => d.fields), p.fields);
    const removed = removedFields(published?.fields ?? null, p.fields);
    if (!input.ignoreWarnings) {
      rejectIfWarnings(upload.xlsFormWarnings, [...(removed.length > 0 ? [{ type: 'structureChanged', details: removed }] : []), ...upload.entityWarnings]);
    }
    const previousDraftId = f.form.draftDefId;
    // A replaced draft keeps its Draft Token and Enketo id; a new draft gets new ones.
    let { draftToken, draftEnketoId } = f.form;
    const newDraft = draftToken == null;
    if (draftToken == null) {
      draftToken = generateToken();
      draftEnketoId = await requestDraftEnketoId(tx, { projectId: f.form.projectId, xmlFormId: f.form.xmlFormId, draftToken }, input.origin, ENKETO_REQUEST_BOUND_MS);
    }
    const def = await insertDef(tx, f.form, await applyProjectKey(tx, f.form.projectId, upload), false);
    const source = previousDraftId ?? f.form.currentDefId;
    if (source != null) await carryAttachments(tx, source, def.id);
    await tx.db
      .update(forms)
      .set({ draftDefId: def.id, draftToken, draftEnketoId, updatedAt: new Date() })
      .where(eq(forms.id, f.form.id));
    if (newDraft && usesEnketo(tx) && draftEnketoId == null) await retryDraftLater(tx, f.form.id, draftToken, input.origin);
    if (previousDraftId != null) {
      // Test submissions belong to the draft they were made against (Central clears them too).
      await deleteDraftSubmissions(tx, f.form);
      await deleteUnpublishedDef(tx, previousDraftId);
    }
    await audit(tx, tx, previousDraftId != null ? 'form.update.draft.replace' : 'form.update.draft.set', f.form.acteeId, { newDraftDefId: def.id });
  });
}

/**
 * Publishes the draft (POST F/draft/publish). `version` first replaces the draft's version string
 * (the XML changes, and so its hashes); `notes` come from X-Action-Notes.
 * Effects: the draft becomes the current definition; draft token ends; draft submissions removed;
 *   on the first publication the form gets its public ids (enketoId, enketoOnceId); audit `form.update.publish`.
 * @throws 404.1 no draft; 403.1 without form.update; 409.6 that version was already published.
 */
export async function publishDraft(
  ctx: Ctx, projectId: number, xmlFormId: string, version: string | undefined, notes: string | null, origin: string | null = null,
): Promise<void> {
  await withTx(ctx, async (tx) => {
    const { form, draft } = await loadDraft(tx, projectId, xmlFormId, 'form.update');
    let def = draft;
    if (version != null) {
      const xml = setFormVersion(draft.xml, version);
      const parsed = readUpload(new TextEncoder().encode(xml), 'application/xml').parsed;
      [def] = await tx.db
        .update(formDefs)
        .set({ xml, version: parsed.version, hash: parsed.hash, sha: parsed.sha, sha256: parsed.sha256 })
        .where(eq(formDefs.id, draft.id))
        .returning() as [typeof draft];
    }
    if (await versionPublishedBefore(tx, form.projectId, form.xmlFormId, def.version)) throw problems.form.versionUniquenessViolation({ xmlFormId: form.xmlFormId, version: def.version });
    // The form's Enketo ids, when it lacks them: from Enketo (a background retry when it fails),
    // else drawn here for Web Forms.
    let ids: { enketoId: string; enketoOnceId: string } | null = null;
    if (form.enketoId == null || form.enketoOnceId == null) {
      ids = usesEnketo(tx) ? await requestFormEnketoIds(tx, form, origin, ENKETO_REQUEST_BOUND_MS) : publicFormIds();
      if (ids == null) await retryPublishLater(tx, form.id, origin);
    }
    await tx.db.update(formDefs).set({ publishedAt: new Date(), publishedBy: tx.auth.actor?.id ?? null, publishNotes: notes }).where(eq(formDefs.id, def.id));
    await tx.db
      .update(forms)
      .set({ currentDefId: def.id, draftDefId: null, draftToken: null, draftEnketoId: null, updatedAt: new Date(), ...(ids ?? {}) })
      .where(eq(forms.id, form.id));
    await deleteDraftSubmissions(tx, form);
    await autoLinkDatasets(tx, form.projectId, def.id, await publishDatasets(tx, def.id));
    await audit(tx, tx, 'form.update.publish', form.acteeId, { oldDefId: form.currentDefId, newDefId: def.id }, notes);
  });
}

/**
 * Deletes the draft (DELETE F/draft); the published version stays.
 * Effects: draft definition, its attachment rows and draft submissions removed, token ended; audit
 *   `form.update.draft.delete`.
 * @throws 404.1 no draft; 403.1 without form.update; 409.7 the form was never published.
 */
export async function deleteDraft(ctx: Ctx, projectId: number, xmlFormId: string): Promise<void> {
  await withTx(ctx, async (tx) => {
    const { form, draft } = await loadDraft(tx, projectId, xmlFormId, 'form.update');
    if (form.currentDefId == null) throw problems.form.noPublishedVersion();
    await tx.db.update(forms).set({ draftDefId: null, draftToken: null, draftEnketoId: null }).where(eq(forms.id, form.id));
    await deleteDraftSubmissions(tx, form);
    await deleteUnpublishedDef(tx, draft.id);
    await audit(tx, tx, 'form.update.draft.delete', form.acteeId, { oldDraftDefId: draft.id });
  });
}

// ---------------------------------------------------------------------------------------------
// Published versions

/** Central writes a blank version as `___` in version URLs. */
const versionFromUrl = (v: string) => (v === '___' ? '' : v);

/**
 * Who published each definition of a form, as Central reads it: the actor of the
 * `form.update.publish` audit entry whose details name that definition (`newDefId`); a definition
 * published without such an entry (an audit log cleared, a form made by the system) has none.
 * @param defIds the definitions asked about (a batch of the version list).
 * @returns def id → actors row. Reads only.
 */
async function publishersOf(ctx: Ctx, form: FormRow, defIds: number[]): Promise<Map<number, typeof actors.$inferSelect>> {
  if (defIds.length === 0) return new Map();
  const newDefId = sql<number>`(${audits.details} ->> 'newDefId')::int`;
  const rows = await ctx.db
    .select({ defId: newDefId, actor: actors })
    .from(audits)
    .innerJoin(actors, eq(actors.id, audits.actorId))
    .where(and(eq(audits.action, 'form.update.publish'), eq(audits.acteeId, form.acteeId), inArray(newDefId, defIds)))
    .orderBy(asc(audits.id));
  return new Map(rows.filter((r) => r.defId != null).map((r) => [r.defId, r.actor]));
}

/**
 * All published versions, newest first (GET F/versions). Read as the form (Central's canReadForm:
 * App Users, Data Collectors and public links too). Extended adds excelContentType, publishedBy
 * (from the audit log) and, for `form.update` holders only, publishNotes. Read by keyset in batches
 * of 1,000 (lib/db/keyset.ts) for a streamed answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of Form JSON.
 * @throws 404.1; 401.2/403.1 without read rights (before the first batch). Reads only.
 */
export async function listVersions(ctx: Ctx, projectId: number, xmlFormId: string, extended: boolean) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canReadFormOrReject(ctx, f);
  // publishedDefs' order.
  const ks = keyset([{ expr: formDefs.publishedAt, type: 'timestamptz', desc: true }, { expr: formDefs.id, type: 'int', desc: true }]);
  const defs = keysetRead(ks, (after, limit) => ctx.db.select({ d: formDefs, ...ks.fields }).from(formDefs)
    .where(and(eq(formDefs.formId, f.form.id), isNotNull(formDefs.publishedAt), after)).orderBy(...ks.orderBy).limit(limit));
  const mayUpdate = extended && await can(ctx, 'form.update', formActee(f));
  return mapBatches(defs, async (batch) => {
    if (!extended) return batch.map(({ d }) => formJson(f.form, d));
    const publishers = await publishersOf(ctx, f.form, batch.map(({ d }) => d.id));
    const out = [];
    for (const { d } of batch) {
      const by = publishers.get(d.id);
      out.push({
        ...formJson(f.form, d), ...(await extendedFormFields(ctx, f.form, d)), publishedBy: by ? actorJson(by) : null,
        ...(mayUpdate ? { publishNotes: d.publishNotes } : {}),
      });
    }
    return out;
  });
}

/**
 * One published version by its version string (`___` for the blank version), read as the form
 * (canReadForm, as Central's version resources). @throws 404.1; 401.2/403.1.
 */
export async function getVersion(ctx: Ctx, projectId: number, xmlFormId: string, version: string) {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canReadFormOrReject(ctx, f);
  const def = (await publishedDefs(ctx, f.form.id)).find((d) => d.version === versionFromUrl(version));
  if (!def) throw problems.user.notFound();
  return { ...f, def };
}

/** GET F/versions/{version}; extended adds the extended form fields and, for form.update holders, publishNotes. */
export async function getVersionJson(ctx: Ctx, projectId: number, xmlFormId: string, version: string, extended = false) {
  const v = await getVersion(ctx, projectId, xmlFormId, version);
  const json = formJson(v.form, v.def);
  if (!extended) return json;
  const mayUpdate = await can(ctx, 'form.update', formActee(v));
  return { ...json, ...(await extendedFormFields(ctx, v.form, v.def)), ...(mayUpdate ? { publishNotes: v.def.publishNotes } : {}) };
}

/** GET F/versions/{version}/fields. */
export async function getVersionFields(ctx: Ctx, projectId: number, xmlFormId: string, version: string, odata: boolean) {
  return fieldsOut((await getVersion(ctx, projectId, xmlFormId, version)).def.fields, odata);
}

// ---------------------------------------------------------------------------------------------
// Trash purge

/**
 * Purges forms that have been in the Trash longer than 30 days (or all of them with `force`):
 * their definitions, attachment rows, assignments, public links (revoked) and actee go, and blobs
 * no longer referenced are deleted from the database and the store. A maintenance job (CLI `purge`).
 * @returns the purged forms' ids. Effects: deletes rows and blobs; audit `form.purge` per form.
 */
export async function purgeForms(ctx: Ctx, opts: { force: boolean; now?: Date }): Promise<number[]> {
  const cutoff = new Date((opts.now ?? new Date()).getTime() - TRASH_DAYS * 86_400_000);
  const doomed = await ctx.db
    .select()
    .from(forms)
    .where(opts.force ? isNotNull(forms.deletedAt) : and(isNotNull(forms.deletedAt), lt(forms.deletedAt, cutoff)))
    .orderBy(desc(forms.id));
  const purged: number[] = [];
  for (const form of doomed) {
    await withTx(ctx, async (tx) => {
      await purgeOne(tx, form);
      await audit(tx, tx, 'form.purge', form.acteeId, { formId: form.id, xmlFormId: form.xmlFormId });
    });
    purged.push(form.id);
  }
  const { deleteUnreferencedBlobs } = await import('./attachments');
  await deleteUnreferencedBlobs(ctx);
  return purged;
}

async function purgeOne(tx: Ctx, form: FormRow): Promise<void> {
  await tx.db.update(forms).set({ currentDefId: null, draftDefId: null }).where(eq(forms.id, form.id));
  // The form's submissions go with it (spec, Form lifecycle: "Form, resources and submissions purged").
  const subIds = tx.db.select({ id: submissions.id }).from(submissions).where(eq(submissions.formId, form.id));
  const defIds = tx.db.select({ id: submissionDefs.id }).from(submissionDefs).where(inArray(submissionDefs.submissionId, subIds));
  await tx.db.update(submissions).set({ currentDefId: null }).where(eq(submissions.formId, form.id));
  await tx.db.delete(submissionAttachments).where(inArray(submissionAttachments.submissionDefId, defIds));
  await tx.db.delete(submissionDefs).where(inArray(submissionDefs.submissionId, subIds));
  await tx.db.delete(submissions).where(eq(submissions.formId, form.id));
  await tx.db.delete(formAttachments).where(eq(formAttachments.formId, form.id));
  for (const d of await tx.db.select({ id: formDefs.id }).from(formDefs).where(eq(formDefs.formId, form.id))) {
    await forgetDefinition(tx, d.id);
  }
  await tx.db.delete(formDefs).where(eq(formDefs.formId, form.id));
  await tx.db.delete(assignments).where(eq(assignments.acteeId, form.acteeId));
  // Its public links go with it (Central cascades public_links on a form's deletion); their tokens die.
  const linkActors = tx.db.select({ id: publicLinks.actorId }).from(publicLinks).where(eq(publicLinks.formId, form.id));
  await tx.db.delete(sessions).where(inArray(sessions.actorId, linkActors));
  await tx.db.update(actors).set({ deletedAt: new Date() }).where(and(inArray(actors.id, linkActors), isNull(actors.deletedAt)));
  await tx.db.delete(publicLinks).where(eq(publicLinks.formId, form.id));
  await tx.db.delete(forms).where(eq(forms.id, form.id));
  await tx.db.update(actees).set({ purgedAt: new Date() }).where(eq(actees.id, form.acteeId));
}

/**
 * What publishing would change in Datasets (GET F/dataset-diff and F/draft/dataset-diff), which the
 * UI shows before publishing: `[{ name, isNew?, properties: [{ name, isNew?, inForm }] }]` (isNew
 * for the draft only; lib/datasets `datasetDiffForDef`).
 * @throws 404.1 unknown form (or no draft / never published); 401.2/403.1 without form.read
 *   (draft: form.update), or without dataset.list on the project. Reads only.
 */
export async function datasetDiff(ctx: Ctx, projectId: number, xmlFormId: string, draft: boolean): Promise<unknown[]> {
  if (draft) {
    const { draft: def, project } = await loadDraft(ctx, projectId, xmlFormId, 'form.update');
    // As Central, seeing what a form does to Datasets also needs dataset.list on the project.
    await canOrReject(ctx, 'dataset.list', projectActee(project));
    return datasetDiffForDef(ctx, def, true);
  }
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canReadFormOrReject(ctx, f);
  await canOrReject(ctx, 'dataset.list', projectActee(f.project));
  if (f.form.currentDefId == null) throw problems.user.notFound();
  return datasetDiffForDef(ctx, await getDefOrNotFound(ctx, f.form.currentDefId), false);
}
