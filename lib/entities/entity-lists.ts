/**
 * Entity lists on devices: a form attachment linked to a Dataset is served as the Dataset's
 * entities in CSV (`name,label,__version,<properties>`), cut to the viewer's own entities on an
 * `ownerOnly` Dataset, with the Dataset's OpenRosa hash as ETag so a device downloads it again only
 * when it changed; and D/integrity tells a device which of its entities still exist.
 * Spec: central-api.yaml (Form Attachments download, OpenRosa Form Manifest, Dataset integrity);
 * odk-xforms-spec-entities.md (entity list CSV columns).
 */
import { and, eq, isNotNull, sql, type SQL } from 'drizzle-orm';
import { actors, datasets, entities, entityDefs } from '../../drizzle/schema';
import { can, canOrReject } from '../authz/can';
import { pullStream } from '../bytes';
import type { Ctx } from '../context';
import { datasetActee, getDatasetOrNotFound, publishedProperties } from '../datasets';
import { entityFilterActorId, entityListHashes, entityListHashFromState, entityVisibleTo } from '../datasets/entity-lists';
import { copyCsv } from '../exports/copy';
import { csvLine } from '../exports/rows';
import { getAttachmentTarget, type AttachmentFile, type AttachmentTarget, type Which } from '../forms/attachments';
import { draftAttachmentByToken, publishedAttachmentTarget } from '../forms/openrosa';
import { problems } from '../problem';
import { getProjectOrNotFound, projectActee } from '../projects';
import { renderEntityIntegrity } from '../xforms/openrosa-xml';

/** A form attachment download: an uploaded file, or an entity list streamed from the database. */
export type AttachmentDownload =
  | { kind: 'file'; file: AttachmentFile }
  | { kind: 'entities'; filename: string; etag: string; body: () => ReadableStream<Uint8Array> };

/**
 * A form attachment for download (GET F/attachments/{name}, F/draft/attachments/{name},
 * F/versions/{v}/attachments/{name}): the uploaded file, or the linked Dataset's entity list,
 * cut to the viewer's own entities of an `ownerOnly` Dataset unless the viewer may list every
 * entity of the project (Central's filteredAccessActorId).
 * @returns an `AttachmentDownload`; the entity list's `etag` is the manifest's hash for this viewer.
 * @throws 404.1 unknown form, definition or attachment, or nothing uploaded or linked; 403.1 / 401.2
 *   (form.read or open_form.read; drafts: form.update). Reads only.
 */
export async function formAttachmentDownload(ctx: Ctx, projectId: number, xmlFormId: string, which: Which, name: string): Promise<AttachmentDownload> {
  // A published form's attachment (what devices fetch) in one round trip; the rest the general way.
  const target = (which.kind === 'published' ? await publishedAttachmentTarget(ctx, projectId, xmlFormId, name) : null)
    ?? await getAttachmentTarget(ctx, projectId, xmlFormId, which, name);
  return downloadOf(ctx, target, await entityFilterActorId(ctx, target.project));
}

/**
 * A draft attachment for its Draft Token (GET /v1/test/{token}/…/draft/attachments/{name}), an
 * entity list unfiltered as in Central. @throws 404.4 bad token; 404.1 nothing there. Reads only.
 */
export async function draftAttachmentDownloadByToken(
  ctx: Ctx, t: { token: string; projectId: number; xmlFormId: string }, name: string,
): Promise<AttachmentDownload> {
  return downloadOf(ctx, await draftAttachmentByToken(ctx, t.token, t.projectId, t.xmlFormId, name), null);
}

async function downloadOf(ctx: Ctx, target: AttachmentTarget, filterActorId: number | null): Promise<AttachmentDownload> {
  if (target.datasetId == null) return { kind: 'file', file: target.file! };
  const datasetId = target.datasetId;
  const hash = entityListHashFromState(target.listState ?? null, filterActorId)
    ?? (await entityListHashes(ctx, [datasetId], filterActorId)).get(datasetId);
  if (hash == null) throw problems.user.notFound();
  // The properties are read only when the body is sent (a 304 needs the hash alone).
  return { kind: 'entities', filename: target.name, etag: hash.hash, body: () => lazyStream(async () => entityListCsv(ctx, datasetId, (await publishedProperties(ctx, datasetId)).map((p) => p.name), filterActorId)) };
}

