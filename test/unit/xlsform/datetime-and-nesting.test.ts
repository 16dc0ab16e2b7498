/**
 * Two cases issue 19 saw fail on real sheets: a version from a date-time cell keeps its
 * milliseconds as Python prints them (openpyxl rounds to the millisecond; str() shows
 * microseconds), and a repeat nested inside a group gets its jr:template copy.
 */
import { describe, expect, test } from 'vitest';
import { convertXlsForm } from '../../../lib/xlsform';
import { workbook } from '../../helpers/xlsform-sheets';

const survey = [['type', 'name', 'label'], ['text', 'q', 'Q']];
const dataTag = (xml: string) => /<data [^>]*>/.exec(xml)![0];

describe('cell text as pyxform reads it', () => {
  test('a date-time version with milliseconds keeps them (.678000); without, none', () => {
    const withMs = convertXlsForm(workbook({ survey, settings: [['form_id', 'version'], ['probe', new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678))]] }));
    expect(dataTag(withMs.xml)).toContain('version="2024-01-02 03:04:05.678000"');
    const whole = convertXlsForm(workbook({ survey, settings: [['form_id', 'version'], ['probe', new Date(Date.UTC(2024, 0, 2, 3, 4, 5))]] }));
    expect(dataTag(whole.xml)).toContain('version="2024-01-02 03:04:05"');
  });
});

describe('repeats inside groups', () => {
  test('the repeat has its jr:template copy and its first instance, inside the group', () => {
    const out = convertXlsForm(workbook({
      survey: [['type', 'name', 'label'], ['begin group', 'g', 'G'], ['begin repeat', 'r', 'R'], ['text', 'q', 'Q'], ['end repeat', '', ''], ['end group', '', '']],
      settings: [['form_id'], ['nested']],
    }));
    expect(out.xml).toMatch(/<g><r jr:template=""><q\/><\/r><r><q\/><\/r><\/g>/);
    expect(out.xml).toMatch(/<repeat nodeset="\/data\/g\/r"/);
  });
});
