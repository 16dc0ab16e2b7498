/**
 * The XML readers against hostile input (issue 18): nesting deep enough to overflow a recursive
 * walker, DTDs (external entities, entity expansion), and inputs that made the pre-parse scans
 * quadratic or exponential. Every one must be a Problem (a 4xx), quickly; never a stack overflow.
 */
import { describe, expect, test } from 'vitest';
import { diffSubmissionXml } from '../../../lib/xforms/diff-submissions';
import { parseForm } from '../../../lib/xforms/parse-form';
import { parseSubmission, readSubmission } from '../../../lib/xforms/parse-submission';
import { escapeBareAmpersands, MAX_XML_DEPTH } from '../../../lib/xforms/xml-tree';
import { problemOf } from '../../helpers/problems';

/** A form whose instance nests `depth` groups under the root (each a real group in the body too). */
function nestedForm(depth: number): string {
  return `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml">
  <h:head><h:title>Deep</h:title><model><instance><data id="deep">${'<g>'.repeat(depth)}<q/>${'</g>'.repeat(depth)}<meta><instanceID/></meta></data></instance>
  </model></h:head><h:body/></h:html>`;
}

const nestedSubmission = (depth: number) =>
  `<data id="deep"><meta><instanceID>uuid:deep</instanceID></meta>${'<g>'.repeat(depth)}x${'</g>'.repeat(depth)}</data>`;

describe('element nesting is bounded', () => {
  test('a form nested 200,000 deep: 400.1 naming the limit, not a stack overflow', () => {
    const p = problemOf(() => parseForm(nestedForm(200_000)), 400.1);
    expect(p.message).toContain(`nested more than ${MAX_XML_DEPTH} deep`);
  });

  test('a submission nested 200,000 deep: 400.1 (read, parsed and diffed alike)', () => {
    const xml = nestedSubmission(200_000);
    expect(problemOf(() => readSubmission(xml), 400.1).message).toContain('nested more than');
    problemOf(() => parseSubmission(xml), 400.1);
    problemOf(() => diffSubmissionXml(nestedSubmission(1), xml, []), 400.1);
  });

  test('nesting within the limit still parses', () => {
    const depth = MAX_XML_DEPTH - 10;
    const form = parseForm(nestedForm(depth));
    expect(form.xmlFormId).toBe('deep');
    expect(form.fields.find((f) => f.type !== 'structure')?.path).toBe(`${'/g'.repeat(depth)}/q`);
    expect(parseSubmission(nestedSubmission(depth)).instanceId).toBe('uuid:deep');
  });
});

describe('no DTD is ever read, so no entity is ever expanded', () => {
  const xxe = (root: string) =>
    `<?xml version="1.0"?><!DOCTYPE data [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${root}`;
  const laughs = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">${Array.from({ length: 9 }, (_, i) =>
    `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`).join('')}]>`;

  test('external entities (XXE) in a form or a submission: 400.1 DOCTYPE refused', () => {
    const form = nestedForm(1).replace('<?xml version="1.0"?>', '').replace('<q/>', '<q>&xxe;</q>');
    for (const run of [
      () => parseForm(xxe(form)),
      () => readSubmission(xxe('<data id="x"><q>&xxe;</q></data>')),
    ]) {
      const p = problemOf(run, 400.1);
      expect(p.message).toContain('DOCTYPE declarations are not allowed');
      expect(p.message).not.toContain('root:');
    }
  });

  test('billion laughs: refused at once, whatever the entity would expand to', () => {
    const started = Date.now();
    problemOf(() => readSubmission(`${laughs}<data id="x"><q>&lol9;</q></data>`), 400.1);
    problemOf(() => parseForm(`${laughs}${nestedForm(1).replace('<?xml version="1.0"?>', '').replace('<q/>', '<q>&lol9;</q>')}`), 400.1);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test('an undeclared entity reference without a DTD stays literal text', () => {
    const parsed = parseSubmission('<data id="x"><meta><instanceID>uuid:e</instanceID></meta><q>&xxe; &lol9;</q></data>');
    expect(parsed.values.find((v) => v.path === '/q')?.value).toBe('&xxe; &lol9;');
  });
});

describe('pre-parse scans stay linear', () => {
  test('a million unclosed comments or CDATA openings before a bare ampersand', () => {
    const started = Date.now();
    escapeBareAmpersands(`<a>${'<!--'.repeat(1_000_000)}&`);
    escapeBareAmpersands(`<a>${'<![CDATA['.repeat(1_000_000)}&`);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test('bare ampersands are still escaped as before (text, attributes; not in comments or CDATA)', () => {
    expect(escapeBareAmpersands('<a b="x&y">P & T &amp; &#12; &#x1F; &nbsp;<!-- & --><![CDATA[ & ]]>&</a>').text)
      .toBe('<a b="x&amp;y">P &amp; T &amp; &#12; &#x1F; &amp;nbsp;<!-- & --><![CDATA[ & ]]>&amp;</a>');
  });

  test('a prolog of 100,000 processing instructions (the comma-tolerant retry): 400.2 at once', () => {
    const started = Date.now();
    problemOf(() => readSubmission(`${'<?a?>'.repeat(100_000)}!`), 400.2);
    expect(Date.now() - started).toBeLessThan(5000);
    // The retry still takes commas between the root's attributes after a prolog.
    expect(readSubmission('<?xml version="1.0"?><!-- c --> <data id="x", version="3"><a/></data>').version).toBe('3');
  });
});
