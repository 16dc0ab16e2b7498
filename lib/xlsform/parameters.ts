/**
 * The `parameters` column (pyxform 4.5): `key=value` pairs separated by spaces, commas or
 * semicolons; keys checked against the ones each question type accepts; the range type's
 * parameters checked against each other and the tick_labelset choices. Messages as pyxform's
 * (ErrorCode SURVEY_004/005, RANGE_001…012). Pure.
 */
import { XlsFormError } from './types';

const rowAt = (n: number) => `[row : ${n}]`;

/** Keys whose values keep their case (they name columns of a user's file). */
const CASE_SENSITIVE = new Set(['label', 'value']);

/**
 * Parses a parameters cell: tokens are runs of anything but whitespace, `=`, `,` and `;`, the
 * separators between pairs are ignored, and every pair must read `key=value`. Keys are lowercased,
 * and values too except those of `label` and `value`.
 * @throws XlsFormError SURVEY_004 on anything else (`a==1`, `a1`, `a=1 . b=2`).
 */
export function parseParameters(raw: string | undefined, row: number): Map<string, string> {
  const out = new Map<string, string>();
  if (!raw || !raw.trim()) return out;
  const tokens = [...raw.matchAll(/[^\s=,;]+|=/g)].map((m) => m[0]);
  if (tokens.length % 3 !== 0) throw survey004(row);
  for (let i = 0; i < tokens.length; i += 3) {
    const [k, eq, v] = [tokens[i]!, tokens[i + 1]!, tokens[i + 2]!];
    if (k === '=' || eq !== '=' || v === '=') throw survey004(row);
    const key = k.toLowerCase();
    out.set(key, CASE_SENSITIVE.has(key) ? v : v.toLowerCase());
  }
  return out;
}

const survey004 = (row: number) =>
  new XlsFormError(`${rowAt(row)} On the 'survey' sheet, the 'parameters' value is invalid. Parameters must be in the form of 'key1=value1 key2=value2.`);

const GEO = ['allow-mock-accuracy', 'incremental', 'reference-geometry'];
const GEOPOINT = ['allow-mock-accuracy', 'capture-accuracy', 'reference-geometry', 'warning-accuracy'];
const SELECT = ['randomize', 'seed'];
const SELECT_FILE = ['label', 'randomize', 'seed', 'value'];

/** The parameter keys each question type (canonical name) accepts; types not listed take any. */
const ACCEPTED: Record<string, string[]> = {
  range: ['end', 'placeholder', 'start', 'step', 'tick_interval', 'tick_labelset'],
  audio: ['quality'],
  'background-audio': ['quality'],
  image: ['app', 'max-pixels'],
  geopoint: GEOPOINT,
  geoshape: GEO,
  geotrace: GEO,
  text: ['rows'],
  audit: ['identify-user', 'location-max-age', 'location-min-interval', 'location-priority', 'track-changes', 'track-changes-reasons'],
  photo: ['app', 'max-pixels'],
  'select one': SELECT,
  'select all that apply': SELECT,
  rank: SELECT,
  'select one external': SELECT,
  'select one from file': SELECT_FILE,
  'select multiple from file': SELECT_FILE,
};

/**
 * @throws XlsFormError SURVEY_005 when a key is not one the type accepts.
 */
export function checkParameterKeys(type: string, params: Map<string, string>, row: number): void {
  const accepted = ACCEPTED[type];
  if (!accepted || params.size === 0) return;
  const rejected = [...params.keys()].filter((k) => !accepted.includes(k)).sort();
  if (rejected.length === 0) return;
  throw new XlsFormError(
    `${rowAt(row)} On the 'survey' sheet, the 'parameters' value is invalid. The accepted parameter keys for this question type are '${accepted.join(', ')}'. The following are invalid parameter key(s): '${rejected.join(', ')}'.`,
  );
}

