/**
 * The tables of a CSV export, as Central lays them out (shared/fixtures/central-outputs/README.md,
 * facts 1, 2, 6, 9, 10 and 11): the root table, then one table per repeat in form order; each
 * table's columns are its own leaf fields (groups flattened, nested repeats left to their own
 * table), geopoints split in four, select multiples optionally split per option, deleted fields
 * optionally appended. Pure: no database, HTTP or clock.
 */
import type { FormField } from '../xforms/types';

/** One CSV column: which value it shows, and how. */
export interface ExportColumn {
  header: string;
  /** The field's slash path below the instance root. */
  path: string;
  /** A geopoint part (0 latitude, 1 longitude, 2 altitude, 3 accuracy), or a select-multiple option (`1`/`0`). */
  part?: { geo: number } | { option: string };
}

/** One CSV file of the export. */
export interface ExportTable {
  /** `<xmlFormId>.csv` or `<xmlFormId>-<repeat name>.csv`. */
  fileName: string;
  /** null for the root table, else the repeat's path (`/children/child`). */
  repeatPath: string | null;
  /** The repeat paths from the outermost to this table's own (empty for the root). */
  repeatChain: string[];
  columns: ExportColumn[];
}

export interface ExportOptions {
  /** `groupPaths` (default true): group names joined with `-`; false keeps the last name only. */
  groupPaths: boolean;
  /** `deletedFields` (default false): fields of earlier versions missing from the current one come back. */
  deletedFields: boolean;
  /** `splitSelectMultiples` (default false): one 0/1 column per option seen, after the field's own. */
  splitSelectMultiples: boolean;
}

const GEO_PARTS = ['Latitude', 'Longitude', 'Altitude', 'Accuracy'];

/** The nearest repeat path enclosing (or equal to) `path`, or null. */
function tableOf(path: string, repeats: string[]): string | null {
  let best: string | null = null;
  for (const r of repeats) if ((path === r || path.startsWith(`${r}/`)) && (best == null || r.length > best.length)) best = r;
  return best;
}

/**
 * Lays out the export tables.
 * @param xmlFormId names the files.
 * @param current the fields of the exported definition (the current published one, or the draft).
 * @param older the fields of the other published definitions, newest first (for `deletedFields`).
 * @param options the three flags.
 * @param selectOptions for `splitSelectMultiples`: path → the options seen in the exported data,
 *   in the order they get columns (Central: alphabetical).
 * @returns the root table first, then one per repeat in form order.
 */
export function exportTables(
  xmlFormId: string,
  current: FormField[],
  older: FormField[][],
  options: ExportOptions,
  selectOptions: Map<string, string[]> = new Map(),
): ExportTable[] {
  const isLeaf = (f: FormField) => f.type !== 'structure' && f.type !== 'repeat';
  const known = new Set(current.map((f) => f.path));
  const deleted: FormField[] = [];
  if (options.deletedFields) {
    const seen = new Set<string>();
    for (const fields of older) {
      for (const f of fields) {
        if (known.has(f.path) || seen.has(f.path)) continue;
        seen.add(f.path);
        deleted.push(f);
      }
    }
    // Central appends them after the current fields, last-declared first (central-outputs/deletedFields).
    deleted.reverse();
  }
  const all = [...current, ...deleted];
  const repeats = all.filter((f) => f.type === 'repeat').map((f) => f.path);
  const tables: ExportTable[] = [null, ...repeats].map((repeatPath) => ({
    fileName: repeatPath == null ? `${xmlFormId}.csv` : `${xmlFormId}-${repeatPath.slice(repeatPath.lastIndexOf('/') + 1)}.csv`,
    repeatPath,
    repeatChain: repeatPath == null ? [] : repeats.filter((r) => repeatPath === r || repeatPath.startsWith(`${r}/`)).sort((a, b) => a.length - b.length),
    columns: [],
  }));
  const byRepeat = new Map(tables.map((t) => [t.repeatPath, t]));
  for (const f of all.filter(isLeaf)) {
    const table = byRepeat.get(tableOf(f.path, repeats))!;
    const relative = table.repeatPath == null ? f.path.slice(1) : f.path.slice(table.repeatPath.length + 1);
    const header = options.groupPaths ? relative.split('/').join('-') : f.name;
    if (f.type === 'geopoint') {
      GEO_PARTS.forEach((part, geo) => table.columns.push({ header: `${header}-${part}`, path: f.path, part: { geo } }));
      continue;
    }
    table.columns.push({ header, path: f.path });
    if (options.splitSelectMultiples && f.selectMultiple) {
      for (const option of selectOptions.get(f.path) ?? []) table.columns.push({ header: `${header}/${option}`, path: f.path, part: { option } });
    }
  }
  return tables;
}

/** The tokens of a select-multiple answer (space separated, blanks ignored). Pure. */
export const selectTokens = (value: string): string[] => value.split(/\s+/).filter((t) => t !== '');

/** One cell of a column for a value (undefined: the element was absent). Pure. */
export function cell(column: ExportColumn, value: string | undefined): string {
  const part = column.part;
  if (part == null) return value ?? '';
  if ('option' in part) return value != null && selectTokens(value).includes(part.option) ? '1' : '0';
  if (value == null || value === '') return '';
  return value.split(' ')[part.geo] ?? '';
}
