/**
 * The OData entity model of a form definition, as Central builds it (central-api.yaml, OData
 * Endpoints; shared/fixtures/central-outputs/README.md facts 12, 16, 17 and 21): the
 * `Submissions` table, one table per repeat named by its full path joined with dots, complex types
 * for groups, names made OData-safe. Pure.
 */
import { sanitizeOdataIdentifier } from '../xforms/parse-form';
import type { FormField } from '../xforms/types';

/** A node of the instance tree below the root. */
export interface ODataNode {
  /** OData-safe name (sanitizeOdataIdentifier). */
  name: string;
  /** Slash path of the XML element below the root (`/children/child`). */
  path: string;
  kind: 'leaf' | 'group' | 'repeat';
  /** The bind type of a leaf (`int`, `geopoint`…); '' for groups and repeats. */
  type: string;
  children: ODataNode[];
}

/** One entity set: `Submissions` or a repeat's. */
export interface ODataTable {
  /** `Submissions`, `Submissions.children.child`. */
  name: string;
  /** The repeat node (null for Submissions, whose children are the root's). */
  repeat: ODataNode | null;
  children: ODataNode[];
  /** The enclosing table (null for Submissions). */
  parent: ODataTable | null;
  /** Name of the parent-id property: `__Submissions-id`, `__Submissions-plural-id`… (null for Submissions). */
  parentIdName: string | null;
}

export interface ODataModel {
  xmlFormId: string;
  tables: ODataTable[];
  /** Groups in document order, each named by its path joined with dots (`plural.nested_repeat.g`). */
  complexTypes: Array<{ name: string; node: ODataNode }>;
  /** Every node by XML path. */
  byPath: Map<string, ODataNode>;
}

/** Central's OData type per bind type (fact 21); everything else is a string. */
export function edmType(type: string): string {
  switch (type) {
    case 'int': return 'Edm.Int64';
    case 'decimal': return 'Edm.Decimal';
    case 'date': return 'Edm.Date';
    case 'dateTime': return 'Edm.DateTimeOffset';
    case 'geopoint': return 'Edm.GeographyPoint';
    case 'geotrace': return 'Edm.GeographyLineString';
    case 'geoshape': return 'Edm.GeographyPolygon';
    default: return 'Edm.String';
  }
}

const dotted = (path: string) => path.slice(1).split('/').map(sanitizeOdataIdentifier).join('.');

/**
 * @param xmlFormId the form (names the schema namespace and container).
 * @param fields the definition's fields (`ParsedForm.fields`, depth first in instance order).
 * @returns the tables (Submissions first, repeats in document order), complex types and nodes.
 */
export function buildModel(xmlFormId: string, fields: FormField[]): ODataModel {
  const byPath = new Map<string, ODataNode>();
  const top: ODataNode[] = [];
  for (const f of fields) {
    const node: ODataNode = {
      name: sanitizeOdataIdentifier(f.name), path: f.path,
      kind: f.type === 'repeat' ? 'repeat' : f.type === 'structure' ? 'group' : 'leaf',
      type: f.type === 'repeat' || f.type === 'structure' ? '' : f.type, children: [],
    };
    byPath.set(f.path, node);
    const parent = byPath.get(f.path.slice(0, f.path.lastIndexOf('/')));
    (parent ? parent.children : top).push(node);
  }
  const root: ODataTable = { name: 'Submissions', repeat: null, children: top, parent: null, parentIdName: null };
  const tables: ODataTable[] = [root];
  const complexTypes: ODataModel['complexTypes'] = [];
  const walk = (nodes: ODataNode[], table: ODataTable) => {
    for (const n of nodes) {
      if (n.kind === 'group') {
        complexTypes.push({ name: dotted(n.path), node: n });
        walk(n.children, table);
      } else if (n.kind === 'repeat') {
        const t: ODataTable = {
          name: `Submissions.${dotted(n.path)}`, repeat: n, children: n.children, parent: table,
          parentIdName: table.repeat == null ? '__Submissions-id' : `__Submissions-${table.repeat.path.slice(1).split('/').map(sanitizeOdataIdentifier).join('-')}-id`,
        };
        tables.push(t);
        walk(n.children, t);
      }
    }
  };
  walk(top, root);
  return { xmlFormId, tables, complexTypes, byPath };
}
