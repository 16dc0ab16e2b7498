/**
 * OData `$filter` → SQL, for CSV exports and OData feeds: the subset Central supports
 * (central-api.yaml, exports `$filter`; shared/reference/central-problem-codes.md 400.18, 501.4,
 * 501.5), plus, where the caller's resolver allows, form fields (lib/odata). Parsed with
 * odata-v4-parser (the parser Central uses, so its error texts match); every literal becomes a bound
 * parameter cast to the type of what it is compared with, never SQL text.
 */
import { sql, type SQL } from 'drizzle-orm';
import { filter as parseFilter } from 'odata-v4-parser';
import { Problem } from '../problem';

/** The kinds of value a filter compares. */
export type FilterType = 'number' | 'text' | 'time';

/** A filterable field: its SQL expression and kind. */
export interface FilterField {
  sql: SQL;
  type: FilterType;
}

/**
 * Maps a member path (`__system/submissionDate`, `__id`, `age`) to a field, or null when it cannot be
 * filtered on; `node` is the member's token (its `position` tells occurrences apart).
 */
export type FilterFieldResolver = (path: string, node?: ODataToken) => FilterField | null;

/** An odata-v4-parser token. */
export interface ODataToken {
  type: string;
  value: unknown;
  position: number;
  raw: string;
}

export const unparseableFilter = (reason: string) =>
  new Problem(400.18, `The OData filter expression you provided could not be parsed: ${reason}`, { reason });
export const unsupportedExpression = (node: ODataToken) =>
  new Problem(501.4, `The given OData filter expression uses features not supported by this server: ${node.type} at ${node.position} ("${node.raw}")`, {
    at: node.position, type: node.type, text: node.raw,
  });
export const unsupportedField = (node: { position: number }, text: string) =>
  new Problem(501.5, `The given OData filter expression references fields not supported by this server: ${text} at ${node.position}`, {
    at: node.position, text,
  });

const comparisons: Record<string, string> = {
  EqualsExpression: 'is not distinct from',
  NotEqualsExpression: 'is distinct from',
  LesserThanExpression: '<',
  LesserOrEqualsExpression: '<=',
  GreaterThanExpression: '>',
  GreaterOrEqualsExpression: '>=',
};
const dateParts = new Set(['year', 'month', 'day', 'hour', 'minute', 'second']);
const numberKinds = new Set(['Edm.SByte', 'Edm.Byte', 'Edm.Int16', 'Edm.Int32', 'Edm.Int64', 'Edm.Decimal', 'Edm.Double', 'Edm.Single']);

