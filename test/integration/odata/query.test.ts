/**
 * OData query options on the feeds, alone and combined (central-api.yaml, OData Endpoints;
 * central-problem-codes.md; central-outputs/_errors for Central's exact error bodies): `$top`,
 * `$skip`, `$skiptoken` paging walks while submissions arrive (root and repeat tables), `$count`,
 * `$filter` on `__system` fields and (beyond Central) on the form's own fields of every type, on
 * root and repeat tables, `$root/Submissions/__system/…` on repeat tables, `$orderby` on system and
 * form fields with `$skip` paging, `$select`, `$expand` (`*` and named), `$wkt`, the errors, the
 * draft feed, deleted submissions and rights.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { harness, json, type As, type Harness } from '../../helpers/harness';
import {
  appUserFor, CO, COLLECT, feed, fixture, ISO_MS_UTC, multipart, pathOf, problem, publishForm, review, scenarioOf, submitOpenRosa, TYPED_FORM, TYPED_ID,
  typedForm, typedXml, walk, type Typed,
} from './helpers';

type Row = Record<string, unknown> & { __id: string };

const svc = (h: Harness, form = TYPED_ID) => `/v1/projects/${h.projectId}/forms/${form}.svc`;
const ids = (rows: Row[]) => rows.map((r) => r.__id);
const labels = (rows: Row[]) => rows.map((r) => r.label as string);

/** Central's exact error body, from central-outputs/_errors. */
const centralError = (file: string) => JSON.parse(fixture(`${CO}/_errors/${file}.json`)) as { status: number; contentType: string; body: string; request: { path: string } };

