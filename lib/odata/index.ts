/**
 * The OData feed of a form's submissions (central-api.yaml, OData Endpoints; the captured
 * answers in shared/fixtures/central-outputs/<form>/odata and README facts 12–21): service
 * document, `$metadata`, `Submissions`, one submission, repeat tables and a submission's repeat
 * rows, with `$top`, `$skip`, `$skiptoken`, `$count`, `$filter`, `$orderby`, `$select`, `$expand`
 * and `$wkt`. Beyond Central, `$filter` and `$orderby` also take the form's own fields: on
 * Submissions in SQL (over `submission_defs.root_values`, with bound parameters), on repeat
 * tables on the rows as they are built.
 *
 * Rows stream: they are read in keyset batches outside any transaction and written as the client
 * reads, so memory stays flat and a disconnect stops the reads (DESIGN rule 5).
 */
import { and, asc, desc, eq, inArray, isNull, sql, type SQL } from 'drizzle-orm';
import { actors, formDefs, submissionAttachments, submissionDefs, submissions } from '../../drizzle/schema';
import { sha256Hex } from '../blobs/hash';
import type { Ctx } from '../context';
import type { SubmissionValue } from '../xforms/types';
import { systemFilterField } from '../exports';
import { compileODataFilter, filterMembers, parseODataFilter, type FilterField, type FilterType, type ODataToken } from '../exports/filter';
import { canOnFormOrReject, getDefOrNotFound, getFormOrNotFound } from '../forms/queries';
import { Problem, problems } from '../problem';
import { encryptionStatus, selectSubmissionRows, type SubmissionDataRow } from '../submissions/rows';
import { evaluateFilter, rowValue, type RowResolver, type RowValue } from './evaluate';
import { fieldExpression, isReady, noteFieldFilter, NUMERIC, readyFieldIndexes, type FieldKind } from './field-indexes';
import { metadataXml, serviceDocument } from './metadata';
import { buildModel, type ODataModel, type ODataNode, type ODataTable } from './model';
import { encodeSkiptoken, nextLink, readFeedQuery, type FeedQuery } from './query';
import { liveSubmissionCount } from './counts';
import { RootJsonWriter, RowBuilder, repeatChainFn, repeatRowId, type Json, type LeafSource, type SubmissionMeta } from './rows';
import { ROOT_TEXT_SEPARATOR, rootLeafPaths } from '../xforms/parse-submission';

export { readFeedQuery } from './query';