const NUMBER = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/** Exact decimal arithmetic on short numbers: values scaled to integers by a common power of 10. */
function scaled(values: string[]): bigint[] {
  const places = Math.max(...values.map((v) => decimals(v)));
  return values.map((v) => toScaled(v, places));
}
function decimals(v: string): number {
  const n = Number(v);
  const s = n.toString();
  if (/e-/.test(s)) return Number(s.split('e-')[1]) + (s.split('e')[0]!.split('.')[1]?.length ?? 0);
  return s.split('.')[1]?.length ?? 0;
}
function toScaled(v: string, places: number): bigint {
  const n = Number(v);
  const [int, frac = ''] = Math.abs(n).toFixed(places).split('.');
  const b = BigInt(int! + frac);
  return n < 0 ? -b : b;
}
const abs = (b: bigint) => (b < 0n ? -b : b);

export interface RangeChoice {
  row: number;
  name: string;
}

/**
 * Checks a range question's parameters (defaults start=1 end=10 step=1) and returns its body
 * attributes (start, end, step, odk:tick-interval, odk:placeholder) and its tick_labelset list.
 * @param lists the choice lists by name (for tick_labelset).
 * @throws XlsFormError RANGE_001…012 as pyxform words them.
 */
export function rangeParameters(
  params: Map<string, string>,
  appearance: string,
  row: number,
  lists: Map<string, { choices: RangeChoice[] }>,
): { attrs: Array<[string, string]>; labelset: string | null; decimal: boolean } {
  const err = (msg: string) => new XlsFormError(`${rowAt(row)} On the 'survey' sheet, the 'parameters' value is invalid. For the 'range' question type, ${msg}`);
  const p = new Map(params);
  for (const name of ['start', 'end', 'step', 'tick_interval', 'placeholder']) {
    const v = p.get(name);
    if (v != null && !NUMBER.test(v)) throw err(`the parameter '${name}' must be a number.`);
  }
  const start = p.get('start') ?? '1';
  const end = p.get('end') ?? '10';
  const step = p.get('step') ?? '1';
  const tick = p.get('tick_interval');
  const placeholder = p.get('placeholder');
  const labelset = p.get('tick_labelset') ?? null;
  if ((tick != null || placeholder != null || labelset != null) && !['', 'vertical', 'no-ticks', 'vertical no-ticks', 'no-ticks vertical'].includes(appearance.trim().replace(/\s+/g, ' '))) {
    throw err("the parameters 'tick_interval', 'placeholder', and 'tick_labelset' are only supported for the appearances 'vertical', 'no-ticks', 'vertical no-ticks', and the default (empty) horizontal.");
  }
  const all = [start, end, step, ...(tick != null ? [tick] : []), ...(placeholder != null ? [placeholder] : [])];
  const [s, e, st] = scaled([...all]) as [bigint, bigint, bigint, ...bigint[]];
  const sc = (v: string) => toScaled(v, Math.max(...all.map(decimals)));
  const span = abs(e - s);
  for (const [name, v] of [['step', step], ['tick_interval', tick]] as const) {
    if (v == null) continue;
    const x = sc(v);
    if (x === 0n) throw err(`the parameter '${name}' must not be '0' (zero).`);
    if (abs(x) > span) throw err(`the parameter '${name}' must not be larger than the range (the difference between 'start' and 'end').`);
  }
  if (tick != null && st !== 0n && sc(tick) % st !== 0n) throw err("the parameter 'tick_interval' must be a multiple of 'step'.");
  if (placeholder != null) {
    const x = sc(placeholder);
    if (st !== 0n && (x - s) % st !== 0n) throw err("the parameter 'placeholder' must be a multiple of 'step'.");
    if (x < (s < e ? s : e) || x > (s < e ? e : s)) throw err("the parameter 'placeholder' must be between the 'start' and 'end' values, inclusive).");
  }
  if (labelset != null) {
    const list = lists.get(labelset);
    if (!list) throw err("the parameter 'tick_labelset' must be a choice list name from the 'list_name' column on the choices sheet.");
    const noTicks = /\bno-ticks\b/.test(appearance);
    if (noTicks && list.choices.length > 2) throw err("the parameter 'tick_labelset' choice list must have only 2 items when the 'appearance' is 'no-ticks'.");
    const names = list.choices.map((c) => c.name);
    if (names.some((n) => !NUMBER.test(n))) throw err("the parameter 'unknown' choice values must all be numbers.");
    const places = Math.max(...[...all, ...names].map(decimals));
    const [s2, e2] = [toScaled(start, places), toScaled(end, places)];
    const lo = s2 < e2 ? s2 : e2;
    const hi = s2 < e2 ? e2 : s2;
    const unit = toScaled(tick ?? step, places);
    for (const n of names) {
      const x = toScaled(n, places);
      if (x < lo || x > hi) throw err("the parameter 'tick_labelset' choices must be between the 'start' and 'end' values, inclusive.");
      if (noTicks) {
        if (x !== s2 && x !== e2) {
          throw err("the parameter 'tick_labelset' choice list values may onlymatch the range 'start' and 'end' values when the 'appearance' is 'no-ticks'.");
        }
      } else if (unit !== 0n && (x - s2) % unit !== 0n) {
        throw err(`the parameter 'tick_labelset' choices' values must be equal to the start of the range plus a multiple of '${tick != null ? 'tick_interval' : 'step'}'.`);
      }
    }
  }
  const attrs: Array<[string, string]> = [['start', start], ['end', end], ['step', step]];
  if (tick != null) attrs.push(['odk:tick-interval', tick]);
  if (placeholder != null) attrs.push(['odk:placeholder', placeholder]);
  const decimal = [start, end, step].some((v) => !/^-?\d+$/.test(v));
  return { attrs, labelset, decimal };
}

