/**
 * `$metadata` read by an independent OData CSDL parser (odata-csdl, OASIS's CSDL XML → JSON
 * converter, in strict mode) and checked against the form's fields as `GET F/fields` lists them:
 * every entity type and set (Submissions and one per repeat, at any depth, named by the dotted
 * path), every property with its Edm type, every group's complex type, every repeat's navigation
 * property, in document order. Then the feeds are read as a client that trusts the parsed model
 * would: every key of every row (and of every expanded row) is a declared property or navigation
 * link, and every value has its declared type.
 */
import { xml2json, type CsdlJson } from 'odata-csdl';
import { describe, expect, test } from 'vitest';
import { harness, json, type Harness } from '../../helpers/harness';
import { CO, feed, fixture, publishForm, scenarioOf, TYPED_FORM, TYPED_ID, typedForm, type Scenario } from './helpers';

interface Field {
  path: string;
  name: string;
  type: string;
}

/** Central's OData name rule (README fact 24), written here from its description, not imported. */
const sanitize = (name: string) => name.replace(/^([^a-z_])/i, '_$1').replace(/[^a-z0-9_]+/gi, '_');
const dotted = (path: string) => path.slice(1).split('/').map(sanitize).join('.');
const EDM: Record<string, string> = {
  int: 'Edm.Int64', decimal: 'Edm.Decimal', date: 'Edm.Date', dateTime: 'Edm.DateTimeOffset',
  geopoint: 'Edm.GeographyPoint', geotrace: 'Edm.GeographyLineString', geoshape: 'Edm.GeographyPolygon',
};

/** What a property looks like, both expected and parsed: `Edm.Int64`, `ns.meta`, or `nav Collection(ns.Submissions.x)`. */
type Shape = Record<string, string>;

interface Expected {
  ns: string;
  /** Entity type name → properties in order. */
  entityTypes: Map<string, Shape>;
  /** Complex type name → properties in order. */
  complexTypes: Map<string, Shape>;
}

/** The model the form's fields call for. */
function expectedModel(xmlFormId: string, fields: Field[]): Expected {
  const ns = `org.opendatakit.user.${sanitize(xmlFormId)}`;
  const parentOf = (p: string) => p.slice(0, p.lastIndexOf('/'));
  const shapeOf = (f: Field) => (f.type === 'repeat'
    ? `nav Collection(${ns}.Submissions.${dotted(f.path)})`
    : f.type === 'structure' ? `${ns}.${dotted(f.path)}` : EDM[f.type] ?? 'Edm.String');
  const members = (parent: string): Shape => Object.fromEntries(fields.filter((f) => parentOf(f.path) === parent).map((f) => [sanitize(f.name), shapeOf(f)]));
  const entityTypes = new Map<string, Shape>();
  entityTypes.set('Submissions', { __id: 'Edm.String', __system: 'org.opendatakit.submission.metadata', ...members('') });
  const repeatOf = (p: string): string | null => {
    for (let at = parentOf(p); at !== ''; at = parentOf(at)) if (fields.find((f) => f.path === at)?.type === 'repeat') return at;
    return null;
  };
  for (const r of fields.filter((f) => f.type === 'repeat')) {
    const up = repeatOf(r.path);
    const parentId = up == null ? '__Submissions-id' : `__Submissions-${up.slice(1).split('/').map(sanitize).join('-')}-id`;
    entityTypes.set(`Submissions.${dotted(r.path)}`, { __id: 'Edm.String', [parentId]: 'Edm.String', ...members(r.path) });
  }
  const complexTypes = new Map<string, Shape>();
  for (const g of fields.filter((f) => f.type === 'structure')) complexTypes.set(dotted(g.path), members(g.path));
  return { ns, entityTypes, complexTypes };
}

