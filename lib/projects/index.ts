import { and, asc, count, eq, inArray, isNull, max, notInArray, sql } from 'drizzle-orm';
import * as z from 'zod';
import { actees, actors, assignments, fieldKeys, forms, projects, roles, submissions, type ProjectRow } from '../../drizzle/schema';
import { iso } from '../actors';
import { audit } from '../audits/log';
import { canOrReject, speciesActee, type ActeeRef } from '../authz/can';
import { species } from '../authz/verbs';
import { withTx, type Ctx } from '../context';
import { keyset, keysetRead } from '../db/keyset';
import { arrayBatches, mapBatches } from '../http/json-stream';
import { prepared } from '../db/prepared';
import { problems } from '../problem';
import { parseInput } from '../validation';
import { canAssignRole } from '../assignments/rules';
import { lazyModule } from '../lazy';
const datasetsModule = lazyModule(() => import('../datasets'));
const listingModule = lazyModule(() => import('../forms/listing'));
// (cycles between lib folders: loaded on first use, then kept)

/** `datasetList`, `datasets`, `lastEntity` of a project in `?datasets=true`. Pure. */
function datasetListFor(verbs: Set<string>, d: { datasets: number; lastEntity: string | null; list: Array<Record<string, unknown>> }) {
  const list = verbs.has('dataset.list') ? d.list : [];
  return { datasetList: list, datasets: list.length, lastEntity: verbs.has('dataset.list') ? d.lastEntity : null };
}

/** Project JSON in Central's key order (spec, Project). */
export interface ProjectJson {
  id: number;
  name: string;
  description: string | null;
  archived: boolean | null;
  keyId: number | null;
  createdAt: string;
  updatedAt: string | null;
  deletedAt: string | null;
}

/** Project JSON in Central's key order from a projects row. Pure. */
export const projectJson = (p: ProjectRow): ProjectJson => ({
  id: p.id,
  name: p.name,
  description: p.description,
  archived: p.archived,
  keyId: p.keyId,
  createdAt: p.createdAt.toISOString(),
  updatedAt: iso(p.updatedAt),
  deletedAt: iso(p.deletedAt),
});

/** The actee of a project, for rights checks. */
export const projectActee = (p: Pick<ProjectRow, 'acteeId'>): ActeeRef => ({ acteeId: p.acteeId, species: species.project });

/** Loads a live project. @throws Problem 404.1 when missing or deleted. Reads only. */
export async function getProjectOrNotFound(ctx: Ctx, id: number): Promise<ProjectRow> {
  const [row] = Number.isSafeInteger(id)
    ? await prepared(ctx.db, 'project_by_id', (d) =>
      d.select().from(projects).where(and(eq(projects.id, sql.placeholder('id')), isNull(projects.deletedAt))).prepare('project_by_id'))
      .execute({ id })
    : [];
  if (!row) throw problems.user.notFound();
  return row;
}

/**
 * `archived` as PostgreSQL reads a boolean, as Central stores it: true/false, null, or a string
 * PostgreSQL takes as one ('true', 'yes', 'on', '1', 't', …). Anything else is Central's 400.11
 * from the database: `{ value, expected: 'type boolean' }`.
 */
const archivedInput = z.unknown().transform((v, c) => {
  if (v === undefined || v === null || typeof v === 'boolean') return v as boolean | null | undefined;
  const t = String(v).trim().toLowerCase();
  if (['t', 'true', 'y', 'yes', 'on', '1'].includes(t)) return true;
  if (['f', 'false', 'n', 'no', 'off', '0'].includes(t)) return false;
  c.addIssue({ code: 'custom', message: 'not a boolean' });
  return z.NEVER;
}).optional();
/** Checks `archived` first so its refusal has Central's shape. @returns body. @throws Problem 400.11. */
function checkArchived(body: unknown): unknown {
  if (body == null || typeof body !== 'object' || !('archived' in body)) return body;
  const v = (body as { archived: unknown }).archived;
  if (!archivedInput.safeParse(v).success) throw problems.user.invalidDataTypeOfParameter({ value: String(v), expected: 'type boolean' });
  return body;
}

