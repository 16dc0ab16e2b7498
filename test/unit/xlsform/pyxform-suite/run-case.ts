/**
 * Issue 19: runs one case of pyxform's own test suite (cases.json, written by extract.py) against
 * lib/xlsform, checking the expectations as pyxform's `assertPyxformXform` checks them
 * (shared/reference/pyxform-tests/pyxform_test_case.py):
 * - the workbook is built in memory from the case's sheets (markdown tables already parsed, every
 *   cell a string as pyxform's markdown reader gives it), converted with form name `test_name`
 *   (or the case's `name`) and form id `data` when the settings sheet has none, as pyxform's
 *   `convert(md, form_name=…)` does;
 * - the XForm is re-serialised the way pyxform's test base sees it (pretty printed, two spaces per
 *   level, text-bearing elements inline, attributes sorted by `{uri}name`), re-parsed, and the
 *   XPaths are evaluated on that document with the `xpath` library (namespaces x, h, jr, odk, …);
 * - substring checks run on the same serialisation (`" />"` read as `"/>"`), on the whole form, the
 *   model, the primary instance or the itext;
 * - errors are the XlsFormError message; warnings are joined by newlines.
 * Test-only.
 */
import * as XLSX from '@e965/xlsx';
import { DOMParser } from '@xmldom/xmldom';
import * as xpath from 'xpath';
import { convertXlsForm, XlsFormError } from '../../../../lib/xlsform';
import { NS } from '../../../helpers/xlsform-sheets';

type Cell = string | number | boolean | null | { $date: string };
export interface Case {
  id: string;
  module: string;
  test: string;
  subtest: string | null;
  runnable: boolean;
  reason: string | null;
  md?: string;
  sheets?: [string, Cell[][]][];
  expect: Expect;
  expectAssertionFailure?: boolean;
}
export interface Expect {
  xml__xpath_match?: string[];
  xml__xpath_exact?: [string, string[]][];
  xml__xpath_count?: [string, number][];
  xml__contains?: string[];
  xml__excludes?: string[];
  model__contains?: string[];
  model__excludes?: string[];
  itext__contains?: string[];
  itext__excludes?: string[];
  instance__contains?: string[];
  error__contains?: string[];
  error__not_contains?: string[];
  warnings__contains?: string[];
  warnings__not_contains?: string[];
  warnings_count?: number;
  errored?: boolean;
  name?: string;
}

const { '': defaultNs, ...prefixed } = NS;
const XFORMS = defaultNs!;
/** pyxform's NSMAP: the test helpers' prefixes, with `x` for the default (XForms) namespace. */
const NSMAP: Record<string, string> = { x: XFORMS, ...prefixed };

/** Builds the workbook (.xlsx bytes) from the case's sheets. */
export function caseWorkbook(sheets: [string, Cell[][]][]): Uint8Array {
  const wb = XLSX.utils.book_new();
  // A sheet named twice keeps its first place and its last rows, as pyxform's markdown reader does.
  const merged = new Map<string, Cell[][]>();
  for (const [name, rows] of sheets) merged.set(name, rows);
  for (const [name, rows] of merged) {
    const aoa = rows.map((r) => r.map((c) => (c !== null && typeof c === 'object' ? new Date(c.$date) : c)));
    XLSX.utils.book_append_sheet(wb, XLSX.utils.aoa_to_sheet(aoa), name);
  }
  return new Uint8Array(XLSX.write(wb, { type: 'array', bookType: 'xlsx' }) as ArrayBuffer);
}

