/** A first look at both export endpoints: a published form with no submissions yet. */
import { expect, test } from 'vitest';
import { harness } from '../../helpers/harness';
import { bodyBytes, fixture, publishForm, readZip } from './helpers';

test('no submissions: the CSV is its header alone; the ZIP holds each table with its header, deflated, and no media', async () => {
  const h = await harness();
  await publishForm(h, fixture('forms/withrepeat.xml'));
  const F = `/v1/projects/${h.projectId}/forms/withrepeat`;
  const csv = await h.get(`${F}/submissions.csv`, { as: 'bob' });
  expect(csv.status).toBe(200);
  expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
  expect(await csv.text()).toBe('SubmissionDate,meta-instanceID,name,age,KEY,SubmitterID,SubmitterName,AttachmentsPresent,AttachmentsExpected,Status,ReviewState,DeviceID,Edits,FormVersion\n');
  const zip = await h.get(`${F}/submissions.csv.zip`, { as: 'bob' });
  expect(zip.status).toBe(200);
  expect(zip.headers.get('content-type')).toBe('application/zip');
  const entries = readZip(await bodyBytes(zip));
  expect(entries.map((e) => [e.name, e.method, new TextDecoder().decode(e.data)])).toEqual([
    ['withrepeat.csv', 8, 'SubmissionDate,meta-instanceID,name,age,KEY,SubmitterID,SubmitterName,AttachmentsPresent,AttachmentsExpected,Status,ReviewState,DeviceID,Edits,FormVersion\n'],
    ['withrepeat-child.csv', 8, 'name,age,PARENT_KEY,KEY\n'],
  ]);
});
