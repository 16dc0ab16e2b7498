/**
 * lib/exports/tables.ts: the tables of an export and their columns, checked against the headers
 * real Central wrote for the same forms (shared/fixtures/central-outputs, facts 1, 2, 6, 9, 10, 11).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { cell, exportTables, selectTokens, type ExportOptions, type ExportTable } from '../../../lib/exports/tables';
import { parseForm } from '../../../lib/xforms/parse-form';
import type { FormField } from '../../../lib/xforms/types';

const SHARED = new URL('../../../../shared/fixtures/', import.meta.url);
const fields = (path: string): FormField[] => parseForm(readFileSync(new URL(path, SHARED))).fields;
const flags = (o: Partial<ExportOptions> = {}): ExportOptions => ({ groupPaths: true, deletedFields: false, splitSelectMultiples: false, ...o });
const META = ['KEY', 'SubmitterID', 'SubmitterName', 'AttachmentsPresent', 'AttachmentsExpected', 'Status', 'ReviewState', 'DeviceID', 'Edits', 'FormVersion'];

/** The file name and field headers of each table, as lists. */
const layout = (tables: ExportTable[]) => tables.map((t) => [t.fileName, t.columns.map((c) => c.header)]);

/** Central's header for one file of a capture, without SubmissionDate / the metadata / PARENT_KEY,KEY. */
function centralHeader(folder: string, variant: string, file: string): string[] {
  const header = readFileSync(new URL(`central-outputs/${folder}/${variant}/${file}`, SHARED), 'utf8').split('\n')[0]!.split(',');
  return header[0] === 'SubmissionDate' ? header.slice(1, -META.length) : header.slice(0, -2);
}

describe('exportTables', () => {
  test('groups flattened with - by default, the last name only with groupPaths=false; one file per repeat named by its element', () => {
    const f = fields('forms/withrepeat.xml');
    expect(layout(exportTables('withrepeat', f, [], flags()))).toEqual([
      ['withrepeat.csv', ['meta-instanceID', 'name', 'age']],
      ['withrepeat-child.csv', ['name', 'age']],
    ]);
    expect(layout(exportTables('withrepeat', f, [], flags({ groupPaths: false })))[0]).toEqual(['withrepeat.csv', ['instanceID', 'name', 'age']]);
    const nested = fields('forms/nestedGroup.xml');
    for (const [variant, groupPaths] of [['csv-default', true], ['csv-groupPaths-false', false]] as const) {
      expect(exportTables('nestedGroup', nested, [], flags({ groupPaths }))[0]!.columns.map((c) => c.header)).toEqual(centralHeader('nestedGroup', variant, 'nestedGroup.csv'));
    }
    // Group paths inside a repeat are relative to the repeat.
    const group = exportTables('groupRepeat', fields('forms/groupRepeat.xml'), [], flags());
    expect(group.map((t) => t.fileName)).toEqual(['groupRepeat.csv', 'groupRepeat-child_repeat.csv']);
    expect(group[1]!.columns.map((c) => c.header)).toEqual(centralHeader('groupRepeat', 'csv-default', 'groupRepeat-child_repeat.csv'));
    expect(group[1]!.columns.map((c) => c.header)).toEqual(['name', 'address-city', 'address-country']);
  });

  test('nested repeats get their own table (left out of the parent), with the chain of enclosing repeats', () => {
    const tables = exportTables('doubleRepeat', fields('forms/doubleRepeat.xml'), [], flags());
    expect(layout(tables)).toEqual([
      ['doubleRepeat.csv', ['meta-instanceID', 'name']],
      ['doubleRepeat-child.csv', ['name']],
      ['doubleRepeat-toy.csv', ['name']],
    ]);
    expect(tables.map((t) => [t.repeatPath, t.repeatChain])).toEqual([
      [null, []],
      ['/children/child', ['/children/child']],
      ['/children/child/toys/toy', ['/children/child', '/children/child/toys/toy']],
    ]);
  });

  test('a geopoint is four columns (Latitude, Longitude, Altitude, Accuracy); geotrace and geoshape stay one', () => {
    const f = fields('forms/geoTypes.xml');
    for (const [variant, groupPaths] of [['csv-default', true], ['csv-groupPaths-false', false]] as const) {
      const tables = exportTables('geotest', f, [], flags({ groupPaths }));
      expect(tables.map((t) => t.fileName)).toEqual(['geotest.csv', 'geotest-plural.csv', 'geotest-nested_repeat.csv']);
      for (const t of tables) expect(t.columns.map((c) => c.header), `${variant} ${t.fileName}`).toEqual(centralHeader('geoTypes', variant, t.fileName));
    }
    const root = exportTables('geotest', f, [], flags())[0]!;
    expect(root.columns.slice(1, 7)).toEqual([
      { header: 'singular-input_geopoint-Latitude', path: '/singular/input_geopoint', part: { geo: 0 } },
      { header: 'singular-input_geopoint-Longitude', path: '/singular/input_geopoint', part: { geo: 1 } },
      { header: 'singular-input_geopoint-Altitude', path: '/singular/input_geopoint', part: { geo: 2 } },
      { header: 'singular-input_geopoint-Accuracy', path: '/singular/input_geopoint', part: { geo: 3 } },
      { header: 'singular-input_geotrace', path: '/singular/input_geotrace' },
      { header: 'singular-input_geoshape', path: '/singular/input_geoshape' },
    ]);
  });

  test('splitSelectMultiples: after the field, one column per option given, named <column>/<option>; only select multiples', () => {
    const f = fields('forms/selectMultiple.xml');
    const options = new Map([['/q1', ['a', 'b', 'c']], ['/g1/q2', ['m', 'x', 'y', 'z']], ['/meta/instanceID', ['never']]]);
    expect(exportTables('selectMultiple', f, [], flags({ splitSelectMultiples: true }), options)[0]!.columns.map((c) => c.header))
      .toEqual(centralHeader('selectMultiple', 'csv-splitSelectMultiples-true', 'selectMultiple.csv'));
    const off = exportTables('selectMultiple', f, [], flags({ splitSelectMultiples: true, groupPaths: false }), options)[0]!;
    expect(off.columns.map((c) => c.header)).toEqual(['instanceID', 'q1', 'q1/a', 'q1/b', 'q1/c', 'q2', 'q2/m', 'q2/x', 'q2/y', 'q2/z']);
    expect(off.columns[2]).toEqual({ header: 'q1/a', path: '/q1', part: { option: 'a' } });
    // Without the flag, or without options seen, no split columns.
    expect(exportTables('selectMultiple', f, [], flags(), options)[0]!.columns.map((c) => c.header)).toEqual(['meta-instanceID', 'q1', 'g1-q2']);
    expect(exportTables('selectMultiple', f, [], flags({ splitSelectMultiples: true }))[0]!.columns.map((c) => c.header)).toEqual(['meta-instanceID', 'q1', 'g1-q2']);
  });

  test('deletedFields: fields of older versions only, after all current fields of their table (root and repeat); absent without the flag', () => {
    const v1 = fields('central-outputs/deletedFields/inputs/form-v1.xml');
    const v2 = fields('central-outputs/deletedFields/inputs/form-v2.xml');
    for (const variant of ['csv-default', 'csv-deletedFields-true', 'csv-groupPaths-false', 'csv-all-three-flags']) {
      const o = flags({ deletedFields: variant.includes('deleted') || variant.includes('all'), groupPaths: !variant.includes('groupPaths') && !variant.includes('all') });
      const tables = exportTables('deletedFields', v2, [v1], o);
      expect(tables.map((t) => t.fileName)).toEqual(['deletedFields.csv', 'deletedFields-child.csv']);
      for (const t of tables) expect(t.columns.map((c) => c.header), `${variant} ${t.fileName}`).toEqual(centralHeader('deletedFields', variant, t.fileName));
    }
    expect(layout(exportTables('deletedFields', v2, [v1], flags({ deletedFields: true })))).toEqual([
      ['deletedFields.csv', ['meta-instanceID', 'name', 'hometown', 'details-note', 'details-colour', 'age']],
      ['deletedFields-child.csv', ['name', 'age']],
    ]);
    // A field in several older versions comes back once; current fields are never repeated.
    expect(exportTables('deletedFields', v2, [v1, v1, v2], flags({ deletedFields: true }))[0]!.columns.map((c) => c.header))
      .toEqual(['meta-instanceID', 'name', 'hometown', 'details-note', 'details-colour', 'age']);
  });
});