const name = z.string().trim().min(1, 'must not be empty').max(10_000);
const description = z.string().max(100_000).nullable();
export const CreateProjectInput = z.object({ name, description: description.optional(), archived: archivedInput });
export const PatchProjectInput = z.object({ name: name.optional(), description: description.optional(), archived: archivedInput });
export const PutProjectInput = z.object({
  name,
  description: description.optional(),
  archived: archivedInput,
  forms: z
    .array(z.object({
      xmlFormId: z.string(),
      state: z.enum(['open', 'closing', 'closed']).optional(),
      webformsEnabled: z.boolean().optional(),
      assignments: z.array(z.object({ roleId: z.number().int(), actorId: z.number().int() })).optional(),
    }))
    .optional(),
});

interface Counts { forms: number; appUsers: number; datasets: number; lastSubmission: string | null; lastEntity: string | null }

async function countsFor(ctx: Ctx, ids: number[]): Promise<Map<number, Counts>> {
  const out = new Map<number, Counts>(ids.map((id) => [id, { forms: 0, appUsers: 0, datasets: 0, lastSubmission: null, lastEntity: null }]));
  if (ids.length === 0) return out;
  const formCounts = await ctx.db
    .select({ projectId: forms.projectId, n: count() })
    .from(forms)
    .where(and(inArray(forms.projectId, ids), isNull(forms.deletedAt)))
    .groupBy(forms.projectId);
  for (const r of formCounts) out.get(r.projectId)!.forms = r.n;
  const keyCounts = await ctx.db
    .select({ projectId: fieldKeys.projectId, n: count() })
    .from(fieldKeys)
    .innerJoin(actors, eq(actors.id, fieldKeys.actorId))
    .where(and(inArray(fieldKeys.projectId, ids), isNull(actors.deletedAt)))
    .groupBy(fieldKeys.projectId);
  for (const r of keyCounts) out.get(r.projectId)!.appUsers = r.n;
  const last = await ctx.db
    .select({ projectId: forms.projectId, at: max(submissions.createdAt) })
    .from(submissions)
    .innerJoin(forms, eq(forms.id, submissions.formId))
    .where(and(inArray(forms.projectId, ids), eq(submissions.draft, false), isNull(submissions.deletedAt)))
    .groupBy(forms.projectId);
  for (const r of last) out.get(r.projectId)!.lastSubmission = iso(r.at);
  // Read model of the lower lib/datasets (DESIGN: read models flow down).
  const { datasetCountsByProject } = await datasetsModule(); // loaded lazily: lib/datasets builds on lib/projects
  for (const [id, d] of await datasetCountsByProject(ctx, ids)) Object.assign(out.get(id)!, { datasets: d.datasets, lastEntity: d.lastEntity });
  return out;
}

/**
 * Verbs the actor holds on each live project: grants on '*' or 'project' apply to all of them,
 * grants on a project's own actee to that one. Two small queries, whatever the number of projects.
 */
async function verbsByProject(ctx: Ctx): Promise<Map<number, Set<string>>> {
  const actor = ctx.auth.actor;
  const out = new Map<number, Set<string>>();
  if (actor == null) return out;
  const grants = await ctx.db
    .select({ acteeId: assignments.acteeId, verbs: roles.verbs })
    .from(assignments)
    .innerJoin(roles, eq(roles.id, assignments.roleId))
    .where(eq(assignments.actorId, actor.id));
  const everywhere = new Set<string>();
  const byActee = new Map<string, Set<string>>();
  for (const g of grants) {
    if (g.acteeId === species.all || g.acteeId === species.project) {
      for (const v of g.verbs) everywhere.add(v);
    } else {
      let set = byActee.get(g.acteeId);
      if (!set) byActee.set(g.acteeId, (set = new Set()));
      for (const v of g.verbs) set.add(v);
    }
  }
  if (everywhere.size === 0 && byActee.size === 0) return out;
  const rows = await ctx.db
    .select({ id: projects.id, acteeId: projects.acteeId })
    .from(projects)
    .where(everywhere.size > 0
      ? isNull(projects.deletedAt)
      : and(isNull(projects.deletedAt), inArray(projects.acteeId, [...byActee.keys()])));
  for (const r of rows) out.set(r.id, new Set([...everywhere, ...(byActee.get(r.acteeId) ?? [])]));
  return out;
}

