/**
 * Test helpers for the XLSForm converter (issue 7): build a small workbook in memory with SheetJS,
 * and read the produced XForm into a tiny namespace-aware DOM (saxes) to assert on elements and
 * attributes by namespace URI rather than by prefix. Test-only.
 */
import * as XLSX from '@e965/xlsx';
import { SaxesParser, type SaxesTagNS } from 'saxes';

/** One sheet: the header row first, then the data rows; null leaves a cell blank; a Date is a date-time cell. */
export type Rows = (string | number | boolean | Date | null)[][];
/** Sheet name → rows, in workbook order. */
export type Sheets = Record<string, Rows>;

/**
 * Writes the sheets as a workbook.
 * @param bookType 'xlsx' (OOXML zip) or 'xls' (BIFF8).
 * @returns the file bytes.
 */
export function workbook(sheets: Sheets, bookType: 'xlsx' | 'xls' = 'xlsx'): Uint8Array {
  const wb = XLSX.utils.book_new();
  for (const [name, rows] of Object.entries(sheets)) XLSX.utils.book_append_sheet(wb, XLSX.utils.aoa_to_sheet(rows), name);
  return new Uint8Array(XLSX.write(wb, { type: 'array', bookType }) as ArrayBuffer);
}

/** The prefixes the XForms spec and pyxform use, for names in queries (`jr:count`, `odk:rank`). */
export const NS: Record<string, string> = {
  '': 'http://www.w3.org/2002/xforms',
  h: 'http://www.w3.org/1999/xhtml',
  ev: 'http://www.w3.org/2001/xml-events',
  xsd: 'http://www.w3.org/2001/XMLSchema',
  jr: 'http://openrosa.org/javarosa',
  orx: 'http://openrosa.org/xforms',
  odk: 'http://www.opendatakit.org/xforms',
  entities: 'http://www.opendatakit.org/xforms/entities',
  esri: 'http://esri.com/xforms',
};

export interface XEl {
  uri: string;
  local: string;
  /** The qualified name as written. */
  name: string;
  /** `{uri}local` (or `local` when not namespaced) → value; namespace declarations excluded. */
  attrs: Map<string, string>;
  /** Declared prefix ('' for the default namespace) → URI. */
  decls: Map<string, string>;
  children: XEl[];
  /** This element's own text nodes, concatenated. */
  text: string;
  parent: XEl | null;
}

/** Parses well-formed XML (no DOCTYPE) into an XEl tree; throws on malformed input. */
export function parseXml(xml: string): XEl {
  const parser = new SaxesParser({ xmlns: true });
  const stack: XEl[] = [];
  let root: XEl | null = null;
  parser.on('error', (e: Error) => {
    throw e;
  });
  parser.on('doctype', () => {
    throw new Error('DOCTYPE not allowed');
  });
  parser.on('opentag', (tag: SaxesTagNS) => {
    const attrs = new Map<string, string>();
    const decls = new Map<string, string>();
    for (const a of Object.values(tag.attributes)) {
      if (a.name === 'xmlns') decls.set('', a.value);
      else if (a.prefix === 'xmlns') decls.set(a.local, a.value);
      else attrs.set(a.uri ? `{${a.uri}}${a.local}` : a.local, a.value);
    }
    const parent = stack[stack.length - 1] ?? null;
    const el: XEl = { uri: tag.uri, local: tag.local, name: tag.name, attrs, decls, children: [], text: '', parent };
    if (parent) parent.children.push(el);
    else root = el;
    stack.push(el);
  });
  parser.on('closetag', () => void stack.pop());
  parser.on('text', (t: string) => {
    const top = stack[stack.length - 1];
    if (top) top.text += t;
  });
  parser.write(xml).close();
  if (!root) throw new Error('no root element');
  return root;
}

/** `prefix:local` → `{uri}local`; an unprefixed element name is in the XForms namespace. */
function elementKey(q: string): string {
  const [p, l] = q.includes(':') ? (q.split(':') as [string, string]) : ['', q];
  const uri = NS[p];
  if (uri === undefined) throw new Error(`unknown prefix ${p}`);
  return `{${uri}}${l}`;
}

/** `prefix:local` → attribute key; an unprefixed attribute is in no namespace. */
function attrKey(q: string): string {
  if (!q.includes(':')) return q;
  const [p, l] = q.split(':') as [string, string];
  const uri = NS[p];
  if (uri === undefined) throw new Error(`unknown prefix ${p}`);
  return `{${uri}}${l}`;
}

/** An attribute by qualified name (`ref`, `jr:count`), or undefined. */
export const attr = (el: XEl, q: string): string | undefined => el.attrs.get(attrKey(q));

/** Whether `el` is the element `q` (`bind`, `odk:rank`, `h:body`). */
export const is = (el: XEl, q: string): boolean => `{${el.uri}}${el.local}` === elementKey(q);

/** Every descendant of `el` (not `el` itself), in document order. */
export function descendants(el: XEl): XEl[] {
  const out: XEl[] = [];
  const walk = (e: XEl) => {
    for (const c of e.children) {
      out.push(c);
      walk(c);
    }
  };
  walk(el);
  return out;
}

/** Descendants named `q` whose attributes include every `where` pair (attribute names qualified). */
export function findAll(el: XEl, q: string, where: Record<string, string> = {}): XEl[] {
  return descendants(el).filter((d) => is(d, q) && Object.entries(where).every(([k, v]) => attr(d, k) === v));
}

/** The first such descendant, or undefined. */
export const find = (el: XEl, q: string, where: Record<string, string> = {}): XEl | undefined => findAll(el, q, where)[0];

/** Direct children named `q`. */
export const childrenNamed = (el: XEl, q: string): XEl[] => el.children.filter((c) => is(c, q));

/** All text below `el`, concatenated. */
export const textContent = (el: XEl): string => el.text + el.children.map(textContent).join('');
