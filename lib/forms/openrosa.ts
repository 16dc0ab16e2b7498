import { and, asc, eq, isNotNull, isNull, or, sql } from 'drizzle-orm';
import { assignments, formAttachments, blobs, formDefs, forms, projects, roles, type FormDefRow, type FormRow, type ProjectRow } from '../../drizzle/schema';
import { primeVerbs, requireActor } from '../authz/can';
import { species } from '../authz/verbs';
import type { Ctx } from '../context';
import {
  entityFilterActorId, entityListHashes, entityListHashFromState, entityListStateSql, type EntityListHash, type EntityListState,
} from '../datasets/entity-lists';
import type { Db } from '../db/client';
import { prepared } from '../db/prepared';
import { problems } from '../problem';
import { getProjectOrNotFound, projectActee } from '../projects';
import { getVersion } from './index';
import { fillUrlBase, renderFormList, renderManifest, URL_BASE } from '../xforms/openrosa-xml';
import { targetFromRow, targetOf, type AttachmentTarget } from './attachments';
import { canOnFormOrReject, canReadFormOrReject, formActee, getDefOrNotFound, getFormOrNotFound, type LoadedForm } from './queries';

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
 * A device polling an unchanged list costs one primary-key read: the project's form-list tokens
 * (form_list_epochs, migration 0028), which triggers change in the same transaction as anything
 * the list shows (forms, definitions, attachments, the project, grants, roles). When they equal the
 * tokens read with the list this actor was last served in this process, that list is served again;
 * otherwise one prepared round trip (formListQuery) reads the list and the tokens in one snapshot.
 * No process trusts its memory without that read, so a change made by another process (Workers,
 * Lambda, several servers) is seen at once. The list is rendered once per content (listTemplates,
 * by the fingerprint the database computes of the listed definitions' ids and XML MD5s: a
 * published definition is never changed; its name, version and expected media come from that XML).
 * The bytes of each (list, origin and prefix) are kept too, within LIST_BYTES_BUDGET: a device's
 * key is in its URLs, so its document is its own, and joining and encoding ~100 kB (200 forms) was
 * a quarter of the server's CPU per poll.
 * @returns the xformsList XML as UTF-8 bytes (shared: never to be written to). @throws 401.2
 *   anonymous; 404.1 unknown project.
 */
export async function formList(ctx: Ctx, projectId: number, base: UrlBase): Promise<Uint8Array<ArrayBuffer>> {
  const actor = requireActor(ctx);
  if (!Number.isSafeInteger(projectId)) throw problems.user.notFound();
  const seenKey = `${actor.id}:${projectId}`;
  const seen = lastListed.get(seenKey);
  const urlBase = `${base.origin}${base.prefix}`;
  if (seen?.epoch != null) {
    const templateKey = `${projectId}:${seen.fingerprint}`;
    const template = listTemplates.get(templateKey);
    if (template != null) {
      const [now] = await formListEpochQuery(ctx.db).execute({ projectId });
      if (now?.epoch === seen.epoch) return bodyOf(templateKey, template, urlBase);
    }
  }
  let [row] = await formListQuery(ctx.db).execute({ actorId: actor.id, projectId, known: seen?.fingerprint ?? '' });
  // The fingerprint the actor saw last, but its document was dropped since: ask again for the rows.
  if (row?.fingerprint != null && row.rows == null && !listTemplates.has(`${projectId}:${row.fingerprint}`)) {
    [row] = await formListQuery(ctx.db).execute({ actorId: actor.id, projectId, known: '' });
  }
  // An empty list may mean no such project: only then is it worth a query to tell (404.1).
  if (row?.fingerprint == null) {
    lastListed.delete(seenKey);
    await getProjectOrNotFound(ctx, projectId);
    return utf8.encode(renderFormList([]));
  }
  const key = `${projectId}:${row.fingerprint}`;
  let template = listTemplates.get(key);
  if (template == null) {
    template = splitAtUrlBase(renderFormList((row.rows ?? []).map(([xmlFormId, name, version, hash, hasAttachments]) => {
      const formUrl = `${URL_BASE}/projects/${projectId}/forms/${enc(xmlFormId)}`;
      return { xmlFormId, name: name ?? xmlFormId, version, hash, downloadUrl: `${formUrl}.xml`, manifestUrl: hasAttachments ? `${formUrl}/manifest` : null };
    })));
  }
  remember(lastListed, seenKey, { fingerprint: row.fingerprint, epoch: row.epoch }, MAX_LAST_LISTED);
  return bodyOf(key, template, urlBase);
}