/** A parsed CSDL structured type's properties as shapes, in order. */
function parsedShape(type: Record<string, unknown>): Shape {
  const out: Shape = {};
  for (const [k, v] of Object.entries(type)) {
    if (k.startsWith('$') || k.startsWith('@')) continue;
    const p = v as { $Kind?: string; $Type?: string; $Collection?: boolean };
    const t = p.$Type ?? 'Edm.String';
    out[k] = p.$Kind === 'NavigationProperty' ? `nav ${p.$Collection ? `Collection(${t})` : t}` : t;
  }
  return out;
}

/** Parses EDMX with odata-csdl in strict mode (any CSDL error throws). */
function parse(xml: string): CsdlJson {
  const messages: unknown[] = [];
  const out = xml2json(xml, { strict: true, messages });
  expect(messages).toEqual([]);
  return out;
}

async function fieldsOf(h: Harness, xmlFormId: string): Promise<Field[]> {
  const res = await h.get(`/v1/projects/${h.projectId}/forms/${encodeURIComponent(xmlFormId)}/fields`, { as: 'bob' });
  expect(res.status).toBe(200);
  return json<Field[]>(res);
}

async function metadataOf(h: Harness, xmlFormId: string): Promise<string> {
  const res = await h.get(`/v1/projects/${h.projectId}/forms/${encodeURIComponent(xmlFormId)}.svc/$metadata`, { as: 'bob' });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/xml; charset=utf-8');
  return res.text();
}

/** Checks a parsed document against the fields; returns the parsed schema of the form. */
async function checkModel(h: Harness, xmlFormId: string): Promise<{ csdl: CsdlJson; expected: Expected }> {
  const fields = await fieldsOf(h, xmlFormId);
  const csdl = parse(await metadataOf(h, xmlFormId));
  const expected = expectedModel(xmlFormId, fields);
  expect(csdl.$Version).toBe('4.0');
  expect(csdl.$EntityContainer).toBe(`${expected.ns}.${xmlFormId}`);
  const system = csdl['org.opendatakit.submission'] as Record<string, Record<string, unknown>>;
  expect(parsedShape(system.metadata!)).toEqual({
    submissionDate: 'Edm.DateTimeOffset', updatedAt: 'Edm.DateTimeOffset', deletedAt: 'Edm.DateTimeOffset', submitterId: 'Edm.String',
    submitterName: 'Edm.String', attachmentsPresent: 'Edm.Int64', attachmentsExpected: 'Edm.Int64', status: 'org.opendatakit.submission.Status',
    reviewState: 'org.opendatakit.submission.ReviewState', deviceId: 'Edm.String', edits: 'Edm.Int64', formVersion: 'Edm.String',
  });
  expect(system.Status).toEqual({ $Kind: 'EnumType', notDecrypted: 0, missingEncryptedFormData: 1 });
  expect(system.ReviewState).toEqual({ $Kind: 'EnumType', hasIssues: 0, edited: 1, rejected: 2, approved: 3 });

  const schema = csdl[expected.ns] as Record<string, Record<string, unknown>>;
  expect(schema, `schema ${expected.ns}`).toBeDefined();
  const kinds = (kind: string) => Object.entries(schema).filter(([, v]) => v.$Kind === kind).map(([k]) => k);
  // Entity types: one per table, keyed by __id, with the fields' properties in document order.
  expect(kinds('EntityType')).toEqual([...expected.entityTypes.keys()]);
  for (const [name, shape] of expected.entityTypes) {
    expect(schema[name]!.$Key, `${name} key`).toEqual(['__id']);
    expect(Object.entries(parsedShape(schema[name]!)), `${name} properties`).toEqual(Object.entries(shape));
  }
  // Complex types: one per group, named by its dotted path.
  expect(kinds('ComplexType').sort()).toEqual([...expected.complexTypes.keys()].sort());
  for (const [name, shape] of expected.complexTypes) expect(Object.entries(parsedShape(schema[name]!)), `complex ${name}`).toEqual(Object.entries(shape));
  // Every referenced type exists.
  for (const shape of [...expected.entityTypes.values(), ...expected.complexTypes.values()]) {
    for (const t of Object.values(shape)) {
      const m = /^(?:nav Collection\()?([^)]+)\)?$/.exec(t)!;
      const ref = m[1]!;
      if (ref.startsWith('Edm.')) continue;
      const [nsOf, local] = ref.startsWith(`${expected.ns}.`) ? [expected.ns, ref.slice(expected.ns.length + 1)] : ['org.opendatakit.submission', ref.slice('org.opendatakit.submission.'.length)];
      expect((csdl[nsOf] as Record<string, unknown>)[local], `type ${ref} is declared`).toBeDefined();
    }
  }
  // The container: an entity set per table, of that table's type.
  const container = schema[xmlFormId]!;
  expect(container.$Kind).toBe('EntityContainer');
  const sets = Object.entries(container).filter(([k]) => !k.startsWith('$'));
  expect(sets.map(([k]) => k)).toEqual([...expected.entityTypes.keys()]);
  for (const [k, v] of sets) expect(v).toMatchObject({ $Collection: true, $Type: `${expected.ns}.${k}` });
  // The service document lists the same sets.
  const svc = await json<{ value: Array<{ name: string; kind: string; url: string }> }>(await h.get(`/v1/projects/${h.projectId}/forms/${encodeURIComponent(xmlFormId)}.svc`, { as: 'bob' }));
  expect(svc.value).toEqual([...expected.entityTypes.keys()].map((name) => ({ name, kind: 'EntitySet', url: name })));
  return { csdl, expected };
}

