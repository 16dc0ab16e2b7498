/**
 * Entities' geodata as GeoJSON (central-api.yaml "Entities Geodata" `D/entities.geojson` and
 * "Entity GeoJSON representation" `E/geojson`; Central's getEntityFeatureCollectionGeoJson): one
 * Feature per entity whose `geometry` property reads as a geometry, `properties` null. The type
 * is guessed from the value as Central's odk2geojson_ducktyped does: one point is a Point, four or
 * more points with the first equal to the last a Polygon, anything else a LineString; a value with
 * an invalid point gives no Feature. Streamed in keyset batches outside any transaction.
 */
import { and, asc, eq, gt, sql, type SQL } from 'drizzle-orm';
import { entities, entityDefs } from '../../drizzle/schema';
import { canOrReject } from '../authz/can';
import type { Ctx } from '../context';
import { datasetActee, getDatasetOrNotFound, publishedProperties } from '../datasets';
import { geometryJson, parseLine, parseRing, type Geometry } from '../exports/geojson-geometry';
import { entityConditions } from '../odata/entities';
import { sanitizeOdataIdentifier } from '../xforms/parse-form';
import { getEntityOrNotFound } from './index';
import { normalizeUuid } from './model';

const BATCH = 1000;
const encoder = new TextEncoder();

/** An entity `geometry` text → its geometry (Central's duck typing), or null. Pure. */
export function duckGeometry(text: string): Geometry | null {
  const line = parseLine(text, 1);
  if (!line) return null;
  if (line.length === 1) return { type: 'Point', coordinates: line[0]! };
  if (line.length > 3 && parseRing(text)) return { type: 'Polygon', coordinates: [line] };
  return { type: 'LineString', coordinates: line };
}

const featureJson = (uuid: string, g: Geometry) => `{"type":"Feature","id":${JSON.stringify(uuid)},"properties":null,"geometry":${geometryJson(g)}}`;

/** The query of GET D/entities.geojson as given (Central's parameters). */
export interface EntitiesGeoJsonInput {
  projectId: number;
  name: string;
  /** `$filter` on `__id` and `__system/…` (properties too, as on the OData feed). */
  filter?: string | null;
  /** `$search` (Central's full-text search of label and properties). */
  search?: string | null;
  /** `limit` as given: an integer prefix caps the entities read (before invalid values are dropped, as Central); else none. */
  limit?: string | null;
}

/**
 * GET D/entities.geojson: `{"type":"FeatureCollection","features":[…]}`, oldest entity first.
 * A Dataset without a published `geometry` property has no features.
 * @throws 404.1; 401.2/403.1 without entity.list on the Dataset; `$filter` errors as the OData
 *   feed (400.18, 501.4, 501.5), before the first byte. Reads only.
 */
export async function entitiesGeoJson(ctx: Ctx, input: EntitiesGeoJsonInput): Promise<ReadableStream<Uint8Array>> {
  const d = await getDatasetOrNotFound(ctx, input.projectId, input.name);
  await canOrReject(ctx, 'entity.list', datasetActee(d));
  const props = (await publishedProperties(ctx, d.dataset.id)).map((p) => ({ name: p.name, odataName: sanitizeOdataIdentifier(p.name) }));
  const where = entityConditions(d.dataset.id, { filter: input.filter, search: input.search }, props);
  const parsed = Number.parseInt(input.limit ?? '', 10);
  const limit = Number.isNaN(parsed) || parsed === 0 ? Infinity : Math.max(0, parsed);
  const hasGeometry = props.some((p) => p.name === 'geometry');
  // Central's pre-filter (a value with a digit), which its index serves too.
  where.push(sql`${entityDefs.data} ->> 'geometry' ~ '[0-9]'`);
  return featureStream(ctx, hasGeometry ? and(...where)! : null, limit);
}

/**
 * GET E/geojson: a FeatureCollection of the entity's one Feature, or none when its `geometry` is
 * missing or invalid. @throws 400.11 a uuid that is not a v4 UUID; 404.1 Dataset or (live)
 * entity; 401.2/403.1 without entity.read. Reads only.
 */
export async function entityGeoJson(ctx: Ctx, projectId: number, name: string, uuid: string): Promise<string> {
  const id = normalizeUuid(uuid);
  const d = await getDatasetOrNotFound(ctx, projectId, name);
  await canOrReject(ctx, 'entity.read', datasetActee(d));
  const { entity, def } = await getEntityOrNotFound(ctx, d.dataset.id, id);
  const g = def.data.geometry != null ? duckGeometry(def.data.geometry) : null;
  return `{"type":"FeatureCollection","features":[${g ? featureJson(entity.uuid, g) : ''}]}`;
}

function featureStream(ctx: Ctx, where: SQL | null, limit: number): ReadableStream<Uint8Array> {
  let afterId = 0;
  let read = 0;
  let first = true;
  let started = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let text = started ? '' : '{"type":"FeatureCollection","features":[';
      started = true;
      const take = Math.min(BATCH, limit - read);
      const rows = where == null || take <= 0 ? [] : await ctx.db
        .select({ id: entities.id, uuid: entities.uuid, geometry: sql<string>`${entityDefs.data} ->> 'geometry'` })
        .from(entities)
        .innerJoin(entityDefs, and(eq(entityDefs.entityId, entities.id), eq(entityDefs.current, true)))
        .where(and(where, gt(entities.id, afterId)))
        .orderBy(asc(entities.id)).limit(take);
      for (const r of rows) {
        const g = duckGeometry(r.geometry);
        if (!g) continue;
        text += (first ? '' : ',') + featureJson(r.uuid, g);
        first = false;
      }
      read += rows.length;
      if (rows.length > 0) afterId = rows[rows.length - 1]!.id;
      if (rows.length < take || read >= limit || take <= 0) {
        controller.enqueue(encoder.encode(`${text}]}`));
        controller.close();
        return;
      }
      controller.enqueue(encoder.encode(text));
    },
  });
}
