import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { diffSubmissionXml } from '../../../lib/xforms/diff-submissions';
import { parseForm } from '../../../lib/xforms/parse-form';
import { parseSubmission } from '../../../lib/xforms/parse-submission';
import type { FormField } from '../../../lib/xforms/types';
import { MAX_XML_DEPTH } from '../../../lib/xforms/xml-tree';
import { problemOf } from '../../helpers/problems';

const SHARED = fileURLToPath(new URL('../../../../shared/fixtures/', import.meta.url));
const readText = (...parts: string[]) => readFileSync(join(SHARED, ...parts), 'utf8');
const fieldsOf = (form: string): FormField[] => parseForm(readFileSync(join(SHARED, 'forms', form))).fields;

const withrepeatFields = fieldsOf('withrepeat.xml');
const nestedFields = fieldsOf('nestedGroup.xml');
const rtwo = readText('submissions', 'withrepeat.two.xml');
const nestedOne = readText('submissions', 'nestedGroup.one.xml');

/** Replaces exactly one occurrence (so a typo in a test fails loudly instead of diffing identical XML). */
function edit(xml: string, from: string, to: string): string {
  expect(xml.split(from).length, `"${from}" occurs once`).toBe(2);
  return xml.replace(from, to);
}

describe("Central's captured diff (withrepeat, rtwo → rtwo-edit1)", () => {
  const expected = JSON.parse(readText('central-outputs', 'withrepeat', 'api', 'submission-diffs.json')) as Record<string, unknown>;
  const current = readText('central-outputs', 'withrepeat', 'api', 'submission-current.xml');

  test('the inputs are the versions the fixture describes', () => {
    expect(parseSubmission(rtwo).instanceId).toBe('rtwo');
    expect(parseSubmission(current)).toMatchObject({ instanceId: 'rtwo-edit1', deprecatedId: 'rtwo' });
    expect(Object.keys(expected)).toEqual(['rtwo-edit1']);
  });

  test('reproduces the JSON exactly, key order included', () => {
    const diff = diffSubmissionXml(rtwo, current, withrepeatFields);
    expect(JSON.stringify(diff)).toBe(JSON.stringify(expected['rtwo-edit1']));
    // The points the spec calls out.
    expect(diff[0]).toEqual({ old: 'rtwo', new: 'rtwo-edit1', path: ['meta', 'instanceID'] });
    expect(diff[1]).toEqual({ new: 'rtwo', path: ['meta', 'deprecatedID'] });
    expect(diff[4]).toEqual({ new: { name: 'Bella', age: '1' }, path: ['children', ['child', 2]] });
  });

  test('bytes in, same result', () => {
    const enc = new TextEncoder();
    const diff = diffSubmissionXml(enc.encode(rtwo), enc.encode(current), withrepeatFields);
    expect(JSON.stringify({ 'rtwo-edit1': diff })).toBe(JSON.stringify(expected));
  });

  test('the reverse diff mirrors it (removals carry old only)', () => {
    expect(diffSubmissionXml(current, rtwo, withrepeatFields)).toEqual([
      { old: 'rtwo', path: ['meta', 'deprecatedID'] },
      { old: 'rtwo-edit1', new: 'rtwo', path: ['meta', 'instanceID'] },
      { old: '35', new: '34', path: ['age'] },
      { old: '7', new: '6', path: ['children', ['child', 1], 'age'] },
      { old: { name: 'Bella', age: '1' }, path: ['children', ['child', 2]] },
    ]);
  });
});