// ---------------------------------------------------------------------------------------------
// Rows as a client that trusts the model reads them

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isPosition = (c: unknown) => Array.isArray(c) && (c.length === 2 || c.length === 3) && c.every(isNum);

/** Checks one value against its declared type (every property is nullable). */
function checkValue(label: string, csdl: CsdlJson, type: string, v: unknown): void {
  if (v === null) return;
  switch (type) {
    case 'Edm.String': expect(typeof v, label).toBe('string'); return;
    case 'Edm.Int64': expect(Number.isInteger(v), `${label}: ${JSON.stringify(v)} is Int64`).toBe(true); return;
    case 'Edm.Decimal': expect(isNum(v), label).toBe(true); return;
    case 'Edm.Date': expect(v, label).toMatch(/^\d{4}-\d{2}-\d{2}$/); return;
    case 'Edm.DateTimeOffset': expect(Number.isNaN(Date.parse(v as string)), `${label}: ${String(v)} is a date-time`).toBe(false); return;
    case 'Edm.GeographyPoint': {
      const g = v as { type: string; coordinates: unknown };
      expect(g.type, label).toBe('Point');
      expect(isPosition(g.coordinates), label).toBe(true);
      return;
    }
    case 'Edm.GeographyLineString': {
      const g = v as { type: string; coordinates: unknown[] };
      expect(g.type, label).toBe('LineString');
      expect(g.coordinates.every(isPosition), label).toBe(true);
      return;
    }
    case 'Edm.GeographyPolygon': {
      const g = v as { type: string; coordinates: unknown[][] };
      expect(g.type, label).toBe('Polygon');
      expect(g.coordinates.every((ring) => ring.every(isPosition)), label).toBe(true);
      return;
    }
    default: {
      const cut = type.lastIndexOf('.');
      const [ns, local] = type.startsWith('org.opendatakit.submission.') ? ['org.opendatakit.submission', type.slice(27)] : [type.slice(0, type.indexOf('.', 'org.opendatakit.user.'.length)), type.slice(type.indexOf('.', 'org.opendatakit.user.'.length) + 1)];
      expect(cut, label).toBeGreaterThan(0);
      const decl = (csdl[ns] as Record<string, Record<string, unknown>>)[local]!;
      expect(decl, `${label}: type ${type}`).toBeDefined();
      if (decl.$Kind === 'EnumType') {
        expect(Object.keys(decl).filter((k) => !k.startsWith('$')), `${label}: enum member`).toContain(v);
        return;
      }
      expect(typeof v === 'object' && !Array.isArray(v), `${label}: complex value`).toBe(true);
      checkObject(label, csdl, decl, v as Record<string, unknown>, true);
    }
  }
}