/**
 * Projects the caller may see (GET /v1/projects): those where it holds project.read and form.list
 * (or open_form.list). Anonymous callers get `[]` (spec, Authentication 2). Archived sort last, then
 * by name (ties by id), as Central. Read by keyset in batches of 1,000 (lib/db/keyset.ts), each
 * batch's counts, form lists and Dataset lists loaded for that batch, for a streamed answer
 * (lib/http/json-stream.ts).
 * @param opts extended: add counts; forms: add formList (the forms the actor may see, as extended Form
 *   JSON with submission counts, from one query per batch: lib/forms/listing) and set `forms` /
 *   `lastSubmission` from it; datasets: add datasetList (published Datasets with
 *   entities/lastEntity/conflicts, for holders of dataset.list) and set `datasets` / `lastEntity` from it.
 * @returns an async generator of batches of Project JSON, each with `verbs`. Reads only.
 */
export async function listProjects(
  ctx: Ctx,
  opts: { extended: boolean; forms: boolean; datasets: boolean },
): Promise<AsyncGenerator<Array<ProjectJson & Record<string, unknown>>>> {
  if (ctx.auth.actor == null) return arrayBatches([]);
  const verbs = await verbsByProject(ctx);
  const visible = [...verbs.entries()]
    .filter(([, v]) => v.has('project.read') && (v.has('form.list') || v.has('open_form.list')))
    .map(([id]) => id);
  if (visible.length === 0) return arrayBatches([]);
  const ks = keyset([
    { expr: sql`coalesce(${projects.archived}, false)`, type: 'boolean' }, { expr: projects.name, type: 'text' }, { expr: projects.id, type: 'int' },
  ]);
  // One parameter however many projects are visible.
  const inVisible = sql`${projects.id} = any(${`{${visible.join(',')}}`}::int[])`;
  const batches = keysetRead(ks, (after, limit) => ctx.db.select({ p: projects, ...ks.fields }).from(projects)
    .where(and(inVisible, isNull(projects.deletedAt), after)).orderBy(...ks.orderBy).limit(limit));
  return mapBatches(batches, async (batch) => {
    const rows = batch.map((r) => r.p);
    const ids = rows.map((p) => p.id);
    const counts = opts.extended ? await countsFor(ctx, ids) : null;
    // Loaded lazily: lib/forms builds on lib/projects.
    const formLists = opts.forms
      ? await (await import('../forms/listing')).formListsByProject(ctx, new Map(rows.map((p) => [p.id, verbs.get(p.id)!])))
      : null;
    const datasetLists = opts.datasets ? await (await import('../datasets')).datasetCountsByProject(ctx, ids) : null;
    const out = [];
    for (const p of rows) {
      const formList = formLists?.get(p.id) ?? null;
      const last = formList ? formList.reduce<string | null>((m, f) => (f.lastSubmission != null && (m == null || f.lastSubmission > m) ? f.lastSubmission : m), null) : null;
      out.push({
        ...projectJson(p),
        ...(counts ? counts.get(p.id)! : {}),
        verbs: [...verbs.get(p.id)!],
        // The forms this actor may see, extended (the home page shows their counts); as Central, the
        // project's `forms` and `lastSubmission` then come from that list, extended or not.
        ...(formList ? { formList, forms: formList.length, lastSubmission: last } : {}),
        // The Datasets the actor may list (Central: dataset.list on the project), extended, and their count.
        ...(datasetLists ? datasetListFor(verbs.get(p.id)!, datasetLists.get(p.id)!) : {}),
      });
    }
    return out;
  });
}

/**
 * The verbs an actor's roles grant on a project, as Central lists them in extended project JSON:
 * each verb once (alphabetical), from assignments on the site ('*'), on all projects and on this
 * one; nothing implied is added (holding form.read does not list open_form.read).
 * @returns verb names; [] when anonymous. Reads only.
 */
async function grantedProjectVerbs(ctx: Ctx, projectActeeId: string): Promise<string[]> {
  const actor = ctx.auth.actor;
  if (actor == null) return [];
  const rows = await ctx.db
    .selectDistinct({ verb: sql<string>`jsonb_array_elements_text(${roles.verbs})` })
    .from(assignments)
    .innerJoin(roles, eq(roles.id, assignments.roleId))
    .where(and(eq(assignments.actorId, actor.id), inArray(assignments.acteeId, [species.all, species.project, projectActeeId])));
  return rows.map((r) => r.verb).sort();
}

/**
 * One project (GET /v1/projects/{id}); extended puts `verbs` first and adds the counts.
 * @throws 404.1 unknown or deleted; 401.2/403.1 without project.read.
 */
