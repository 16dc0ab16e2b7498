/**
 * Submissions' GeoJSON (central-api.yaml: F/submissions.geojson, S.geojson,
 * S/versions/{versionId}.geojson): every answer is checked against the GeoJSON schema Central's
 * tests use (shared/fixtures/central-misc/GeoJSON.jsonschema.json). Covers the default field and
 * its change across form versions, `fieldpath` on every geo type (repeats and nested repeats
 * included), `$filter` on id, submitter, review state, dates and deletion, `limit`, invalid
 * values, edits and versions, empty forms, batches, and the rights of each role.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { submissions } from '../../../drizzle/schema';
import { systemCtx } from '../../../lib/context';
import { submissionsGeoJson } from '../../../lib/exports/geojson';
import { harness, json, type As, type Harness } from '../../helpers/harness';
import { userWithRole } from '../../helpers/roles';
import { appUserFor, fixture, publishForm, submitOpenRosa } from './helpers';

const geoJsonSchema = z.fromJSONSchema(JSON.parse(fixture('central-misc/GeoJSON.jsonschema.json')));

const XML = { 'Content-Type': 'application/xml' };
const F = (h: Harness, form = 'geotest') => `/v1/projects/${h.projectId}/forms/${form}`;
const GEO_FORM = fixture('forms/geoTypes.xml');

interface Feature {
  type: 'Feature';
  id: string;
  geometry: { type: string; coordinates?: unknown; geometries?: unknown[] };
  properties: { fieldpath: string } | null;
}
interface Collection {
  type: 'FeatureCollection';
  features: Feature[];
}

/** The values of one `plural` repeat instance of geoTypes. */
interface Plural {
  point?: string;
  trace?: string;
  shape?: string;
  nested?: string;
}

/** A geoTypes submission; absent values give empty elements. */
function geoXml(o: {
  instanceId: string; deprecatedId?: string; version?: string; point?: string | null; trace?: string; shape?: string; plural?: Plural[]; newPoint?: string;
}): string {
  const plural = (o.plural ?? []).map((p) => `<plural><input_geopoint_repeat>${p.point ?? ''}</input_geopoint_repeat>`
    + `<input_geotrace_repeat>${p.trace ?? ''}</input_geotrace_repeat><input_geoshape_repeat>${p.shape ?? ''}</input_geoshape_repeat>`
    + `<nested_repeat_count>1</nested_repeat_count><nested_repeat><repeatnested_group>`
    + `<input_geopoint_deeply_nested>${p.nested ?? ''}</input_geopoint_deeply_nested></repeatnested_group></nested_repeat></plural>`).join('');
  const newPoint = o.newPoint == null ? '' : `<new_input_geopoint>${o.newPoint}</new_input_geopoint>`;
  const point = o.point === undefined ? '<input_geopoint></input_geopoint>' : o.point === null ? '' : `<input_geopoint>${o.point}</input_geopoint>`;
  return `<data xmlns:jr="http://openrosa.org/javarosa" id="geotest" version="${o.version ?? '10'}">`
    + `<survey_started_at>2026-01-10T10:00:00.000Z</survey_started_at>`
    + `<singular>${newPoint}${point}<input_geotrace>${o.trace ?? ''}</input_geotrace><input_geoshape>${o.shape ?? ''}</input_geoshape></singular>`
    + `<plural_count>${(o.plural ?? []).length}</plural_count>${plural}<survey_ended_at>2026-01-10T10:05:00.000Z</survey_ended_at>`
    + `<meta>${o.deprecatedId ? `<deprecatedID>${o.deprecatedId}</deprecatedID>` : ''}<instanceID>${o.instanceId}</instanceID></meta></data>`;
}

/** Every geo field filled: singular values and two repeat instances. */
const FULL = {
  point: '50 0 0 0',
  trace: '51 1 1 0; 52 2 2 0',
  shape: '53 3 3 0; 54 4 4 0; 55 5 5 0; 53 3 3 0',
  plural: [
    { point: '60 0 0 0', trace: '61 1 1 0; 62 2 2 0', shape: '63 3 3 0; 64 4 4 0; 65 5 5 0; 63 3 3 0', nested: '11 1 1 0' },
    { point: '70 0 0 0', trace: '71 1 1 0; 72 2 2 0', shape: '73 3 3 0; 74 4 4 0; 75 5 5 0; 73 3 3 0', nested: '22 2 2 0' },
  ],
};

