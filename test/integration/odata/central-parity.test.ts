/**
 * The OData feeds against what real ODK Central answered for the same forms and submissions
 * (shared/fixtures/central-outputs/<form>/odata, README facts 12–21). Each scenario replays
 * Central's history (helpers.ts), then makes every OData request the capture made (requests.json)
 * and compares: status, Content-Type, OData-Version, and the body — `$metadata` as a string,
 * JSON as text (so Central's key order counts) after only the values that depend on time and ids
 * are checked and set aside: `__system.submissionDate` (ISO-8601 UTC with ms), `updatedAt` (same
 * null-ness as Central's, ISO when set), `submitterId` (the App User's id as a string) and the
 * project id in URLs. The origin is Central's own, through the PUBLIC_URL setting.
 */
import { describe, expect, test } from 'vitest';
import { harness, type Harness } from '../../helpers/harness';
import { CENTRAL_ORIGIN, CO, fixture, ISO_MS_UTC, scenarios, type Scenario } from './helpers';

interface CapturedRequest {
  file: string | null;
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
}

type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

/** The OData requests Central's capture made for a folder, in capture order. */
function capturedOData(folder: string): CapturedRequest[] {
  const { requests } = JSON.parse(fixture(`${CO}/${folder}/requests.json`)) as { requests: CapturedRequest[] };
  return requests.filter((r) => r.method === 'GET' && r.path.includes('.svc'));
}

/** Central's path in our project (project 1 → ours). */
const ours = (h: Harness, path: string) => path.replace('/v1/projects/1/', `/v1/projects/${h.projectId}/`);

/**
 * Checks the time- and id-dependent `__system` values of our rows against Central's rows (same
 * position), then copies Central's values over ours so the rest can be compared as text.
 */
function settleSystem(label: string, our: JsonValue, their: JsonValue, submitterId: number): void {
  if (Array.isArray(our) && Array.isArray(their)) {
    our.forEach((o, i) => settleSystem(`${label}[${i}]`, o, their[i] ?? null, submitterId));
    return;
  }
  if (our == null || their == null || typeof our !== 'object' || typeof their !== 'object' || Array.isArray(our) || Array.isArray(their)) return;
  for (const [k, v] of Object.entries(our)) {
    if (k === '__system' && v != null && typeof v === 'object' && !Array.isArray(v)) {
      const t = their.__system as { [k: string]: JsonValue } | undefined;
      expect(v.submissionDate, `${label}: submissionDate`).toMatch(ISO_MS_UTC);
      if (t?.updatedAt == null) expect(v.updatedAt, `${label}: updatedAt null as Central's`).toBeNull();
      else expect(v.updatedAt, `${label}: updatedAt set as Central's`).toMatch(ISO_MS_UTC);
      expect(v.submitterId, `${label}: submitterId is the App User's id, as a string`).toBe(String(submitterId));
      if (t) for (const key of ['submissionDate', 'updatedAt', 'submitterId'] as const) if (key in v) v[key] = t[key]!;
    } else {
      settleSystem(`${label}.${k}`, v, (their as { [k: string]: JsonValue })[k] ?? null, submitterId);
    }
  }
}

/** Rows are newest first: our submissionDates descend. */
function expectNewestFirst(label: string, body: { value?: JsonValue[] }): void {
  const dates = (body.value ?? []).map((r) => ((r as { __system?: { submissionDate?: string } }).__system?.submissionDate ?? null)).filter((d): d is string => d != null);
  expect(dates, `${label}: newest first`).toEqual([...dates].sort().reverse());
}

describe("OData answers equal Central's, for each captured form and request", () => {
  test.each(scenarios.map((s) => [s.folder, s] as const))('%s', async (_folder, scenario: Scenario) => {
    const h = await harness({ PUBLIC_URL: CENTRAL_ORIGIN });
    const submitterId = await scenario.setup(h);
    const captured = capturedOData(scenario.folder);
    // Every capture has the service document, $metadata and the four Submissions variants at least.
    expect(captured.length, 'captured requests').toBeGreaterThanOrEqual(6);
    const files = new Set(captured.map((r) => r.file));
    for (const f of ['odata/service-document.json', 'odata/metadata.xml', 'odata/Submissions.json', 'odata/Submissions-count.json', 'odata/Submissions-expand.json', 'odata/Submissions-one.json']) {
      expect(files.has(f), `${scenario.folder}: ${f} captured`).toBe(true);
    }
    for (const req of captured) {
      const label = `${scenario.folder} ${req.path.slice(req.path.indexOf('/forms/'))}`;
      const res = await h.get(ours(h, req.path), { as: 'bob' });
      const text = await res.text();
      expect(res.status, `${label}: ${text}`).toBe(req.status);
      expect(res.headers.get('content-type'), `${label}: Content-Type`).toBe(req.headers['content-type']);
      expect(res.headers.get('odata-version'), `${label}: OData-Version`).toBe('4.0');
      const theirText = fixture(`${CO}/${scenario.folder}/${req.file}`);
      if (req.file!.endsWith('.xml')) {
        expect(text, `${label}: EDMX`).toBe(theirText);
        continue;
      }
      const projectUrl = `${CENTRAL_ORIGIN}/v1/projects/${h.projectId}/`;
      expect(text.includes(`/v1/projects/${h.projectId}/`) || !theirText.includes('/v1/projects/1/'), `${label}: our project in URLs`).toBe(true);
      const our = JSON.parse(text.split(projectUrl).join(`${CENTRAL_ORIGIN}/v1/projects/1/`)) as { [k: string]: JsonValue };
      const their = JSON.parse(theirText) as { [k: string]: JsonValue };
      expectNewestFirst(label, our as { value?: JsonValue[] });
      settleSystem(label, our, their, submitterId);
      expect(our, label).toEqual(their);
      // As text: Central's key order (fact 19 for the envelope, facts 13 and 16 for rows).
      expect(JSON.stringify(our), `${label}: key order`).toBe(JSON.stringify(their));
    }
  });
});