const BATCH = 500;
/** Submissions a bounded repeat-table page may read ahead to hash its ETag from them (repeatFeed). */
const PREFETCH_SUBMISSIONS = 5000;
/** Submissions rows per query on the root table: a `$top=1000` page in one round trip (+1 to see if more exist). */
const ROOT_BATCH = 1000;
const GEO_PARTS = ['latitude', 'longitude', 'altitude', 'accuracy'];
/** A character JSON.stringify escapes other than ROOT_TEXT_SEPARATOR (U+001F). */
const NEEDS_ESCAPE = /["\\\u0000-\u001e]/;

/** Whether a string holds no lone surrogate (String.prototype.isWellFormed, ES2024; TextEncoder would replace one, JSON.stringify escapes it). */
const wellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/** The number of cells of a root_text (separators + 1). */
function cellCount(raw: string): number {
  let n = 1;
  for (let at = raw.indexOf(ROOT_TEXT_SEPARATOR); at !== -1; at = raw.indexOf(ROOT_TEXT_SEPARATOR, at + 1)) n += 1;
  return n;
}

/** ROOT_TEXT_SEPARATOR as JSON.stringify writes it. */
const ESCAPED_SEPARATOR = JSON.stringify(ROOT_TEXT_SEPARATOR).slice(1, -1);

interface Feed {
  model: ODataModel;
  formId: number;
  /** The definition the feed is built from (a new version changes every row's shape, so the ETag). */
  defId: number;
  /** That definition's root leaf paths in order (rootLeafPaths: how its versions' root_text is laid out). */
  rootPaths: string[];
  draft: boolean;
}

/** The form, its exported definition and model. @throws 404.1; 401.2/403.1 without submission.read. */
async function loadFeed(ctx: Ctx, projectId: number, xmlFormId: string, draft: boolean): Promise<Feed> {
  const f = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.read', f);
  const def = await getDefOrNotFound(ctx, draft ? f.form.draftDefId : f.form.currentDefId);
  return { model: buildModel(f.form.xmlFormId, def.fields), formId: f.form.id, defId: def.id, rootPaths: rootLeafPaths(def.fields), draft };
}

/**
 * The service document (GET F.svc, F/draft.svc): every table as an EntitySet.
 * @param serviceUrl the absolute `…/forms/<id>.svc` URL. @throws 404.1; 401.2/403.1.
 */
export async function odataServiceDocument(ctx: Ctx, projectId: number, xmlFormId: string, draft: boolean, serviceUrl: string) {
  return serviceDocument((await loadFeed(ctx, projectId, xmlFormId, draft)).model, serviceUrl);
}

/** The EDMX document (GET F.svc/$metadata). @throws 404.1; 401.2/403.1. */
export async function odataMetadata(ctx: Ctx, projectId: number, xmlFormId: string, draft: boolean): Promise<string> {
  return metadataXml((await loadFeed(ctx, projectId, xmlFormId, draft)).model);
}

// ─── fields ──────────────────────────────────────────────────────────────────────────────────

/** The kind a bind type compares as. */
const kindOf = (type: string): FilterType => (type === 'int' || type === 'decimal' ? 'number' : type === 'date' || type === 'dateTime' ? 'time' : 'text');

/** Leaves reachable from a table's row without entering a repeat, by OData path (`meta/instanceID`). */
function leavesOf(nodes: ODataNode[], prefix = '', out = new Map<string, ODataNode>()): Map<string, ODataNode> {
  for (const n of nodes) {
    const p = prefix === '' ? n.name : `${prefix}/${n.name}`;
    if (n.kind === 'leaf') out.set(p, n);
    else if (n.kind === 'group') leavesOf(n.children, p, out);
  }
  return out;
}

/** A leaf (or a geopoint part `loc/latitude`) by OData path. */
function findLeaf(leaves: Map<string, ODataNode>, path: string): { node: ODataNode; part: number | null } | null {
  const node = leaves.get(path);
  if (node) return { node, part: null };
  const cut = path.lastIndexOf('/');
  const geo = cut > 0 ? leaves.get(path.slice(0, cut)) : undefined;
  const part = GEO_PARTS.indexOf(path.slice(cut + 1));
  return geo && geo.type === 'geopoint' && part >= 0 ? { node: geo, part } : null;
}

/**
 * SQL for a form field on Submissions: its text in root_values, read as its kind (unreadable text →
 * null); number and time fields read through the index's functions when their index is ready.
 */
function fieldSql(node: ODataNode, part: number | null, ready: Set<string>): FilterField {
  if (part != null) {
    const text = sql`nullif(split_part(${submissionDefs.rootValues} ->> ${node.path}, ' ', ${part + 1}), '')`;
    return { type: 'number', sql: sql`(case when ${text} ~ ${NUMERIC} then (${text})::numeric end)` };
  }
  const kind = kindOf(node.type);
  return { type: kind, sql: fieldExpression(node.path, kind, isReady(ready, node.path, kind)) };
}

/** The form fields (not geopoint parts) a `$filter` compares, with their kinds, for field indexes. */
function filteredFields(model: ODataModel, filter: ODataToken): Array<{ path: string; kind: FieldKind }> {
  const leaves = leavesOf(model.tables[0]!.children);
  const out = new Map<string, { path: string; kind: FieldKind }>();
  for (const m of filterMembers(filter)) {
    const leaf = leaves.get(m);
    if (leaf) out.set(leaf.path, { path: leaf.path, kind: kindOf(leaf.type) });
  }
  return [...out.values()];
}

/** Resolver for Submissions: Central's system fields, `__system/deletedAt`, and the form's fields. */
function rootResolver(model: ODataModel, ready: Set<string> = new Set()): (path: string) => FilterField | null {
  const leaves = leavesOf(model.tables[0]!.children);
  return (path) => {
    if (path === '__system/deletedAt') return { sql: sql`${submissions.deletedAt}`, type: 'time' };
    const system = systemFilterField(path);
    if (system) return system;
    const leaf = findLeaf(leaves, path);
    return leaf ? fieldSql(leaf.node, leaf.part, ready) : null;
  };
}

// ─── rows ────────────────────────────────────────────────────────────────────────────────────

function metaOf(row: SubmissionDataRow): SubmissionMeta {
  return {
    instanceId: row.instanceId, createdAt: row.createdAt, updatedAt: row.updatedAt, deletedAt: row.deletedAt,
    submitterId: row.submitterId, submitterName: row.submitterName, attachmentsPresent: row.received.length,
    attachmentsExpected: row.expected, status: encryptionStatus(row), reviewState: row.reviewState,
    deviceId: row.deviceId, edits: row.edits, formVersion: row.formVersion,
  };
}

const NAV_LINK = '@odata.navigationLink';

/**
 * `$select` on a row: top-level names and group paths (`meta/instanceID`), keeping Central's key
 * order. Selecting a repeat (`children/child`) keeps its `child@odata.navigationLink`.
 */
function project(row: { [k: string]: Json }, select: string[][]): { [k: string]: Json } {
  const out: { [k: string]: Json } = {};
  for (const [k, v] of Object.entries(row)) {
    const name = k.endsWith(NAV_LINK) ? k.slice(0, -NAV_LINK.length) : k;
    const wanted = select.filter((p) => p[0] === name);
    if (wanted.length === 0) continue;
    if (wanted.some((p) => p.length === 1) || v == null || typeof v !== 'object' || Array.isArray(v)) out[k] = v;
    else out[k] = project(v, wanted.map((p) => p.slice(1)));
  }
  return out;
}

/** Checks `$select` against a table. @throws 400.23 unknown property; 400.24 a path into a repeat. */
function checkSelect(table: ODataTable, select: string[]): string[][] {
  return select.map((text) => {
    const parts = text.split('/');
    if (parts[0] === '__id' || parts[0] === '__system' || (table.parentIdName != null && parts[0] === table.parentIdName)) return parts;
    let nodes = table.children;
    for (let i = 0; i < parts.length; i += 1) {
      const n = nodes.find((x) => x.name === parts[i]);
      if (!n) throw new Problem(400.23, `Could not find a property named '${text}'`, { property: text });
      if (n.kind === 'repeat' && i < parts.length - 1) {
        throw new Problem(400.24, `The given OData select property '${text}' uses features not supported by this server.`, { property: text });
      }
      nodes = n.children;
    }
    return parts;
  });
}

/** `$expand`: `*`, or named repeat paths (`children/child`), each also expanding the repeats on its way. */
function expandSet(model: ODataModel, expand: FeedQuery['expand']): '*' | Set<string> | null {
  if (expand == null || expand === '*') return expand;
  const out = new Set<string>();
  for (const text of expand) {
    const table = model.tables.find((t) => t.repeat && t.name === `Submissions.${text.split('/').join('.')}`);
    if (!table) {
      throw new Problem(501.6, `The given OData expand expression is not supported by this server: "${text}". Currently, only "$expand=*" and repeat paths are supported.`, { text });
    }
    for (const r of repeatChainFn(model)(table.repeat!.path)) out.add(r);
  }
  return out;
}

// ─── streaming JSON ──────────────────────────────────────────────────────────────────────────

const encoder = new TextEncoder();

/**
 * The feed envelope (fact 19): value, @odata.context, @odata.nextLink, @odata.count; `rows` are
 * objects or their JSON text. The first row
 * is read before the stream is returned, so that a failing first read (a date PostgreSQL refuses in
 * `$filter`) is an error response rather than a 200 that breaks off.
 */
export async function envelope(
  context: string,
  rows: AsyncGenerator<{ [k: string]: Json } | string | Uint8Array>,
  trailer: () => { nextLink: string | null; count: number | null },
): Promise<ReadableStream<Uint8Array>> {
  let firstRead: IteratorResult<{ [k: string]: Json } | string | Uint8Array> | null = await rows.next();
  let started = false;
  let first = true;
  let done = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (done) return;
      let text = started ? '' : '{"value":[';
      started = true;
      // Rows given as UTF-8 go out as they are, between the encoded texts around them.
      const parts: Uint8Array[] = [];
      let size = 0;
      // Up to ~64 kB per chunk: fewer, larger writes.
      while (text.length + size < 65_536) {
        const next = firstRead ?? await rows.next();
        firstRead = null;
        if (next.done) {
          const t = trailer();
          text += `],"@odata.context":${JSON.stringify(context)}`;
          if (t.nextLink != null) text += `,"@odata.nextLink":${JSON.stringify(t.nextLink)}`;
          if (t.count != null) text += `,"@odata.count":${t.count}`;
          text += '}';
          done = true;
          break;
        }
        // A row is an object, or already its JSON text or UTF-8 bytes (RootJsonWriter).
        if (!first) text += ',';
        first = false;
        const v = next.value;
        if (v instanceof Uint8Array) {
          if (text !== '') {
            const t = encoder.encode(text);
            parts.push(t);
            size += t.byteLength;
            text = '';
          }
          parts.push(v);
          size += v.byteLength;
        } else {
          text += typeof v === 'string' ? v : JSON.stringify(v);
        }
      }
      if (parts.length === 0) {
        controller.enqueue(encoder.encode(text));
      } else {
        if (text !== '') parts.push(encoder.encode(text));
        const chunk = new Uint8Array(parts.reduce((n, x) => n + x.byteLength, 0));
        let at = 0;
        for (const x of parts) {
          chunk.set(x, at);
          at += x.byteLength;
        }
        controller.enqueue(chunk);
      }
      if (done) controller.close();
    },
    async cancel() {
      await rows.return(undefined);
    },
  });
}