const ANDROID_PREFIX = "Parameter 'app' has an invalid Android package name - ";

/** pyxform's checks of an Android package name (image `app=`); the message, or null when valid. */
function androidPackageProblem(name: string): string | null {
  if (!name.trim()) return 'package name is missing.';
  if (!name.includes('.')) return "the package name must have at least one '.' separator.";
  if (name.endsWith('.')) return "the package name cannot end in a '.' separator.";
  const segments = name.split('.');
  if (segments.some((s) => s === '')) return 'package segments must be of non-zero length.';
  if (segments.some((s) => s.startsWith('_'))) return "the character '_' cannot be the first character in a package name segment.";
  if (segments.some((s) => /^\d/.test(s))) return 'a digit cannot be the first character in a package name segment.';
  if (segments.some((s) => /[^a-zA-Z0-9._]/.test(s))) {
    return 'the package name can only include letters (a-z, A-Z), numbers (0-9), dots (.), and underscores (_).';
  }
  return null;
}

const isInt = (v: string) => /^\s*[-+]?\d+\s*$/.test(v);
const isFloat = (v: string) => NUMBER.test(v.trim()) || /^\s*[-+]?(inf|infinity|nan)\s*$/i.test(v);

/**
 * The per-type parameter checks of pyxform 4.5 (audio and background-audio quality, image
 * max-pixels and app, text rows, geo accuracy / incremental / allow-mock-accuracy, select
 * randomize and seed, audit options), with its messages.
 * @returns body attributes the parameters add (rows, intent, incremental).
 * @throws XlsFormError for a value pyxform refuses.
 */
