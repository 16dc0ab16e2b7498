/**
 * Shared by the OData tests: shared fixture files, OpenRosa submissions as Collect sends them,
 * the replay of what real ODK Central was given before its OData answers were captured
 * (shared/fixtures/central-outputs/README.md, "Layout"), and a client that follows
 * `@odata.nextLink` the way an OData consumer (Power BI, ruODK, pyODK) does.
 */
import { expect } from 'vitest';
import { json, type As, type Harness } from '../../helpers/harness';
import { appUserFor, BROWSER_UA, COLLECT, fixture, fixtureBytes, multipart, publishForm, submitOpenRosa, type MultipartFile } from '../../helpers/submitting';

export { appUserFor, BROWSER_UA, COLLECT, fixture, fixtureBytes, multipart, publishForm, submitOpenRosa, type MultipartFile };

export const CO = 'central-outputs';
/** The origin every captured body was rewritten to (README: "The server origin is always …"). */
export const CENTRAL_ORIGIN = 'http://localhost:8383';

/** PATCH a submission's review state as bob. */
export async function review(h: Harness, xmlFormId: string, instanceId: string, reviewState: string): Promise<void> {
  const res = await h.patch(`/v1/projects/${h.projectId}/forms/${encodeURIComponent(xmlFormId)}/submissions/${encodeURIComponent(instanceId)}`, { as: 'bob', body: { reviewState } });
  expect(res.status, await res.clone().text()).toBe(200);
}

// ---------------------------------------------------------------------------------------------
// Central's history, form by form

export interface Scenario {
  /** The central-outputs folder (the fixture key). */
  folder: string;
  xmlFormId: string;
  /** The form's XForm, as published. */
  formXml: string;
  /** Replays the captured history; returns the App User's actor id (the submitterId of every row). */
  setup(h: Harness): Promise<number>;
}

const sub = (key: string) => ({ xml: fixture(`submissions/${key}.xml`) });
const own = (folder: string, name: string) => ({ xml: fixture(`${CO}/${folder}/inputs/submissions/${name}.xml`) });
const MIME: Record<string, string> = { jpg: 'image/jpeg', mp4: 'video/mp4', enc: 'application/octet-stream' };
const media = (dir: string, names: string[]): MultipartFile[] =>
  names.map((name) => ({ name, bytes: fixtureBytes(`${dir}/${name}`), type: MIME[name.slice(name.lastIndexOf('.') + 1)] ?? 'application/octet-stream' }));

/** Publishes the form, then submits each XML as the form's App User `Tablet <folder>`, in order. */
async function replay(h: Harness, folder: string, xmlFormId: string, formXml: string, subs: Array<{ xml: string; files?: MultipartFile[] }>) {
  await publishForm(h, formXml);
  const au = await appUserFor(h, xmlFormId, `Tablet ${folder}`);
  for (const s of subs) await submitOpenRosa(h, { key: au.token }, s.xml, { deviceId: `collect:${folder}-device`, files: s.files });
  return au;
}

function scenario(folder: string, xmlFormId: string, formPath: string, run: (h: Harness, formXml: string) => Promise<number>): Scenario {
  const formXml = fixture(formPath);
  return { folder, xmlFormId, formXml, setup: (h) => run(h, formXml) };
}

