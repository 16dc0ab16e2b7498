/**
 * The issue's "Done when": a client that follows `@odata.nextLink` from `Submissions`, and from
 * each repeat table, with `$top=2`, pulls every submission and every repeat row of a form, and the
 * values equal those of the CSV export of the same form (GET F/submissions.csv.zip, unzipped with
 * fflate): same rows in the same order, same values (numbers compared as numbers, geo by parts,
 * a dateTime's bare `+hh` offset as `+hh:00`), same metadata; a repeat row's `__id` and parent id are
 * the SHA-1s of the CSV's KEY and PARENT_KEY (README fact 17).
 */
import { createHash } from 'node:crypto';
import { unzipSync } from 'fflate';
import { describe, expect, test } from 'vitest';
import { harness, json, type Harness } from '../../helpers/harness';
import { parseCsv, scenarios, TYPED_ID, typedForm, walk, type Typed } from './helpers';

interface Field {
  path: string;
  name: string;
  type: string;
}
type Row = Record<string, unknown> & { __id: string };

const sanitize = (name: string) => name.replace(/^([^a-z_])/i, '_$1').replace(/[^a-z0-9_]+/gi, '_');
const GEO_SUFFIXES = ['Latitude', 'Longitude', 'Altitude', 'Accuracy'];
const META = ['KEY', 'SubmitterID', 'SubmitterName', 'AttachmentsPresent', 'AttachmentsExpected', 'Status', 'ReviewState', 'DeviceID', 'Edits', 'FormVersion'];
const STATUS: Record<string, string | null> = { '': null, 'not decrypted': 'notDecrypted', 'missing encrypted form data': 'missingEncryptedFormData' };

interface Table {
  /** '' for Submissions, else the repeat's path. */
  path: string;
  odata: string;
  csv: string;
  leaves: Field[];
}

/** The tables of a form and the leaves each owns (not those of a nested repeat). */
function tablesOf(xmlFormId: string, fields: Field[]): Table[] {
  const repeats = fields.filter((f) => f.type === 'repeat');
  const owner = (f: Field) => repeats.filter((r) => f.path.startsWith(`${r.path}/`)).map((r) => r.path).sort((a, b) => b.length - a.length)[0] ?? '';
  const leaves = fields.filter((f) => f.type !== 'repeat' && f.type !== 'structure');
  return [
    { path: '', odata: 'Submissions', csv: `${xmlFormId}.csv`, leaves: leaves.filter((f) => owner(f) === '') },
    ...repeats.map((r) => ({
      path: r.path, odata: `Submissions.${r.path.slice(1).split('/').map(sanitize).join('.')}`, csv: `${xmlFormId}-${r.name}.csv`, leaves: leaves.filter((f) => owner(f) === r.path),
    })),
  ];
}

const relative = (t: Table, f: Field) => f.path.slice(t.path.length + 1).split('/');
const columnsOf = (t: Table, f: Field) => {
  const name = relative(t, f).join('-');
  return f.type === 'geopoint' ? GEO_SUFFIXES.map((s) => `${name}-${s}`) : [name];
};

/** The OData value of a leaf in a row (groups as objects; an encrypted row has none: null). */
function odataValue(t: Table, f: Field, row: Row): unknown {
  let v: unknown = row;
  for (const step of relative(t, f).map(sanitize)) v = v != null && typeof v === 'object' ? (v as Record<string, unknown>)[step] : undefined;
  return v ?? null;
}

