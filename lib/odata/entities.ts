/**
 * The OData feed of a Dataset's Entities (central-api.yaml, "OData Dataset Service"; Central's
 * lib/resources/odata-entities.js, lib/formats/odata.js edmxForEntities, lib/data/entity.js
 * streamEntityOdata): `D.svc`, `D.svc/$metadata` and `D.svc/Entities` with `$top`, `$skip`,
 * `$skiptoken`, `$count`, `$filter`, `$orderby`, `$select` and `$search`.
 *
 * Rows are read in keyset batches (newest first, as Central) outside any transaction and written
 * as the client reads (DESIGN, "Stream out"); the first page and a deep `$skiptoken` page both
 * walk the `entities_dataset_created` index. Beyond Central, `$filter` and `$orderby` also take
 * the Dataset's properties (`age gt 30`, `$orderby=first_name`), compared with literals only, each
 * read as the kind of the literal it is compared with (numbers and dates as such, unreadable
 * values as null); `$select=label` and every `__system/…` field are accepted too.
 */
import { and, asc, desc, eq, isNull, sql, type SQL } from 'drizzle-orm';
import { actors, entities, entityDefs } from '../../drizzle/schema';
import { canOrReject } from '../authz/can';
import type { Ctx } from '../context';
import { datasetByName, publishedProperties, type LoadedDataset } from '../datasets';
import {
  compileODataFilter, filterMembers, literalValue, memberPath, parseODataFilter, unsupportedField,
  type FilterField, type FilterType, type ODataToken,
} from '../exports/filter';
import { Problem, problems } from '../problem';
import { getProjectOrNotFound, projectActee } from '../projects';
import { sanitizeOdataIdentifier } from '../xforms/parse-form';
import { envelope } from './index';
import { encodeSkiptoken, nextLink, readFeedQuery, type FeedQuery } from './query';
import type { Json } from './rows';

/** Rows per database round trip (a `$top=1000` page in one, +1 to see whether more exist). */
const BATCH = 1000;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A Dataset's published property: its name, and its OData name (sanitized, as Central). */
export interface ODataProperty {
  name: string;
  odataName: string;
}

/**
 * Loads the Dataset of an OData request with Central's order of checks: project (404.1), then
 * `entity.list` on the project (401.2/403.1), then the published Dataset (404.1). Reads only.
 */
async function loadDataset(ctx: Ctx, projectId: number, name: string): Promise<{ d: LoadedDataset; props: ODataProperty[] }> {
  const project = await getProjectOrNotFound(ctx, projectId);
  await canOrReject(ctx, 'entity.list', projectActee(project));
  const dataset = await datasetByName(ctx, project.id, name);
  if (!dataset) throw problems.user.notFound();
  const d: LoadedDataset = { dataset, project };
  const props = (await publishedProperties(ctx, d.dataset.id)).map((p) => ({ name: p.name, odataName: sanitizeOdataIdentifier(p.name) }));
  return { d, props };
}

/**
 * The service document (GET D.svc): one EntitySet, `Entities`.
 * @param serviceUrl the absolute `…/datasets/<name>.svc` URL. @throws 404.1; 401.2/403.1. Reads only.
 */
export async function entityServiceDocument(ctx: Ctx, projectId: number, name: string, serviceUrl: string) {
  await loadDataset(ctx, projectId, name);
  return { '@odata.context': `${serviceUrl}/$metadata`, value: [{ name: 'Entities', kind: 'EntitySet', url: 'Entities' }] };
}

/**
 * The EDMX document (GET D.svc/$metadata), byte for byte Central's edmxForEntities template
 * (its stray trailing spaces included): `org.opendatakit.entity.metadata`, then
 * `org.opendatakit.user.<dataset>` with the Entities type (label and every property as Edm.String).
 * @throws 404.1; 401.2/403.1. Reads only.
 */
export async function entityMetadata(ctx: Ctx, projectId: number, name: string): Promise<string> {
  const { d, props } = await loadDataset(ctx, projectId, name);
  return entityMetadataXml(d.dataset.name, props.map((p) => p.odataName));
}