export const scenarios: Scenario[] = [
  scenario('simple', 'simple', 'forms/simple.xml', async (h, xml) => {
    const au = await replay(h, 'simple', 'simple', xml, ['one', 'two', 'three'].map((k) => sub(`simple.${k}`)));
    await review(h, 'simple', 'two', 'hasIssues');
    await review(h, 'simple', 'three', 'rejected');
    return au.id;
  }),
  scenario('withrepeat', 'withrepeat', 'forms/withrepeat.xml', async (h, xml) => {
    const au = await replay(h, 'withrepeat', 'withrepeat', xml, ['one', 'two', 'three'].map((k) => sub(`withrepeat.${k}`)));
    await review(h, 'withrepeat', 'rone', 'approved');
    // The edit of rtwo, POSTed by a web user with a browser User-Agent, as an Enketo edit arrives.
    await submitOpenRosa(h, 'alice', fixture(`${CO}/withrepeat/api/submission-current.xml`), { userAgent: BROWSER_UA });
    return au.id;
  }),
  scenario('doubleRepeat', 'doubleRepeat', 'forms/doubleRepeat.xml', async (h, xml) =>
    (await replay(h, 'doubleRepeat', 'doubleRepeat', xml, [sub('doubleRepeat.double')])).id),
  scenario('selectMultiple', 'selectMultiple', 'forms/selectMultiple.xml', async (h, xml) => {
    const au = await replay(h, 'selectMultiple', 'selectMultiple', xml, ['one', 'two', 'three'].map((k) => sub(`selectMultiple.${k}`)));
    await review(h, 'selectMultiple', 'one', 'approved');
    return au.id;
  }),
  scenario('geoTypes', 'geotest', 'forms/geoTypes.xml', async (h, xml) =>
    (await replay(h, 'geoTypes', 'geotest', xml, ['own-1', 'own-2', 'own-3'].map((n) => own('geoTypes', n)))).id),
  scenario('groupRepeat', 'groupRepeat', 'forms/groupRepeat.xml', async (h, xml) =>
    (await replay(h, 'groupRepeat', 'groupRepeat', xml, [sub('groupRepeat.one'), own('groupRepeat', 'own-1')])).id),
  scenario('nestedGroup', 'nestedGroup', 'forms/nestedGroup.xml', async (h, xml) =>
    (await replay(h, 'nestedGroup', 'nestedGroup', xml, [sub('nestedGroup.one'), own('nestedGroup', 'own-1')])).id),
  scenario('binaryType', 'binaryType', 'forms/binaryType.xml', async (h, xml) => {
    const dir = `${CO}/binaryType/inputs/submission-media`;
    return (await replay(h, 'binaryType', 'binaryType', xml, [
      { ...sub('binaryType.both'), files: media(`${dir}/binaryType.both`, ['my_file1.mp4', 'here_is_file2.jpg']) },
      { ...sub('binaryType.one'), files: media(`${dir}/binaryType.one`, ['my_file1.mp4']) },
      { ...sub('binaryType.two'), files: media(`${dir}/binaryType.two`, ['here_is_file2.jpg']) },
    ])).id;
  }),
  scenario('encrypted', 'encrypted', 'forms/encrypted.xml', async (h, xml) =>
    // Only two's encrypted XML was sent; neither's .jpg.enc (README, Layout).
    (await replay(h, 'encrypted', 'encrypted', xml, [
      sub('encrypted.one'),
      { ...sub('encrypted.two'), files: media(`${CO}/encrypted/inputs/submission-media/encrypted.two`, ['submission.xml.enc']) },
    ])).id),
  scenario('soak-250q', '250_questions', 'forms/central-e2e/soak/250q-form.xml', async (h, xml) => {
    const au = await replay(h, 'soak-250q', '250_questions', xml, ['own-1', 'own-2', 'own-3'].map((n) => own('soak-250q', n)));
    await review(h, '250_questions', 'uuid:3f6c1a52-8f0e-4c6a-9d41-7b2e5a9c0d11', 'approved');
    return au.id;
  }),
];

export const scenarioOf = (folder: string): Scenario => scenarios.find((s) => s.folder === folder)!;

// ---------------------------------------------------------------------------------------------
// OData client

export interface Feed<T = Record<string, unknown>> {
  value: T[];
  '@odata.context': string;
  '@odata.nextLink'?: string;
  '@odata.count'?: number;
}

/** A nextLink (absolute) as a path the harness can request. */
export const pathOf = (link: string): string => {
  const u = new URL(link);
  return `${u.pathname}${u.search}`;
};

/**
 * Follows `@odata.nextLink` from `path` until there is none, as an OData client does.
 * @param between called after each page but the last, with the page (to make submissions arrive while paging).
 * @returns every row in order and the pages' sizes.
 */
export async function walk<T = Record<string, unknown>>(h: Harness, path: string, as: As = 'bob', between?: (page: number, last: Feed<T>) => Promise<void>): Promise<{ rows: T[]; pages: Array<Feed<T>> }> {
  const rows: T[] = [];
  const pages: Array<Feed<T>> = [];
  let next: string | null = path;
  for (let i = 0; next != null; i += 1) {
    if (i > 10_000) throw new Error('nextLink loop');
    const res = await h.get(next, { as });
    expect(res.status, `${next}: ${await res.clone().text()}`).toBe(200);
    const page = await json<Feed<T>>(res);
    pages.push(page);
    rows.push(...page.value);
    next = page['@odata.nextLink'] == null ? null : pathOf(page['@odata.nextLink']);
    if (between && next != null) await between(i, page);
  }
  return { rows, pages };
}