/** A stream whose source is made on its first read (so what it needs is read only if it is read). */
function lazyStream(make: () => Promise<ReadableStream<Uint8Array>>): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      reader ??= (await make()).getReader();
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    async cancel(reason) {
      await reader?.cancel(reason);
    },
  });
}

/** Rows per CSV page: one round trip and one string of about a megabyte each. */
const CSV_PAGE = 10_000;

/**
 * A CSV cell in SQL, quoted as csvLine quotes (quotes doubled when it holds a comma, a quote, CR or
 * LF; everything else as it is): four substring searches, several times cheaper per cell than the
 * regular expression `[",\r\n]` (as lib/exports/copy.ts). Pure.
 */
const csvCell = (v: SQL) => sql`(case when strpos(${v}, ',') = 0 and strpos(${v}, '"') = 0 and strpos(${v}, E'\n') = 0 and strpos(${v}, E'\r') = 0
  then ${v} else '"' || replace(${v}, '"', '""') || '"' end)`;

/** A timestamp as JavaScript's toISOString writes it (UTC, milliseconds truncated as a Date holds them). Pure. */
const isoSql = (v: SQL) => sql`to_char(${v} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A property's value of the current version, '' when unset. Pure. */
const propSql = (p: string) => sql`coalesce(${entityDefs.data} ->> ${p}, '')`;

/**
 * A CSV stream of `header` and then the live entities of a Dataset (current versions; `visible`
 * further cuts them), newest first, in keyset pages of 10,000: PostgreSQL writes each page's lines
 * (`line`, an SQL text expression over `entities`, `entity_defs` and, with `withCreator`,
 * `actors`) and joins them into one string, so a page costs one round trip and one string here.
 * Memory is bounded by one page. Reads only.
 */
function entityCsvPages(ctx: Ctx, header: string[], datasetId: number, line: SQL, visible: SQL, withCreator: boolean): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  let lastId: number | null = null;
  let sentHeader = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sentHeader) {
        sentHeader = true;
        controller.enqueue(enc.encode(csvLine(header)));
      }
      // The keyset is the last row's id; its createdAt is read back exactly (microseconds), not via a Date.
      const after = lastId == null ? sql`` : sql`and (entities.created_at, entities.id) < ((select e2.created_at from entities e2 where e2.id = ${lastId}), ${lastId})`;
      const res = await ctx.db.execute(sql`with page as (
          select ${line} as line, entities.created_at, entities.id from entities
          join entity_defs on entity_defs.entity_id = entities.id and entity_defs.current
          ${withCreator ? sql`left join actors on actors.id = entities.creator_id` : sql``}
          where entities.dataset_id = ${datasetId} and entities.deleted_at is null and ${visible} ${after}
          order by entities.created_at desc, entities.id desc limit ${CSV_PAGE})
        select (select string_agg(line || E'\\n', '' order by created_at desc, id desc) from page) as body,
          (select count(*)::int from page) as n,
          (select id from page order by created_at, id limit 1) as last_id`);
      const rows = (Array.isArray(res) ? res : (res as unknown as { rows: unknown[] }).rows) as Array<{ body: string | null; n: number; last_id: number | null }>;
      const r = rows[0]!;
      if (r.body) controller.enqueue(enc.encode(r.body));
      if (Number(r.n) < CSV_PAGE || r.last_id == null) {
        controller.close();
        return;
      }
      lastId = Number(r.last_id);
    },
    // One page read ahead while the previous one is written out (memory: two pages).
  }, { highWaterMark: 2 });
}

/**
 * The entity list CSV a form consumes: `name,label,__version,<properties>`, one row per live entity
 * visible to `filterActorId` (all for null), newest first as Central, streamed in pages of 10,000
 * by keyset (memory bounded by the page). Reads only.
 */
export function entityListCsv(ctx: Ctx, datasetId: number, props: string[], filterActorId: number | null): ReadableStream<Uint8Array> {
  const cells = [csvCell(sql`${entities.uuid}`), csvCell(sql`${entityDefs.label}`), sql`${entityDefs.version}::text`, ...props.map((p) => csvCell(propSql(p)))];
  return entityCsvPages(ctx, ['name', 'label', '__version', ...props], datasetId, sql.join(cells, sql` || ',' || `), entityVisibleTo(filterActorId), false);
}

/**
 * A Dataset's entities as Central's entities.csv: `__id,label,<properties>,__createdAt,__creatorId,
 * __creatorName,__updates,__updatedAt,__version`, live entities newest first (only those `where`
 * holds for, a condition over `entities` and `entity_defs`). Without `where`, on PostgreSQL outside
 * a transaction, PostgreSQL writes the whole CSV in one COPY (entitiesCopy); otherwise it is
 * streamed in pages of 10,000 by keyset. Both write the same bytes. Rights are the caller's. Reads only.
 */
export function entitiesCsvStream(ctx: Ctx, datasetId: number, props: string[], where?: SQL): ReadableStream<Uint8Array> {
  const header = ['__id', 'label', ...props, '__createdAt', '__creatorId', '__creatorName', '__updates', '__updatedAt', '__version'];
  const pages = () => {
    const cells = [
      csvCell(sql`${entities.uuid}`), csvCell(sql`${entityDefs.label}`), ...props.map((p) => csvCell(propSql(p))),
      isoSql(sql`${entities.createdAt}`), sql`coalesce(${entities.creatorId}::text, '')`, csvCell(sql`coalesce(${actors.displayName}, '')`),
      sql`(${entityDefs.version} - 1)::text`, sql`coalesce(${isoSql(sql`${entities.updatedAt}`)}, '')`, sql`${entityDefs.version}::text`,
    ];
    return entityCsvPages(ctx, header, datasetId, sql.join(cells, sql` || ',' || `), where ?? sql`true`, true);
  };
  if (where != null) return pages();
  return lazyStream(async () => {
    const copied = await entitiesCopy(ctx, datasetId, props, new TextEncoder().encode(csvLine(header)));
    return copied ? pullStream(copied) : pages();
  });
}

/** A text as an SQL literal (E'…', quotes and backslashes escaped whatever standard_conforming_strings says), for a COPY. Pure. */
const literal = (s: string) => sql.raw(`E'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`);

