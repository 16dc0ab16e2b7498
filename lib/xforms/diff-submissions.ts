/**
 * Submission diff: what changed between two versions (edits) of one submission, in the shape of
 * Central's `GET S/diffs` (shared/spec/interface.md, "Submission diff"; the captured reference is
 * shared/fixtures/central-outputs/withrepeat/api/submission-diffs.json). This module computes one
 * entry of that object (the changes from one version to the next); the caller keys the entries by
 * the newer version's instanceId.
 *
 * Pure (no I/O, no clock, no `node:` imports): runs on Node and Cloudflare Workers. The XML is read
 * with ./parse-submission.ts (so no DTD, no entity expansion) into ./xml-tree.ts element trees.
 */
import { readSubmission } from './parse-submission';
import type { FormField } from './types';
import type { El } from './xml-tree';

/**
 * A node's value in a change: a leaf's text; for a group, an object of child local name → value
 * (keys in document order); for a repeat (or any name occurring several times), an array of the
 * instances' values.
 */
export type DiffValue = string | { [name: string]: DiffValue } | DiffValue[];

/**
 * One change. Keys are in Central's order: `old`, `new`, `path`. A changed leaf has both `old` and
 * `new`; a node only in the newer version has `new` only; a node only in the older has `old` only.
 * `path` runs from a child of the root down to the node, by local name (prefixes stripped); a
 * repeat instance is `[name, index]` with its 0-based index among its same-named siblings.
 */
export interface SubmissionDiffChange {
  old?: DiffValue;
  new?: DiffValue;
  path: Array<string | [string, number]>;
}

// ─────────────────────────────────────────────────────────────────────────────
// The form's fields as a tree, so each step down the XML is one Map lookup (no path strings to
// build and hash at every depth).

interface FieldNode {
  type: string | undefined;
  children: Map<string, FieldNode>;
}

function fieldTree(fields: FormField[]): FieldNode {
  const root: FieldNode = { type: undefined, children: new Map() };
  for (const f of fields) {
    let node = root;
    for (const step of f.path.split('/')) {
      if (step === '') continue;
      let next = node.children.get(step);
      if (!next) {
        next = { type: undefined, children: new Map() };
        node.children.set(step, next);
      }
      node = next;
    }
    node.type = f.type;
  }
  return root;
}

const isGroupField = (field: FieldNode | undefined) => field?.type === 'structure' || field?.type === 'repeat';

/**
 * A group is an element with child elements, or an empty one the form declares as a group or
 * repeat (so `<hospital/>` reads as `{}`, not as the text '').
 */
const isGroup = (el: El, field: FieldNode | undefined) =>
  el.children.length > 0 || (isGroupField(field) && el.text.trim() === '');

/** Repeats are addressed by index: when the form says so, or when the name occurs several times (else the path would be ambiguous). */
const isRepeat = (field: FieldNode | undefined, ...counts: number[]) =>
  field?.type === 'repeat' || counts.some((n) => n > 1);

/** Child elements grouped by local name, names in first-occurrence order (Map keeps insertion order). */
function byName(el: El): Map<string, El[]> {
  const out = new Map<string, El[]>();
  for (const c of el.children) {
    const list = out.get(c.local);
    if (list) list.push(c);
    else out.set(c.local, [c]);
  }
  return out;
}

/** Sets an own enumerable key; plain assignment would treat an element named `__proto__` as the prototype. */
function define(obj: { [name: string]: DiffValue }, name: string, value: DiffValue): void {
  Object.defineProperty(obj, name, { value, enumerable: true, writable: true, configurable: true });
}

/** The whole subtree's value (iterative: a deep document must not overflow the call stack). */
function valueOf(el: El, field: FieldNode | undefined): DiffValue {
  if (!isGroup(el, field)) return el.text;
  const top: { [name: string]: DiffValue } = {};
  const stack: Array<{ el: El; field: FieldNode | undefined; obj: { [name: string]: DiffValue } }> = [{ el, field, obj: top }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    for (const [name, els] of byName(item.el)) {
      const f = item.field?.children.get(name);
      // Containers are created (and keyed) while the parent is visited, so key order is document
      // order whatever order the stack fills them in.
      const values = els.map((c): DiffValue => {
        if (!isGroup(c, f)) return c.text;
        const obj: { [name: string]: DiffValue } = {};
        stack.push({ el: c, field: f, obj });
        return obj;
      });
      define(item.obj, name, isRepeat(f, els.length) ? values : (values[0] as DiffValue));
    }
  }
  return top;
}

/** A path as a linked list, materialized only when a change is reported (cheap for deep trees). */
interface PathLink {
  up: PathLink | null;
  step: string | [string, number];
}

