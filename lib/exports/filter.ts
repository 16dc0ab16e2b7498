/**
 * OData `$filter` → SQL, for CSV exports and (later) OData feeds: the subset Central supports
 * (central-api.yaml, exports `$filter`; shared/reference/central-problem-codes.md 400.18, 501.4,
 * 501.5). Parsed with odata-v4-parser (the parser Central uses, so its error texts match); every
 * literal becomes a bound parameter, never SQL text.
 */
import { sql, type SQL } from 'drizzle-orm';
import { filter as parseFilter } from 'odata-v4-parser';
import { Problem } from '../problem';

/** Maps a member path (`__system/submissionDate`, `__id`) to a SQL expression, or null when it cannot be filtered on. */
export type FilterFieldResolver = (path: string) => SQL | null;

interface Node {
  type: string;
  value: unknown;
  position: number;
  raw: string;
}

const unparseable = (reason: string) =>
  new Problem(400.18, `The OData filter expression you provided could not be parsed: ${reason}`, { reason });
const unsupported = (node: Node) =>
  new Problem(501.4, `The given OData filter expression uses features not supported by this server: ${node.type} at ${node.position} ("${node.raw}")`, {
    at: node.position, type: node.type, text: node.raw,
  });
const unknownField = (node: Node, text: string) =>
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

function literal(node: Node): SQL {
  const kind = node.value as string;
  const raw = node.raw;
  switch (kind) {
    case 'null':
      return sql`null`;
    case 'Edm.Boolean':
      return sql`${raw.toLowerCase() === 'true'}::boolean`;
    case 'Edm.String':
      return sql`${raw.slice(1, -1).replace(/''/g, "'")}::text`;
    case 'Edm.Date':
    case 'Edm.DateTimeOffset':
      return sql`${raw}::timestamptz`;
    case 'Edm.SByte': case 'Edm.Byte': case 'Edm.Int16': case 'Edm.Int32': case 'Edm.Int64':
    case 'Edm.Decimal': case 'Edm.Double': case 'Edm.Single':
      return sql`${raw}::numeric`;
    default:
      throw unsupported(node);
  }
}

function memberPath(node: Node): string {
  // `$root/Submissions/__system/x` is how a repeat table names its submission's fields; same field.
  return node.raw.replace(/^\$root\/Submissions\//, '');
}

function expr(node: Node, resolve: FilterFieldResolver): SQL {
  const v = node.value as { left?: Node; right?: Node; method?: string; parameters?: Node[] } & Node;
  switch (node.type) {
    case 'AndExpression':
      return sql`(${expr(v.left!, resolve)} and ${expr(v.right!, resolve)})`;
    case 'OrExpression':
      return sql`(${expr(v.left!, resolve)} or ${expr(v.right!, resolve)})`;
    case 'NotExpression':
      return sql`(not ${expr(v as Node, resolve)})`;
    case 'BoolParenExpression':
    case 'ParenExpression':
      return sql`(${expr(v as Node, resolve)})`;
    case 'EqualsExpression': case 'NotEqualsExpression': case 'LesserThanExpression':
    case 'LesserOrEqualsExpression': case 'GreaterThanExpression': case 'GreaterOrEqualsExpression':
      return sql`(${expr(v.left!, resolve)} ${sql.raw(comparisons[node.type]!)} ${expr(v.right!, resolve)})`;
    case 'Literal':
      return literal(node);
    case 'FirstMemberExpression':
    case 'MemberExpression':
    case 'RootExpression': {
      const path = memberPath(node);
      const column = resolve(path);
      if (column == null) throw unknownField(node, path);
      return column;
    }
    case 'MethodCallExpression': {
      const method = v.method ?? '';
      if (method === 'now' && (v.parameters ?? []).length === 0) return sql`now()`;
      if (dateParts.has(method) && v.parameters?.length === 1) {
        return sql`extract(${sql.raw(method)} from ${expr(v.parameters[0]!, resolve)})`;
      }
      throw unsupported(node);
    }
    default:
      throw unsupported(node);
  }
}

/**
 * Compiles a `$filter` expression.
 * @param text the `$filter` value as given (URL-decoded).
 * @param resolve maps each member path to its SQL column (null: not filterable → 501.5).
 * @returns a boolean SQL fragment with every literal bound as a parameter.
 * @throws Problem 400.18 `{ reason }` when it does not parse; 501.4 `{ at, type, text }` for
 *   syntax beyond the subset (functions other than now/year/month/day/hour/minute/second, lambdas,
 *   arithmetic…); 501.5 `{ at, text }` for a field that cannot be filtered on. Pure.
 */
export function compileODataFilter(text: string, resolve: FilterFieldResolver): SQL {
  let ast: Node;
  try {
    ast = parseFilter(text) as Node;
  } catch (err) {
    throw unparseable(err instanceof Error ? err.message : String(err));
  }
  return expr(ast, resolve);
}
