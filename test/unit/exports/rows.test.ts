/** lib/exports/rows.ts: root cells, repeat rows with KEY / PARENT_KEY, and CSV lines. */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { csvLine, repeatKey, repeatRows, rootCells } from '../../../lib/exports/rows';
import { exportTables } from '../../../lib/exports/tables';
import { parseForm } from '../../../lib/xforms/parse-form';
import { parseSubmission } from '../../../lib/xforms/parse-submission';

const SHARED = new URL('../../../../shared/fixtures/', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, SHARED));
const flags = { groupPaths: true, deletedFields: false, splitSelectMultiples: false };

describe('repeatKey', () => {
  test('the root instanceID, every step below the root, [n] after each repeat step (1-based)', () => {
    expect(repeatKey('rtwo', ['/children/child'], [2])).toBe('rtwo/children/child[2]');
    expect(repeatKey('double', ['/children/child', '/children/child/toys/toy'], [2, 3])).toBe('double/children/child[2]/toys/toy[3]');
    expect(repeatKey('uuid:a01', ['/plural', '/plural/nested_repeat'], [2, 1])).toBe('uuid:a01/plural[2]/nested_repeat[1]');
    expect(repeatKey('id', ['/a/r1', '/a/r1/g/h/r2', '/a/r1/g/h/r2/r3'], [1, 4, 10])).toBe('id/a/r1[1]/g/h/r2[4]/r3[10]');
    // A repeat whose name starts like its parent's is still told apart.
    expect(repeatKey('id', ['/child', '/child/childhood'], [3, 1])).toBe('id/child[3]/childhood[1]');
    // The instanceID is not parsed: slashes or brackets in it are kept as they are.
    expect(repeatKey('x/y[1]', ['/r'], [1])).toBe('x/y[1]/r[1]');
  });
});

describe('repeatRows / rootCells', () => {
  test('doubleRepeat: every level in document order with its PARENT_KEY and KEY (as Central exported it)', () => {
    const fields = parseForm(read('forms/doubleRepeat.xml')).fields;
    const values = parseSubmission(read('submissions/doubleRepeat.double.xml'), fields).values;
    const [root, child, toy] = exportTables('doubleRepeat', fields, [], flags);
    expect(rootCells(root!, values)).toEqual(['double', 'Vick']);
    const csv = (file: string) => readFileSync(new URL(`central-outputs/doubleRepeat/csv-default/${file}`, SHARED), 'utf8');
    expect(repeatRows(child!, values, 'double').map(csvLine).join('')).toBe(csv('doubleRepeat-child.csv').slice(csv('doubleRepeat-child.csv').indexOf('\n') + 1));
    expect(repeatRows(toy!, values, 'double').map(csvLine).join('')).toBe(csv('doubleRepeat-toy.csv').slice(csv('doubleRepeat-toy.csv').indexOf('\n') + 1));
  });

  test('an instance with only a nested repeat, or an empty element, still gets its row; values inside nested repeats stay out of the parent row', () => {
    const fields = parseForm(read('forms/doubleRepeat.xml')).fields;
    const [, child, toy] = exportTables('doubleRepeat', fields, [], flags);
    const values = [
      { path: '/children/child/toys/toy/name', repeatIndex: [1, 1], value: 'Only toy' },
      { path: '/children/child', repeatIndex: [2], value: '' },
      { path: '/children/child/name', repeatIndex: [3], value: 'Third' },
    ];
    expect(repeatRows(child!, values, 'k')).toEqual([
      ['', 'k', 'k/children/child[1]'],
      ['', 'k', 'k/children/child[2]'],
      ['Third', 'k', 'k/children/child[3]'],
    ]);
    expect(repeatRows(toy!, values, 'k')).toEqual([['Only toy', 'k/children/child[1]', 'k/children/child[1]/toys/toy[1]']]);
    expect(repeatRows(child!, [], 'k')).toEqual([]);
  });

  test('root cells ignore repeat values and keep the first of duplicate elements', () => {
    const fields = parseForm(read('forms/withrepeat.xml')).fields;
    const [root] = exportTables('withrepeat', fields, [], flags);
    expect(rootCells(root!, [
      { path: '/name', repeatIndex: [], value: 'first' },
      { path: '/name', repeatIndex: [], value: 'second' },
      { path: '/children/child/name', repeatIndex: [1], value: 'kid' },
    ])).toEqual(['', 'first', '']);
  });
});

describe('csvLine', () => {
  test('quotes a cell only for a comma, a quote, CR or LF; quotes doubled; \\n line end', () => {
    expect(csvLine(['a', 'b,c', 'say "hi"', 'two\nlines', 'cr\rhere', ''])).toBe('a,"b,c","say ""hi""","two\nlines","cr\rhere",\n');
    expect(csvLine(['"'])).toBe('""""\n');
    expect(csvLine([])).toBe('\n');
  });

  test('leading =, +, -, @ and spaces are written as they are (Central does not neutralise formulas)', () => {
    expect(csvLine(['=SUM(A1:A2)', '+1', '-1', '@cmd', ' b c', 'trailing ', '\ttab'])).toBe('=SUM(A1:A2),+1,-1,@cmd, b c,trailing ,\ttab\n');
    expect(csvLine(['=HYPERLINK("x")'])).toBe('"=HYPERLINK(""x"")"\n');
    expect(csvLine(['ünïcödé', '日本語', '🙂'])).toBe('ünïcödé,日本語,🙂\n');
  });
});
