/**
 * OData JSON rows of a submission, as Central writes them (shared/fixtures/central-outputs
 * README facts 13–18): fields nested by group in document order, typed values, GeoJSON (or WKT),
 * repeat navigation links (and `$expand` arrays), `__id` (the logical instanceID, or the SHA-1 of a
 * repeat row's position) and `__system`. Pure (hashing with @noble/hashes, Workers-safe).
 */
import { sha1 } from '@noble/hashes/legacy.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { sanitizeOdataIdentifier } from '../xforms/parse-form';
import type { SubmissionValue } from '../xforms/types';
import type { SubmissionDataRow } from '../submissions/rows';
import type { ODataModel, ODataNode, ODataTable } from './model';

/**
 * The navigation-link steps from one node down to another (`/children/child`, from XML paths
 * `basePath` and `path`), each step OData-safe as the table names are (`/q1.8-test` → `/q1_8_test`).
 */
const linkSteps = (path: string, basePath: string) =>
  path.slice(basePath.length).split('/').map((s) => (s === '' ? s : sanitizeOdataIdentifier(s))).join('/');

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/**
 * What a row needs besides the values: the submission's metadata (REST names), as the page query
 * reads it (lib/submissions/rows.ts), plus the attachment counts and the encryption status.
 */
export type SubmissionMeta = Pick<
  SubmissionDataRow,
  'instanceId' | 'createdAt' | 'updatedAt' | 'deletedAt' | 'submitterId' | 'submitterName' | 'reviewState' | 'deviceId' | 'edits' | 'formVersion'
> & {
  attachmentsPresent: number;
  attachmentsExpected: number;
  /** null, `notDecrypted` or `missingEncryptedFormData`. */
  status: string | null;
};

export interface RowOptions {
  /** `$wkt=true`: geometry as WKT text instead of GeoJSON. */
  wkt: boolean;
  /** `$expand`: `*` for every repeat at every depth, else the repeat paths to inline (slash paths below the root). */
  expand: '*' | Set<string> | null;
}

/** `__system` in Central's key order; submitterId as a string (fact 13). */
export function systemJson(m: SubmissionMeta): { [k: string]: Json } {
  return {
    submissionDate: m.createdAt.toISOString(),
    updatedAt: m.updatedAt?.toISOString() ?? null,
    submitterId: m.submitterId == null ? null : String(m.submitterId),
    submitterName: m.submitterName,
    attachmentsPresent: m.attachmentsPresent,
    attachmentsExpected: m.attachmentsExpected,
    status: m.status,
    reviewState: m.reviewState,
    deviceId: m.deviceId,
    edits: m.edits,
    formVersion: m.formVersion,
    deletedAt: m.deletedAt?.toISOString() ?? null,
  };
}

// ─── values ────────────────────────────────────────────────────────────────────────────────

const num = (s: string | undefined) => (s == null || s === '' ? undefined : Number(s));

function geoPoints(text: string): Array<{ coords: number[]; accuracy: number | undefined }> {
  return text.split(';').map((p) => p.trim()).filter((p) => p !== '').map((p) => {
    const [lat, lon, alt, acc] = p.split(/\s+/);
    const coords = [Number(lon), Number(lat)];
    const a = num(alt);
    if (a !== undefined) coords.push(a);
    return { coords, accuracy: num(acc) };
  });
}

function geo(type: string, text: string, wkt: boolean): Json {
  const pts = geoPoints(text);
  if (pts.length === 0) return null;
  if (type === 'geopoint') {
    const p = pts[0]!;
    if (wkt) return `POINT (${p.coords.join(' ')})`;
    return p.accuracy === undefined ? { type: 'Point', coordinates: p.coords } : { type: 'Point', coordinates: p.coords, properties: { accuracy: p.accuracy } };
  }
  const line = pts.map((p) => p.coords);
  const accuracies = pts.map((p) => p.accuracy ?? 0);
  const withAccuracies = (g: { [k: string]: Json }) => {
    if (accuracies.some((a) => a !== 0)) g.properties = { accuracies };
    return g;
  };
  if (type === 'geotrace') {
    if (wkt) return `LINESTRING (${line.map((c) => c.join(' ')).join(',')})`;
    return withAccuracies({ type: 'LineString', coordinates: line });
  }
  if (wkt) return `POLYGON ((${line.map((c) => c.join(' ')).join(',')}))`;
  return withAccuracies({ type: 'Polygon', coordinates: [line] });
}