/** A `$root/Submissions/…` member (how a repeat table names its submission's fields) is that field. */
export const memberPath = (node: ODataToken) => node.raw.replace(/^\$root\/Submissions\//, '');

/** The JS value of a literal token, and its kind (null for `null`). @throws 501.4 other kinds. */
export function literalValue(node: ODataToken): { value: string | number | boolean | null; type: FilterType | 'bool' | null } {
  const kind = node.value as string;
  const raw = node.raw;
  if (kind === 'null') return { value: null, type: null };
  if (kind === 'Edm.Boolean') return { value: raw.toLowerCase() === 'true', type: 'bool' };
  if (kind === 'Edm.String') return { value: raw.slice(1, -1).replace(/''/g, "'"), type: 'text' };
  if (kind === 'Edm.Date' || kind === 'Edm.DateTimeOffset') return { value: raw, type: 'time' };
  if (numberKinds.has(kind)) return { value: Number(raw), type: 'number' };
  throw unsupportedExpression(node);
}

/** A literal as SQL, cast to the kind it is compared with. */
function literalSql(node: ODataToken, want: FilterType | null): SQL {
  const { value, type } = literalValue(node);
  if (value === null) return sql`null`;
  // A boolean has no field of its kind here: compared with a field, it is that field's kind (`'true'`), as in Central.
  if (type === 'bool' && want == null) return sql`${value}::boolean`;
  const as = want ?? type;
  if (as === 'number') {
    const n = typeof value === 'number' ? value : Number(value);
    if (!Number.isFinite(n)) throw unparseableFilter(`${node.raw} at ${node.position} is not a number`);
    return sql`${String(n)}::numeric`;
  }
  if (as === 'time') {
    if (Number.isNaN(Date.parse(String(value)))) throw unparseableFilter(`${node.raw} at ${node.position} is not a date`);
    return sql`${String(value)}::timestamptz`;
  }
  return sql`${String(value)}::text`;
}

interface Typed {
  sql: SQL;
  type: FilterType | null;
}

function operand(node: ODataToken, resolve: FilterFieldResolver, want: FilterType | null): Typed {
  const v = node.value as { method?: string; parameters?: ODataToken[] };
  switch (node.type) {
    case 'Literal':
      return { sql: literalSql(node, want), type: want };
    case 'FirstMemberExpression':
    case 'MemberExpression':
    case 'RootExpression': {
      const field = resolve(memberPath(node), node);
      if (field == null) throw unsupportedField(node, memberPath(node));
      return field;
    }
    case 'MethodCallExpression': {
      const method = v.method ?? '';
      if (method === 'now' && (v.parameters ?? []).length === 0) return { sql: sql`now()`, type: 'time' };
      if (dateParts.has(method) && v.parameters?.length === 1) {
        const inner = operand(v.parameters[0]!, resolve, 'time');
        // Only a time has a year: anything else would fail in SQL after the response had begun.
        if (inner.type !== 'time') throw unsupportedExpression(node);
        return { sql: sql`extract(${sql.raw(method)} from ${inner.sql})`, type: 'number' };
      }
      throw unsupportedExpression(node);
    }
    case 'ParenExpression':
      return operand(node.value as ODataToken, resolve, want);
    default:
      throw unsupportedExpression(node);
  }
}

function expr(node: ODataToken, resolve: FilterFieldResolver): SQL {
  const v = node.value as { left?: ODataToken; right?: ODataToken };
  switch (node.type) {
    case 'AndExpression':
      return sql`(${expr(v.left!, resolve)} and ${expr(v.right!, resolve)})`;
    case 'OrExpression':
      return sql`(${expr(v.left!, resolve)} or ${expr(v.right!, resolve)})`;
    case 'NotExpression':
      return sql`(not ${expr(node.value as ODataToken, resolve)})`;
    case 'BoolParenExpression':
      return sql`(${expr(node.value as ODataToken, resolve)})`;
    default: {
      const op = comparisons[node.type];
      if (!op) throw unsupportedExpression(node);
      // Literals take the kind of the other side (a date string compared with a timestamp is a timestamp).
      const leftFirst = v.left!.type !== 'Literal';
      const a = operand(leftFirst ? v.left! : v.right!, resolve, null);
      const b = operand(leftFirst ? v.right! : v.left!, resolve, a.type);
      // Two fields of different kinds (a time and a text…) have no SQL comparison: refused up front.
      if (a.type != null && b.type != null && a.type !== b.type) throw unsupportedExpression(node);
      const [l, r] = leftFirst ? [a, b] : [b, a];
      // Equality with a value: also as `=`, which a B-tree (field indexes, lib/odata/field-indexes.ts)
      // can answer; `is not distinct from` keeps Central's meaning under `not` (null ≠ 'x').
      const other = leftFirst ? v.right! : v.left!;
      if (node.type === 'EqualsExpression' && a.type != null && other.type === 'Literal' && literalValue(other).value !== null) {
        return sql`(${l.sql} = ${r.sql} and ${l.sql} ${sql.raw(op)} ${r.sql})`;
      }
      return sql`(${l.sql} ${sql.raw(op)} ${r.sql})`;
    }
  }
}

/** Past these a `$filter` is refused before parsing: the parser's time grows steeply with nesting. */
const MAX_FILTER_LENGTH = 10_000;
const MAX_FILTER_DEPTH = 100;

/**
 * Parses a `$filter` into odata-v4-parser's tree. A filter over 10,000 characters or nested more
 * than 100 parentheses deep is refused first (a few thousand levels cost the parser seconds of CPU).
 * @throws 400.18 when it does not parse or passes those bounds. Pure.
 */
export function parseODataFilter(text: string): ODataToken {
  if (text.length > MAX_FILTER_LENGTH) throw unparseableFilter(`the filter is longer than ${MAX_FILTER_LENGTH} characters`);
  let depth = 0;
  for (const ch of text) {
    if (ch === '(') depth += 1;
    else if (ch === ')') depth -= 1;
    if (depth > MAX_FILTER_DEPTH) throw unparseableFilter(`the filter is nested more than ${MAX_FILTER_DEPTH} parentheses deep`);
  }
  try {
    return parseFilter(text) as ODataToken;
  } catch (err) {
    throw unparseableFilter(err instanceof Error ? err.message : String(err));
  }
}

/** Every member path a filter tree names (to route a filter to SQL or to the row evaluator). Pure. */
export function filterMembers(node: ODataToken): string[] {
  const out: string[] = [];
  const walk = (n: unknown) => {
    if (n == null || typeof n !== 'object') return;
    const t = n as ODataToken;
    if (t.type === 'FirstMemberExpression' || t.type === 'MemberExpression' || t.type === 'RootExpression') {
      out.push(memberPath(t));
      return;
    }
    for (const [k, child] of Object.entries(t)) if (k !== 'raw' && k !== 'position' && k !== 'type') walk(child);
  };
  walk(node);
  return out;
}

/**
 * Compiles a `$filter` expression.
 * @param text the `$filter` value as given (URL-decoded), or an already parsed tree.
 * @param resolve maps each member path to its SQL expression and kind (null: not filterable → 501.5).
 * @returns a boolean SQL fragment with every literal bound as a parameter.
 * @throws Problem 400.18 `{ reason }` when it does not parse or a literal does not fit the field's
 *   kind; 501.4 `{ at, type, text }` for syntax beyond the subset (functions other than
 *   now/year/month/day/hour/minute/second, lambdas, arithmetic…, a date part of a non-time, a
 *   comparison of two values of different kinds); 501.5 `{ at, text }` for a field
 *   that cannot be filtered on. Pure.
 */
export function compileODataFilter(text: string | ODataToken, resolve: FilterFieldResolver): SQL {
  return expr(typeof text === 'string' ? parseODataFilter(text) : text, resolve);
}