export async function getProject(ctx: Ctx, id: number, extended: boolean): Promise<ProjectJson | Record<string, unknown>> {
  const project = await getProjectOrNotFound(ctx, id);
  await canOrReject(ctx, 'project.read', projectActee(project));
  if (!extended) return projectJson(project);
  const verbs = await grantedProjectVerbs(ctx, project.acteeId);
  const counts = (await countsFor(ctx, [project.id])).get(project.id)!;
  return { verbs, ...projectJson(project), ...counts };
}

/**
 * Creates a project (POST /v1/projects). @param body `{ name, description?, archived? }`.
 * @returns Project JSON. Effects: actee + project rows; audit `project.create` `{ data }`.
 * @throws 401.2/403.1 without project.create; 400.2 no name; 400.11 wrong types.
 */
export async function createProject(ctx: Ctx, body: unknown): Promise<ProjectJson> {
  await canOrReject(ctx, 'project.create', speciesActee(species.project));
  const input = parseInput(CreateProjectInput, checkArchived(body));
  return withTx(ctx, async (tx) => {
    const acteeId = crypto.randomUUID();
    await tx.db.insert(actees).values({ id: acteeId, species: species.project });
    const [row] = await tx.db
      .insert(projects)
      .values({ name: input.name, description: input.description ?? null, archived: input.archived ?? null, acteeId })
      .returning();
    await audit(tx, tx, 'project.create', acteeId, { data: input });
    return projectJson(row!);
  });
}

/**
 * Updates some of name, description, archived (PATCH /v1/projects/{id}).
 * @returns Project JSON. Effects: row update, updatedAt; audit `project.update` `{ data }`.
 * @throws 404.1; 403.1 without project.update; 400.x bad body.
 */
export async function patchProject(ctx: Ctx, id: number, body: unknown): Promise<ProjectJson> {
  return withTx(ctx, async (tx) => {
    const project = await getProjectOrNotFound(tx, id);
    await canOrReject(tx, 'project.update', projectActee(project));
    const input = parseInput(PatchProjectInput, checkArchived(body));
    const [row] = await tx.db.update(projects).set({ ...input, updatedAt: new Date() }).where(eq(projects.id, id)).returning();
    await audit(tx, tx, 'project.update', project.acteeId, { data: input });
    return projectJson(row!);
  });
}

/**
 * Replaces a project's metadata and, optionally, its forms' states and assignments (PUT
 * /v1/projects/{id}, spec Projects: true PUT semantics; omitted description/archived are nulled).
 * `forms` must list exactly the project's live forms; a listed form's `assignments`, when given,
 * become its complete set of form assignments (Public Link and Enketo grants stay). All in one transaction.
 * @returns Project JSON. Effects: project, form states, assignments; audits `project.update`,
 *   `form.update` per changed state, `*.assignment.create` / `*.assignment.delete`.
 * @throws 404.1; 403.1 without project.update (and form.update / assignment rights for forms);
 *   400.2 no name; 400.8 a form listed twice; 501.2 forms not the full set; 400.14 unknown role or actor.
 */
export async function putProject(ctx: Ctx, id: number, body: unknown): Promise<ProjectJson> {
  return withTx(ctx, async (tx) => {
    const project = await getProjectOrNotFound(tx, id);
    await canOrReject(tx, 'project.update', projectActee(project));
    const input = parseInput(PutProjectInput, checkArchived(body));
    const data = { name: input.name, description: input.description ?? null, archived: input.archived ?? null };
    const [row] = await tx.db.update(projects).set({ ...data, updatedAt: new Date() }).where(eq(projects.id, id)).returning();
    await audit(tx, tx, 'project.update', project.acteeId, { data });
    if (input.forms) await putForms(tx, project, input.forms);
    return projectJson(row!);
  });
}

type PutForm = NonNullable<z.infer<typeof PutProjectInput>['forms']>[number];