/**
 * The document of template `key` for one client's origin and prefix, as UTF-8 bytes: kept from an
 * earlier request while the template is the same and the budget allows, else joined and encoded.
 * Marks the template and the bytes most recently used (eviction drops the oldest first).
 */
function bodyOf(key: string, template: string[], urlBase: string): Uint8Array<ArrayBuffer> {
  remember(listTemplates, key, template, MAX_LIST_TEMPLATES);
  const bytesKey = `${key} ${urlBase}`;
  const kept = listBytes.get(bytesKey);
  if (kept?.template === template) {
    listBytes.delete(bytesKey);
    listBytes.set(bytesKey, kept);
    return kept.bytes;
  }
  const bytes = utf8.encode(template.join(fillUrlBase(URL_BASE, urlBase)));
  if (kept) listBytesTotal -= kept.bytes.byteLength;
  listBytes.delete(bytesKey);
  if (bytes.byteLength <= LIST_BYTES_BUDGET / 8) {
    while (listBytesTotal + bytes.byteLength > LIST_BYTES_BUDGET) {
      const [oldest, entry] = listBytes.entries().next().value!;
      listBytes.delete(oldest);
      listBytesTotal -= entry.bytes.byteLength;
    }
    listBytes.set(bytesKey, { template, bytes });
    listBytesTotal += bytes.byteLength;
  }
  return bytes;
}

const utf8 = new TextEncoder();
/**
 * Encoded documents by `{projectId}:{fingerprint} {origin}{prefix}`, each with the template it was
 * joined from (a template rendered again after eviction is another array: its bytes are joined
 * anew). Per process; at most LIST_BYTES_BUDGET bytes in all (16 MB: 160 devices' lists of 200 forms).
 */
const listBytes = new Map<string, { template: string[]; bytes: Uint8Array<ArrayBuffer> }>();
const LIST_BYTES_BUDGET = 16 * 1024 * 1024;
let listBytesTotal = 0;

/**
 * A document rendered with URL_BASE before each URL, cut at those marks: a client's copy is the
 * parts joined by its escaped origin and prefix (one join per request, no scan of the ~100 kB list
 * of 200 forms for the marks). Pure.
 */
const splitAtUrlBase = (doc: string): string[] => doc.split(URL_BASE);

/**
 * Rendered form lists by `{projectId}:{fingerprint}` (as splitAtUrlBase parts), where each client's
 * origin and prefix go between the parts: devices with the same forms share one. Per process,
 * bounded; an entry is only ever served for the fingerprint the database computed in the same
 * request, so it can never be stale.
 */
const listTemplates = new Map<string, string[]>();
const MAX_LIST_TEMPLATES = 64;
/**
 * What each `{actorId}:{projectId}` was last served: the list's fingerprint (sent as `known`: no
 * rows when unchanged) and the form-list tokens read with it (null when none were read).
 */
const lastListed = new Map<string, { fingerprint: string; epoch: string | null }>();
const MAX_LAST_LISTED = 10_000;

function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value!);
  map.set(key, value);
}

/** A listed form as the query sends it: xmlFormId, name, version, MD5 of the XML, expects media. */
type ListedForm = [string, string | null, string, string, boolean];

/**
 * The form-list tokens of project `projectId` (placeholder) and of every project (row 0) as one
 * text, or null when there are none. Inside formListQuery it is read in the list's own snapshot.
 */
const formListEpochSql = () => sql<string | null>`(select string_agg(e.epoch::text, ':' order by e.project_id)
  from form_list_epochs e where e.project_id in (0, ${sql.placeholder('projectId')}))`;

/** The tokens alone: what a poll of an unchanged list costs PostgreSQL (two primary-key rows). */
const formListEpochQuery = (db: Db) => prepared(db, 'openrosa_form_list_epoch', (d) => d
  .select({ epoch: formListEpochSql() })
  .from(sql`(select 1) one`)
  .prepare('openrosa_form_list_epoch'));

