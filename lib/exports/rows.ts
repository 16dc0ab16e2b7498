/**
 * Turns one submission version's stored values (lib/xforms/parse-submission `values`, derived at
 * ingestion) into CSV rows: the root row's field cells and the rows of each repeat table with
 * their KEY / PARENT_KEY (shared/fixtures/central-outputs/README.md facts 3, 4, 6 and 7). Pure.
 */
import type { SubmissionValue } from '../xforms/types';
import { cell, type ExportTable } from './tables';

/** The field cells of the root row (the metadata columns are the caller's). */
export function rootCells(table: ExportTable, values: SubmissionValue[]): string[] {
  const byPath = new Map<string, string>();
  for (const v of values) if (v.repeatIndex.length === 0 && !byPath.has(v.path)) byPath.set(v.path, v.value);
  return table.columns.map((c) => cell(c, byPath.get(c.path)));
}

/**
 * KEY of a repeat row: the root instanceID, then every path step below the root with `[n]`
 * (1-based) after each repeat step: `rtwo/children/child[2]`, `double/children/child[2]/toys/toy[3]`.
 */
export function repeatKey(rootId: string, chain: string[], index: number[]): string {
  const last = chain[chain.length - 1]!;
  let out = rootId;
  let path = ''; // the plain path walked so far (without the `[n]` indexes)
  let at = 0;
  for (const step of last.slice(1).split('/')) {
    out += `/${step}`;
    path += `/${step}`;
    if (at < chain.length && path === chain[at]) {
      out += `[${index[at]}]`;
      at += 1;
    }
  }
  return out;
}

/**
 * The rows of one repeat table for one submission, in document order: field cells, then
 * PARENT_KEY and KEY. An instance counts when any value lies inside it (also one of a nested
 * repeat), so an instance holding only a nested repeat still gets its row.
 */
export function repeatRows(table: ExportTable, values: SubmissionValue[], rootId: string): string[][] {
  const repeatPath = table.repeatPath!;
  const depth = table.repeatChain.length;
  const rows = new Map<string, { index: number[]; byPath: Map<string, string> }>();
  for (const v of values) {
    if (v.path !== repeatPath && !v.path.startsWith(`${repeatPath}/`)) continue;
    if (v.repeatIndex.length < depth) continue;
    const index = v.repeatIndex.slice(0, depth);
    const id = index.join('.');
    let row = rows.get(id);
    if (!row) rows.set(id, (row = { index, byPath: new Map() }));
    if (v.repeatIndex.length === depth && !row.byPath.has(v.path)) row.byPath.set(v.path, v.value);
  }
  const out: string[][] = [];
  for (const { index, byPath } of rows.values()) {
    const parentKey = depth === 1 ? rootId : repeatKey(rootId, table.repeatChain.slice(0, -1), index.slice(0, -1));
    out.push([...table.columns.map((c) => cell(c, byPath.get(c.path))), parentKey, repeatKey(rootId, table.repeatChain, index)]);
  }
  return out;
}

/**
 * One CSV line (RFC 4180, `\n` ending): a cell is quoted, with quotes doubled, when it holds a
 * comma, a quote, CR or LF; everything else (leading spaces, `=+-@`) is written as it is, as
 * Central writes it.
 */
export function csvLine(cells: string[]): string {
  let out = '';
  for (let i = 0; i < cells.length; i += 1) {
    const c = cells[i]!;
    if (i > 0) out += ',';
    out += /[",\r\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c;
  }
  return `${out}\n`;
}
