/**
 * Client audit logs (issue 17; Central's lib/data/client-audits.js behaviour): the file a plain
 * submission names in `/meta/audit` is an attachment slot like any media, and the ZIP export
 * gathers every exported submission's log into `<xmlFormId> - audit.csv` (instance ID, then
 * Central's columns) instead of `media/`. Fixtures: shared/fixtures/central-misc/audit*.csv.
 */
import { describe, expect, test } from 'vitest';
import { harness, json, type Harness } from '../../helpers/harness';
import { bodyBytes, fixture, fixtureBytes, publishForm, readZip, submitOpenRosa } from './helpers';

const HEADER = 'instance ID,event,node,start,end,latitude,longitude,accuracy,old-value,new-value,user,change-reason\n';
const ONE_ROWS = `one,a,/data/a,2000-01-01T00:01,2000-01-01T00:02,1,2,3,aa,bb,,
one,b,/data/b,2000-01-01T00:02,2000-01-01T00:03,4,5,6,cc,dd,,
one,c,/data/c,2000-01-01T00:03,2000-01-01T00:04,7,8,9,ee,ff,,
one,d,/data/d,2000-01-01T00:10,,10,11,12,gg,,,
one,e,/data/e,2000-01-01T00:11,,,,,hh,ii,,
`;
const AUDIT2_ROWS = (id: string) => `${id},f,/data/f,2000-01-01T00:04,2000-01-01T00:05,-1,-2,,aa,bb,,
${id},g,/data/g,2000-01-01T00:05,2000-01-01T00:06,-3,-4,,cc,dd,,
${id},h,/data/h,2000-01-01T00:06,2000-01-01T00:07,-5,-6,,ee,ff,,
`;

const instance = (id: string, file: string) =>
  `<data id="audits"><meta><instanceID>${id}</instanceID><audit>${file}</audit></meta><name>N ${id}</name><age>30</age></data>`;
const csvFile = (name: string, bytes: Uint8Array) => ({ name, bytes, type: 'text/csv' });
const F = (h: Harness) => `/v1/projects/${h.projectId}/forms/audits`;
const text = (b: Uint8Array) => new TextDecoder().decode(b);

async function zipEntries(h: Harness, query = ''): Promise<Map<string, string>> {
  const res = await h.get(`${F(h)}/submissions.csv.zip${query}`, { as: 'bob' });
  expect(res.status).toBe(200);
  const entries = readZip(await bodyBytes(res));
  return new Map(entries.map((e) => [e.name, text(e.data)]));
}