/** The EDMX text for a Dataset name and its OData property names. Pure. */
export function entityMetadataXml(datasetName: string, names: string[]): string {
  const ns = `org.opendatakit.user.${sanitizeOdataIdentifier(datasetName)}`;
  const propLines = names.map((n) => `        <Property Name="${esc(n)}" Type="Edm.String"/>\n`).join('');
  const nonFilterable = names.map((n) => `                  <PropertyPath>${esc(n)}</PropertyPath>\n`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>
<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">
  <edmx:DataServices>
    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="org.opendatakit.entity">
      <ComplexType Name="metadata">
        <Property Name="createdAt" Type="Edm.DateTimeOffset"/>
        <Property Name="creatorId" Type="Edm.String"/>
        <Property Name="creatorName" Type="Edm.String"/>        
        <Property Name="updates" Type="Edm.Int64"/>
        <Property Name="updatedAt" Type="Edm.DateTimeOffset"/>
        <Property Name="deletedAt" Type="Edm.DateTimeOffset"/>
        <Property Name="version" Type="Edm.Int64"/>
        <Property Name="conflict" Type="Edm.String"/>
      </ComplexType>
    </Schema>
    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="${esc(ns)}">    
      <EntityType Name="Entities">
        <Key><PropertyRef Name="__id"/></Key>
        <Property Name="__id" Type="Edm.String"/>
        <Property Name="__system" Type="org.opendatakit.entity.metadata"/>
        <Property Name="label" Type="Edm.String"/>
${propLines}      </EntityType>    
      <EntityContainer Name="${esc(datasetName)}">      
        <EntitySet Name="Entities" EntityType="${esc(ns)}.Entities">          
          <Annotation Term="Org.OData.Capabilities.V1.ConformanceLevel" EnumMember="Org.OData.Capabilities.V1.ConformanceLevelType/Minimal"/>
          <Annotation Term="Org.OData.Capabilities.V1.BatchSupported" Bool="false"/>
          <Annotation Term="Org.OData.Capabilities.V1.CountRestrictions">
            <Record><PropertyValue Property="Countable" Bool="true"/></Record>
          </Annotation>
          <Annotation Term="Org.OData.Capabilities.V1.FilterFunctions">
            <Record>
              <PropertyValue Property="NonCountableProperties">
                <Collection>
                  <String>eq</String>
                </Collection>
              </PropertyValue>
            </Record>
          </Annotation>
          <Annotation Term="Org.OData.Capabilities.V1.FilterFunctions">
            <Record>
              <PropertyValue Property="Filterable" Bool="true"/>
              <PropertyValue Property="RequiresFilter" Bool="false"/>
              <PropertyValue Property="NonFilterableProperties">
                <Collection>
${nonFilterable}                </Collection>
              </PropertyValue>
            </Record>
          </Annotation>
          <Annotation Term="Org.OData.Capabilities.V1.SortRestrictions">
            <Record><PropertyValue Property="Sortable" Bool="false"/></Record>
          </Annotation>
          <Annotation Term="Org.OData.Capabilities.V1.ExpandRestrictions">
            <Record><PropertyValue Property="Expandable" Bool="false"/></Record>
          </Annotation>
          <Annotation Term="Org.OData.Capabilities.V1.SearchRestrictions">
            <Record>
              <PropertyValue Property="Searchable" Bool="true" />
              <PropertyValue Property="UnsupportedExpressions">
              <Collection>
                <EnumMember>Org.OData.Capabilities.V1.SearchExpressions/And</EnumMember>
                <EnumMember>Org.OData.Capabilities.V1.SearchExpressions/Not</EnumMember>
                <EnumMember>Org.OData.Capabilities.V1.SearchExpressions/Group</EnumMember>
              </Collection>
            </PropertyValue>
            </Record>
          </Annotation>
        </EntitySet>
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>`;
}

// ─── filter, search, order ───────────────────────────────────────────────────────────────────

/** Central's system fields of an entity (odataToColumnMap), plus `version` and `updates`. */
function systemField(path: string): FilterField | null {
  switch (path) {
    case '__id': return { sql: sql`${entities.uuid}`, type: 'text' };
    case '__system/createdAt': return { sql: sql`${entities.createdAt}`, type: 'time' };
    case '__system/updatedAt': return { sql: sql`${entities.updatedAt}`, type: 'time' };
    case '__system/deletedAt': return { sql: sql`${entities.deletedAt}`, type: 'time' };
    case '__system/creatorId': return { sql: sql`${entities.creatorId}`, type: 'number' };
    case '__system/conflict': return { sql: sql`${entities.conflict}`, type: 'text' };
    case '__system/version': return { sql: sql`${entityDefs.version}`, type: 'number' };
    case '__system/updates': return { sql: sql`(${entityDefs.version} - 1)`, type: 'number' };
    default: return null;
  }
}

const NUMERIC = '^\\s*[-+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*$';
const ISO_DATE = '^\\s*[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])';

/** A property's value read as `kind` (blank → null; text that is no number or date → null). */
function propertySql(name: string, kind: FilterType): FilterField {
  const text = sql`nullif(${entityDefs.data} ->> ${name}, '')`;
  if (kind === 'number') return { type: 'number', sql: sql`(case when ${text} ~ ${NUMERIC} then (${text})::numeric end)` };
  if (kind === 'time') return { type: 'time', sql: sql`(case when ${text} ~ ${ISO_DATE} then (${text})::timestamptz end)` };
  return { type: 'text', sql: text };
}

const findProperty = (props: ODataProperty[], path: string) => props.find((p) => p.name === path) ?? props.find((p) => p.odataName === path);
const MEMBER = new Set(['FirstMemberExpression', 'MemberExpression', 'RootExpression']);
const DATE_PARTS = new Set(['year', 'month', 'day', 'hour', 'minute', 'second']);

/**
 * The kind each property occurrence of a filter is read as, by token position: that of the literal
 * it is compared with (`time` inside year()…second()). @throws 501.5 a property compared with
 * anything but a literal (Central names the property: `first_name eq Alice` → first_name). Pure.
 */
function propertyKinds(tree: ODataToken, props: ODataProperty[]): Map<number, FilterType> {
  const kinds = new Map<number, FilterType>();
  const isProp = (n: ODataToken | undefined) => n != null && MEMBER.has(n.type) && findProperty(props, memberPath(n)) != null;
  const walk = (n: unknown): void => {
    if (n == null || typeof n !== 'object') return;
    const t = n as ODataToken;
    const v = t.value as { left?: ODataToken; right?: ODataToken; method?: string; parameters?: ODataToken[] } | null;
    if (v && typeof v === 'object' && v.left && v.right && (isProp(v.left) || isProp(v.right))) {
      const [p, other] = isProp(v.left) ? [v.left, v.right] : [v.right, v.left];
      if (other.type !== 'Literal') throw unsupportedField(p, memberPath(p));
      const { type } = literalValue(other);
      kinds.set(p.position, type === 'number' || type === 'time' ? type : 'text');
      return;
    }
    if (t.type === 'MethodCallExpression' && v && DATE_PARTS.has(v.method ?? '')) {
      for (const a of v.parameters ?? []) if (isProp(a)) kinds.set(a.position, 'time');
    }
    for (const [k, child] of Object.entries(t)) if (k !== 'raw' && k !== 'position' && k !== 'type') walk(child);
  };
  walk(tree);
  return kinds;
}

/**
 * Compiles an entity `$filter`: Central's system fields (`__id`, `__system/createdAt`,
 * `updatedAt`, `deletedAt`, `creatorId`, `conflict`), `__system/version` and `updates`, and the
 * Dataset's properties (by name or OData name) compared with literals. `label` is refused, as in
 * Central. @returns the SQL (over `entities` joined to its current `entity_defs`) and whether it
 * names `__system/deletedAt` (then deleted entities are not left out).
 * @throws 400.18 unparseable; 501.4 unsupported syntax; 501.5 unknown field. Pure.
 */
export function entityFilter(text: string, props: ODataProperty[]): { where: SQL; deleted: boolean; onEntitiesOnly: boolean } {
  const tree = parseODataFilter(text);
  const kinds = propertyKinds(tree, props);
  const where = compileODataFilter(tree, (path, node) => {
    const system = systemField(path);
    if (system) return system;
    const p = findProperty(props, path);
    return p ? propertySql(p.name, kinds.get(node?.position ?? -1) ?? 'text') : null;
  });
  const members = filterMembers(tree);
  const contained = containedValues(tree, props);
  // The containment is implied by the filter; it lets PostgreSQL find the rows by entity_defs_current_data.
  const indexed = contained.length === 0 ? where
    : sql`(${entityDefs.data} @> ${JSON.stringify(Object.fromEntries(contained))}::jsonb and ${where})`;
  return { where: indexed, deleted: members.includes('__system/deletedAt'), onEntitiesOnly: members.every((m) => ENTITY_COLUMNS.has(m)) };
}

/**
 * The `property eq 'text'` terms a filter requires (those joined by `and` at its top, through
 * parentheses), as [property name, value] pairs: an entity matching the filter has
 * `data @> {name: value}`. Blank values are left out (a blank property reads as null), and so are
 * numbers, dates and null (compared as such, not as the stored text). Pure.
 */
function containedValues(tree: ODataToken, props: ODataProperty[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const unwrap = (n: ODataToken): ODataToken => (n.type === 'ParenExpression' ? unwrap(n.value as ODataToken) : n);
  const walk = (n: ODataToken): void => {
    const v = n.value as { left?: ODataToken; right?: ODataToken };
    if (n.type === 'BoolParenExpression') return walk(n.value as ODataToken);
    if (n.type === 'AndExpression') {
      walk(v.left!);
      walk(v.right!);
      return;
    }
    if (n.type !== 'EqualsExpression') return;
    const [l, r] = [unwrap(v.left!), unwrap(v.right!)];
    const [member, literal] = l.type === 'Literal' ? [r, l] : [l, r];
    if (literal.type !== 'Literal' || !MEMBER.has(member.type)) return;
    const path = memberPath(member);
    if (systemField(path)) return;
    const p = findProperty(props, path);
    const { value, type } = literalValue(literal);
    if (p && type === 'text' && typeof value === 'string' && value !== '') out.push([p.name, value]);
  };
  walk(tree);
  // Two different values for one property: the filter matches nothing; one containment of the last is still implied.
  return out;
}

/** Filter fields that are columns of `entities` itself (no version needed to test them). */
const ENTITY_COLUMNS = new Set(['__id', '__system/createdAt', '__system/updatedAt', '__system/deletedAt', '__system/creatorId', '__system/conflict']);

/**
 * `$search` as Central's searchClause: words of the label and of every property value
 * (PostgreSQL full text, `simple` configuration, web-search syntax). Pure.
 */
export const entitySearch = (text: string): SQL =>
  sql`((jsonb_to_tsvector('simple', ${entityDefs.data}, '["string"]') || to_tsvector('simple', ${entityDefs.label})) @@ websearch_to_tsquery('simple', ${text}))`;

/**
 * The conditions of an entity query of a Dataset: its current versions, `$filter` (deleted ones
 * left out unless it names `__system/deletedAt`) and `$search`. `onEntitiesOnly` when no condition
 * reads the version (`entity_defs`), so a count can read `entities` alone.
 * @throws as entityFilter. Pure.
 */
export function entityConditions(
  datasetId: number, q: { filter?: string | null; search?: string | null }, props: ODataProperty[],
): SQL[] & { onEntitiesOnly?: boolean } {
  const where: SQL[] & { onEntitiesOnly?: boolean } = [eq(entities.datasetId, datasetId)];
  const filter = q.filter != null && q.filter !== '' ? entityFilter(q.filter, props) : null;
  if (!filter?.deleted) where.push(isNull(entities.deletedAt));
  if (filter) where.push(filter.where);
  const search = q.search != null && q.search !== '';
  if (search) where.push(entitySearch(q.search!));
  where.onEntitiesOnly = (filter == null || filter.onEntitiesOnly) && !search;
  return where;
}

// ─── rows ────────────────────────────────────────────────────────────────────────────────────

const SYSTEM_KEYS = ['createdAt', 'creatorId', 'creatorName', 'updates', 'updatedAt', 'deletedAt', 'version', 'conflict'];

/** Checks `$select` as Central (400.23 unknown name) and also takes `label` and every `__system/…`. */
function checkSelect(select: string[], props: ODataProperty[]): Set<string> {
  for (const p of select) {
    const ok = p === '__id' || p === 'label' || p === '__system' || (p.startsWith('__system/') && SYSTEM_KEYS.includes(p.slice(9)))
      || findProperty(props, p) != null;
    if (!ok) throw new Problem(400.23, `Could not find a property named '${p}'`, { property: p });
  }
  return new Set(select);
}

interface EntityODataRow {
  uuid: string;
  createdAt: Date;
  id: number;
  creatorId: number | null;
  creatorName: string | null;
  updatedAt: Date | null;
  deletedAt: Date | null;
  conflict: string | null;
  label: string;
  data: Record<string, string>;
  version: number;
}

/** One entity as Central writes it (selectFields): `__id`, `label`, `__system`, then the properties ('' when unset). */
function rowJson(r: EntityODataRow, props: ODataProperty[], select: Set<string> | null): { [k: string]: Json } {
  const out: { [k: string]: Json } = {};
  const all = select == null;
  if (all || select.has('__id')) out.__id = r.uuid;
  if (all || select.has('label')) out.label = r.label;
  const system: { [k: string]: Json } = {
    createdAt: r.createdAt.toISOString(), creatorId: r.creatorId == null ? null : String(r.creatorId), creatorName: r.creatorName,
    updates: r.version - 1, updatedAt: r.updatedAt ? r.updatedAt.toISOString() : null,
    deletedAt: r.deletedAt ? r.deletedAt.toISOString() : null, version: r.version, conflict: r.conflict,
  };
  if (all || select.has('__system')) out.__system = system;
  else {
    const some: { [k: string]: Json } = {};
    for (const k of SYSTEM_KEYS) if (select.has(`__system/${k}`)) some[k] = system[k]!;
    if (Object.keys(some).length > 0) out.__system = some;
  }
  for (const p of props) if (all || select.has(p.name) || select.has(p.odataName)) out[p.odataName] = r.data[p.name] ?? '';
  return out;
}

const rowFields = {
  uuid: entities.uuid, createdAt: entities.createdAt, id: entities.id, creatorId: entities.creatorId, creatorName: actors.displayName,
  updatedAt: entities.updatedAt, deletedAt: entities.deletedAt, conflict: entities.conflict, label: entityDefs.label,
  data: entityDefs.data, version: entityDefs.version,
};

/** The entity rows of a Dataset matching `where`, in `orderBy`, joined to their current version and creator. */
function selectRows(ctx: Ctx, where: SQL, orderBy: SQL[], limit: number, offset: number): Promise<EntityODataRow[]> {
  return ctx.db.select(rowFields).from(entities)
    .innerJoin(entityDefs, and(eq(entityDefs.entityId, entities.id), eq(entityDefs.current, true)))
    .leftJoin(actors, eq(actors.id, entities.creatorId))
    .where(where).orderBy(...orderBy).limit(limit).offset(offset) as Promise<EntityODataRow[]>;
}

/** What GET D.svc/<resource> asks for (functions/entities/odata.ts builds it from the request). */
export interface EntityFeedInput {
  projectId: number;
  name: string;
  /** The path after `.svc/` (URL-decoded); only `Entities` names a feed. */
  resource: string;
  /** Query parameters in order. */
  query: Array<[string, string]>;
  /** Absolute `…/datasets/<name>.svc` URL (for @odata.context and nextLink). */
  serviceUrl: string;
}

/**
 * The Entities feed (GET D.svc/Entities): newest first unless `$orderby`; `$top`/`$skip`;
 * `$skiptoken` (`01` + base64 `{ uuid }`, what nextLink carries); `$count` (the whole filtered
 * set, with a skiptoken too); `$filter`, `$search`, `$select`. Under `$orderby` the nextLink moves
 * `$skip` forward (Central would give a skiptoken it then refuses).
 * @returns a stream of the JSON envelope `{ value, @odata.context, @odata.nextLink?, @odata.count? }`;
 *   every error that depends only on the request is thrown before the first byte.
 * @throws 404.1 project, Dataset or resource; 401.2/403.1 without entity.list on the project;
 *   400.18/501.4/501.5 `$filter`/`$orderby`; 400.23 `$select`; 400.34 a `$skiptoken` naming no
 *   entity of the Dataset (Central answers an empty page); 400.35 malformed token; 406.1; 501.1
 *   unknown option or `$orderby` with `$skiptoken`. Reads only, outside any transaction.
 */
export async function entityFeed(ctx: Ctx, input: EntityFeedInput): Promise<ReadableStream<Uint8Array>> {
  const keys = new Set(input.query.map(([k]) => k));
  // Central's wording for this one (QueryOptions.fromODataRequestEntities).
  if (keys.has('$orderby') && keys.has('$skiptoken')) throw problems.internal.notImplemented({ feature: 'using $orderby and $skiptoken together' });
  const q = readFeedQuery(input.query);
  const { d, props } = await loadDataset(ctx, input.projectId, input.name);
  if (input.resource !== 'Entities') throw problems.user.notFound();
  const select = q.select && !(q.select.length === 1 && q.select[0] === '*') ? checkSelect(q.select, props) : null;
  const search = new Map(q.raw).get('$search') ?? null;
  const where = entityConditions(d.dataset.id, { filter: q.filter, search }, props);
  const custom = q.orderby.length > 0;
  const orderBy: SQL[] = custom ? orderSql(q, props) : [desc(entities.createdAt), desc(entities.id)];
  const countWhere = and(...where)!;
  if (q.skiptoken) {
    const uuid = q.skiptoken.uuid;
    const [at] = typeof uuid === 'string'
      ? await ctx.db.select({ createdAt: entities.createdAt, id: entities.id }).from(entities)
        .where(and(eq(entities.datasetId, d.dataset.id), eq(entities.uuid, uuid.toLowerCase())))
      : [];
    if (!at) throw new Problem(400.34, 'Record associated with the provided $skiptoken not found.');
    where.push(sql`(${entities.createdAt}, ${entities.id}) < (${at.createdAt.toISOString()}::timestamptz, ${at.id})`);
  }
  const whereSql = and(...where)!;
  // The count runs beside the page's reads (another pooled connection) and is awaited for the trailer.
  const counting = q.count ? countEntities(ctx, countWhere, where.onEntitiesOnly === true) : null;
  counting?.catch(() => {});
  let count: number | null = null;
  const wanted = q.top ?? Infinity;
  let more = false;
  let lastUuid: string | null = null;
  async function* rows(): AsyncGenerator<{ [k: string]: Json }> {
    yield* page();
    if (counting) count = await counting;
  }
  async function* page(): AsyncGenerator<{ [k: string]: Json }> {
    let sent = 0;
    let after: { createdAt: string; id: number } | null = null;
    // As Central, `$skip` does not apply after a `$skiptoken`.
    let offset = q.skiptoken ? 0 : q.skip;
    while (sent < wanted) {
      const left = wanted - sent;
      const limit = left <= BATCH ? left + 1 : BATCH;
      const page = await selectRows(ctx,
        after ? and(whereSql, sql`(${entities.createdAt}, ${entities.id}) < (${after.createdAt}::timestamptz, ${after.id})`)! : whereSql,
        orderBy, limit, after ? 0 : offset);
      for (const r of page) {
        if (sent === wanted) {
          more = true;
          return;
        }
        sent += 1;
        lastUuid = r.uuid;
        yield rowJson(r, props, select);
      }
      if (page.length < limit) return;
      if (custom) offset += page.length;
      else after = { createdAt: page[page.length - 1]!.createdAt.toISOString(), id: page[page.length - 1]!.id };
    }
  }
  const pageUrl = `${input.serviceUrl}/Entities`;
  return envelope(`${input.serviceUrl}/$metadata#Entities`, rows(), () => ({
    nextLink: !more ? null : custom ? nextLink(pageUrl, q, { skip: q.skip + wanted }) : nextLink(pageUrl, q, { skiptoken: encodeSkiptoken({ uuid: lastUuid }) }),
    count,
  }));
}