describe('cell', () => {
  test('plain values as written, absent ones empty', () => {
    expect(cell({ header: 'q', path: '/q' }, ' b c')).toBe(' b c');
    expect(cell({ header: 'q', path: '/q' }, undefined)).toBe('');
  });

  test('geopoint parts keep the submitted text; missing parts and empty points are empty', () => {
    const part = (geo: number) => ({ header: 'g', path: '/g', part: { geo } });
    expect([0, 1, 2, 3].map((g) => cell(part(g), '0.5210 35.2810 2101 9'))).toEqual(['0.5210', '35.2810', '2101', '9']);
    expect([0, 1, 2, 3].map((g) => cell(part(g), '0.514277 35.269779'))).toEqual(['0.514277', '35.269779', '', '']);
    expect([0, 1, 2, 3].map((g) => cell(part(g), ''))).toEqual(['', '', '', '']);
    expect([0, 1, 2, 3].map((g) => cell(part(g), undefined))).toEqual(['', '', '', '']);
  });

  test('select multiple options: 1 when chosen, else 0 (also for an empty or missing answer)', () => {
    const opt = (option: string) => ({ header: `q/${option}`, path: '/q', part: { option } });
    expect(['a', 'b', 'c'].map((o) => cell(opt(o), ' b c'))).toEqual(['0', '1', '1']);
    expect(['a', 'b'].map((o) => cell(opt(o), ''))).toEqual(['0', '0']);
    expect(['a', 'b'].map((o) => cell(opt(o), undefined))).toEqual(['0', '0']);
    expect(cell(opt('a'), 'ab')).toBe('0');
    expect(selectTokens('  x\ty  z ')).toEqual(['x', 'y', 'z']);
  });
});
