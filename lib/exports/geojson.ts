/**
 * Submissions' geodata as GeoJSON (central-api.yaml: "Retrieving Submissions Geodata"
 * `F/submissions.geojson`, "Retrieving GeoJSON of a single Submission" `S.geojson`, "Getting
 * Version GeoJSON" `S/versions/{versionId}.geojson`), what the web UI's map view draws.
 *
 * Each submission is one Feature whose `id` is its instanceId. The field read is the one named by
 * `fieldpath`, else the first geopoint/geotrace/geoshape outside any repeat of the submission's
 * own form version (so it can differ between versions; `properties.fieldpath` then says which).
 * Values come from what ingestion stored (root_values outside repeats, `values` inside them): no
 * XML is parsed here. The collection is streamed in keyset-ordered batches, newest first, outside
 * any transaction (DESIGN rule 5).
 */
import { and, desc, eq, isNull, sql, type SQL } from 'drizzle-orm';
import { formDefs, submissionDefs, submissions } from '../../drizzle/schema';
import { pullStream } from '../bytes';
import type { Ctx } from '../context';
import { canOnFormOrReject, getFormOrNotFound } from '../forms/queries';
import { Problem, problems } from '../problem';
import type { FormField, SubmissionValue } from '../xforms/types';
import { compileODataFilter, filterMembers, parseODataFilter } from './filter';
import { featureJson, fieldGeometry, GEO_TYPES, type Geometry } from './geojson-geometry';
import { systemFilterField } from './index';
import { primed } from './primed';

/** A geo field to read from the submissions of one form definition. */
export interface GeoTarget {
  path: string;
  type: string;
  /** Inside at least one repeat: every instance's value goes into a Multi* geometry. */
  repeated: boolean;
}

/**
 * The geo fields to read for one form definition: those named in `fieldpaths` (geo types only), or,
 * when none is named, the first geo field outside every repeat (Central's default field policy).
 * @param fields the definition's fields in form order. @returns 0 or more targets. Pure.
 */
export function geoTargets(fields: FormField[], fieldpaths: string[]): GeoTarget[] {
  const repeats = fields.filter((f) => f.type === 'repeat').map((f) => `${f.path}/`);
  const geo = fields
    .filter((f) => GEO_TYPES.has(f.type))
    .map((f) => ({ path: f.path, type: f.type, repeated: repeats.some((r) => f.path.startsWith(r)) }));
  if (fieldpaths.length > 0) return geo.filter((g) => fieldpaths.includes(g.path));
  const first = geo.find((g) => !g.repeated);
  return first ? [first] : [];
}

/** The query of `GET F/submissions.geojson` as given. */
export interface GeoJsonQuery {
  /** OData `$filter` on `__id` and `__system/…` (submissionDate, updatedAt, submitterId, reviewState, deletedAt). */
  filter?: string | null;
  /** The `fieldpath` parameters (at most one distinct for the collection). */
  fieldpaths: string[];
  /** `limit` as given (Central: an integer prefix, else no limit). */
  limit?: string | null;
  /** Rows per database round trip (default 1000; tests set small values to cross batch boundaries). */
  batchSize?: number;
}

/** One submission's stored values of one geo field (a page row of submissionsGeoJson). */
interface GeoRow {
  id: number;
  at: string;
  instanceId: string;
  path: string;
  type: string;
  repeated: boolean;
  values: Array<string | null>;
}

/** Rows per database round trip: bounds memory to one batch of geo values. */
const BATCH = 1000;
const encoder = new TextEncoder();

/** The distinct fieldpath values (Central dedupes repeated parameters). */
const distinct = (xs: string[]) => [...new Set(xs)];

/** Central's `Number.parseInt(limit) || null`: garbage, 0 (and, here, negatives) mean no limit. */
function parseLimit(raw: string | null | undefined): number | null {
  const n = Number.parseInt(raw ?? '', 10);
  return Number.isFinite(n) && n > 0 ? n : null;
}

/** The values of one target in one version: outside repeats the root value, inside every non-empty one. */
function targetValues(t: GeoTarget, values: SubmissionValue[] | null, root: Record<string, string>): string[] {
  if (!t.repeated) {
    const v = root[t.path];
    return v == null || v === '' ? [] : [v];
  }
  return (values ?? []).filter((v) => v.path === t.path && v.value !== '').map((v) => v.value);
}

/**
 * The GeoJSON FeatureCollection of a form's submissions (GET F/submissions.geojson): one Feature per
 * submission (its current version) with a valid geometry in the chosen field, newest first.
 * Deleted submissions are left out unless the filter names `__system/deletedAt`; draft test
 * submissions never appear. `limit` caps the submissions read (those of versions that have the
 * field), so fewer features may come back when some hold no valid value.
 * @param input `{ projectId, xmlFormId }` and the query (`filter`, `fieldpaths`, `limit`).
 * @returns `application/json` text as a stream pulled by the client; the first batch is read
 *   before returning, so failures become error responses.
 * @throws 404.1 unknown form; 401.2/403.1 without submission.list; 400.41 more than one fieldpath;
 *   400.18/501.4/501.5 a bad `$filter`. Reads only (Central logs no audit).
 */
