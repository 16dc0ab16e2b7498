/**
 * XForm equivalence for tests (issue 7): two XForms are equivalent when they have the same elements
 * (namespace URI + local name), the same attributes (a set of namespace URI + local name = exact
 * value), the same namespace declarations on each element, and the same text, in the same order,
 * except where order is irrelevant: what pyxform's own comparison lets vary
 * (pyxform tests/xform_test_case/base.py `sort_model` + FormEncode `xml_compare`):
 * - the children of `<model>` are a multiset (binds, instances, itext, submission, setvalue…);
 * - the `<translation>`s of `<itext>` are a multiset, and so are the `<text>`s of each translation
 *   (keyed by `id`) and the `<value>`s of each text (keyed by `form`);
 * - the children of an `<item>` inside a secondary `<instance id="…">` (name, label, filter columns)
 *   are a multiset; the items themselves stay ordered (choice order is meaningful).
 * Body order, instance order and everything else must match.
 *
 * Text: whitespace-only text in element content (an element whose text is all whitespace and that has
 * element children: pretty-printing) is ignored; any other text is compared exactly, per text node,
 * in mixed content too (`<label>Age <output value="…"/> years</label>`). With `{ text: 'trim' }`
 * every text node is trimmed and empty ones dropped: FormEncode's `xml_compare`, the comparison
 * pyxform applies to its hand-maintained, pretty-printed expected outputs.
 *
 * Parsing is saxes with namespaces; DOCTYPEs are refused (so no entity is ever expanded); comments
 * and processing instructions are ignored. Pure; test-only.
 */
import { SaxesParser, type SaxesTagNS } from 'saxes';

const XFORMS = 'http://www.w3.org/2002/xforms';
const XMLNS = 'http://www.w3.org/2000/xmlns/';

export interface EquivalenceOptions {
  /** 'exact' (default): text compared exactly. 'trim': every text node trimmed (pyxform's xml_compare). */
  text?: 'exact' | 'trim';
}

interface Elem {
  kind: 'el';
  /** Qualified name as written. */
  name: string;
  uri: string;
  local: string;
  /** `{uri}local` → value (namespace declarations excluded). */
  attrs: Map<string, { name: string; value: string }>;
  /** Declared prefix ('' for the default namespace) → URI. */
  decls: Map<string, string>;
  children: Node[];
  parent: Elem | null;
  line: number;
  /** Whether the order of this element's children is irrelevant (set after parsing). */
  unordered: boolean;
  /** Memoised canonical form. */
  canon?: string;
}

interface Text {
  kind: 'text';
  value: string;
}

type Node = Elem | Text;

const keyOf = (uri: string, local: string) => (uri ? `{${uri}}${local}` : local);

/** Parses XML into the comparison tree; throws an Error with a readable reason when not well formed. */
function parse(xml: string, mode: 'exact' | 'trim'): Elem {
  const parser = new SaxesParser({ xmlns: true, position: true });
  const stack: Elem[] = [];
  let root: Elem | null = null;
  parser.on('error', (err: Error) => {
    throw err;
  });
  parser.on('doctype', () => {
    throw new Error(`${parser.line}:${parser.column}: DOCTYPE declarations are not allowed`);
  });
  parser.on('opentag', (tag: SaxesTagNS) => {
    const attrs = new Map<string, { name: string; value: string }>();
    const decls = new Map<string, string>();
    for (const a of Object.values(tag.attributes)) {
      if (a.name === 'xmlns') decls.set('', a.value);
      else if (a.prefix === 'xmlns' || a.uri === XMLNS) decls.set(a.local, a.value);
      else attrs.set(keyOf(a.uri, a.local), { name: a.name, value: a.value });
    }
    const parent = stack[stack.length - 1] ?? null;
    const el: Elem = {
      kind: 'el', name: tag.name, uri: tag.uri, local: tag.local, attrs, decls, children: [], parent, line: parser.line, unordered: false,
    };
    if (parent) parent.children.push(el);
    else root = el;
    stack.push(el);
  });
  parser.on('closetag', () => {
    stack.pop();
  });
  const onText = (t: string) => {
    const top = stack[stack.length - 1];
    if (!top) return; // whitespace around the root element
    const last = top.children[top.children.length - 1];
    if (last?.kind === 'text') last.value += t;
    else top.children.push({ kind: 'text', value: t });
  };
  parser.on('text', onText);
  parser.on('cdata', onText);
  parser.write(xml).close();
  if (!root) throw new Error('no root element');
  normalise(root, mode);
  return root;
}