// One query (Collect polls this), prepared. `listed` (a CTE) is the forms the actor may list now:
// the rights check in SQL, only the columns the list shows (never the XML). Readable: a grant of
// form.read or open_form.read on '*', 'form' or the project (uncorrelated: evaluated once), or on
// the form itself (a hashed set of the actor's actee ids), not a per-form correlated subquery
// (~7 ms at 200 forms).
// The fingerprint is an MD5 of the listed definitions' ids and XML MD5s (null when nothing is
// listed); the list itself (a JSON array in xmlFormId order, with "expects attachments") is built
// only when the fingerprint is not `known`: an InitPlan inside CASE runs only when its branch is
// taken. A device polling an unchanged list costs the rights check and 200 short rows, not the
// JSON of the list and a hash of its text (this statement's CPU at 200 forms: −30 %).
const formListQuery = (db: Db) => prepared(db, 'openrosa_form_list', (d) => {
  const actorId = sql.placeholder('actorId');
  // The roles that read forms, as a hashed set of ids (cheaper than joining roles to each grant).
  const readingRoles = sql`(select ${roles.id} from ${roles} where ${roles.verbs} @> '["form.read"]'::jsonb or ${roles.verbs} @> '["open_form.read"]'::jsonb)`;
  const readable = or(
    sql`exists (select 1 from ${assignments} where ${assignments.actorId} = ${actorId} and ${assignments.roleId} in ${readingRoles}
        and ${assignments.acteeId} in (${species.all}, ${species.form}, (select ${projects.acteeId} from ${projects} where ${projects.id} = ${sql.placeholder('projectId')})))`,
    sql`${forms.acteeId} in (select ${assignments.acteeId} from ${assignments} where ${assignments.actorId} = ${actorId} and ${assignments.roleId} in ${readingRoles})`,
  );
  // Column names in the CTE are the tables' own: xml_form_id, id (the definition's), name, version, hash.
  const listed = d.$with('listed').as(d
    .select({ xmlFormId: forms.xmlFormId, defId: formDefs.id, name: formDefs.name, version: formDefs.version, hash: formDefs.hash })
    .from(forms)
    .innerJoin(formDefs, eq(formDefs.id, forms.currentDefId))
    .innerJoin(projects, eq(projects.id, forms.projectId))
    .where(and(eq(forms.projectId, sql.placeholder('projectId')), isNull(projects.deletedAt), isNull(forms.deletedAt), eq(forms.state, 'open'), readable)));
  return d
    .with(listed)
    .select({
      fingerprint: sql<string | null>`fp.fingerprint`,
      epoch: formListEpochSql(),
      // `in`, not `exists`: inside an aggregate's argument an exists subquery runs once per form
      // (measured 3× the query's time at 200 forms), an `in` may be hashed once.
      rows: sql<ListedForm[] | null>`case when fp.fingerprint = ${sql.placeholder('known')} then null else
        (select json_agg(json_build_array(l.xml_form_id, l.name, l.version, l.hash,
          l.id in (select ${formAttachments.formDefId} from ${formAttachments})) order by l.xml_form_id) from listed l) end`,
    })
    // The sorted ids exactly, and a 64-bit hash of each one's MD5 (xor: order-free) so that a restored
    // database reusing an id for other XML gives another fingerprint; ints, not the MD5 texts, are
    // what is sorted and hashed (a third of the text version's CPU).
    .from(sql`(select md5(array_agg(listed.id order by listed.id)::text || ':' || bit_xor(hashtextextended(listed.hash, listed.id))::text) as fingerprint
      from listed) fp`)
    .prepare('openrosa_form_list');
});

async function manifestFor(ctx: Ctx, defId: number, attachmentBase: string, entityLists: EntityListContext): Promise<string> {
  const rows = await prepared(ctx.db, 'openrosa_manifest_files', (d) => d
    .select({ name: formAttachments.name, md5: blobs.md5, datasetId: formAttachments.datasetId })
    .from(formAttachments)
    .leftJoin(blobs, eq(blobs.id, formAttachments.blobId))
    .where(and(eq(formAttachments.formDefId, sql.placeholder('defId')), or(isNotNull(formAttachments.blobId), isNotNull(formAttachments.datasetId))))
    .orderBy(asc(formAttachments.name))
    .prepare('openrosa_manifest_files'))
    .execute({ defId });
  return renderFiles(ctx, rows, attachmentBase, entityLists);
}

