/**
 * RootJsonWriter (lib/odata/rows.ts) writes Submissions rows of a form without repeats as JSON
 * text; clients read that text, so it must be exactly the text of the row object rootRow builds
 * (same keys, same order, same values), for every kind of leaf, nested and empty groups, missing
 * and empty values, `$wkt`, and encrypted rows (no fields).
 */
import { describe, expect, test } from 'vitest';
import { buildModel } from '../../../lib/odata/model';
import { RootJsonWriter, RowBuilder, type SubmissionMeta } from '../../../lib/odata/rows';

const f = (path: string, type: string) => ({ path, name: path.slice(path.lastIndexOf('/') + 1), type, binary: null, selectMultiple: null });
const model = buildModel('mixed', [
  f('/start', 'dateTime'), f('/name', 'string'), f('/age', 'int'), f('/ratio', 'decimal'),
  f('/g', 'structure'), f('/g/loc', 'geopoint'), f('/g/inner', 'structure'), f('/g/inner/trace', 'geotrace'), f('/g/inner/shape', 'geoshape'),
  f('/g/empty', 'structure'), f('/choice', 'select1'), f('/when', 'date'), f('/my-field.x', 'string'),
  f('/meta', 'structure'), f('/meta/instanceID', 'string'), f('/tail', 'structure'),
]);
const meta: SubmissionMeta = {
  instanceId: 'uuid:"quoted"\\', createdAt: new Date('2024-01-02T03:04:05.678Z'), updatedAt: null, deletedAt: null, submitterId: 5,
  submitterName: 'Ann "A"', reviewState: 'approved', deviceId: null, edits: 1, formVersion: 'v1', attachmentsPresent: 0, attachmentsExpected: 2, status: null,
};
const values: Record<string, string>[] = [
  {
    '/start': '2024-01-02T03:04:05.000+02', '/name': 'Ünïcode "quotes" \\ \n\u2028 <tag>', '/age': '42', '/ratio': '-1.5e3', '/g/loc': '1.5 2.5 3 4',
    '/g/inner/trace': '1 2 0 0;3 4 0 5', '/g/inner/shape': '1 2;3 4;5 6;1 2', '/choice': 'a b', '/when': '2024-01-02', '/my-field.x': 'x', '/meta/instanceID': 'uuid:1',
  },
  // Text to escape in string fields and in a converted one.
  { '/name': 'back\\slash "q" \u0001\u001f', '/start': '"2024"', '/age': '\\7', '/when': 'x' },
  // Empty and missing values, unreadable numbers and geometry.
  { '/name': '', '/age': 'abc', '/ratio': 'NaN', '/g/loc': '  ', '/g/inner/trace': 'x y' },
  {},
];

describe('RootJsonWriter', () => {
  for (const wkt of [false, true]) {
    test(`writes the text of JSON.stringify(rootRow) (wkt ${wkt})`, () => {
      const builder = new RowBuilder(model, { wkt, expand: null });
      const writer = new RootJsonWriter(model, { wkt });
      for (const v of values) {
        const want = JSON.stringify(builder.rootRow(meta, v));
        expect(writer.row(meta, { text: (i) => v[writer.leafPaths[i]!], escaped: false })).toBe(want);
        // The texts given JSON-escaped (as the feed gives a root_text escaped whole).
        const esc = (t: string | undefined) => (t == null ? t : JSON.stringify(t).slice(1, -1));
        expect(writer.row(meta, { text: (i) => esc(v[writer.leafPaths[i]!]), escaped: true })).toBe(want);
      }
      // An encrypted row that was not decrypted: __id and __system only.
      expect(writer.row(meta, null)).toBe(JSON.stringify(builder.rootRow(meta, null)));
    });
  }

  test('a form with only a group, and one with nothing', () => {
    for (const fields of [[f('/g', 'structure')], []]) {
      const m = buildModel('tiny', fields);
      expect(new RootJsonWriter(m, { wkt: false }).row(meta, { text: () => undefined, escaped: true })).toBe(JSON.stringify(new RowBuilder(m, { wkt: false, expand: null }).rootRow(meta, {})));
    }
  });

  test('rowBytes: the UTF-8 of row() from a root_text, for string leaves in groups, empty and non-ASCII values; null when it does not apply', () => {
    const strings = buildModel('strings', [
      f('/a', 'string'), f('/g', 'structure'), f('/g/b', 'select1'), f('/g/inner', 'structure'), f('/g/inner/c', 'string'),
      f('/g/empty', 'structure'), f('/d', 'string'), f('/tail', 'structure'),
    ]);
    const builder = new RowBuilder(strings, { wkt: false, expand: null });
    const writer = new RootJsonWriter(strings, { wkt: false });
    const utf8 = new TextEncoder();
    // root_text: the leaves' texts in order, joined by U+001F (ROOT_TEXT_SEPARATOR).
    for (const cells of [['x', 'a b', '12', 'end'], ['', '', '', ''], ['Ünïcode ✓ 😀 \u2028', '', 'z', ''], ['', 'only', '', '<t>&']]) {
      const v = Object.fromEntries(writer.leafPaths.map((p, i) => [p, cells[i]!]));
      const want = utf8.encode(JSON.stringify(builder.rootRow(meta, v)));
      expect(writer.rowBytes(meta, cells.join('\u001f'))).toEqual(want);
    }
    // Fewer or more cells than leaves.
    expect(writer.rowBytes(meta, ['x', 'y', 'z'].join('\u001f'))).toBeNull();
    expect(writer.rowBytes(meta, ['x', 'y', 'z', 'w', 'v'].join('\u001f'))).toBeNull();
    expect(writer.rowBytes(meta, '')).toBeNull();
    // A converted leaf (the mixed model's int, dateTime…): row() only.
    expect(new RootJsonWriter(model, { wkt: false }).rowBytes(meta, '')).toBeNull();
  });

  test('refuses a model with repeats', () => {
    expect(() => new RootJsonWriter(buildModel('r', [f('/r', 'repeat'), f('/r/x', 'string')]), { wkt: false })).toThrow();
  });
});
