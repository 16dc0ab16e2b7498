/**
 * Entities' OData (D.svc, $metadata, Entities with paging, $count, $filter on system fields and
 * properties, $orderby, $select, $search) and GeoJSON (D/entities.geojson, E/geojson), through real
 * HTTP Requests and the route table, with the role matrix.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { harness, json, type As, type Harness } from '../../helpers/harness';
import { userWithRole } from '../../helpers/roles';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const XML = { 'Content-Type': 'application/xml' };
const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const D = (h: Harness, name = 'people') => `${P(h)}/datasets/${name}`;
const uuidN = (n: number) => `12345678-1234-4123-8234-${String(n).padStart(12, '0')}`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function people(h: Harness, n: number) {
  const res = await h.post(`${P(h)}/forms?publish=true`, { as: 'alice', body: fixture('forms/simpleEntity.xml'), headers: XML });
  expect(res.status).toBe(200);
  for (let i = 1; i <= n; i += 1) {
    const r = await h.post(`${D(h)}/entities`, { as: 'alice', body: { uuid: uuidN(i), label: `Person ${i}`, data: { first_name: i % 2 ? 'Odd' : 'Even', age: String(i * 10) } } });
    expect(r.status, await r.clone().text()).toBe(200);
  }
}

const feed = async (h: Harness, query: string, as: As = 'alice') => {
  const res = await h.get(`${D(h)}.svc/Entities${query}`, { as });
  expect(res.status, await res.clone().text()).toBe(200);
  return json<Json>(res);
};

describe('OData for Entities', () => {
  test('service document and $metadata as Central', async () => {
    const h = await harness();
    await people(h, 0);
    expect(await json(await h.get(`${D(h)}.svc`, { as: 'alice' }))).toEqual({
      '@odata.context': `http://localhost${D(h)}.svc/$metadata`, value: [{ name: 'Entities', kind: 'EntitySet', url: 'Entities' }],
    });
    const meta = await h.get(`${D(h)}.svc/$metadata`, { as: 'alice' });
    expect(meta.headers.get('content-type')).toContain('application/xml');
    const text = await meta.text();
    expect(text).toContain('<Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="org.opendatakit.user.people">');
    expect(text).toContain('<Property Name="first_name" Type="Edm.String"/>\n        <Property Name="age" Type="Edm.String"/>');
  });

  test('rows field by field, newest first; $top/$skiptoken/$count; nextLink; $select', async () => {
    const h = await harness();
    await people(h, 3);
    const first = await feed(h, '?$top=2&$count=true');
    expect(first.value.map((e: Json) => e.__id)).toEqual([uuidN(3), uuidN(2)]);
    expect(first['@odata.count']).toBe(3);
    expect(first.value[0]).toEqual({
      __id: uuidN(3), label: 'Person 3',
      __system: {
        createdAt: expect.any(String), creatorId: String(h.ids.alice), creatorName: 'alice', updates: 0, updatedAt: null,
        deletedAt: null, version: 1, conflict: null,
      },
      first_name: 'Odd', age: '30',
    });
    expect(first['@odata.nextLink']).toMatch(/\.svc\/Entities\?%24top=2&%24count=true&%24skiptoken=01/);
    const next = await feed(h, new URL(first['@odata.nextLink']).search);
    expect(next.value.map((e: Json) => e.__id)).toEqual([uuidN(1)]);
    expect(next['@odata.count']).toBe(3);
    expect(next['@odata.nextLink']).toBeUndefined();
    // As Central, $skip does not apply after a $skiptoken.
    expect((await feed(h, `${new URL(first['@odata.nextLink']).search}&$skip=5`)).value.map((e: Json) => e.__id)).toEqual([uuidN(1)]);
    expect((await feed(h, '?$select=__id,age')).value[0]).toEqual({ __id: uuidN(3), age: '30' });
    expect((await feed(h, '?$select=__system/version')).value[0]).toEqual({ __system: { version: 1 } });
    const bad = await h.get(`${D(h)}.svc/Entities?$select=nope`, { as: 'alice' });
    expect(await json(bad)).toMatchObject({ code: 400.23 });
  });

  test('$filter on system fields and properties, $orderby, $search; label refused as Central', async () => {
    const h = await harness();
    await people(h, 4);
    expect((await feed(h, "?$filter=first_name eq 'Even'")).value.map((e: Json) => e.__id)).toEqual([uuidN(4), uuidN(2)]);
    // A property compared with a number literal is read as a number (not text: '100' < '30').
    expect((await feed(h, '?$filter=age gt 25')).value.map((e: Json) => e.age)).toEqual(['40', '30']);
    expect((await feed(h, `?$filter=__system/creatorId eq ${h.ids.alice} and age le 10`)).value.map((e: Json) => e.age)).toEqual(['10']);
    expect((await feed(h, '?$orderby=age desc')).value.map((e: Json) => e.age)).toEqual(['40', '30', '20', '10']);
    expect((await feed(h, '?$orderby=__system/createdAt asc&$top=1')).value.map((e: Json) => e.age)).toEqual(['10']);
    expect((await feed(h, '?$search=Person 2')).value.map((e: Json) => e.__id)).toEqual([uuidN(2)]);
    const label = await h.get(`${D(h)}.svc/Entities?$filter=label eq 'x'`, { as: 'alice' });
    expect(label.status).toBe(501);
    expect((await json(label)).message).toBe('The given OData filter expression references fields not supported by this server: label at 0');
    const unquoted = await json(await h.get(`${D(h)}.svc/Entities?$filter=first_name eq Alice`, { as: 'alice' }));
    expect(unquoted.message).toBe('The given OData filter expression references fields not supported by this server: first_name at 0');
    await h.delete(`${D(h)}/entities/${uuidN(1)}`, { as: 'alice' });
    expect((await feed(h, '?$count=true'))['@odata.count']).toBe(3);
    expect((await feed(h, '?$filter=__system/deletedAt ne null')).value.map((e: Json) => e.__id)).toEqual([uuidN(1)]);
  });

  test('an update shows in updates/updatedAt/version; a deep $skiptoken naming no entity is 400.34', async () => {
    const h = await harness();
    await people(h, 2);
    await h.patch(`${D(h)}/entities/${uuidN(1)}?baseVersion=1`, { as: 'alice', body: { data: { age: '11' } } });
    const row = (await feed(h, `?$filter=__id eq '${uuidN(1)}'`)).value[0];
    expect(row.__system).toMatchObject({ updates: 1, version: 2, updatedAt: expect.any(String) });
    expect(row.age).toBe('11');
    const token = `01${Buffer.from(JSON.stringify({ uuid: uuidN(99) })).toString('base64')}`;
    expect(await json(await h.get(`${D(h)}.svc/Entities?$skiptoken=${token}`, { as: 'alice' }))).toMatchObject({ code: 400.34 });
    expect((await h.get(`${D(h)}.svc/Entities?$orderby=age&$skiptoken=${token}`, { as: 'alice' })).status).toBe(501);
  });

  test('role matrix: admin, manager, viewer read; data collector, App User, none 403.1; anonymous 401.2; unknown 404', async () => {
    const h = await harness();
    await people(h, 1);
    const viewer = await userWithRole(h, 'viewer', 'viewer@example.org');
    const collector = await userWithRole(h, 'formfill', 'collector@example.org');
    const appUser = await json<Json>(await h.post(`${P(h)}/app-users`, { as: 'bob', body: { displayName: 'Tablet' } }));
    for (const as of ['alice', 'bob', viewer] as As[]) {
      for (const path of ['.svc', '.svc/$metadata', '.svc/Entities', '/entities.geojson']) {
        expect((await h.get(`${D(h)}${path}`, { as })).status).toBe(200);
      }
    }
    for (const as of [collector, { key: appUser.token }, 'chelsea'] as As[]) {
      for (const path of ['.svc', '.svc/Entities', '/entities.geojson', `/entities/${uuidN(1)}/geojson`]) {
        const res = await h.get(`${D(h)}${path}`, { as });
        expect(res.status, path).toBe(403);
      }
    }
    expect((await h.get(`${D(h)}.svc/Entities`, { as: 'anonymous' })).status).toBe(401);
    expect((await h.get(`${D(h, 'nope')}.svc/Entities`, { as: 'alice' })).status).toBe(404);
    expect((await h.get(`${D(h)}.svc/Other`, { as: 'alice' })).status).toBe(404);
  });
});

describe('GeoJSON for Entities', () => {
  async function geofun(h: Harness) {
    expect((await h.post(`${P(h)}/datasets`, { as: 'alice', body: { name: 'geofun' } })).status).toBe(200);
    expect((await h.post(`${D(h, 'geofun')}/properties`, { as: 'alice', body: { name: 'geometry' } })).status).toBe(200);
    const values = ['1 2 3 0', '1 2; 1 2 3; 1 2 3 4', '1 2; 3 4; 5 6; 1 2', '1 2 not-an-altitude', '100 200'];
    for (const [i, geometry] of values.entries()) {
      const r = await h.post(`${D(h, 'geofun')}/entities`, { as: i === 2 ? 'bob' : 'alice', body: { uuid: uuidN(i + 1), label: 'abcde'[i], data: { geometry } } });
      expect(r.status).toBe(200);
    }
  }

  test('D/entities.geojson: points, lines and polygons by duck typing; invalid values left out; $filter, $search, limit', async () => {
    const h = await harness();
    await geofun(h);
    const all = await json<Json>(await h.get(`${D(h, 'geofun')}/entities.geojson`, { as: 'alice' }));
    expect(all).toEqual({
      type: 'FeatureCollection',
      features: [
        { type: 'Feature', id: uuidN(1), properties: null, geometry: { type: 'Point', coordinates: [2, 1, 3] } },
        { type: 'Feature', id: uuidN(2), properties: null, geometry: { type: 'LineString', coordinates: [[2, 1], [2, 1, 3], [2, 1, 3]] } },
        { type: 'Feature', id: uuidN(3), properties: null, geometry: { type: 'Polygon', coordinates: [[[2, 1], [4, 3], [6, 5], [2, 1]]] } },
      ],
    });
    const ids = async (q: string) => (await json<Json>(await h.get(`${D(h, 'geofun')}/entities.geojson${q}`, { as: 'alice' }))).features.map((f: Json) => f.id);
    expect(await ids(`?$filter=__system/creatorId eq ${h.ids.bob}`)).toEqual([uuidN(3)]);
    expect(await ids('?$search=a')).toEqual([uuidN(1)]);
    expect(await ids('?limit=2')).toEqual([uuidN(1), uuidN(2)]);
    await h.delete(`${D(h, 'geofun')}/entities/${uuidN(1)}`, { as: 'alice' });
    expect(await ids('')).toEqual([uuidN(2), uuidN(3)]);
    expect(await ids('?$filter=__system/deletedAt ne null')).toEqual([uuidN(1)]);
  });

  test('E/geojson: one Feature, none for an invalid value, 404 for an unknown entity', async () => {
    const h = await harness();
    await geofun(h);
    expect(await json(await h.get(`${D(h, 'geofun')}/entities/${uuidN(1)}/geojson`, { as: 'alice' }))).toEqual({
      type: 'FeatureCollection', features: [{ type: 'Feature', id: uuidN(1), properties: null, geometry: { type: 'Point', coordinates: [2, 1, 3] } }],
    });
    expect(await json(await h.get(`${D(h, 'geofun')}/entities/${uuidN(5)}/geojson`, { as: 'alice' }))).toEqual({ type: 'FeatureCollection', features: [] });
    expect((await h.get(`${D(h, 'geofun')}/entities/${uuidN(9)}/geojson`, { as: 'alice' })).status).toBe(404);
  });
});