/** GET a feed as JSON (asserting 200 and OData headers). */
export async function feed<T = Record<string, unknown>>(h: Harness, path: string, as: As = 'bob'): Promise<Feed<T>> {
  const res = await h.get(path, { as });
  expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
  expect(res.headers.get('odata-version')).toBe('4.0');
  return json<Feed<T>>(res);
}

/** The Problem body of a failed request: status and code. */
export async function problem(res: Response): Promise<{ status: number; code: number; message: string; details?: unknown }> {
  const text = await res.text();
  const body = JSON.parse(text) as { code: number; message: string; details?: unknown };
  return { status: res.status, ...body };
}

export const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// ---------------------------------------------------------------------------------------------
// A form with every primitive type, groups, an odd name, a repeat in a group and a nested repeat

export const TYPED_ID = 'typed';
export const TYPED_FORM = `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa" xmlns:orx="http://openrosa.org/xforms">
  <h:head>
    <h:title>Typed</h:title>
    <model>
      <instance>
        <data id="${TYPED_ID}" version="3">
          <txt/><num/><dec/><day/><stamp/><clock/><color/><tags/><loc/><route/><area/><photo/>
          <grp><inner/><deep><leaf/></deep></grp>
          <odd-name.x/>
          <items>
            <item jr:template=""><label/><qty/><price/><when/><at/><kind/><spot/><parts><part jr:template=""><pname/><pn/></part></parts></item>
          </items>
          <meta><instanceID/></meta>
        </data>
      </instance>
      <bind nodeset="/data/txt" type="string"/>
      <bind nodeset="/data/num" type="int"/>
      <bind nodeset="/data/dec" type="decimal"/>
      <bind nodeset="/data/day" type="date"/>
      <bind nodeset="/data/stamp" type="dateTime"/>
      <bind nodeset="/data/clock" type="time"/>
      <bind nodeset="/data/color" type="string"/>
      <bind nodeset="/data/tags" type="string"/>
      <bind nodeset="/data/loc" type="geopoint"/>
      <bind nodeset="/data/route" type="geotrace"/>
      <bind nodeset="/data/area" type="geoshape"/>
      <bind nodeset="/data/photo" type="binary"/>
      <bind nodeset="/data/grp/inner" type="string"/>
      <bind nodeset="/data/grp/deep/leaf" type="int"/>
      <bind nodeset="/data/odd-name.x" type="string"/>
      <bind nodeset="/data/items/item/label" type="string"/>
      <bind nodeset="/data/items/item/qty" type="int"/>
      <bind nodeset="/data/items/item/price" type="decimal"/>
      <bind nodeset="/data/items/item/when" type="date"/>
      <bind nodeset="/data/items/item/at" type="dateTime"/>
      <bind nodeset="/data/items/item/kind" type="string"/>
      <bind nodeset="/data/items/item/spot" type="geopoint"/>
      <bind nodeset="/data/items/item/parts/part/pname" type="string"/>
      <bind nodeset="/data/items/item/parts/part/pn" type="int"/>
      <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
    </model>
  </h:head>
  <h:body>
    <input ref="/data/txt"><label>Text</label></input>
    <input ref="/data/num"><label>Int</label></input>
    <input ref="/data/dec"><label>Decimal</label></input>
    <input ref="/data/day"><label>Date</label></input>
    <input ref="/data/stamp"><label>DateTime</label></input>
    <input ref="/data/clock"><label>Time</label></input>
    <select1 ref="/data/color"><label>Colour</label><item><label>Red</label><value>red</value></item><item><label>Blue</label><value>blue</value></item></select1>
    <select ref="/data/tags"><label>Tags</label><item><label>A</label><value>a</value></item><item><label>B</label><value>b</value></item></select>
    <input ref="/data/loc"><label>Point</label></input>
    <input ref="/data/route"><label>Trace</label></input>
    <input ref="/data/area"><label>Shape</label></input>
    <upload ref="/data/photo" mediatype="image/*"><label>Photo</label></upload>
    <group ref="/data/grp"><label>Group</label>
      <input ref="/data/grp/inner"><label>Inner</label></input>
      <group ref="/data/grp/deep"><label>Deep</label><input ref="/data/grp/deep/leaf"><label>Leaf</label></input></group>
    </group>
    <input ref="/data/odd-name.x"><label>Odd</label></input>
    <group ref="/data/items"><label>Items</label>
      <repeat nodeset="/data/items/item">
        <input ref="/data/items/item/label"><label>Label</label></input>
        <input ref="/data/items/item/qty"><label>Qty</label></input>
        <input ref="/data/items/item/price"><label>Price</label></input>
        <input ref="/data/items/item/when"><label>When</label></input>
        <input ref="/data/items/item/at"><label>At</label></input>
        <select1 ref="/data/items/item/kind"><label>Kind</label><item><label>X</label><value>x</value></item><item><label>Y</label><value>y</value></item></select1>
        <input ref="/data/items/item/spot"><label>Spot</label></input>
        <group ref="/data/items/item/parts"><label>Parts</label>
          <repeat nodeset="/data/items/item/parts/part">
            <input ref="/data/items/item/parts/part/pname"><label>Part</label></input>
            <input ref="/data/items/item/parts/part/pn"><label>N</label></input>
          </repeat>
        </group>
      </repeat>
    </group>
  </h:body>
</h:html>
`;

