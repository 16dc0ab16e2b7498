/**
 * Random XLSForms (fixed seed) built from the types, columns and expressions users write, valid or
 * not: every one either converts to an XForm that our XForm parser accepts, or fails with an
 * XlsFormError (a 400.15 for the client) — never another exception (a 500).
 */
import { describe, expect, test } from 'vitest';
import { convertXlsForm, XlsFormError } from '../../../lib/xlsform';
import { parseForm } from '../../../lib/xforms/parse-form';
import { workbook, type Sheets } from '../../helpers/xlsform-sheets';

const TYPES = [
  'text', 'integer', 'decimal', 'select_one l1', 'select_multiple l2', 'select_one l1 or_other', 'begin_group', 'end_group',
  'begin_repeat', 'end_repeat', 'note', 'calculate', 'date', 'geopoint', 'image', 'audio', 'range', 'rank l1', 'acknowledge',
  'trigger', 'start', 'audit', 'select_one_from_file f.csv', 'select_one_external e1', 'hidden', 'xml-external',
  'background-audio', 'start-geopoint', 'begin_loop over l1', 'end_loop', 'select_one ${q1}', '',
];
const COLUMNS = [
  'label', 'hint', 'relevant', 'required', 'constraint', 'constraint_message', 'calculation', 'default', 'appearance',
  'choice_filter', 'repeat_count', 'parameters', 'trigger', 'label::en (en)', 'label::fr (fr)', 'media::image', 'save_to',
  'read_only', 'guidance_hint', 'instance::x', 'body::y', 'bind::z',
];
const VALUES = [
  '${q1}', '${q2} > 1', 'yes', 'no', 'today()', '${missing}', 'concat(${q1}, "x")', '1', 'a b', "selected(${q3}, 'a')",
  '${last-saved#q1}', 'indexed-repeat(${q2}, ${q4}, 1)', 'true()', 'x.png', 'max-pixels=10', 'randomize=true seed=${q1}',
  'start=0 end=5 step=0.5', 'field-list', 'table-list', 'Label with ${q2}', '<&>"\'', '${q1',
];

function generator(seed: number) {
  let s = seed;
  const rnd = (n: number) => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s % n;
  };
  return { rnd, pick: <T,>(a: T[]) => a[rnd(a.length)]! };
}

function randomForm(i: number): Sheets {
  const { rnd, pick } = generator(1000 + i);
  const header = [...new Set(['type', 'name', ...Array.from({ length: 1 + rnd(6) }, () => pick(COLUMNS))])];
  const rows: Sheets[string] = [header];
  const n = 1 + rnd(12);
  for (let r = 0; r < n; r++) {
    rows.push(header.map((c) => (c === 'type' ? pick(TYPES) : c === 'name' ? (rnd(20) ? `q${r}` : pick(['bad name', '1x', ''])) : rnd(2) ? '' : pick(VALUES))));
  }
  const sheets: Sheets = { survey: rows };
  if (rnd(4)) {
    sheets.choices = [
      ['list_name', 'name', 'label', 'label::fr (fr)', 'image'],
      ['l1', 'a', 'A', rnd(2) ? 'Aa' : '', rnd(2) ? 'a.png' : ''],
      ['l1', 'b', 'B', '', ''],
      ['l2', 'x', rnd(3) ? 'X' : '', '', ''],
      ['l2', rnd(2) ? 'x' : 'y', '${q1}', '', ''],
    ];
  }
  if (rnd(3) === 0) sheets.settings = [['form_id', 'version', 'default_language', 'instance_name'], [`f${i}`, String(rnd(100)), pick(['en (en)', 'default', '']), pick(VALUES)]];
  if (rnd(4) === 0) sheets.external_choices = [['list_name', 'name', 'label', 'k'], ['e1', 'a', 'A', '1']];
  if (rnd(4) === 0) sheets.entities = [['list_name', 'label', 'entity_id', 'create_if'], ['ds', pick(VALUES), rnd(2) ? pick(VALUES) : '', rnd(2) ? pick(VALUES) : '']];
  return sheets;
}

describe('random XLSForms', () => {
  test('400 forms: each converts to an XForm parseForm accepts, or fails with an XlsFormError', () => {
    let converted = 0;
    let refused = 0;
    for (let i = 0; i < 400; i++) {
      const sheets = randomForm(i);
      let result;
      try {
        result = convertXlsForm(workbook(sheets), { formIdFallback: 'fuzz' });
      } catch (e) {
        if (!(e instanceof XlsFormError)) throw new Error(`form ${i} threw ${(e as Error).stack}\n${JSON.stringify(sheets)}`);
        expect(e.message, `form ${i}`).not.toMatch(/undefined|TypeError|Cannot read/);
        refused++;
        continue;
      }
      expect(() => parseForm(new TextEncoder().encode(result.xml)), `form ${i}: ${JSON.stringify(sheets)}`).not.toThrow();
      converted++;
    }
    // Both paths are exercised.
    expect(converted).toBeGreaterThan(20);
    expect(refused).toBeGreaterThan(20);
  });
});
