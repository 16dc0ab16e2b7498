/**
 * ODK geo values (geopoint, geotrace, geoshape texts) → GeoJSON geometries, by the rules of
 * Central's geodata extraction (central-api.yaml "Retrieving Submissions Geodata"; Central's
 * `odk2geojson_*` database functions, whose behaviour its test/integration/api/geodata.js pins):
 *
 * - a point is `lat lon [altitude [accuracy]]`, separated by any whitespace; latitude within
 *   [-90, 90], longitude within [-180, 180]; numbers without extraneous leading zeros, no exponent,
 *   no `+`; a negative accuracy is invalid. GeoJSON order is `[lon, lat(, altitude)]`; the
 *   accuracy is dropped.
 * - a trace is points separated by `;` (whitespace around it allowed): at least 2 points, every
 *   one valid. A shape is a trace of at least 4 points whose first equals its last (numerically).
 * - a field outside repeats gives one Point / LineString / Polygon from its value; a field inside
 *   a repeat gives a MultiPoint / MultiLineString / MultiPolygon of its valid values (the invalid
 *   ones dropped), or nothing when none is valid.
 *
 * Numbers are kept as their decimal text (as PostgreSQL's numeric prints them), so no precision is
 * lost between the submission and the JSON. PURE: no database, HTTP or clock.
 */

/** A coordinate's decimal text, e.g. `-52.123783` (valid JSON number text). */
export type Coordinate = string;
/** `[lon, lat]` or `[lon, lat, altitude]`. */
export type Position = Coordinate[];

export type Geometry =
  | { type: 'Point'; coordinates: Position }
  | { type: 'LineString'; coordinates: Position[] }
  | { type: 'Polygon'; coordinates: Position[][] }
  | { type: 'MultiPoint'; coordinates: Position[] }
  | { type: 'MultiLineString'; coordinates: Position[][] }
  | { type: 'MultiPolygon'; coordinates: Position[][][] }
  | { type: 'GeometryCollection'; geometries: Geometry[] };

/** The XForm bind types that carry geodata. */
export const GEO_TYPES: ReadonlySet<string> = new Set(['geopoint', 'geotrace', 'geoshape']);

// PostgreSQL's `\s` (ARE class): space, tab, newline, carriage return, form feed, vertical tab.
const WS = '[ \\t\\n\\r\\f\\v]';
const POINT = new RegExp(
  `^${WS}*(-?(?:0|[1-9][0-9]?)(?:\\.[0-9]+)?)${WS}+(-?(?:0|[1-9][0-9]{0,2})(?:\\.[0-9]+)?)`
  + `(?:${WS}+(-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?))?(?:${WS}+(?:(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?))?${WS}*$`,
);
const SEPARATOR = new RegExp(`${WS}*;${WS}*`);

/** `-0`, `-0.00` print without the sign, as a numeric does. */
const numericText = (s: string) => (/^-0(\.0+)?$/.test(s) ? s.slice(1) : s);

/** Whether |s| ≤ bound, exactly (no floating point): s matched POINT, so it is plain decimal text. */
function withinBound(s: string, bound: number): boolean {
  const [int, frac = ''] = s.replace(/^-/, '').split('.');
  const n = Number(int);
  return n < bound || (n === bound && /^0*$/.test(frac));
}

/** A number's text reduced for comparison: `1.50` and `1.5` are the same value. */
const comparable = (s: string) => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s);

/** One geopoint text → `[lon, lat(, alt)]`, or null when it is not a valid point. Pure. */
export function parsePosition(text: string): Position | null {
  const m = POINT.exec(text);
  if (!m) return null;
  const [, lat, lon, alt] = m as unknown as [string, string, string, string | undefined];
  if (!withinBound(lat, 90) || !withinBound(lon, 180)) return null;
  return alt == null ? [numericText(lon), numericText(lat)] : [numericText(lon), numericText(lat), numericText(alt)];
}

