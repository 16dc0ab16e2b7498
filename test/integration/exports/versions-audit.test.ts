/**
 * Exports across form versions and their audit, as Central's api/submissions.js pins them: each
 * row's FormVersion is the version the submission was first made against (an edit against a
 * newer version keeps it), `?deletedFields=true` columns carry the values the XML holds even when
 * the row's own version no longer declares the field, and every CSV / ZIP export of a published
 * form logs `form.submission.export` (no details; none for a draft's).
 */
import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { audits } from '../../../drizzle/schema';
import { harness, json, type Harness } from '../../helpers/harness';
import { bodyBytes, fixture, parseCsv, publishForm, readZip, submitOpenRosa } from './helpers';

const F = (h: Harness) => `/v1/projects/${h.projectId}/forms/simple`;
const XML = { 'Content-Type': 'application/xml' };
const decoder = new TextDecoder();
const one = fixture('submissions/simple.one.xml');
const two = fixture('submissions/simple.two.xml');
const three = fixture('submissions/simple.three.xml');
/** The simple form without `age`, as version `version`. */
const withoutAge = (version: string) => fixture('forms/simple.xml')
  .replace('id="simple"', `id="simple" version="${version}"`)
  .replace(/\s*<age\/>/, '')
  .replace(/\s*<bind nodeset="\/data\/age"[^>]*\/>/, '')
  .replace(/\s*<input ref="\/data\/age">[\s\S]*?<\/input>/, '');

const post = (h: Harness, xml: string) => h.post(`${F(h)}/submissions`, { as: 'bob', body: xml, headers: XML });
/** The root CSV of the ZIP export (`query` appended), parsed, with the SubmissionDate column dropped. */
async function zipRows(h: Harness, query = ''): Promise<string[][]> {
  const res = await h.get(`${F(h)}/submissions.csv.zip${query}`, { as: 'bob' });
  expect(res.status).toBe(200);
  const entry = readZip(await bodyBytes(res)).find((e) => e.name === 'simple.csv')!;
  const rows = parseCsv(decoder.decode(entry.data));
  return rows.map((r) => r.slice(1));
}

describe('FormVersion per row', () => {
  test('the version a submission was first made against, also after an edit against a newer one', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/simple.xml'));
    expect((await post(h, one)).status).toBe(200);
    expect((await post(h, two)).status).toBe(200);
    expect((await h.post(`${F(h)}/draft`, { as: 'bob', body: fixture('forms/simple.xml').replace('id="simple"', 'id="simple" version="updated"'), headers: XML })).status).toBe(200);
    expect((await h.post(`${F(h)}/draft/publish`, { as: 'bob' })).status).toBe(200);
    await submitOpenRosa(h, 'bob', one.replace('id="simple"', 'id="simple" version="updated"')
      .replace('<instanceID>one', '<deprecatedID>one</deprecatedID><instanceID>one2'));
    expect((await post(h, three.replace('id="simple"', 'id="simple" version="updated"'))).status).toBe(200);
    const rows = await zipRows(h);
    const at = rows[0]!.indexOf('FormVersion');
    const edits = rows[0]!.indexOf('Edits');
    expect(rows.slice(1).map((r) => [r[0], r[edits], r[at]])).toEqual([
      ['three', '0', 'updated'], ['two', '0', ''], ['one2', '1', ''],
    ]);
    // The CSV alone says the same.
    const csv = parseCsv(await (await h.get(`${F(h)}/submissions.csv`, { as: 'bob' })).text());
    expect(csv.slice(1).map((r) => r[r.length - 1])).toEqual(['updated', '', '']);
  });
});

describe('?deletedFields=true', () => {
  test('a dropped field keeps its column, with the value each row\'s XML holds, whatever its version', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/simple.xml'));
    expect((await post(h, one)).status).toBe(200);
    expect((await post(h, two)).status).toBe(200);
    expect((await h.post(`${F(h)}/draft?ignoreWarnings=true`, { as: 'bob', body: withoutAge('2'), headers: XML })).status).toBe(200);
    expect((await h.post(`${F(h)}/draft/publish`, { as: 'bob' })).status).toBe(200);
    // A submission of version 2 that still carries <age> (Central exports it).
    expect((await post(h, three.replace('id="simple"', 'id="simple" version="2"'))).status).toBe(200);
    const rows = await zipRows(h, '?deletedFields=true');
    expect(rows[0]).toEqual(['meta-instanceID', 'name', 'age', 'KEY', 'SubmitterID', 'SubmitterName', 'AttachmentsPresent',
      'AttachmentsExpected', 'Status', 'ReviewState', 'DeviceID', 'Edits', 'FormVersion']);
    const cells = rows.slice(1).map((r) => [r[0], r[1], r[2], r[r.length - 1]]);
    expect(cells).toEqual([['three', 'Chelsea', '38', '2'], ['two', 'Bob', '34', ''], ['one', 'Alice', '30', '']]);
    // Without the flag the column is gone.
    expect((await zipRows(h))[0]).not.toContain('age');
  });
});

describe('form.submission.export audit', () => {
  test('CSV and ZIP exports (GET and POST) log it with the form as actee and no details; a draft export does not', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/simple.xml'));
    expect((await h.get(`${F(h)}/submissions.csv.zip`, { as: 'bob' })).status).toBe(200);
    expect((await h.get(`${F(h)}/submissions.csv`, { as: 'bob' })).status).toBe(200);
    expect((await h.post(`${F(h)}/submissions.csv`, { as: 'bob', body: '', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } })).status).toBe(200);
    expect((await h.post(`${F(h)}/draft`, { as: 'bob' })).status).toBe(200);
    expect((await h.get(`${F(h)}/draft/submissions.csv.zip`, { as: 'bob' })).status).toBe(200);
    const rows = await h.db.select().from(audits).where(eq(audits.action, 'form.submission.export'));
    expect(rows.length).toBe(3);
    for (const r of rows) expect(r).toMatchObject({ actorId: h.ids.bob, details: null });
    const listed = await json(await h.get('/v1/audits?action=form.submission.export', { as: 'alice', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(listed.length).toBe(3);
    expect(listed[0].actee.xmlFormId).toBe('simple');
    // A refused export logs nothing.
    expect((await h.get(`${F(h)}/submissions.csv`, { as: 'anonymous' })).status).toBe(401);
    expect((await h.db.select().from(audits).where(eq(audits.action, 'form.submission.export'))).length).toBe(3);
  });
});
