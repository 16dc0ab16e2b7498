/**
 * The pure parts of lib/odata: query options (readFeedQuery, skiptokens, nextLink; facts 19–20),
 * row values and repeat ids (leafValue, repeatRowId; facts 14, 15, 17), the model's names (fact 12,
 * 24) and the in-memory filter (evaluateFilter) used on repeat tables.
 */
import { describe, expect, test } from 'vitest';
import { parseODataFilter } from '../../../lib/exports/filter';
import { evaluateFilter, rowValue, type RowResolver } from '../../../lib/odata/evaluate';
import { buildModel } from '../../../lib/odata/model';
import { decodeSkiptoken, encodeSkiptoken, nextLink, readFeedQuery } from '../../../lib/odata/query';
import { leafValue, repeatRowId } from '../../../lib/odata/rows';
import { Problem } from '../../../lib/problem';

const codeOf = (fn: () => unknown): number | null => {
  try {
    fn();
    return null;
  } catch (err) {
    if (err instanceof Problem) return err.code;
    throw err;
  }
};

describe('readFeedQuery', () => {
  test('reads every option', () => {
    const q = readFeedQuery([['$top', '5'], ['$skip', '2'], ['$count', 'true'], ['$wkt', 'true'], ['$filter', 'a eq 1'], ['$orderby', 'a desc, $root/Submissions/__system/submissionDate'], ['$expand', 'x/y, z']]);
    expect(q).toMatchObject({
      top: 5, skip: 2, count: true, wkt: true, filter: 'a eq 1', expand: ['x/y', 'z'], select: null,
      orderby: [{ path: 'a', desc: true }, { path: '__system/submissionDate', desc: false }],
    });
    expect(readFeedQuery([['$expand', '*'], ['$count', 'false']])).toMatchObject({ expand: '*', count: false, top: null, skip: 0 });
    expect(readFeedQuery([['$select', '__id, a/b']]).select).toEqual(['__id', 'a/b']);
  });

  test("refuses what Central refuses, with Central's codes", () => {
    expect(codeOf(() => readFeedQuery([['$apply', 'x']]))).toBe(501.1);
    expect(codeOf(() => readFeedQuery([['foo', 'x']]))).toBe(501.1);
    expect(codeOf(() => readFeedQuery([['$format', 'xml']]))).toBe(406.1);
    expect(codeOf(() => readFeedQuery([['$format', 'atom']]))).toBe(406.1);
    expect(codeOf(() => readFeedQuery([['$format', 'json']]))).toBeNull();
    expect(codeOf(() => readFeedQuery([['$top', '-1']]))).toBe(400.11);
    expect(codeOf(() => readFeedQuery([['$skip', '1.5']]))).toBe(400.11);
    expect(codeOf(() => readFeedQuery([['$skiptoken', 'abc']]))).toBe(400.35);
    expect(codeOf(() => readFeedQuery([['$select', 'a'], ['$expand', '*']]))).toBe(501.11);
    expect(codeOf(() => readFeedQuery([['$orderby', 'a'], ['$skiptoken', encodeSkiptoken({ instanceId: 'x' })]]))).toBe(501.1);
    expect(codeOf(() => readFeedQuery([['$orderby', 'a sideways']]))).toBe(501.5);
  });
});

describe('skiptokens and nextLink (fact 20)', () => {
  test("Central's tokens, both ways", () => {
    expect(encodeSkiptoken({ instanceId: 'three' })).toBe('01eyJpbnN0YW5jZUlkIjoidGhyZWUifQ==');
    expect(decodeSkiptoken('01eyJyZXBlYXRJZCI6IjMyODA5YWUyYjNkYzQwNGVhMjkyMjA1ZWI4ODRiMjFmYTRlOWFjYzUifQ==')).toEqual({ repeatId: '32809ae2b3dc404ea292205eb884b21fa4e9acc5' });
    expect(decodeSkiptoken(encodeSkiptoken({ instanceId: 'ünï' }))).toEqual({ instanceId: 'ünï' });
    for (const bad of ['', '01', '02eyJ9', `01${btoa('"x"')}`, `01${btoa('null')}`, `01${btoa('[]')}`, '01!!']) expect(codeOf(() => decodeSkiptoken(bad)), bad).toBe(400.35);
  });

  test('keys percent-encoded, order kept, $skip dropped, the new position last', () => {
    const q = readFeedQuery([['$top', '1'], ['$count', 'true']]);
    expect(nextLink('http://localhost:8383/v1/projects/1/forms/simple.svc/Submissions', q, { skiptoken: encodeSkiptoken({ instanceId: 'three' }) }))
      .toBe('http://localhost:8383/v1/projects/1/forms/simple.svc/Submissions?%24top=1&%24count=true&%24skiptoken=01eyJpbnN0YW5jZUlkIjoidGhyZWUifQ%3D%3D');
    const withSkip = readFeedQuery([['$skip', '4'], ['$filter', "a eq 'x y'"], ['$top', '2'], ['$skiptoken', encodeSkiptoken({ instanceId: 'old' })]]);
    expect(nextLink('http://h/S', withSkip, { skiptoken: 'T' })).toBe('http://h/S?%24filter=a+eq+%27x+y%27&%24top=2&%24skiptoken=T'); // Central's encoding: space +, ' %27
    const ordered = readFeedQuery([['$orderby', 'a desc'], ['$top', '2'], ['$skip', '2']]);
    expect(nextLink('http://h/S', ordered, { skip: 4 })).toBe('http://h/S?%24orderby=a+desc&%24top=2&%24skip=4');
  });
});

