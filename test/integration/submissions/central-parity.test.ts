/**
 * Submission details where Central's own tests (api/submissions.js) pin its behaviour: the
 * X-OpenRosa-Version check before the anonymous 401, multipart errors (400.39, JSON, with busboy's
 * words as details), client metadata (`?deviceID=` empty, the ODK-Client header), media named by
 * their part, attachment events, default attachment types, the list's paging and Trash, S/edit
 * without Enketo.
 */
import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { submissionDefs, submissions } from '../../../drizzle/schema';
import { harness, json, type Harness } from '../../helpers/harness';
import { fixture, multipart } from '../../helpers/submitting';

const OR = { 'X-OpenRosa-Version': '1.0' };
const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const F = (h: Harness, form: string) => `${P(h)}/forms/${form}`;
const enc = new TextEncoder();
const binaryBoth = fixture('submissions/binaryType.both.xml');

async function publish(h: Harness, form: string): Promise<void> {
  const res = await h.post(`${P(h)}/forms?publish=true`, { as: 'bob', body: fixture(`forms/${form}.xml`), headers: { 'Content-Type': 'application/xml' } });
  expect(res.status, await res.clone().text()).toBe(200);
}

const postRaw = (h: Harness, body: string, type: string) =>
  h.post(`${P(h)}/submission`, { as: 'bob', body, headers: { ...OR, 'Content-Type': type } });

describe('OpenRosa submission: header and multipart errors as Central', () => {
  test('no X-OpenRosa-Version is 400 even without credentials; with it, anonymous is 401', async () => {
    const h = await harness();
    expect((await h.request('HEAD', `${P(h)}/submission`, { as: 'anonymous' })).status).toBe(400);
    expect((await h.request('HEAD', `${P(h)}/submission`, { as: 'anonymous', headers: OR })).status).toBe(401);
    expect((await h.request('HEAD', `${P(h)}/submission`, { as: 'bob', headers: OR })).status).toBe(204);
  });

  test('400.39 JSON with the parser\'s words; a body that is not multipart has no xml_submission_file', async () => {
    const h = await harness();
    await publish(h, 'simple');
    const problem = (details: string) => ({ code: 400.39, message: 'Multipart form content failed to parse.', details });
    const noBoundary = await postRaw(h, '', 'multipart/form-data');
    expect(noBoundary.status).toBe(400);
    expect(await noBoundary.json()).toEqual(problem('Multipart: Boundary not found'));
    const empty = await postRaw(h, '', 'multipart/form-data; boundary=----geckoformboundary57597312afb59088b78af2a1fdc6038');
    expect(await empty.json()).toEqual(problem('Unexpected end of form'));
    const malformed = await postRaw(h, '--BOUNDARY\r\n'
      + 'Content-Disposition: form-data; name="xml_submission_file"; filename="xml_submission_file"\r\n'
      + 'Content-Type: text/xml\r\n\r\n'
      + '--BOUNDARY\r\nContent-Disposition: form-data; name="__csrf"\r\n\r\ncontent\r\n'
      + '--BOUNDARY\r\nContent-Disposition: form-data; name="a.jpg"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n'
      + '--BOUNDARY--\r\n\r\n', 'multipart/form-data; boundary=BOUNDARY');
    expect(await malformed.json()).toEqual(problem('Malformed part header'));
    const plain = await postRaw(h, fixture('submissions/simple.one.xml'), 'text/xml');
    expect(plain.status).toBe(400);
    expect(plain.headers.get('content-type')).toMatch(/^text\/xml/);
    expect(await plain.text()).toMatch(/Required multipart POST field xml_submission_file missing\./);
    expect(await h.db.select().from(submissions)).toEqual([]);
  });
});