/** `$orderby` terms as SQL: nulls first ascending, last descending; ties by id in the first term's direction (Central's odataOrderBy). */
function orderSql(q: FeedQuery, props: ODataProperty[]): SQL[] {
  const terms = q.orderby.map((o) => {
    const p = findProperty(props, o.path);
    const field = systemField(o.path) ?? (p ? propertySql(p.name, 'text') : null);
    if (!field) throw new Problem(501.5, `The given OData filter expression references fields not supported by this server: ${o.path}`, { text: o.path });
    return o.desc ? sql`${field.sql} desc nulls last` : sql`${field.sql} asc nulls first`;
  });
  return [...terms, q.orderby[0]!.desc ? desc(entities.id) : asc(entities.id)];
}

/**
 * Entities matching `where`. Every entity has exactly one current version, so a condition on
 * `entities` alone counts that table only (an index-only scan of entities_dataset_live). Reads only.
 */
async function countEntities(ctx: Ctx, where: SQL, onEntitiesOnly: boolean): Promise<number> {
  const [row] = onEntitiesOnly
    ? await ctx.db.select({ n: sql<number>`count(*)::int` }).from(entities).where(where)
    : await ctx.db.select({ n: sql<number>`count(*)::int` }).from(entities)
      .innerJoin(entityDefs, and(eq(entityDefs.entityId, entities.id), eq(entityDefs.current, true)))
      .where(where);
  return Number(row?.n ?? 0);
}