/**
 * How a manifest names a form's entity lists: the project (for the viewer's ownerOnly cut) and
 * where its integrity URLs point (`{origin}{prefix}/projects/{id}`, the prefix the client used).
 */
interface EntityListContext {
  project: Pick<ProjectRow, 'id' | 'acteeId'>;
  projectUrl: string;
}

type ManifestFile = { name: string; md5: string | null; datasetId: number | null; listState?: EntityListState | null };

/** Manifest entries: uploaded files with their MD5, linked Datasets with the viewer's entity list hash. */
async function renderFiles(ctx: Ctx, files: ManifestFile[], attachmentBase: string, lists: EntityListContext): Promise<string> {
  const linked = files.filter((f) => f.datasetId != null);
  const filterActorId = linked.length === 0 ? null : await entityFilterActorId(ctx, lists.project);
  // Hashes from the state read with the files where the viewer sees whole lists; the rest in one more query.
  const hashes = new Map<number, EntityListHash>();
  for (const f of linked) {
    const h = entityListHashFromState(f.listState ?? null, filterActorId);
    if (h) hashes.set(f.datasetId!, h);
  }
  const rest = linked.filter((f) => !hashes.has(f.datasetId!)).map((f) => f.datasetId!);
  if (rest.length > 0) for (const [id, h] of await entityListHashes(ctx, rest, filterActorId)) hashes.set(id, h);
  return renderManifest(files.flatMap((f) => {
    const downloadUrl = `${attachmentBase}/${enc(f.name)}`;
    if (f.datasetId == null) return f.md5 == null ? [] : [{ filename: f.name, hash: f.md5, downloadUrl }];
    const h = hashes.get(f.datasetId);
    if (h == null) return [];
    const integrityUrl = `${lists.projectUrl}/datasets/${enc(f.name.replace(/\.csv$/i, ''))}/integrity`;
    return [{ filename: f.name, hash: h.hash, downloadUrl, type: h.type, integrityUrl }];
  }));
}

/**
 * getFormOrNotFound plus the actor's grants on the form, in one round trip (Collect fetches a
 * manifest per form): a live form of a live project. The verbs prime the rights check.
 * @throws Problem 404.1.
 */
/** The verbs the request's actor (placeholder `actorId`) holds on a form row and its project, as JSON. */
export const formVerbsSql = () => sql<string[]>`(select coalesce(jsonb_agg(distinct v.verb), '[]'::jsonb) from ${assignments}
  inner join ${roles} on ${roles.id} = ${assignments.roleId}
  cross join lateral jsonb_array_elements_text(${roles.verbs}) as v(verb)
  where ${assignments.actorId} = ${sql.placeholder('actorId')}
    and ${assignments.acteeId} in (${species.all}, ${species.form}, ${forms.acteeId}, ${projects.acteeId}))`;

/**
 * The condition of the one-round-trip form loads (submission_target, live_form_verbs,
 * published_attachment_target, lib/submissions' review_target): the live form `xmlFormId`
 * (placeholder) of the live project `projectId` (placeholder), over `forms` joined with `projects`. Pure.
 */
export const liveFormByKey = () => and(eq(projects.id, sql.placeholder('projectId')), isNull(projects.deletedAt),
  eq(forms.xmlFormId, sql.placeholder('xmlFormId')), isNull(forms.deletedAt));

/** The verbs the request's actor holds on the joined project row itself ('*', 'project', its actee), as JSON. */
const projectVerbsSql = () => sql<string[]>`(select coalesce(jsonb_agg(distinct v.verb), '[]'::jsonb) from ${assignments}
  inner join ${roles} on ${roles.id} = ${assignments.roleId}
  cross join lateral jsonb_array_elements_text(${roles.verbs}) as v(verb)
  where ${assignments.actorId} = ${sql.placeholder('actorId')}
    and ${assignments.acteeId} in (${species.all}, ${species.project}, ${projects.acteeId}))`;

