/**
 * XLSForm sheet rows → pyxform's row records: headers de-aliased, translated columns grouped by
 * language (`label::English (en)`), values cleaned (spaces, smart quotes). Pure.
 * Reference: shared/reference/xlsform/xlsform-spec.md (columns), pyxform's aliases.
 */
import type { Sheet } from './workbook';
import { XlsFormError } from './types';

/** A translatable text: one string, or text by language name ('default' when none). */
export type Text = string | Map<string, string>;

/** Columns whose values may be given per language. */
export const TRANSLATABLE = new Set([
  'label', 'hint', 'guidance_hint', 'constraint_message', 'required_message', 'image', 'big-image', 'audio', 'video',
]);
/** Media columns (survey and choices), each a file name under jr://images|audio|video/. */
export const MEDIA_COLUMNS = ['image', 'big-image', 'audio', 'video'] as const;

/** Survey header aliases (pyxform aliases.survey_header), to the canonical column. */
const SURVEY_ALIASES: Record<string, string> = {
  caption: 'label',
  command: 'type',
  tag: 'name',
  value: 'name',
  read_only: 'readonly',
  'read only': 'readonly',
  relevance: 'relevant',
  'constraining message': 'constraint_message',
  'constraint message': 'constraint_message',
  'bind::jr:constraintmsg': 'constraint_message',
  'jr:constraintmsg': 'constraint_message',
  requiredmsg: 'required_message',
  'required message': 'required_message',
  'bind::jr:requiredmsg': 'required_message',
  'jr:requiredmsg': 'required_message',
  calculate: 'calculation',
  'bind::calculate': 'calculation',
  'bind::relevant': 'relevant',
  'bind::required': 'required',
  'bind::constraint': 'constraint',
  'bind::readonly': 'readonly',
  count: 'repeat_count',
  'jr:count': 'repeat_count',
  'control::jr:count': 'repeat_count',
  'control::appearance': 'appearance',
  'body::appearance': 'appearance',
  noapperrorstring: 'no_app_error_string',
  'bind::jr:noapperrorstring': 'no_app_error_string',
  'jr:noapperrorstring': 'no_app_error_string',
  'guidance hint': 'guidance_hint',
  'choice filter': 'choice_filter',
  'save to': 'save_to',
  'bind::entities:saveto': 'save_to',
  'media::image': 'image',
  'media::big-image': 'big-image',
  'media::audio': 'audio',
  'media::video': 'video',
};
const CHOICES_ALIASES: Record<string, string> = {
  caption: 'label',
  'list name': 'list_name',
  value: 'name',
  'media::image': 'image',
  'media::big-image': 'big-image',
  'media::audio': 'audio',
  'media::video': 'video',
};
const SETTINGS_ALIASES: Record<string, string> = {
  'set form title': 'form_title',
  'set form id': 'form_id',
  title: 'form_title',
  id_string: 'form_id',
};
const ENTITIES_ALIASES: Record<string, string> = { dataset: 'list_name' };

export type SheetKind = 'survey' | 'choices' | 'settings' | 'entities' | 'external_choices';

/** One row after de-aliasing: plain columns, translated columns, and the row number. */
export interface Row {
  row: number;
  /** Canonical column → value (untranslated columns, and translated ones given without a language). */
  values: Map<string, string>;
  /** Translatable column → language → value, for columns given with a language. */
  texts: Map<string, Map<string, string>>;
  /** The header each canonical column came from (for messages). */
  original: Map<string, string>;
  /** pyxform's dict of the row as it appears in messages (header → value). */
  raw: Array<[string, string]>;
}

export interface ParsedSheet {
  rows: Row[];
  /** Translatable base column → languages given for it ('' = no language). */
  columnLanguages: Map<string, Set<string>>;
  /** Canonical columns present. */
  columns: Set<string>;
  warnings: string[];
}

const SMART = /[\u2018\u2019\u201c\u201d]/g;
const smart = (s: string) => s.replace(SMART, (c) => (c === '\u2018' || c === '\u2019' ? "'" : '"'));

/** pyxform's value cleaning: trim, runs of spaces to one, smart quotes to plain. */
export function cleanValue(v: string, strip = true): string {
  const s = strip ? v.trim().replace(/ {2,}/g, ' ') : v;
  return smart(s);
}

interface ColumnPlan {
  header: string;
  /** Canonical column, or null when ignored. */
  key: string | null;
  lang: string | null;
}

