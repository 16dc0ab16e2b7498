import { readFileSync } from 'node:fs';
/**
 * CSV/ZIP exports beyond the captured layouts: `$filter` (Central's subset and its errors, with
 * Central's exact bodies), rights, draft variants, POST variants, trashed submissions and
 * `attachments=false`.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { submissions } from '../../../drizzle/schema';
import { harness, json, type As, type Harness } from '../../helpers/harness';
import {
  appUserFor, bodyBytes, fixture, fixtureBytes, parseCsv, publishForm, readZip, submitOpenRosa,
} from './helpers';
import { scenarios } from './scenarios';
import { userWithRole } from '../../helpers/roles';

const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const F = (h: Harness, form: string) => `${P(h)}/forms/${form}`;
const XML = { 'Content-Type': 'application/xml' };
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** The KEY column of a root CSV. */
function keys(csv: string): string[] {
  const [header, ...rows] = parseCsv(csv);
  const at = header!.indexOf('KEY');
  return rows.map((r) => r[at]!);
}

/** GET an export, `$filter` URL-encoded. */
const exportWith = (h: Harness, form: string, suffix: '.csv' | '.csv.zip', filter: string, as: As = 'bob') =>
  h.get(`${F(h, form)}/submissions${suffix}?$filter=${encodeURIComponent(filter)}`, { as });

/**
 * simple with three submissions from three submitters at known times: `one` (bob, 2019-03-04,
 * received), `two` (alice, 2021-07-15, approved), `three` (an App User, 2100-01-01, hasIssues).
 */
async function threeSubmitters(h: Harness) {
  await publishForm(h, fixture('forms/simple.xml'));
  for (const [k, as] of [['one', 'bob'], ['two', 'alice']] as const) {
    const res = await h.post(`${F(h, 'simple')}/submissions`, { as, body: fixture(`submissions/simple.${k}.xml`), headers: XML });
    expect(res.status).toBe(200);
  }
  const au = await appUserFor(h, 'simple', 'Tablet simple');
  await submitOpenRosa(h, { key: au.token }, fixture('submissions/simple.three.xml'), { deviceId: 'collect:simple-device' });
  // Midday UTC, so that year()/month()/day() give the same answer in any session time zone.
  for (const [k, at] of [['one', '2019-03-04T12:00:00.000Z'], ['two', '2021-07-15T12:00:00.000Z'], ['three', '2100-01-01T12:00:00.000Z']] as const) {
    await h.db.update(submissions).set({ createdAt: new Date(at) }).where(eq(submissions.instanceId, k));
  }
  for (const [k, reviewState] of [['two', 'approved'], ['three', 'hasIssues']] as const) {
    expect((await h.patch(`${F(h, 'simple')}/submissions/${k}`, { as: 'bob', body: { reviewState } })).status).toBe(200);
  }
  return { appUser: au.id };
}

