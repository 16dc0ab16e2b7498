/**
 * Where each entity declaration goes (pyxform 4.5, entity spec 2025.1.0): every entity list is
 * written in the `meta` of one container (the survey, a group or a repeat), chosen from the
 * questions that refer to it (its save_to properties, and the `${}` variables of its label,
 * create_if, update_if and entity_id). A container holds one entity at most. Messages as
 * pyxform's ENTITY_009/011/012. Pure.
 */
import type { Element } from './build';
import { XlsFormError } from './types';

/** A container path from the survey root down: root first, then groups and repeats. */
type Path = Element[];

/** One reference to an entity list from a question. */
export interface EntityRef {
  path: Path;
  row: number;
  /** The save_to property, for a save_to reference. */
  property?: string;
  /** The question named by a variable, for a variable reference. */
  question?: string;
}

export interface EntityRefs {
  dataset: string;
  /** The entities sheet row of the declaration. */
  row: number;
  refs: EntityRef[];
}

interface Request {
  scope: Path;
  dataset: string;
  requested: Path;
  row: number;
  lineages: Path[];
}

const isBoundary = (p: Path, i: number) => i === 0 || p[i]!.kind === 'repeat';
/** The path down to the nearest repeat (or the root) at or above the path's end. */
function boundary(p: Path): Path {
  for (let i = p.length - 1; i >= 0; i--) if (isBoundary(p, i)) return p.slice(0, i + 1);
  return p.slice(0, 1);
}
/** Repeats on the path (the root not counted). */
const boundaryCount = (p: Path) => p.slice(1).filter((c) => c.kind === 'repeat').length;
/** Containers below the nearest boundary. */
function subpathCount(p: Path): number {
  let n = 0;
  for (let i = p.length - 1; i >= 0 && !isBoundary(p, i); i--) n++;
  return n;
}
const same = (a: Path, b: Path) => a.length === b.length && a.every((x, i) => x === b[i]);
const pathText = (p: Path) => `/${p.map((c, i) => (i === 0 ? 'survey' : c.name)).join('/')}`;
const rowAt = (n: number) => `[row : ${n}]`;

/** The containers above an element, root first. */
export function containerPath(el: Element): Path {
  const out: Path = [];
  for (let p = el.parent; p; p = p.parent) out.unshift(p);
  return out;
}

function request(e: EntityRefs): Request {
  let deepestScope: Path | null = null;
  let deepestScopeCount = -1;
  let deepestScopeRef: EntityRef | null = null;
  let deepestContainer: EntityRef | null = null;
  let deepestContainerSub = -1;
  let deepestSaveto: EntityRef | null = null;
  let deepestSavetoSub = -1;
  const lineages: Path[] = [];
  const bounds: Array<[EntityRef, Path]> = [];
  for (const ref of e.refs) {
    const sub = subpathCount(ref.path);
    const b = boundary(ref.path);
    const bCount = boundaryCount(b);
    if (deepestScope === null || bCount > deepestScopeCount) {
      if (deepestScope === null || !same(b, deepestScope)) {
        deepestContainer = ref;
        deepestContainerSub = sub;
        if (ref.property != null) {
          deepestSaveto = ref;
          deepestSavetoSub = sub;
        }
      }
      deepestScope = b;
      deepestScopeCount = bCount;
      deepestScopeRef = ref;
    }
    bounds.push([ref, b]);
    if (deepestContainer === null || (same(b, deepestScope) && sub > deepestContainerSub)) {
      deepestContainer = ref;
      deepestContainerSub = sub;
    }
    if (ref.property != null) {
      if (!lineages.some((l) => same(l, ref.path))) lineages.push(ref.path);
      if (deepestSaveto === null || (same(b, deepestScope) && sub > deepestSavetoSub)) {
        deepestSaveto = ref;
        deepestSavetoSub = sub;
      }
    }
  }
  let requested = (deepestSaveto ?? deepestContainer)!.path;
  if (lineages.length > 0) {
    const minLen = Math.min(...lineages.map((l) => l.length));
    const any = lineages[0]!;
    let common = any.slice(0, minLen);
    if (lineages.length > 1) {
      outer: for (let i = 0; i < minLen; i++) {
        for (const l of lineages) {
          if (l[i] !== any[i]) {
            common = any.slice(0, i);
            break outer;
          }
        }
      }
      const a = boundary(deepestSaveto!.path);
      const key = (p: Path) => [boundaryCount(p), subpathCount(p)] as const;
      const [ka, kc] = [key(a), key(common)];
      requested = kc[0] > ka[0] || (kc[0] === ka[0] && kc[1] > ka[1]) ? common : a;
    } else requested = common;
  }
  const requestedScope = boundary(requested);
  for (const [ref, b] of bounds) {
    if (!same(deepestScope!.slice(0, b.length), b)) {
      if (ref.property != null) {
        throw new XlsFormError(
          `${rowAt(ref.row)} On the 'survey' sheet, the 'save_to' value is invalid. The entity list name '${e.dataset}' has a reference in container scope '${pathText(deepestScopeRef!.path)}' which is not compatible with this 'save_to' reference in scope '${pathText(ref.path)}'. Please either: check the spelling of the list name in the 'save_to', or copy either value into the desired container scope with a 'calculate' question then use that 'calculate' for the 'save_to'.`,
        );
      }
      throw new XlsFormError(
        `${rowAt(e.row)} On the 'entities' sheet, the entity declaration is invalid. The entity list name '${e.dataset}' has a reference in container scope '${pathText(deepestScopeRef!.path)}' which is not compatible with the variable reference to '${ref.question}' in scope '${pathText(ref.path)}'. Please either: check the spelling of the variable references, or copy either value into the desired container scope with a 'calculate' question then use that 'calculate' for the 'save_to'.`,
      );
    }
    if (ref.property != null && !same(requestedScope, b)) {
      throw new XlsFormError(
        `${rowAt(ref.row)} On the 'survey' sheet, the 'save_to' value is invalid. The entity list name '${e.dataset}' has a reference in container scope '${pathText(requested)}' which is not compatible with this 'save_to' reference in scope '${pathText(ref.path)}'. Please either: check the spelling of the list name in the 'save_to', or copy either value into the desired container scope with a 'calculate' question then use that 'calculate' for the 'save_to'.`,
      );
    }
  }
  return { scope: deepestScope!, dataset: e.dataset, requested, row: e.row, lineages };
}

