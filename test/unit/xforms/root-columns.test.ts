import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseForm } from '../../../lib/xforms/parse-form';
import { parseSubmission, rootColumnsOf, rootTextOf, rootValuesOf } from '../../../lib/xforms/parse-submission';
import type { FormField, SubmissionValue } from '../../../lib/xforms/types';

const soak = new URL('../../../../shared/fixtures/forms/central-e2e/soak/', import.meta.url);

/** rootColumnsOf must give exactly what ingestion stored before: JSON.stringify(rootValuesOf) and rootTextOf. */
const same = (values: SubmissionValue[], fields: FormField[]) => {
  const root = rootValuesOf(values);
  expect(rootColumnsOf(values, fields)).toEqual({ json: JSON.stringify(root), text: rootTextOf(values, fields, root) });
};

describe('rootColumnsOf', () => {
  it('equals rootValuesOf + rootTextOf on the soak submission', () => {
    const { fields } = parseForm(readFileSync(new URL('250q-form.xml', soak), 'utf8'));
    const xml = readFileSync(new URL('250q-submission.template.xml', soak), 'utf8')
      .replace(/\{\{uuid\}\}/g, 'uuid:6b2b3c9e-0d1a-4b8e-9f00-000000000001').replace(/\{\{randInt\}\}/g, '42');
    same(parseSubmission(xml, fields).values, fields);
  });

  it('escapes as JSON.stringify, keeps first occurrences, skips repeats, keeps paths the fields lack', () => {
    const fields: FormField[] = [
      { path: '/a', name: 'a', type: 'string', binary: null },
      { path: '/g', name: 'g', type: 'structure', binary: null },
      { path: '/g/b', name: 'b', type: 'string', binary: null },
      { path: '/r', name: 'r', type: 'repeat', binary: null },
      { path: '/r/c', name: 'c', type: 'string', binary: null },
      { path: '/a', name: 'a', type: 'string', binary: null },
      { path: '/missing', name: 'missing', type: 'int', binary: null },
    ] as FormField[];
    const v = (path: string, value: string, repeatIndex: number[] = []): SubmissionValue => ({ path, value, repeatIndex });
    same([
      v('/a', 'quote " backslash \\ tab \t newline \n nul \u0000 é 😀'), v('/g/b', ''), v('/r/c', 'in a repeat', [1]),
      v('/a', 'second'), v('/extra', '"x"'), v('/extra', 'again'), v('/g/b', 'later'), v('/lone', '\ud800'),
    ], fields);
    same([], fields);
    same([v('/r/c', 'x', [1])], fields);
  });
});