/** A leaf's JSON value by its bind type (fact 14): empty or missing → null. */
export function leafValue(type: string, text: string | undefined, wkt: boolean): Json {
  if (text == null || text === '') return null;
  switch (type) {
    case 'int': {
      const n = Number.parseInt(text, 10);
      return Number.isNaN(n) ? null : n;
    }
    case 'decimal': {
      const n = Number.parseFloat(text);
      return Number.isNaN(n) ? null : n;
    }
    case 'geopoint': case 'geotrace': case 'geoshape':
      return geo(type, text, wkt);
    case 'dateTime':
      // A bare `+hh` offset gets `:00` (Central, by code reading; fact 14).
      return text.replace(/([+-]\d\d)$/, '$1:00');
    default:
      return text;
  }
}

// ─── one submission's instance tree ──────────────────────────────────────────────────────────

/** The stored values of one version, indexed for row building. */
export class Instance {
  private readonly leaves = new Map<string, string>();
  /** repeat path + parent index prefix → instance indexes (1-based) in first-seen order. */
  private readonly repeats = new Map<string, number[]>();

  /** Values outside repeats given as one object (root_values): read directly, no index to build. */
  private readonly root: Record<string, string> | null;

  constructor(values: SubmissionValue[] | Record<string, string>, repeatChainOf: (path: string) => string[]) {
    if (!Array.isArray(values)) {
      this.root = values;
      return;
    }
    this.root = null;
    for (const v of values) {
      const key = `${v.path}#${v.repeatIndex.join('.')}`;
      if (!this.leaves.has(key)) this.leaves.set(key, v.value);
      const chain = repeatChainOf(v.path);
      for (let k = 0; k < chain.length && k < v.repeatIndex.length; k += 1) {
        const at = `${chain[k]}#${v.repeatIndex.slice(0, k).join('.')}`;
        const list = this.repeats.get(at) ?? [];
        if (!list.includes(v.repeatIndex[k]!)) list.push(v.repeatIndex[k]!);
        this.repeats.set(at, list);
      }
    }
  }

  leaf(path: string, index: number[]): string | undefined {
    if (this.root) return index.length === 0 ? this.root[path] : undefined;
    return this.leaves.get(`${path}#${index.join('.')}`);
  }

  instances(repeatPath: string, parentIndex: number[]): number[] {
    return [...(this.repeats.get(`${repeatPath}#${parentIndex.join('.')}`) ?? [])].sort((a, b) => a - b);
  }
}

/** The repeat paths enclosing (or equal to) a path, outermost first, per the model. */
export function repeatChainFn(model: ODataModel): (path: string) => string[] {
  const repeats = model.tables.slice(1).map((t) => t.repeat!.path);
  const cache = new Map<string, string[]>();
  return (path) => {
    let c = cache.get(path);
    if (!c) {
      c = repeats.filter((r) => path === r || path.startsWith(`${r}/`)).sort((a, b) => a.length - b.length);
      cache.set(path, c);
    }
    return c;
  };
}

/**
 * `__id` of a repeat row (fact 17): SHA-1 hex of `Submissions#<root instanceID>` plus, per path
 * step below the root, `%%<name>#` for a group and `%%<name>#<0-based index>` for a repeat.
 */
export function repeatRowId(rootId: string, repeatPath: string, chain: string[], index: number[]): string {
  let text = `Submissions#${rootId}`;
  let at = 0;
  let path = '';
  for (const step of repeatPath.slice(1).split('/')) {
    path += `/${step}`;
    if (at < chain.length && chain[at] === path) {
      text += `%%${step}#${index[at]! - 1}`;
      at += 1;
    } else {
      text += `%%${step}#`;
    }
  }
  return bytesToHex(sha1(utf8ToBytes(text)));
}

/** Builds rows of one submission for the model's tables. */
export class RowBuilder {
  private readonly chainOf: (path: string) => string[];

  constructor(private readonly model: ODataModel, private readonly options: RowOptions) {
    this.chainOf = repeatChainFn(model);
  }

  instance(values: SubmissionValue[] | Record<string, string>): Instance {
    return new Instance(values, this.chainOf);
  }

  private expands(node: ODataNode): boolean {
    const e = this.options.expand;
    return e === '*' || (e != null && e.has(node.path));
  }

