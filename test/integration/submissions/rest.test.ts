import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { harness, json, type Harness } from '../../helpers/harness';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const central = (path: string) => JSON.parse(fixture(`central-outputs/${path}`)) as Record<string, unknown>;

async function setup(h: Harness): Promise<void> {
  const res = await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'bob', body: fixture('forms/simple.xml'), headers: { 'Content-Type': 'application/xml' } });
  expect(res.status).toBe(200);
  for (const key of ['one', 'two']) {
    const xml = fixture(`submissions/simple.${key}.xml`);
    const boundary = 'b0undary';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="s.xml"\r\nContent-Type: text/xml\r\n\r\n${xml}\r\n--${boundary}--\r\n`;
    const sent = await h.post(`/v1/projects/${h.projectId}/submission`, {
      as: 'bob', body, headers: { 'X-OpenRosa-Version': '1.0', 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'User-Agent': 'test-agent' },
    });
    expect(sent.status, await sent.clone().text()).toBe(201);
  }
}

describe('REST reads of submissions', () => {
  test("GET F/submissions lists newest first in Central's shape; extended adds the submitter", async () => {
    const h = await harness();
    await setup(h);
    const list = await json<Array<Record<string, unknown>>>(await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions`, { as: 'bob' }));
    expect(list.map((s) => s.instanceId)).toEqual(['two', 'one']);
    const shape = central('simple/api/submission.json');
    expect(Object.keys(list[0]!)).toEqual(Object.keys(shape));
    expect(Object.keys(list[0]!.currentVersion as object)).toEqual(Object.keys(shape.currentVersion as object));
    expect(list[0]).toMatchObject({ submitterId: h.ids.bob, reviewState: null, userAgent: 'test-agent', deletedAt: null });
    const ext = await json<Array<Record<string, any>>>(await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(Object.keys(ext[0]!)).toEqual(Object.keys(central('simple/api/submission-extended.json')));
    expect(ext[0]!.submitter).toMatchObject({ id: h.ids.bob, type: 'user' });
    expect(ext[0]!.currentVersion.submitter).toMatchObject({ id: h.ids.bob });
  });

  test('GET S and S.xml; unknown ids 404.1; rights: chelsea 403.1, anonymous 401.2', async () => {
    const h = await harness();
    await setup(h);
    const one = await json<Record<string, any>>(await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions/one`, { as: 'bob' }));
    expect(one).toMatchObject({ instanceId: 'one', currentVersion: { instanceId: 'one', current: true, instanceName: null } });
    const xml = await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions/one.xml`, { as: 'bob' });
    expect(xml.status).toBe(200);
    expect(xml.headers.get('content-type')).toMatch(/^application\/xml/);
    expect(await xml.text()).toBe(fixture('submissions/simple.one.xml'));
    expect((await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions/nope`, { as: 'bob' })).status).toBe(404);
    expect((await h.get(`/v1/projects/${h.projectId}/forms/nope/submissions`, { as: 'bob' })).status).toBe(404);
    expect((await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions`, { as: 'chelsea' })).status).toBe(403);
    expect((await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions/one`)).status).toBe(401);
    // A form without a draft has no draft submission list: 404.1, as Central.
    expect((await h.get(`/v1/projects/${h.projectId}/forms/simple/draft/submissions`, { as: 'bob' })).status).toBe(404);
  });
});

describe('review, trash, versions and attachments', () => {
  test("PATCH reviewState answers Central's short shape and is audited; bad states are 400", async () => {
    const h = await harness();
    await setup(h);
    const res = await h.patch(`/v1/projects/${h.projectId}/forms/simple/submissions/two`, { as: 'bob', body: { reviewState: 'hasIssues' } });
    expect(res.status).toBe(200);
    const body = await json<Record<string, unknown>>(res);
    expect(Object.keys(body)).toEqual(Object.keys(central('simple/api/review-hasIssues-response.json')));
    expect(body.reviewState).toBe('hasIssues');
    expect((await h.audits()).find((a) => a.action === 'submission.update')?.details).toMatchObject({ reviewState: 'hasIssues' });
    expect((await h.patch(`/v1/projects/${h.projectId}/forms/simple/submissions/two`, { as: 'bob', body: { reviewState: 'great' } })).status).toBe(400);
    expect((await h.patch(`/v1/projects/${h.projectId}/forms/simple/submissions/two`, { as: 'chelsea', body: { reviewState: 'approved' } })).status).toBe(403);
  });

  test('DELETE moves to the Trash (gone from lists and reads), restore brings it back, resubmitting a deleted one is 409.18', async () => {
    const h = await harness();
    await setup(h);
    const S = `/v1/projects/${h.projectId}/forms/simple/submissions/one`;
    expect(await json(await h.delete(S, { as: 'bob' }))).toEqual({ success: true });
    expect((await h.get(S, { as: 'bob' })).status).toBe(404);
    const list = await json<Array<{ instanceId: string }>>(await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions`, { as: 'bob' }));
    expect(list.map((s) => s.instanceId)).toEqual(['two']);
    const boundary = 'b0undary';
    const again = await h.post(`/v1/projects/${h.projectId}/submission`, {
      as: 'bob',
      body: `--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="s.xml"\r\n\r\n${fixture('submissions/simple.one.xml')}\r\n--${boundary}--\r\n`,
      headers: { 'X-OpenRosa-Version': '1.0', 'Content-Type': `multipart/form-data; boundary=${boundary}` },
    });
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('This submission has been deleted');
    expect(await json(await h.post(`${S}/restore`, { as: 'bob' }))).toEqual({ success: true });
    expect((await h.get(S, { as: 'bob' })).status).toBe(200);
    expect((await h.post(`${S}/restore`, { as: 'bob' })).status).toBe(404);
    expect(await h.auditActions()).toEqual(expect.arrayContaining(['submission.delete', 'submission.restore']));
  });

  test('versions list newest first; attachments list and download with ETag', async () => {
    const h = await harness();
    const form = await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'bob', body: fixture('forms/binaryType.xml'), headers: { 'Content-Type': 'application/xml' } });
    expect(form.status).toBe(200);
    const xml = fixture('submissions/binaryType.both.xml');
    const instanceId = /<instanceID>([^<]+)</.exec(xml)![1]!;
    const file1 = /<file1>([^<]+)<\/file1>/.exec(xml)![1]!;
    const boundary = 'b0undary';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="s.xml"\r\n\r\n${xml}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="${file1}"; filename="${file1}"\r\nContent-Type: video/mp4\r\n\r\nvideo bytes\r\n--${boundary}--\r\n`;
    expect((await h.post(`/v1/projects/${h.projectId}/submission`, {
      as: 'bob', body, headers: { 'X-OpenRosa-Version': '1.0', 'Content-Type': `multipart/form-data; boundary=${boundary}` },
    })).status).toBe(201);
    const S = `/v1/projects/${h.projectId}/forms/binaryType/submissions/${encodeURIComponent(instanceId)}`;
    const list = await json<Array<{ name: string; exists: boolean }>>(await h.get(`${S}/attachments`, { as: 'bob' }));
    expect(list.find((a) => a.name === file1)?.exists).toBe(true);
    expect(list.filter((a) => !a.exists)).toHaveLength(1);
    const file = await h.get(`${S}/attachments/${encodeURIComponent(file1)}`, { as: 'bob' });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('video/mp4');
    expect(await file.text()).toBe('video bytes');
    const etag = file.headers.get('etag')!;
    expect((await h.get(`${S}/attachments/${encodeURIComponent(file1)}`, { as: 'bob', headers: { 'If-None-Match': etag } })).status).toBe(304);
    const versions = await json<Array<{ instanceId: string; current: boolean }>>(await h.get(`${S}/versions`, { as: 'bob' }));
    expect(versions).toEqual([expect.objectContaining({ instanceId, current: true })]);
  });
});

describe('extended form and project metadata count submissions', () => {
  test('submissions, reviewStates and lastSubmission on GET F and GET P (extended)', async () => {
    const h = await harness();
    await setup(h);
    await h.patch(`/v1/projects/${h.projectId}/forms/simple/submissions/two`, { as: 'bob', body: { reviewState: 'hasIssues' } });
    const form = await json<Record<string, any>>(await h.get(`/v1/projects/${h.projectId}/forms/simple`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(form.submissions).toBe(2);
    expect(form.reviewStates).toEqual({ received: 1, hasIssues: 1, edited: 0 });
    expect(form.lastSubmission).toMatch(/^\d{4}-\d\d-\d\dT/);
    const project = await json<Record<string, any>>(await h.get(`/v1/projects/${h.projectId}`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(project.lastSubmission).toBe(form.lastSubmission);
  });
});