describe('$filter', () => {
  test("Central's subset: dates, now(), year/month/day, submitterId, reviewState, null, __id, and/or/not, $root/Submissions", async () => {
    const h = await harness();
    const { appUser } = await threeSubmitters(h);
    const cases: Array<[string, string[]]> = [
      ['__system/submissionDate lt 2020-01-01', ['one']],
      ['__system/submissionDate gt 2020-01-01T00:00:00.000Z', ['three', 'two']],
      ['__system/submissionDate ge 2021-07-15T15:00:00+03:00 and __system/submissionDate le 2021-07-15T12:00:00Z', ['two']],
      ["__system/submissionDate lt '2020-01-01'", ['one']],
      ['__system/submissionDate lt now()', ['two', 'one']],
      ['__system/submissionDate gt now()', ['three']],
      ['year(__system/submissionDate) eq 2021', ['two']],
      ['year(__system/submissionDate) lt year(now())', ['two', 'one']],
      ['month(__system/submissionDate) eq 3', ['one']],
      ['day(__system/submissionDate) eq 15', ['two']],
      [`__system/submitterId eq ${h.ids.bob}`, ['one']],
      [`__system/submitterId eq ${appUser}`, ['three']],
      [`__system/submitterId ne ${appUser}`, ['two', 'one']],
      ["__system/reviewState eq 'approved'", ['two']],
      ['__system/reviewState eq null', ['one']],
      ['__system/reviewState ne null', ['three', 'two']],
      ["__system/reviewState ne 'approved'", ['three', 'one']],
      ['__system/deletedAt eq null', ['three', 'two', 'one']],
      ["__id eq 'two'", ['two']],
      ["__id eq 'nope'", []],
      ["__id eq 'two' or __id eq 'one'", ['two', 'one']],
      ["not (__system/reviewState eq 'approved')", ['three', 'one']],
      ["__system/submissionDate gt 2020-01-01 and not (__system/reviewState eq 'hasIssues')", ['two']],
      ["(__id eq 'one' or __id eq 'three') and __system/reviewState eq null", ['one']],
      [`$root/Submissions/__system/submitterId eq ${h.ids.alice}`, ['two']],
      ["$root/Submissions/__id eq 'three'", ['three']],
    ];
    for (const [filter, expected] of cases) {
      const csv = await exportWith(h, 'simple', '.csv', filter);
      expect(csv.status, filter).toBe(200);
      expect(keys(await csv.text()), filter).toEqual(expected);
      const zip = await exportWith(h, 'simple', '.csv.zip', filter);
      expect(zip.status, filter).toBe(200);
      const entries = readZip(await bodyBytes(zip));
      expect(entries.map((e) => e.name)).toEqual(['simple.csv']);
      expect(keys(text(entries[0]!.data)), `${filter} (zip)`).toEqual(expected);
    }
    // Without a filter (or an empty one): everything, newest first.
    expect(keys(await (await h.get(`${F(h, 'simple')}/submissions.csv?$filter=`, { as: 'bob' })).text())).toEqual(['three', 'two', 'one']);
  });

  test('a filter applies to every file of the zip: repeat rows and media follow their submissions', async () => {
    const h = await harness();
    for (const name of ['withrepeat', 'binaryType']) await scenarios.find((s) => s.folder === name)!.setup(h);
    const zip = readZip(await bodyBytes(await exportWith(h, 'withrepeat', '.csv.zip', "$root/Submissions/__id eq 'rtwo'")));
    expect(zip.map((e) => e.name)).toEqual(['withrepeat.csv', 'withrepeat-child.csv']);
    expect(keys(text(zip[0]!.data))).toEqual(['rtwo']);
    expect(parseCsv(text(zip[1]!.data))).toEqual([
      ['name', 'age', 'PARENT_KEY', 'KEY'],
      ['Billy', '4', 'rtwo', 'rtwo/children/child[1]'],
      ['Blaine', '7', 'rtwo', 'rtwo/children/child[2]'],
      ['Bella', '1', 'rtwo', 'rtwo/children/child[3]'],
    ]);
    const approved = readZip(await bodyBytes(await exportWith(h, 'withrepeat', '.csv.zip', "__system/reviewState eq 'approved'")));
    expect(keys(text(approved[0]!.data))).toEqual(['rone']);
    expect(parseCsv(text(approved[1]!.data))).toEqual([['name', 'age', 'PARENT_KEY', 'KEY']]); // rone has no children

    const media = readZip(await bodyBytes(await exportWith(h, 'binaryType', '.csv.zip', "__id eq 'bone'")));
    expect(media.map((e) => e.name)).toEqual(['binaryType.csv', 'media/my_file1.mp4']);
    const dir = 'central-outputs/binaryType/inputs/submission-media';
    expect(Buffer.from(media[1]!.data).equals(Buffer.from(fixtureBytes(`${dir}/binaryType.one/my_file1.mp4`)))).toBe(true);
    const none = readZip(await bodyBytes(await exportWith(h, 'binaryType', '.csv.zip', "__id eq 'nope'")));
    expect(none.map((e) => e.name)).toEqual(['binaryType.csv']);
    expect(parseCsv(text(none[0]!.data))).toHaveLength(1); // the header alone
  });

  test("bad filters answer before any byte, with Central's bodies: 400.18 unparseable, 501.4 contains(), 501.5 a form field", async () => {
    const h = await harness();
    await threeSubmitters(h);
    const central = (file: string) => JSON.parse(fixture(`central-outputs/_errors/${file}`)) as { status: number; contentType: string; body: string; request: { path: string } };
    for (const file of ['400.18-odata-filter-unparseable.json', '501.4-odata-filter-function.json', '501.5-odata-filter-field.json']) {
      const c = central(file);
      // The same $filter Central got on its OData feed, sent to the exports (they share the parser).
      const filter = decodeURIComponent(c.request.path.slice(c.request.path.indexOf('$filter=') + '$filter='.length));
      for (const suffix of ['.csv', '.csv.zip'] as const) {
        for (const method of ['GET', 'POST']) {
          const res = await h.request(method, `${F(h, 'simple')}/submissions${suffix}?$filter=${encodeURIComponent(filter)}`, { as: 'bob' });
          expect(res.status, `${file} ${method} ${suffix}`).toBe(c.status);
          expect(res.headers.get('content-type')).toBe(c.contentType);
          expect(res.headers.get('content-disposition')).toBeNull();
          expect(await res.text(), `${file} ${method} ${suffix}`).toBe(c.body);
        }
      }
    }
    const other: Array<[string, number]> = [
      ["__system/submitterName eq 'x'", 501.5], ["__system/deviceId eq 'x'", 501.5], ["age eq '30'", 501.5],
      ["tolower(__id) eq 'one'", 501.4], ['__system/submitterId add 1 eq 3', 501.4], ["__id eq 'one' and", 400.18],
      ["__id in ('one','two')", 400.18], ['__system/submissionDate lt 2020-13-45', 400.18],
      ['year(__id) eq 2020', 501.4], ['__system/submissionDate eq __id', 501.4],
    ];
    for (const [filter, code] of other) {
      const res = await exportWith(h, 'simple', '.csv', filter);
      expect(res.status, filter).toBe(Math.floor(code));
      expect((await json<{ code: number }>(res)).code, filter).toBe(code);
    }
  });
});


