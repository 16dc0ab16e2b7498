import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { escapeBareAmpersands, fastTree, saxesTree, type El, type TreeOptions } from '../../../lib/xforms/xml-tree';

/** Every .xml file under a directory (fixtures of forms and submissions). */
function xmlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...xmlFiles(p));
    else if (name.endsWith('.xml')) out.push(p);
  }
  return out;
}

const here = new URL('.', import.meta.url).pathname;
const files = [...xmlFiles(join(here, '../../fixtures')), ...xmlFiles(join(here, '../../../../shared/fixtures'))];
const docs = files.map((f) => escapeBareAmpersands(readFileSync(f, 'utf8').replace(/^\uFEFF/, '')).text);

/** The saxes reading: a tree, or the failure's reason and offset. */
const slow = (text: string, options: TreeOptions): El | string => {
  try {
    return saxesTree(text, options);
  } catch (e) {
    return `failed: ${(e as Error).message}`;
  }
};

/** A tree as plain data (attrs are null-prototype objects in both readings). */
const plain = (el: El): unknown => ({ name: el.name, local: el.local, attrs: { ...el.attrs }, text: el.text, children: el.children.map(plain) });

/** fastTree either declines or returns exactly saxes' tree (never accepting what saxes refuses). */
function agrees(text: string, options: TreeOptions): void {
  const fast = fastTree(text, options);
  if (fast === null) return;
  const reference = slow(text, options);
  expect(typeof reference === 'string' ? reference : plain(reference), text).toEqual(plain(fast));
  expect(Object.getPrototypeOf(fast.attrs)).toBe(null);
}

describe('fastTree', () => {
  it('reads the plain fixtures (submissions, most forms) itself, as saxes does', () => {
    expect(docs.length).toBeGreaterThan(100);
    let taken = 0;
    for (const text of docs) {
      for (const options of [{}, { closeByLocalName: true }]) agrees(text, options);
      if (fastTree(text) !== null) taken += 1;
    }
    // The soak submission template and most fixtures take the fast path.
    expect(taken).toBeGreaterThan(docs.length / 2);
    const soak = readFileSync(join(here, '../../../../shared/fixtures/forms/central-e2e/soak/250q-submission.template.xml'), 'utf8');
    expect(fastTree(soak)).not.toBeNull();
  });

  it('declines or agrees on every one-character edit of the fixtures (seeded)', () => {
    let seed = 21;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const pieces = ['<', '>', '/', '&', '&amp;', '&#65;', '&lt;', '"', "'", '=', ' ', ':', '\r', '\t', '\n', ']]>', '!', '?', '-', 'a', '1', 'é', '\u0001', '\ud800', '<!-- c -->', '<![CDATA[x]]>', '<?pi x?>', '<a/>', '</a>', 'x="1"'];
    const small = docs.filter((d) => d.length < 20_000);
    let checked = 0;
    for (let round = 0; round < 4000; round += 1) {
      const doc = small[rand(small.length)]!;
      const at = rand(doc.length + 1);
      const kind = rand(3);
      const piece = pieces[rand(pieces.length)]!;
      const edited = kind === 0 ? doc.slice(0, at) + piece + doc.slice(at)
        : kind === 1 ? doc.slice(0, at) + doc.slice(at + 1 + rand(3))
          : doc.slice(0, at) + piece + doc.slice(at + 1);
      agrees(edited, round % 2 === 0 ? {} : { closeByLocalName: true });
      checked += 1;
    }
    expect(checked).toBe(4000);
  });

  it('agrees on hand-made edge cases', () => {
    const cases = [
      '<a/>', '<a></a>', '  <a x="1" y=\'2\'>t</a>', '<?xml version="1.0"?><a/>', "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<a/>",
      '<?xml version="1.1"?><a/>', '<a x="1"y="2"/>', '<a x="1" x="2"/>', '<a>&amp;&lt;&gt;&quot;&apos;</a>', '<a>x</a>trailing<', '<a><b></a></b>',
      '<a><b/>t1<c>v</c>t2</a>', '<x:a><m></x:m></x:a>', '<a><orx:meta></meta></a>', '<a:b:c/>', '<a x = "1" >v</a >', 'text<a/>', '<a>', '<a x="<"/>',
      '<a x="&amp;"/>', '<a x="1\t2"/>', '<a constructor="1"/>', '<a>]]></a>', '<a>v\r\n</a>', '\n\n<a/>', '<a/><b/>', '<a><b/></a><!-- after -->',
    ];
    for (const text of cases) for (const options of [{}, { closeByLocalName: true }]) agrees(text, options);
    expect(fastTree('<a><orx:meta></meta></a>', { closeByLocalName: true })).not.toBeNull();
    expect(fastTree('<a><orx:meta></meta></a>')).toBeNull();
  });
});