describe('row values (facts 14, 15) and repeat ids (fact 17)', () => {
  test('types, empties, GeoJSON and WKT', () => {
    expect(leafValue('int', '42', false)).toBe(42);
    expect(leafValue('int', '', false)).toBeNull();
    expect(leafValue('int', undefined, false)).toBeNull();
    expect(leafValue('decimal', '0.5210', false)).toBe(0.521);
    expect(leafValue('string', ' b c', false)).toBe(' b c');
    expect(leafValue('dateTime', '2024-05-16T08:30:12.000+03', false)).toBe('2024-05-16T08:30:12.000+03:00');
    expect(leafValue('dateTime', '2024-05-16T08:30:12.000+03:00', false)).toBe('2024-05-16T08:30:12.000+03:00');
    expect(leafValue('geopoint', '0.5142 35.2697', false)).toEqual({ type: 'Point', coordinates: [35.2697, 0.5142] });
    expect(leafValue('geopoint', '1 2 3 4', false)).toEqual({ type: 'Point', coordinates: [2, 1, 3], properties: { accuracy: 4 } });
    expect(leafValue('geopoint', '1 2 3 4', true)).toBe('POINT (2 1 3)');
    expect(leafValue('geotrace', '1 2 3 0;4 5 6 0', false)).toEqual({ type: 'LineString', coordinates: [[2, 1, 3], [5, 4, 6]] });
    expect(leafValue('geotrace', '1 2 3 1;4 5 6 0', false)).toEqual({ type: 'LineString', coordinates: [[2, 1, 3], [5, 4, 6]], properties: { accuracies: [1, 0] } });
    expect(leafValue('geoshape', '1 1 0 0;1 2 0 0;2 2 0 0;1 1 0 0', true)).toBe('POLYGON ((1 1 0,2 1 0,2 2 0,1 1 0))');
  });

  test("Central's repeat row ids", () => {
    // README fact 17: sha1("Submissions#rtwo%%children#%%child#1") is Blaine's id.
    expect(repeatRowId('rtwo', '/children/child', ['/children/child'], [2])).toBe('1291953ccbe2e5e866f7ab3fefa3036d649186d3');
    // doubleRepeat (captured): Bob is child 2, his toys table is under /children/child/toys/toy.
    expect(repeatRowId('double', '/children/child', ['/children/child'], [2])).toBe('b6e93a81a53eed0566e65e472d4a4b9ae383ee6d');
    expect(repeatRowId('double', '/children/child/toys/toy', ['/children/child', '/children/child/toys/toy'], [2, 1])).toBe('a9058d7b2ed9557205ae53f5b1dc4224043eca2a');
  });

  test('model names: dotted tables, parent ids, sanitized names', () => {
    const f = (path: string, type: string) => ({ path, name: path.slice(path.lastIndexOf('/') + 1), type, binary: null, selectMultiple: null });
    const model = buildModel('1st-form', [
      f('/g', 'structure'), f('/g/r', 'repeat'), f('/g/r/my-field.x', 'int'), f('/g/r/n', 'repeat'), f('/g/r/n/v', 'string'), f('/meta', 'structure'), f('/meta/instanceID', 'string'),
    ]);
    expect(model.tables.map((t) => [t.name, t.parentIdName])).toEqual([['Submissions', null], ['Submissions.g.r', '__Submissions-id'], ['Submissions.g.r.n', '__Submissions-g-r-id']]);
    expect(model.tables[1]!.children.map((c) => c.name)).toEqual(['my_field_x', 'n']);
    expect(model.complexTypes.map((c) => c.name)).toEqual(['g', 'meta']);
  });
});

describe('evaluateFilter (repeat tables)', () => {
  const row = (values: Record<string, { type: 'number' | 'text' | 'time'; value: number | string | null }>): RowResolver => (p) => values[p] ?? null;
  const r = row({ n: { type: 'number', value: 3 }, t: { type: 'text', value: 'x' }, d: rowValue('time', '2024-03-05T10:30:00Z'), z: { type: 'number', value: null } });
  const ev = (text: string) => evaluateFilter(parseODataFilter(text), r, Date.parse('2025-01-01T00:00:00Z'));

  test('comparisons, null-safe eq/ne, and/or/not, date parts, now()', () => {
    expect(ev('n eq 3')).toBe(true);
    expect(ev('n gt 2 and n lt 4')).toBe(true);
    expect(ev("t ne 'x' or n ge 3")).toBe(true);
    expect(ev('not (n eq 3)')).toBe(false);
    expect(ev('z eq null')).toBe(true);
    expect(ev('z ne 1')).toBe(true);
    expect(ev('z gt 1')).toBe(false);
    expect(ev('z lt 1')).toBe(false);
    expect(ev('d lt now()')).toBe(true);
    expect(ev('month(d) eq 3 and hour(d) eq 10')).toBe(true);
    expect(ev('d gt 2024-03-05T12:00:00+02:00')).toBe(true);
    expect(ev("n eq '3'")).toBe(true);
  });

  test('every error is found on any row, even behind a false and / true or', () => {
    expect(codeOf(() => ev('n eq 4 and nope eq 1'))).toBe(501.5);
    expect(codeOf(() => ev('n eq 3 or nope eq 1'))).toBe(501.5);
    expect(codeOf(() => ev("n eq 4 and n eq 'abc'"))).toBe(400.18);
    expect(codeOf(() => ev("contains(t,'x')"))).toBe(501.4);
  });
});