describe('client audit logs', () => {
  test('slots in the attachment list, the consolidated CSV in the ZIP (not in media/), one empty row for a missing file', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/clientAudits.xml'));
    await submitOpenRosa(h, 'bob', instance('one', 'audit.csv'), { files: [csvFile('audit.csv', fixtureBytes('central-misc/audit.csv'))] });
    // Any name counts: the file is the one /meta/audit names.
    await submitOpenRosa(h, 'alice', instance('two', 'log.csv'), { files: [csvFile('log.csv', fixtureBytes('central-misc/audit2.csv'))] });
    await submitOpenRosa(h, 'bob', instance('three', 'audit.csv'));

    expect(await json(await h.get(`${F(h)}/submissions/one/attachments`, { as: 'bob' }))).toEqual([{ name: 'audit.csv', exists: true }]);
    expect(await json(await h.get(`${F(h)}/submissions/three/attachments`, { as: 'bob' }))).toEqual([{ name: 'audit.csv', exists: false }]);
    // Each stored file is an attachment event, as Central logs it.
    const events = (await h.audits()).filter((a) => a.action === 'submission.attachment.update');
    expect(events.map((a) => (a.details as { name: string; instanceId: string })).map((d) => [d.instanceId, d.name])).toEqual([['one', 'audit.csv'], ['two', 'log.csv']]);

    const files = await zipEntries(h);
    expect([...files.keys()]).toEqual(['audits.csv', 'audits - audit.csv']);
    expect(files.get('audits - audit.csv')).toBe(HEADER + ONE_ROWS + AUDIT2_ROWS('two') + 'three,,,,,,,,,,,\n');
    // attachments=false leaves the media out, never the client audit table.
    expect([...(await zipEntries(h, '?attachments=false')).keys()]).toEqual(['audits.csv', 'audits - audit.csv']);

    // The export's $filter applies: by submitter, by review state.
    expect((await zipEntries(h, `?$filter=${encodeURIComponent(`__system/submitterId eq ${h.ids.alice}`)}`)).get('audits - audit.csv')).toBe(HEADER + AUDIT2_ROWS('two'));
    expect((await h.patch(`${F(h)}/submissions/one`, { as: 'bob', body: { reviewState: 'approved' } })).status).toBe(200);
    expect((await zipEntries(h, `?$filter=${encodeURIComponent("__system/reviewState eq 'approved'")}`)).get('audits - audit.csv')).toBe(HEADER + ONE_ROWS);
    // No submission left: no table at all, as Central.
    expect([...(await zipEntries(h, `?$filter=${encodeURIComponent("__id eq 'nope'")}`)).keys()]).toEqual(['audits.csv']);
  });

  test('the latest file counts: replaced over OpenRosa, over REST, and in a new version', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/clientAudits.xml'));
    await submitOpenRosa(h, 'bob', instance('one', 'audit.csv'), { files: [csvFile('audit.csv', fixtureBytes('central-misc/audit.csv'))] });
    await submitOpenRosa(h, 'bob', instance('one', 'audit.csv'), { files: [csvFile('audit.csv', fixtureBytes('central-misc/audit2.csv'))] });
    expect((await zipEntries(h)).get('audits - audit.csv')).toBe(HEADER + AUDIT2_ROWS('one'));

    const upload = await h.post(`${F(h)}/submissions/one/attachments/audit.csv`, { as: 'bob', body: fixtureBytes('central-misc/audit.csv'), headers: { 'Content-Type': 'text/csv' } });
    expect(upload.status).toBe(200);
    expect((await zipEntries(h)).get('audits - audit.csv')).toBe(HEADER + ONE_ROWS);

    const edit = instance('one2', 'audit.csv').replace('</instanceID>', '</instanceID><deprecatedID>one</deprecatedID>');
    await submitOpenRosa(h, 'bob', edit, { files: [csvFile('audit.csv', fixtureBytes('central-misc/audit3.csv'))] });
    expect((await zipEntries(h)).get('audits - audit.csv')).toBe(`${HEADER}one,i,/data/f,2000-01-01T00:04,2000-01-01T00:05,-1,-2,,aa,bb,,
one,j,/data/g,2000-01-01T00:05,2000-01-01T00:06,-3,-4,,cc,dd,,
one,k,/data/h,2000-01-01T00:06,2000-01-01T00:07,-5,-6,,ee,ff,,
`);
  });

  test('user and change-reason columns, unknown columns dropped, ragged lines and stray quotes tolerated', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/clientAudits.xml'));
    await submitOpenRosa(h, 'bob', instance('one', 'audit.csv'), { files: [csvFile('audit.csv', fixtureBytes('central-misc/audit4.csv'))] });
    const ragged = fixture('central-misc/audit.csv').replace('gg,', '').replace('hh', 'h"h');
    await submitOpenRosa(h, 'bob', instance('two', 'audit.csv'), { files: [csvFile('audit.csv', new TextEncoder().encode(ragged))] });
    expect((await zipEntries(h)).get('audits - audit.csv')).toBe(`${HEADER}one,l,/data/l,2000-01-01T00:04,2000-01-01T00:05,-1,-2,,aa,bb,user,reason1
one,m,/data/m,2000-01-01T00:05,2000-01-01T00:06,-3,-4,,cc,dd,user,
one,n,/data/n,2000-01-01T00:06,2000-01-01T00:07,-5,-6,,ee,ff,,reason2
${ONE_ROWS.replaceAll('one,', 'two,').replace('12,gg,,,', '12,,,,').replace(',hh,', ',"h""h",')}`);
  });
});
