/**
 * The Workers build's zxcvbn (lib/users/zxcvbn.ts): the frequency lists parsed from the text of
 * zxcvbn's own `lib/frequency_lists.js` (what the users Worker serves as a static asset) are
 * exactly the lists the package evaluates on Node, name by name and in order, so a Worker gives the
 * same password verdicts as Node and Central.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, test } from 'vitest';
import { parseFrequencyLists } from '../../lib/users/zxcvbn';

const require = createRequire(import.meta.url);

describe('zxcvbn frequency lists from the static asset', () => {
  test('parsed text equals the evaluated module', () => {
    const text = readFileSync(require.resolve('zxcvbn/lib/frequency_lists.js'), 'utf8');
    const evaluated = require('zxcvbn/lib/frequency_lists.js') as Record<string, string[]>;
    const parsed = parseFrequencyLists(text);
    expect(Object.keys(parsed)).toEqual(Object.keys(evaluated));
    for (const name of Object.keys(evaluated)) expect(parsed[name], name).toEqual(evaluated[name]);
  });

  test('a file that is not zxcvbn\'s lists is refused', () => {
    expect(() => parseFrequencyLists('module.exports = {};')).toThrow(/no passwords list/);
  });
});