async function putForms(tx: Ctx, project: ProjectRow, listed: PutForm[]): Promise<void> {
  const seen = new Set<string>();
  for (const f of listed) {
    if (seen.has(f.xmlFormId)) {
      throw problems.user.unexpectedValue({ field: 'xmlFormId', value: f.xmlFormId, reason: 'a form may be listed only once.' });
    }
    seen.add(f.xmlFormId);
  }
  const live = await tx.db.select().from(forms).where(and(eq(forms.projectId, project.id), isNull(forms.deletedAt)));
  if (live.length !== listed.length || !live.every((f) => seen.has(f.xmlFormId))) throw problems.internal.unexpectedFormsList();
  const byId = new Map(live.map((f) => [f.xmlFormId, f]));
  for (const f of listed) {
    const form = byId.get(f.xmlFormId)!;
    const formActee: ActeeRef = { acteeId: form.acteeId, species: species.form, parents: [project.acteeId] };
    if (f.state != null && f.state !== form.state) {
      await canOrReject(tx, 'form.update', formActee);
      await tx.db.update(forms).set({ state: f.state, updatedAt: new Date() }).where(eq(forms.id, form.id));
      await audit(tx, tx, 'form.update', form.acteeId, { data: { state: f.state } });
    }
    if (f.webformsEnabled != null && f.webformsEnabled !== form.webformsEnabled) {
      await canOrReject(tx, 'form.update', formActee);
      await tx.db.update(forms).set({ webformsEnabled: f.webformsEnabled, updatedAt: new Date() }).where(eq(forms.id, form.id));
      await audit(tx, tx, 'form.update', form.acteeId, { data: { webformsEnabled: f.webformsEnabled } });
    }
    if (f.assignments != null) await replaceFormAssignments(tx, formActee, f.assignments);
  }
}

async function replaceFormAssignments(tx: Ctx, formActee: ActeeRef, wanted: Array<{ roleId: number; actorId: number }>): Promise<void> {
  // As Central, the system grants of Public Links (pub-link) and of Enketo's pull (formview) are
  // not part of the set a PUT replaces: they are never removed here.
  const exempt = tx.db.select({ id: roles.id }).from(roles).where(inArray(roles.system, ['formview', 'pub-link']));
  const current = await tx.db.select().from(assignments)
    .where(and(eq(assignments.acteeId, formActee.acteeId), notInArray(assignments.roleId, exempt)));
  const key = (a: { roleId: number; actorId: number }) => `${a.roleId}:${a.actorId}`;
  const wantedKeys = new Set(wanted.map(key));
  const currentKeys = new Set(current.map(key));
  for (const a of current) {
    if (wantedKeys.has(key(a))) continue;
    await canOrReject(tx, 'assignment.delete', formActee);
    await tx.db.delete(assignments).where(and(eq(assignments.acteeId, formActee.acteeId), eq(assignments.roleId, a.roleId), eq(assignments.actorId, a.actorId)));
    const [actor] = await tx.db.select().from(actors).where(eq(actors.id, a.actorId));
    await audit(tx, tx, `${actor!.type}.assignment.delete`, actor!.acteeId, { roleId: a.roleId, revokedActeeId: formActee.acteeId });
  }
  for (const a of wanted) {
    if (currentKeys.has(key(a))) continue;
    currentKeys.add(key(a));
    await canOrReject(tx, 'assignment.create', formActee);
    const [role] = await tx.db.select().from(roles).where(eq(roles.id, a.roleId));
    if (!role) throw problems.user.keyDoesNotExist({ field: 'roleId', value: a.roleId, table: 'roles' });
    const [actor] = await tx.db.select().from(actors).where(and(eq(actors.id, a.actorId), isNull(actors.deletedAt)));
    if (!actor) throw problems.user.keyDoesNotExist({ field: 'actorId', value: a.actorId, table: 'actors' });
    await canAssignRole(tx, role, formActee);
    await tx.db.insert(assignments).values({ actorId: a.actorId, roleId: a.roleId, acteeId: formActee.acteeId });
    await audit(tx, tx, `${actor.type}.assignment.create`, actor.acteeId, { roleId: a.roleId, grantedActeeId: formActee.acteeId });
  }
}

/**
 * Deletes a project (DELETE /v1/projects/{id}): soft, it becomes inaccessible; its forms are kept.
 * Effects: projects.deletedAt; audit `project.delete`. @throws 404.1; 403.1 without project.delete.
 */
export async function deleteProject(ctx: Ctx, id: number): Promise<void> {
  await withTx(ctx, async (tx) => {
    const project = await getProjectOrNotFound(tx, id);
    await canOrReject(tx, 'project.delete', projectActee(project));
    await tx.db.update(projects).set({ deletedAt: new Date() }).where(eq(projects.id, id));
    await audit(tx, tx, 'project.delete', project.acteeId, null);
  });
}