describe('rights (submission.read on the form)', () => {
  test('alice, bob and a project viewer may export; a data collector, an App User and chelsea get 403.1; anonymous 401.2', async () => {
    const h = await harness();
    await threeSubmitters(h);
    const viewer = await userWithRole(h, 'viewer', 'viola@getodk.org');
    const collector = await userWithRole(h, 'formfill', 'dora@getodk.org');
    const au = await appUserFor(h, 'simple', 'Tablet rights');
    const who: Array<[string, As, number, number?]> = [
      ['alice', 'alice', 200], ['bob', 'bob', 200], ['viewer', viewer, 200],
      ['data collector', collector, 403, 403.1], ['app user', { key: au.token }, 403, 403.1], ['chelsea', 'chelsea', 403, 403.1],
      ['anonymous', 'anonymous', 401, 401.2],
    ];
    for (const [name, as, status, code] of who) {
      for (const method of ['GET', 'POST']) {
        for (const path of ['submissions.csv', 'submissions.csv.zip']) {
          const res = await h.request(method, `${F(h, 'simple')}/${path}`, { as });
          expect(res.status, `${name} ${method} ${path}`).toBe(status);
          if (code != null) expect((await json<{ code: number }>(res)).code).toBe(code);
          else if (path.endsWith('.csv')) expect(keys(await res.text())).toEqual(['three', 'two', 'one']);
          else expect(readZip(await bodyBytes(res)).map((e) => e.name)).toEqual(['simple.csv']);
        }
      }
    }
    // An unknown form is 404.1, for the ones who could read it.
    const missing = await h.get(`${F(h, 'nope')}/submissions.csv.zip`, { as: 'bob' });
    expect(missing.status).toBe(404);
    expect((await json<{ code: number }>(missing)).code).toBe(404.1);
  });
});