/**
 * entities.csv written by PostgreSQL (`COPY … TO STDOUT` in CSV format, lib/exports/copy.ts): its
 * quoting is csvLine's, so a value is only made NULL where csvLine would write an empty cell. The
 * current version is joined laterally so the plan streams the entities in index order from the
 * first row (no sort of the whole Dataset, which spilled to disk at 100,000). PostgreSQL's CSV
 * writer costs less than lines built in SQL (a binary COPY of the paged query's line: 7.6–10.5
 * µs/row of database CPU against 5.3–6.6, interleaved on the bench's 100,000 on a loaded box);
 * the paged query cost 9.7–12.3. No text is decoded or encoded here.
 * @returns the CSV bytes after `head`, or null where COPY cannot be used (PGlite, a transaction).
 */
async function entitiesCopy(ctx: Ctx, datasetId: number, props: string[], head: Uint8Array): Promise<AsyncGenerator<Uint8Array> | null> {
  const text = (v: SQL) => sql`nullif(${v}, '')`;
  const iso = (v: SQL) => sql`to_char(${v} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  const columns = [
    text(sql`${entities.uuid}`), text(sql`${entityDefs.label}`), ...props.map((p) => text(sql`${entityDefs.data} ->> ${literal(p)}`)),
    iso(sql`${entities.createdAt}`), sql`${entities.creatorId}`, text(sql`${actors.displayName}`),
    sql`${entityDefs.version} - 1`, iso(sql`${entities.updatedAt}`), sql`${entityDefs.version}`,
  ];
  return copyCsv(ctx, sql`select ${sql.join(columns, sql`, `)}
    from ${entities}
    cross join lateral (select ${entityDefs.label}, ${entityDefs.data}, ${entityDefs.version} from ${entityDefs}
      where ${entityDefs.entityId} = ${entities.id} and ${entityDefs.current} offset 0) as ${entityDefs}
    left join ${actors} on ${actors.id} = ${entities.creatorId}
    where ${entities.datasetId} = ${sql.raw(String(Math.trunc(datasetId)))} and ${entities.deletedAt} is null
    order by ${entities.createdAt} desc, ${entities.id} desc`, ['jit', 'max_parallel_workers_per_gather'], head);
}

/**
 * The entities of a deleted Dataset as they were when it was deleted (GET
 * P/trash/datasets/{datasetId}/entities.csv), named `<name>-deleted.csv`; the Dataset is found by
 * its id, which only the Trash listing shows.
 * @throws 404.1 unknown project, or no deleted Dataset of that id in it; 403.1 / 401.2 without
 *   `entity.list` on the project. Reads only.
 */
export async function deletedDatasetEntitiesCsv(ctx: Ctx, projectId: number, datasetId: number): Promise<{ filename: string; body: ReadableStream<Uint8Array> }> {
  const project = await getProjectOrNotFound(ctx, projectId);
  await canOrReject(ctx, 'entity.list', projectActee(project));
  const [dataset] = await ctx.db.select().from(datasets).where(and(eq(datasets.id, datasetId), eq(datasets.projectId, project.id),
    isNotNull(datasets.deletedAt), isNotNull(datasets.publishedAt)));
  if (!dataset) throw problems.user.notFound();
  const props = (await publishedProperties(ctx, dataset.id)).map((p) => p.name);
  return { filename: `${dataset.name}-deleted.csv`, body: entitiesCsvStream(ctx, dataset.id, props) };
}

/**
 * Which entities of a Dataset still exist for the caller (GET D/integrity?id=uuid,uuid): every
 * entity (or those `ids` named), `deleted` true when deleted or, for an actor cut to its own
 * entities of an `ownerOnly` Dataset, not its own. Allowed with `entity.list` on the Dataset, or
 * with read access to an open form that consumes it (an App User or Data Collector on that form).
 * @returns the integrity XML. @throws 404.1 unknown Dataset; 403.1 neither right. Reads only.
 */
export async function entityIntegrity(ctx: Ctx, projectId: number, name: string, ids: string | undefined): Promise<string> {
  const d = await getDatasetOrNotFound(ctx, projectId, name);
  const full = await can(ctx, 'entity.list', datasetActee(d));
  if (!full && !(await readsConsumingForm(ctx, d.dataset.id, d.project.acteeId))) throw problems.user.insufficientRights();
  const actorId = full ? null : ctx.auth.actor!.id;
  const wanted = ids == null ? null : ids.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  if (wanted?.length === 0) return renderEntityIntegrity([]);
  // Raw rows (no ORM mapping: a device may ask about tens of thousands); the ids travel as one JSON
  // parameter (bind parameters stop at 65,535). Only an actor's visibility rules read the current
  // version: without them no join, one index probe per id.
  const res = await ctx.db.execute(sql`select entities.uuid, (entities.deleted_at is not null or not ${entityVisibleTo(actorId)}) as deleted
    from entities
    ${actorId == null ? sql`` : sql`join entity_defs on entity_defs.entity_id = entities.id and entity_defs.current`}
    where entities.dataset_id = ${d.dataset.id}
      ${wanted == null ? sql`` : wanted.length === 1 ? sql`and entities.uuid = ${wanted[0]!}`
    : sql`and entities.uuid = any(array(select jsonb_array_elements_text(${JSON.stringify(wanted)}::jsonb)))`}
    order by entities.created_at, entities.id`);
  const rows = (Array.isArray(res) ? res : (res as unknown as { rows: unknown[] }).rows) as Array<{ uuid: string; deleted: boolean }>;
  return renderEntityIntegrity(rows);
}

/** Whether the actor may read a live, not closed form whose current or draft definition links the Dataset. */
async function readsConsumingForm(ctx: Ctx, datasetId: number, projectActeeId: string): Promise<boolean> {
  const actor = ctx.auth.actor;
  if (actor == null) return false;
  const rows = await ctx.db.execute(sql`select 1 from form_attachments fa
    join form_defs fd on fd.id = fa.form_def_id
    join forms f on f.id = fd.form_id and (fd.id = f.current_def_id or fd.id = f.draft_def_id) and f.deleted_at is null
    where fa.dataset_id = ${datasetId} and f.state <> 'closed'
      and exists (select 1 from assignments a join roles r on r.id = a.role_id
        where a.actor_id = ${actor.id}
          and (r.verbs @> '["form.read"]'::jsonb or r.verbs @> '["open_form.read"]'::jsonb)
          and a.actee_id in ('*', 'form', ${projectActeeId}, f.actee_id))
    limit 1`);
  const list = Array.isArray(rows) ? rows : (rows as unknown as { rows: unknown[] }).rows;
  return list.length > 0;
}