  /** Fields of a node list into `out`; repeats directly in `deferred` (they go after the ids) when given. */
  private fill(out: { [k: string]: Json }, nodes: ODataNode[], inst: Instance, rootId: string, index: number[], base: string, basePath: string, deferred: Array<[string, Json]> | null): void {
    for (const n of nodes) {
      if (n.kind === 'leaf') {
        out[n.name] = leafValue(n.type, inst.leaf(n.path, index), this.options.wkt);
      } else if (n.kind === 'group') {
        const group: { [k: string]: Json } = {};
        this.fill(group, n.children, inst, rootId, index, base, basePath, null);
        out[n.name] = group;
      } else {
        const found = inst.instances(n.path, index);
        if (found.length === 0) continue;
        const link = `${base}${linkSteps(n.path, basePath)}`;
        const entries: Array<[string, Json]> = [[`${n.name}@odata.navigationLink`, link]];
        if (this.expands(n)) entries.push([n.name, found.map((i) => this.repeatRow(n, inst, rootId, [...index, i], link, true))]);
        if (deferred) deferred.push(...entries);
        else for (const [k, v] of entries) out[k] = v;
      }
    }
  }

  /**
   * A row of a repeat table (or an expanded one): fields, `__id`, the parent id (not when
   * expanded), then links of repeats directly inside it.
   * @param link the navigation link of the repeat collection this row belongs to.
   */
  repeatRow(node: ODataNode, inst: Instance, rootId: string, index: number[], link: string, expanded: boolean, parentId?: string): { [k: string]: Json } {
    const out: { [k: string]: Json } = {};
    const id = repeatRowId(rootId, node.path, this.chainOf(node.path), index);
    const deferred: Array<[string, Json]> = [];
    this.fill(out, node.children, inst, rootId, index, `${link}('${id}')`, node.path, deferred);
    out.__id = id;
    if (!expanded && parentId !== undefined) {
      const table = this.model.tables.find((t) => t.repeat === node)!;
      out[table.parentIdName!] = parentId;
    }
    for (const [k, v] of deferred) out[k] = v;
    return out;
  }

  /** A row of Submissions (fact 13): fields, `__id`, `__system`, then links of root-level repeats. */
  rootRow(meta: SubmissionMeta, values: SubmissionValue[] | Record<string, string> | null): { [k: string]: Json } {
    const out: { [k: string]: Json } = {};
    const deferred: Array<[string, Json]> = [];
    // Encrypted rows that were not decrypted hold only __id and __system.
    if (values) this.fill(out, this.model.tables[0]!.children, this.instance(values), meta.instanceId, [], `Submissions('${encodeURIComponent(meta.instanceId)}')`, '', deferred);
    out.__id = meta.instanceId;
    out.__system = systemJson(meta);
    for (const [k, v] of deferred) out[k] = v;
    return out;
  }

  /**
   * Every row of a repeat table for one submission, in document order, optionally only those
   * under one parent row (`Submissions('id')/…/repeat` paths).
   */
  tableRows(table: ODataTable, rootId: string, values: SubmissionValue[], parent?: { index: number[] }): Array<{ [k: string]: Json }> {
    const inst = this.instance(values);
    const node = table.repeat!;
    const chain = this.chainOf(node.path);
    const rows: Array<{ [k: string]: Json }> = [];
    const root = `Submissions('${encodeURIComponent(rootId)}')`;
    const walk = (level: number, index: number[], base: string, basePath: string) => {
      const r = chain[level]!;
      for (const i of inst.instances(r, index)) {
        const idx = [...index, i];
        const link = `${base}${linkSteps(r, basePath)}`;
        if (level === chain.length - 1) {
          const parentId = level === 0 ? rootId : repeatRowId(rootId, chain[level - 1]!, chain.slice(0, level), index);
          rows.push(this.repeatRow(node, inst, rootId, idx, link, false, parentId));
        } else {
          walk(level + 1, idx, `${link}('${repeatRowId(rootId, r, chain.slice(0, level + 1), idx)}')`, r);
        }
      }
    };
    if (parent) {
      const level = parent.index.length;
      let base = root;
      let basePath = '';
      for (let k = 0; k < level; k += 1) {
        base = `${base}${linkSteps(chain[k]!, basePath)}('${repeatRowId(rootId, chain[k]!, chain.slice(0, k + 1), parent.index.slice(0, k + 1))}')`;
        basePath = chain[k]!;
      }
      const r = chain[level]!;
      for (const i of inst.instances(r, parent.index)) {
        const idx = [...parent.index, i];
        const parentId = level === 0 ? rootId : repeatRowId(rootId, chain[level - 1]!, chain.slice(0, level), parent.index);
        rows.push(this.repeatRow(node, inst, rootId, idx, `${base}${linkSteps(r, basePath)}`, false, parentId));
      }
      return rows;
    }
    walk(0, [], root, '');
    return rows;
  }
}