describe('diffSubmissionXml', () => {
  test('identical XML → []', () => {
    expect(diffSubmissionXml(rtwo, rtwo, withrepeatFields)).toEqual([]);
    expect(diffSubmissionXml(nestedOne, nestedOne, nestedFields)).toEqual([]);
  });

  test('formatting and attributes do not count, text does (exactly, untrimmed)', () => {
    const pretty = rtwo.replace('<name>Bob</name>', '\n  <name extra="1">Bob</name>\n  ').replace('version="1.0"', 'version="2.0"');
    expect(diffSubmissionXml(rtwo, pretty, withrepeatFields)).toEqual([]);
    expect(diffSubmissionXml(rtwo, edit(rtwo, '<name>Bob</name>', '<name>Bob </name>'), withrepeatFields)).toEqual([
      { old: 'Bob', new: 'Bob ', path: ['name'] },
    ]);
  });

  test('a removed leaf gives old only, at its place in the older version', () => {
    const newer = edit(rtwo, '<age>34</age>', '');
    expect(diffSubmissionXml(rtwo, newer, withrepeatFields)).toEqual([{ old: '34', path: ['age'] }]);
    // Removed before a change that follows it in document order.
    const both = edit(edit(rtwo, '<name>Bob</name>', ''), '<age>34</age>', '<age>36</age>');
    expect(JSON.stringify(diffSubmissionXml(rtwo, both, withrepeatFields))).toBe(
      JSON.stringify([
        { old: 'Bob', path: ['name'] },
        { old: '34', new: '36', path: ['age'] },
      ]),
    );
  });

  test('an added leaf gives new only; an emptied leaf compares with ""', () => {
    expect(diffSubmissionXml(edit(rtwo, '<age>34</age>', ''), rtwo, withrepeatFields)).toEqual([{ new: '34', path: ['age'] }]);
    expect(diffSubmissionXml(rtwo, edit(rtwo, '<age>34</age>', '<age/>'), withrepeatFields)).toEqual([
      { old: '34', new: '', path: ['age'] },
    ]);
  });

  test('a removed repeat instance is reported once, with its subtree', () => {
    const newer = edit(rtwo, '<child><name>Blaine</name><age>6</age></child>', '');
    expect(diffSubmissionXml(rtwo, newer, withrepeatFields)).toEqual([
      { old: { name: 'Blaine', age: '6' }, path: ['children', ['child', 1]] },
    ]);
  });

  test('instances are compared by position: removing the first shows as changes then a removal', () => {
    const newer = edit(rtwo, '<child><name>Billy</name><age>4</age></child>', '');
    expect(diffSubmissionXml(rtwo, newer, withrepeatFields)).toEqual([
      { old: 'Billy', new: 'Blaine', path: ['children', ['child', 0], 'name'] },
      { old: '4', new: '6', path: ['children', ['child', 0], 'age'] },
      { old: { name: 'Blaine', age: '6' }, path: ['children', ['child', 1]] },
    ]);
  });

  test('a single repeat instance is still indexed, and is an array inside an added group', () => {
    const one = edit(rtwo, '<child><name>Blaine</name><age>6</age></child>', '');
    expect(diffSubmissionXml(one, edit(one, '<age>4</age>', '<age>5</age>'), withrepeatFields)).toEqual([
      { old: '4', new: '5', path: ['children', ['child', 0], 'age'] },
    ]);
    const noChildren = edit(rtwo, /<children>.*<\/children>/.exec(rtwo)?.[0] as string, '');
    expect(diffSubmissionXml(noChildren, one, withrepeatFields)).toEqual([
      { new: { child: [{ name: 'Billy', age: '4' }] }, path: ['children'] },
    ]);
    expect(diffSubmissionXml(rtwo, noChildren, withrepeatFields)).toEqual([
      {
        old: {
          child: [
            { name: 'Billy', age: '4' },
            { name: 'Blaine', age: '6' },
          ],
        },
        path: ['children'],
      },
    ]);
  });

  test('a changed value inside a nested group (nestedGroup.one)', () => {
    const newer = edit(nestedOne, '<have_hiv_medication>Yes</have_hiv_medication>', '<have_hiv_medication>No</have_hiv_medication>');
    expect(JSON.stringify(diffSubmissionXml(nestedOne, newer, nestedFields))).toBe(
      JSON.stringify([{ old: 'Yes', new: 'No', path: ['hospital', 'hiv_medication', 'have_hiv_medication'] }]),
    );
  });

  test('a removed nested group is reported once; an emptied one reads as {} by the fields', () => {
    const group = /<hiv_medication>[\s\S]*<\/hiv_medication>/.exec(nestedOne)?.[0] as string;
    expect(diffSubmissionXml(nestedOne, edit(nestedOne, group, ''), nestedFields)).toEqual([
      { old: { have_hiv_medication: 'Yes' }, path: ['hospital', 'hiv_medication'] },
    ]);
    // `<hiv_medication/>` is a group per the form, so its child shows as removed below it.
    expect(diffSubmissionXml(nestedOne, edit(nestedOne, group, '<hiv_medication/>'), nestedFields)).toEqual([
      { old: 'Yes', path: ['hospital', 'hiv_medication', 'have_hiv_medication'] },
    ]);
    // Without fields the empty element is a leaf, so the change is group → ''.
    expect(diffSubmissionXml(nestedOne, edit(nestedOne, group, '<hiv_medication/>'), [])).toEqual([
      { old: { have_hiv_medication: 'Yes' }, new: '', path: ['hospital', 'hiv_medication'] },
    ]);
  });

  test('prefixes are stripped: names compare and report by local name', () => {
    const older = '<h:data xmlns:h="urn:x" id="f"><orx:meta><orx:instanceID>a</orx:instanceID></orx:meta><h:g><h:v>1</h:v></h:g></h:data>';
    const same = '<data id="f"><meta><instanceID>a</instanceID></meta><x:g><v>1</v></x:g></data>';
    expect(diffSubmissionXml(older, same, [])).toEqual([]);
    const changed = '<data id="f"><meta><instanceID>b</instanceID><orx:deprecatedID>a</orx:deprecatedID></meta><g><v>2</v></g></data>';
    expect(diffSubmissionXml(older, changed, [])).toEqual([
      { old: 'a', new: 'b', path: ['meta', 'instanceID'] },
      { new: 'a', path: ['meta', 'deprecatedID'] },
      { old: '1', new: '2', path: ['g', 'v'] },
    ]);
  });

  test('without fields, a name occurring several times is indexed and added as an array', () => {
    const older = '<data id="f"><r><v>1</v></r></data>';
    const newer = '<data id="f"><r><v>1</v></r><r><v>2</v></r><g><l>x</l><l>y</l></g></data>';
    expect(diffSubmissionXml(older, newer, [])).toEqual([
      { new: { v: '2' }, path: [['r', 1]] },
      { new: { l: ['x', 'y'] }, path: ['g'] },
    ]);
  });

  test('a leaf in one version and a group in the other is one change', () => {
    const older = '<data id="f"><g>text</g></data>';
    const newer = '<data id="f"><g><a>1</a></g></data>';
    expect(diffSubmissionXml(older, newer, [])).toEqual([{ old: 'text', new: { a: '1' }, path: ['g'] }]);
  });

  test('an element named __proto__ becomes an own key, not a prototype', () => {
    const diff = diffSubmissionXml('<data id="f"/>', '<data id="f"><g><__proto__>x</__proto__></g></data>', []);
    expect(JSON.stringify(diff)).toBe('[{"new":{"__proto__":"x"},"path":["g"]}]');
    expect(Object.getPrototypeOf(diff[0]?.new)).toBe(Object.prototype);
  });

  test('deep documents do not overflow the call stack (deeper than MAX_XML_DEPTH: 400.1)', () => {
    const depth = MAX_XML_DEPTH - 2;
    const deep = (v: string) => `<data id="f">${'<a>'.repeat(depth)}${v}${'</a>'.repeat(depth)}</data>`;
    const diff = diffSubmissionXml(deep('<v>1</v>'), deep('<v>2</v>'), []);
    expect(diff).toHaveLength(1);
    expect(diff[0]?.path).toHaveLength(depth + 1);
    expect(diffSubmissionXml('<data id="f"/>', deep(''), [])).toHaveLength(1);
    const tooDeep = `<data id="f">${'<a>'.repeat(50_000)}${'</a>'.repeat(50_000)}</data>`;
    problemOf(() => diffSubmissionXml('<data id="f"/>', tooDeep, []), 400.1);
  });

  test('a DOCTYPE in either input → 400.1 (never expanded)', () => {
    const doctype = '<!DOCTYPE data [<!ENTITY x "boom">]>\n<data id="f"><v>&x;</v></data>';
    for (const [older, newer] of [
      [doctype, rtwo],
      [rtwo, doctype],
    ] as const) {
      const p = problemOf(() => diffSubmissionXml(older, newer, withrepeatFields), 400.1);
      expect(p.details).toMatchObject({ format: 'submission xml', line: 1, column: 1, reason: 'DOCTYPE declarations are not allowed' });
    }
  });

  test('malformed XML → 400.1; no form id → 400.2', () => {
    problemOf(() => diffSubmissionXml(rtwo, '<data id="f"><v>1</data>', []), 400.1);
    problemOf(() => diffSubmissionXml('<data><v>1</v></data>', rtwo, []), 400.2);
  });
});
