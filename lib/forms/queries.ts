import { and, count, desc, eq, isNotNull, isNull, max, sql } from 'drizzle-orm';
import {
  actors, formAttachments, formDefs, forms, projects, publicLinks, sessions, submissions, type FormDefRow, type FormRow, type ProjectRow,
} from '../../drizzle/schema';
import { actorJson, iso } from '../actors';
import { can, canOrReject, rejection, type ActeeRef } from '../authz/can';
import { species } from '../authz/verbs';
import type { Ctx } from '../context';
import { problems } from '../problem';
import { getProjectOrNotFound } from '../projects';

/** A live form with its project. */
export interface LoadedForm {
  form: FormRow;
  project: ProjectRow;
}

/** The actee of a form: grants on the form, its project, 'form' or '*' apply. */
export const formActee = (f: LoadedForm): ActeeRef => ({ acteeId: f.form.acteeId, species: species.form, parents: [f.project.acteeId] });

/** Loads a live form of a live project. @throws Problem 404.1. Reads only. */
export async function getFormOrNotFound(ctx: Ctx, projectId: number, xmlFormId: string): Promise<LoadedForm> {
  const project = await getProjectOrNotFound(ctx, projectId);
  const [form] = await ctx.db
    .select()
    .from(forms)
    .where(and(eq(forms.projectId, project.id), eq(forms.xmlFormId, xmlFormId), isNull(forms.deletedAt)));
  if (!form) throw problems.user.notFound();
  return { form, project };
}

/** Loads one definition. @throws Problem 404.1 when the id is null or unknown. */
export async function getDefOrNotFound(ctx: Ctx, defId: number | null): Promise<FormDefRow> {
  if (defId == null) throw problems.user.notFound();
  const [def] = await ctx.db.select().from(formDefs).where(eq(formDefs.id, defId));
  if (!def) throw problems.user.notFound();
  return def;
}

/**
 * Reading a form (Central's canReadForm): a form never published is read only with `form.update`
 * (viewers and data collectors do not see drafts); a closed one with `form.read`; otherwise
 * `form.read` or `open_form.read` (App Users, Data Collectors and public links).
 * @throws Problem 401.2 / 403.1.
 */
export async function canReadFormOrReject(ctx: Ctx, f: LoadedForm): Promise<void> {
  if (f.form.currentDefId == null) return canOrReject(ctx, 'form.update', formActee(f));
  if (await can(ctx, 'form.read', formActee(f))) return;
  if (f.form.state !== 'closed' && (await can(ctx, 'open_form.read', formActee(f)))) return;
  throw rejection(ctx);
}

/** @throws 403.1 without `verb` on the form. */
export const canOnFormOrReject = (ctx: Ctx, verb: string, f: LoadedForm) => canOrReject(ctx, verb, formActee(f));

/** Form JSON in Central's key order (shared/fixtures/central-outputs/simple/api/form.json). */
export interface FormJson {
  projectId: number;
  xmlFormId: string;
  state: string;
  enketoId: string | null;
  enketoOnceId: string | null;
  createdAt: string;
  updatedAt: string | null;
  webformsEnabled: boolean;
  keyId: number | null;
  version: string;
  hash: string;
  sha: string;
  sha256: string;
  draftToken: string | null;
  publishedAt: string | null;
  name: string | null;
}

/**
 * @param def the definition whose metadata to show (the published one, else the draft).
 * @param draftToken shown in draft responses; by default a draft (never-published) definition shows
 *   the form's token, as Central's create response does. Pure.
 */
export function formJson(form: FormRow, def: FormDefRow, draftToken: string | null = def.publishedAt == null ? form.draftToken : null): FormJson {
  return {
    projectId: form.projectId,
    xmlFormId: form.xmlFormId,
    state: form.state,
    // As Central: the current draft shows its own Enketo id; the published version the form's
    // ids; an older version neither.
    enketoId: def.id === form.draftDefId ? form.draftEnketoId : def.id === form.currentDefId ? form.enketoId : null,
    enketoOnceId: def.id === form.currentDefId ? form.enketoOnceId : null,
    createdAt: form.createdAt.toISOString(),
    updatedAt: iso(form.updatedAt),
    webformsEnabled: form.webformsEnabled,
    keyId: def.keyId,
    version: def.version,
    hash: def.hash,
    sha: def.sha,
    sha256: def.sha256,
    draftToken,
    publishedAt: iso(def.publishedAt),
    name: def.name,
  };
}

/** The definition a form shows by default: the published one, else its draft. */
export async function displayedDef(ctx: Ctx, form: FormRow): Promise<FormDefRow> {
  return getDefOrNotFound(ctx, form.currentDefId ?? form.draftDefId);
}

/**
 * Extended form metadata (X-Extended-Metadata): submission counts (live, not draft; with
 * `draftSubmissions`, GET F/draft, the draft's test submissions instead, as Central), review state
 * counts, last submission and creator, excelContentType (the spreadsheet's type when `def` was
 * converted from an XLSForm, else null), publicLinks (live public links: those whose session
 * still exists, as Central counts them).
 */
export async function extendedFormFields(ctx: Ctx, form: FormRow, def: FormDefRow, draftSubmissions = false) {
  const [creator] = form.createdBy == null ? [] : await ctx.db.select().from(actors).where(eq(actors.id, form.createdBy));
  const [stats] = await ctx.db
    .select({
      total: count(),
      received: sql<number>`count(*) filter (where ${submissions.reviewState} is null or ${submissions.reviewState} = 'received')`.mapWith(Number),
      hasIssues: sql<number>`count(*) filter (where ${submissions.reviewState} = 'hasIssues')`.mapWith(Number),
      edited: sql<number>`count(*) filter (where ${submissions.reviewState} = 'edited')`.mapWith(Number),
      last: max(submissions.createdAt),
    })
    .from(submissions)
    .where(and(eq(submissions.formId, form.id), eq(submissions.draft, draftSubmissions), isNull(submissions.deletedAt)));
  const [links] = await ctx.db
    .select({ n: count() })
    .from(publicLinks)
    .where(and(eq(publicLinks.formId, form.id), sql`exists (select 1 from ${sessions} where ${sessions.actorId} = ${publicLinks.actorId})`));
  return {
    submissions: stats?.total ?? 0,
    entityRelated: def.datasets.length > 0,
    reviewStates: { received: stats?.received ?? 0, hasIssues: stats?.hasIssues ?? 0, edited: stats?.edited ?? 0 },
    lastSubmission: iso(stats?.last ?? null),
    excelContentType: def.xlsContentType,
    publicLinks: links?.n ?? 0,
    createdBy: creator ? actorJson(creator) : null,
  };
}

/** Published definitions of a form, newest first. */
export async function publishedDefs(ctx: Ctx, formId: number): Promise<FormDefRow[]> {
  return ctx.db
    .select()
    .from(formDefs)
    .where(and(eq(formDefs.formId, formId), isNotNull(formDefs.publishedAt)))
    .orderBy(desc(formDefs.publishedAt), desc(formDefs.id));
}

/** Attachments rows of one definition. */
export async function defAttachments(ctx: Ctx, defId: number) {
  return ctx.db.select().from(formAttachments).where(eq(formAttachments.formDefId, defId)).orderBy(formAttachments.name);
}

export { projects };
