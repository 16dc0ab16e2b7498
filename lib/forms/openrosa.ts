import { and, asc, eq, inArray, isNotNull, isNull } from 'drizzle-orm';
import { assignments, formAttachments, blobs, formDefs, forms, roles } from '../../drizzle/schema';
import { requireActor } from '../authz/can';
import { species } from '../authz/verbs';
import type { Ctx } from '../context';
import { problems } from '../problem';
import { getProjectOrNotFound } from '../projects';
import { renderFormList, renderManifest, type FormListEntry } from '../xforms/openrosa-xml';
import { fileOf, type AttachmentFile } from './attachments';
import { canReadFormOrReject, getDefOrNotFound, getFormOrNotFound } from './queries';

/**
 * Where URLs in OpenRosa documents point: the server's public origin plus the prefix the client
 * used (`/v1/key/{token}` for App Users), so Collect keeps authenticating the same way.
 */
export interface UrlBase {
  origin: string;
  /** '/v1' or '/v1/key/{token}'. */
  prefix: string;
}

const enc = encodeURIComponent;

/**
 * The OpenRosa form list of a project (GET P/formList): published, open forms the actor may read
 * (form.read, or open_form.read: App Users on their assigned forms, Data Collectors on the project).
 * Closing and closed forms are not offered. formID, deviceID, verbose and listAllVersions are
 * accepted and ignored, as the spec states; never an xforms-group.
 * @returns the xformsList XML. @throws 401.2 anonymous; 404.1 unknown project.
 */
export async function formList(ctx: Ctx, projectId: number, base: UrlBase): Promise<string> {
  const actor = requireActor(ctx);
  const project = await getProjectOrNotFound(ctx, projectId);
  const grants = await ctx.db
    .select({ acteeId: assignments.acteeId, verbs: roles.verbs })
    .from(assignments)
    .innerJoin(roles, eq(roles.id, assignments.roleId))
    .where(eq(assignments.actorId, actor.id));
  const readable = (acteeIds: string[]) =>
    grants.some((g) => acteeIds.includes(g.acteeId) && (g.verbs.includes('form.read') || g.verbs.includes('open_form.read')));
  const rows = await ctx.db
    .select({ form: forms, def: formDefs })
    .from(forms)
    .innerJoin(formDefs, eq(formDefs.id, forms.currentDefId))
    .where(and(eq(forms.projectId, project.id), isNull(forms.deletedAt), eq(forms.state, 'open')))
    .orderBy(asc(forms.xmlFormId));
  const visible = rows.filter((r) => readable([species.all, species.form, project.acteeId, r.form.acteeId]));
  const withAttachments = new Set(
    visible.length === 0 ? [] : (await ctx.db
      .selectDistinct({ defId: formAttachments.formDefId })
      .from(formAttachments)
      .where(inArray(formAttachments.formDefId, visible.map((r) => r.def.id)))).map((r) => r.defId),
  );
  const entries: FormListEntry[] = visible.map(({ form, def }) => {
    const formUrl = `${base.origin}${base.prefix}/projects/${project.id}/forms/${enc(form.xmlFormId)}`;
    return {
      xmlFormId: form.xmlFormId,
      name: def.name ?? form.xmlFormId,
      version: def.version,
      hash: def.hash,
      downloadUrl: `${formUrl}.xml`,
      manifestUrl: withAttachments.has(def.id) ? `${formUrl}/manifest` : null,
    };
  });
  return renderFormList(entries);
}

async function manifestFor(ctx: Ctx, defId: number, attachmentBase: string): Promise<string> {
  const rows = await ctx.db
    .select({ name: formAttachments.name, md5: blobs.md5 })
    .from(formAttachments)
    .innerJoin(blobs, eq(blobs.id, formAttachments.blobId))
    .where(and(eq(formAttachments.formDefId, defId), isNotNull(formAttachments.blobId)))
    .orderBy(asc(formAttachments.name));
  return renderManifest(rows.map((r) => ({ filename: r.name, hash: r.md5, downloadUrl: `${attachmentBase}/${enc(r.name)}` })));
}

/**
 * The manifest of a published form (GET F/manifest): the files the server holds, with `md5:` hashes
 * and download URLs. @throws 401.2/403.1; 404.1 unknown or never-published form.
 */
export async function manifest(ctx: Ctx, projectId: number, xmlFormId: string, base: UrlBase): Promise<string> {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canReadFormOrReject(ctx, f);
  const def = await getDefOrNotFound(ctx, f.form.currentDefId);
  return manifestFor(ctx, def.id, `${base.origin}${base.prefix}/projects/${f.project.id}/forms/${enc(f.form.xmlFormId)}/attachments`);
}

/**
 * Finds the form a Draft Token opens (/v1/test/{token}/projects/{p}/forms/{f}/draft/…). A Draft
 * Token is not an Actor; it works only while that draft exists.
 * @throws Problem 404.4 when the token matches no current draft of that form.
 */
export async function formByDraftToken(ctx: Ctx, token: string, projectId: number, xmlFormId: string) {
  const [form] = await ctx.db
    .select()
    .from(forms)
    .where(and(eq(forms.draftToken, token), eq(forms.projectId, projectId), eq(forms.xmlFormId, xmlFormId), isNull(forms.deletedAt)));
  if (!form || form.draftDefId == null) throw problems.form.failedDraftAccess();
  return { form, draft: await getDefOrNotFound(ctx, form.draftDefId) };
}

const draftBase = (origin: string, token: string, projectId: number, xmlFormId: string) =>
  `${origin}/v1/test/${token}/projects/${projectId}/forms/${enc(xmlFormId)}/draft`; // a stored token: [A-Za-z0-9!$], echoed as is

/** The draft's form list for its Draft Token: that one form, pointing at the draft paths. */
export async function draftFormList(ctx: Ctx, token: string, projectId: number, xmlFormId: string, origin: string): Promise<string> {
  const { form, draft } = await formByDraftToken(ctx, token, projectId, xmlFormId);
  const url = draftBase(origin, token, projectId, form.xmlFormId);
  const [hasAttachments] = await ctx.db.select({ n: formAttachments.name }).from(formAttachments).where(eq(formAttachments.formDefId, draft.id)).limit(1);
  return renderFormList([{
    xmlFormId: form.xmlFormId, name: draft.name ?? form.xmlFormId, version: draft.version, hash: draft.hash,
    downloadUrl: `${url}.xml`, manifestUrl: hasAttachments ? `${url}/manifest` : null,
  }]);
}

/** The draft's manifest for its Draft Token. @throws 404.4. */
export async function draftManifest(ctx: Ctx, token: string, projectId: number, xmlFormId: string, origin: string): Promise<string> {
  const { form, draft } = await formByDraftToken(ctx, token, projectId, xmlFormId);
  return manifestFor(ctx, draft.id, `${draftBase(origin, token, projectId, form.xmlFormId)}/attachments`);
}

/** The draft's XML for its Draft Token. @throws 404.4. */
export async function draftXmlByToken(ctx: Ctx, token: string, projectId: number, xmlFormId: string): Promise<string> {
  return (await formByDraftToken(ctx, token, projectId, xmlFormId)).draft.xml;
}

/** A draft attachment for its Draft Token. @throws 404.4; 404.1 not uploaded. */
export async function draftAttachmentByToken(ctx: Ctx, token: string, projectId: number, xmlFormId: string, name: string): Promise<AttachmentFile> {
  const { draft } = await formByDraftToken(ctx, token, projectId, xmlFormId);
  return fileOf(ctx, draft.id, name);
}