describe('variants', () => {
  test('draft: F/draft/submissions.csv(.zip) hold the draft submissions only; no draft is 404.1', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/simple.xml'));
    expect((await h.post(`${F(h, 'simple')}/submissions`, { as: 'bob', body: fixture('submissions/simple.one.xml'), headers: XML })).status).toBe(200);
    const noDraft = await h.get(`${F(h, 'simple')}/draft/submissions.csv`, { as: 'bob' });
    expect(noDraft.status).toBe(404);
    expect((await json<{ code: number }>(noDraft)).code).toBe(404.1);
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'bob' })).status).toBe(200);
    for (const k of ['two', 'three']) {
      expect((await h.post(`${F(h, 'simple')}/draft/submissions`, { as: 'bob', body: fixture(`submissions/simple.${k}.xml`), headers: XML })).status).toBe(200);
    }
    const csv = await h.get(`${F(h, 'simple')}/draft/submissions.csv`, { as: 'bob' });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-disposition')).toBe('attachment; filename="simple.csv"; filename*=UTF-8\'\'simple.csv');
    expect(keys(await csv.text())).toEqual(['three', 'two']);
    const zip = await h.get(`${F(h, 'simple')}/draft/submissions.csv.zip`, { as: 'bob' });
    expect(zip.headers.get('content-disposition')).toBe('attachment; filename="simple.zip"; filename*=UTF-8\'\'simple.zip');
    const entries = readZip(await bodyBytes(zip));
    expect(entries.map((e) => e.name)).toEqual(['simple.csv']);
    expect(keys(text(entries[0]!.data))).toEqual(['three', 'two']);
    expect(keys(await (await h.get(`${F(h, 'simple')}/submissions.csv`, { as: 'bob' })).text())).toEqual(['one']);
    const filtered = await h.post(`${F(h, 'simple')}/draft/submissions.csv?$filter=${encodeURIComponent("__id eq 'two'")}`, { as: 'bob' });
    expect(keys(await filtered.text())).toEqual(['two']);
    // A form that was never published has no published export.
    const draftOnly = await h.post(`${P(h)}/forms`, { as: 'bob', body: fixture('forms/withrepeat.xml'), headers: XML });
    expect(draftOnly.status).toBe(200);
    expect((await h.get(`${F(h, 'withrepeat')}/submissions.csv.zip`, { as: 'bob' })).status).toBe(404);
    const empty = await h.get(`${F(h, 'withrepeat')}/draft/submissions.csv.zip`, { as: 'bob' });
    expect(readZip(await bodyBytes(empty)).map((e) => [e.name, parseCsv(text(e.data)).length])).toEqual([['withrepeat.csv', 1], ['withrepeat-child.csv', 1]]);
  });

  test('POST with a form-urlencoded or a JSON body (passphrases) exports as GET does; query flags still apply', async () => {
    const h = await harness();
    await scenarios.find((s) => s.folder === 'withrepeat')!.setup(h);
    const unzip = async (res: Response) => readZip(await bodyBytes(res)).map((e): [string, string] => [e.name, text(e.data)]);
    const get = await unzip(await h.get(`${F(h, 'withrepeat')}/submissions.csv.zip?groupPaths=false`, { as: 'bob' }));
    expect(get[0]![1].split('\n')[0]).toContain(',instanceID,');
    const bodies: Array<[string, string]> = [
      ['application/x-www-form-urlencoded', '1=secret%20passphrase&other=x'],
      ['application/json', JSON.stringify({ 1: 'secret passphrase', other: 'x' })],
      ['application/json', '{not json'],
      ['text/plain', 'whatever'],
    ];
    for (const [type, body] of bodies) {
      const res = await h.post(`${F(h, 'withrepeat')}/submissions.csv.zip?groupPaths=false`, { as: 'bob', body, headers: { 'Content-Type': type } });
      expect(res.status, type).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/zip');
      expect(res.headers.get('content-disposition')).toBe('attachment; filename="withrepeat.zip"; filename*=UTF-8\'\'withrepeat.zip');
      expect(await unzip(res), `${type} ${body}`).toEqual(get);
      const csv = await h.post(`${F(h, 'withrepeat')}/submissions.csv?groupPaths=false`, { as: 'bob', body, headers: { 'Content-Type': type } });
      expect(csv.status).toBe(200);
      expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(await csv.text()).toBe(get[0]![1]);
    }
  });

  test('trashed submissions, their repeat rows and their media are left out', async () => {
    const h = await harness();
    for (const name of ['withrepeat', 'binaryType']) await scenarios.find((s) => s.folder === name)!.setup(h);
    expect((await h.delete(`${F(h, 'withrepeat')}/submissions/rtwo`, { as: 'bob' })).status).toBe(200);
    const zip = readZip(await bodyBytes(await h.get(`${F(h, 'withrepeat')}/submissions.csv.zip`, { as: 'bob' })));
    expect(keys(text(zip[0]!.data))).toEqual(['rthree', 'rone']);
    expect(parseCsv(text(zip[1]!.data)).slice(1).map((r) => r.at(-1))).toEqual(['rthree/children/child[1]']);
    expect(keys(await (await h.get(`${F(h, 'withrepeat')}/submissions.csv`, { as: 'bob' })).text())).toEqual(['rthree', 'rone']);

    expect((await h.delete(`${F(h, 'binaryType')}/submissions/both`, { as: 'bob' })).status).toBe(200);
    const media = readZip(await bodyBytes(await h.get(`${F(h, 'binaryType')}/submissions.csv.zip`, { as: 'bob' })));
    expect(media.map((e) => e.name)).toEqual(['binaryType.csv', 'media/my_file1.mp4', 'media/here_is_file2.jpg']);
    expect(keys(text(media[0]!.data))).toEqual(['btwo', 'bone']);
    // Restored, it is back.
    expect((await h.post(`${F(h, 'binaryType')}/submissions/both/restore`, { as: 'bob' })).status).toBe(200);
    expect(keys(await (await h.get(`${F(h, 'binaryType')}/submissions.csv`, { as: 'bob' })).text())).toEqual(['btwo', 'bone', 'both']);
  });

  test('attachments=false: no media, and the file is <xmlFormId>.csv.zip; only the exact string false counts', async () => {
    const h = await harness();
    await scenarios.find((s) => s.folder === 'binaryType')!.setup(h);
    const off = await h.get(`${F(h, 'binaryType')}/submissions.csv.zip?attachments=false`, { as: 'bob' });
    expect(off.headers.get('content-disposition')).toBe('attachment; filename="binaryType.csv.zip"; filename*=UTF-8\'\'binaryType.csv.zip');
    const entries = readZip(await bodyBytes(off));
    expect(entries.map((e) => e.name)).toEqual(['binaryType.csv']);
    expect(keys(text(entries[0]!.data))).toEqual(['btwo', 'bone', 'both']);
    // The CSV still counts the attachments.
    const [header, ...rows] = parseCsv(text(entries[0]!.data));
    expect(rows.map((r) => [r[header!.indexOf('AttachmentsPresent')], r[header!.indexOf('AttachmentsExpected')]])).toEqual([['1', '1'], ['1', '1'], ['2', '2']]);
    for (const value of ['true', 'no', 'FALSE', '0']) {
      const res = await h.get(`${F(h, 'binaryType')}/submissions.csv.zip?attachments=${value}`, { as: 'bob' });
      expect(res.headers.get('content-disposition'), value).toBe('attachment; filename="binaryType.zip"; filename*=UTF-8\'\'binaryType.zip');
      expect(readZip(await bodyBytes(res)), value).toHaveLength(5);
    }
  });
});

describe('errors of the first database read are proper responses', () => {
  // One test each: the failed statement aborts the test's shared transaction (requests do not share one).
  test.each(['submissions.csv', 'submissions.csv.zip'])('%s: a date PostgreSQL refuses (2020-02-30) is a 400 JSON error, not a 200 that breaks off', async (file) => {
    const h = await harness();
    expect((await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'bob', body: readFileSync(new URL('../../../../shared/fixtures/forms/simple.xml', import.meta.url), 'utf8'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    const res = await h.get(`/v1/projects/${h.projectId}/forms/simple/${file}?$filter=${encodeURIComponent('__system/submissionDate lt 2020-02-30')}`, { as: 'bob' });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  });
});