/** A geotrace text → its positions, or null when shorter than `minLength` or any point is invalid. Pure. */
export function parseLine(text: string, minLength = 2): Position[] | null {
  const out: Position[] = [];
  for (const part of text.split(SEPARATOR)) {
    const p = parsePosition(part);
    if (!p) return null;
    out.push(p);
  }
  return out.length < minLength ? null : out;
}

const samePosition = (a: Position, b: Position) =>
  a.length === b.length && a.every((c, i) => comparable(c) === comparable(b[i]!));

/** A geoshape text → its one ring, or null (fewer than 4 points, an invalid point, not closed). Pure. */
export function parseRing(text: string): Position[] | null {
  const line = parseLine(text, 4);
  return line && samePosition(line[0]!, line[line.length - 1]!) ? line : null;
}

/**
 * The geometry of one field of one submission.
 * @param type `geopoint` | `geotrace` | `geoshape` (anything else gives null).
 * @param repeated whether the field is inside a repeat (then a Multi* of every valid value).
 * @param values the field's non-empty texts in document order (outside repeats only the first counts).
 * @returns the geometry, or null when there is no valid value. Pure.
 */
export function fieldGeometry(type: string, repeated: boolean, values: string[]): Geometry | null {
  if (values.length === 0) return null;
  if (!repeated) {
    const v = values[0]!;
    if (type === 'geopoint') {
      const p = parsePosition(v);
      return p && { type: 'Point', coordinates: p };
    }
    if (type === 'geotrace') {
      const l = parseLine(v);
      return l && { type: 'LineString', coordinates: l };
    }
    if (type === 'geoshape') {
      const r = parseRing(v);
      return r && { type: 'Polygon', coordinates: [r] };
    }
    return null;
  }
  if (type === 'geopoint') {
    const ps = values.map(parsePosition).filter((p): p is Position => p != null);
    return ps.length > 0 ? { type: 'MultiPoint', coordinates: ps } : null;
  }
  if (type === 'geotrace') {
    const ls = values.map((v) => parseLine(v)).filter((l): l is Position[] => l != null);
    return ls.length > 0 ? { type: 'MultiLineString', coordinates: ls } : null;
  }
  if (type === 'geoshape') {
    const rs = values.map(parseRing).filter((r): r is Position[] => r != null);
    return rs.length > 0 ? { type: 'MultiPolygon', coordinates: rs.map((r) => [r]) } : null;
  }
  return null;
}

/** Nested coordinate arrays as JSON text, numbers written as their decimal text. */
const coordinatesJson = (c: unknown): string =>
  (typeof c === 'string' ? c : `[${(c as unknown[]).map(coordinatesJson).join(',')}]`);

/** A geometry as GeoJSON text (numbers exactly as stored). Pure. */
export function geometryJson(g: Geometry): string {
  if (g.type === 'GeometryCollection') return `{"type":"GeometryCollection","geometries":[${g.geometries.map(geometryJson).join(',')}]}`;
  return `{"type":"${g.type}","coordinates":${coordinatesJson(g.coordinates)}}`;
}

/**
 * One GeoJSON Feature as text: `{"type":"Feature","id","geometry","properties"}`. Several
 * geometries are wrapped in a GeometryCollection, one stands alone (Central's shape).
 * @param id the submission's (or version's) instanceId. @param fieldpath set in `properties` when
 *   the field was not named in the request, else `properties` is null. Pure.
 */
export function featureJson(id: string, geometries: Geometry[], fieldpath: string | null): string {
  const geometry = geometries.length === 1 ? geometries[0]! : { type: 'GeometryCollection' as const, geometries };
  const properties = fieldpath == null ? 'null' : `{"fieldpath":${JSON.stringify(fieldpath)}}`;
  return `{"type":"Feature","id":${JSON.stringify(id)},"geometry":${geometryJson(geometry)},"properties":${properties}}`;
}