/**
 * Allocates every declared entity list to a container.
 * @param declared entity list names with their entities-sheet rows, in sheet order.
 * @param referenced the references found, in the order first met in the survey.
 * @returns container → entity list name.
 * @throws XlsFormError ENTITY_009/011/012.
 */
export function allocateEntities(root: Element, declared: Array<{ dataset: string; row: number }>, referenced: EntityRefs[]): Map<Element, string> {
  const scopes: Array<{ scope: Path; requests: Request[] }> = [];
  const addRequest = (r: Request) => {
    const found = scopes.find((s) => same(s.scope, r.scope));
    if (found) found.requests.push(r);
    else scopes.push({ scope: r.scope, requests: [r] });
  };
  for (const e of referenced) addRequest(request(e));
  for (const d of declared) {
    if (!referenced.some((e) => e.dataset === d.dataset)) addRequest({ scope: [root], dataset: d.dataset, requested: [root], row: d.row, lineages: [] });
  }
  const allocations = new Map<Element, string>();
  if (scopes.length === 1 && scopes[0]!.scope.length === 1 && scopes[0]!.requests.length === 1) {
    allocations.set(root, scopes[0]!.requests[0]!.dataset);
    return allocations;
  }
  const rowOf = new Map(declared.map((d) => [d.dataset, d.row]));
  const reserved = new Map<Element, string>();
  for (const { scope, requests } of scopes) {
    const limit = scope.length - 1;
    for (const req of [...requests].sort((a, b) => a.row - b.row)) {
      let conflict: string | undefined;
      for (let depth = req.requested.length; depth > limit; depth--) {
        const here = req.requested[depth - 1]!;
        conflict = allocations.get(here) ?? reserved.get(here);
        if (conflict !== undefined) {
          const first = req.lineages[0];
          const saveto = first ? reserved.get(first[first.length - 1]!) : undefined;
          if (saveto) {
            conflict = saveto;
            break;
          }
          continue;
        }
        allocations.set(here, req.dataset);
        reserved.set(here, req.dataset);
        for (const l of req.lineages) for (let i = l.length; i >= depth; i--) reserved.set(l[i - 1]!, req.dataset);
        break;
      }
      if (conflict !== undefined) {
        throw new XlsFormError(
          `${rowAt(req.row)} On the 'entities' sheet, the entity declaration is invalid. Each container (survey, group, repeat) may have only one entity declaration, but there are no valid containers available in the scope: '${pathText(scope)}', which has been allocated to the entity on row '${rowOf.get(conflict)}'. Please either: check which entities are referred to from the 'survey' sheetin the 'save_to' column, or check which questions are being referred to from the 'entities' sheet with variable references (such as in the 'label').`,
        );
      }
    }
  }
  return allocations;
}

/** '2025.1.0' when there are several entity lists or one sits in a repeat, else '2024.1.0'. */
export function entitiesVersion(allocations: Map<Element, string>): string {
  if (allocations.size > 1) return '2025.1.0';
  for (const c of allocations.keys()) if (boundaryCount([...containerPath(c), c]) > 0) return '2025.1.0';
  return '2024.1.0';
}
