/**
 * `$filter` on rows built in memory (repeat tables, whose rows are not SQL rows): the same
 * subset and semantics as the SQL compiler in lib/exports/filter.ts (null-safe `eq`/`ne`,
 * comparisons of like kinds, now/year/month/day/hour/minute/second). Pure.
 */
import {
  literalValue, memberPath, unparseableFilter, unsupportedExpression, unsupportedField,
  type FilterType, type ODataToken,
} from '../exports/filter';

/** A field's value for one row: a number, text, time (ms) or null. */
export interface RowValue {
  type: FilterType;
  value: number | string | null;
}

/**
 * Resolves a member path for one row; null when the field cannot be filtered on (501.5). `path`
 * has any `$root/Submissions/` prefix taken off; `raw` is the member as written, so a resolver can
 * tell `$root/Submissions/__id` from a row's own `__id`.
 */
export type RowResolver = (path: string, raw: string) => RowValue | null;

type V = { type: FilterType | 'bool' | null; value: number | string | boolean | null };

const toTime = (v: string) => {
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t;
};

function operand(node: ODataToken, row: RowResolver, want: FilterType | null, now: number): V {
  const n = node.value as { method?: string; parameters?: ODataToken[] };
  switch (node.type) {
    case 'Literal': {
      const lit = literalValue(node);
      if (lit.value === null) return { type: null, value: null };
      if (want === 'time' || lit.type === 'time') {
        const t = toTime(String(lit.value));
        if (t == null) throw unparseableFilter(`${node.raw} at ${node.position} is not a date`);
        return { type: 'time', value: t };
      }
      if (want === 'number' && lit.type !== 'number') {
        const num = Number(lit.value);
        if (!Number.isFinite(num)) throw unparseableFilter(`${node.raw} at ${node.position} is not a number`);
        return { type: 'number', value: num };
      }
      if (want === 'text') return { type: 'text', value: String(lit.value) };
      return { type: lit.type, value: lit.value };
    }
    case 'FirstMemberExpression':
    case 'MemberExpression':
    case 'RootExpression': {
      const v = row(memberPath(node), node.raw);
      if (v == null) throw unsupportedField(node, memberPath(node));
      return v;
    }
    case 'MethodCallExpression': {
      const method = n.method ?? '';
      if (method === 'now' && (n.parameters ?? []).length === 0) return { type: 'time', value: now };
      const parts: Record<string, (d: Date) => number> = {
        year: (d) => d.getUTCFullYear(), month: (d) => d.getUTCMonth() + 1, day: (d) => d.getUTCDate(),
        hour: (d) => d.getUTCHours(), minute: (d) => d.getUTCMinutes(), second: (d) => d.getUTCSeconds(),
      };
      const part = parts[method];
      if (part && n.parameters?.length === 1) {
        const inner = operand(n.parameters[0]!, row, 'time', now);
        return { type: 'number', value: inner.value == null ? null : part(new Date(inner.value as number)) };
      }
      throw unsupportedExpression(node);
    }
    case 'ParenExpression':
      return operand(node.value as ODataToken, row, want, now);
    default:
      throw unsupportedExpression(node);
  }
}

function compare(op: string, a: V, b: V): boolean {
  if (op === 'EqualsExpression') return a.value === b.value;
  if (op === 'NotEqualsExpression') return a.value !== b.value;
  if (a.value == null || b.value == null) return false; // as SQL: a comparison with null is not true
  const x = a.value;
  const y = b.value;
  switch (op) {
    case 'LesserThanExpression': return x < y;
    case 'LesserOrEqualsExpression': return x <= y;
    case 'GreaterThanExpression': return x > y;
    case 'GreaterOrEqualsExpression': return x >= y;
    default: return false;
  }
}

const comparisonTypes = new Set(['EqualsExpression', 'NotEqualsExpression', 'LesserThanExpression', 'LesserOrEqualsExpression', 'GreaterThanExpression', 'GreaterOrEqualsExpression']);

/**
 * Evaluates a parsed `$filter` (lib/exports/filter parseODataFilter) on one row.
 * @param now the request's time in ms (for now()). @returns whether the row matches.
 * @throws 501.4 / 501.5 / 400.18 as the SQL compiler does.
 */
export function evaluateFilter(node: ODataToken, row: RowResolver, now: number): boolean {
  const v = node.value as { left?: ODataToken; right?: ODataToken };
  switch (node.type) {
    // Both sides always, so that a check on one row finds every error (no short-circuit).
    case 'AndExpression': {
      const l = evaluateFilter(v.left!, row, now);
      return evaluateFilter(v.right!, row, now) && l;
    }
    case 'OrExpression': {
      const l = evaluateFilter(v.left!, row, now);
      return evaluateFilter(v.right!, row, now) || l;
    }
    case 'NotExpression': return !evaluateFilter(node.value as ODataToken, row, now);
    case 'BoolParenExpression': return evaluateFilter(node.value as ODataToken, row, now);
    default: {
      if (!comparisonTypes.has(node.type)) throw unsupportedExpression(node);
      const leftFirst = v.left!.type !== 'Literal';
      const a = operand(leftFirst ? v.left! : v.right!, row, null, now);
      const b = operand(leftFirst ? v.right! : v.left!, row, a.type === 'bool' ? null : a.type, now);
      return leftFirst ? compare(node.type, a, b) : compare(node.type, b, a);
    }
  }
}

/** A stored text as a filterable value of a field kind (empty → null, unreadable → null). Pure. */
export function rowValue(type: FilterType, text: string | undefined | null): RowValue {
  if (text == null || text === '') return { type, value: null };
  if (type === 'number') {
    const n = Number(text.trim());
    return { type, value: Number.isFinite(n) ? n : null };
  }
  if (type === 'time') return { type, value: toTime(text) };
  return { type, value: text };
}