/**
 * Every key of a row is declared: a property (value of its type), a navigation link of a declared
 * navigation property, or (expanded) the navigation property itself as an array of its type.
 */
function checkObject(label: string, csdl: CsdlJson, decl: Record<string, unknown>, row: Record<string, unknown>, expanded: boolean): void {
  for (const [k, v] of Object.entries(row)) {
    const link = /^(.*)@odata\.navigationLink$/.exec(k);
    const name = link ? link[1]! : k;
    const p = decl[name] as { $Kind?: string; $Type?: string; $Collection?: boolean } | undefined;
    if (!p && expanded && /^__Submissions-.*-?id$/.test(k)) continue;
    expect(p, `${label}.${k} is declared`).toBeDefined();
    if (link) {
      expect(p!.$Kind, `${label}.${k}`).toBe('NavigationProperty');
      expect(typeof v, `${label}.${k}`).toBe('string');
      continue;
    }
    if (p!.$Kind === 'NavigationProperty') {
      expect(Array.isArray(v), `${label}.${k} expanded`).toBe(true);
      const [ns, local] = [p!.$Type!.slice(0, p!.$Type!.lastIndexOf('.Submissions')), p!.$Type!.slice(p!.$Type!.lastIndexOf('.Submissions') + 1)];
      const target = (csdl[ns] as Record<string, Record<string, unknown>>)[local]!;
      (v as Array<Record<string, unknown>>).forEach((r, i) => checkObject(`${label}.${k}[${i}]`, csdl, target, r, true));
      continue;
    }
    checkValue(`${label}.${k}`, csdl, p!.$Type ?? 'Edm.String', v);
  }
}

/** Reads every table (root with `$expand=*`) and checks each row against the parsed model. */
async function checkRows(h: Harness, xmlFormId: string, csdl: CsdlJson, expected: Expected): Promise<number> {
  const schema = csdl[expected.ns] as Record<string, Record<string, unknown>>;
  let seen = 0;
  for (const table of expected.entityTypes.keys()) {
    const path = `/v1/projects/${h.projectId}/forms/${encodeURIComponent(xmlFormId)}.svc/${table}${table === 'Submissions' ? '?$expand=*' : ''}`;
    const body = await feed<Record<string, unknown>>(h, path);
    for (const [i, row] of body.value.entries()) checkObject(`${table}[${i}]`, csdl, schema[table]!, row, false);
    seen += body.value.length;
  }
  return seen;
}