/** `sha1(Submissions#<root>%%<group>#%%<repeat>#<index-1>…)` of a CSV KEY (fact 17). */
function keyToId(key: string): string {
  const [root, ...steps] = key.split('/');
  const text = `Submissions#${root}${steps.map((s) => {
    const m = /^(.*)\[(\d+)\]$/.exec(s);
    return m ? `%%${m[1]}#${Number(m[2]) - 1}` : `%%${s}#`;
  }).join('')}`;
  return createHash('sha1').update(text).digest('hex');
}

const num = (s: string) => (s === '' ? undefined : Number(s));

/** A CSV geo text as the GeoJSON positions and accuracies it stands for. */
function points(text: string): Array<{ pos: number[]; acc: number }> {
  return text.split(';').map((p) => p.trim()).filter((p) => p !== '').map((p) => {
    const [lat, lon, alt, acc] = p.split(/\s+/).map((x) => Number(x));
    return { pos: alt === undefined ? [lon!, lat!] : [lon!, lat!, alt], acc: acc ?? 0 };
  });
}

/** One leaf: its CSV cells against its OData value. */
function expectSameValue(label: string, f: Field, cells: string[], v: unknown): void {
  if (v == null) {
    expect(cells.every((c) => c === ''), `${label}: null in OData, empty in CSV (${JSON.stringify(cells)})`).toBe(true);
    return;
  }
  const [cell] = cells as [string];
  switch (f.type) {
    case 'int': case 'decimal':
      expect(Number(cell), label).toBe(v);
      return;
    case 'dateTime':
      expect(cell.replace(/([+-]\d\d)$/, '$1:00'), label).toBe(v);
      return;
    case 'geopoint': {
      const g = v as { type: string; coordinates: number[]; properties?: { accuracy: number } };
      const [lat, lon, alt, acc] = cells.map(num);
      expect(g.type, label).toBe('Point');
      expect(g.coordinates, label).toEqual(alt === undefined ? [lon, lat] : [lon, lat, alt]);
      expect(g.properties?.accuracy, label).toBe(acc);
      return;
    }
    case 'geotrace': case 'geoshape': {
      const g = v as { type: string; coordinates: unknown; properties?: { accuracies: number[] } };
      const pts = points(cell);
      expect(g.type, label).toBe(f.type === 'geotrace' ? 'LineString' : 'Polygon');
      expect(g.coordinates, label).toEqual(f.type === 'geotrace' ? pts.map((p) => p.pos) : [pts.map((p) => p.pos)]);
      expect(g.properties?.accuracies, label).toEqual(pts.some((p) => p.acc !== 0) ? pts.map((p) => p.acc) : undefined);
      return;
    }
    default:
      expect(cell, label).toBe(v);
  }
}

/** Walks every table with `$top=2` and compares it with the CSV export, row by row. */
async function expectFeedsEqualCsv(h: Harness, xmlFormId: string): Promise<{ rows: number; tables: number }> {
  const F = `/v1/projects/${h.projectId}/forms/${encodeURIComponent(xmlFormId)}`;
  const fields = await json<Field[]>(await h.get(`${F}/fields`, { as: 'bob' }));
  const zipRes = await h.get(`${F}/submissions.csv.zip`, { as: 'bob' });
  expect(zipRes.status).toBe(200);
  const files = unzipSync(new Uint8Array(await zipRes.arrayBuffer()));
  const tables = tablesOf(xmlFormId, fields);
  // Every table is in both: the service document and the zip.
  const svc = await json<{ value: Array<{ name: string }> }>(await h.get(`${F}.svc`, { as: 'bob' }));
  expect(svc.value.map((s) => s.name)).toEqual(tables.map((t) => t.odata));
  expect(Object.keys(files).filter((n) => n.endsWith('.csv'))).toEqual(tables.map((t) => t.csv));
  let total = 0;
  for (const t of tables) {
    const [header, ...csvRows] = parseCsv(new TextDecoder().decode(files[t.csv]!));
    const cols = t.leaves.flatMap((f) => columnsOf(t, f));
    expect(header, `${t.csv} header`).toEqual(t.path === '' ? ['SubmissionDate', ...cols, ...META] : [...cols, 'PARENT_KEY', 'KEY']);
    const at = (row: string[], name: string) => row[header!.indexOf(name)]!;
    const { rows, pages } = await walk<Row>(h, `${F}.svc/${t.odata}?$top=2`);
    expect(pages.slice(0, -1).every((p) => p.value.length === 2), `${t.odata}: full pages`).toBe(true);
    const label = `${xmlFormId} ${t.odata}`;
    // Same rows, same order.
    expect(rows.map((r) => r.__id), `${label}: rows`).toEqual(csvRows.map((r) => (t.path === '' ? at(r, 'KEY') : keyToId(at(r, 'KEY')))));
    for (const [i, csv] of csvRows.entries()) {
      const row = rows[i]!;
      const rl = `${label} row ${i} (${at(csv, 'KEY')})`;
      if (t.path === '') {
        const sys = row.__system as Record<string, unknown>;
        expect([at(csv, 'SubmissionDate'), at(csv, 'SubmitterID'), at(csv, 'SubmitterName'), at(csv, 'AttachmentsPresent'), at(csv, 'AttachmentsExpected')], rl)
          .toEqual([sys.submissionDate, sys.submitterId ?? '', sys.submitterName ?? '', String(sys.attachmentsPresent), String(sys.attachmentsExpected)]);
        expect([STATUS[at(csv, 'Status')], at(csv, 'ReviewState') || null, at(csv, 'DeviceID'), at(csv, 'Edits'), at(csv, 'FormVersion')], rl)
          .toEqual([sys.status, sys.reviewState, sys.deviceId ?? '', String(sys.edits), sys.formVersion]);
      } else {
        const parentKey = Object.keys(row).find((k) => k.startsWith('__Submissions'))!;
        const parent = at(csv, 'PARENT_KEY');
        expect(row[parentKey], `${rl}: parent`).toBe(parent.includes('/') ? keyToId(parent) : parent);
      }
      for (const f of t.leaves) expectSameValue(`${rl} ${f.path}`, f, columnsOf(t, f).map((c) => at(csv, c)), odataValue(t, f, row));
    }
    total += rows.length;
  }
  return { rows: total, tables: tables.length };
}

describe('following nextLink ($top=2) from every table gives the CSV export, value for value', () => {
  test.each(scenarios.map((s) => [s.folder, s] as const))('%s (Central fixture data)', async (_folder, s) => {
    const h = await harness();
    await s.setup(h);
    const { rows } = await expectFeedsEqualCsv(h, s.xmlFormId);
    expect(rows).toBeGreaterThan(0);
  });

  test('a form with every type, a repeat in a group and a nested repeat, 15 submissions', async () => {
    const h = await harness();
    const { submit } = await typedForm(h);
    const subs: Typed[] = Array.from({ length: 15 }, (_, i) => ({
      id: `uuid:00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      txt: i % 5 === 0 ? undefined : `text, "${i}"\nline`, num: i % 4 === 0 ? undefined : String(i * 7 - 20), dec: i % 3 === 0 ? undefined : `${i}.${i}0`,
      day: `2024-0${(i % 9) + 1}-1${i % 10}`, stamp: i % 2 === 0 ? `2024-05-0${(i % 9) + 1}T10:11:12.345+03` : `2024-05-0${(i % 9) + 1}T10:11:12.345Z`,
      clock: '10:11:12.000+03:00', color: i % 2 ? 'red' : 'blue', tags: i % 3 ? 'a b' : undefined,
      loc: i % 4 === 1 ? undefined : i % 4 === 2 ? `${i}.25 ${-i}.5` : `${i}.1 ${i}.2 ${i}.3 ${i}.4`,
      route: i % 3 === 0 ? '1 2 3 0;4 5 6 0' : i % 3 === 1 ? `1 2 3 ${i};4 5 6 0` : undefined,
      area: i % 2 ? '1 1 0 0;1 2 0 0;2 2 0 0;1 1 0 0' : undefined, photo: i % 5 ? `p${i}.jpg` : undefined, inner: `in${i}`, leaf: String(i), odd: i % 2 ? 'o' : undefined,
      items: Array.from({ length: i % 4 }, (_x, j) => ({
        label: `i${i}-${j}`, qty: String(j * 3), price: j % 2 ? `${j}.75` : undefined, when: '2024-02-29', at: '2024-02-29T23:00:00.000-01', kind: j % 2 ? 'y' : 'x',
        spot: j % 2 ? undefined : `${j} ${i}`, parts: Array.from({ length: (i + j) % 3 }, (_y, k) => ({ pname: `p${i}-${j}-${k}`, pn: k % 2 ? String(k) : undefined })),
      })),
    }));
    for (const s of subs) await submit(s);
    const { rows, tables } = await expectFeedsEqualCsv(h, TYPED_ID);
    expect(tables).toBe(3);
    expect(rows).toBeGreaterThan(15 + 20);
  });
});