async function submit(h: Harness, xml: string, as: As = 'alice') {
  const res = await h.post(`${F(h)}/submissions`, { as, body: xml, headers: XML });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** GET a GeoJSON path, expecting 200 JSON valid against the GeoJSON schema. */
async function geo(h: Harness, path: string, as: As = 'alice'): Promise<Collection> {
  const res = await h.get(path, { as });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(text) as Collection;
  const checked = geoJsonSchema.safeParse(body);
  expect(checked.success, `${path}: ${JSON.stringify(checked.error?.issues ?? [])}`).toBe(true);
  expect(body.type).toBe('FeatureCollection');
  return body;
}

const all = (h: Harness, query = '') => geo(h, `${F(h)}/submissions.geojson${query}`);
const ids = (c: Collection) => c.features.map((f) => f.id);
const filtered = (h: Harness, filter: string) => all(h, `?$filter=${encodeURIComponent(filter)}`);

async function geoForm(h: Harness) {
  await publishForm(h, GEO_FORM);
}

describe('GET F/submissions.geojson', () => {
  test('the default field: the first geo field outside repeats, its path in properties', async () => {
    const h = await harness();
    await geoForm(h);
    await submit(h, geoXml({ instanceId: 'one', ...FULL }));
    expect(await all(h)).toEqual({
      type: 'FeatureCollection',
      features: [{ type: 'Feature', id: 'one', geometry: { type: 'Point', coordinates: [0, 50, 0] }, properties: { fieldpath: '/singular/input_geopoint' } }],
    });
  });

  test('fieldpath picks any geo field: traces, shapes and repeats (Multi*), properties null', async () => {
    const h = await harness();
    await geoForm(h);
    await submit(h, geoXml({ instanceId: 'one', ...FULL }));
    const expected: Record<string, Feature['geometry']> = {
      '/singular/input_geopoint': { type: 'Point', coordinates: [0, 50, 0] },
      '/singular/input_geotrace': { type: 'LineString', coordinates: [[1, 51, 1], [2, 52, 2]] },
      '/singular/input_geoshape': { type: 'Polygon', coordinates: [[[3, 53, 3], [4, 54, 4], [5, 55, 5], [3, 53, 3]]] },
      '/plural/input_geopoint_repeat': { type: 'MultiPoint', coordinates: [[0, 60, 0], [0, 70, 0]] },
      '/plural/input_geotrace_repeat': { type: 'MultiLineString', coordinates: [[[1, 61, 1], [2, 62, 2]], [[1, 71, 1], [2, 72, 2]]] },
      '/plural/input_geoshape_repeat': {
        type: 'MultiPolygon', coordinates: [[[[3, 63, 3], [4, 64, 4], [5, 65, 5], [3, 63, 3]]], [[[3, 73, 3], [4, 74, 4], [5, 75, 5], [3, 73, 3]]]],
      },
      '/plural/nested_repeat/repeatnested_group/input_geopoint_deeply_nested': { type: 'MultiPoint', coordinates: [[1, 11, 1], [2, 22, 2]] },
    };
    for (const [path, geometry] of Object.entries(expected)) {
      expect(await all(h, `?fieldpath=${encodeURIComponent(path)}`), path).toEqual({
        type: 'FeatureCollection', features: [{ type: 'Feature', id: 'one', geometry, properties: null }],
      });
    }
    // Not a geo field, or no such field: nothing to draw.
    expect((await all(h, '?fieldpath=/plural_count')).features).toEqual([]);
    expect((await all(h, '?fieldpath=/nope')).features).toEqual([]);
    // The same path twice is one path.
    expect(ids(await all(h, '?fieldpath=/singular/input_geotrace&fieldpath=/singular/input_geotrace'))).toEqual(['one']);
  });

  test('two different fieldpaths: 400.41', async () => {
    const h = await harness();
    await geoForm(h);
    const res = await h.get(`${F(h)}/submissions.geojson?fieldpath=/singular/input_geopoint&fieldpath=/singular/input_geotrace`, { as: 'alice' });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: 400.41 });
  });

  test('invalid values are left out; a repeat keeps its valid values; precision is kept', async () => {
    const h = await harness();
    await geoForm(h);
    await submit(h, geoXml({ instanceId: 'out-of-range', point: '91 0', plural: [{ point: '100 200' }, { point: '1.50 -2.250 -0 5' }] }));
    await submit(h, geoXml({ instanceId: 'leading-zero', point: '01.5 2' }));
    await submit(h, geoXml({ instanceId: 'precise', point: '89.99999999999999999999 179.99999999999999999999', trace: '1 2; nope', shape: '1 2; 3 4; 5 6; 7 8' }));
    await submit(h, geoXml({ instanceId: 'empty' }));
    const res = await h.get(`${F(h)}/submissions.geojson`, { as: 'alice' });
    const text = await res.text();
    // JSON.parse would round these: the text carries the digits as given.
    expect(text).toContain('[179.99999999999999999999,89.99999999999999999999]');
    expect(ids(JSON.parse(text) as Collection)).toEqual(['precise']);
    expect((await all(h, '?fieldpath=/singular/input_geotrace')).features).toEqual([]);
    expect((await all(h, '?fieldpath=/singular/input_geoshape')).features).toEqual([]);
    const repeat = await h.get(`${F(h)}/submissions.geojson?fieldpath=/plural/input_geopoint_repeat`, { as: 'alice' });
    expect(await repeat.text()).toContain('{"type":"Feature","id":"out-of-range","geometry":{"type":"MultiPoint","coordinates":[[-2.250,1.50,0]]},"properties":null}');
  });

  test('an empty form, and a form without geo fields, give an empty collection', async () => {
    const h = await harness();
    await geoForm(h);
    const res = await h.get(`${F(h)}/submissions.geojson`, { as: 'alice' });
    expect(await res.text()).toBe('{"type":"FeatureCollection","features":[]}');
    await publishForm(h, fixture('forms/simple.xml'));
    expect((await h.post(`${F(h, 'simple')}/submissions`, { as: 'alice', body: fixture('submissions/simple.one.xml'), headers: XML })).status).toBe(200);
    expect((await geo(h, `${F(h, 'simple')}/submissions.geojson`)).features).toEqual([]);
    expect((await h.get(`${F(h, 'nope')}/submissions.geojson`, { as: 'alice' })).status).toBe(404);
  });

  test('$filter: __id, submitterId, reviewState, submissionDate, deletedAt; limit', async () => {
    const h = await harness();
    await geoForm(h);
    await submit(h, geoXml({ instanceId: 'a', point: '1 1' }), 'alice');
    await submit(h, geoXml({ instanceId: 'b', point: '2 2' }), 'bob');
    await submit(h, geoXml({ instanceId: 'c', point: '3 3' }), 'bob');
    for (const [id, at] of [['a', '2020-01-01T00:00:00Z'], ['b', '2021-01-01T00:00:00Z'], ['c', '2022-01-01T00:00:00Z']] as const) {
      await h.db.update(submissions).set({ createdAt: new Date(at) }).where(eq(submissions.instanceId, id));
    }
    expect((await h.patch(`${F(h)}/submissions/a`, { as: 'alice', body: { reviewState: 'approved' } })).status).toBe(200);
    expect((await h.patch(`${F(h)}/submissions/b`, { as: 'alice', body: { reviewState: 'rejected' } })).status).toBe(200);

    expect(ids(await all(h))).toEqual(['c', 'b', 'a']);
    expect(ids(await filtered(h, "__id eq 'a' or __id eq 'c'"))).toEqual(['c', 'a']);
    expect(ids(await filtered(h, `__system/submitterId eq ${h.ids.bob}`))).toEqual(['c', 'b']);
    expect(ids(await filtered(h, `__system/submitterId eq ${h.ids.alice}`))).toEqual(['a']);
    expect(ids(await filtered(h, "__system/reviewState eq 'approved'"))).toEqual(['a']);
    expect(ids(await filtered(h, "__system/reviewState eq 'approved' or __system/reviewState eq 'rejected'"))).toEqual(['b', 'a']);
    expect(ids(await filtered(h, '__system/reviewState eq null'))).toEqual(['c']);
    expect(ids(await filtered(h, '__system/submissionDate lt 2020-01-01T00:00:00Z'))).toEqual([]);
    expect(ids(await filtered(h, '__system/submissionDate ge 2021-01-01T00:00:00Z and (__system/submissionDate le 2022-01-01T00:00:00Z)'))).toEqual(['c', 'b']);
    expect(ids(await filtered(h, '__system/submissionDate gt 2022-01-01T00:00:00Z'))).toEqual([]);
    expect(ids(await all(h, '?limit=2'))).toEqual(['c', 'b']);
    expect(ids(await all(h, '?limit=junk'))).toEqual(['c', 'b', 'a']);

    expect((await h.delete(`${F(h)}/submissions/b`, { as: 'alice' })).status).toBe(200);
    expect(ids(await all(h))).toEqual(['c', 'a']);
    expect(ids(await filtered(h, '__system/deletedAt eq null'))).toEqual(['c', 'a']);
    expect(ids(await filtered(h, 'not __system/deletedAt eq null'))).toEqual(['b']);
    expect(ids(await filtered(h, '$root/Submissions/__system/deletedAt ne null'))).toEqual(['b']);

    const bad = await h.get(`${F(h)}/submissions.geojson?$filter=${encodeURIComponent('__id eq')}`, { as: 'alice' });
    expect(bad.status).toBe(400);
    expect(await json(bad)).toMatchObject({ code: 400.18 });
    const field = await h.get(`${F(h)}/submissions.geojson?$filter=${encodeURIComponent("singular/input_geopoint eq '1 1'")}`, { as: 'alice' });
    expect(field.status).toBe(501);
    expect(await json(field)).toMatchObject({ code: 501.5 });
  });

  test('limit counts submissions whose version has the field, even without a valid value', async () => {
    const h = await harness();
    await geoForm(h);
    await submit(h, geoXml({ instanceId: 'old', point: '1 1' }));
    await submit(h, geoXml({ instanceId: 'new' }));
    await h.db.update(submissions).set({ createdAt: new Date('2020-01-01T00:00:00Z') }).where(eq(submissions.instanceId, 'old'));
    expect(ids(await all(h, '?limit=1'))).toEqual([]);
    expect(ids(await all(h, '?limit=2'))).toEqual(['old']);
  });

  test('the default field follows each form version; an edit shows under the first instanceId', async () => {
    const h = await harness();
    await geoForm(h);
    await submit(h, geoXml({ instanceId: 'v10' }));
    // Version 11 drops the first geopoint: its default is the geotrace.
    const v11 = GEO_FORM.replace('version="10"', 'version="11"')
      .replace('<input_geopoint>50 0 0 0</input_geopoint>', '')
      .replace('<bind nodeset="/data/singular/input_geopoint" type="geopoint"/>', '');
    for (const [xml, query] of [[v11, '?ignoreWarnings=true'], [GEO_FORM.replace('version="10"', 'version="12"')
      .replace('<singular>', '<singular><new_input_geopoint/>')
      .replace('<bind nodeset="/data/singular/input_geopoint"', '<bind nodeset="/data/singular/new_input_geopoint" type="geopoint"/><bind nodeset="/data/singular/input_geopoint"'), '']] as const) {
      expect((await h.post(`${F(h)}/draft${query}`, { as: 'alice', body: xml, headers: XML })).status).toBe(200);
      expect((await h.post(`${F(h)}/draft/publish`, { as: 'alice' })).status).toBe(200);
    }
    await submit(h, geoXml({ instanceId: 'v11', version: '11', point: null, trace: '51 1 1 0; 52 2 2 0' }));
    await submit(h, geoXml({ instanceId: 'v12', version: '12', newPoint: '20 0 0 0', point: '50 0' }));
    // The version 10 submission is edited over OpenRosa (as Collect does): its new value, under its first id.
    await submitOpenRosa(h, 'alice', geoXml({ instanceId: 'v10-edit', deprecatedId: 'v10', point: '5 5' }));
    const byId = Object.fromEntries((await all(h)).features.map((f) => [f.id, f]));
    expect(byId).toEqual({
      v10: { type: 'Feature', id: 'v10', geometry: { type: 'Point', coordinates: [5, 5] }, properties: { fieldpath: '/singular/input_geopoint' } },
      v11: { type: 'Feature', id: 'v11', geometry: { type: 'LineString', coordinates: [[1, 51, 1], [2, 52, 2]] }, properties: { fieldpath: '/singular/input_geotrace' } },
      v12: { type: 'Feature', id: 'v12', geometry: { type: 'Point', coordinates: [0, 20, 0] }, properties: { fieldpath: '/singular/new_input_geopoint' } },
    });
  });

  test('more submissions than one batch: every one once, newest first, also with equal timestamps', async () => {
    const h = await harness();
    await geoForm(h);
    for (let i = 0; i < 12; i += 1) await submit(h, geoXml({ instanceId: `s${String(i).padStart(2, '0')}`, point: `${i} ${i}` }));
    // Half of them share one timestamp (microseconds included): the keyset must not skip or repeat.
    await h.db.update(submissions).set({ createdAt: new Date('2024-05-05T05:05:05.123Z') }).where(eq(submissions.draft, false));
    const read = async (batchSize: number, limit: string | null = null) => {
      const stream = await submissionsGeoJson(systemCtx(h.deps), { projectId: h.projectId, xmlFormId: 'geotest', fieldpaths: [], limit, batchSize });
      const body = JSON.parse(await new Response(stream).text()) as Collection;
      expect(geoJsonSchema.safeParse(body).success).toBe(true);
      return ids(body);
    };
    const expected = Array.from({ length: 12 }, (_, i) => `s${String(11 - i).padStart(2, '0')}`);
    expect(await read(1000)).toEqual(expected);
    expect(await read(5)).toEqual(expected);
    expect(await read(1)).toEqual(expected);
    expect(await read(5, '7')).toEqual(expected.slice(0, 7));
    // Whole batches without a valid value write nothing, and the stream still ends.
    for (let i = 0; i < 6; i += 1) await submit(h, geoXml({ instanceId: `blank${i}`, point: 'not a point' }));
    await h.db.update(submissions).set({ createdAt: new Date('2030-01-01T00:00:00Z') }).where(eq(submissions.draft, false));
    const blankFirst = await submissionsGeoJson(systemCtx(h.deps), { projectId: h.projectId, xmlFormId: 'geotest', fieldpaths: [], batchSize: 2 });
    expect(ids(JSON.parse(await new Response(blankFirst).text()) as Collection)).toHaveLength(12);
  });
});