export function checkTypeParameters(type: string, p: Map<string, string>, appearance: string | undefined, row: number): Array<[string, string]> {
  const control: Array<[string, string]> = [];
  const fail = (msg: string) => new XlsFormError(msg);
  const survey = (msg: string) => new XlsFormError(`${rowAt(row)} On the 'survey' sheet, the 'parameters' value is invalid. ${msg}`);
  const quality = p.get('quality');
  if (type === 'audio' && quality != null && !['voice-only', 'low', 'normal', 'external'].includes(quality)) throw fail('Invalid value for quality.');
  if (type === 'background-audio' && quality != null && !['voice-only', 'low', 'normal'].includes(quality)) throw fail('Invalid value for quality.');
  if (type === 'image' || type === 'photo') {
    const mp = p.get('max-pixels');
    if (mp != null && !isInt(mp)) throw fail('Parameter max-pixels must have an integer value.');
    const app = p.get('app');
    if (app != null && (!appearance || appearance === 'annotate')) {
      const problem = androidPackageProblem(app);
      if (problem) throw fail(`${rowAt(row)} ${ANDROID_PREFIX}${problem}`);
      control.push(['intent', app]);
    }
  }
  if (type === 'text' || type === 'string') {
    const rows = p.get('rows');
    if (rows != null) {
      if (!isInt(rows)) throw fail(`${rowAt(row)} Parameter rows must have an integer value.`);
      control.push(['rows', rows]);
    }
  }
  if (type === 'geopoint' || type === 'geoshape' || type === 'geotrace') {
    if (type === 'geopoint') {
      const c = p.get('capture-accuracy');
      if (c != null && !isFloat(c)) throw survey("The 'capture-accuracy' parameter must have a numeric value.");
      const w = p.get('warning-accuracy');
      if (w != null && !isFloat(w)) throw survey("The 'warning-accuracy' parameter must have a numeric value.");
    } else {
      const inc = p.get('incremental');
      if (inc != null) {
        if (!['yes', 'true', 'true()'].includes(inc)) {
          throw survey("For geoshape and geotrace questions, the 'incremental' parameter may either be 'true' or not included.");
        }
        control.push(['incremental', 'true']);
      }
    }
    const mock = p.get('allow-mock-accuracy');
    if (mock != null && mock !== 'true' && mock !== 'false') throw survey("The 'allow-mock-accuracy' parameter must be either 'true' or 'false'.");
  }
  if (ACCEPTED[type] === SELECT || ACCEPTED[type] === SELECT_FILE) {
    const randomize = p.get('randomize');
    const seed = p.get('seed');
    if (randomize != null) {
      if (randomize !== 'true' && randomize !== 'false') throw fail(`randomize must be set to true or false: '${randomize}' is an invalid value`);
      if (seed != null && !/^\s*\$\{[^}]+\}\s*$/.test(seed) && !isFloat(seed)) throw fail('seed value must be a number or a reference to another field.');
    } else if (seed != null) throw fail('Parameters must include randomize=true to use a seed.');
  }
  if (type === 'audit') {
    const bool = (k: string) => {
      const v = p.get(k);
      if (v != null && v !== 'true' && v !== 'false') throw fail(`${k} must be set to true or false: '${v}' is an invalid value.`);
    };
    bool('track-changes');
    const reasons = p.get('track-changes-reasons');
    if (reasons != null && reasons !== 'on-form-edit') throw fail('track-changes-reasons must be set to on-form-edit');
    bool('identify-user');
    const loc = ['location-priority', 'location-min-interval', 'location-max-age'];
    if (loc.some((k) => p.has(k))) {
      if (!loc.every((k) => p.has(k))) {
        throw fail("To include location information in the audit, 'location-priority', 'location-min-interval', and 'location-max-age' are required parameters.");
      }
      const priority = p.get('location-priority')!;
      if (!['no-power', 'low-power', 'balanced', 'high-accuracy'].includes(priority)) {
        throw fail(`Parameter location-priority must be set to no-power, low-power, balanced, or high-accuracy:'${priority}' is an invalid value`);
      }
      const min = p.get('location-min-interval')!;
      if (!isInt(min)) throw fail('Parameter location-min-interval must have an integer value.');
      if (Number(min) < 0) throw fail('Parameter location-min-interval must be greater than or equal to zero.');
      const max = p.get('location-max-age')!;
      if (!isInt(max)) throw fail('Parameter location-max-age must have an integer value.');
      if (Number(max) < 0) throw fail('Parameter location-max-age must be greater  than or equal to zero.');
      if (Number(max) < Number(min)) throw fail('Parameter location-max-age must be greater than or equal to location-min-interval.');
    }
  }
  return control;
}