/** Every `…@odata.navigationLink` value in a JSON tree. */
function navigationLinks(v: JsonValue, out: string[] = []): string[] {
  if (Array.isArray(v)) for (const x of v) navigationLinks(x, out);
  else if (v != null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (k.endsWith('@odata.navigationLink') && typeof x === 'string') out.push(x);
      else navigationLinks(x, out);
    }
  }
  return out;
}

describe('every navigation link resolves to the repeat-table rows of its parent', () => {
  test.each(scenarios.filter((s) => fixture(`${CO}/${s.folder}/odata/service-document.json`).includes('Submissions.')).map((s) => [s.folder, s] as const))('%s', async (_folder, scenario) => {
    const h = await harness({ PUBLIC_URL: CENTRAL_ORIGIN });
    await scenario.setup(h);
    const svc = `/v1/projects/${h.projectId}/forms/${encodeURIComponent(scenario.xmlFormId)}.svc`;
    const get = async (path: string) => {
      const res = await h.get(`${svc}/${path}`, { as: 'bob' });
      expect(res.status, path).toBe(200);
      return (await res.json()) as { value: Array<{ [k: string]: JsonValue }>; '@odata.context': string };
    };
    const { value: sets } = JSON.parse(fixture(`${CO}/${scenario.folder}/odata/service-document.json`)) as { value: Array<{ name: string }> };
    const tables = new Map<string, Array<{ [k: string]: JsonValue }>>();
    for (const { name } of sets) tables.set(name, (await get(name)).value);
    const links = new Set<string>();
    for (const rows of tables.values()) for (const l of navigationLinks(rows)) links.add(l);
    for (const l of navigationLinks((await get('Submissions?$expand=*')).value)) expect(links.has(l), `${l} (expanded) also in the tables`).toBe(true);
    expect(links.size).toBeGreaterThan(0);
    for (const link of links) {
      // Submissions('<root>')/…/<repeat>('<row id>')/…/<repeat>: the table is the path without keys.
      const path = decodeURIComponent(link).replace(/\('[^']*'\)/g, '').split('/');
      const table = `Submissions.${path.slice(1).join('.')}`;
      const keys = [...decodeURIComponent(link).matchAll(/\('([^']*)'\)/g)].map((m) => m[1]!);
      const body = await get(link);
      expect(body['@odata.context'], link).toBe(`${CENTRAL_ORIGIN}${svc}/$metadata#${table}`);
      const parentKey = (row: { [k: string]: JsonValue }) => Object.keys(row).find((k) => k.startsWith('__Submissions'))!;
      const expected = tables.get(table)!.filter((r) => r[parentKey(r)] === keys[keys.length - 1]);
      expect(body.value.length, link).toBeGreaterThan(0);
      expect(body.value, link).toEqual(expected);
    }
  });
});

describe('draft feed', () => {
  test('F/draft.svc serves the draft with its own context URLs; the published feed is unaffected', async () => {
    const h = await harness({ PUBLIC_URL: CENTRAL_ORIGIN });
    const s = scenarios.find((x) => x.folder === 'withrepeat')!;
    const P = `/v1/projects/${h.projectId}`;
    const created = await h.post(`${P}/forms`, { as: 'bob', body: s.formXml, headers: { 'Content-Type': 'application/xml' } });
    expect(created.status).toBe(200);
    const svc = await h.get(`${P}/forms/withrepeat/draft.svc`, { as: 'bob' });
    expect(svc.status).toBe(200);
    expect(svc.headers.get('content-type')).toBe('application/json; charset=utf-8; odata.metadata=minimal');
    expect(await svc.json()).toEqual({
      '@odata.context': `${CENTRAL_ORIGIN}${P}/forms/withrepeat/draft.svc/$metadata`,
      value: [{ name: 'Submissions', kind: 'EntitySet', url: 'Submissions' }, { name: 'Submissions.children.child', kind: 'EntitySet', url: 'Submissions.children.child' }],
    });
    const meta = await h.get(`${P}/forms/withrepeat/draft.svc/$metadata`, { as: 'bob' });
    expect(meta.status).toBe(200);
    expect(await meta.text()).toBe(fixture(`${CO}/withrepeat/odata/metadata.xml`));
    const empty = await h.get(`${P}/forms/withrepeat/draft.svc/Submissions?$count=true`, { as: 'bob' });
    expect(await empty.json()).toEqual({ value: [], '@odata.context': `${CENTRAL_ORIGIN}${P}/forms/withrepeat/draft.svc/$metadata#Submissions`, '@odata.count': 0 });
    // The published feed does not exist yet.
    expect((await h.get(`${P}/forms/withrepeat.svc/Submissions`, { as: 'bob' })).status).toBe(404);
  });
});
