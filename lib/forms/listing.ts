/**
 * The forms nested in the project list (GET /v1/projects?forms=true, spec: Project "Listing with
 * `forms=true` adds formList per project"): the web UI's home page reads each form's extended
 * fields (submission counts by review state, last submission) from it. One query for every
 * project, however many forms they hold (lists must scale).
 */
import { and, asc, count, eq, getTableColumns, inArray, isNull, max, sql } from 'drizzle-orm';
import { actors, formDefs, forms, publicLinks, sessions, submissions, type FormDefRow } from '../../drizzle/schema';
import { actorJson, iso } from '../actors';
import type { Ctx } from '../context';
import { formJson, type FormJson } from './queries';

/** Form JSON with the extended fields, in the key order of GET F with X-Extended-Metadata. */
export type ExtendedFormJson = FormJson & {
  submissions: number;
  entityRelated: boolean;
  reviewStates: { received: number; hasIssues: number; edited: number };
  lastSubmission: string | null;
  excelContentType: string | null;
  publicLinks: number;
  createdBy: ReturnType<typeof actorJson> | null;
};

/**
 * Whether an actor holding `verbs` on a project sees a form in its formList, as Central decides
 * for this list: a role with `form.read` or `open_form.read`; drafts (never published) only with
 * `form.update`; closed forms only with `form.read`. Pure.
 */
export function formVisibleInList(verbs: ReadonlySet<string>, form: { published: boolean; state: string }): boolean {
  if (!verbs.has('form.read') && !verbs.has('open_form.read')) return false;
  if (!form.published && !verbs.has('form.update')) return false;
  return form.state !== 'closed' || verbs.has('form.read');
}

/**
 * The formList of each project: its live forms the actor may see (formVisibleInList), each as
 * extended Form JSON (the published definition's metadata, else the draft's), ordered by name
 * (the xmlFormId when unnamed), as Central orders them.
 * @param verbsByProject project id → the verbs the actor holds on it (grants on '*', 'project'
 *   and the project itself).
 * @returns project id → forms (every given project has an entry, possibly []). Counts cover live
 *   (not deleted) non-draft submissions; `received` counts those not yet reviewed; publicLinks the
 *   live public links. Reads only: one query.
 */
export async function formListsByProject(ctx: Ctx, verbsByProject: ReadonlyMap<number, ReadonlySet<string>>): Promise<Map<number, ExtendedFormJson[]>> {
  const ids = [...verbsByProject.keys()];
  const out = new Map<number, ExtendedFormJson[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return out;
  const stats = ctx.db
    .select({
      formId: submissions.formId,
      total: count().as('total'),
      received: sql<number>`count(*) filter (where ${submissions.reviewState} is null or ${submissions.reviewState} = 'received')`.mapWith(Number).as('received'),
      hasIssues: sql<number>`count(*) filter (where ${submissions.reviewState} = 'hasIssues')`.mapWith(Number).as('has_issues'),
      edited: sql<number>`count(*) filter (where ${submissions.reviewState} = 'edited')`.mapWith(Number).as('edited'),
      last: max(submissions.createdAt).as('last'),
    })
    .from(submissions)
    .where(and(
      eq(submissions.draft, false), isNull(submissions.deletedAt),
      inArray(submissions.formId, ctx.db.select({ id: forms.id }).from(forms).where(and(inArray(forms.projectId, ids), isNull(forms.deletedAt)))),
    ))
    .groupBy(submissions.formId)
    .as('stats');
  // Every definition column but the heavy ones (XML, fields), which Form JSON does not show.
  const { xml: _xml, fields: _fields, ...defColumns } = getTableColumns(formDefs);
  const rows = await ctx.db
    .select({
      form: forms,
      def: defColumns,
      creator: actors,
      total: stats.total,
      received: stats.received,
      hasIssues: stats.hasIssues,
      edited: stats.edited,
      last: stats.last,
      // Live public links (their session still exists), as extendedFormFields counts them.
      publicLinks: sql<number>`(select count(*) from ${publicLinks} where ${publicLinks.formId} = ${forms.id}
        and exists (select 1 from ${sessions} where ${sessions.actorId} = ${publicLinks.actorId}))`.mapWith(Number),
    })
    .from(forms)
    .innerJoin(formDefs, eq(formDefs.id, sql`coalesce(${forms.currentDefId}, ${forms.draftDefId})`))
    .leftJoin(actors, eq(actors.id, forms.createdBy))
    .leftJoin(stats, eq(stats.formId, forms.id))
    .where(and(inArray(forms.projectId, ids), isNull(forms.deletedAt)))
    .orderBy(sql`coalesce(${formDefs.name}, ${forms.xmlFormId})`, asc(forms.xmlFormId), asc(forms.id));
  for (const r of rows) {
    const verbs = verbsByProject.get(r.form.projectId);
    if (!verbs || !formVisibleInList(verbs, { published: r.form.currentDefId != null, state: r.form.state })) continue;
    const def: FormDefRow = { ...r.def, xml: '', fields: [] };
    out.get(r.form.projectId)!.push({
      ...formJson(r.form, def),
      submissions: r.total ?? 0,
      entityRelated: def.datasets.length > 0,
      reviewStates: { received: r.received ?? 0, hasIssues: r.hasIssues ?? 0, edited: r.edited ?? 0 },
      lastSubmission: iso(r.last ?? null),
      excelContentType: def.xlsContentType,
      publicLinks: r.publicLinks,
      createdBy: r.creator ? actorJson(r.creator) : null,
    });
  }
  return out;
}