describe('GET S.geojson and S/versions/{versionId}.geojson', () => {
  test('the current version under its own instanceId; each version by its id; 404s', async () => {
    const h = await harness();
    await geoForm(h);
    await submit(h, geoXml({ instanceId: 'one', ...FULL }));
    const put = async (xml: string) => expect((await h.put(`${F(h)}/submissions/one`, { as: 'alice', body: xml, headers: XML })).status).toBe(200);
    await put(geoXml({ instanceId: 'one.1', deprecatedId: 'one', ...FULL, point: '1.1 1.1 1.1 1.1' }));
    await put(geoXml({ instanceId: 'one.2', deprecatedId: 'one.1', ...FULL, point: '1.2 1.2 1.2 1.2' }));
    const point = (id: string, coordinates: number[]) => ({
      type: 'FeatureCollection', features: [{ type: 'Feature', id, geometry: { type: 'Point', coordinates }, properties: { fieldpath: '/singular/input_geopoint' } }],
    });
    expect(await geo(h, `${F(h)}/submissions/one.geojson`)).toEqual(point('one.2', [1.2, 1.2, 1.2]));
    expect(await geo(h, `${F(h)}/submissions/one/versions/one.geojson`)).toEqual(point('one', [0, 50, 0]));
    expect(await geo(h, `${F(h)}/submissions/one/versions/one.1.geojson`)).toEqual(point('one.1', [1.1, 1.1, 1.1]));
    expect(await geo(h, `${F(h)}/submissions/one/versions/one.2.geojson`)).toEqual(point('one.2', [1.2, 1.2, 1.2]));
    // The bulk collection shows the edit under the submission's id.
    expect(ids(await all(h))).toEqual(['one']);

    for (const path of ['submissions/one.1.geojson', 'submissions/nope.geojson', 'submissions/one/versions/nope.geojson', 'submissions/nope/versions/one.geojson']) {
      expect((await h.get(`${F(h)}/${path}`, { as: 'alice' })).status, path).toBe(404);
    }
    expect((await h.delete(`${F(h)}/submissions/one`, { as: 'alice' })).status).toBe(200);
    expect((await h.get(`${F(h)}/submissions/one.geojson`, { as: 'alice' })).status).toBe(404);
  });

  test('several fieldpaths share one Feature as a GeometryCollection; no valid value gives no Feature', async () => {
    const h = await harness();
    await geoForm(h);
    await submit(h, geoXml({ instanceId: 'one', ...FULL }));
    await submit(h, geoXml({ instanceId: 'blank' }));
    const both = await geo(h, `${F(h)}/submissions/one.geojson?fieldpath=/singular/input_geopoint&fieldpath=/plural/input_geotrace_repeat`);
    expect(both).toEqual({
      type: 'FeatureCollection',
      features: [{
        type: 'Feature', id: 'one', properties: null,
        geometry: {
          type: 'GeometryCollection',
          geometries: [{ type: 'Point', coordinates: [0, 50, 0] }, { type: 'MultiLineString', coordinates: [[[1, 61, 1], [2, 62, 2]], [[1, 71, 1], [2, 72, 2]]] }],
        },
      }],
    });
    expect((await geo(h, `${F(h)}/submissions/one.geojson?fieldpath=/singular/input_geoshape`)).features[0]!.geometry.type).toBe('Polygon');
    expect(await geo(h, `${F(h)}/submissions/blank.geojson`)).toEqual({ type: 'FeatureCollection', features: [] });
  });
});