describe('client metadata, media names, attachment events', () => {
  test('?deviceID= empty is null; ODK-Client goes in front of User-Agent (OpenRosa, REST create and PUT)', async () => {
    const h = await harness();
    await publish(h, 'simple');
    const one = multipart(fixture('submissions/simple.one.xml'));
    const res = await h.post(`${P(h)}/submission?deviceID=`, { as: 'bob', body: one.body, headers: { ...OR, 'Content-Type': one.type, 'User-Agent': 'central/test', 'ODK-Client': 'test-framework' } });
    expect(res.status).toBe(201);
    const [row] = await h.db.select().from(submissions).where(eq(submissions.instanceId, 'one'));
    expect(row).toMatchObject({ deviceId: null, userAgent: 'test-framework central/test' });

    const two = fixture('submissions/simple.one.xml').replace(/<instanceID>one</, '<instanceID>two<');
    const created = await h.post(`${F(h, 'simple')}/submissions`, { as: 'bob', body: two, headers: { 'Content-Type': 'application/xml', 'User-Agent': 'central/test', 'ODK-Client': 'test-framework' } });
    expect((await json(created)).userAgent).toBe('test-framework central/test');
    const edit = two.replace('<instanceID>two</instanceID>', '<instanceID>two2</instanceID><deprecatedID>two</deprecatedID>');
    const put = await h.put(`${F(h, 'simple')}/submissions/two`, { as: 'bob', body: edit, headers: { 'Content-Type': 'application/xml', 'User-Agent': 'node1', 'ODK-Client': 'test-framework' } });
    expect((await json(put)).currentVersion.userAgent).toBe('test-framework node1');
    // ODK-Client alone stands for the agent.
    const three = fixture('submissions/simple.one.xml').replace(/<instanceID>one</, '<instanceID>three<');
    await h.post(`${F(h, 'simple')}/submissions`, { as: 'bob', body: three, headers: { 'Content-Type': 'application/xml', 'User-Agent': '', 'ODK-Client': 'only-client' } });
    const [def] = await h.db.select().from(submissionDefs).where(eq(submissionDefs.instanceId, 'three'));
    expect(def!.userAgent).toBe('only-client');
  });

  test('media are stored under their part name (unicode too); each stored file is an attachment event, a resubmission logs changes only', async () => {
    const h = await harness();
    await publish(h, 'binaryType');
    const xml = binaryBoth.replace('my_file1.mp4', 'fîlé2').replace('here_is_file2.jpg', 'f😂le3صادق');
    // The part's filename differs from its name: the name is what counts (multer's fieldname).
    const boundary = 'xYzBoundary';
    const body = Buffer.concat([
      `--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="data.xml"\r\nContent-Type: text/xml\r\n\r\n${xml}\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="fîlé2"; filename="fîlé2.bin"\r\nContent-Type: application/octet-stream\r\n\r\nthis is test file one\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="f😂le3صادق"; filename="f😂le3صادق"\r\nContent-Type: application/octet-stream\r\n\r\nthis is test file two\r\n`,
      `--${boundary}--\r\n`,
    ].map((s) => Buffer.from(s, 'utf8')));
    const res = await h.post(`${P(h)}/submission`, { as: 'bob', body: new Uint8Array(body), headers: { ...OR, 'Content-Type': `multipart/form-data; boundary=${boundary}` } });
    expect(res.status, await res.clone().text()).toBe(201);
    expect(await json(await h.get(`${F(h, 'binaryType')}/submissions/both/attachments`, { as: 'bob' }))).toEqual([
      { name: 'fîlé2', exists: true }, { name: 'f😂le3صادق', exists: true },
    ]);
    const file = await h.get(`${F(h, 'binaryType')}/submissions/both/attachments/${encodeURIComponent('fîlé2')}`, { as: 'bob' });
    expect(await file.text()).toBe('this is test file one');
    const events = async () => (await h.audits()).filter((a) => a.action === 'submission.attachment.update').map((a) => (a.details as { name: string }).name);
    expect(await events()).toEqual(['fîlé2', 'f😂le3صادق']);

    // The same XML again: the unchanged file logs nothing, the changed one does.
    const again = Buffer.concat([
      `--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="data.xml"\r\nContent-Type: text/xml\r\n\r\n${xml}\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="fîlé2"; filename="fîlé2"\r\nContent-Type: application/octet-stream\r\n\r\nthis is test file one\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="f😂le3صادق"; filename="x"\r\nContent-Type: application/octet-stream\r\n\r\nchanged\r\n`,
      `--${boundary}--\r\n`,
    ].map((s) => Buffer.from(s, 'utf8')));
    expect((await h.post(`${P(h)}/submission`, { as: 'bob', body: new Uint8Array(again), headers: { ...OR, 'Content-Type': `multipart/form-data; boundary=${boundary}` } })).status).toBe(201);
    expect(await events()).toEqual(['fîlé2', 'f😂le3صادق', 'f😂le3صادق']);
  });

  test('an upload without a type is served as application/octet-stream; a .csv one as text/csv; charset=utf-8', async () => {
    const h = await harness();
    await publish(h, 'binaryType');
    const xml = binaryBoth.replace('here_is_file2.jpg', 'log.csv');
    expect((await h.post(`${F(h, 'binaryType')}/submissions`, { as: 'bob', body: xml, headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    const S = `${F(h, 'binaryType')}/submissions/both/attachments`;
    expect((await h.post(`${S}/my_file1.mp4`, { as: 'bob', body: enc.encode('testvideo'), headers: { 'Content-Type': '' } })).status).toBe(200);
    const video = await h.get(`${S}/my_file1.mp4`, { as: 'bob' });
    expect(video.headers.get('content-type')).toBe('application/octet-stream');
    expect(await video.text()).toBe('testvideo');
    expect((await h.post(`${S}/log.csv`, { as: 'bob', body: enc.encode('a,b\n1,2\n') })).status).toBe(200);
    expect((await h.get(`${S}/log.csv`, { as: 'bob' })).headers.get('content-type')).toBe('text/csv; charset=utf-8');
  });
});

describe('the submission list and S/edit', () => {
  test('?deleted=true lists the Trash; limit and offset page the list; a draft list without a draft is 404.1', async () => {
    const h = await harness();
    await publish(h, 'simple');
    const base = fixture('submissions/simple.one.xml');
    for (let i = 0; i < 20; i += 1) {
      const res = await h.post(`${F(h, 'simple')}/submissions`, { as: 'bob', body: base.replace(/<instanceID>one</, `<instanceID>i-${i}<`), headers: { 'Content-Type': 'application/xml' } });
      expect(res.status).toBe(200);
    }
    expect((await h.delete(`${F(h, 'simple')}/submissions/i-3`, { as: 'bob' })).status).toBe(200);
    const ids = async (query: string) => (await json<Array<{ instanceId: string }>>(await h.get(`${F(h, 'simple')}/submissions${query}`, { as: 'bob' }))).map((s) => s.instanceId);
    expect(await ids('?deleted=true')).toEqual(['i-3']);
    expect(await ids('?limit=4&offset=2')).toEqual(['i-17', 'i-16', 'i-15', 'i-14']);
    expect(await ids('?offset=17')).toEqual(['i-1', 'i-0']);
    expect(await ids('?limit=0')).toEqual([]);
    const bad = await h.get(`${F(h, 'simple')}/submissions?limit=many`, { as: 'bob' });
    expect(bad.status).toBe(400);
    expect((await bad.json()).code).toBe(400.11);
    expect((await h.get(`${F(h, 'simple')}/draft/submissions`, { as: 'bob' })).status).toBe(404);
  });

  test('S/edit without an Enketo server: 409.11 after the form and the rights', async () => {
    const h = await harness();
    await publish(h, 'simple');
    await h.post(`${F(h, 'simple')}/submissions`, { as: 'bob', body: fixture('submissions/simple.one.xml'), headers: { 'Content-Type': 'application/xml' } });
    const res = await h.get(`${F(h, 'simple')}/submissions/one/edit`, { as: 'bob' });
    expect(res.status).toBe(409);
    expect((await res.json()).code).toBe(409.11);
    expect((await h.get(`${F(h, 'simple')}/submissions/one/edit`, { as: 'chelsea' })).status).toBe(403);
    expect((await h.get(`${F(h, 'nope')}/submissions/one/edit`, { as: 'bob' })).status).toBe(404);
  });
});

describe('request bodies: Content-Encoding as Central\'s body parser', () => {
  test('an unknown encoding is 400.37; gzip and deflate bodies are inflated', async () => {
    const h = await harness();
    const bad = await h.post('/v1/projects', { as: 'alice', body: '{}', headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'wat' } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ code: 400.37, message: 'Encoding not supported.' });
    const { gzipSync, deflateSync } = await import('node:zlib');
    for (const [encoding, pack] of [['gzip', gzipSync], ['deflate', deflateSync]] as const) {
      const res = await h.post('/v1/projects', { as: 'alice', body: new Uint8Array(pack(JSON.stringify({ name: `Packed ${encoding}` }))), headers: { 'Content-Type': 'application/json', 'Content-Encoding': encoding } });
      expect(res.status, await res.clone().text()).toBe(200);
      expect((await res.json()).name).toBe(`Packed ${encoding}`);
    }
    const broken = await h.post('/v1/projects', { as: 'alice', body: '{not gzip', headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' } });
    expect(broken.status).toBe(400);
  });
});