/** Splits and de-aliases one header (pyxform process_header). */
function planHeader(header: string, kind: SheetKind, doubleColon: boolean): { key: string; lang: string | null } {
  const aliases = kind === 'survey' ? SURVEY_ALIASES : kind === 'choices' || kind === 'external_choices' ? CHOICES_ALIASES : kind === 'settings' ? SETTINGS_ALIASES : ENTITIES_ALIASES;
  const lower = header.toLowerCase();
  if (aliases[lower]) return { key: aliases[lower]!, lang: null };
  const sep = doubleColon ? '::' : ':';
  const tokens = header.split(sep).map((t) => t.trim());
  if (tokens.length > 1) {
    let first = tokens[0]!.toLowerCase();
    // `jr:constraintMsg` written with single colons: `bind:jr:constraintMsg`.
    if (!doubleColon && first === 'bind' && tokens.length >= 2) {
      const rest = tokens.slice(1).join(':');
      const canon = aliases[`bind::${rest.toLowerCase()}`];
      if (canon) return { key: canon, lang: null };
      return { key: `bind::${rest}`, lang: null };
    }
    if (first === 'jr' && tokens.length === 2) {
      const canon = aliases[`jr:${tokens[1]!.toLowerCase()}`];
      if (canon) return { key: canon, lang: null };
      return { key: `bind::jr:${tokens[1]}`, lang: null };
    }
    first = aliases[first] ?? first;
    if (first === 'media' && tokens.length >= 2) {
      const media = tokens[1]!.toLowerCase();
      return { key: media, lang: tokens.length > 2 ? tokens.slice(2).join(sep) : null };
    }
    if (TRANSLATABLE.has(first)) return { key: first, lang: tokens.slice(1).join(sep) };
    if (first === 'bind' || first === 'control' || first === 'body' || first === 'instance') {
      const rest = tokens.slice(1).join(doubleColon ? '::' : ':');
      const full = `${first === 'body' ? 'control' : first}::${rest}`;
      return { key: aliases[full.toLowerCase()] ?? full, lang: null };
    }
    return { key: header, lang: null };
  }
  return { key: lower, lang: null };
}

/** Python's repr of a str (for pyxform's messages that print a row dict). */
function pyRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of s) {
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else out += ch;
  }
  return quote + out + quote;
}

/** A row as pyxform prints it: `{'header': 'value', …}`. */
export function pyDict(entries: Array<[string, string]>): string {
  return `{${entries.map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`).join(', ')}}`;
}

/**
 * Reads one sheet into rows of canonical columns.
 * @throws XlsFormError "Duplicate column header: X" and pyxform's "Invalid headers provided for
 *   sheet" when two headers mean the same column. Warnings: headers with spaces on the choices sheet.
 */
export function parseSheet(sheet: Sheet, kind: SheetKind, defaultLanguage: string, strip = true): ParsedSheet {
  const warnings: string[] = [];
  const doubleColon = sheet.headers.some((h) => h.includes('::'));
  const seen = new Set<string>();
  const plans: ColumnPlan[] = [];
  const byKey = new Map<string, string[]>();
  for (const header of sheet.headers) {
    if (!header) {
      plans.push({ header, key: null, lang: null });
      continue;
    }
    if (seen.has(header)) throw new XlsFormError(`Duplicate column header: ${header}`);
    seen.add(header);
    if ((kind === 'choices' || kind === 'external_choices') && /\s/.test(header)) {
      const { key } = planHeader(header, kind, doubleColon);
      if (key === header.toLowerCase() || key === header) {
        warnings.push(
          `[row : 1] On the '${kind}' sheet, the '${header}' value is invalid. Column headers must not be empty and must not contain spaces. Learn more: https://xlsform.org/en/#setting-up-your-worksheets`,
        );
        plans.push({ header, key: null, lang: null });
        continue;
      }
    }
    const { key, lang } = planHeader(header, kind, doubleColon);
    plans.push({ header, key, lang });
    const id = `${key}\u0000${lang ?? ''}`;
    const list = byKey.get(id) ?? [];
    list.push(header);
    byKey.set(id, list);
  }
  for (const list of byKey.values()) {
    if (list.length > 1) {
      throw new XlsFormError(
        `Invalid headers provided for sheet: '${kind}'. Headers that are different names for the same column were found: ${[...list]
          .sort()
          .map((h) => `'${h}'`)
          .join(', ')}. Rename or remove one of these columns.`,
      );
    }
  }
  const columnLanguages = new Map<string, Set<string>>();
  const columns = new Set<string>();
  for (const p of plans) {
    if (!p.key) continue;
    columns.add(p.key);
    if (TRANSLATABLE.has(p.key)) {
      const set = columnLanguages.get(p.key) ?? new Set<string>();
      set.add(p.lang ?? '');
      columnLanguages.set(p.key, set);
    }
  }
  const rows: Row[] = [];
  for (const r of sheet.rows) {
    const row: Row = { row: r.row, values: new Map(), texts: new Map(), original: new Map(), raw: [] };
    // pyxform groups a row's `label` with its `label::lang` values only when the row has one of
    // those: then the plain value is the default language's; otherwise it stays a plain string.
    const rowLangs = new Set<string>();
    for (const p of plans) {
      if (p.key && p.lang != null && TRANSLATABLE.has(p.key) && (r.cells.get(p.header) ?? '').trim() !== '') rowLangs.add(p.key);
    }
    for (const p of plans) {
      if (!p.key) continue;
      const rawValue = r.cells.get(p.header);
      if (rawValue == null) continue;
      const value = cleanValue(rawValue, strip);
      if (value === '') continue;
      row.raw.push([p.header, value]);
      row.original.set(p.key, p.header);
      const translated = p.lang != null || rowLangs.has(p.key);
      if (TRANSLATABLE.has(p.key) && translated) {
        const m = row.texts.get(p.key) ?? new Map<string, string>();
        m.set(p.lang ?? defaultLanguage, value);
        row.texts.set(p.key, m);
      } else {
        row.values.set(p.key, value);
      }
    }
    if (row.raw.length > 0) rows.push(row);
  }
  return { rows, columnLanguages, columns, warnings };
}

/** A row's translatable column: its string, its texts by language, or undefined. */
export function textOf(row: Row, key: string): Text | undefined {
  const t = row.texts.get(key);
  if (t && t.size > 0) return t;
  return row.values.get(key);
}