/**
 * The request's actor's grants (placeholder `actorId`) that can bear on a joined form row or its
 * project, as JSON `[[acteeId, verbs], …]`: one index scan for both verb sets a manifest or an
 * attachment download primes (splitGrants), instead of two subqueries each expanding and
 * de-duplicating every role's verbs in SQL.
 */
const grantsSql = () => sql<Array<[string, string[]]> | null>`(select jsonb_agg(jsonb_build_array(${assignments.acteeId}, ${roles.verbs}))
  from ${assignments} inner join ${roles} on ${roles.id} = ${assignments.roleId}
  where ${assignments.actorId} = ${sql.placeholder('actorId')}
    and ${assignments.acteeId} in (${species.all}, ${species.form}, ${species.project}, ${forms.acteeId}, ${projects.acteeId}))`;

/**
 * The verbs grantsSql's grants give on the form (grants on '*', 'form', the form, its project) and
 * on the project ('*', 'project', the project), as formVerbsSql and projectVerbsSql read them. Pure.
 */
function splitGrants(grants: Array<[string, string[]]> | null, form: { acteeId: string }, project: { acteeId: string }) {
  const formVerbs = new Set<string>();
  const projectVerbs = new Set<string>();
  for (const [actee, verbs] of grants ?? []) {
    const onAll = actee === species.all || actee === project.acteeId;
    if (onAll || actee === species.form || actee === form.acteeId) for (const v of verbs) formVerbs.add(v);
    if (onAll || actee === species.project) for (const v of verbs) projectVerbs.add(v);
  }
  return { formVerbs: [...formVerbs], projectVerbs: [...projectVerbs] };
}

/**
 * What an OpenRosa submission needs before it writes, in one prepared round trip: the live form
 * and project, the actor's verbs on it (priming the rights check) and the id and XML SHA-256 of the
 * published definition with the submission's version (both null when there is none).
 * @throws Problem 404.1 unknown form or project. Reads only; runs outside the write transaction.
 */
export async function submissionTarget(ctx: Ctx, projectId: number, xmlFormId: string, version: string): Promise<LoadedForm & { defId: number | null; defSha256: string | null }> {
  const [row] = Number.isSafeInteger(projectId)
    ? await prepared(ctx.db, 'submission_target', (d) => d
      .select({
        form: forms,
        project: projects,
        verbs: formVerbsSql(),
        // The definition's id and the SHA-256 of its XML, so that callers can cache by content
        // (an id alone is reused after a database restore).
        def: sql<[number, string] | null>`(select jsonb_build_array(fd.id, fd.sha256) from ${formDefs} fd where fd.form_id = ${forms.id}
          and fd.published_at is not null and fd.version = ${sql.placeholder('version')} limit 1)`,
      })
      .from(forms)
      .innerJoin(projects, eq(projects.id, forms.projectId))
      .where(liveFormByKey())
      .prepare('submission_target'))
      .execute({ projectId, xmlFormId, version, actorId: ctx.auth.actor?.id ?? -1 })
    : [];
  if (!row) throw problems.user.notFound();
  const loaded = { form: row.form, project: row.project };
  primeVerbs(ctx, formActee(loaded), row.verbs);
  return { ...loaded, defId: row.def == null ? null : Number(row.def[0]), defSha256: row.def?.[1] ?? null };
}