describe('rights', () => {
  test('administrator, manager and viewer read; data collector, App User, no role and anonymous do not', async () => {
    const h = await harness();
    await geoForm(h);
    await submit(h, geoXml({ instanceId: 'one', point: '1 2' }));
    const viewer = await userWithRole(h, 'viewer', 'viewer-geo@example.org');
    const collector = await userWithRole(h, 'formfill', 'collector-geo@example.org');
    const appUser = await appUserFor(h, 'geotest', 'Tablet geo');
    await submitOpenRosa(h, { key: appUser.token }, geoXml({ instanceId: 'two', point: '3 4' }));
    const paths = [`${F(h)}/submissions.geojson`, `${F(h)}/submissions/one.geojson`, `${F(h)}/submissions/one/versions/one.geojson`];
    for (const path of paths) {
      for (const as of ['alice', 'bob', viewer] as As[]) expect((await h.get(path, { as })).status, `${path} ${JSON.stringify(as)}`).toBe(200);
      for (const as of [collector, { key: appUser.token }, 'chelsea'] as As[]) {
        const res = await h.get(path, { as });
        expect(res.status, `${path} ${JSON.stringify(as)}`).toBe(403);
        expect(await json(res)).toMatchObject({ code: 403.1 });
      }
      expect([401, 403], path).toContain((await h.get(path)).status);
    }
    expect(ids(await geo(h, `${F(h)}/submissions.geojson`, viewer))).toEqual(['two', 'one']);
    // 404 before 403: an unknown form is 404 for everyone.
    expect((await h.get(`${F(h, 'nope')}/submissions.geojson`, { as: 'chelsea' })).status).toBe(404);
  });
});
