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
    // Draft submissions are kept apart from the published ones.
    expect(await json(await h.get(`/v1/projects/${h.projectId}/forms/simple/draft/submissions`, { as: 'bob' }))).toEqual([]);
  });
});