describe('$metadata, parsed by odata-csdl, describes the form', () => {
  const folders = ['simple', 'withrepeat', 'nestedGroup', 'groupRepeat', 'doubleRepeat', 'geoTypes', 'selectMultiple', 'binaryType', 'encrypted', 'soak-250q'];
  test.each(folders)('%s: entity sets, properties, types and navigation match the fields; rows conform', async (folder) => {
    const h = await harness();
    const s: Scenario = scenarioOf(folder);
    await s.setup(h);
    const { csdl, expected } = await checkModel(h, s.xmlFormId);
    // The same model as Central's own $metadata, read by the same parser.
    expect(csdl).toEqual(parse(fixture(`${CO}/${folder}/odata/metadata.xml`)));
    expect(await checkRows(h, s.xmlFormId, csdl, expected)).toBeGreaterThan(0);
  });

  test('a form with every type, an odd name, a repeat in a group and a nested repeat', async () => {
    const h = await harness();
    const { submit } = await typedForm(h);
    await submit({
      id: 'full', txt: 'hello', num: '42', dec: '3.50', day: '2024-05-01', stamp: '2024-05-01T10:00:00.000+02', clock: '10:00:00.000+02:00',
      color: 'red', tags: 'a b', loc: '1.5 2.5 3 4', route: '1 2 0 0;3 4 0 5', area: '1 1 0 0;1 2 0 0;2 2 0 0;1 1 0 0', photo: 'p.jpg',
      inner: 'in', leaf: '7', odd: 'odd', items: [{ label: 'i1', qty: '2', price: '1.25', when: '2024-01-02', at: '2024-01-02T03:04:05Z', kind: 'x', spot: '5 6', parts: [{ pname: 'p', pn: '1' }] }, { label: 'i2' }],
    });
    await submit({ id: 'empty' });
    const { csdl, expected } = await checkModel(h, TYPED_ID);
    const schema = csdl[expected.ns] as Record<string, Record<string, unknown>>;
    // Spot checks that need no derivation: the sanitized name, the types and the nested navigation.
    expect(parsedShape(schema.Submissions!)).toMatchObject({
      txt: 'Edm.String', num: 'Edm.Int64', dec: 'Edm.Decimal', day: 'Edm.Date', stamp: 'Edm.DateTimeOffset', clock: 'Edm.String', color: 'Edm.String',
      tags: 'Edm.String', loc: 'Edm.GeographyPoint', route: 'Edm.GeographyLineString', area: 'Edm.GeographyPolygon', photo: 'Edm.String',
      grp: 'org.opendatakit.user.typed.grp', odd_name_x: 'Edm.String', items: 'org.opendatakit.user.typed.items',
    });
    expect(parsedShape(schema.items!)).toEqual({ item: 'nav Collection(org.opendatakit.user.typed.Submissions.items.item)' });
    expect(parsedShape(schema['Submissions.items.item']!)).toEqual({
      __id: 'Edm.String', '__Submissions-id': 'Edm.String', label: 'Edm.String', qty: 'Edm.Int64', price: 'Edm.Decimal', when: 'Edm.Date',
      at: 'Edm.DateTimeOffset', kind: 'Edm.String', spot: 'Edm.GeographyPoint', parts: 'org.opendatakit.user.typed.items.item.parts',
    });
    expect(parsedShape(schema['items.item.parts']!)).toEqual({ part: 'nav Collection(org.opendatakit.user.typed.Submissions.items.item.parts.part)' });
    expect(parsedShape(schema['Submissions.items.item.parts.part']!)).toEqual({ __id: 'Edm.String', '__Submissions-items-item-id': 'Edm.String', pname: 'Edm.String', pn: 'Edm.Int64' });
    expect(await checkRows(h, TYPED_ID, csdl, expected)).toBe(2 + 2 + 1);
  });

  test('the draft $metadata parses the same way; a form with a leading digit gets a sanitized namespace', async () => {
    const h = await harness();
    await publishForm(h, TYPED_FORM);
    const draftXml = TYPED_FORM.replace('version="3"', 'version="4"').replace('<odd-name.x/>', '<odd-name.x/><extra/>').replace('<bind nodeset="/data/odd-name.x" type="string"/>', '<bind nodeset="/data/odd-name.x" type="string"/><bind nodeset="/data/extra" type="int"/>');
    const res = await h.post(`/v1/projects/${h.projectId}/forms/${TYPED_ID}/draft`, { as: 'bob', body: draftXml, headers: { 'Content-Type': 'application/xml' } });
    expect(res.status, await res.clone().text()).toBe(200);
    const draft = await h.get(`/v1/projects/${h.projectId}/forms/${TYPED_ID}/draft.svc/$metadata`, { as: 'bob' });
    expect(draft.status).toBe(200);
    const csdl = parse(await draft.text());
    expect(parsedShape((csdl['org.opendatakit.user.typed'] as Record<string, Record<string, unknown>>).Submissions!)).toMatchObject({ extra: 'Edm.Int64' });
    const published = parse(await metadataOf(h, TYPED_ID));
    expect(parsedShape((published['org.opendatakit.user.typed'] as Record<string, Record<string, unknown>>).Submissions!)).not.toHaveProperty('extra');
    // 250_questions: the namespace is sanitized, the container keeps the xmlFormId (as Central).
    await publishForm(h, fixture('forms/central-e2e/soak/250q-form.xml'));
    const soak = parse(await metadataOf(h, '250_questions'));
    expect(soak.$EntityContainer).toBe('org.opendatakit.user._250_questions.250_questions');
  });
});