export async function submissionsGeoJson(
  ctx: Ctx,
  input: { projectId: number; xmlFormId: string } & GeoJsonQuery,
): Promise<ReadableStream<Uint8Array>> {
  const f = await getFormOrNotFound(ctx, input.projectId, input.xmlFormId);
  await canOnFormOrReject(ctx, 'submission.list', f);
  const fieldpaths = distinct(input.fieldpaths);
  if (fieldpaths.length > 1) {
    throw new Problem(400.41, `Parameters of set {${fieldpaths.join(', ')}}: at most one fieldpath may be specified`, {
      paramSet: fieldpaths, violationText: 'at most one fieldpath may be specified',
    });
  }
  const limit = parseLimit(input.limit);
  const where: SQL[] = [eq(submissions.formId, f.form.id), eq(submissions.draft, false)];
  const filter = input.filter ? parseODataFilter(input.filter) : null;
  // As Central's odataExcludeDeleted: a filter on deletedAt decides for itself (the Trash map).
  if (!filter || !filterMembers(filter).includes('__system/deletedAt')) where.push(isNull(submissions.deletedAt));
  if (filter) where.push(compileODataFilter(filter, systemFilterField));

  const defs = await ctx.db.select({ id: formDefs.id, fields: formDefs.fields }).from(formDefs).where(eq(formDefs.formId, f.form.id));
  const targets = defs.flatMap((d) => geoTargets(d.fields, fieldpaths).map((t) => ({ ...t, defId: d.id })));
  const named = fieldpaths.length > 0;

  async function* chunks(): AsyncGenerator<Uint8Array> {
    let text = '{"type":"FeatureCollection","features":[';
    let first = true;
    if (targets.length > 0) {
      const list = sql.join(targets.map((t) => sql`(${t.defId}::integer, ${t.path}::text, ${t.type}::text, ${t.repeated}::boolean)`), sql`, `);
      let after: { at: string; id: number } | null = null;
      let left = limit ?? Number.POSITIVE_INFINITY;
      while (left > 0) {
        const size = Math.min(input.batchSize ?? BATCH, left);
        const page: GeoRow[] = await ctx.db
          .select({
            id: submissions.id,
            at: sql<string>`${submissions.createdAt}::text`,
            instanceId: submissions.instanceId,
            path: sql<string>`t.path`,
            type: sql<string>`t.geo_type`,
            repeated: sql<boolean>`t.repeated`,
            // Only what the one field needs: its root value, or its values inside repeats in document order.
            values: sql<Array<string | null>>`case when t.repeated
              then to_jsonb(array(select e.v ->> 'value' from jsonb_array_elements(${submissionDefs.values}) with ordinality as e(v, n)
                where e.v ->> 'path' = t.path and e.v ->> 'value' <> '' order by e.n))
              else jsonb_build_array(${submissionDefs.rootValues} ->> t.path) end`,
          })
          .from(submissions)
          .innerJoin(submissionDefs, eq(submissionDefs.id, submissions.currentDefId))
          .innerJoin(sql`(values ${list}) as t(def_id, path, geo_type, repeated)`, sql`t.def_id = ${submissionDefs.formDefId}`)
          .where(and(...where, after ? sql`(${submissions.createdAt}, ${submissions.id}) < (${after.at}::timestamptz, ${after.id})` : undefined))
          .orderBy(desc(submissions.createdAt), desc(submissions.id))
          .limit(size);
        for (const row of page) {
          const values = row.values.filter((v): v is string => v != null && v !== '');
          const geometry = fieldGeometry(row.type, row.repeated, values);
          if (!geometry) continue;
          text += (first ? '' : ',') + featureJson(row.instanceId, [geometry], named ? null : row.path);
          first = false;
        }
        if (text !== '') yield encoder.encode(text);
        text = '';
        left -= page.length;
        if (page.length < size) break;
        const last: GeoRow = page[page.length - 1]!;
        after = { at: last.at, id: last.id };
      }
    }
    yield encoder.encode(`${text}]}`);
  }
  return primed(pullStream(chunks()));
}

/**
 * The GeoJSON FeatureCollection of one submission (GET S.geojson: its current version, the Feature
 * id being that version's instanceId) or of one of its versions (GET S/versions/{versionId}.geojson).
 * Several `fieldpaths` may be named here; their geometries then share one Feature (a
 * GeometryCollection when there are several). No valid geodata gives an empty collection.
 * @param input `{ projectId, xmlFormId, instanceId, versionId (null: current), fieldpaths }`.
 * @returns the collection as JSON text.
 * @throws 404.1 unknown form, submission (deleted ones included) or version; 401.2/403.1 without
 *   submission.read. Reads only.
 */
export async function submissionGeoJson(
  ctx: Ctx,
  input: { projectId: number; xmlFormId: string; instanceId: string; versionId: string | null; fieldpaths: string[] },
): Promise<string> {
  const f = await getFormOrNotFound(ctx, input.projectId, input.xmlFormId);
  await canOnFormOrReject(ctx, 'submission.read', f);
  const [row] = await ctx.db
    .select({ def: submissionDefs, fields: formDefs.fields })
    .from(submissions)
    .innerJoin(submissionDefs, eq(submissionDefs.submissionId, submissions.id))
    .innerJoin(formDefs, eq(formDefs.id, submissionDefs.formDefId))
    .where(and(
      eq(submissions.formId, f.form.id), eq(submissions.draft, false), eq(submissions.instanceId, input.instanceId),
      isNull(submissions.deletedAt),
      input.versionId == null ? eq(submissionDefs.id, submissions.currentDefId) : eq(submissionDefs.instanceId, input.versionId),
    ));
  if (!row) throw problems.user.notFound();
  const fieldpaths = distinct(input.fieldpaths);
  const geometries: Geometry[] = [];
  let path: string | null = null;
  for (const t of geoTargets(row.fields, fieldpaths)) {
    const g = fieldGeometry(t.type, t.repeated, targetValues(t, row.def.values, row.def.rootValues));
    if (g) {
      geometries.push(g);
      path = t.path;
    }
  }
  const features = geometries.length === 0 ? '' : featureJson(row.def.instanceId, geometries, fieldpaths.length > 0 ? null : path);
  return `{"type":"FeatureCollection","features":[${features}]}`;
}
