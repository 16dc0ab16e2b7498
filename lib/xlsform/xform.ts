/**
 * Survey tree → XForm XML text, in the shape pyxform 4.5 writes (pretty_print=False). Pure.
 * Reference: shared/reference/ (ODK XForms spec, entities), xlsform-spec.md.
 */
import { walk, yesNo, type ChoiceList, type Element, type EntityDecl, type Survey } from './build';
import type { Text } from './sheets';
import { questionType } from './types-table';
import { XlsFormError } from './types';

const escText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escAttr = (s: string) => escText(s).replace(/"/g, '&quot;');
const attrs = (a: Array<[string, string | undefined]>) =>
  a.filter(([, v]) => v !== undefined).map(([k, v]) => ` ${k}="${escAttr(v!)}"`).join('');

const rowAt = (n: number) => `[row : ${n}]`;
const REF = /\$\{(last-saved#)?([^}]*)\}/g;
const MEDIA_PREFIX: Record<string, string> = { image: 'jr://images/', 'big-image': 'jr://images/', audio: 'jr://audio/', video: 'jr://video/' };

function nearestRepeat(el: Element | undefined): Element | null {
  for (let p = el; p; p = p.parent) if (p.kind === 'repeat') return p;
  return null;
}

interface Ctx {
  survey: Survey;
  /** Translations: language → text id → values (form, xml text). */
  itext: Map<string, Map<string, Array<{ form?: string; xml: string }>>>;
  instances: Map<string, string>;
  binds: string[];
  meta: Element;
  /** Container → its entity element (the survey root's goes in the top meta). */
  entityXml: Map<Element, string>;
}

/** A context for resolving references: a path and, for relative paths, the element chain. */
interface RefContext {
  path: string;
  el: Element;
  column: string;
  row: number;
  useCurrent?: boolean;
  /** The sheet the expression comes from, for messages ('survey' unless said). */
  sheet?: string;
}

/** Replaces `${name}` with the node's path, as pyxform does (absolute, or relative inside a shared repeat). */
function resolve(ctx: Ctx, expr: string, where: RefContext, asOutput = false): string {
  const absoluteOnly = /indexed-repeat\s*\(/.test(expr);
  const inPredicate = where.useCurrent ? null : predicatesAfterInstance(expr);
  return expr.replace(REF, (_m, lastSaved: string | undefined, rawName: string, offset: number) => {
    const name = rawName.trim();
    const targets = ctx.survey.byName.get(name);
    if (!targets || targets.length === 0) {
      throw new XlsFormError(
        `${rowAt(where.row)} On the '${where.sheet ?? 'survey'}' sheet, the '${where.column}' value is invalid. Reference variables must contain a name from the 'survey' sheet. Could not find the name '${name}'.`,
      );
    }
    if (targets.length > 1) {
      throw new XlsFormError(
        `${rowAt(where.row)} On the 'survey' sheet, the '${where.column}' value is invalid. Reference variables names must be unique anywhere in the 'survey'. The name '${name}' appears more than once.`,
      );
    }
    const target = targets[0]!;
    let path: string;
    if (lastSaved) {
      ctx.survey.usesLastSaved = true;
      path = ` instance('__last-saved')${target.path} `;
    } else {
      const here = inPredicate?.[offset] ? { ...where, useCurrent: true } : where;
      path = ` ${relativeOrAbsolute(target, here, absoluteOnly)} `;
    }
    return asOutput ? `<output value="${escAttr(path)}"/>` : path;
  });
}

/**
 * For each character of an expression, whether it lies in a predicate (`[…]`) that comes after an
 * `instance(` call: pyxform 4.5 writes references there as `current()/…` inside repeats.
 */
function predicatesAfterInstance(expr: string): boolean[] | null {
  const first = expr.search(/instance\s*\(/);
  if (first < 0) return null;
  const out: boolean[] = new Array(expr.length).fill(false);
  let depth = 0;
  let quote: string | null = null;
  for (let i = first; i < expr.length; i++) {
    const ch = expr[i]!;
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') quote = ch;
    else if (ch === '[') depth++;
    else if (ch === ']') depth = Math.max(0, depth - 1);
    out[i] = depth > 0;
  }
  return out;
}

function relativeOrAbsolute(target: Element, where: RefContext, absoluteOnly: boolean): string {
  if (absoluteOnly) return target.path;
  const repeat = nearestRepeat(target.parent);
  if (!repeat) return target.path;
  const ctxParts = where.path.split('/');
  if (!where.path.startsWith(`${repeat.path}/`) && where.path !== repeat.path) return target.path;
  if (where.path === repeat.path) return target.path;
  const tParts = target.path.split('/');
  let common = 0;
  while (common < ctxParts.length && common < tParts.length && ctxParts[common] === tParts[common]) common++;
  const up = ctxParts.length - common;
  const rest = tParts.slice(common).join('/');
  const steps = Array(up).fill('..').join('/');
  const rel = rest ? `${steps}/${rest}` : steps;
  return where.useCurrent ? `current()/${rel}` : rel;
}

/**
 * Text with `${}` turned into `<output/>`, XML-escaped. An instance expression
 * (`instance('list')/root/item[name = ${q}]/label`, pyxform 4.5) becomes one `<output/>` too,
 * its `${}` resolved inside it.
 */
function outputText(ctx: Ctx, text: string, where: RefContext): { xml: string; outputs: boolean } {
  let outputs = false;
  let out = '';
  let last = 0;
  const spans: Array<{ start: number; end: number; instance: boolean }> = [];
  for (const m of text.matchAll(/instance\(\s*(['"])[^'"]*\1\s*\)/g)) {
    if (spans.length && m.index! < spans[spans.length - 1]!.end) continue;
    spans.push({ start: m.index!, end: instanceExpressionEnd(text, m.index! + m[0].length), instance: true });
  }
  for (const m of text.matchAll(REF)) {
    if (spans.some((sp) => sp.instance && m.index! >= sp.start && m.index! < sp.end)) continue;
    spans.push({ start: m.index!, end: m.index! + m[0].length, instance: false });
  }
  spans.sort((a, b) => a.start - b.start);
  for (const sp of spans) {
    out += escText(text.slice(last, sp.start));
    const piece = text.slice(sp.start, sp.end);
    out += sp.instance ? `<output value="${escAttr(escText(resolve(ctx, piece, where)))}"/>` : resolve(ctx, piece, where, true);
    outputs = true;
    last = sp.end;
  }
  out += escText(text.slice(last));
  if (!outputs) return { xml: out, outputs };
  // pyxform writes mixed content with a space before a leading text and after the last child.
  const children = spans.length + (spans[0]!.start > 0 ? 1 : 0) + spans.slice(1).filter((sp, i) => sp.start > spans[i]!.end).length + (last < text.length ? 1 : 0);
  if (children > 1) out = `${spans[0]!.start > 0 ? ' ' : ''}${out} `;
  return { xml: out, outputs };
}

/** Where an instance expression ends: its path steps and bracketed predicates (quotes respected). */
function instanceExpressionEnd(text: string, i: number): number {
  let depth = 0;
  let quote: string | null = null;
  for (; i < text.length; i++) {
    const ch = text[i]!;
    if (quote) {
      if (ch === quote) quote = null;
      continue;
    }
    if (depth > 0) {
      if (ch === "'" || ch === '"') quote = ch;
      else if (ch === '[' || ch === '(') depth++;
      else if (ch === ']' || ch === ')') depth--;
      continue;
    }
    if (ch === '[') depth++;
    else if (!/[A-Za-z0-9_:.\-/@*]/.test(ch)) break;
  }
  // A trailing period ends the sentence, not the path.
  while (i > 0 && text[i - 1] === '.' && !/\.\.$/.test(text.slice(0, i))) i--;
  return i;
}

function addText(ctx: Ctx, lang: string, id: string, xml: string, form?: string): void {
  let l = ctx.itext.get(lang);
  if (!l) {
    l = new Map();
    ctx.itext.set(lang, l);
  }
  const values = l.get(id) ?? [];
  values.push({ form, xml });
  l.set(id, values);
}

function perLanguage(ctx: Ctx, t: Text): Array<[string, string]> {
  return typeof t === 'string' ? [[ctx.survey.settings.defaultLanguage, t]] : [...t];
}

const needsItextLabel = (el: { label?: Text; media: Map<string, Text> }) =>
  (el.label != null && typeof el.label !== 'string') || el.media.size > 0;

/** Registers the label (and media) texts of an element; @returns the body <label>. */
function labelXml(ctx: Ctx, el: Element, where: RefContext): string {
  // pyxform 4.5 writes the table-list header's empty label as one space.
  if (el.emptyLabel) return '<label> </label>';
  if (needsItextLabel(el)) {
    const id = `${el.path}:label`;
    if (el.label != null) for (const [lang, v] of perLanguage(ctx, el.label)) addText(ctx, lang, id, outputText(ctx, v, where).xml);
    for (const [col, t] of el.media) {
      for (const [lang, v] of perLanguage(ctx, t)) addText(ctx, lang, id, escText(`${MEDIA_PREFIX[col]}${v}`), col);
    }
    return `<label ref="jr:itext('${id}')"/>`;
  }
  if (el.label == null) return '';
  const { xml } = outputText(ctx, el.label as string, where);
  return `<label>${xml}</label>`;
}

function hintXml(ctx: Ctx, el: Element, where: RefContext): string {
  let hint = el.hint;
  if (hint == null && el.info && questionType(el.type) && (el.type === 'phone number' || el.type === 'phone')) hint = 'Enter numbers only.';
  if ((hint != null && typeof hint !== 'string') || el.guidance != null) {
    const id = `${el.path}:hint`;
    if (hint != null) for (const [lang, v] of perLanguage(ctx, hint)) addText(ctx, lang, id, outputText(ctx, v, where).xml);
    if (el.guidance != null) for (const [lang, v] of perLanguage(ctx, el.guidance)) addText(ctx, lang, id, outputText(ctx, v, where).xml, 'guidance');
    return `<hint ref="jr:itext('${id}')"/>`;
  }
  if (hint == null) return '';
  const { xml } = outputText(ctx, hint, where);
  return `<hint>${xml}</hint>`;
}

function messageAttr(ctx: Ctx, el: Element, t: Text | undefined, suffix: string): string | undefined {
  if (t == null) return undefined;
  if (typeof t === 'string') return t;
  const id = `${el.path}:${suffix}`;
  const where: RefContext = { path: el.path, el, column: suffix, row: el.row };
  for (const [lang, v] of t) addText(ctx, lang, id, outputText(ctx, v, where).xml);
  return `jr:itext('${id}')`;
}

/**
 * pyxform's default_is_dynamic: a default is an expression (set by a setvalue) when it holds a
 * `${}` reference, a function call, a predicate, a union or an arithmetic operator. Quoted strings
 * and date/time literals do not count; for dates and geo types a `-` does not count either.
 */
/** Whether a default is an expression (pyxform's default_is_dynamic). Pure. */
export function isDynamicDefault(value: string, bindType?: string): boolean {
  const v = value
    .replace(/'[^']*'|"[^"]*"/g, ' ')
    .replace(/\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?)?/g, ' ')
    .replace(/\d{2}:\d{2}(:\d{2}(\.\d+)?)?/g, ' ');
  if (/\$\{|[A-Za-z_][\w.:-]*\s*\(|\[|\||\*|\+|(^|\s)(div|mod)(\s|$)/.test(v)) return true;
  if (bindType && ['date', 'dateTime', 'geopoint', 'geotrace', 'geoshape'].includes(bindType)) return false;
  // A '-' inside a name (`first-name`) is part of it; elsewhere it is subtraction or negation.
  for (const m of v.matchAll(/-/g)) {
    const before = /[\w.:-]*$/.exec(v.slice(0, m.index))![0];
    if (before === '' || /^[\d.]/.test(before)) return true;
  }
  return false;
}
const isDynamic = (el: Element) => el.defaultValue != null && isDynamicDefault(el.defaultValue, el.info?.bind.type);

/** The primary instance element for `el` (with a repeat's template copy). */
/**
 * The primary instance element for `el`. A repeat outside any other repeat is written twice, as its
 * jr:template copy and as one regular copy; inside a template (or a regular copy) a nested repeat
 * is written once, in the same mode, as pyxform does.
 */
type InstanceMode = 'top' | 'template' | 'regular';
function instanceXml(ctx: Ctx, el: Element, mode: InstanceMode): string {
  const where: RefContext = { path: el.path, el, column: 'instance', row: el.row };
  // The template copy carries no instance:: attributes (pyxform).
  const extra = mode === 'template' ? '' : attrs([...el.instanceAttrs].map(([k, v]) => [k, resolve(ctx, v, where)] as [string, string]));
  if (el.kind === 'question') {
    if (el.info?.kind === 'external-instance') return '';
    const dv = el.defaultValue != null && !isDynamic(el) ? el.defaultValue : null;
    return dv != null ? `<${el.name}${extra}>${escText(dv)}</${el.name}>` : `<${el.name}${extra}/>`;
  }
  const entityXml = el !== ctx.survey.root ? ctx.entityXml.get(el) : undefined;
  const ent = entityXml ? `<meta>${entityXml}</meta>` : '';
  const inner = (m: InstanceMode) => el.children.map((c) => instanceXml(ctx, c, m)).join('') + ent;
  if (el.kind === 'repeat') {
    if (mode === 'template') return `<${el.name} jr:template="">${inner('template')}</${el.name}>`;
    if (mode === 'regular') return `<${el.name}${extra}>${inner('regular')}</${el.name}>`;
    return `<${el.name} jr:template="">${inner('template')}</${el.name}><${el.name}${extra}>${inner('regular')}</${el.name}>`;
  }
  return `<${el.name}${extra}>${inner(mode)}</${el.name}>`;
}

function bindXml(nodeset: string, a: Array<[string, string | undefined]>): string {
  return `<bind${attrs([['nodeset', nodeset], ...a])}/>`;
}

/** required / readonly: yes/no words become true() / false(); anything else is an expression. */
const truthy = (v: string | undefined, expr: (x: string) => string) => {
  if (v == null) return undefined;
  const b = yesNo(v);
  return b === true ? 'true()' : b === false ? 'false()' : expr(v);
};

/** Model binds, setvalues and actions for one element; body setvalues are returned for the control. */
function modelFor(ctx: Ctx, el: Element): void {
  const where: RefContext = { path: el.path, el, column: '', row: el.row };
  const col = (c: string) => ({ ...where, column: el.original.get(c) ?? c });
  if (el.kind === 'group' || el.kind === 'repeat') {
    const a: Array<[string, string | undefined]> = [];
    for (const [k, v] of el.bind) {
      const column = k === 'relevant' ? 'relevant' : k === 'readonly' ? 'readonly' : k === 'required' ? 'required' : k;
      a.push([k, k === 'required' || k === 'readonly' ? truthy(v, (x) => resolve(ctx, x, col(column))) : resolve(ctx, v, col(column))]);
    }
    if (a.length > 0) ctx.binds.push(bindXml(el.path, a));
    return;
  }
  const info = el.info!;
  if (info.kind === 'external-instance') {
    ctx.instances.set(el.name, `<instance id="${escAttr(el.name)}" src="${escAttr(info.src!(el.name))}"/>`);
    return;
  }
  const a: Array<[string, string | undefined]> = [];
  const triggered = el.trigger != null;
  for (const [k, v] of Object.entries(info.bind)) a.push([k, v]);
  const set = (k: string, v: string | undefined) => {
    const i = a.findIndex(([x]) => x === k);
    if (i >= 0) a[i] = [k, v];
    else a.push([k, v]);
  };
  for (const [k, v] of el.bind) {
    if (k === 'calculate' && triggered) continue;
    if (k === 'required' || k === 'readonly') set(k, truthy(v, (x) => resolve(ctx, x, col(k))));
    else {
      const column = k === 'calculate' ? 'calculation' : k;
      set(k, resolve(ctx, v, col(column)));
    }
  }
  if (el.constraintMessage != null) set('jr:constraintMsg', messageAttr(ctx, el, el.constraintMessage, 'jr:constraintMsg'));
  if (el.requiredMessage != null) set('jr:requiredMsg', messageAttr(ctx, el, el.requiredMessage, 'jr:requiredMsg'));
  if (el.saveTo) set('entities:saveto', el.saveTo);
  // Parameters that become bind attributes.
  const p = el.parameters;
  if (el.type === 'image' && p.has('max-pixels')) set('orx:max-pixels', p.get('max-pixels'));
  if ((el.type === 'audio') && p.has('quality')) set('odk:quality', p.get('quality'));
  if (el.type === 'audit') {
    for (const k of ['location-priority', 'location-min-interval', 'location-max-age', 'track-changes', 'identify-user', 'track-changes-reasons']) {
      if (p.has(k)) set(`odk:${k}`, p.get(k));
    }
  }
  if (['geopoint', 'geotrace', 'geoshape'].includes(el.type)) {
    for (const k of ['allow-mock-accuracy']) if (p.has(k)) set(`odk:${k}`, p.get(k));
  }
  if (el.range?.decimal) set('type', 'decimal');
  if (info.bind.type !== undefined || a.length > 0) {
    if (a.length > 0) ctx.binds.push(bindXml(el.path, a));
  }
  if (info.action === 'odk:recordaudio') {
    ctx.binds.push(`<odk:recordaudio${attrs([['ref', el.path], ['event', 'odk-instance-load'], ['odk:quality', p.get('quality')]])}/>`);
  }
  if (info.action === 'odk:setgeopoint') {
    ctx.binds.push(`<odk:setgeopoint${attrs([['ref', el.path], ['event', 'odk-instance-first-load']])}/>`);
  }
  if (isDynamic(el)) {
    ctx.binds.push(`<setvalue${attrs([['ref', el.path], ['event', 'odk-instance-first-load'], ['value', resolve(ctx, el.defaultValue!, col('default'))]])}/>`);
  }
  // Secondary instances the expressions need.
  for (const v of el.bind.values()) {
    for (const m of v.matchAll(/pulldata\s*\(\s*['"]([^'"]+)['"]/g)) {
      const id = m[1]!;
      if (!ctx.instances.has(id)) ctx.instances.set(id, `<instance id="${escAttr(id)}" src="${escAttr(`jr://file-csv/${id}.csv`)}"/>`);
    }
  }
}

function itemsetNodeset(ctx: Ctx, el: Element, listId: string): string {
  let base = `instance('${listId}')/root/item`;
  if (el.choiceFilter) {
    const where: RefContext = { path: el.path, el, column: el.original.get('choice_filter') ?? 'choice_filter', row: el.row, useCurrent: true };
    base += `[${resolve(ctx, el.choiceFilter, where)}]`;
  }
  const randomize = yesNo(el.parameters.get('randomize'));
  if (randomize) {
    const seed = el.parameters.get('seed');
    base = seed ? `randomize(${base}, ${resolve(ctx, seed, { path: el.path, el, column: 'parameters', row: el.row }).trim()})` : `randomize(${base})`;
  }
  return base;
}

/** The body XML of one element. */
/**
 * The itemset of a geo question's `reference-geometry` parameter (pyxform 4.5): a repeat named by
 * `${repeat}` (value and label its `geometry` child, rows without one left out), or a secondary
 * instance named by a choices list, an entity list, an xml/csv-external or a select-from-file list
 * (value `name`, label `label`). The question's choice_filter narrows either.
 * @throws XlsFormError SURVEY_006 when the name matches none of those.
 */
function referenceGeometry(ctx: Ctx, el: Element, value: string): string {
  const survey = ctx.survey;
  const refMatch = /^\$\{\s*([^}\s]+)\s*\}$/.exec(value);
  const where = { path: el.path, el, column: el.original.get('choice_filter') ?? 'choice_filter', row: el.row, useCurrent: true };
  if (refMatch) {
    const repeat = survey.byName.get(refMatch[1]!)?.find((x) => x.kind === 'repeat');
    if (repeat) {
      const nodeset = repeat.path;
      const filter = el.choiceFilter
        ? resolve(ctx, el.choiceFilter, where).split(`current()/${nodeset}`).join('.').split(nodeset).join('.')
        : "./geometry != ''";
      return `<itemset nodeset="${escAttr(`${nodeset}[${filter}]`)}"><value ref="geometry"/><label ref="geometry"/></itemset>`;
    }
  }
  const list = survey.lists.get(value);
  const known =
    list != null ||
    (survey.byName.get(value) ?? []).some((x) => x.info?.kind === 'external-instance') ||
    [...walk(survey.root)].some((x) => x.itemsetFile != null && x.listName === value);
  if (!known) {
    throw new XlsFormError(
      `${rowAt(el.row)} On the 'survey' sheet, the 'parameters' value is invalid. The 'reference-geometry' parameter must either match a secondary instance name (a choices list_name, an entities list_name, or the base name of an attached file), or be a reference variable containing the name of a repeat.`,
    );
  }
  let nodeset = `instance('${value}')/root/item`;
  if (el.choiceFilter) nodeset += `[${resolve(ctx, el.choiceFilter, where)}]`;
  const labelRef = list?.itext ? 'jr:itext(itextId)' : 'label';
  return `<itemset nodeset="${escAttr(nodeset)}"><value ref="name"/><label ref="${labelRef}"/></itemset>`;
}

/** A question with neither label nor hint but a calculation or trigger is a model-only field. */
const modelOnly = (el: Element) =>
  el.kind === 'question' && el.label == null && el.hint == null && el.guidance == null && el.media.size === 0 && !el.generated &&
  (el.bind.has('calculate') || el.trigger != null);

/**
 * The question names of a `trigger` cell: one `${name}`, or several separated by commas (spaces
 * and empty items around the commas allowed), as pyxform 4.5 reads it.
 * @throws XlsFormError PYREF_002 when two references are not separated by a comma, PYREF_001 when
 *   an item is not a reference.
 */
function triggerNames(value: string, row: number): string[] {
  const names: string[] = [];
  for (const item of value.split(',')) {
    const t = item.trim();
    if (t === '') continue;
    const refs = [...t.matchAll(/\$\{\s*([^}]*?)\s*\}/g)];
    if (refs.length > 1) {
      throw new XlsFormError(
        `${rowAt(row)} On the 'survey' sheet, the 'trigger' value is invalid. Reference variable lists must have a comma between each variable.`,
      );
    }
    if (refs.length === 0 || t.replace(refs[0]![0], '').trim() !== '') {
      throw new XlsFormError(
        `${rowAt(row)} On the 'survey' sheet, the 'trigger' value is invalid. Reference variables must start with '\${', then a question name, and end with '}'.`,
      );
    }
    names.push(refs[0]![1]!);
  }
  return names;
}

function bodyXml(ctx: Ctx, el: Element, triggers: Map<Element, Element[]>): string {
  const where: RefContext = { path: el.path, el, column: el.original.get('label') ?? 'label', row: el.row };
  if (el.kind === 'group' || el.kind === 'repeat') {
    const label = el.label != null || el.media.size > 0 ? labelXml(ctx, el, where) : '';
    const inner = el.children.map((c) => bodyXml(ctx, c, triggers)).join('');
    const control: Array<[string, string | undefined]> = [];
    for (const [k, v] of el.control) control.push([k, v]);
    if (el.kind === 'group') {
      if (el.path === ctx.meta.path) return '';
      return `<group${attrs([['ref', el.path], ...control])}>${label}${inner}</group>`;
    }
    const count = el.repeatCount;
    const countAttr: Array<[string, string | undefined]> = [];
    if (count != null) {
      const single = /^\s*\$\{[^}]+\}\s*$/.test(count);
      countAttr.push(['jr:count', single ? resolve(ctx, count, { path: el.path, el, column: 'repeat_count', row: el.row }) : ` ${el.path}_count `]);
    }
    const newRepeat = repeatSetvalues(ctx, el);
    return `<group${attrs([['ref', el.path]])}>${label}<repeat${attrs([['nodeset', el.path], ...countAttr, ...control])}>${inner}${newRepeat}</repeat></group>`;
  }
  const info = el.info!;
  if (info.kind === 'model' || info.kind === 'external-instance') return '';
  const tag = info.tag!;
  const control: Array<[string, string | undefined]> = [['ref', el.path]];
  for (const [k, v] of Object.entries(info.control ?? {})) control.push([k, v]);
  for (const [k, v] of el.control) control.push([k, v.includes('${') ? resolve(ctx, v, { ...where, column: k }) : v]);
  const p = el.parameters;
  if (['geopoint', 'geotrace', 'geoshape'].includes(el.type)) {
    if (p.has('capture-accuracy')) control.push(['accuracyThreshold', p.get('capture-accuracy')]);
    if (p.has('warning-accuracy')) control.push(['unacceptableAccuracyThreshold', p.get('warning-accuracy')]);
  }
  if (el.range) control.push(...el.range.attrs);
  if (el.type === 'select one external') {
    control.push(['query', itemsetNodeset(ctx, el, el.listName!)]);
  }
  if (modelOnly(el)) return '';
  if (el.media.has('big-image') && !el.media.has('image')) {
    throw new XlsFormError(`To use big-image, you must also specify an image for the survey element named ${el.name}.`);
  }
  const label = labelXml(ctx, el, where);
  const hint = hintXml(ctx, el, { ...where, column: 'hint' });
  if (((!label && !hint) || (el.label == null && el.hint == null && el.media.size === 0)) && !el.generated && !el.emptyLabel) {
    throw new XlsFormError(`${rowAt(el.row)} The survey element named '${el.name}' has no label or hint.`);
  }
  let items = '';
  const geometry = ['geopoint', 'geotrace', 'geoshape'].includes(el.type) ? el.parameters.get('reference-geometry') : undefined;
  if (geometry != null) items = referenceGeometry(ctx, el, geometry);
  else if (info.kind === 'select' && el.itemsetRef) {
    // pyxform: the nodeset is the repeat holding the question, value and label its answer, and
    // rows without an answer are left out (or the choice_filter is applied relative to the row).
    const path = resolve(ctx, el.itemsetRef, { path: el.path, el, column: 'type', row: el.row }).trim();
    const steps = path.split('/');
    const nodeset = steps.slice(0, -1).join('/');
    const leaf = steps[steps.length - 1]!;
    let filter = el.choiceFilter
      ? resolve(ctx, el.choiceFilter, { path: el.path, el, column: el.original.get('choice_filter') ?? 'choice_filter', row: el.row, useCurrent: true })
          .split(`current()/${nodeset}`).join('.').split(nodeset).join('.')
      : `./${leaf} != ''`;
    filter = `[${filter}]`;
    items = `<itemset nodeset="${escAttr(nodeset + filter)}"><value ref="${escAttr(leaf)}"/><label ref="${escAttr(leaf)}"/></itemset>`;
  } else if (info.kind === 'select' && !el.itemsetFile && /\bsearch\s*\(/.test(el.control.get('appearance') ?? '')) {
    // Collect's search() appearance reads the select's own <item>s, so they are written inline.
    const list = ctx.survey.lists.get(el.listName!)!;
    items = list.choices
      .map((c, i) => {
        const label = list.itext ? `<label ref="jr:itext('${escAttr(`${list.name}-${i}`)}')"/>` : `<label>${escText(typeof c.label === 'string' ? c.label : '')}</label>`;
        return `<item>${label}<value>${escText(c.name)}</value></item>`;
      })
      .join('');
  } else if (info.kind === 'select') {
    let valueRef = 'name';
    let labelRef = 'label';
    if (el.itemsetFile) {
      if (/\.geojson$/i.test(el.itemsetFile)) {
        valueRef = 'id';
        labelRef = 'title';
      }
      valueRef = p.get('value') ?? valueRef;
      labelRef = p.get('label') ?? labelRef;
    } else if (ctx.survey.lists.get(el.listName!)?.itext) {
      labelRef = 'jr:itext(itextId)';
    }
    items = `<itemset nodeset="${escAttr(itemsetNodeset(ctx, el, el.listName!))}"><value ref="${escAttr(valueRef)}"/><label ref="${escAttr(labelRef)}"/></itemset>`;
  }
  if (el.osmTags) items = el.osmTags.map((t) => `<tag${attrs([['key', t.key]])}>${t.label != null ? `<label>${escText(t.label)}</label>` : ''}</tag>`).join('');
  if (el.range?.labelset) {
    const list = ctx.survey.lists.get(el.range.labelset);
    const labelRef = list?.itext ? 'jr:itext(itextId)' : 'label';
    items = `<itemset nodeset="${escAttr(`instance('${el.range.labelset}')/root/item`)}"><value ref="name"/><label ref="${labelRef}"/></itemset>`;
  }
  let setvalues = '';
  for (const target of triggers.get(el) ?? []) {
    if (target.type === 'background-geopoint') {
      setvalues += `<odk:setgeopoint${attrs([['event', 'xforms-value-changed'], ['ref', target.path]])}/>`;
      continue;
    }
    const calc = target.bind.get('calculate');
    const value = calc != null ? resolve(ctx, calc, { path: target.path, el: target, column: 'calculation', row: target.row }) : undefined;
    setvalues += `<setvalue${attrs([['ref', target.path], ['event', 'xforms-value-changed'], ['value', value]])}/>`;
  }
  return `<${tag}${attrs(control)}>${label}${hint}${items}${setvalues}</${tag}>`;
}

/**
 * The `odk-new-repeat` setvalues at the end of a repeat's body (pyxform 4.5): the dynamic defaults
 * of the questions whose nearest repeat it is, in document order, then its entity's new id.
 */
function repeatSetvalues(ctx: Ctx, repeat: Element): string {
  let out = '';
  const visit = (el: Element) => {
    for (const c of el.children) {
      if (c.kind === 'repeat') continue;
      if (c.kind === 'question' && isDynamic(c)) {
        const where: RefContext = { path: c.path, el: c, column: 'default', row: c.row };
        out += `<setvalue${attrs([['ref', c.path], ['event', 'odk-new-repeat'], ['value', resolve(ctx, c.defaultValue!, where)]])}/>`;
      }
      visit(c);
    }
  };
  visit(repeat);
  for (const e of ctx.survey.entities) {
    if (e.entityId || nearestRepeat(e.container) !== repeat) continue;
    out += `<setvalue${attrs([['ref', `${e.container.path}/meta/entity/@id`], ['event', 'odk-new-repeat'], ['value', 'uuid()']])}/>`;
  }
  return out;
}

function choiceInstance(ctx: Ctx, list: ChoiceList): string {
  const items = list.choices.map((c, i) => {
    let inner = '';
    if (list.itext) {
      const id = `${list.name}-${i}`;
      inner += `<itextId>${escText(id)}</itextId>`;
      const where: RefContext = { path: ctx.survey.root.path, el: ctx.survey.root, column: 'label', row: c.row, sheet: 'choices' };
      if (c.label != null) {
        for (const [lang, v] of perLanguage(ctx, c.label)) {
          const column = typeof c.label === 'string' || lang === 'default' ? 'label' : `label::${lang}`;
          addText(ctx, lang, id, outputText(ctx, v, { ...where, column }).xml);
        }
      }
      for (const [col, t] of c.media) {
        for (const [lang, v] of perLanguage(ctx, t)) {
          // A `${}` in a media cell becomes an <output/> after the jr:// prefix (pyxform 4.5).
          const column = typeof t === 'string' || lang === 'default' ? col : `${col}::${lang}`;
          const xml = v.includes('${') ? outputText(ctx, `${MEDIA_PREFIX[col]}${v}`, { ...where, column }).xml : escText(`${MEDIA_PREFIX[col]}${v}`);
          addText(ctx, lang, id, xml, col);
        }
      }
      inner += `<name>${escText(c.name)}</name>`;
    } else {
      inner += `<name>${escText(c.name)}</name>`;
      if (c.label != null) inner += `<label>${escText(c.label as string)}</label>`;
    }
    for (const [k, v] of c.extra) inner += `<${k}>${escText(v)}</${k}>`;
    return `<item>${inner}</item>`;
  });
  return `<instance id="${escAttr(list.name)}"><root>${items.join('')}</root></instance>`;
}

/** Entity declaration: the meta/entity element, its binds and setvalues. */
function entityParts(ctx: Ctx, e: EntityDecl): { element: string } {
  const entityPath = `${e.container.path}/meta/entity`;
  const el = e.container;
  const where = (column: string): RefContext => ({ path: `${entityPath}/label`, el, column, row: e.row, sheet: 'entities' });
  const resolveE = (expr: string, column: string) => resolve(ctx, expr, where(column)).replace(/^(?!\s)/, '');
  const creating = !e.entityId || e.createIf != null;
  const updating = e.entityId != null;
  const a: Array<[string, string | undefined]> = [['dataset', e.dataset]];
  if (creating) a.push(['create', '1']);
  if (updating) a.push(['update', '1'], ['baseVersion', ''], ['trunkVersion', ''], ['branchId', '']);
  a.push(['id', '']);
  if (e.createIf) ctx.binds.push(bindXml(`${entityPath}/@create`, [['calculate', resolveE(e.createIf, 'create_if')], ['readonly', 'true()'], ['type', 'string']]));
  if (e.updateIf) ctx.binds.push(bindXml(`${entityPath}/@update`, [['calculate', resolveE(e.updateIf, 'update_if')], ['readonly', 'true()'], ['type', 'string']]));
  if (updating) {
    const id = resolveE(e.entityId!, 'entity_id');
    // In the instance() predicate a relative reference goes through current() (pyxform 4.5).
    const idInPredicate = resolve(ctx, e.entityId!, { ...where('entity_id'), useCurrent: true }).replace(/^(?!\s)/, '');
    for (const [attr, field] of [['baseVersion', '__version'], ['trunkVersion', '__trunkVersion'], ['branchId', '__branchId']] as const) {
      ctx.binds.push(bindXml(`${entityPath}/@${attr}`, [['calculate', `instance('${e.dataset}')/root/item[name=${idInPredicate}]/${field}`], ['readonly', 'true()'], ['type', 'string']]));
    }
    ctx.binds.push(bindXml(`${entityPath}/@id`, [['readonly', 'true()'], ['type', 'string'], ['calculate', id]]));
  } else {
    ctx.binds.push(bindXml(`${entityPath}/@id`, [['readonly', 'true()'], ['type', 'string']]));
    ctx.binds.push(`<setvalue${attrs([['ref', `${entityPath}/@id`], ['event', 'odk-instance-first-load'], ['value', 'uuid()']])}/>`);
  }
  let label = '';
  if (e.label) {
    ctx.binds.push(bindXml(`${entityPath}/label`, [['calculate', resolveE(e.label, 'label')], ['readonly', 'true()'], ['type', 'string']]));
    label = '<label/>';
  }
  return { element: `<entity${attrs(a)}>${label}</entity>` };
}

/**
 * pyxform 4.5's checks of the secondary instances a form generates, in its order (external files,
 * pulldata() files, select-from-file files in document order, then last-saved, then the choice
 * lists): an xml/csv-external name is used once in the form, and one instance id never stands for
 * two different sources.
 * @throws XlsFormError with pyxform's messages.
 */
function checkInstances(survey: Survey): void {
  const root = survey.root;
  interface Info { name: string; type: string; src: string; context: string }
  const found: Info[] = [];
  const contextOf = (el: Element) => {
    const p = el.parent!;
    return `[type: ${p === root ? 'survey' : p.kind === 'repeat' ? 'repeat' : 'group'}, name: ${p.name}]`;
  };
  for (const el of walk(root)) {
    if (el === root || el.generated) continue;
    for (const v of el.bind.values()) {
      for (const m of v.matchAll(/pulldata\s*\(\s*['"]([^'"]+)['"]/g)) found.push({ name: m[1]!, type: 'pulldata', src: `jr://file-csv/${m[1]}.csv`, context: contextOf(el) });
    }
    if (el.itemsetFile) {
      const src = /\.csv$/i.test(el.itemsetFile) ? `jr://file-csv/${el.itemsetFile}` : `jr://file/${el.itemsetFile}`;
      found.push({ name: el.listName!, type: 'file', src, context: contextOf(el) });
    }
    if (el.info?.kind === 'external-instance') found.push({ name: el.name, type: 'external', src: el.info.src!(el.name), context: contextOf(el) });
  }
  if (survey.usesLastSaved) found.push({ name: '__last-saved', type: 'instance', src: 'jr://instance/last-saved', context: 'None' });
  for (const name of survey.listOrder) found.push({ name, type: 'choice', src: 'None', context: 'survey' });
  const externals = new Map<string, Info[]>();
  for (const i of found.filter((x) => x.type === 'external')) externals.set(i.name, [...(externals.get(i.name) ?? []), i]);
  const duplicates = [...externals].filter(([, copies]) => copies.length > 1);
  if (duplicates.length > 0) {
    throw new XlsFormError(
      duplicates
        .map(([name, copies]) => `Instance names must be unique within a form. The name '${name}' was found ${copies.length} time(s), under these contexts: ${copies.map((x) => `${x.context}(${x.type})`).join(', ')}`)
        .join('\n'),
    );
  }
  const seen = new Map<string, Info>();
  for (const i of found) {
    const prior = seen.get(i.name);
    if (!prior) {
      seen.set(i.name, i);
      continue;
    }
    if (prior.src !== i.src) {
      throw new XlsFormError(
        `The same instance id will be generated for different external instance source URIs. Please check the form. Instance name: '${i.name}', Existing type: '${prior.type}', Existing URI: '${prior.src}', Duplicate type: '${i.type}', Duplicate URI: '${i.src}', Duplicate context: '${i.context}'.`,
      );
    }
  }
}

/**
 * Renders the XForm for a built survey.
 * @returns the XML text (pyxform 4.5's structure, no pretty printing). @throws XlsFormError for
 *   unknown `${}` references and controls with neither label nor hint. Pure.
 */
export function renderXForm(survey: Survey): string {
  const s = survey.settings;
  const root = survey.root;
  // The meta group: audit questions move here; instanceID and instanceName are added.
  const meta: Element = {
    kind: 'group', row: 0, name: 'meta', type: 'begin group', media: new Map(), bind: new Map(), control: new Map(),
    instanceAttrs: new Map(), parameters: new Map(), children: [], path: `${root.path}/meta`, parent: root, original: new Map(), generated: true,
  };
  const audits: Element[] = [];
  for (const el of [...walk(root)]) {
    if (el.info?.meta) {
      const parent = el.parent!;
      parent.children = parent.children.filter((c) => c !== el);
      audits.push(el);
    }
  }
  const mk = (name: string, bind: Record<string, string>): Element => ({
    kind: 'question', row: 0, name, type: 'calculate', info: { kind: 'model', bind }, media: new Map(), bind: new Map(), control: new Map(),
    instanceAttrs: new Map(), parameters: new Map(), children: [], path: `${meta.path}/${name}`, parent: meta, original: new Map(), generated: true,
  });
  for (const a of audits) {
    a.parent = meta;
    a.path = `${meta.path}/${a.name}`;
    meta.children.push(a);
  }
  // omit_instanceID=yes leaves the instanceID out (and the meta group, when nothing else is in it).
  const omitId = yesNo(s.extra.get('omit_instanceid') ?? s.extra.get('omit_instanceID')) === true;
  if (!omitId) meta.children.push(mk('instanceID', { type: 'string', readonly: 'true()', 'jr:preload': 'uid' }));
  if (s.instanceName) {
    const n = mk('instanceName', { type: 'string' });
    n.bind.set('calculate', s.instanceName);
    n.original = new Map([['calculation', 'instance_name']]);
    meta.children.push(n);
  }
  root.children.push(meta);
  const instanceId = meta.children.find((c) => c.name === 'instanceID');
  if (instanceId) survey.byName.set('instanceID', [instanceId]);

  const ctx: Ctx = { survey, itext: new Map(), instances: new Map(), binds: [], meta, entityXml: new Map() };
  // Choice lists first (pyxform's translation order), then the survey's elements.
  const choiceInstances = survey.listOrder.map((n) => choiceInstance(ctx, survey.lists.get(n)!));

  // Select-from-file instances.
  for (const el of walk(root)) {
    if (el.itemsetFile && !ctx.instances.has(el.listName!)) {
      const src = /\.csv$/i.test(el.itemsetFile) ? `jr://file-csv/${el.itemsetFile}` : `jr://file/${el.itemsetFile}`;
      ctx.instances.set(el.listName!, `<instance id="${escAttr(el.listName!)}" src="${escAttr(src)}"/>`);
    }
  }

  // Triggers: source element → targets.
  const triggers = new Map<Element, Element[]>();
  for (const el of walk(root)) {
    if (!el.trigger) continue;
    for (const name of triggerNames(el.trigger, el.row)) {
      const source = survey.byName.get(name)?.[0];
      if (source && (source.info?.kind === 'model' || modelOnly(source))) {
        throw new XlsFormError(
          `The question \${${name}} is not user-visible so it can't be used as a calculation trigger for question \${${el.name}}.`,
        );
      }
      if (!source) {
        throw new XlsFormError(
          `${rowAt(el.row)} On the 'survey' sheet, the 'trigger' value is invalid. Reference variables must contain a name from the 'survey' sheet. Could not find the name '${name}'.`,
        );
      }
      const list = triggers.get(source) ?? [];
      list.push(el);
      triggers.set(source, list);
    }
  }

  // Entities: the meta/entity element, in the repeat or at the top.
  for (const e of survey.entities) ctx.entityXml.set(e.container, entityParts(ctx, e).element);

  for (const el of walk(root)) if (el !== root && el !== meta) modelFor(ctx, el);
  const body = root.children.map((c) => bodyXml(ctx, c, triggers)).join('');

  // Primary instance, with the entity element in its meta.
  let inner = root.children.filter((c) => c !== meta).map((c) => instanceXml(ctx, c, 'top')).join('');
  const metaInner = (ctx.entityXml.get(root) ?? '') + meta.children.map((c) => instanceXml(ctx, c, 'top')).join('');
  if (metaInner) inner += `<meta>${metaInner}</meta>`;
  // SMS compact encoding (pyxform's prefix / delimiter settings) goes on the instance root.
  const rootAttrs = attrs([
    ['id', s.id],
    ['odk:delimiter', s.extra.get('delimiter') ?? s.extra.get('compact_delimiter')],
    ['odk:prefix', s.extra.get('prefix') ?? s.extra.get('compact_prefix')],
    ['version', s.version],
  ]);
  const primary = `<instance><${root.name}${rootAttrs}>${inner}</${root.name}></instance>`;

  if (survey.usesLastSaved) ctx.instances.set('__last-saved', `<instance id="__last-saved" src="jr://instance/last-saved"/>`);

  const itext = renderItext(ctx);
  const clientEditable = yesNo(s.extra.get('client_editable')) === true ? 'true' : undefined;
  const submission =
    s.submissionUrl || s.publicKey || s.autoSend || s.autoDelete || clientEditable
      ? `<submission${attrs([
          ['action', s.submissionUrl],
          ['base64RsaPublicKey', s.publicKey],
          ['method', s.submissionUrl ? 'post' : undefined],
          ['orx:auto-send', s.autoSend],
          ['orx:auto-delete', s.autoDelete],
          ['odk:client-editable', clientEditable],
        ])}/>`
      : '';
  const entitiesVersion = survey.entities.length > 0 ? survey.entitiesVersion : undefined;
  const modelAttrs = attrs([['odk:xforms-version', '1.0.0'], ['entities:entities-version', entitiesVersion]]);
  const model = `<model${modelAttrs}>${itext}${submission}${primary}${[...ctx.instances.values()].join('')}${choiceInstances.join('')}${ctx.binds.join('')}</model>`;
  const ns = [
    ['xmlns', 'http://www.w3.org/2002/xforms'],
    ['xmlns:h', 'http://www.w3.org/1999/xhtml'],
    ['xmlns:ev', 'http://www.w3.org/2001/xml-events'],
    ['xmlns:xsd', 'http://www.w3.org/2001/XMLSchema'],
    ['xmlns:jr', 'http://openrosa.org/javarosa'],
    ['xmlns:orx', 'http://openrosa.org/xforms'],
    ['xmlns:odk', 'http://www.opendatakit.org/xforms'],
  ] as Array<[string, string]>;
  if (survey.entities.length > 0) ns.push(['xmlns:entities', 'http://www.opendatakit.org/xforms/entities']);
  if (s.namespaces) {
    for (const m of s.namespaces.matchAll(/([A-Za-z_][\w.-]*)\s*=\s*["']([^"']*)["']/g)) ns.push([`xmlns:${m[1]}`, m[2]!]);
  }
  const title = `<h:title>${escText(s.title ?? s.id)}</h:title>`;
  const bodyAttrs = attrs([['class', s.style]]);
  checkInstances(survey);
  return `<?xml version="1.0"?><h:html${attrs(ns)}><h:head>${title}${model}</h:head><h:body${bodyAttrs}>${body}</h:body></h:html>`;
}

function renderItext(ctx: Ctx): string {
  if (ctx.itext.size === 0) return '';
  const langs = [...ctx.itext.keys()];
  // Languages that give a text id a plain (or guidance) value: the others get '-', as pyxform does.
  const forms = new Map<string, Set<string>>();
  for (const texts of ctx.itext.values()) {
    for (const [id, values] of texts) {
      const set = forms.get(id) ?? new Set<string>();
      for (const v of values) if (v.form == null || v.form === 'guidance') set.add(v.form ?? '');
      forms.set(id, set);
    }
  }
  for (const lang of langs) {
    const texts = ctx.itext.get(lang)!;
    for (const [id, set] of forms) {
      if (!texts.has(id)) texts.set(id, []);
      for (const f of set) {
        const values = texts.get(id);
        const has = values?.some((v) => (v.form ?? '') === f);
        if (has) continue;
        const list = values ?? [];
        list.push({ form: f || undefined, xml: '-' });
        texts.set(id, list);
      }
    }
  }
  const def = ctx.survey.settings.defaultLanguage;
  const translations = langs.map((lang) => {
    const texts = ctx.itext.get(lang)!;
    const inner = [...texts]
      .map(([id, values]) => values.length === 0 ? `<text id="${escAttr(id)}"/>` : `<text id="${escAttr(id)}">${values.map((v) => `<value${v.form ? ` form="${escAttr(v.form)}"` : ''}>${v.xml}</value>`).join('')}</text>`)
      .join('');
    return `<translation${attrs([['lang', lang], ['default', lang === def ? 'true()' : undefined]])}>${inner}</translation>`;
  });
  return `<itext>${translations.join('')}</itext>`;
}