/** Applies the whitespace rules and marks the unordered contexts. */
function normalise(el: Elem, mode: 'exact' | 'trim'): void {
  const hasElements = el.children.some((c) => c.kind === 'el');
  const allBlank = el.children.every((c) => c.kind === 'el' || c.value.trim() === '');
  el.children = el.children.flatMap((c): Node[] => {
    if (c.kind === 'el') return [c];
    if (mode === 'trim') {
      const v = c.value.trim();
      return v === '' ? [] : [{ kind: 'text', value: v }];
    }
    return hasElements && allBlank ? [] : [c];
  });
  const p = el.parent;
  const isX = (e: Elem | null, local: string) => e !== null && e.uri === XFORMS && e.local === local;
  el.unordered =
    isX(el, 'model') ||
    (isX(el, 'itext') && isX(p, 'model')) ||
    (isX(el, 'translation') && isX(p, 'itext')) ||
    (isX(el, 'text') && isX(p, 'translation')) ||
    (el.local === 'item' && insideSecondaryInstance(el));
  for (const c of el.children) if (c.kind === 'el') normalise(c, mode);
}

function insideSecondaryInstance(el: Elem): boolean {
  for (let a = el.parent; a; a = a.parent) {
    if (a.uri === XFORMS && a.local === 'instance') return a.attrs.has('id') && a.parent?.local === 'model';
  }
  return false;
}

// ─────────────────────────────────────────────────────────────────────────────
// Canonical forms and display.