// ─── Submissions rows as JSON text ───────────────────────────────────────────────────────────

/** Types leafValue converts (numbers, geometry, dateTime); any other type's value is its text. */
const CONVERTED = new Set(['int', 'decimal', 'geopoint', 'geotrace', 'geoshape', 'dateTime']);

/**
 * The leaf texts of one row for RootJsonWriter: `text(i)` is leaf i's text (undefined when the
 * submission has none); with `escaped`, each text is already JSON-escaped (what goes between the
 * quotes of its JSON string), so that a row's texts are escaped in one JSON.stringify.
 */
export interface LeafSource {
  text: (i: number) => string | undefined;
  escaped: boolean;
  /**
   * The row's root_text itself, when its cells are exactly the writer's leaves in order and it
   * holds nothing JSON escapes (no `"`, `\\`, control character other than the separators, lone
   * surrogate): RootJsonWriter.rowBytes copies it to UTF-8 in one pass.
   */
  raw?: string;
}

const utf8 = new TextEncoder();


/**
 * Writes Submissions rows of a model without repeats straight as JSON text: the same text as
 * `JSON.stringify(new RowBuilder(model, options).rootRow(meta, values))` (keys in the same order,
 * values through leafValue), without building a row object per submission. The row objects of a
 * 1,000-row page of the 250-question form and their JSON.stringify were a third of the server's CPU
 * for the page (issue 21: garbage collection, `fill`/`leaf`, stringify). Pure.
 */
export class RootJsonWriter {
  /** The model's leaves outside repeats in the order rows show them (the order `text` takes values in). */
  readonly leafPaths: string[] = [];
  /**
   * Per leaf: the literal text before its value (`,"name":`, with `{` openings and `}` closings of
   * groups), as is (`b0`) and after a string value that still needs its closing quote (`b1`),
   * each also with the opening quote of a string value (`…q`).
   */
  private readonly ops: Array<{ b0: string; b1: string; b0q: string; b1q: string; type: string; converted: boolean }> = [];
  /** The text after the last leaf (closings of groups, groups without leaves after it), as is and after an open string. */
  private readonly tail: [string, string];
  /** b0 of each leaf and the tail as UTF-8 (rowBytes); null when a leaf is converted (rowBytes does not apply). */
  private readonly bytes: { pre: Uint8Array[]; tail: Uint8Array; size: number } | null;
  /** rowBytes' output buffer and the buffer root_text is encoded into (grown as needed, reused per row). */
  private out = new Uint8Array(1 << 16);
  private scratch = new Uint8Array(1 << 14);

  constructor(model: ODataModel, private readonly options: Pick<RowOptions, 'wkt'>) {
    if (model.tables.length !== 1) throw new Error('RootJsonWriter: a model without repeats only');
    // Walk the nodes as `fill` does, collecting the literal text between leaf values.
    let pending = '';
    let first = true;
    const walk = (nodes: ODataNode[]) => {
      for (const n of nodes) {
        const key = `${first ? '' : ','}${JSON.stringify(n.name)}:`;
        first = false;
        if (n.kind === 'leaf') {
          const b = pending + key;
          this.ops.push({ b0: b, b1: `"${b}`, b0q: `${b}"`, b1q: `"${b}"`, type: n.type, converted: CONVERTED.has(n.type) });
          this.leafPaths.push(n.path);
          pending = '';
        } else {
          pending += `${key}{`;
          first = true;
          walk(n.children);
          pending += '}';
          first = false;
        }
      }
    };
    walk(model.tables[0]!.children);
    this.tail = [pending, `"${pending}`];
    const pre = this.ops.map((op) => utf8.encode(op.b0));
    const tail = utf8.encode(pending);
    this.bytes = this.ops.length === 0 || this.ops.some((op) => op.converted) ? null
      : { pre, tail, size: pre.reduce((n, b) => n + b.byteLength, tail.byteLength) };
  }