export interface TypedPart {
  pname?: string;
  pn?: string;
}
export interface TypedItem {
  label?: string;
  qty?: string;
  price?: string;
  when?: string;
  at?: string;
  kind?: string;
  spot?: string;
  parts?: TypedPart[];
}
export interface Typed {
  id: string;
  txt?: string;
  num?: string;
  dec?: string;
  day?: string;
  stamp?: string;
  clock?: string;
  color?: string;
  tags?: string;
  loc?: string;
  route?: string;
  area?: string;
  photo?: string;
  inner?: string;
  leaf?: string;
  odd?: string;
  items?: TypedItem[];
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const el = (name: string, v: string | undefined) => (v == null ? `<${name}/>` : `<${name}>${esc(v)}</${name}>`);

/** A submission of TYPED_FORM as Collect writes it. */
export function typedXml(s: Typed): string {
  const items = (s.items ?? []).map((i) => `<item>${el('label', i.label)}${el('qty', i.qty)}${el('price', i.price)}${el('when', i.when)}${el('at', i.at)}${el('kind', i.kind)}${el('spot', i.spot)}`
    + `<parts>${(i.parts ?? []).map((p) => `<part>${el('pname', p.pname)}${el('pn', p.pn)}</part>`).join('')}</parts></item>`).join('');
  return `<?xml version='1.0' ?><data id="${TYPED_ID}" version="3" xmlns:jr="http://openrosa.org/javarosa" xmlns:orx="http://openrosa.org/xforms">`
    + `${el('txt', s.txt)}${el('num', s.num)}${el('dec', s.dec)}${el('day', s.day)}${el('stamp', s.stamp)}${el('clock', s.clock)}${el('color', s.color)}${el('tags', s.tags)}`
    + `${el('loc', s.loc)}${el('route', s.route)}${el('area', s.area)}${el('photo', s.photo)}`
    + `<grp>${el('inner', s.inner)}<deep>${el('leaf', s.leaf)}</deep></grp>${el('odd-name.x', s.odd)}<items>${items}</items>`
    + `<meta><instanceID>${esc(s.id)}</instanceID></meta></data>`;
}

/** Publishes TYPED_FORM with an App User; returns a function that submits as that App User. */
export async function typedForm(h: Harness): Promise<{ appUser: { id: number; token: string }; submit: (s: Typed) => Promise<void> }> {
  await publishForm(h, TYPED_FORM);
  const appUser = await appUserFor(h, TYPED_ID, 'Tablet typed');
  return { appUser, submit: async (s) => { await submitOpenRosa(h, { key: appUser.token }, typedXml(s), { deviceId: 'collect:typed-device' }); } };
}

// ---------------------------------------------------------------------------------------------
// CSV

/** Parses RFC 4180 CSV (Central's: `\n` line ends, a trailing newline). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i += 1;
      } else if (ch === '"') {
        quoted = false;
      } else {
        cell += ch;
      }
    } else if (ch === '"' && cell === '') {
      quoted = true;
    } else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else {
      cell += ch;
    }
  }
  if (cell !== '' || row.length > 0) throw new Error('CSV does not end with a newline');
  return rows;
}