const sortedEntries = <V>(m: Map<string, V>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** A string equal for two subtrees exactly when they are equivalent. */
function canonical(n: Node): string {
  if (n.kind === 'text') return `T${JSON.stringify(n.value)}`;
  if (n.canon !== undefined) return n.canon;
  const attrs = sortedEntries(n.attrs).map(([k, v]) => `${k}=${JSON.stringify(v.value)}`).join(' ');
  const decls = [...new Set(sortedEntries(n.decls).map(([k, v]) => (k === '' ? `xmlns=${JSON.stringify(v)}` : `ns:${JSON.stringify(v)}`)))].sort().join(' ');
  const kids = n.children.map(canonical);
  if (n.unordered) kids.sort();
  n.canon = `<${keyOf(n.uri, n.local)} ${attrs} ${decls}>${kids.join('')}</>`;
  return n.canon;
}

const escapeAttr = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/\n/g, '&#10;');
const escapeText = (v: string) => v.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** A compact XML rendering of a subtree for messages, cut at `max` characters. */
function show(n: Node, max = 240): string {
  const out: string[] = [];
  let len = 0;
  const emit = (s: string) => {
    out.push(s);
    len += s.length;
  };
  const walk = (x: Node) => {
    if (len > max) return;
    if (x.kind === 'text') return emit(escapeText(x.value));
    const attrs = [...x.attrs.values()].map((a) => ` ${a.name}="${escapeAttr(a.value)}"`).join('');
    if (x.children.length === 0) return emit(`<${x.name}${attrs}/>`);
    emit(`<${x.name}${attrs}>`);
    for (const c of x.children) walk(c);
    emit(`</${x.name}>`);
  };
  walk(n);
  const s = out.join('');
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

const quote = (s: string, max = 200) => JSON.stringify(s.length > max ? `${s.slice(0, max)}…` : s);

/** A node for messages: an element as compact XML, text quoted. */
const describe = (n: Node, max = 240) => (n.kind === 'text' ? `text ${quote(n.value, max)}` : show(n, max));

/** The attribute that identifies an element among its siblings, for paths and pairing. */
const ID_ATTRS = ['id', 'nodeset', 'ref', 'lang', 'form', 'name'];
function idAttr(el: Elem): [string, string] | null {
  for (const k of ID_ATTRS) {
    const a = el.attrs.get(k);
    if (a !== undefined) return [k, a.value];
  }
  return null;
}

/** Identity for pairing siblings: name plus the identifying attribute (or, for `<item>`s' children, nothing). */
function identity(n: Node): string {
  if (n.kind === 'text') return '#text';
  const id = idAttr(n);
  return `${keyOf(n.uri, n.local)}${id ? `[@${id[0]}=${JSON.stringify(id[1])}]` : ''}`;
}

/** A path step for `el` among `siblings`. */
function step(el: Elem, siblings: Node[]): string {
  const id = idAttr(el);
  if (id) return `${el.name}[@${id[0]}=${JSON.stringify(id[1])}]`;
  const same = siblings.filter((s) => s.kind === 'el' && s.uri === el.uri && s.local === el.local && idAttr(s) === null);
  return same.length > 1 ? `${el.name}[${same.indexOf(el) + 1}]` : el.name;
}

// ─────────────────────────────────────────────────────────────────────────────
// Comparison.

function compareElements(e: Elem, a: Elem, path: string, out: string[]): void {
  if (e.uri !== a.uri || e.local !== a.local) {
    out.push(`${path}: element name: expected ${keyOf(e.uri, e.local)}, actual ${keyOf(a.uri, a.local)} (line ${a.line})`);
    return;
  }
  for (const [k, ev] of sortedEntries(e.attrs)) {
    const av = a.attrs.get(k);
    if (av === undefined) out.push(`${path}: missing attribute ${ev.name}=${quote(ev.value)}`);
    else if (av.value !== ev.value) out.push(`${path}: attribute ${ev.name}: expected ${quote(ev.value)}, actual ${quote(av.value)}`);
  }
  for (const [k, av] of sortedEntries(a.attrs)) {
    if (!e.attrs.has(k)) out.push(`${path}: unexpected attribute ${av.name}=${quote(av.value)}`);
  }
  // Namespace declarations: the default namespace, and the set of URIs bound to a prefix (which
  // prefix does not matter: names are compared by URI).
  const eDefault = e.decls.get('');
  const aDefault = a.decls.get('');
  if (eDefault !== aDefault) {
    out.push(`${path}: default namespace declaration: expected ${eDefault === undefined ? 'none' : quote(eDefault)}, actual ${aDefault === undefined ? 'none' : quote(aDefault)}`);
  }
  const prefixed = (d: Map<string, string>) => new Map(sortedEntries(d).filter(([p]) => p !== '').map(([p, uri]) => [uri, p]));
  const eUris = prefixed(e.decls);
  const aUris = prefixed(a.decls);
  for (const [uri, p] of eUris) if (!aUris.has(uri)) out.push(`${path}: missing namespace declaration xmlns:${p}=${quote(uri)}`);
  for (const [uri, p] of aUris) if (!eUris.has(uri)) out.push(`${path}: unexpected namespace declaration xmlns:${p}=${quote(uri)}`);
  if (e.unordered) compareUnordered(e.children, a.children, path, out);
  else compareOrdered(e.children, a.children, path, out);
}

/** Compares two nodes that were paired (same identity). */
function compareNodes(e: Node, a: Node, path: string, eSiblings: Node[], out: string[]): void {
  if (e.kind === 'text' && a.kind === 'text') {
    if (e.value !== a.value) out.push(`${path}: text: expected ${quote(e.value)}, actual ${quote(a.value)}`);
    return;
  }
  if (e.kind === 'el' && a.kind === 'el') {
    compareElements(e, a, `${path}/${step(e, eSiblings)}`, out);
    return;
  }
  out.push(`${path}: expected ${describe(e)}, actual ${describe(a)}`);
}

/** Multiset comparison: exact matches first, then pairs by identity, then what is left over. */
function compareUnordered(eKids: Node[], aKids: Node[], path: string, out: string[]): void {
  const pool = new Map<string, number[]>();
  aKids.forEach((a, i) => {
    const k = canonical(a);
    const list = pool.get(k);
    if (list) list.push(i);
    else pool.set(k, [i]);
  });
  const usedA = new Set<number>();
  const restE: Node[] = [];
  for (const e of eKids) {
    const hit = pool.get(canonical(e))?.shift();
    if (hit === undefined) restE.push(e);
    else usedA.add(hit);
  }
  const restA = aKids.filter((_, i) => !usedA.has(i));
  const byId = new Map<string, Node[]>();
  for (const a of restA) {
    const k = identity(a);
    const list = byId.get(k);
    if (list) list.push(a);
    else byId.set(k, [a]);
  }
  const pairedA = new Set<Node>();
  for (const e of restE) {
    const a = byId.get(identity(e))?.shift();
    if (a === undefined) {
      out.push(`${path}: missing ${describe(e)}`);
      continue;
    }
    pairedA.add(a);
    compareNodes(e, a, path, eKids, out);
  }
  for (const a of restA) {
    if (!pairedA.has(a)) out.push(`${path}: unexpected ${describe(a)}${a.kind === 'el' ? ` (line ${a.line})` : ''}`);
  }
}

/**
 * Ordered comparison: aligns the two child lists on identity (longest common subsequence), compares
 * aligned pairs, and reports the rest as missing / unexpected, or as moved when an element of the
 * same identity sits elsewhere.
 */
function compareOrdered(eKids: Node[], aKids: Node[], path: string, out: string[]): void {
  const n = eKids.length;
  const m = aKids.length;
  if (n === m && eKids.every((e, i) => identity(e) === identity(aKids[i]!))) {
    for (let i = 0; i < n; i++) compareNodes(eKids[i]!, aKids[i]!, path, eKids, out);
    return;
  }
  const eIds = eKids.map(identity);
  const aIds = aKids.map(identity);
  // LCS table (children lists are at most a few thousand long in any XForm).
  const w = m + 1;
  const lcs = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * w + j] = eIds[i] === aIds[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!);
    }
  }
  const missing: number[] = [];
  const extra: number[] = [];
  const pairs: [number, number][] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (eIds[i] === aIds[j]) pairs.push([i++, j++]);
    else if (lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!) missing.push(i++);
    else extra.push(j++);
  }
  while (i < n) missing.push(i++);
  while (j < m) extra.push(j++);
  // An element missing here but present elsewhere with the same identity has moved.
  const extraById = new Map<string, number[]>();
  for (const x of extra) {
    const list = extraById.get(aIds[x]!);
    if (list) list.push(x);
    else extraById.set(aIds[x]!, [x]);
  }
  const moved = new Set<number>();
  for (const x of missing) {
    const e = eKids[x]!;
    const y = extraById.get(eIds[x]!)?.shift();
    if (y !== undefined) {
      moved.add(y);
      out.push(`${path}: ${describe(e, 120)} is child ${y + 1}, expected as child ${x + 1} (order differs)`);
      compareNodes(e, aKids[y]!, path, eKids, out);
    } else {
      out.push(`${path}: missing ${describe(e)} (expected as child ${x + 1})`);
    }
  }
  for (const y of extra) {
    if (moved.has(y)) continue;
    const a = aKids[y]!;
    out.push(`${path}: unexpected ${describe(a)}${a.kind === 'el' ? ` (line ${a.line})` : ''} (actual child ${y + 1})`);
  }
  for (const [x, y] of pairs) compareNodes(eKids[x]!, aKids[y]!, path, eKids, out);
}

/**
 * Compares two XForms for equivalence (rules in the module comment).
 * @param expected the reference XForm text (e.g. pyxform's output).
 * @param actual the XForm under test.
 * @param opts `{ text: 'trim' }` to trim every text node (pyxform's xml_compare), default exact.
 * @returns human-readable differences, each prefixed with the element path where it occurs
 *   (`/h:html/h:head/model/bind[@nodeset="/data/age"]: attribute type: expected "int", actual
 *   "string"`); an empty list when the documents are equivalent. A document that is not well formed
 *   gives one difference naming the side and the parser's reason. Pure; throws nothing.
 */
export function xformDifferences(expected: string, actual: string, opts: EquivalenceOptions = {}): string[] {
  const mode = opts.text ?? 'exact';
  let e: Elem;
  let a: Elem;
  try {
    e = parse(expected, mode);
  } catch (err) {
    return [`expected: not well-formed XML: ${(err as Error).message}`];
  }
  try {
    a = parse(actual, mode);
  } catch (err) {
    return [`actual: not well-formed XML: ${(err as Error).message}`];
  }
  const out: string[] = [];
  compareElements(e, a, `/${e.name}`, out);
  return out;
}