  /** Whether rowBytes applies (every leaf's value is its text: no int, decimal, geometry, dateTime; at least one leaf). */
  get writesBytes(): boolean {
    return this.bytes !== null;
  }

  /**
   * One row's JSON text as UTF-8, the same bytes as `utf8(row(meta, source))`, from a source's
   * `raw` root_text (see LeafSource.raw: the caller checked it needs no escaping and has one cell
   * per leaf): the text is encoded once and copied byte by byte between the leaves' key texts, with
   * no string per value (the strings and their concatenation were most of the server's CPU for a
   * 1,000-row page of the 250-question form, issue 21).
   * @returns a new array; null when the writer has a leaf of a converted type (int, decimal,
   *   geometry, dateTime) or none, or the text has fewer or more cells than leaves (use row).
   */
  rowBytes(meta: SubmissionMeta, raw: string): Uint8Array | null {
    const plan = this.bytes;
    if (!plan) return null;
    const idText = `,"__id":${JSON.stringify(meta.instanceId)},"__system":${JSON.stringify(systemJson(meta))}}`;
    if (this.scratch.byteLength < raw.length * 3) this.scratch = new Uint8Array(raw.length * 3 + 1024);
    const s = this.scratch;
    const n = utf8.encodeInto(raw, s).written;
    // Each value adds at most its quotes or `null` (4 bytes); the ids are at most 3 bytes per code unit.
    const need = 1 + n + plan.size + 4 * plan.pre.length + 3 * idText.length;
    if (this.out.byteLength < need) this.out = new Uint8Array(need + 1024);
    const b = this.out;
    const { pre } = plan;
    const last = pre.length - 1;
    let p = 0;
    b[p++] = 123; // {
    let q = 0;
    for (let cell = 0; ; cell += 1) {
      const k = pre[cell]!;
      for (let j = 0; j < k.length; j += 1) b[p++] = k[j]!;
      let c = q < n ? s[q]! : 31;
      if (c === 31) {
        b[p] = 110; b[p + 1] = 117; b[p + 2] = 108; b[p + 3] = 108;
        p += 4;
      } else {
        b[p++] = 34; // "
        do {
          b[p++] = c;
          q += 1;
          c = q < n ? s[q]! : 31;
        } while (c !== 31);
        b[p++] = 34;
      }
      // The separator after this cell (or the end of the text).
      if (cell === last) {
        if (q < n) return null;
        break;
      }
      if (q >= n) return null;
      q += 1;
    }
    b.set(plan.tail, p);
    p += plan.tail.byteLength;
    p += utf8.encodeInto(idText, b.subarray(p)).written;
    return b.slice(0, p);
  }

  /**
   * One row's JSON text.
   * @param source the row's leaf texts; null (an encrypted row not decrypted): only `__id` and
   *   `__system`, as rootRow.
   */
  row(meta: SubmissionMeta, source: LeafSource | null): string {
    let out = '{';
    if (source) {
      const wkt = this.options.wkt;
      const { text, escaped } = source;
      // Whether the last value written is a string still without its closing quote.
      let open = false;
      for (let i = 0; i < this.ops.length; i += 1) {
        const op = this.ops[i]!;
        const t = text(i);
        if (t == null || t === '') {
          out += open ? op.b1 : op.b0;
          out += 'null';
          open = false;
        } else if (!op.converted) {
          if (escaped) {
            out += open ? op.b1q : op.b0q;
            out += t;
            open = true;
          } else {
            out += open ? op.b1 : op.b0;
            out += JSON.stringify(t);
            open = false;
          }
        } else {
          out += open ? op.b1 : op.b0;
          // Numbers, geometry and dates hold nothing to escape; should one, read it back first.
          out += JSON.stringify(leafValue(op.type, escaped && t.includes('\\') ? JSON.parse(`"${t}"`) as string : t, wkt));
          open = false;
        }
      }
      out += this.tail[open ? 1 : 0];
      out += out.length > 1 ? ',"__id":' : '"__id":';
    } else {
      out += '"__id":';
    }
    out += `${JSON.stringify(meta.instanceId)},"__system":${JSON.stringify(systemJson(meta))}}`;
    return out;
  }
}