async function liveFormOrNotFound(ctx: Ctx, projectId: number, xmlFormId: string): Promise<LoadedForm & { files: ManifestFile[] }> {
  const [row] = Number.isSafeInteger(projectId)
    ? await prepared(ctx.db, 'live_form_verbs', (d) => d
      .select({
        form: forms,
        project: projects,
        // The form's and the project's grants (an entity list's hash depends on entity.list there).
        grants: grantsSql(),
        // The published definition's files and linked Datasets, for the manifest (small: a form's media list).
        files: sql<ManifestFile[]>`(select coalesce(jsonb_agg(jsonb_build_object('name', fa.name, 'md5', b.md5, 'datasetId', fa.dataset_id,
            'listState', ${entityListStateSql(sql`fa.dataset_id`)})
            order by fa.name), '[]'::jsonb)
          from ${formAttachments} fa left join ${blobs} b on b.id = fa.blob_id
          where fa.form_def_id = ${forms.currentDefId} and (fa.blob_id is not null or fa.dataset_id is not null))`,
      })
      .from(forms)
      .innerJoin(projects, eq(projects.id, forms.projectId))
      .where(liveFormByKey())
      .prepare('live_form_verbs'))
      .execute({ projectId, xmlFormId, actorId: ctx.auth.actor?.id ?? -1 })
    : [];
  if (!row) throw problems.user.notFound();
  const loaded = { form: row.form, project: row.project };
  const { formVerbs, projectVerbs } = splitGrants(row.grants, row.form, row.project);
  primeVerbs(ctx, formActee(loaded), formVerbs);
  primeVerbs(ctx, projectActee(row.project), projectVerbs);
  return { ...loaded, files: row.files };
}

/**
 * The download target of attachment `name` of a form's published definition (GET F/attachments/{name},
 * what a device fetches after each manifest) in one prepared round trip: the live form and project,
 * the actor's verbs on the form and on the project (priming the rights checks, including the
 * entity.list check an entity list's hash needs) and the attachment with its blob.
 * @returns the target, or null when the form was never published (the caller then serves its
 *   draft's, which needs form.update).
 * @throws 404.1 unknown form or project, or no such attachment or nothing uploaded or linked;
 *   401.2/403.1 without read rights (canReadForm). Reads only.
 */
export async function publishedAttachmentTarget(ctx: Ctx, projectId: number, xmlFormId: string, name: string): Promise<AttachmentTarget | null> {
  const [row] = Number.isSafeInteger(projectId)
    ? await prepared(ctx.db, 'published_attachment_target', (d) => d
      .select({
        form: forms,
        project: projects,
        verbs: formVerbsSql(),
        projectVerbs: projectVerbsSql(),
        attachment: sql<AttachmentRowJson | null>`(select jsonb_build_object('datasetId', fa.dataset_id, 'contentType', fa.content_type,
            'sha', b.sha, 'md5', b.md5, 'listState', ${entityListStateSql(sql`fa.dataset_id`)})
          from ${formAttachments} fa left join ${blobs} b on b.id = fa.blob_id
          where fa.form_def_id = ${forms.currentDefId} and fa.name = ${sql.placeholder('name')})`,
      })
      .from(forms)
      .innerJoin(projects, eq(projects.id, forms.projectId))
      .where(liveFormByKey())
      .prepare('published_attachment_target'))
      .execute({ projectId, xmlFormId, name, actorId: ctx.auth.actor?.id ?? -1 })
    : [];
  if (!row) throw problems.user.notFound();
  if (row.form.currentDefId == null) return null;
  const loaded = { form: row.form, project: row.project };
  primeVerbs(ctx, formActee(loaded), row.verbs);
  primeVerbs(ctx, projectActee(row.project), row.projectVerbs);
  await canReadFormOrReject(ctx, loaded);
  const a = row.attachment;
  const target = targetFromRow(row.project, name, a == null ? null : { datasetId: a.datasetId, contentType: a.contentType, sha: a.sha, md5: a.md5 });
  return { ...target, listState: a?.listState ?? null };
}

/** An attachment row as published_attachment_target reads it. */
type AttachmentRowJson = { datasetId: number | null; contentType: string | null; sha: string | null; md5: string | null; listState: EntityListState | null };

/**
 * The manifest of a published form (GET F/manifest): the files the server holds, with `md5:` hashes
 * and download URLs. @throws 401.2/403.1; 404.1 unknown or never-published form.
 */
export async function manifest(ctx: Ctx, projectId: number, xmlFormId: string, base: UrlBase): Promise<string> {
  const f = await liveFormOrNotFound(ctx, projectId, xmlFormId);
  await canReadFormOrReject(ctx, f);
  // currentDefId is a foreign key: no need to load the definition (and its XML) to know it exists.
  if (f.form.currentDefId == null) throw problems.user.notFound();
  const projectUrl = `${base.origin}${base.prefix}/projects/${f.project.id}`;
  return renderFiles(ctx, f.files, `${projectUrl}/forms/${enc(f.form.xmlFormId)}/attachments`, { project: f.project, projectUrl });
}