// ─── ETags ───────────────────────────────────────────────────────────────────────────────────

/** A feed's answer: its ETag and, unless the client's `If-None-Match` names that ETag, its body. */
export interface FeedResponse {
  /** A weak ETag, quoted (`W/"…"`); null where Central sends none (a repeat table's `$top=0&$count=true`). */
  etag: string | null;
  /** The JSON envelope; null when `If-None-Match` named the ETag (the handler answers 304). */
  body: ReadableStream<Uint8Array> | null;
}

/** Whether an `If-None-Match` header names this ETag (weak or strong, in a list, or `*`). */
function etagMatches(ifNoneMatch: string | null | undefined, etag: string): boolean {
  if (ifNoneMatch == null || ifNoneMatch === '') return false;
  const bare = etag.replace(/^W\//, '');
  return ifNoneMatch.split(',').map((t) => t.trim()).some((t) => t === '*' || t.replace(/^W\//, '') === bare);
}

async function respond(input: FeedInput, etag: string | null, body: () => Promise<ReadableStream<Uint8Array>>): Promise<FeedResponse> {
  if (etag != null && etagMatches(input.ifNoneMatch, etag)) return { etag, body: null };
  return { etag, body: await body() };
}

/**
 * The ETag of a feed page from the submissions it is built from, as Central's `eventhash` ETag
 * (Submissions.getODataSelectionEtag): the selection (`where`, `orderBy`, `limit`, `offset`, as the
 * page reads it) hashed over what a row shows that can change (current version, updatedAt,
 * deletedAt, review state, submitter's name, attachments received), with the form definition and
 * `extra` (the count, when asked). A new, edited, reviewed or deleted submission in the selection
 * changes it; a submission to another form does not. Order needs no hashing: it follows from
 * those values. One read query.
 */
async function selectionEtag(
  ctx: Ctx, feed: Feed, where: SQL, orderBy: SQL[], limit: number | null, offset: number, extra: string,
): Promise<string> {
  const received = sql`(select count(*) from ${submissionAttachments} a where a.submission_def_id = ${submissions.currentDefId} and a.blob_id is not null)`;
  const stamp = sql<string>`concat_ws(':', ${submissions.id}, ${submissions.currentDefId}, ${submissions.updatedAt}, ${submissions.deletedAt}, ${submissions.reviewState}, ${actors.displayName}, ${received})`;
  let page = ctx.db.select({ stamp: stamp.as('stamp') }).from(submissions)
    .innerJoin(submissionDefs, eq(submissionDefs.id, submissions.currentDefId))
    .leftJoin(actors, eq(actors.id, submissions.submitterId))
    .where(where)
    .orderBy(...orderBy)
    .$dynamic();
  if (limit != null) page = page.limit(limit);
  if (offset > 0) page = page.offset(offset);
  const sel = page.as('selection');
  const [r] = await ctx.db.select({ hash: sql<string>`md5(coalesce(string_agg(${sel.stamp}, ',' order by ${sel.stamp}), ''))` }).from(sel);
  return `W/"eventhash:${sha256Hex(`${feed.defId}|${extra}|${r!.hash}`).slice(0, 32)}"`;
}

/**
 * The whole body of a page that reads no rows (`$top=0`, as Central's countOnlyToOData) and its
 * ETag, a hash of that body (as Express gives Central's: not an `eventhash`).
 */
function countOnly(context: string, count: number | null): { etag: string; body: () => Promise<ReadableStream<Uint8Array>> } {
  const text = `{"value":[],"@odata.context":${JSON.stringify(context)}${count == null ? '' : `,"@odata.count":${count}`}}`;
  const etag = `W/"${text.length.toString(16)}-${sha256Hex(text).slice(0, 27)}"`;
  return { etag, body: async () => new Response(text).body! };
}

// ─── resource paths ──────────────────────────────────────────────────────────────────────────

interface Resource {
  table: ODataTable;
  /** `Submissions('id')` (single) or the submission whose repeat rows are asked for. */
  instanceId: string | null;
  /** For `Submissions('id')/…/repeat`: the keys of the repeat rows on the way (40-hex ids). */
  keys: string[];
  single: boolean;
}

const unquote = (s: string) => s.replace(/''/g, "'");

/** Parses the part after `.svc/`. @throws 404.1 for anything that names no table or row. */
function parseResource(model: ODataModel, text: string): Resource {
  const notFound = () => problems.user.notFound();
  const table = model.tables.find((t) => t.name === text);
  if (table) return { table, instanceId: null, keys: [], single: false };
  const m = /^Submissions\('((?:[^']|'')*)'\)((?:\/[^/]+)*)$/.exec(text);
  if (!m) throw notFound();
  const instanceId = unquote(m[1]!);
  if (m[2] === '') return { table: model.tables[0]!, instanceId, keys: [], single: true };
  const steps = m[2]!.slice(1).split('/');
  let nodes = model.tables[0]!.children;
  const keys: string[] = [];
  let last: ODataNode | null = null;
  for (let i = 0; i < steps.length; i += 1) {
    const s = /^([^(]+)(?:\('((?:[^']|'')*)'\))?$/.exec(steps[i]!);
    const node = s ? nodes.find((n) => n.name === s[1]) : undefined;
    if (!s || !node || node.kind === 'leaf') throw notFound();
    if (s[2] != null) {
      // A key names one row of a repeat on the way; the last step is the collection itself.
      if (node.kind !== 'repeat' || i === steps.length - 1) throw notFound();
      keys.push(unquote(s[2]));
    }
    last = node;
    nodes = node.children;
  }
  const t = model.tables.find((x) => x.repeat === last);
  if (!t) throw notFound();
  return { table: t, instanceId, keys, single: false };
}

// ─── the feed ────────────────────────────────────────────────────────────────────────────────

export interface FeedInput {
  projectId: number;
  xmlFormId: string;
  draft: boolean;
  /** The path after `.svc/` (URL-decoded). */
  resource: string;
  /** Query parameters in order. */
  query: Array<[string, string]>;
  /** Absolute `…/forms/<id>.svc` URL (for @odata.context and nextLink). */
  serviceUrl: string;
  /** The request's absolute URL without its query, its path as the client sent it (nextLink, as Central). */
  pageUrl?: string;
  /** The request's `If-None-Match` header: when it names the page's ETag, no body is read. */
  ifNoneMatch?: string | null;
}

/**
 * A feed document (GET F.svc/Submissions…, also draft).
 * @returns the page's ETag and a stream of the JSON envelope (fact 19), or no stream when
 *   `input.ifNoneMatch` names the ETag (304); errors that depend only on the request are thrown
 *   before the first byte. ETags as Central's: an `eventhash` of the selection on tables and rows,
 *   a hash of the body for `$top=0` pages (none on a repeat table's `$top=0&$count=true`).
 * @throws 404.1 unknown form, table or row; 401.2/403.1 without submission.read; 400.18, 501.4,
 *   501.5 bad `$filter`/`$orderby`; 400.23/400.24 bad `$select`; 400.34 a `$skiptoken` whose row is
 *   gone (on Submissions too, where Central answers an empty page); 400.35 malformed `$skiptoken`;
 *   406.1; 501.1; 501.6; 501.11.
 */
export async function odataFeed(ctx: Ctx, input: FeedInput): Promise<FeedResponse> {
  const q = readFeedQuery(input.query);
  const feed = await loadFeed(ctx, input.projectId, input.xmlFormId, input.draft);
  const resource = parseResource(feed.model, input.resource);
  const select = q.select ? checkSelect(resource.table, q.select) : null;
  const builder = new RowBuilder(feed.model, { wkt: q.wkt, expand: expandSet(feed.model, q.expand) });
  const shape = (row: { [k: string]: Json }) => (select ? project(row, select) : row);
  const context = `${input.serviceUrl}/$metadata#${resource.table.name}`;
  const base: SQL[] = [eq(submissions.formId, feed.formId), eq(submissions.draft, feed.draft)];
  return resource.table.repeat == null
    ? rootFeed(ctx, feed, q, resource, builder, shape, select != null, context, base, input)
    : repeatFeed(ctx, feed, q, resource, builder, shape, context, base, input);
}

async function rootFeed(
  ctx: Ctx, feed: Feed, q: FeedQuery, resource: Resource, builder: RowBuilder, shape: (r: { [k: string]: Json }) => { [k: string]: Json },
  selected: boolean, context: string, base: SQL[], input: FeedInput,
): Promise<FeedResponse> {
  const filter = !resource.single && q.filter ? parseODataFilter(q.filter) : null;
  // Fields compared in the filter: read through their index when one is ready, and noted so that
  // one is built for a large form (lib/odata/field-indexes.ts).
  const fields = filter ? filteredFields(feed.model, filter) : [];
  const resolve = rootResolver(feed.model, await readyFieldIndexes(ctx, fields));
  const rowOf = (r: SubmissionDataRow) => shape(builder.rootRow(metaOf(r), r.encrypted ? null : (r.root ?? r.values)));
  // Without repeats a row needs only the values outside repeats (root_values: a fraction of the data).
  const rootOnly = feed.model.tables.length === 1;
  if (resource.single) {
    const one = and(...base, eq(submissions.instanceId, resource.instanceId!), isNull(submissions.deletedAt))!;
    const [row] = await selectSubmissionRows(ctx, { where: one, orderBy: [], limit: 1, rootOnly });
    if (!row) throw problems.user.notFound();
    return respond(input, await selectionEtag(ctx, feed, one, [], 1, 0, 'single'), () =>
      envelope(context, (async function* () { yield rowOf(row); })(), () => ({ nextLink: null, count: null })));
  }
  const where = [...base];
  // The web UI lists the Trash with `__system/deletedAt ne null`; otherwise deleted rows are left out.
  if (!filter || !filterMembers(filter).includes('__system/deletedAt')) where.push(isNull(submissions.deletedAt));
  if (filter) where.push(compileODataFilter(filter, resolve));
  if (fields.length > 0) await noteFieldFilter(ctx, feed.formId, fields);
  const custom = q.orderby.length > 0;
  const orderBy: SQL[] = custom
    ? [...q.orderby.map((o) => {
      const field = resolve(o.path);
      if (!field) throw new Problem(501.5, `The given OData filter expression references fields not supported by this server: ${o.path}`, { text: o.path });
      // As Central (odataOrderBy): nulls first ascending, last descending; ties by id in the first term's direction.
      return o.desc ? sql`${field.sql} desc nulls last` : sql`${field.sql} asc nulls first`;
    }), q.orderby[0]!.desc ? desc(submissions.id) : asc(submissions.id)]
    : [desc(submissions.createdAt), desc(submissions.id)];
  if (q.skiptoken) {
    const id = q.skiptoken.instanceId;
    const [at] = typeof id === 'string'
      ? await ctx.db.select({ createdAt: submissions.createdAt, id: submissions.id }).from(submissions).where(and(...base, eq(submissions.instanceId, id)))
      : [];
    // A token naming no submission (deleted, never there): an empty page, as Central.
    where.push(at ? sql`(${submissions.createdAt}, ${submissions.id}) < (${at.createdAt.toISOString()}::timestamptz, ${at.id})` : sql`false`);
  }
  const whereSql = and(...where)!;
  const countWhere = and(...where.slice(0, q.skiptoken ? -1 : undefined));
  // Filters on system fields only: count the submissions table alone (an index-only scan).
  const systemOnly = !filter || filterMembers(filter).every((m) => m === '__id' || m.startsWith('__system/'));
  // No filter: the count kept at write time (lib/odata/counts.ts), not a count of the form's rows.
  const count = !q.count
    ? null
    : !filter
      ? await liveSubmissionCount(ctx, feed.formId, feed.draft)
      : systemOnly
      ? Number((await ctx.db.select({ n: sql<number>`count(*)` }).from(submissions).where(countWhere))[0]!.n)
      : Number((await ctx.db.select({ n: sql<number>`count(*)` }).from(submissions).innerJoin(submissionDefs, eq(submissionDefs.id, submissions.currentDefId)).where(countWhere))[0]!.n);
  // `$top=0`: no rows to read, and the ETag is the body's (Central's countOnlyToOData).
  if (q.top === 0) {
    const page = countOnly(context, count);
    return respond(input, page.etag, page.body);
  }
  // Rows of a form without repeats, whole (no `$select`), are written as JSON text directly.
  const writer = rootOnly && !selected ? new RootJsonWriter(feed.model, { wkt: q.wkt }) : null;
  const rootsOfPage = rootOnly ? rootTextReader(ctx, feed, writer?.leafPaths, writer != null, writer?.writesBytes ?? false) : null;
  const wanted = q.top ?? Infinity;
  /** One batch of the page: `limit` rows from `after` (keyset) or `offset`, with their leaf texts. */
  type Batch = { page: SubmissionDataRow[]; texts: Array<LeafSource | null> | null };
  const batch = async (after: { createdAt: string; id: number } | null, offset: number, limit: number): Promise<Batch> => {
    const page = await selectSubmissionRows(ctx, {
      where: after ? and(whereSql, sql`(${submissions.createdAt}, ${submissions.id}) < (${after.createdAt}::timestamptz, ${after.id})`)! : whereSql,
      orderBy, limit, offset: after ? 0 : offset, rootText: rootOnly,
    });
    return { page, texts: rootsOfPage ? await rootsOfPage(page) : null };
  };
  // One more row than the page: whether a next page exists is part of what the page shows.
  // A page that one batch reads whole (`$top` up to ROOT_BATCH) is read first and its ETag hashed
  // from those rows: no second query over the same selection (issue 21).
  let first: Batch | null = null;
  let etag: string;
  if (wanted <= ROOT_BATCH) {
    first = await batch(null, q.skip, wanted + 1);
    etag = pageEtag(feed, first.page, `count:${count}`);
  } else {
    etag = await selectionEtag(ctx, feed, whereSql, orderBy, q.top == null ? null : q.top + 1, q.skip, `count:${count}`);
  }
  if (etagMatches(input.ifNoneMatch, etag)) return { etag, body: null };
  const pageRow = (r: SubmissionDataRow, source: LeafSource | null | undefined): { [k: string]: Json } | string | Uint8Array => {
    const meta = metaOf(r);
    if (writer) {
      const bytes = !r.encrypted && source?.raw !== undefined ? writer.rowBytes(meta, source.raw) : null;
      return bytes ?? writer.row(meta, r.encrypted ? null : source ?? { text: () => undefined, escaped: false });
    }
    let values: SubmissionValue[] | Record<string, string> | null = r.encrypted ? null : r.values;
    if (!r.encrypted && source && rootsOfPage) values = Object.fromEntries(rootsOfPage.paths.map((p, i) => [p, source.text(i) ?? '']));
    return shape(builder.rootRow(meta, values));
  };
  let more = false;
  let lastId: string | null = null;
  async function* rows() {
    let sent = 0;
    let after: { createdAt: string; id: number } | null = null;
    let offset = q.skip;
    while (sent < wanted) {
      // One more row than asked on the last batch tells whether a next page exists.
      const left = wanted - sent;
      const limit = left <= ROOT_BATCH ? left + 1 : ROOT_BATCH;
      const { page, texts }: Batch = first ?? await batch(after, offset, limit);
      first = null;
      for (let k = 0; k < page.length; k += 1) {
        const r = page[k]!;
        if (sent === wanted) {
          more = true;
          return;
        }
        sent += 1;
        lastId = r.instanceId;
        yield pageRow(r, texts?.[k]);
      }
      if (page.length < limit) return;
      if (custom) offset += page.length;
      else after = { createdAt: page[page.length - 1]!.createdAt.toISOString(), id: page[page.length - 1]!.id };
    }
  }
  const pageUrl = input.pageUrl ?? `${input.serviceUrl}/${resource.table.name}`;
  return { etag, body: await envelope(context, rows(), () => ({
    // Central gives a nextLink only after a row ($top=0 has none).
    nextLink: !more || lastId == null ? null : custom ? nextLink(pageUrl, q, { skip: q.skip + wanted }) : nextLink(pageUrl, q, { skiptoken: encodeSkiptoken({ instanceId: lastId }) }),
    count,
  })) };
}

/**
 * The ETag of a page read whole (with its one extra row), from its rows: what selectionEtag hashes
 * (each row's id, current version, updatedAt, deletedAt, review state, submitter's name, files
 * received), with the form definition and `extra`. Pure.
 */
function pageEtag(feed: Feed, page: SubmissionDataRow[], extra: string): string {
  let text = `${feed.defId}|${extra}|`;
  for (const r of page) {
    text += `${r.id}:${r.defId}:${r.updatedAt?.getTime() ?? ''}:${r.deletedAt?.getTime() ?? ''}:${r.reviewState ?? ''}:${r.submitterName ?? ''}:${r.received.length},`;
  }
  return `W/"eventhash:${sha256Hex(text).slice(0, 32)}"`;
}

/**
 * The leaf texts of a page of rows read with `rootText`, for a feed without repeat tables. Each
 * version's stored root_text is its definition's root leaf texts in order (rootTextOf), so a split
 * gives them without writing out and parsing the jsonb root_values (JSON.parse of root_values was
 * ~40 % of the server's CPU for a 1,000-row page of the 250-question form). Versions whose
 * definition lacks a leaf of the feed's (a field another version added), or whose text does not
 * split into its leaves, read root_values instead (one query per page, only when such rows exist):
 * as Central reads the XML, a value the submission holds is shown even when its own definition does
 * not declare it. Encrypted rows get null.
 * @param order the feed's leaf paths in the order the texts are asked for (default: leavesOf's).
 * @param escape give a row's texts JSON-escaped (one JSON.stringify of its root_text, split), when
 *   that is exact: a text holding no backslash, whose escaped separators are then the only `\u001f`.
 * @param copy give a row's root_text itself (LeafSource.raw) when its cells are the wanted leaves in
 *   order and it needs no JSON escaping (RootJsonWriter.rowBytes).
 * @returns the reader (called on each page; caches definitions for the request; `paths`: the order).
 */
function rootTextReader(ctx: Ctx, feed: Feed, order?: string[], escape = false, copy = false): ((page: SubmissionDataRow[]) => Promise<Array<LeafSource | null>>) & { paths: string[] } {
  const wanted = order ?? [...leavesOf(feed.model.tables[0]!.children).values()].map((n) => n.path);
  // Per definition: where each wanted leaf sits in its root_text, when it holds every one, else null.
  const slotsOf = (paths: string[]) => {
    const at = new Map(paths.map((p, i) => [p, i]));
    const slots = new Int32Array(wanted.length);
    for (let i = 0; i < wanted.length; i += 1) {
      const k = at.get(wanted[i]!);
      if (k === undefined) return null;
      slots[i] = k;
    }
    // The wanted leaves are this definition's, in its order: a row's cells are the values as they are.
    const identity = paths.length === wanted.length && slots.every((k, i) => k === i);
    return { slots, width: Math.max(1, paths.length), identity };
  };
  const layouts = new Map<number, ReturnType<typeof slotsOf>>([[feed.defId, slotsOf(feed.rootPaths)]]);
  const read = async (page: SubmissionDataRow[]) => {
    const out: Array<LeafSource | null> = new Array(page.length).fill(null);
    const unknown = [...new Set(page.filter((r) => !r.encrypted && !layouts.has(r.formDefId)).map((r) => r.formDefId))];
    if (unknown.length > 0) {
      for (const d of await ctx.db.select({ id: formDefs.id, fields: formDefs.fields }).from(formDefs).where(inArray(formDefs.id, unknown))) {
        layouts.set(d.id, slotsOf(rootLeafPaths(d.fields)));
      }
    }
    const fallback: number[] = [];
    for (let k = 0; k < page.length; k += 1) {
      const r = page[k]!;
      if (r.encrypted) continue;
      const layout = layouts.get(r.formDefId);
      const raw = r.cells ?? '';
      if (copy && layout?.identity && !NEEDS_ESCAPE.test(raw) && wellFormed(raw) && cellCount(raw) === layout.width) {
        // Copied to JSON bytes as it is (RootJsonWriter.rowBytes); split only if asked leaf by leaf.
        let split: string[] | null = null;
        out[k] = { text: (i) => (split ??= raw.split(ROOT_TEXT_SEPARATOR))[i], escaped: false, raw };
        continue;
      }
      const escaped = escape && !raw.includes('\\');
      const cells = !layout ? null : escaped ? JSON.stringify(raw).slice(1, -1).split(ESCAPED_SEPARATOR) : raw.split(ROOT_TEXT_SEPARATOR);
      if (!layout || !cells || cells.length !== layout.width) {
        fallback.push(k);
        continue;
      }
      const { slots } = layout;
      out[k] = { text: (i) => cells[slots[i]!], escaped };
    }
    if (fallback.length === 0) return out;
    const stored = await ctx.db.select({ id: submissionDefs.id, root: submissionDefs.rootValues }).from(submissionDefs)
      .where(inArray(submissionDefs.id, fallback.map((k) => page[k]!.defId)));
    const byId = new Map(stored.map((x) => [x.id, x.root as Record<string, string>]));
    for (const k of fallback) {
      const root = byId.get(page[k]!.defId) ?? {};
      out[k] = { text: (i) => root[wanted[i]!], escaped: false };
    }
    return out;
  };
  return Object.assign(read, { paths: wanted });
}

/**
 * A repeat row's fields for `$filter`/`$orderby`: its own leaves (`leaves`: leavesOf the table,
 * computed once) and `__id`, and its submission's `$root/Submissions/__id` and
 * `$root/Submissions/__system/…`. As Central, `__system/…` without `$root/Submissions/` is not a
 * field of a repeat row (null: 501.5).
 */
function repeatResolver(leaves: Map<string, ODataNode>, row: { [k: string]: Json }, meta: SubmissionDataRow): RowResolver {
  return (path, raw) => {
    const ofRoot = raw.startsWith('$root/Submissions/');
    if (path === '__id') return { type: 'text', value: ofRoot ? meta.instanceId : row.__id as string };
    if (ofRoot && !path.startsWith('__system/')) return null;
    if (path.startsWith('__system/')) {
      if (!ofRoot) return null;
      const m: Record<string, RowValue> = {
        '__system/submissionDate': { type: 'time', value: meta.createdAt.getTime() },
        '__system/updatedAt': { type: 'time', value: meta.updatedAt?.getTime() ?? null },
        '__system/submitterId': { type: 'number', value: meta.submitterId },
        '__system/reviewState': { type: 'text', value: meta.reviewState },
        '__system/deletedAt': { type: 'time', value: meta.deletedAt?.getTime() ?? null },
      };
      return m[path] ?? null;
    }
    const leaf = findLeaf(leaves, path);
    if (!leaf) return null;
    let v: Json = row;
    for (const p of path.split('/').slice(0, leaf.part != null ? -1 : undefined)) v = v != null && typeof v === 'object' && !Array.isArray(v) ? (v as { [k: string]: Json })[p] ?? null : null;
    if (leaf.part != null) {
      const coords = v != null && typeof v === 'object' && 'coordinates' in v ? (v.coordinates as number[]) : null;
      const acc = v != null && typeof v === 'object' && 'properties' in v ? ((v.properties as { accuracy?: number }).accuracy ?? null) : null;
      const parts = [coords?.[1], coords?.[0], coords?.[2], acc];
      return { type: 'number', value: parts[leaf.part] ?? null };
    }
    if (v == null) return rowValue(kindOf(leaf.node.type), null);
    if (typeof v === 'number') return { type: 'number', value: v };
    return rowValue(kindOf(leaf.node.type), typeof v === 'string' ? v : JSON.stringify(v));
  };
}

async function repeatFeed(
  ctx: Ctx, feed: Feed, q: FeedQuery, resource: Resource, builder: RowBuilder, shape: (r: { [k: string]: Json }) => { [k: string]: Json },
  context: string, base: SQL[], input: FeedInput,
): Promise<FeedResponse> {
  const table = resource.table;
  const chain = repeatChainFn(feed.model)(table.repeat!.path);
  const filter = q.filter ? parseODataFilter(q.filter) : null;
  // Encrypted submissions have no repeat rows: left out of the table; one asked for by key has none.
  const where = resource.instanceId == null ? [...base, eq(submissionDefs.encrypted, false)] : [...base];
  // As on Submissions, `$root/Submissions/__system/deletedAt` in the filter lets deleted submissions in.
  if (!filter || !filterMembers(filter).includes('__system/deletedAt')) where.push(isNull(submissions.deletedAt));
  if (resource.instanceId != null) where.push(eq(submissions.instanceId, resource.instanceId));
  const whereSql = and(...where)!;
  const now = Date.now();
  // The table's leaves, found once: every row's filter and sort keys are read through them.
  const leaves = leavesOf(table.children);
  // Check `$orderby` fields up front (501.5).
  if (q.orderby.length > 0) for (const o of q.orderby) if (!findLeaf(leaves, o.path) && !['__id', '__system/submissionDate', '__system/updatedAt', '__system/submitterId', '__system/reviewState', '__system/deletedAt'].includes(o.path)) {
    throw new Problem(501.5, `The given OData filter expression references fields not supported by this server: ${o.path}`, { text: o.path });
  }
  // Check `$filter` up front too (501.4/501.5/400.18 do not depend on values), so it fails before the first byte.
  if (filter) {
    const blank = { instanceId: '', createdAt: new Date(0), updatedAt: null, deletedAt: null, submitterId: null, reviewState: null } as SubmissionDataRow;
    evaluateFilter(filter as ODataToken, repeatResolver(leaves, {}, blank), now);
  }
  // `Submissions('id')/…/repeat`: the submission and the rows on the way must exist (404.1, as Central).
  const collection = resource.instanceId == null;
  // A table's `$top=0` without `$count`: no rows to read; the ETag is the body's (Central's countOnlyToOData).
  if (collection && q.top === 0 && !q.count) {
    const page = countOnly(context, null);
    return respond(input, page.etag, page.body);
  }
  // An encrypted submission's repeat tables are empty (`parent` null), as Central's: not an error.
  let one: { row: SubmissionDataRow; parent: { index: number[] } | null } | null = null;
  if (resource.instanceId != null) {
    const [r] = await selectSubmissionRows(ctx, { where: whereSql, orderBy: [], limit: 1 });
    if (!r) throw problems.user.notFound();
    let parent: { index: number[] } | null = null;
    if (!r.encrypted) {
      parent = { index: [] };
      const inst = builder.instance(r.values);
      for (let k = 0; k < resource.keys.length; k += 1) {
        const i = inst.instances(chain[k]!, parent.index).find((x) => repeatRowId(r.instanceId, chain[k]!, chain.slice(0, k + 1), [...parent!.index, x]) === resource.keys[k]);
        if (i == null) throw problems.user.notFound();
        parent.index.push(i);
      }
    }
    one = { row: r, parent };
  }
  // A bounded page of the table in the default order (`$top`, no `$orderby`, no `$count`): its
  // rows are read before answering and its ETag hashed from the submissions read for it (as a
  // Submissions page's: pageEtag), not from every submission of the form (`$top=1` of a repeat
  // table at 100,000 submissions cost PostgreSQL ~1 s). `visited` holds those submissions.
  const prefetch = collection && q.top != null && q.top > 0 && q.orderby.length === 0 && !q.count;
  let visited: SubmissionDataRow[] | null = prefetch ? [] : null;

  /** Every matching row, in submission order then document order. */
  async function* all(): AsyncGenerator<{ row: { [k: string]: Json }; meta: SubmissionDataRow }> {
    let after: { createdAt: string; id: number } | null = null;
    for (;;) {
      const page: SubmissionDataRow[] = one ? [one.row] : await selectSubmissionRows(ctx, {
        where: after ? and(whereSql, sql`(${submissions.createdAt}, ${submissions.id}) < (${after.createdAt}::timestamptz, ${after.id})`)! : whereSql,
        orderBy: [desc(submissions.createdAt), desc(submissions.id)], limit: BATCH,
      });
      if (visited) for (const r of page) visited.push(r);
      for (const r of page) {
        if (one && one.parent == null) continue;
        for (const row of builder.tableRows(table, r.instanceId, r.values, one?.parent ?? undefined)) {
          if (filter && !evaluateFilter(filter as ODataToken, repeatResolver(leaves, row, r), now)) continue;
          yield { row, meta: r };
        }
      }
      if (one || page.length < BATCH) return;
      after = { createdAt: page[page.length - 1]!.createdAt.toISOString(), id: page[page.length - 1]!.id };
    }
  }

  let source: AsyncGenerator<{ row: { [k: string]: Json }; meta: SubmissionDataRow }> = all();
  if (q.orderby.length > 0) {
    // Sorting needs every matching row: bounded by the table, not by a batch (documented limit).
    const buffered: Array<{ row: { [k: string]: Json }; meta: SubmissionDataRow }> = [];
    for await (const x of source) buffered.push(x);
    const keyOf = (x: { row: { [k: string]: Json }; meta: SubmissionDataRow }, path: string) => repeatResolver(leaves, x.row, x.meta)(path, path.startsWith('__system/') ? `$root/Submissions/${path}` : path)?.value ?? null;
    buffered.sort((a, b) => {
      for (const o of q.orderby) {
        const x = keyOf(a, o.path);
        const y = keyOf(b, o.path);
        if (x === y) continue;
        // As on Submissions: nulls first ascending, last descending.
        if (x == null) return o.desc ? 1 : -1;
        if (y == null) return o.desc ? -1 : 1;
        return (x < y ? -1 : 1) * (o.desc ? -1 : 1);
      }
      // Ties: by submission in the first term's direction, then (stable sort) document order.
      return a.meta.id === b.meta.id ? 0 : (a.meta.id < b.meta.id ? -1 : 1) * (q.orderby[0]!.desc ? -1 : 1);
    });
    source = (async function* () { yield* buffered; })();
  }

  // Position at the skiptoken before answering, so a vanished row is a 400.34, not a broken stream.
  const repeatId = q.skiptoken ? q.skiptoken.repeatId : undefined;
  let before = 0;
  if (q.skiptoken) {
    // `{ repeatId: null }` (the nextLink of a `$top=0&$count=true` page, as Central writes it) is the start.
    let found = repeatId === null;
    if (typeof repeatId === 'string') {
      // By hand, not `for await … break`: that would close the source, and the page after it would be empty.
      for (let x = await source.next(); !x.done; x = await source.next()) {
        before += 1;
        if (x.value.row.__id === repeatId) {
          found = true;
          break;
        }
      }
    }
    if (!found) throw new Problem(400.34, 'Record associated with the provided $skiptoken not found.');
  }
  const wanted = q.top ?? Infinity;
  // The bounded page read ahead (one row more than it shows: whether a next page exists), while
  // it takes at most PREFETCH_SUBMISSIONS submissions; past that, the ETag of the whole selection.
  let etag: string | null = null;
  if (visited) {
    const ahead: Array<{ row: { [k: string]: Json }; meta: SubmissionDataRow }> = [];
    let ended = false;
    while (ahead.length < q.skip + wanted + 1 && visited.length <= PREFETCH_SUBMISSIONS) {
      const x = await source.next();
      if (x.done) {
        ended = true;
        break;
      }
      ahead.push(x.value);
    }
    if (ended || ahead.length === q.skip + wanted + 1) {
      // The page is a function of the submissions read for it (a new one comes first in this order,
      // so it is among them); the skiptoken and paging are in the URL, the table in `extra`.
      etag = pageEtag(feed, visited, `${table.name}|repeat`);
    }
    visited = null;
    const rest = source;
    source = (async function* () { yield* ahead; yield* rest; })();
  }
  // The ETag of the submissions the rows come from; none for a table's `$top=0&$count=true`, as
  // Central (whose answer to that streams).
  if (etag == null && !(collection && q.top === 0)) etag = await selectionEtag(ctx, feed, whereSql, [], null, 0, table.name);
  if (etag != null && etagMatches(input.ifNoneMatch, etag)) return { etag, body: null };
  let skipped = 0;
  let sent = 0;
  let total = 0;
  let lastId: string | null = null;
  let more = false;
  const counted = q.count;
  async function* rows() {
    for await (const x of source) {
      total += 1;
      if (skipped < q.skip) {
        skipped += 1;
        continue;
      }
      if (sent >= wanted) {
        more = true;
        if (!counted) return;
        continue;
      }
      sent += 1;
      lastId = x.row.__id as string;
      yield shape(x.row);
    }
  }
  const pageUrl = input.pageUrl ?? `${input.serviceUrl}/${input.resource}`;
  return { etag, body: await envelope(context, rows(), () => ({
    // As Central: after the page's last row; on a table's `$top=0&$count=true` page with rows
    // left, too, with `{ repeatId: null }` (no row yet); on one submission's rows only after a row.
    nextLink: !more || (lastId == null && !(collection && wanted === 0)) ? null
      : q.orderby.length > 0 ? nextLink(pageUrl, q, { skip: q.skip + wanted }) : nextLink(pageUrl, q, { skiptoken: encodeSkiptoken({ repeatId: lastId }) }),
    // With a skiptoken the count is still the whole (filtered) table's, as on Submissions.
    count: counted ? before + total : null,
  })) };
}