/** Central's request path in our project (its errors used projects 2 and 3). */
const inProject = (h: Harness, path: string) => path.replace(/^\/v1\/projects\/\d+\//, `/v1/projects/${h.projectId}/`);

/** Expects a request to fail exactly as Central's captured one did (status, type, body). */
async function expectCentralError(h: Harness, file: string, path?: string) {
  const e = centralError(file);
  const res = await h.get(path ?? inProject(h, e.request.path), { as: 'bob' });
  expect(res.status, file).toBe(e.status);
  expect(res.headers.get('content-type'), file).toBe(e.contentType);
  expect(await res.text(), file).toBe(e.body);
}

// ---------------------------------------------------------------------------------------------
// The typed data set: five submissions from two App Users, a2 approved.

const A: Typed[] = [
  {
    id: 'a1', txt: 'alpha', num: '5', dec: '1.5', day: '2024-01-10', stamp: '2024-01-10T08:00:00.000Z', clock: '08:00:00.000Z', color: 'red', tags: 'a b',
    loc: '10 20 30 4', route: '10 20 0 0;11 21 0 0', area: '1 1 0 0;1 2 0 0;2 2 0 0;1 1 0 0', photo: 'a1.jpg', inner: 'x', leaf: '1', odd: 'o',
    items: [
      { label: 'a1-i1', qty: '1', price: '0.5', when: '2024-02-01', at: '2024-02-01T00:00:00.000Z', kind: 'x', spot: '1 2 3 4', parts: [{ pname: 'p1', pn: '1' }] },
      { label: 'a1-i2', qty: '10', price: '2.25', kind: 'y', spot: '5 6' },
    ],
  },
  {
    id: 'a2', txt: 'beta', num: '15', dec: '2.75', day: '2024-03-05', stamp: '2024-03-05T12:30:00.000+02:00', color: 'blue', loc: '-1.5 36.8',
    items: [{ label: 'a2-i1', qty: '3', price: '9.99', when: '2023-12-31', at: '2023-12-31T23:59:59.000Z', kind: 'y', spot: '-1 36' }],
  },
  { id: 'a3', txt: "it's", num: '-3', dec: '0', day: '2023-07-01', stamp: '2023-07-01T00:00:00.000Z', color: 'red', loc: '45 -120 100 5' },
  { id: 'a4' },
  {
    id: 'a5', txt: 'alpha', num: '100', dec: '10.125', day: '2025-01-01', stamp: '2025-01-01T00:00:00.000-05:00', color: 'blue', loc: '0 0',
    items: [{ label: 'a5-i1', qty: '7', kind: 'x', parts: [{ pname: 'p2', pn: '2' }, { pname: 'p3' }] }],
  },
];

interface Data {
  h: Harness;
  F: string;
  au1: number;
  au2: number;
}

/** a1–a4 by the first App User, a5 by a second; a2 approved. */
async function typedData(): Promise<Data> {
  const h = await harness();
  const { appUser, submit } = await typedForm(h);
  for (const s of A.slice(0, 4)) await submit(s);
  const other = await appUserFor(h, TYPED_ID, 'Tablet other');
  await submitOpenRosa(h, { key: other.token }, typedXml(A[4]!), { deviceId: 'collect:other' });
  await review(h, TYPED_ID, 'a2', 'approved');
  return { h, F: svc(h), au1: appUser.id, au2: other.id };
}

const q = (s: string) => s.replace(/ /g, '%20').replace(/'/g, '%27');

describe('each option alone', () => {
  test('$top, $skip, $count, $skiptoken, $format=json, $wkt', async () => {
    const { h, F } = await typedData();
    const all = await feed<Row>(h, `${F}/Submissions`);
    expect(ids(all.value)).toEqual(['a5', 'a4', 'a3', 'a2', 'a1']);
    expect(all['@odata.nextLink']).toBeUndefined();
    expect(all['@odata.count']).toBeUndefined();

    const top = await feed<Row>(h, `${F}/Submissions?$top=2`);
    expect(ids(top.value)).toEqual(['a5', 'a4']);
    expect(top['@odata.nextLink']).toBe(`http://localhost${F}/Submissions?%24top=2&%24skiptoken=${encodeURIComponent(`01${btoa('{"instanceId":"a4"}')}`)}`);
    expect(Object.keys(top)).toEqual(['value', '@odata.context', '@odata.nextLink']);
    const exact = await feed<Row>(h, `${F}/Submissions?$top=5`);
    expect(exact['@odata.nextLink'], 'no nextLink when the page ends the table').toBeUndefined();

    const skip = await feed<Row>(h, `${F}/Submissions?$skip=3`);
    expect(ids(skip.value)).toEqual(['a2', 'a1']);
    expect(skip['@odata.nextLink']).toBeUndefined();

    const count = await feed<Row>(h, `${F}/Submissions?$count=true`);
    expect(count['@odata.count']).toBe(5);
    expect(Object.keys(count)).toEqual(['value', '@odata.context', '@odata.count']);

    const token = encodeURIComponent(`01${btoa('{"instanceId":"a3"}')}`);
    const after = await feed<Row>(h, `${F}/Submissions?$skiptoken=${token}`);
    expect(ids(after.value)).toEqual(['a2', 'a1']);

    expect(ids((await feed<Row>(h, `${F}/Submissions?$format=json`)).value)).toHaveLength(5);
    expect(ids((await feed<Row>(h, `${F}/Submissions?$format=application/json`)).value)).toHaveLength(5);

    const wkt = await feed<Row>(h, `${F}/Submissions?$wkt=true&$filter=${q("__id eq 'a1'")}`);
    expect(wkt.value[0]).toMatchObject({ loc: 'POINT (20 10 30)', route: 'LINESTRING (20 10 0,21 11 0)', area: 'POLYGON ((1 1 0,2 1 0,2 2 0,1 1 0))' });
    const geo = await feed<Row>(h, `${F}/Submissions?$filter=${q("__id eq 'a1'")}`);
    expect(geo.value[0]).toMatchObject({
      loc: { type: 'Point', coordinates: [20, 10, 30], properties: { accuracy: 4 } },
      route: { type: 'LineString', coordinates: [[20, 10, 0], [21, 11, 0]] },
      area: { type: 'Polygon', coordinates: [[[1, 1, 0], [2, 1, 0], [2, 2, 0], [1, 1, 0]]] },
    });
    const repeatWkt = await feed<Row>(h, `${F}/Submissions.items.item?$wkt=true`);
    expect(repeatWkt.value.map((r) => r.spot)).toEqual([null, 'POINT (36 -1)', 'POINT (2 1 3)', 'POINT (6 5)']);
  });

  test('values: types, groups, the odd name, links, and the single entity envelope', async () => {
    const { h, F, au1 } = await typedData();
    const one = await feed<Row>(h, `${F}/Submissions('a1')`);
    expect(Object.keys(one)).toEqual(['value', '@odata.context']);
    expect(one['@odata.context']).toBe(`http://localhost${F}/$metadata#Submissions`);
    const link = "Submissions('a1')/items/item";
    expect(one.value).toEqual([{
      txt: 'alpha', num: 5, dec: 1.5, day: '2024-01-10', stamp: '2024-01-10T08:00:00.000Z', clock: '08:00:00.000Z', color: 'red', tags: 'a b',
      loc: { type: 'Point', coordinates: [20, 10, 30], properties: { accuracy: 4 } },
      route: { type: 'LineString', coordinates: [[20, 10, 0], [21, 11, 0]] },
      area: { type: 'Polygon', coordinates: [[[1, 1, 0], [2, 1, 0], [2, 2, 0], [1, 1, 0]]] },
      photo: 'a1.jpg', grp: { inner: 'x', deep: { leaf: 1 } }, odd_name_x: 'o', items: { 'item@odata.navigationLink': link }, meta: { instanceID: 'a1' },
      __id: 'a1',
      __system: {
        submissionDate: expect.stringMatching(ISO_MS_UTC), updatedAt: null, submitterId: String(au1), submitterName: 'Tablet typed', attachmentsPresent: 0,
        attachmentsExpected: 1, status: null, reviewState: null, deviceId: 'collect:typed-device', edits: 0, formVersion: '3', deletedAt: null,
      },
    }]);
    const empty = (await feed<Row>(h, `${F}/Submissions('a4')`)).value[0]!;
    expect(empty).toMatchObject({ txt: null, num: null, loc: null, grp: { inner: null, deep: { leaf: null } }, items: {} });
    const items = await feed<Row>(h, `${F}/${link}`);
    expect(items['@odata.context']).toBe(`http://localhost${F}/$metadata#Submissions.items.item`);
    expect(items.value.map((r) => [r.label, r['__Submissions-id']])).toEqual([['a1-i1', 'a1'], ['a1-i2', 'a1']]);
    const partsLink = (items.value[0]!.parts as Record<string, string>)['part@odata.navigationLink']!;
    expect(partsLink).toBe(`Submissions('a1')/items/item('${items.value[0]!.__id}')/parts/part`);
    const parts = await feed<Row>(h, `${F}/${partsLink}`);
    expect(parts.value).toEqual([{ pname: 'p1', pn: 1, __id: expect.stringMatching(/^[0-9a-f]{40}$/), '__Submissions-items-item-id': items.value[0]!.__id }]);
    expect(items.value[1]!.parts, 'no parts: no link').toEqual({});
  });

  test('$expand=* and named expands, on Submissions and on a repeat table', async () => {
    const { h, F } = await typedData();
    const star = (await feed<Row>(h, `${F}/Submissions?$expand=*&$filter=${q("__id eq 'a5'")}`)).value[0]!;
    const item = (star.items as { item: Row[] }).item;
    expect(star.items).toEqual({ 'item@odata.navigationLink': "Submissions('a5')/items/item", item: expect.any(Array) });
    expect(item).toHaveLength(1);
    expect(item[0]).not.toHaveProperty('__Submissions-id');
    expect((item[0]!.parts as { part: Row[] }).part.map((p) => p.pname)).toEqual(['p2', 'p3']);
    // Named: only the repeats on the way are expanded.
    const named = (await feed<Row>(h, `${F}/Submissions?$expand=items/item&$filter=${q("__id eq 'a5'")}`)).value[0]!;
    const namedItem = (named.items as { item: Row[] }).item[0]!;
    expect(namedItem.parts).toEqual({ 'part@odata.navigationLink': `Submissions('a5')/items/item('${namedItem.__id}')/parts/part` });
    const deep = (await feed<Row>(h, `${F}/Submissions?$expand=items/item/parts/part&$filter=${q("__id eq 'a5'")}`)).value[0]!;
    expect(deep).toEqual(star);
    // On a repeat table, `*` expands the nested repeat.
    const table = await feed<Row>(h, `${F}/Submissions.items.item?$expand=*`);
    expect(table.value.map((r) => ((r.parts as { part?: Row[] }).part ?? []).length)).toEqual([2, 0, 1, 0]);
    expect(table.value[0]).toHaveProperty('__Submissions-id', 'a5');
    // Unknown named expand: 501.6.
    const bad = await problem(await h.get(`${F}/Submissions?$expand=nope`, { as: 'bob' }));
    expect([bad.status, bad.code]).toEqual([501, 501.6]);
    expect(bad.details).toEqual({ text: 'nope' });
  });

  test('$select: names, group paths, system, on a repeat table; 400.23, 400.24, 501.11 as Central', async () => {
    const { h, F, au1 } = await typedData();
    const s = await feed<Row>(h, `${F}/Submissions?$select=__id,txt,grp/inner&$top=1`);
    expect(s.value).toEqual([{ txt: 'alpha', grp: { inner: null }, __id: 'a5' }]);
    const sys = await feed<Row>(h, `${F}/Submissions?$select=__system/submitterId,grp&$filter=${q("__id eq 'a1'")}`);
    expect(sys.value).toEqual([{ grp: { inner: 'x', deep: { leaf: 1 } }, __system: { submitterId: String(au1) } }]);
    const one = await feed<Row>(h, `${F}/Submissions('a1')?$select=num`);
    expect(one.value).toEqual([{ num: 5 }]);
    const rep = await feed<Row>(h, `${F}/Submissions.items.item?$select=label,__Submissions-id`);
    expect(rep.value).toEqual([
      { label: 'a5-i1', '__Submissions-id': 'a5' }, { label: 'a2-i1', '__Submissions-id': 'a2' },
      { label: 'a1-i1', '__Submissions-id': 'a1' }, { label: 'a1-i2', '__Submissions-id': 'a1' },
    ]);
    // Central's exact errors (captured on simple and withrepeat).
    await scenarioOf('simple').setup(h);
    await scenarioOf('withrepeat').setup(h);
    await expectCentralError(h, '400.23-odata-select-unknown');
    await expectCentralError(h, '400.24-odata-select-inside-repeat');
    await expectCentralError(h, '501.11-odata-select-with-expand');
    const inRepeat = await problem(await h.get(`${F}/Submissions?$select=items/item/label`, { as: 'bob' }));
    expect([inRepeat.status, inRepeat.code]).toEqual([400, 400.24]);
  });
});

describe('$filter', () => {
  // Each test makes its own data (the harness rolls back per test).
  let data: Data;

  const root = async (filter: string) => ids((await feed<Row>(data.h, `${data.F}/Submissions?$filter=${q(filter)}`)).value);
  const items = async (filter: string) => labels((await feed<Row>(data.h, `${data.F}/Submissions.items.item?$filter=${q(filter)}`)).value);

  test('form fields of each type on Submissions (beyond Central)', async () => {
    data = await typedData();
    // text
    expect(await root("txt eq 'alpha'")).toEqual(['a5', 'a1']);
    expect(await root("txt ne 'alpha'")).toEqual(['a4', 'a3', 'a2']);
    expect(await root("txt eq 'it''s'")).toEqual(['a3']);
    expect(await root('txt eq null')).toEqual(['a4']);
    expect(await root("odd_name_x eq 'o'")).toEqual(['a1']);
    expect(await root("grp/inner eq 'x'")).toEqual(['a1']);
    // int
    expect(await root('num gt 10')).toEqual(['a5', 'a2']);
    expect(await root('num lt 0')).toEqual(['a3']);
    expect(await root('num ge 5 and num le 15')).toEqual(['a2', 'a1']);
    expect(await root('grp/deep/leaf eq 1')).toEqual(['a1']);
    expect(await root('num ne null')).toEqual(['a5', 'a3', 'a2', 'a1']);
    // decimal
    expect(await root('dec gt 2.5')).toEqual(['a5', 'a2']);
    expect(await root('dec eq 0')).toEqual(['a3']);
    expect(await root('dec le 1.5')).toEqual(['a3', 'a1']);
    // date
    expect(await root('day ge 2024-01-01')).toEqual(['a5', 'a2', 'a1']);
    expect(await root('day lt 2024-01-01')).toEqual(['a3']);
    expect(await root('year(day) eq 2025')).toEqual(['a5']);
    // dateTime, with offsets: a2 is 10:30Z.
    expect(await root('stamp gt 2024-03-05T10:00:00Z')).toEqual(['a5', 'a2']);
    expect(await root('stamp lt 2024-03-05T10:30:00.000Z')).toEqual(['a3', 'a1']);
    expect(await root('stamp eq 2024-03-05T10:30:00Z')).toEqual(['a2']);
    expect(await root('month(stamp) eq 3')).toEqual(['a2']);
    // select_one
    expect(await root("color eq 'red'")).toEqual(['a3', 'a1']);
    expect(await root("color eq 'blue' or color eq null")).toEqual(['a5', 'a4', 'a2']);
    // geopoint parts
    expect(await root('loc/latitude gt 5')).toEqual(['a3', 'a1']);
    expect(await root('loc/longitude lt 0')).toEqual(['a3']);
    expect(await root('loc/altitude eq 30')).toEqual(['a1']);
    expect(await root('loc/accuracy eq null')).toEqual(['a5', 'a4', 'a2']);
    expect(await root('loc/latitude eq -1.5')).toEqual(['a2']);
    // with system fields
    expect(await root(`txt eq 'alpha' and __system/submitterId eq ${data.au1}`)).toEqual(['a1']);
    expect(await root(`__system/submitterId eq ${data.au2}`)).toEqual(['a5']);
    expect(await root("__system/reviewState eq 'approved'")).toEqual(['a2']);
    expect(await root('__system/reviewState eq null')).toEqual(['a5', 'a4', 'a3', 'a1']);
    expect(await root("__id eq 'a3'")).toEqual(['a3']);
    // (now() in SQL is this test transaction's start, which submissionDate, rounded to ms, may pass: no now() here.)
    expect(await root('__system/submissionDate lt 2100-01-01T00:00:00Z and year(__system/submissionDate) ge 2024 and (not (num gt 10))')).toEqual(['a3', 'a1']);
    expect(await root('__system/updatedAt ne null')).toEqual(['a2']);
  });

  test('form fields of each type on repeat tables, and $root/Submissions/__system/…', async () => {
    data = await typedData();
    expect(await items("label eq 'a2-i1'")).toEqual(['a2-i1']);
    expect(await items("label ne 'a2-i1'")).toEqual(['a5-i1', 'a1-i1', 'a1-i2']);
    expect(await items('qty gt 2')).toEqual(['a5-i1', 'a2-i1', 'a1-i2']);
    expect(await items('qty lt 2 or qty eq null')).toEqual(['a1-i1']);
    expect(await items('price lt 1')).toEqual(['a1-i1']);
    expect(await items('price eq null')).toEqual(['a5-i1']);
    expect(await items('when ge 2024-01-01')).toEqual(['a1-i1']);
    expect(await items('at lt 2024-01-01T00:00:00Z')).toEqual(['a2-i1']);
    expect(await items('at gt 2024-01-31T21:00:00-02:00')).toEqual(['a1-i1']);
    expect(await items("kind eq 'x'")).toEqual(['a5-i1', 'a1-i1']);
    expect(await items('spot/latitude gt 0')).toEqual(['a1-i1', 'a1-i2']);
    expect(await items('spot/longitude eq 36')).toEqual(['a2-i1']);
    expect(await items('spot/altitude eq 3')).toEqual(['a1-i1']);
    expect(await items('spot/accuracy eq null')).toEqual(['a5-i1', 'a2-i1', 'a1-i2']);
    expect(await items(`$root/Submissions/__system/submitterId eq ${data.au2}`)).toEqual(['a5-i1']);
    expect(await items(`$root/Submissions/__system/submitterId eq ${data.au1}`)).toEqual(['a2-i1', 'a1-i1', 'a1-i2']);
    expect(await items("$root/Submissions/__system/reviewState eq 'approved'")).toEqual(['a2-i1']);
    expect(await items(`$root/Submissions/__system/submitterId eq ${data.au1} and qty ge 3`)).toEqual(['a2-i1', 'a1-i2']);
    expect(await items('$root/Submissions/__system/submissionDate le now()')).toHaveLength(4);
    const parts = await feed<Row>(data.h, `${data.F}/Submissions.items.item.parts.part?$filter=${q('pn eq 2 or pn eq null')}`);
    expect(parts.value.map((p) => p.pname)).toEqual(['p2', 'p3']);
    // A filter on a submission's own repeat rows.
    const own = await feed<Row>(data.h, `${data.F}/Submissions('a1')/items/item?$filter=${q('qty gt 1')}`);
    expect(labels(own.value)).toEqual(['a1-i2']);
  });

  test('$count with filters, with $top and through nextLink', async () => {
    data = await typedData();
    const page = await feed<Row>(data.h, `${data.F}/Submissions?$filter=${q("txt ne 'beta'")}&$count=true&$top=2`);
    expect(ids(page.value)).toEqual(['a5', 'a4']);
    expect(page['@odata.count']).toBe(4);
    const next = await feed<Row>(data.h, pathOf(page['@odata.nextLink']!));
    expect(ids(next.value)).toEqual(['a3', 'a1']);
    expect(next['@odata.count'], 'the whole filtered count on every page').toBe(4);
    expect(next['@odata.nextLink']).toBeUndefined();
    const rep = await feed<Row>(data.h, `${data.F}/Submissions.items.item?$filter=${q('qty gt 2')}&$count=true&$top=1`);
    expect(rep['@odata.count']).toBe(3);
    const repNext = await feed<Row>(data.h, pathOf(rep['@odata.nextLink']!));
    expect(labels(repNext.value)).toEqual(['a2-i1']);
    expect(repNext['@odata.count']).toBe(3);
    expect((await feed<Row>(data.h, `${data.F}/Submissions?$filter=${q('num gt 1000')}&$count=true`))['@odata.count']).toBe(0);
  });

  test("bad filters: Central's 400.18 and 501.4 bodies, 501.5 unknown fields, type mismatches, before any byte", async () => {
    data = await typedData();
    await scenarioOf('simple').setup(data.h);
    await expectCentralError(data.h, '400.18-odata-filter-unparseable');
    await expectCentralError(data.h, '501.4-odata-filter-function');
    const { h, F } = data;
    const unknown = await problem(await h.get(`${F}/Submissions?$filter=${q('nosuch eq 1')}`, { as: 'bob' }));
    expect(unknown).toEqual({ status: 501, code: 501.5, message: 'The given OData filter expression references fields not supported by this server: nosuch at 0', details: { at: 0, text: 'nosuch' } });
    const group = await problem(await h.get(`${F}/Submissions?$filter=${q("grp eq 'x'")}`, { as: 'bob' }));
    expect(group.code).toBe(501.5);
    const intoRepeat = await problem(await h.get(`${F}/Submissions?$filter=${q("items/item/label eq 'x'")}`, { as: 'bob' }));
    expect(intoRepeat.code).toBe(501.5);
    const badGeo = await problem(await h.get(`${F}/Submissions?$filter=${q('loc/height eq 1')}`, { as: 'bob' }));
    expect(badGeo.code).toBe(501.5);
    const notNumber = await problem(await h.get(`${F}/Submissions?$filter=${q("num eq 'abc'")}`, { as: 'bob' }));
    expect([notNumber.status, notNumber.code]).toEqual([400, 400.18]);
    const notDate = await problem(await h.get(`${F}/Submissions?$filter=${q("day gt 'soon'")}`, { as: 'bob' }));
    expect(notDate.code).toBe(400.18);
    const fn = await problem(await h.get(`${F}/Submissions?$filter=${q("startswith(txt,'a')")}`, { as: 'bob' }));
    expect(fn.code).toBe(501.4);
    const arithmetic = await problem(await h.get(`${F}/Submissions?$filter=${q('num add 1 eq 2')}`, { as: 'bob' }));
    expect([501.4, 400.18]).toContain(arithmetic.code);
    // On repeat tables the same errors come as a JSON Problem before any row, even behind a false `and`.
    for (const [filter, code] of [['nosuch eq 1', 501.5], ["qty eq 1 and nosuch eq 'x'", 501.5], ["qty eq 'abc'", 400.18], ["contains(label,'a')", 501.4], ['label eq', 400.18]] as const) {
      const res = await h.get(`${F}/Submissions.items.item?$filter=${q(filter)}`, { as: 'bob' });
      const p = await problem(res);
      expect(p.code, filter).toBe(code);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    }
    // … and on a table with no rows at all.
    await publishForm(h, scenarioOf('withrepeat').formXml);
    const emptyTable = await problem(await h.get(`/v1/projects/${h.projectId}/forms/withrepeat.svc/Submissions.children.child?$filter=${q('nosuch eq 1')}`, { as: 'bob' }));
    expect(emptyTable.code).toBe(501.5);
  });
});

describe('$orderby', () => {
  test('system and form fields, asc and desc, nulls as Central (first ascending, last descending), paging with $skip', async () => {
    const { h, F } = await typedData();
    const order = async (o: string, path = 'Submissions') => (await feed<Row>(h, `${F}/${path}?$orderby=${q(o)}`)).value;
    expect(ids(await order('num desc'))).toEqual(['a5', 'a2', 'a1', 'a3', 'a4']);
    expect(ids(await order('num asc'))).toEqual(['a4', 'a3', 'a1', 'a2', 'a5']);
    expect(ids(await order('num'))).toEqual(['a4', 'a3', 'a1', 'a2', 'a5']);
    expect(ids(await order('txt asc,num desc'))).toEqual(['a4', 'a5', 'a1', 'a2', 'a3']);
    expect(ids(await order('dec desc'))).toEqual(['a5', 'a2', 'a1', 'a3', 'a4']);
    expect(ids(await order('day asc'))).toEqual(['a4', 'a3', 'a1', 'a2', 'a5']);
    expect(ids(await order('stamp desc'))).toEqual(['a5', 'a2', 'a1', 'a3', 'a4']);
    expect(ids(await order('color desc,num asc'))).toEqual(['a3', 'a1', 'a2', 'a5', 'a4']);
    expect(ids(await order('loc/latitude desc'))).toEqual(['a3', 'a1', 'a5', 'a2', 'a4']);
    expect(ids(await order('grp/deep/leaf asc'))).toEqual(['a2', 'a3', 'a4', 'a5', 'a1']);
    // System fields: every submission here shares the transaction's timestamp, so ties go by id in
    // the first term's direction (as Central's stable order column).
    expect(ids(await order('__system/submissionDate asc'))).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
    expect(ids(await order('__system/submissionDate desc'))).toEqual(['a5', 'a4', 'a3', 'a2', 'a1']);
    expect(ids(await order('$root/Submissions/__system/submissionDate asc'))).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
    expect(ids(await order('__system/updatedAt desc'))).toEqual(['a2', 'a5', 'a4', 'a3', 'a1']);
    expect(ids(await order('__system/reviewState asc'))).toEqual(['a1', 'a3', 'a4', 'a5', 'a2']);
    expect(ids(await order('__system/submitterId desc,num asc'))).toEqual(['a5', 'a4', 'a3', 'a1', 'a2']);
    expect(ids(await order('__id desc'))).toEqual(['a5', 'a4', 'a3', 'a2', 'a1']);

    // Paging under $orderby follows $skip, keeping the other options (form-encoded, as Central's URLSearchParams).
    const { rows, pages } = await walk<Row>(h, `${F}/Submissions?$orderby=${q('num desc')}&$top=2&$count=true&$filter=${q('num ne 15')}`);
    expect(ids(rows)).toEqual(['a5', 'a1', 'a3', 'a4']);
    expect(pages.map((p) => p['@odata.count'])).toEqual([4, 4]);
    expect(pages[0]!['@odata.nextLink']).toBe(`http://localhost${F}/Submissions?%24orderby=num+desc&%24top=2&%24count=true&%24filter=num+ne+15&%24skip=2`);
    const skipped = await feed<Row>(h, `${F}/Submissions?$orderby=${q('num desc')}&$skip=1&$top=2`);
    expect(ids(skipped.value)).toEqual(['a2', 'a1']);
    expect(skipped['@odata.nextLink']).toBe(`http://localhost${F}/Submissions?%24orderby=num+desc&%24top=2&%24skip=3`);

    // Repeat tables.
    expect(labels(await order('qty desc', 'Submissions.items.item'))).toEqual(['a1-i2', 'a5-i1', 'a2-i1', 'a1-i1']);
    expect(labels(await order('price asc', 'Submissions.items.item'))).toEqual(['a5-i1', 'a1-i1', 'a1-i2', 'a2-i1']);
    expect(labels(await order('price desc', 'Submissions.items.item'))).toEqual(['a2-i1', 'a1-i2', 'a1-i1', 'a5-i1']);
    expect(labels(await order('kind asc,qty desc', 'Submissions.items.item'))).toEqual(['a5-i1', 'a1-i1', 'a1-i2', 'a2-i1']);
    expect(labels(await order('spot/latitude desc', 'Submissions.items.item'))).toEqual(['a1-i2', 'a1-i1', 'a2-i1', 'a5-i1']);
    expect(labels(await order('at asc', 'Submissions.items.item'))).toEqual(['a1-i2', 'a5-i1', 'a2-i1', 'a1-i1']);
    // Submission ties: by submission id in the first direction, then document order.
    expect(labels(await order('__system/submissionDate asc', 'Submissions.items.item'))).toEqual(['a1-i1', 'a1-i2', 'a2-i1', 'a5-i1']);
    expect(labels(await order('$root/Submissions/__system/submissionDate desc', 'Submissions.items.item'))).toEqual(['a5-i1', 'a2-i1', 'a1-i1', 'a1-i2']);
    const repWalk = await walk<Row>(h, `${F}/Submissions.items.item?$orderby=${q('qty desc')}&$top=1&$count=true`);
    expect(labels(repWalk.rows)).toEqual(['a1-i2', 'a5-i1', 'a2-i1', 'a1-i1']);
    expect(repWalk.pages).toHaveLength(4);
    expect(repWalk.pages.every((p) => p['@odata.count'] === 4)).toBe(true);
  });

  test('unknown fields and directions are 501.5; with $skiptoken 501.1', async () => {
    const { h, F } = await typedData();
    const unknown = await problem(await h.get(`${F}/Submissions?$orderby=nosuch`, { as: 'bob' }));
    expect(unknown).toEqual({ status: 501, code: 501.5, message: 'The given OData filter expression references fields not supported by this server: nosuch', details: { text: 'nosuch' } });
    const direction = await problem(await h.get(`${F}/Submissions?$orderby=${q('num sideways')}`, { as: 'bob' }));
    expect(direction).toEqual({ status: 501, code: 501.5, message: 'The given OData filter expression references fields not supported by this server: sideways', details: { text: 'sideways' } });
    const rep = await problem(await h.get(`${F}/Submissions.items.item?$orderby=txt`, { as: 'bob' }));
    expect(rep.code).toBe(501.5);
    const token = encodeURIComponent(`01${btoa('{"instanceId":"a3"}')}`);
    const both = await problem(await h.get(`${F}/Submissions?$orderby=num&$skiptoken=${token}`, { as: 'bob' }));
    expect([both.status, both.code]).toEqual([501, 501.1]);
  });
});

describe('options combined', () => {
  test('$top+$skip+$count+$filter+$select, $expand+$top+$count, $wkt+$expand, $filter+$orderby+$select on a repeat table', async () => {
    const { h, F } = await typedData();
    const a = await feed<Row>(h, `${F}/Submissions?$top=2&$skip=1&$count=true&$filter=${q('num ne null')}&$select=__id,num`);
    expect(a.value).toEqual([{ num: -3, __id: 'a3' }, { num: 15, __id: 'a2' }]);
    expect(a['@odata.count']).toBe(4);
    // $skip is dropped from the nextLink; the skiptoken carries the position.
    expect(a['@odata.nextLink']).toBe(`http://localhost${F}/Submissions?%24top=2&%24count=true&%24filter=num+ne+null&%24select=__id%2Cnum&%24skiptoken=${encodeURIComponent(`01${btoa('{"instanceId":"a2"}')}`)}`);
    const rest = await feed<Row>(h, pathOf(a['@odata.nextLink']!));
    expect(rest.value).toEqual([{ num: 5, __id: 'a1' }]);

    const b = await feed<Row>(h, `${F}/Submissions?$expand=*&$top=1&$count=true&$wkt=true`);
    expect(b['@odata.count']).toBe(5);
    const item = (b.value[0]!.items as { item: Row[] }).item[0]!;
    expect(item).toMatchObject({ label: 'a5-i1', spot: null });
    expect(b.value[0]!.loc).toBe('POINT (0 0)');

    const c = await feed<Row>(h, `${F}/Submissions.items.item?$filter=${q("kind eq 'y' or kind eq 'x'")}&$orderby=${q('qty asc')}&$select=label,qty&$top=3&$count=true`);
    expect(c.value).toEqual([{ label: 'a1-i1', qty: 1 }, { label: 'a2-i1', qty: 3 }, { label: 'a5-i1', qty: 7 }]);
    expect(c['@odata.count']).toBe(4);
    expect(c['@odata.nextLink']).toContain('%24skip=3');
    const d = await feed<Row>(h, `${F}/Submissions.items.item?$top=2&$skip=1&$count=true`);
    expect(labels(d.value)).toEqual(['a2-i1', 'a1-i1']);
    expect(d['@odata.count']).toBe(4);
    const e = await feed<Row>(h, pathOf(d['@odata.nextLink']!));
    expect(labels(e.value)).toEqual(['a1-i2']);
    expect(e['@odata.count']).toBe(4);
  });
});

// ---------------------------------------------------------------------------------------------
// Paging while submissions arrive

/** Deterministic typed submissions: `n` with 0–3 items each, 0–2 parts per item. */
const many = (prefix: string, n: number): Typed[] => Array.from({ length: n }, (_, i) => ({
  id: `${prefix}${String(i).padStart(3, '0')}`, txt: `t${i}`, num: String((i * 37) % 50), dec: `${i}.5`, day: `2024-01-${String((i % 28) + 1).padStart(2, '0')}`,
  loc: `${i % 90} ${i % 180}`, items: Array.from({ length: i % 4 }, (_x, j) => ({ label: `${prefix}${i}-${j}`, qty: String(j), parts: Array.from({ length: (i + j) % 3 }, (_y, k) => ({ pname: `${prefix}${i}-${j}-${k}` })) })),
}));

/** Every value appears once. */
function expectNoDuplicates(values: string[], label: string) {
  const seen = new Set<string>();
  const dupes = values.filter((v) => (seen.has(v) ? true : (seen.add(v), false)));
  expect(dupes, `${label}: duplicates`).toEqual([]);
}

describe('paging walks with @odata.nextLink while submissions arrive', () => {
  test('Submissions, $top=7, 60 submissions, one new submission (and a deletion of a seen row) between pages', async () => {
    const h = await harness();
    const { submit } = await typedForm(h);
    for (const s of many('s', 60)) await submit(s);
    const F = svc(h);
    const before = ids((await feed<Row>(h, `${F}/Submissions`)).value);
    expect(before).toHaveLength(60);
    const arrivals = many('n', 12);
    let seenLast: string | null = null;
    const { rows, pages } = await walk<Row>(h, `${F}/Submissions?$top=7&$count=true`, 'bob', async (i, page) => {
      await submit(arrivals[i]!);
      // A submission not reached yet is edited: it comes once, with its new values.
      if (i === 1) {
        const edit = typedXml({ ...many('s', 60)[5]!, txt: 'edited' }).replace('<meta><instanceID>s005</instanceID>', '<meta><deprecatedID>s005</deprecatedID><instanceID>s005-e</instanceID>');
        await submitOpenRosa(h, 'bob', edit);
      }
      // The row the skiptoken names goes to the trash: the cursor still holds.
      if (i === 3) {
        seenLast = ids(page.value).at(-1)!;
        expect((await h.delete(`/v1/projects/${h.projectId}/forms/${TYPED_ID}/submissions/${seenLast}`, { as: 'bob' })).status).toBe(200);
      }
    });
    const got = ids(rows);
    expectNoDuplicates(got, 'root walk');
    for (const id of before) expect(got, `lost ${id}`).toContain(id);
    expect(got.filter((id) => !before.includes(id)).every((id) => id.startsWith('n'))).toBe(true);
    expect(pages[0]!['@odata.count']).toBe(60);
    expect(pages.slice(0, -1).every((p) => p.value.length === 7)).toBe(true);
    // Each nextLink: absolute, percent-encoded keys, the skiptoken of the page's last row.
    for (const p of pages.slice(0, -1)) {
      const link = new URL(p['@odata.nextLink']!);
      expect(link.search.startsWith('?%24top=7&%24count=true&%24skiptoken=01')).toBe(true);
      const token = link.searchParams.get('$skiptoken')!;
      expect(JSON.parse(atob(token.slice(2)))).toEqual({ instanceId: ids(p.value).at(-1) });
    }
    expect(seenLast).not.toBeNull();
    expect(rows.find((r) => r.__id === 's005')).toMatchObject({ txt: 'edited', meta: { instanceID: 's005-e' } });
  });

  test('a repeat table and a nested repeat table, $top=7, with new submissions between pages', async () => {
    const h = await harness();
    const { submit } = await typedForm(h);
    for (const s of many('s', 60)) await submit(s);
    const F = svc(h);
    for (const table of ['Submissions.items.item', 'Submissions.items.item.parts.part']) {
      const key = table.endsWith('part') ? 'pname' : 'label';
      const before = (await feed<Row>(h, `${F}/${table}`)).value;
      expect(before.length).toBeGreaterThan(50);
      const arrivals = many(`n${table.length}x`, 40);
      const { rows, pages } = await walk<Row>(h, `${F}/${table}?$top=7&$count=true`, 'bob', async (i) => submit(arrivals[i]!));
      expectNoDuplicates(ids(rows), `${table} walk`);
      expect(ids(rows.filter((r) => before.some((b) => b.__id === r.__id))), `${table}: the rows that existed, once each, in order`).toEqual(ids(before));
      // Rows that existed keep their values.
      const byId = new Map(rows.map((r) => [r.__id, r]));
      for (const b of before) expect(byId.get(b.__id)?.[key]).toBe(b[key]);
      expect(pages[0]!['@odata.count']).toBe(before.length);
      for (const p of pages.slice(0, -1)) {
        const token = new URL(p['@odata.nextLink']!).searchParams.get('$skiptoken')!;
        expect(JSON.parse(atob(token.slice(2)))).toEqual({ repeatId: ids(p.value).at(-1) });
      }
    }
  });

  test('a filtered walk keeps its filter in every nextLink', async () => {
    const h = await harness();
    const { submit } = await typedForm(h);
    for (const s of many('s', 30)) await submit(s);
    const F = svc(h);
    const expected = ids((await feed<Row>(h, `${F}/Submissions?$filter=${q('num lt 25')}`)).value);
    const { rows, pages } = await walk<Row>(h, `${F}/Submissions?$filter=${q('num lt 25')}&$top=4`);
    expect(ids(rows)).toEqual(expected);
    expect(pages.length).toBe(Math.ceil(expected.length / 4));
    expect(pages.slice(0, -1).every((p) => p['@odata.nextLink']!.includes('%24filter=num+lt+25'))).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------

describe('errors', () => {
  test("Central's exact bodies: 501.1, 406.1, 400.35, 400.34, 404.1 (JSON) and $metadata 404.1 (XML)", async () => {
    const h = await harness();
    await scenarioOf('simple').setup(h);
    await scenarioOf('withrepeat').setup(h);
    await expectCentralError(h, '501.1-odata-unknown-param');
    await expectCentralError(h, '406.1-odata-format-xml');
    await expectCentralError(h, '400.35-odata-skiptoken-invalid');
    await expectCentralError(h, '400.34-odata-repeat-skiptoken-unknown');
    await expectCentralError(h, '404.1-odata-entity-not-found');
    await expectCentralError(h, '404.1-odata-metadata-not-found');
    const P = `/v1/projects/${h.projectId}/forms`;
    const notFound = centralError('404.1-odata-entity-not-found').body;
    for (const path of [
      `${P}/simple.svc/Nope`, `${P}/simple.svc/Submissions.nope`, `${P}/withrepeat.svc/Submissions('nope')/children/child`,
      `${P}/withrepeat.svc/Submissions('rtwo')/children/nope`, `${P}/withrepeat.svc/Submissions('rtwo')/name`,
      `${P}/withrepeat.svc/Submissions('rtwo')/children/child('${'0'.repeat(40)}')/x`, `${P}/nope.svc/Submissions`, `${P}/nope.svc`,
    ]) {
      const res = await h.get(path, { as: 'bob' });
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toBe('application/json; charset=utf-8');
      expect(await res.text(), path).toBe(notFound);
    }
    // Malformed skiptokens in every shape are 400.35; $top that is not a number is 400.11.
    for (const t of ['01', '02eyJ9', `01${btoa('[1]')}`, `01${btoa('not json')}`, '01%%%']) {
      const p = await problem(await h.get(`${P}/simple.svc/Submissions?$skiptoken=${encodeURIComponent(t)}`, { as: 'bob' }));
      expect(p.code, t).toBe(400.35);
    }
    expect((await problem(await h.get(`${P}/simple.svc/Submissions?$top=abc`, { as: 'bob' }))).code).toBe(400.11);
    // A repeat skiptoken whose row vanished between two pages (its submission was deleted).
    const first = await feed<Row>(h, `${P}/withrepeat.svc/Submissions.children.child?$top=1`);
    expect(first.value[0]!['__Submissions-id']).toBe('rthree');
    expect((await h.delete(`${P}/withrepeat/submissions/rthree`, { as: 'bob' })).status).toBe(200);
    const vanished = await h.get(pathOf(first['@odata.nextLink']!), { as: 'bob' });
    expect(vanished.status).toBe(400);
    expect(await vanished.text()).toBe(centralError('400.34-odata-repeat-skiptoken-unknown').body);
    // A root skiptoken naming no submission: an empty page, as Central (repeat tables: 400.34 above).
    const gone = await h.get(`${P}/simple.svc/Submissions?$skiptoken=${encodeURIComponent(`01${btoa('{"instanceId":"nope"}')}`)}`, { as: 'bob' });
    expect(gone.status).toBe(200);
    expect((await gone.json()).value).toEqual([]);
    // 501.1 for every unknown option, named by itself.
    const unknown = await problem(await h.get(`${P}/simple.svc/Submissions?$levels=2`, { as: 'bob' }));
    expect(unknown).toMatchObject({ status: 501, code: 501.1, details: { feature: '$levels' } });
  });

  // One test each: the refused statement aborts the test's transaction.
  test.each(['', '&$count=true', '&$top=1'])('a date PostgreSQL refuses (2020-02-30) in $filter%s is a 400 JSON error, not a 200 that breaks off', async (more) => {
    const h = await harness();
    const { submit } = await typedForm(h);
    await submit(A[0]!);
    const res = await h.get(`${svc(h)}/Submissions?$filter=${q('day lt 2020-02-30')}${more}`, { as: 'bob' });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect((await res.json() as { code: number }).code).toBe(400.11);
  });

  test('the draft feed: F/draft.svc lists draft submissions only; 404 without a draft', async () => {
    const h = await harness();
    const { submit } = await typedForm(h);
    await submit(A[0]!);
    const P = `/v1/projects/${h.projectId}/forms/${TYPED_ID}`;
    expect((await h.get(`${P}/draft.svc`, { as: 'bob' })).status).toBe(404);
    expect((await h.get(`${P}/draft.svc/Submissions`, { as: 'bob' })).status).toBe(404);
    const created = await h.post(`${P}/draft`, { as: 'bob', body: TYPED_FORM.replace('version="3"', 'version="4"'), headers: { 'Content-Type': 'application/xml' } });
    expect(created.status, await created.clone().text()).toBe(200);
    const { draftToken } = await json<{ draftToken: string }>(await h.get(`${P}/draft`, { as: 'bob' }));
    for (const id of ['d1', 'd2', 'd3']) {
      const { body, type } = multipart(typedXml({ id, txt: id, items: [{ label: `${id}-i` }] }).replace('version="3"', 'version="4"'));
      const res = await h.post(`/v1/test/${draftToken}/projects/${h.projectId}/forms/${TYPED_ID}/draft/submission`, { body, headers: { ...COLLECT, 'Content-Type': type } });
      expect(res.status, await res.clone().text()).toBe(201);
    }
    const D = `${P}/draft.svc`;
    const svcDoc = await json<{ '@odata.context': string; value: unknown[] }>(await h.get(D, { as: 'bob' }));
    expect(svcDoc['@odata.context']).toBe(`http://localhost${D}/$metadata`);
    expect(svcDoc.value).toHaveLength(3);
    const { rows, pages } = await walk<Row>(h, `${D}/Submissions?$top=2&$count=true`);
    expect(ids(rows)).toEqual(['d3', 'd2', 'd1']);
    expect(pages[0]!['@odata.context']).toBe(`http://localhost${D}/$metadata#Submissions`);
    expect(pages[0]!['@odata.nextLink']!.startsWith(`http://localhost${D}/Submissions?%24top=2&%24count=true&%24skiptoken=`)).toBe(true);
    expect(pages[0]!['@odata.count']).toBe(3);
    expect(rows.every((r) => (r.__system as { formVersion: string }).formVersion === '4')).toBe(true);
    expect(labels((await feed<Row>(h, `${D}/Submissions.items.item`)).value)).toEqual(['d3-i', 'd2-i', 'd1-i']);
    expect(labels((await feed<Row>(h, `${D}/Submissions('d2')/items/item`)).value)).toEqual(['d2-i']);
    expect(ids((await feed<Row>(h, `${P}.svc/Submissions`)).value), 'the published feed has only published data').toEqual(['a1']);
    expect((await h.get(`${D}/Submissions('a1')`, { as: 'bob' })).status).toBe(404);
  });

  test('deleted submissions: left out, unless the filter names __system/deletedAt (root and repeat tables)', async () => {
    const { h, F } = await typedData();
    const S = `/v1/projects/${h.projectId}/forms/${TYPED_ID}/submissions`;
    expect((await h.delete(`${S}/a1`, { as: 'bob' })).status).toBe(200);
    expect(ids((await feed<Row>(h, `${F}/Submissions`)).value)).toEqual(['a5', 'a4', 'a3', 'a2']);
    expect((await feed<Row>(h, `${F}/Submissions?$count=true`))['@odata.count']).toBe(4);
    const trash = await feed<Row>(h, `${F}/Submissions?$filter=${q('__system/deletedAt ne null')}&$count=true`);
    expect(ids(trash.value)).toEqual(['a1']);
    expect(trash['@odata.count']).toBe(1);
    expect((trash.value[0]!.__system as { deletedAt: string }).deletedAt).toMatch(ISO_MS_UTC);
    expect(ids((await feed<Row>(h, `${F}/Submissions?$filter=${q('__system/deletedAt eq null or __system/deletedAt ne null')}`)).value)).toHaveLength(5);
    expect(labels((await feed<Row>(h, `${F}/Submissions.items.item`)).value)).toEqual(['a5-i1', 'a2-i1']);
    expect(labels((await feed<Row>(h, `${F}/Submissions.items.item?$filter=${q('$root/Submissions/__system/deletedAt ne null')}`)).value)).toEqual(['a1-i1', 'a1-i2']);
    expect((await h.get(`${F}/Submissions('a1')`, { as: 'bob' })).status).toBe(404);
    expect((await h.get(`${F}/Submissions('a1')/items/item`, { as: 'bob' })).status).toBe(404);
    // Restored: back in the feed.
    expect((await h.post(`${S}/a1/restore`, { as: 'bob' })).status).toBe(200);
    expect(ids((await feed<Row>(h, `${F}/Submissions`)).value)).toEqual(['a5', 'a4', 'a3', 'a2', 'a1']);
  });

  test('rights: project viewer 200; data collector, no role, the form App User 403; anonymous 401', async () => {
    const { h, F } = await typedData();
    const chelsea = h.ids.chelsea;
    const P = `/v1/projects/${h.projectId}`;
    const paths = ['', '/$metadata', '/Submissions', "/Submissions('a1')", '/Submissions.items.item'];
    const status = async (as: As) =>
      Promise.all(paths.map(async (p) => (await h.get(`${F}${p}`, { as })).status));
    expect(await status('anonymous')).toEqual([401, 401, 401, 401, 401]);
    expect(await status('chelsea')).toEqual([403, 403, 403, 403, 403]);
    expect(await status('alice')).toEqual([200, 200, 200, 200, 200]);
    const au = await appUserFor(h, TYPED_ID, 'Reader?');
    expect(await status({ key: au.token })).toEqual([403, 403, 403, 403, 403]);
    expect((await h.post(`${P}/assignments/formfill/${chelsea}`, { as: 'bob' })).status).toBe(200);
    expect(await status('chelsea')).toEqual([403, 403, 403, 403, 403]);
    expect((await h.delete(`${P}/assignments/formfill/${chelsea}`, { as: 'bob' })).status).toBe(200);
    expect((await h.post(`${P}/assignments/viewer/${chelsea}`, { as: 'bob' })).status).toBe(200);
    expect(await status('chelsea')).toEqual([200, 200, 200, 200, 200]);
    const viewed = await feed<Row>(h, `${F}/Submissions?$top=1`, 'chelsea');
    expect(ids(viewed.value)).toEqual(['a5']);
    // The 401 is JSON with Central's code.
    const anon = await problem(await h.get(`${F}/Submissions`));
    expect([anon.status, Math.floor(anon.code)]).toEqual([401, 401]);
  });
});


describe('paging at batch boundaries', () => {
  test('$top equal to the read batch still gets a nextLink when more rows exist', async () => {
    const h = await harness();
    expect((await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'bob', body: readFileSync(new URL('../../../../shared/fixtures/forms/simple.xml', import.meta.url), 'utf8'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    const xml = readFileSync(new URL('../../../../shared/fixtures/submissions/simple.one.xml', import.meta.url), 'utf8');
    for (let i = 0; i < 1002; i += 1) {
      const r = await h.post(`/v1/projects/${h.projectId}/forms/simple/submissions`, { as: 'bob', body: xml.replace(/<instanceID>[^<]*</, `<instanceID>b${i}<`), headers: { 'Content-Type': 'application/xml' } });
      expect(r.status).toBe(200);
    }
    for (const top of [500, 1000, 1001]) {
      const page = (await (await h.get(`/v1/projects/${h.projectId}/forms/simple.svc/Submissions?$top=${top}&$select=__id`, { as: 'bob' })).json()) as { value: unknown[]; '@odata.nextLink'?: string };
      expect(page.value, String(top)).toHaveLength(top);
      expect(page['@odata.nextLink'], String(top)).toBeDefined();
    }
    const all = (await (await h.get(`/v1/projects/${h.projectId}/forms/simple.svc/Submissions?$top=1002&$count=true`, { as: 'bob' })).json()) as { value: unknown[]; '@odata.nextLink'?: string; '@odata.count': number };
    expect(all.value).toHaveLength(1002);
    expect(all['@odata.nextLink']).toBeUndefined();
    expect(all['@odata.count']).toBe(1002);
  }, 120_000);
});
