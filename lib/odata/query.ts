/**
 * OData query options for the submission feeds, validated as Central does (central-problem-codes.md
 * 400.23–400.35, 406.1, 501.1, 501.5 for `$orderby`, 501.6, 501.11), plus what Fieldbase adds
 * (named `$expand`, `$orderby` on form fields). Pure.
 */
import { Problem, problems } from '../problem';

const KNOWN = new Set(['$format', '$count', '$skip', '$top', '$filter', '$wkt', '$expand', '$select', '$skiptoken', '$orderby', '$search']);

export interface FeedQuery {
  top: number | null;
  skip: number;
  /** Decoded `$skiptoken` object (`{ instanceId }` root, `{ repeatId }` repeat tables). */
  skiptoken: Record<string, unknown> | null;
  count: boolean;
  wkt: boolean;
  filter: string | null;
  /** `$expand`: `*`, named slash paths, or none. */
  expand: '*' | string[] | null;
  /** `$select` paths (slash separated), or null for all (no `$select`, or `$select=*`). */
  select: string[] | null;
  orderby: Array<{ path: string; desc: boolean }>;
  /** The query as given, in order (for nextLink). */
  raw: Array<[string, string]>;
}

const notAcceptable = (got: string) =>
  new Problem(406.1, 'Requested format not acceptable; this resource allows: application/json,json.', { allowed: ['application/json', 'json'], got });

function integer(name: string, value: string): number {
  if (!/^\d+$/.test(value)) throw problems.user.invalidDataTypeOfParameter({ field: name, expected: 'integer' });
  return Number(value);
}

/** `01` + base64(JSON object) (fact 20). @throws 400.35. */
export function decodeSkiptoken(token: string): Record<string, unknown> {
  const bad = () => new Problem(400.35, 'Invalid $skiptoken');
  if (!token.startsWith('01')) throw bad();
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(token.slice(2)), (ch) => ch.charCodeAt(0))));
    if (parsed == null || typeof parsed !== 'object' || Array.isArray(parsed)) throw bad();
    return parsed as Record<string, unknown>;
  } catch {
    throw bad();
  }
}

/** The token for a position (fact 20). */
export function encodeSkiptoken(value: Record<string, unknown>): string {
  const bytes = new TextEncoder().encode(JSON.stringify(value));
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return `01${btoa(bin)}`;
}

/**
 * Reads and checks a feed's query string.
 * @param entries the query parameters in order (URLSearchParams entries).
 * @throws 501.1 `{ feature }` an unknown parameter, or `$orderby` with `$skiptoken`; 406.1 a
 *   non-JSON `$format`; 400.11 a bad `$top`/`$skip`; 400.35 a malformed `$skiptoken`; 501.11
 *   `$select` with `$expand`; 501.5 `{ text }` an `$orderby` direction other than asc/desc.
 */
export function readFeedQuery(entries: Array<[string, string]>): FeedQuery {
  const q = new Map(entries);
  for (const [k] of entries) if (!KNOWN.has(k)) throw problems.internal.notImplemented({ feature: k });
  const format = q.get('$format');
  if (format != null && !/^(json|application\/json)/i.test(format)) throw notAcceptable(format);
  if (q.has('$orderby') && q.has('$skiptoken')) throw problems.internal.notImplemented({ feature: 'using $orderby and $skiptoken together' });
  if (q.has('$select') && q.has('$expand')) throw new Problem(501.11, "This server doesn't support $select query parameter with $expand.");
  const expandText = q.get('$expand');
  const orderby = (q.get('$orderby') ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => {
    const m = /^(\S+)(?:\s+(\S+))?/.exec(s)!;
    // As Central: a direction other than asc/desc is an unsupported field (501.5), named by itself.
    if (m[2] != null && !/^(asc|desc)$/i.test(m[2])) {
      throw new Problem(501.5, `The given OData filter expression references fields not supported by this server: ${m[2]}`, { text: m[2] });
    }
    // `$root/Submissions/__system/…` names the same field as `__system/…` (as in `$filter`).
    return { path: m[1]!.replace(/^\$root\/Submissions\//, ''), desc: (m[2] ?? '').toLowerCase() === 'desc' };
  });
  return {
    top: q.has('$top') ? integer('$top', q.get('$top')!) : null,
    // As Central, `$skip` does not apply once a `$skiptoken` says where to go on.
    skip: q.has('$skip') && !q.has('$skiptoken') ? integer('$skip', q.get('$skip')!) : 0,
    skiptoken: q.has('$skiptoken') ? decodeSkiptoken(q.get('$skiptoken')!) : null,
    count: q.get('$count') === 'true',
    wkt: q.get('$wkt') === 'true',
    filter: q.get('$filter') ?? null,
    expand: expandText == null || expandText === '' ? null : expandText === '*' ? '*' : expandText.split(',').map((s) => s.trim()),
    // `$select=*` is every property, as no `$select` (Central's selectFields).
    select: q.has('$select') && q.get('$select')!.trim() !== '*' ? q.get('$select')!.split(',').map((s) => s.trim()).filter((s) => s !== '') : null,
    orderby,
    raw: entries,
  };
}

/**
 * The `@odata.nextLink` of a page (fact 20), as Central writes it (util/http urlWithQueryParams):
 * the request URL's path as the client sent it, and its query as URLSearchParams writes it (form
 * encoding: a space is `+`, `'` is `%27`), `$skip` dropped and `$skiptoken` set in place (or added
 * at the end); under `$orderby`, `$skip` moved forward instead.
 */
export function nextLink(baseUrl: string, q: FeedQuery, next: { skiptoken: string } | { skip: number }): string {
  const params = new URLSearchParams(q.raw);
  params.delete('$skip');
  if ('skiptoken' in next) params.set('$skiptoken', next.skiptoken);
  else {
    params.delete('$skiptoken');
    params.set('$skip', String(next.skip));
  }
  return `${baseUrl}?${params.toString()}`;
}
