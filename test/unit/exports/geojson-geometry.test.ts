/**
 * ODK geo texts → GeoJSON geometries (lib/exports/geojson-geometry.ts), by the rules Central's
 * geodata extraction follows (central-api.yaml "Retrieving Submissions Geodata").
 */
import { describe, expect, test } from 'vitest';
import { featureJson, fieldGeometry, geometryJson, parseLine, parsePosition, parseRing } from '../../../lib/exports/geojson-geometry';

describe('parsePosition', () => {
  test.each([
    ['', null], ['nope', null], ['1', null], ['170 80', null], ['90 190', null], ['90.01 180', null], ['90 180.01', null],
    ['-90.000001 0', null], ['90.000 180.0', ['180.0', '90.000']], ['90 180', ['180', '90']], ['-90 -180', ['-180', '-90']],
    ['90\t \t180', ['180', '90']], ['  1.23 4.56 7.89  ', ['4.56', '1.23', '7.89']], ['-1.23 -4.56 -7.89 0.01', ['-4.56', '-1.23', '-7.89']],
    ['-1.23 -4.56 -7.89 -11', null], ['1 2 3 notaprecision', null], ['1 2 notanaltitude', null], ['1 2 3 4 5', null],
    // Extraneous leading zeros, a plus sign or an exponent make the value invalid.
    ['01.1 1.1', null], ['1.1 -01.1', null], ['1.1 1.1 01.1', null], ['1.1 1.1 1.1 01.1', null], ['+1 2', null], ['1e1 2', null], ['.5 2', null],
    // A negative zero prints without its sign; trailing zeros are kept.
    ['-0 -0.0 -0', ['0.0', '0', '0']], ['1.50 2.250', ['2.250', '1.50']],
    ['89.99999999999999999999 179.99999999999999999999', ['179.99999999999999999999', '89.99999999999999999999']],
  ])('%j', (text, expected) => {
    expect(parsePosition(text)).toEqual(expected);
  });
});

describe('parseLine and parseRing', () => {
  test('a trace needs two valid points, split on ; with any whitespace around', () => {
    expect(parseLine('1 2 3 4')).toBeNull();
    expect(parseLine('1 2 3 4;')).toBeNull();
    expect(parseLine('1 2 3 4;5 6 7 8')).toEqual([['2', '1', '3'], ['6', '5', '7']]);
    expect(parseLine('1 2 3 4\t; 5 6 7 8  ;   11 12    \t  ;13 14')).toEqual([['2', '1', '3'], ['6', '5', '7'], ['12', '11'], ['14', '13']]);
    expect(parseLine('1 2 3 4; nope, 5 6 7 8')).toBeNull();
    expect(parseLine('1 2', 1)).toEqual([['2', '1']]);
  });

  test('a shape needs four points, closed (numerically equal ends)', () => {
    expect(parseRing('1 2; 3 4; 1 2')).toBeNull();
    expect(parseRing('1 2; 3 4; 5 6; 7 8')).toBeNull();
    expect(parseRing('1 2; 3 4; 5 6; 1 2')).toEqual([['2', '1'], ['4', '3'], ['6', '5'], ['2', '1']]);
    expect(parseRing('1 2; 3 4; 5 6; 1.0 2.00')).toEqual([['2', '1'], ['4', '3'], ['6', '5'], ['2.00', '1.0']]);
    expect(parseRing('1 2 3; 3 4; 5 6; 1 2')).toBeNull();
  });
});

describe('fieldGeometry', () => {
  test('single fields by type; repeats as Multi* of their valid values', () => {
    expect(fieldGeometry('geopoint', false, ['1 2'])).toEqual({ type: 'Point', coordinates: ['2', '1'] });
    expect(fieldGeometry('geotrace', false, ['1 2; 3 4'])).toEqual({ type: 'LineString', coordinates: [['2', '1'], ['4', '3']] });
    expect(fieldGeometry('geoshape', false, ['1 2; 3 4; 5 6; 1 2'])?.type).toBe('Polygon');
    expect(fieldGeometry('geoshape', false, ['1 2; 3 4'])).toBeNull();
    expect(fieldGeometry('geopoint', false, [])).toBeNull();
    expect(fieldGeometry('string', false, ['1 2'])).toBeNull();
    expect(fieldGeometry('geopoint', true, ['1 2', 'bad', '3 4'])).toEqual({ type: 'MultiPoint', coordinates: [['2', '1'], ['4', '3']] });
    expect(fieldGeometry('geopoint', true, ['bad'])).toBeNull();
    expect(fieldGeometry('geotrace', true, ['1 2; 3 4', '1 2'])).toEqual({ type: 'MultiLineString', coordinates: [[['2', '1'], ['4', '3']]] });
    expect(fieldGeometry('geoshape', true, ['1 2; 3 4; 5 6; 1 2'])).toEqual({ type: 'MultiPolygon', coordinates: [[[['2', '1'], ['4', '3'], ['6', '5'], ['2', '1']]]] });
  });

  test('JSON text keeps the numbers as written', () => {
    const point = fieldGeometry('geopoint', false, ['89.99999999999999999999 1.50 -0'])!;
    expect(geometryJson(point)).toBe('{"type":"Point","coordinates":[1.50,89.99999999999999999999,0]}');
    expect(featureJson('uuid:"x"', [point], '/g/p')).toBe(
      '{"type":"Feature","id":"uuid:\\"x\\"","geometry":{"type":"Point","coordinates":[1.50,89.99999999999999999999,0]},"properties":{"fieldpath":"/g/p"}}');
    expect(JSON.parse(featureJson('a', [point, point], null)).geometry.type).toBe('GeometryCollection');
  });
});