const escText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escAttr = (s: string) =>
  escText(s).replace(/"/g, '&quot;').replace(/\n/g, '&#10;').replace(/\r/g, '&#13;').replace(/\t/g, '&#9;');

/** `{uri}local` as lxml keys attributes (no-namespace attributes by their local name). */
const attrKey = (a: Attr) => (a.namespaceURI ? `{${a.namespaceURI}}${a.localName}` : a.localName ?? a.name);

/**
 * Serialises an element as pyxform's pretty printer lays it out and lxml writes it back:
 * children on their own lines indented two spaces per level below `depth`, an element holding any
 * non-blank text written inline, empty elements as `<x/>`, attributes sorted. Namespace
 * declarations only when `withNs` (the document root).
 */
export function pretty(el: Element, depth: number, withNs: boolean): string {
  const attrs = Array.from(el.attributes as unknown as Attr[]);
  const decls = attrs.filter((a) => a.name === 'xmlns' || a.name.startsWith('xmlns:'));
  const plainAttrs = attrs.filter((a) => !(a.name === 'xmlns' || a.name.startsWith('xmlns:')));
  plainAttrs.sort((a, b) => (attrKey(a) < attrKey(b) ? -1 : attrKey(a) > attrKey(b) ? 1 : 0));
  const attrText = [...(withNs ? decls : []), ...plainAttrs].map((a) => ` ${a.name}="${escAttr(a.value)}"`).join('');
  const kids = Array.from(el.childNodes as unknown as Node[]);
  if (kids.length === 0) return `<${el.tagName}${attrText}/>`;
  const hasText = kids.some((k) => (k.nodeType === 3 || k.nodeType === 4) && /\S/.test(k.nodeValue ?? ''));
  if (hasText) return `<${el.tagName}${attrText}>${kids.map(inline).join('')}</${el.tagName}>`;
  const elems = kids.filter((k) => k.nodeType === 1) as Element[];
  if (elems.length === 0) return `<${el.tagName}${attrText}/>`;
  const pad = '  '.repeat(depth + 1);
  const inner = elems.map((k) => `\n${pad}${pretty(k, depth + 1, false)}`).join('');
  return `<${el.tagName}${attrText}>${inner}\n${'  '.repeat(depth)}</${el.tagName}>`;
}

function inline(n: Node): string {
  if (n.nodeType === 3 || n.nodeType === 4) return escText(n.nodeValue ?? '');
  if (n.nodeType !== 1) return '';
  const el = n as Element;
  const attrs = Array.from(el.attributes as unknown as Attr[]).filter((a) => !(a.name === 'xmlns' || a.name.startsWith('xmlns:')));
  attrs.sort((a, b) => (attrKey(a) < attrKey(b) ? -1 : attrKey(a) > attrKey(b) ? 1 : 0));
  const attrText = attrs.map((a) => ` ${a.name}="${escAttr(a.value)}"`).join('');
  const kids = Array.from(el.childNodes as unknown as Node[]);
  if (kids.length === 0) return `<${el.tagName}${attrText}/>`;
  return `<${el.tagName}${attrText}>${kids.map(inline).join('')}</${el.tagName}>`;
}

function depthOf(el: Element): number {
  let d = 0;
  for (let p = el.parentNode; p && p.nodeType === 1; p = p.parentNode) d++;
  return d;
}

const parser = () => new DOMParser({ onError: (level, msg) => { if (level !== 'warning') throw new Error(msg); } });

/** The outcome of one case: the failed checks (empty when every expectation held). */
export interface Outcome {
  failures: string[];
  xml?: string;
  error?: string;
  warnings: string[];
}

const short = (s: string, n = 160) => (s.length > n ? `${s.slice(0, n)}…` : s).replace(/\s+/g, ' ').trim();

/** Runs one runnable case; never throws (a crash of the converter is a failure). */
export function runCase(c: Case): Outcome {
  const e = c.expect;
  const failures: string[] = [];
  // pyxform's test base refuses a bare string where a list of texts is expected.
  for (const key of ['error__contains', 'error__not_contains', 'warnings__contains', 'warnings__not_contains'] as const) {
    if (typeof e[key] === 'string') return { failures: [`${key} is a string but should be a list of strings`], warnings: [] };
  }
  let xml: string | undefined;
  let error: string | undefined;
  let warnings: string[] = [];
  let bytes: Uint8Array;
  try {
    bytes = caseWorkbook(c.sheets ?? []);
  } catch (err) {
    return { failures: [`workbook: ${(err as Error).message}`], warnings };
  }
  try {
    const r = convertXlsForm(bytes, { formIdFallback: 'data', formName: e.name ?? 'test_name' });
    xml = r.xml;
    warnings = r.warnings;
  } catch (err) {
    if (err instanceof XlsFormError) {
      error = err.message;
      warnings = err.warnings;
    } else {
      return { failures: [`crash: ${(err as Error).stack?.split('\n').slice(0, 3).join(' ') ?? String(err)}`], warnings };
    }
  }
  if (error !== undefined && !e.errored) failures.push(`conversion failed: ${short(error)}`);
  if (error === undefined && e.errored) failures.push('conversion succeeded; an error was expected');

  if (xml !== undefined && !e.errored) {
    let doc: Document;
    let serial: string;
    try {
      const first = parser().parseFromString(xml, 'text/xml');
      serial = pretty(first.documentElement as unknown as Element, 0, true);
      doc = parser().parseFromString(serial, 'text/xml') as unknown as Document;
    } catch (err) {
      failures.push(`XForm not well-formed: ${(err as Error).message}`);
      return { failures, xml, error, warnings };
    }
    const root = doc.documentElement as unknown as Element;
    const content = serial.replace(/ \/>/g, '/>');
    const firstNamed = (local: string): string => {
      const found = doc.getElementsByTagNameNS(XFORMS, local)[0] as unknown as Element | undefined;
      return found ? pretty(found, depthOf(found), false) : '';
    };
    const sub: Record<string, () => string> = {
      xml: () => content,
      model: () => firstNamed('model'),
      instance: () => firstNamed('instance'),
      itext: () => firstNamed('itext'),
    };
    const contains = (key: string, list: string[] | undefined, want: boolean) => {
      if (!list) return;
      const text = sub[key]!();
      for (const s of list) if (text.includes(s) !== want) failures.push(`${key}__${want ? 'contains' : 'excludes'}: ${short(s)}`);
    };
    contains('xml', e.xml__contains, true);
    contains('xml', e.xml__excludes, false);
    contains('instance', e.instance__contains, true);
    contains('model', e.model__contains, true);
    contains('model', e.model__excludes, false);
    contains('itext', e.itext__contains, true);
    contains('itext', e.itext__excludes, false);

    const select = xpath.useNamespaces(NSMAP);
    const evaluate = (expr: string): unknown[] | string => {
      try {
        const r = select(expr, root as unknown as Node);
        return Array.isArray(r) ? r : [r];
      } catch (err) {
        return `XPath error: ${(err as Error).message}`;
      }
    };
    for (const [expr, want] of e.xml__xpath_exact ?? []) {
      const r = evaluate(expr);
      if (typeof r === 'string') {
        failures.push(`xpath_exact ${short(expr)}: ${r}`);
        continue;
      }
      const seen = new Set(
        r.map((n) => {
          if (n && typeof n === 'object' && 'nodeType' in n) {
            const node = n as Node;
            if (node.nodeType === 1) return pretty(node as Element, depthOf(node as Element), false).trim();
            return node.nodeValue ?? '';
          }
          return String(n);
        }),
      );
      const wanted = new Set(want);
      const same = seen.size === wanted.size && [...seen].every((s) => wanted.has(s));
      if (!same) failures.push(`xpath_exact ${short(expr)}: got ${short(JSON.stringify([...seen]), 300)}`);
    }
    const counts: [string, number][] = [...(e.xml__xpath_count ?? []), ...(e.xml__xpath_match ?? []).map((x) => [x, 1] as [string, number])];
    for (const [expr, want] of counts) {
      const r = evaluate(expr);
      if (typeof r === 'string') failures.push(`xpath ${short(expr)}: ${r}`);
      else if (r.length !== want) failures.push(`xpath ${short(expr)}: ${r.length} matches, ${want} expected`);
    }
  }
  const errText = error ?? '';
  for (const s of e.error__contains ?? []) if (!errText.includes(s)) failures.push(`error__contains: ${short(s)} (got: ${short(errText)})`);
  for (const s of e.error__not_contains ?? []) if (errText.includes(s)) failures.push(`error__not_contains: ${short(s)}`);
  const warnText = warnings.join('\n');
  for (const s of e.warnings__contains ?? []) if (!warnText.includes(s)) failures.push(`warnings__contains: ${short(s)}`);
  for (const s of e.warnings__not_contains ?? []) if (warnText.includes(s)) failures.push(`warnings__not_contains: ${short(s)}`);
  if (e.warnings_count !== undefined && warnings.length !== e.warnings_count) {
    failures.push(`warnings_count: ${warnings.length}, ${e.warnings_count} expected (${short(warnText)})`);
  }
  return { failures, xml, error, warnings };
}