/**
 * The OpenRosa manifest of one published version (GET F/versions/{version}/manifest, Central's
 * version resource): its files, with URLs under F/versions/{version}/attachments.
 * @throws 404.1 unknown form or version; 401.2/403.1 without read rights (canReadForm). Reads only.
 */
export async function versionManifest(ctx: Ctx, projectId: number, xmlFormId: string, version: string, base: UrlBase): Promise<string> {
  const v = await getVersion(ctx, projectId, xmlFormId, version);
  const projectUrl = `${base.origin}${base.prefix}/projects/${v.project.id}`;
  return manifestFor(ctx, v.def.id, `${projectUrl}/forms/${enc(v.form.xmlFormId)}/versions/${enc(version)}/attachments`, { project: v.project, projectUrl });
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
  return draftListXml(ctx, form, draft, draftBase(origin, token, projectId, form.xmlFormId));
}

/** A form list of one draft, whose XML and manifest are at `${url}.xml` and `${url}/manifest`. */
async function draftListXml(ctx: Ctx, form: FormRow, draft: FormDefRow, url: string): Promise<string> {
  const [hasAttachments] = await ctx.db.select({ n: formAttachments.name }).from(formAttachments).where(eq(formAttachments.formDefId, draft.id)).limit(1);
  return renderFormList([{
    xmlFormId: form.xmlFormId, name: draft.name ?? form.xmlFormId, version: draft.version, hash: draft.hash,
    downloadUrl: `${url}.xml`, manifestUrl: hasAttachments ? `${url}/manifest` : null,
  }]);
}

/** The draft's manifest for its Draft Token. @throws 404.4. */
export async function draftManifest(ctx: Ctx, token: string, projectId: number, xmlFormId: string, origin: string): Promise<string> {
  const { form, draft } = await formByDraftToken(ctx, token, projectId, xmlFormId);
  const project = await getProjectOrNotFound(ctx, form.projectId);
  return manifestFor(ctx, draft.id, `${draftBase(origin, token, projectId, form.xmlFormId)}/attachments`,
    { project, projectUrl: `${origin}/v1/projects/${project.id}` });
}

/** The draft's XML for its Draft Token. @throws 404.4. */
export async function draftXmlByToken(ctx: Ctx, token: string, projectId: number, xmlFormId: string): Promise<string> {
  return (await formByDraftToken(ctx, token, projectId, xmlFormId)).draft.xml;
}

/**
 * A draft attachment for its Draft Token: the uploaded file or the linked Dataset (lib/entities
 * serves that one, unfiltered, as Central). @throws 404.4; 404.1 neither. Reads only.
 */
export async function draftAttachmentByToken(ctx: Ctx, token: string, projectId: number, xmlFormId: string, name: string): Promise<AttachmentTarget> {
  const { form, draft } = await formByDraftToken(ctx, token, projectId, xmlFormId);
  return targetOf(ctx, await getProjectOrNotFound(ctx, form.projectId), draft.id, name);
}

/**
 * Draft testing without a Draft Token (spec, Authentication 5): a signed-in user who may update the
 * form gets the draft's form list and manifest on the form's own path (F/draft/formList,
 * F/draft/manifest), with URLs to F/draft.xml and F/draft/attachments/… under the prefix used.
 * @throws 401.2 / 403.1 without form.update; 404.1 unknown form or no draft.
 */
export async function draftDocumentsForActor(ctx: Ctx, projectId: number, xmlFormId: string, base: UrlBase, which: 'formList' | 'manifest'): Promise<string> {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'form.update', f);
  const draft = await getDefOrNotFound(ctx, f.form.draftDefId);
  const url = `${base.origin}${base.prefix}/projects/${f.project.id}/forms/${enc(f.form.xmlFormId)}/draft`;
  if (which === 'manifest') {
    return manifestFor(ctx, draft.id, `${url}/attachments`, { project: f.project, projectUrl: `${base.origin}${base.prefix}/projects/${f.project.id}` });
  }
  return draftListXml(ctx, f.form, draft, url);
}
