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