function pathOf(link: PathLink): Array<string | [string, number]> {
  const out: Array<string | [string, number]> = [];
  for (let l: PathLink | null = link; l; l = l.up) out.push(l.step);
  return out.reverse();
}

/** A node to compare: present in both versions, or only in one of them. */
interface Pair {
  older: El | undefined;
  newer: El | undefined;
  field: FieldNode | undefined;
  path: PathLink | null;
}

/**
 * The child pairs of two matching groups, in report order. Names: the older version's order, then
 * names only in the newer (Central's order: its fixture lists the new `deprecatedID` after the
 * changed `instanceID`, though `deprecatedID` comes first in the newer XML). Same-named siblings
 * are paired by position; the extra ones at the end are additions or removals.
 */
function childPairs(older: El, newer: El, field: FieldNode | undefined, path: PathLink | null): Pair[] {
  const olderKids = byName(older);
  const newerKids = byName(newer);
  const names = [...olderKids.keys()];
  for (const name of newerKids.keys()) if (!olderKids.has(name)) names.push(name);

  const out: Pair[] = [];
  for (const name of names) {
    const o = olderKids.get(name) ?? [];
    const n = newerKids.get(name) ?? [];
    const f = field?.children.get(name);
    const indexed = isRepeat(f, o.length, n.length);
    for (let i = 0; i < Math.max(o.length, n.length); i += 1) {
      out.push({ older: o[i], newer: n[i], field: f, path: { up: path, step: indexed ? [name, i] : name } });
    }
  }
  return out;
}

/**
 * Computes the changes from one version of a submission to the next (one value of Central's
 * "Submission diff" object, interface.md: the caller keys it by the newer version's instanceId).
 *
 * Input: the older and the newer version's XML (string, or UTF-8 bytes; a BOM is allowed), and
 * the form version's fields (`ParsedForm.fields`, Central's `GET F/fields`), which say which paths
 * are repeats (addressed `[name, index]`) and groups. Everything below the root element is
 * compared, by local name (`orx:meta` is `meta`); attributes and the root itself are ignored.
 *
 * Output: `SubmissionDiffChange[]`, [] when nothing differs:
 * - a leaf whose text differs (exact text, not trimmed): `{ old, new, path }`;
 * - a leaf, group or repeat instance only in the newer version: `{ new, path }`, once at that node,
 *   the value holding its whole subtree; only in the older: `{ old, path }`;
 * - a node that is a leaf in one version and a group in the other: `{ old, new, path }`.
 * Repeat instances are compared position by position (instance i with instance i). The meta
 * nodes are compared like any other, so an edit reports its new instanceID (old/new) and its
 * deprecatedID (new only). Order: depth first; within a group, the older version's element order,
 * then elements only in the newer in theirs (the order Central's captured output shows).
 *
 * Pure: same inputs, same output; no I/O.
 *
 * @throws Problem 400.1 (format 'submission xml', with line and column) when either input is
 *   malformed XML or has a DOCTYPE; 400.2 `{ field: 'form ID xml attribute' }` when either has
 *   no root `id` (stored versions always have one), as ./parse-submission.ts `readSubmission`.
 */
export function diffSubmissionXml(older: string | Uint8Array, newer: string | Uint8Array, fields: FormField[]): SubmissionDiffChange[] {
  const olderRoot = readSubmission(older).root;
  const newerRoot = readSubmission(newer).root;

  const changes: SubmissionDiffChange[] = [];
  // Depth first with an explicit stack (deep documents must not overflow the call stack);
  // children are pushed in reverse so they pop in report order.
  const stack = childPairs(olderRoot, newerRoot, fieldTree(fields), null).reverse();
  for (let pair = stack.pop(); pair; pair = stack.pop()) {
    const { older: o, newer: n, field, path } = pair;
    // Every pair has a path: pairs are only made for children of the root or deeper.
    const at = () => pathOf(path as PathLink);
    if (o && n) {
      const og = isGroup(o, field);
      const ng = isGroup(n, field);
      if (og && ng) {
        const kids = childPairs(o, n, field, path);
        for (let i = kids.length - 1; i >= 0; i -= 1) stack.push(kids[i] as Pair);
      } else if (!og && !ng) {
        if (o.text !== n.text) changes.push({ old: o.text, new: n.text, path: at() });
      } else {
        changes.push({ old: valueOf(o, field), new: valueOf(n, field), path: at() });
      }
    } else if (n) {
      changes.push({ new: valueOf(n, field), path: at() });
    } else if (o) {
      changes.push({ old: valueOf(o, field), path: at() });
    }
  }
  return changes;
}
