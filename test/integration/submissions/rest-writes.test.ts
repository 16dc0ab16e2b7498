/**
 * Submissions (REST) writes and the reads around them, through real HTTP Requests and the route
 * table: create (published, draft, Draft Token), PUT edits, the version redirect, review, trash,
 * audits, keys, submitters, attachments, versions, diffs, comments, draft clean-up and the role
 * matrix. Shapes are compared with what Central answers (shared/fixtures/central-outputs).
 */
import { readFileSync } from 'node:fs';
import { eq, inArray } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { submissionAttachments, submissionDefs, submissions } from '../../../drizzle/schema';
import { harness, json, type As, type Harness } from '../../helpers/harness';
import { multipart } from '../../helpers/submitting';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const central = <T = Record<string, unknown>>(path: string) => JSON.parse(fixture(`central-outputs/${path}`)) as T;
/** Central's exact error body for one `_errors/` capture. */
const centralError = (slug: string) => JSON.parse(central<{ body: string }>(`_errors/${slug}.json`).body) as { message: string; code: number; details?: unknown };

const XML = { 'Content-Type': 'application/xml' };
const EXT = { 'X-Extended-Metadata': 'true' };
const OR = { 'X-OpenRosa-Version': '1.0' };
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const ACTOR_KEYS = ['id', 'type', 'displayName', 'createdAt', 'updatedAt', 'deletedAt'];
const FORBIDDEN = { message: 'The authentication you provided does not have rights to perform that action.', code: 403.1 };
const NOT_FOUND = { message: 'Could not find the resource you were looking for.', code: 404.1 };
const AUTH_FAILED = { message: 'Could not authenticate with the provided credentials.', code: 401.2 };
const SUBMISSION_KEYS = Object.keys(central('simple/api/submission.json'));
const VERSION_KEYS = Object.keys((central('simple/api/submission.json').currentVersion as object));
const enc = new TextEncoder();

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const F = (h: Harness, form: string) => `${P(h)}/forms/${form}`;
const S = (h: Harness, form: string, id: string) => `${F(h, form)}/submissions/${encodeURIComponent(id)}`;

async function expectProblem(res: Response, status: number, body: Record<string, unknown>): Promise<void> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(JSON.parse(text)).toMatchObject(body);
}

async function createForm(h: Harness, form: string, publish = true): Promise<void> {
  const res = await h.post(`${P(h)}/forms${publish ? '?publish=true' : ''}`, { as: 'bob', body: fixture(`forms/${form}.xml`), headers: XML });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** POST F/submissions (or another REST creation path) with an XML body. */
const postXml = (h: Harness, path: string, xml: string, as: As = 'bob', headers: Record<string, string> = XML) =>
  h.post(path, { as, body: xml, headers });

async function create(h: Harness, form: string, xml: string, as: As = 'bob'): Promise<Json> {
  const res = await postXml(h, `${F(h, form)}/submissions`, xml, as);
  expect(res.status, await res.clone().text()).toBe(200);
  return json(res);
}

async function put(h: Harness, form: string, id: string, xml: string, as: As = 'bob'): Promise<Json> {
  const res = await h.put(S(h, form, id), { as, body: xml, headers: XML });
  expect(res.status, await res.clone().text()).toBe(200);
  return json(res);
}

/** An edit of `xml`: deprecatedID = its instanceID, and a new instanceID. */
const edit = (xml: string, oldId: string, newId: string) =>
  xml.replace(`<instanceID>${oldId}</instanceID>`, `<deprecatedID>${oldId}</deprecatedID><instanceID>${newId}</instanceID>`);

/** POST P/submission (OpenRosa). */
async function submitOpenRosa(h: Harness, as: As, xml: string, files: Array<{ name: string; bytes: Uint8Array; type: string }> = []): Promise<void> {
  const { body, type } = multipart(xml, files);
  const res = await h.post(`${P(h)}/submission?deviceID=collect%3Atest`, { as, body, headers: { ...OR, 'Content-Type': type } });
  expect(res.status, await res.clone().text()).toBe(201);
}

/** A new App User of the project, assigned to `xmlFormId` when given. */
async function appUser(h: Harness, xmlFormId?: string): Promise<{ id: number; token: string }> {
  const res = await h.post(`${P(h)}/app-users`, { as: 'bob', body: { displayName: 'Tablet' } });
  expect(res.status).toBe(200);
  const au = await json<{ id: number; token: string }>(res);
  if (xmlFormId) expect((await h.post(`${F(h, xmlFormId)}/assignments/app-user/${au.id}`, { as: 'bob' })).status).toBe(200);
  return au;
}

/** A new web user with the 'viewer' role on the project; its Bearer token. */
async function viewer(h: Harness): Promise<{ id: number; as: As }> {
  const user = await json<{ id: number }>(await h.post('/v1/users', { as: 'alice', body: { email: 'viola@getodk.org', password: 'viola-password-1' } }));
  expect((await h.post(`${P(h)}/assignments/viewer/${user.id}`, { as: 'alice' })).status).toBe(200);
  const session = await json<{ token: string }>(await h.post('/v1/sessions', { body: { email: 'viola@getodk.org', password: 'viola-password-1' } }));
  return { id: user.id, as: { bearer: session.token } };
}

const binaryXml = fixture('submissions/binaryType.both.xml');
const FILE1 = 'my_file1.mp4';
const FILE2 = 'here_is_file2.jpg';

describe('POST F/submissions (REST create)', () => {
  test("200 with Submission JSON in Central's key order; deviceID and User-Agent recorded; XML stored byte for byte; audit submission.create", async () => {
    const h = await harness();
    await createForm(h, 'simple');
    const xml = fixture('submissions/simple.one.xml');
    const res = await h.post(`${F(h, 'simple')}/submissions?deviceID=rest%3Adevice`, { as: 'bob', body: xml, headers: { ...XML, 'User-Agent': 'rest-agent/1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const body = await json(res);
    expect(Object.keys(body)).toEqual(SUBMISSION_KEYS);
    expect(Object.keys(body.currentVersion)).toEqual(VERSION_KEYS);
    expect(body).toMatchObject({
      instanceId: 'one', submitterId: h.ids.bob, deviceId: 'rest:device', updatedAt: null, reviewState: null, userAgent: 'rest-agent/1', deletedAt: null,
      currentVersion: { submitterId: h.ids.bob, instanceName: null, instanceId: 'one', current: true, deviceId: 'rest:device', userAgent: 'rest-agent/1' },
    });
    expect(body.createdAt).toMatch(ISO);
    expect(body.currentVersion.createdAt).toMatch(ISO);
    // Reads agree with what the create answered.
    expect(await json(await h.get(S(h, 'simple', 'one'), { as: 'bob' }))).toEqual(body);
    const stored = await h.get(`${S(h, 'simple', 'one')}.xml`, { as: 'bob' });
    expect(stored.headers.get('content-type')).toBe('application/xml; charset=utf-8');
    expect(await stored.text()).toBe(xml);
    const [row] = await h.db.select().from(submissions).where(eq(submissions.instanceId, 'one'));
    expect(row).toMatchObject({ draft: false, deviceId: 'rest:device', userAgent: 'rest-agent/1', submitterId: h.ids.bob });
    const audits = await h.audits();
    // publish=true logs form.update.publish after form.create, as Central.
    expect(audits.map((a) => a.action)).toEqual(['form.create', 'form.update.publish', 'submission.create']);
    expect(audits[2]).toMatchObject({ actorId: h.ids.bob, details: expect.objectContaining({ instanceId: 'one', submissionId: row!.id }) });
    // text/xml is accepted too; no deviceID leaves it null.
    const two = await json(await postXml(h, `${F(h, 'simple')}/submissions`, fixture('submissions/simple.two.xml'), 'bob', { 'Content-Type': 'text/xml' }));
    expect(two).toMatchObject({ instanceId: 'two', deviceId: null, userAgent: null });
    // No instanceID in the XML: the server makes one up (a v4 UUID, as Central).
    const anon = await create(h, 'simple', '<data id="simple"><name>Nobody</name><age>1</age></data>');
    expect(anon.instanceId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(anon.currentVersion.instanceId).toBe(anon.instanceId);
  });

  test("409.3 on an existing instanceId, with Central's message and details", async () => {
    const h = await harness();
    await createForm(h, 'simple');
    await create(h, 'simple', fixture('submissions/simple.one.xml'));
    const res = await postXml(h, `${F(h, 'simple')}/submissions`, fixture('submissions/simple.one.xml'));
    const [form] = await h.db.select({ formId: submissions.formId }).from(submissions).where(eq(submissions.instanceId, 'one'));
    const expected = centralError('409.3-rest-duplicate-submission');
    const fix = (s: string) => s.replace(/\b13\b/, String(form!.formId));
    expect(await json(res)).toEqual({
      message: fix(expected.message),
      code: 409.3,
      details: { ...(expected.details as object), values: [String(form!.formId), 'one', 'f'] },
    });
    expect(res.status).toBe(409);
    expect(await h.auditActions()).toEqual(['form.create', 'form.update.publish', 'submission.create']);
  });

  test("400.8 form id mismatch and 404.6 unknown version, as Central words them", async () => {
    const h = await harness();
    await createForm(h, 'simple');
    await createForm(h, 'withrepeat');
    const mismatch = await postXml(h, `${F(h, 'withrepeat')}/submissions`, fixture('submissions/simple.one.xml'));
    expect(mismatch.status).toBe(400);
    expect(await json(mismatch)).toEqual(centralError('400.8-rest-submission-form-id-mismatch'));
    // withrepeat has version 1.0; a submission without a version names version ''.
    const noVersion = await postXml(h, `${F(h, 'withrepeat')}/submissions`, fixture('submissions/withrepeat.one.xml').replace(' version="1.0"', ''));
    expect(noVersion.status).toBe(404);
    expect(await json(noVersion)).toEqual(centralError('404.6-rest-submission-version-unknown'));
    const other = await postXml(h, `${F(h, 'withrepeat')}/submissions`, fixture('submissions/withrepeat.one.xml').replace('version="1.0"', 'version="9.9"'));
    await expectProblem(other, 404, { code: 404.6, message: "The form version specified in this submission '9.9' does not exist.", details: { formVersion: '9.9' } });
    await expectProblem(await postXml(h, `${F(h, 'nope')}/submissions`, fixture('submissions/simple.one.xml')), 404, NOT_FOUND);
    expect(await h.db.select().from(submissions)).toEqual([]);
  });

  test('409.2 once the form is closed (closing still accepts)', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    expect((await h.patch(F(h, 'simple'), { as: 'bob', body: { state: 'closed' } })).status).toBe(200);
    const res = await postXml(h, `${F(h, 'simple')}/submissions`, fixture('submissions/simple.one.xml'));
    expect(res.status).toBe(409);
    expect(await json(res)).toEqual(centralError('409.2-form-closed-rest'));
    expect((await h.patch(F(h, 'simple'), { as: 'bob', body: { state: 'closing' } })).status).toBe(200);
    await create(h, 'simple', fixture('submissions/simple.one.xml'));
  });

  test('400.1 malformed XML or a DOCTYPE; 400.2 no form id; nothing stored', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    const path = `${F(h, 'simple')}/submissions`;
    const truncated = await postXml(h, path, '<data id="simple"><meta><instanceID>x</instanceID></meta><name>');
    await expectProblem(truncated, 400, { code: 400.1, details: expect.objectContaining({ format: 'submission xml' }) });
    expect((await json(await postXml(h, path, '<data id="simple"><meta><instanceID>x</instanceID></meta><name>'))).message).toMatch(/^Could not parse the given data \(\d+ chars\) as submission xml/);
    const doctype = '<?xml version="1.0"?><!DOCTYPE data [<!ENTITY lol "lol">]><data id="simple"><meta><instanceID>x</instanceID></meta><name>&lol;</name></data>';
    await expectProblem(await postXml(h, path, doctype), 400, { code: 400.1 });
    const noId = await postXml(h, path, '<data><meta><instanceID>x</instanceID></meta></data>');
    await expectProblem(noId, 400, { code: 400.2, message: 'Required parameter form ID xml attribute missing.', details: { field: 'form ID xml attribute' } });
    await expectProblem(await postXml(h, path, ''), 400, { code: 400.2 });
    await expectProblem(await postXml(h, path, 'not xml at all'), 400, { code: 400.2 });
    expect(await h.db.select().from(submissions)).toEqual([]);
  });

  test('App Users: 403.1 unless assigned to the form; an assigned App User may create', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    const stranger = await appUser(h);
    await expectProblem(await postXml(h, `${F(h, 'simple')}/submissions`, fixture('submissions/simple.one.xml'), { key: stranger.token }), 403, FORBIDDEN);
    const tablet = await appUser(h, 'simple');
    const body = await create(h, 'simple', fixture('submissions/simple.one.xml'), { key: tablet.token });
    expect(body).toMatchObject({ instanceId: 'one', submitterId: tablet.id, currentVersion: { submitterId: tablet.id } });
    // But an App User cannot read it back over REST.
    await expectProblem(await h.get(S(h, 'simple', 'one'), { as: { key: tablet.token } }), 403, FORBIDDEN);
  });

  test('draft variant F/draft/submissions and the Draft Token path; draft and published ids are apart', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    // No draft yet: 404.
    await expectProblem(await postXml(h, `${F(h, 'simple')}/draft/submissions`, fixture('submissions/simple.one.xml')), 404, NOT_FOUND);
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'bob' })).status).toBe(200);
    const one = await json(await postXml(h, `${F(h, 'simple')}/draft/submissions`, fixture('submissions/simple.one.xml')));
    expect(Object.keys(one)).toEqual(SUBMISSION_KEYS);
    expect(one).toMatchObject({ instanceId: 'one', submitterId: h.ids.bob });
    const dup = await postXml(h, `${F(h, 'simple')}/draft/submissions`, fixture('submissions/simple.one.xml'));
    expect(dup.status).toBe(409);
    expect((await json(dup)).details).toMatchObject({ fields: ['formId', 'instanceId', 'draft'], values: [expect.any(String), 'one', 't'] });
    const { draftToken } = await json<{ draftToken: string }>(await h.get(`${F(h, 'simple')}/draft`, { as: 'bob' }));
    expect(typeof draftToken).toBe('string');
    const viaToken = await postXml(h, `/v1/test/${draftToken}/projects/${h.projectId}/forms/simple/draft/submissions`, fixture('submissions/simple.two.xml'), 'anonymous');
    expect(viaToken.status, await viaToken.clone().text()).toBe(200);
    expect(await json(viaToken)).toMatchObject({ instanceId: 'two', submitterId: null, currentVersion: { submitterId: null } });
    const bad = await postXml(h, `/v1/test/${'x'.repeat(64)}/projects/${h.projectId}/forms/simple/draft/submissions`, fixture('submissions/simple.three.xml'), 'anonymous');
    // 404.4. (Central answers this REST path with JSON; Fieldbase renders every /v1/test/ error as
    // OpenRosa XML: see the report. Only the status and the words are checked here.)
    expect(bad.status).toBe(404);
    expect(await bad.text()).toContain('You tried to access a draft testing endpoint');
    const drafts = await json<Json[]>(await h.get(`${F(h, 'simple')}/draft/submissions`, { as: 'bob' }));
    expect(drafts.map((s) => s.instanceId)).toEqual(['two', 'one']);
    expect(await json(await h.get(`${F(h, 'simple')}/submissions`, { as: 'bob' }))).toEqual([]);
    // The published form takes the same instanceID: another space.
    await create(h, 'simple', fixture('submissions/simple.one.xml'));
    expect(await json(await h.get(`${F(h, 'simple')}/draft/submissions/one`, { as: 'bob' }))).toMatchObject({ instanceId: 'one' });
    expect(await (await h.get(`${F(h, 'simple')}/draft/submissions/two.xml`, { as: 'bob' })).text()).toBe(fixture('submissions/simple.two.xml'));
    const rows = await h.db.select().from(submissions).where(eq(submissions.instanceId, 'one'));
    expect(rows.map((r) => r.draft).sort()).toEqual([false, true]);
    expect((await h.auditActions()).filter((a) => a === 'submission.create')).toHaveLength(3);
  });
});

describe('PUT S (REST edit)', () => {
  test("a new current version: Submission JSON with currentVersion the new instanceID, reviewState 'edited'; S.xml is the new XML; audit submission.update.version", async () => {
    const h = await harness();
    await createForm(h, 'simple');
    const created = await h.post(`${F(h, 'simple')}/submissions?deviceID=first-device`, { as: 'bob', body: fixture('submissions/simple.one.xml'), headers: XML });
    expect(created.status).toBe(200);
    const first = await json(created);
    const xml = edit(fixture('submissions/simple.one.xml'), 'one', 'one-edit').replace('<age>30</age>', '<age>31</age>');
    const res = await h.put(`${S(h, 'simple', 'one')}?deviceID=edit-device`, { as: 'alice', body: xml, headers: { ...XML, 'User-Agent': 'editor/2' } });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const body = await json(res);
    expect(Object.keys(body)).toEqual(SUBMISSION_KEYS);
    expect(Object.keys(body.currentVersion)).toEqual(VERSION_KEYS);
    expect(body).toMatchObject({
      // deviceId and userAgent of the Submission stay the initial ones; the version has the edit's.
      instanceId: 'one', submitterId: h.ids.bob, deviceId: 'first-device', userAgent: null, createdAt: first.createdAt, reviewState: 'edited', deletedAt: null,
      currentVersion: { instanceId: 'one-edit', current: true, submitterId: h.ids.alice, userAgent: 'editor/2', deviceId: 'edit-device' },
    });
    expect(body.updatedAt).toMatch(ISO);
    expect(await json(await h.get(S(h, 'simple', 'one'), { as: 'bob' }))).toEqual(body);
    const ext = await json(await h.get(S(h, 'simple', 'one'), { as: 'bob', headers: EXT }));
    expect(Object.keys(ext)).toEqual(Object.keys(central('simple/api/submission-extended.json')));
    expect(ext.submitter).toMatchObject({ id: h.ids.bob });
    expect(ext.currentVersion.submitter).toMatchObject({ id: h.ids.alice });
    const stored = await h.get(`${S(h, 'simple', 'one')}.xml`, { as: 'bob' });
    expect(stored.headers.get('content-type')).toBe('application/xml; charset=utf-8');
    expect(await stored.text()).toBe(xml);
    const [sub] = await h.db.select().from(submissions).where(eq(submissions.instanceId, 'one'));
    const defs = await h.db.select().from(submissionDefs).where(eq(submissionDefs.submissionId, sub!.id));
    expect(defs.map((d) => [d.instanceId, d.current]).sort()).toEqual([['one', false], ['one-edit', true]]);
    expect(defs.find((d) => d.current)!.values.find((v) => v.path === '/age')?.value).toBe('31');
    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['form.create', 'form.update.publish', 'submission.create', 'submission.update.version']);
    expect(audits[3]).toMatchObject({ actorId: h.ids.alice, details: expect.objectContaining({ instanceId: 'one', submissionId: sub!.id }) });
    // A second edit, of the new current version, works too.
    const again = await put(h, 'simple', 'one', edit(xml.replace('<deprecatedID>one</deprecatedID>', ''), 'one-edit', 'one-edit2'));
    expect(again.currentVersion.instanceId).toBe('one-edit2');
  });

  test("400.19 without deprecatedID (Central's message); 409.9 with a stale one; 409.3 when the new instanceID is another submission's", async () => {
    const h = await harness();
    await createForm(h, 'simple');
    await create(h, 'simple', fixture('submissions/simple.one.xml'));
    await create(h, 'simple', fixture('submissions/simple.two.xml'));
    const none = await h.put(S(h, 'simple', 'one'), { as: 'bob', body: fixture('submissions/simple.one.xml').replace('<instanceID>one', '<instanceID>one2'), headers: XML });
    expect(none.status).toBe(400);
    expect(await json(none)).toEqual(centralError('400.19-put-without-deprecatedID'));

    const taken = await h.put(S(h, 'simple', 'one'), { as: 'bob', body: edit(fixture('submissions/simple.one.xml'), 'one', 'two'), headers: XML });
    expect(taken.status).toBe(409);
    expect(await json(taken)).toEqual(centralError('409.3-put-edit-instanceID-taken'));

    await put(h, 'simple', 'one', edit(fixture('submissions/simple.one.xml'), 'one', 'one-edit'));
    const stale = await h.put(S(h, 'simple', 'one'), { as: 'bob', body: edit(fixture('submissions/simple.one.xml'), 'one', 'one-edit-b'), headers: XML });
    expect(stale.status).toBe(409);
    const expected = centralError('409.9-put-edit-of-old-version');
    expect(await json(stale)).toEqual({
      message: expected.message.replace('(rtwo)', '(one)'), code: 409.9, details: { deprecatedId: 'one' },
    });
    // A deprecatedID that never existed is not current either.
    await expectProblem(
      await h.put(S(h, 'simple', 'one'), { as: 'bob', body: edit(fixture('submissions/simple.one.xml'), 'one', 'x1').replace('<deprecatedID>one<', '<deprecatedID>ghost<'), headers: XML }),
      409, { code: 409.9, details: { deprecatedId: 'ghost' } },
    );
    // Other input problems: unknown submission, form id of another form, bad XML, version.
    await expectProblem(await h.put(S(h, 'simple', 'nope'), { as: 'bob', body: edit(fixture('submissions/simple.one.xml'), 'one', 'z'), headers: XML }), 404, NOT_FOUND);
    await expectProblem(await h.put(S(h, 'simple', 'two'), { as: 'bob', body: '<data id="simple"><meta>', headers: XML }), 400, { code: 400.1 });
    await expectProblem(await h.put(S(h, 'simple', 'two'), { as: 'bob', body: edit(fixture('submissions/simple.two.xml'), 'two', 'two2').replace('id="simple"', 'id="other"'), headers: XML }), 400, { code: 400.8 });
    await expectProblem(await h.put(S(h, 'simple', 'two'), { as: 'bob', body: edit(fixture('submissions/simple.two.xml'), 'two', 'two2').replace('id="simple"', 'id="simple" version="7"'), headers: XML }), 404, { code: 404.6 });
    // None of the failures left a version behind.
    const [two] = await h.db.select().from(submissions).where(eq(submissions.instanceId, 'two'));
    expect(await h.db.select().from(submissionDefs).where(eq(submissionDefs.submissionId, two!.id))).toHaveLength(1);
    expect((await h.auditActions()).filter((a) => a === 'submission.update.version')).toHaveLength(1);
  });

  test('media carry over: files whose names remain in the new XML stay attached to the new version', async () => {
    const h = await harness();
    await createForm(h, 'binaryType');
    await submitOpenRosa(h, 'bob', binaryXml, [
      { name: FILE1, bytes: enc.encode('video bytes'), type: 'video/mp4' },
      { name: FILE2, bytes: enc.encode('image bytes'), type: 'image/jpeg' },
    ]);
    // The edit keeps file1 and names a new file2.
    const newXml = edit(binaryXml, 'both', 'both-edit').replace(FILE2, 'replaced.jpg');
    const body = await put(h, 'binaryType', 'both', newXml);
    expect(body.currentVersion.instanceId).toBe('both-edit');
    const base = S(h, 'binaryType', 'both');
    expect(await json(await h.get(`${base}/attachments`, { as: 'bob' }))).toEqual([
      { name: FILE1, exists: true }, { name: 'replaced.jpg', exists: false },
    ]);
    const file = await h.get(`${base}/attachments/${FILE1}`, { as: 'bob' });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('video/mp4');
    expect(await file.text()).toBe('video bytes');
    // The old version keeps both.
    // By name, as Central lists them (central-outputs/binaryType/api/submission-attachments.json).
    expect(await json(await h.get(`${base}/versions/both/attachments`, { as: 'bob' }))).toEqual(central('binaryType/api/submission-attachments.json'));
    expect(await (await h.get(`${base}/versions/both/attachments/${FILE2}`, { as: 'bob' })).text()).toBe('image bytes');
    await expectProblem(await h.get(`${base}/attachments/${FILE2}`, { as: 'bob' }), 404, NOT_FOUND);
    // The current version no longer expects FILE2: it cannot be uploaded against it.
    await expectProblem(await h.post(`${base}/attachments/${FILE2}`, { as: 'bob', body: enc.encode('x') }), 404, NOT_FOUND);
  });
});

describe('GET S for a later version; S/edit', () => {
  test("an edit's instanceID answers Central's 301 to S/versions/{id} (S, .xml, attachments, query kept); unknown 404.1; S/edit 409.11 without Enketo", async () => {
    const h = await harness();
    await createForm(h, 'simple');
    await create(h, 'simple', fixture('submissions/simple.one.xml'));
    await put(h, 'simple', 'one', edit(fixture('submissions/simple.one.xml'), 'one', 'uuid:one-edit'));
    const base = `/v1/projects/${h.projectId}/forms/simple/submissions`;
    for (const [sent, suffix] of [['uuid%3Aone-edit', ''], ['uuid%3Aone-edit', '.xml'], ['uuid%3Aone-edit', '/attachments'], ['uuid:one-edit', '/attachments/x.jpg'], ['uuid%3Aone-edit', '?foo=bar']] as const) {
      const res = await h.get(`${base}/${sent}${suffix}`, { as: 'bob' });
      expect(res.status, suffix).toBe(301);
      const to = `${base}/one/versions/${sent}${suffix}`;
      expect(res.headers.get('location'), suffix).toBe(to);
      expect(await res.text()).toBe(`Moved Permanently. Redirecting to ${to}`);
    }
    const html = await h.get(S(h, 'simple', 'uuid:one-edit'), { as: 'bob', headers: { Accept: 'text/html' } });
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await html.text()).toContain('<p>Moved Permanently. Redirecting to <a href=');
    // Extended and draft: the same redirect; the draft has no such version.
    expect((await h.get(S(h, 'simple', 'uuid:one-edit'), { as: 'bob', headers: EXT })).status).toBe(301);
    await expectProblem(await h.get(`${F(h, 'simple')}/draft/submissions/uuid%3Aone-edit`, { as: 'bob' }), 404, NOT_FOUND);
    await expectProblem(await h.get(S(h, 'simple', 'nope'), { as: 'bob' }), 404, NOT_FOUND);
    // Rights come first: chelsea cannot learn the version exists.
    await expectProblem(await h.get(S(h, 'simple', 'uuid:one-edit'), { as: 'chelsea' }), 403, FORBIDDEN);
    // No Enketo server configured: Central's answer for a form Enketo never gave an id (409.11),
    // after the form and the rights, before the submission is looked up (Central's order).
    const ed = await h.get(`${S(h, 'simple', 'one')}/edit`, { as: 'bob' });
    await expectProblem(ed, 409, { code: 409.11 });
    await expectProblem(await h.get(`${S(h, 'simple', 'nope')}/edit`, { as: 'bob' }), 409, { code: 409.11 });
    await expectProblem(await h.get(`${F(h, 'nope')}/submissions/one/edit`, { as: 'bob' }), 404, NOT_FOUND);
    await expectProblem(await h.get(`${S(h, 'simple', 'one')}/edit`, { as: 'chelsea' }), 403, FORBIDDEN);
    await expectProblem(await h.get(`${S(h, 'simple', 'one')}/edit`), 401, AUTH_FAILED);
  });
});

describe('PATCH S (review), DELETE S, POST S/restore', () => {
  test('every review state is accepted, answered in Central\'s shape and audited; bad values 400', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    await create(h, 'simple', fixture('submissions/simple.one.xml'));
    const shape = Object.keys(central('simple/api/review-hasIssues-response.json'));
    for (const state of ['received', 'hasIssues', 'edited', 'approved', 'rejected']) {
      const res = await h.patch(S(h, 'simple', 'one'), { as: 'bob', body: { reviewState: state } });
      expect(res.status, await res.clone().text()).toBe(200);
      const body = await json(res);
      expect(Object.keys(body)).toEqual(shape);
      expect(body).toMatchObject({ instanceId: 'one', submitterId: h.ids.bob, reviewState: state, deletedAt: null });
      expect(body.updatedAt).toMatch(ISO);
      expect((await json(await h.get(S(h, 'simple', 'one'), { as: 'bob' }))).reviewState).toBe(state);
    }
    const audits = (await h.audits()).filter((a) => a.action === 'submission.update');
    expect(audits.map((a) => (a.details as { reviewState: string }).reviewState)).toEqual(['received', 'hasIssues', 'edited', 'approved', 'rejected']);
    // As Central: a body without reviewState, or an XML one (an edit sent to PATCH, not PUT), changes
    // only updatedAt, audited without a reviewState.
    for (const [body, headers] of [[{}, {}], ['<data id="simple"/>', { 'Content-Type': 'application/xml' }]] as const) {
      const res = await h.patch(S(h, 'simple', 'one'), { as: 'bob', body, headers });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(await json(res)).toMatchObject({ instanceId: 'one', reviewState: 'rejected' });
    }
    const unchanged = (await h.audits()).filter((a) => a.action === 'submission.update').slice(5);
    expect(unchanged.map((a) => a.details)).toEqual([1, 2].map(() => ({ submissionId: expect.any(Number), instanceId: 'one' })));
    for (const bad of [{ reviewState: 'great' }, { reviewState: null }, { reviewState: 3 }]) {
      const res = await h.patch(S(h, 'simple', 'one'), { as: 'bob', body: bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(String((await json(res)).code)).toMatch(/^400\./);
    }
    await expectProblem(await h.patch(S(h, 'simple', 'one'), { as: 'bob', body: '{not json', headers: { 'Content-Type': 'application/json' } }), 400, { code: 400.1 });
    await expectProblem(await h.patch(S(h, 'simple', 'nope'), { as: 'bob', body: { reviewState: 'approved' } }), 404, NOT_FOUND);
    expect((await json(await h.get(S(h, 'simple', 'one'), { as: 'bob' }))).reviewState).toBe('rejected');
  });

  test('DELETE then GET 404; restore brings it back; restoring a live one or an unknown one 404.1', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    await create(h, 'simple', fixture('submissions/simple.one.xml'));
    const res = await h.delete(S(h, 'simple', 'one'), { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    await expectProblem(await h.get(S(h, 'simple', 'one'), { as: 'bob' }), 404, NOT_FOUND);
    await expectProblem(await h.get(`${S(h, 'simple', 'one')}.xml`, { as: 'bob' }), 404, NOT_FOUND);
    await expectProblem(await h.delete(S(h, 'simple', 'one'), { as: 'bob' }), 404, NOT_FOUND);
    await expectProblem(await h.patch(S(h, 'simple', 'one'), { as: 'bob', body: { reviewState: 'approved' } }), 404, NOT_FOUND);
    expect(await json(await h.get(`${F(h, 'simple')}/submissions`, { as: 'bob' }))).toEqual([]);
    const [row] = await h.db.select().from(submissions).where(eq(submissions.instanceId, 'one'));
    expect(row!.deletedAt).toBeInstanceOf(Date);
    // A REST create of the same id is still a duplicate while it is in the Trash.
    expect((await postXml(h, `${F(h, 'simple')}/submissions`, fixture('submissions/simple.one.xml'))).status).toBe(409);
    expect(await json(await h.post(`${S(h, 'simple', 'one')}/restore`, { as: 'bob' }))).toEqual({ success: true });
    expect(await json(await h.get(S(h, 'simple', 'one'), { as: 'bob' }))).toMatchObject({ instanceId: 'one', deletedAt: null });
    await expectProblem(await h.post(`${S(h, 'simple', 'one')}/restore`, { as: 'bob' }), 404, NOT_FOUND);
    await expectProblem(await h.post(`${S(h, 'simple', 'nope')}/restore`, { as: 'bob' }), 404, NOT_FOUND);
    expect((await h.auditActions()).slice(-2)).toEqual(['submission.delete', 'submission.restore']);
  });
});

describe('S/audits', () => {
  test('newest first, with create, review, version, attachment and comment entries; extended adds actor and actee (the Form)', async () => {
    const h = await harness();
    await createForm(h, 'binaryType');
    await create(h, 'binaryType', binaryXml);
    await createForm(h, 'simple');
    await create(h, 'simple', fixture('submissions/simple.one.xml')); // another submission: not in the list
    const base = S(h, 'binaryType', 'both');
    expect((await h.patch(base, { as: 'bob', body: { reviewState: 'hasIssues' } })).status).toBe(200);
    await put(h, 'binaryType', 'both', edit(binaryXml, 'both', 'both-edit'), 'alice');
    expect((await h.post(`${base}/attachments/${FILE1}`, { as: 'bob', body: enc.encode('x'), headers: { 'Content-Type': 'video/mp4' } })).status).toBe(200);
    expect((await h.post(`${base}/comments`, { as: 'alice', body: { body: 'looks odd' } })).status).toBe(200);

    const res = await h.get(`${base}/audits`, { as: 'bob' });
    expect(res.status).toBe(200);
    const list = await json<Json[]>(res);
    expect(list.map((a) => a.action)).toEqual([
      'comment.create', 'submission.attachment.update', 'submission.update.version', 'submission.update', 'submission.create',
    ]);
    expect(list.map((a) => a.actorId)).toEqual([h.ids.alice, h.ids.bob, h.ids.alice, h.ids.bob, h.ids.bob]);
    for (const a of list) {
      expect(Object.keys(a)).toEqual(expect.arrayContaining(['actorId', 'action', 'acteeId', 'details', 'loggedAt']));
      expect(a.loggedAt).toMatch(ISO);
      expect(a.details).toMatchObject({ instanceId: 'both' });
    }
    expect(new Set(list.map((a) => a.acteeId)).size).toBe(1);
    const ext = await json<Json[]>(await h.get(`${base}/audits`, { as: 'bob', headers: EXT }));
    expect(ext.map((a) => a.action)).toEqual(list.map((a) => a.action));
    for (const a of ext) {
      expect(Object.keys(a.actor)).toEqual(ACTOR_KEYS);
      expect(a.actor.id).toBe(a.actorId);
      expect(a.actee).toMatchObject({ xmlFormId: 'binaryType', projectId: h.projectId });
    }
    expect(Object.keys(ext[0].actee)).toEqual(Object.keys(central('binaryType/api/form.json')));
    await expectProblem(await h.get(`${S(h, 'binaryType', 'nope')}/audits`, { as: 'bob' }), 404, NOT_FOUND);
  });
});

describe('F/submissions/keys and F/submissions/submitters', () => {
  test('keys: [] for a plain form; one key in Central\'s shape for an encrypted submission; draft variant', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    await create(h, 'simple', fixture('submissions/simple.one.xml'));
    const plain = await h.get(`${F(h, 'simple')}/submissions/keys`, { as: 'bob' });
    expect(plain.status).toBe(200);
    expect(await json(plain)).toEqual([]);

    await createForm(h, 'encrypted');
    expect(await json(await h.get(`${F(h, 'encrypted')}/submissions/keys`, { as: 'bob' }))).toEqual([]);
    const tablet = await appUser(h, 'encrypted');
    await submitOpenRosa(h, { key: tablet.token }, fixture('submissions/encrypted.one.xml'));
    const keys = await json<Json[]>(await h.get(`${F(h, 'encrypted')}/submissions/keys`, { as: 'bob' }));
    const expected = central<Json[]>('encrypted/api/submission-keys.json');
    expect(keys).toHaveLength(1);
    expect(Object.keys(keys[0])).toEqual(Object.keys(expected[0]));
    expect(keys[0]).toMatchObject({ public: expected[0].public, managed: null, hint: null });
    expect(typeof keys[0].id).toBe('number');
    expect(keys[0].createdAt).toMatch(ISO);
    // The expected files of an encrypted submission: its media and the encrypted XML, by name.
    const encrypted = await json<Json[]>(await h.get(`${S(h, 'encrypted', 'uuid:dcf4a151-5088-453f-99e6-369d67828f7a')}/attachments`, { as: 'bob' }));
    expect(encrypted).toEqual([{ name: '1561432508817.jpg.enc', exists: false }, { name: 'submission.xml.enc', exists: false }]);
    // A second submission under the same key: still one key.
    await create(h, 'encrypted', fixture('submissions/encrypted.two.xml'));
    expect(await json(await h.get(`${F(h, 'encrypted')}/submissions/keys`, { as: 'bob' }))).toEqual(keys);

    // Draft: none until a draft submission exists.
    expect((await h.post(`${F(h, 'encrypted')}/draft`, { as: 'bob' })).status).toBe(200);
    expect(await json(await h.get(`${F(h, 'encrypted')}/draft/submissions/keys`, { as: 'bob' }))).toEqual([]);
    await json(await postXml(h, `${F(h, 'encrypted')}/draft/submissions`, fixture('submissions/encrypted.one.xml')));
    expect(await json(await h.get(`${F(h, 'encrypted')}/draft/submissions/keys`, { as: 'bob' }))).toEqual(keys);
    await expectProblem(await h.get(`${F(h, 'nope')}/submissions/keys`, { as: 'bob' }), 404, NOT_FOUND);
  });

  test('submitters: each submitter once, as an Actor', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    const tablet = await appUser(h, 'simple');
    await create(h, 'simple', fixture('submissions/simple.one.xml'));
    await create(h, 'simple', fixture('submissions/simple.two.xml'));
    await create(h, 'simple', fixture('submissions/simple.three.xml'), { key: tablet.token });
    // An edit by alice does not make her a submitter (the submission's submitter stays bob).
    await put(h, 'simple', 'one', edit(fixture('submissions/simple.one.xml'), 'one', 'one-edit'), 'alice');
    // Nor does a draft submission.
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'bob' })).status).toBe(200);
    await json(await postXml(h, `${F(h, 'simple')}/draft/submissions`, fixture('submissions/simple.one.xml'), 'alice'));
    const res = await h.get(`${F(h, 'simple')}/submissions/submitters`, { as: 'bob' });
    expect(res.status, await res.clone().text()).toBe(200);
    const list = await json<Json[]>(res);
    expect(list).toHaveLength(2);
    for (const a of list) expect(Object.keys(a)).toEqual(ACTOR_KEYS);
    expect(list.map((a) => a.id).sort()).toEqual([h.ids.bob, tablet.id].sort());
    expect(list.find((a) => a.id === tablet.id)).toMatchObject({ type: 'field_key', displayName: 'Tablet', deletedAt: null });
    expect(list.find((a) => a.id === h.ids.bob)).toMatchObject({ type: 'user', displayName: 'bob' });
    await expectProblem(await h.get(`${F(h, 'nope')}/submissions/submitters`, { as: 'bob' }), 404, NOT_FOUND);
  });
});

describe('S/attachments (REST upload, download, clear)', () => {
  test('POST stores the bytes (GET returns them with Content-Type, Content-Disposition and ETag; If-None-Match 304); re-upload replaces; DELETE clears; audited', async () => {
    const h = await harness();
    await createForm(h, 'binaryType');
    await create(h, 'binaryType', binaryXml);
    const base = S(h, 'binaryType', 'both');
    expect(await json(await h.get(`${base}/attachments`, { as: 'bob' }))).toEqual([
      { name: FILE2, exists: false }, { name: FILE1, exists: false },
    ]);
    await expectProblem(await h.get(`${base}/attachments/${FILE1}`, { as: 'bob' }), 404, NOT_FOUND);

    const bytes = new Uint8Array([0, 1, 2, 250, 251, 252, 13, 10]);
    const up = await h.post(`${base}/attachments/${FILE1}`, { as: 'bob', body: bytes, headers: { 'Content-Type': 'video/mp4' } });
    expect(up.status).toBe(200);
    expect(await json(up)).toEqual({ success: true });
    expect(await json(await h.get(`${base}/attachments`, { as: 'bob' }))).toEqual([
      { name: FILE2, exists: false }, { name: FILE1, exists: true },
    ]);
    const got = await h.get(`${base}/attachments/${FILE1}`, { as: 'bob' });
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('video/mp4');
    expect(got.headers.get('content-disposition')).toBe(`attachment; filename="${FILE1}"; filename*=UTF-8''${FILE1}`);
    const etag = got.headers.get('etag');
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(bytes);
    const cached = await h.get(`${base}/attachments/${FILE1}`, { as: 'bob', headers: { 'If-None-Match': etag! } });
    expect(cached.status).toBe(304);
    expect(await cached.text()).toBe('');
    expect((await h.get(`${base}/attachments/${FILE1}`, { as: 'bob', headers: { 'If-None-Match': '"other"' } })).status).toBe(200);

    // No Content-Type (none, or empty): application/octet-stream, as Central stores and serves it.
    expect((await h.post(`${base}/attachments/${FILE2}`, { as: 'bob', body: enc.encode('jpeg bytes') })).status).toBe(200);
    expect((await h.get(`${base}/attachments/${FILE2}`, { as: 'bob' })).headers.get('content-type')).toBe('application/octet-stream');
    expect((await h.post(`${base}/attachments/${FILE2}`, { as: 'bob', body: enc.encode('jpeg bytes'), headers: { 'Content-Type': '' } })).status).toBe(200);
    expect((await h.get(`${base}/attachments/${FILE2}`, { as: 'bob' })).headers.get('content-type')).toBe('application/octet-stream');

    // Re-upload replaces: new bytes, new ETag; the old ETag no longer matches.
    expect((await h.post(`${base}/attachments/${FILE1}`, { as: 'bob', body: enc.encode('second take'), headers: { 'Content-Type': 'video/mp4' } })).status).toBe(200);
    const again = await h.get(`${base}/attachments/${FILE1}`, { as: 'bob', headers: { 'If-None-Match': etag! } });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe('second take');
    expect(again.headers.get('etag')).not.toBe(etag);

    // Unknown names: 404.1 for upload, download and clear.
    await expectProblem(await h.post(`${base}/attachments/other.jpg`, { as: 'bob', body: enc.encode('x') }), 404, NOT_FOUND);
    await expectProblem(await h.get(`${base}/attachments/other.jpg`, { as: 'bob' }), 404, NOT_FOUND);
    await expectProblem(await h.delete(`${base}/attachments/other.jpg`, { as: 'bob' }), 404, NOT_FOUND);
    await expectProblem(await h.post(`${S(h, 'binaryType', 'nope')}/attachments/${FILE1}`, { as: 'bob', body: enc.encode('x') }), 404, NOT_FOUND);

    const cleared = await h.delete(`${base}/attachments/${FILE1}`, { as: 'bob' });
    expect(cleared.status).toBe(200);
    expect(await json(cleared)).toEqual({ success: true });
    expect(await json(await h.get(`${base}/attachments`, { as: 'bob' }))).toEqual([
      { name: FILE2, exists: true }, { name: FILE1, exists: false },
    ]);
    await expectProblem(await h.get(`${base}/attachments/${FILE1}`, { as: 'bob' }), 404, NOT_FOUND);

    const audits = (await h.audits()).filter((a) => a.action === 'submission.attachment.update');
    // Every upload is logged, the second one of the same FILE2 bytes too (as Central's REST upload).
    expect(audits.map((a) => (a.details as { name: string }).name)).toEqual([FILE1, FILE2, FILE2, FILE1, FILE1]);
    const [first, , , replace, clear] = audits.map((a) => a.details as { oldBlobId: number | null; newBlobId: number | null });
    expect(first!.oldBlobId).toBeNull();
    expect(replace!.oldBlobId).toBe(first!.newBlobId);
    expect(clear).toMatchObject({ oldBlobId: replace!.newBlobId, newBlobId: null });
    const rows = await h.db.select().from(submissionAttachments).where(eq(submissionAttachments.name, FILE1));
    expect(rows).toHaveLength(1);
    expect(rows[0]!.blobId).toBeNull();
  });

  test('names outside ASCII round-trip through the URL', async () => {
    const h = await harness();
    await createForm(h, 'binaryType');
    const xml = fixture('submissions/binaryType.unicode.xml');
    await create(h, 'binaryType', xml);
    const base = S(h, 'binaryType', 'both');
    // Taken from the XML as written (its accents are decomposed: no Unicode normalisation happens).
    const names = [...xml.matchAll(/<file[12]>([^<]+)</g)].map((m) => m[1]!);
    expect(names).toHaveLength(2);
    expect((await json<Json[]>(await h.get(`${base}/attachments`, { as: 'bob' }))).map((a) => a.name).sort()).toEqual([...names].sort());
    for (const name of names) {
      const up = await h.post(`${base}/attachments/${encodeURIComponent(name)}`, { as: 'bob', body: enc.encode(`bytes of ${name}`), headers: { 'Content-Type': 'application/octet-stream' } });
      expect(up.status, await up.clone().text()).toBe(200);
      const got = await h.get(`${base}/attachments/${encodeURIComponent(name)}`, { as: 'bob' });
      expect(got.status).toBe(200);
      expect(await got.text()).toBe(`bytes of ${name}`);
      expect(got.headers.get('content-disposition')).toContain(`filename*=UTF-8''${encodeURIComponent(name)}`);
    }
    expect((await json<Json[]>(await h.get(`${base}/attachments`, { as: 'bob' }))).every((a) => a.exists)).toBe(true);
  });

  test('draft variants: F/draft/submissions/S/attachments list, upload, download, clear', async () => {
    const h = await harness();
    await createForm(h, 'binaryType', false);
    await json(await postXml(h, `${F(h, 'binaryType')}/draft/submissions`, binaryXml));
    const base = `${F(h, 'binaryType')}/draft/submissions/both`;
    expect(await json(await h.get(`${base}/attachments`, { as: 'bob' }))).toEqual([
      { name: FILE2, exists: false }, { name: FILE1, exists: false },
    ]);
    expect((await h.post(`${base}/attachments/${FILE2}`, { as: 'bob', body: enc.encode('draft image'), headers: { 'Content-Type': 'image/png' } })).status).toBe(200);
    const got = await h.get(`${base}/attachments/${FILE2}`, { as: 'bob' });
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(await got.text()).toBe('draft image');
    expect((await h.get(`${base}/attachments/${FILE2}`, { as: 'bob', headers: { 'If-None-Match': got.headers.get('etag')! } })).status).toBe(304);
    expect(await json(await h.delete(`${base}/attachments/${FILE2}`, { as: 'bob' }))).toEqual({ success: true });
    expect(await json(await h.get(`${base}/attachments`, { as: 'bob' }))).toEqual([
      { name: FILE2, exists: false }, { name: FILE1, exists: false },
    ]);
    // The published side has no such submission.
    await expectProblem(await h.get(`${S(h, 'binaryType', 'both')}/attachments`, { as: 'bob' }), 404, NOT_FOUND);
    expect((await h.auditActions()).filter((a) => a === 'submission.attachment.update')).toHaveLength(2);
  });
});

describe('S/versions', () => {
  test("list (newest first, Central's keys; extended adds submitter and formVersion), one version, its XML and its attachments; DELETE of an old version's file", async () => {
    const h = await harness();
    await createForm(h, 'binaryType');
    const tablet = await appUser(h, 'binaryType');
    await submitOpenRosa(h, { key: tablet.token }, binaryXml, [{ name: FILE1, bytes: enc.encode('v1 video'), type: 'video/mp4' }]);
    const editXml = edit(binaryXml, 'both', 'both-edit');
    await put(h, 'binaryType', 'both', editXml, 'alice');
    const base = S(h, 'binaryType', 'both');

    const list = await json<Json[]>(await h.get(`${base}/versions`, { as: 'bob' }));
    expect(list.map((v) => [v.instanceId, v.current])).toEqual([['both-edit', true], ['both', false]]);
    const plainKeys = Object.keys(central<Json[]>('withrepeat/api/submission-versions.json')[0]);
    for (const v of list) expect(Object.keys(v)).toEqual(plainKeys);
    expect(list[0]).toMatchObject({ submitterId: h.ids.alice, deviceId: null, instanceName: null });
    expect(list[1]).toMatchObject({ submitterId: tablet.id, deviceId: 'collect:test' });

    const ext = await json<Json[]>(await h.get(`${base}/versions`, { as: 'bob', headers: EXT }));
    const extKeys = Object.keys(central<Json[]>('withrepeat/api/submission-versions-extended.json')[0]);
    for (const v of ext) expect(Object.keys(v)).toEqual(extKeys);
    expect(ext[0].submitter).toMatchObject({ id: h.ids.alice, type: 'user' });
    expect(ext[1].submitter).toMatchObject({ id: tablet.id, type: 'field_key', displayName: 'Tablet' });
    expect(Object.keys(ext[0].submitter)).toEqual(ACTOR_KEYS);
    expect(ext.map((v) => v.formVersion)).toEqual(['', '']);

    const one = await h.get(`${base}/versions/both`, { as: 'bob' });
    expect(one.status).toBe(200);
    expect(await json(one)).toEqual(list[1]);
    expect(await json(await h.get(`${base}/versions/both-edit`, { as: 'bob', headers: EXT }))).toEqual(ext[0]);
    await expectProblem(await h.get(`${base}/versions/nope`, { as: 'bob' }), 404, NOT_FOUND);
    // A version of another submission is not one of this one's.
    await submitOpenRosa(h, { key: tablet.token }, fixture('submissions/binaryType.one.xml'));
    await expectProblem(await h.get(`${S(h, 'binaryType', 'bone')}/versions/both`, { as: 'bob' }), 404, NOT_FOUND);
    await expectProblem(await h.get(`${S(h, 'binaryType', 'bone')}/versions/both/attachments/${FILE1}`, { as: 'bob' }), 404, NOT_FOUND);

    const oldXml = await h.get(`${base}/versions/both.xml`, { as: 'bob' });
    expect(oldXml.status).toBe(200);
    expect(oldXml.headers.get('content-type')).toBe('application/xml; charset=utf-8');
    expect(await oldXml.text()).toBe(binaryXml);
    expect(await (await h.get(`${base}/versions/both-edit.xml`, { as: 'bob' })).text()).toBe(editXml);
    await expectProblem(await h.get(`${base}/versions/nope.xml`, { as: 'bob' }), 404, NOT_FOUND);

    // The file carried over to the edit; both versions list it.
    const expected = [{ name: FILE2, exists: false }, { name: FILE1, exists: true }];
    expect(await json(await h.get(`${base}/versions/both/attachments`, { as: 'bob' }))).toEqual(expected);
    expect(await json(await h.get(`${base}/versions/both-edit/attachments`, { as: 'bob' }))).toEqual(expected);
    const file = await h.get(`${base}/versions/both/attachments/${FILE1}`, { as: 'bob' });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('video/mp4');
    expect(await file.text()).toBe('v1 video');
    expect((await h.get(`${base}/versions/both/attachments/${FILE1}`, { as: 'bob', headers: { 'If-None-Match': file.headers.get('etag')! } })).status).toBe(304);
    await expectProblem(await h.get(`${base}/versions/both/attachments/${FILE2}`, { as: 'bob' }), 404, NOT_FOUND);
    await expectProblem(await h.get(`${base}/versions/nope/attachments`, { as: 'bob' }), 404, NOT_FOUND);

    // Clearing the old version's copy leaves the current version's.
    const del = await h.delete(`${base}/versions/both/attachments/${FILE1}`, { as: 'bob' });
    expect(del.status).toBe(200);
    expect(await json(del)).toEqual({ success: true });
    expect(await json(await h.get(`${base}/versions/both/attachments`, { as: 'bob' }))).toEqual([{ name: FILE2, exists: false }, { name: FILE1, exists: false }]);
    expect(await json(await h.get(`${base}/versions/both-edit/attachments`, { as: 'bob' }))).toEqual(expected);
    expect(await (await h.get(`${base}/attachments/${FILE1}`, { as: 'bob' })).text()).toBe('v1 video');
    await expectProblem(await h.delete(`${base}/versions/nope/attachments/${FILE1}`, { as: 'bob' }), 404, NOT_FOUND);
    const audit = (await h.audits()).filter((a) => a.action === 'submission.attachment.update').at(-1)!;
    expect(audit.details).toMatchObject({ instanceId: 'both', name: FILE1, newBlobId: null });
  });
});

describe('S/diffs', () => {
  test("after an edit of withrepeat, equals Central's captured diff exactly", async () => {
    const h = await harness();
    await createForm(h, 'withrepeat');
    await create(h, 'withrepeat', fixture('submissions/withrepeat.two.xml'));
    const base = S(h, 'withrepeat', 'rtwo');
    expect(await json(await h.get(`${base}/diffs`, { as: 'bob' }))).toEqual({});
    const current = fixture('central-outputs/withrepeat/api/submission-current.xml');
    const body = await put(h, 'withrepeat', 'rtwo', current);
    expect(body).toMatchObject({ instanceId: 'rtwo', reviewState: 'edited', currentVersion: { instanceId: 'rtwo-edit1' } });
    expect(await (await h.get(`${base}.xml`, { as: 'bob' })).text()).toBe(current);
    const res = await h.get(`${base}/diffs`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    // Byte for byte, so key order counts too.
    expect(await res.text()).toBe(fixture('central-outputs/withrepeat/api/submission-diffs.json'));
    // Versions: Central's keys for this very submission.
    const versions = await json<Json[]>(await h.get(`${base}/versions`, { as: 'bob', headers: EXT }));
    const captured = central<Json[]>('withrepeat/api/submission-versions-extended.json');
    expect(versions.map((v) => [v.instanceId, v.current, v.formVersion])).toEqual(captured.map((v) => [v.instanceId, v.current, v.formVersion]));
    await expectProblem(await h.get(`${S(h, 'withrepeat', 'nope')}/diffs`, { as: 'bob' }), 404, NOT_FOUND);
  });
});

describe('S/comments', () => {
  test('POST answers the Comment; GET lists newest first; extended adds the actor; blank 400; chelsea 403.1; audit comment.create', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    await create(h, 'simple', fixture('submissions/simple.one.xml'));
    const base = `${S(h, 'simple', 'one')}/comments`;
    expect(await json(await h.get(base, { as: 'bob' }))).toEqual([]);
    const res = await h.post(base, { as: 'bob', body: { body: 'first' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const c1 = await json(res);
    expect(Object.keys(c1)).toEqual(['body', 'actorId', 'createdAt']);
    expect(c1).toMatchObject({ body: 'first', actorId: h.ids.bob });
    expect(c1.createdAt).toMatch(ISO);
    const c2 = await json(await h.post(base, { as: 'alice', body: { body: 'second' } }));
    const list = await json<Json[]>(await h.get(base, { as: 'bob' }));
    expect(list).toEqual([c2, c1]);
    const ext = await json<Json[]>(await h.get(base, { as: 'bob', headers: EXT }));
    expect(ext.map((c) => Object.keys(c))).toEqual([['body', 'actorId', 'createdAt', 'actor'], ['body', 'actorId', 'createdAt', 'actor']]);
    expect(ext[0].actor).toMatchObject({ id: h.ids.alice, type: 'user', displayName: 'alice' });
    expect(Object.keys(ext[0].actor)).toEqual(ACTOR_KEYS);
    expect(ext[1].actor).toMatchObject({ id: h.ids.bob });

    for (const bad of [{ body: '' }, { body: '   ' }, {}, { body: 5 }, { body: null }]) {
      const r = await h.post(base, { as: 'bob', body: bad });
      expect(r.status, JSON.stringify(bad)).toBe(400);
    }
    await expectProblem(await h.post(base, { as: 'chelsea', body: { body: 'hi' } }), 403, FORBIDDEN);
    await expectProblem(await h.get(base, { as: 'chelsea' }), 403, FORBIDDEN);
    await expectProblem(await h.post(base, { body: { body: 'hi' } }), 401, AUTH_FAILED);
    await expectProblem(await h.post(`${S(h, 'simple', 'nope')}/comments`, { as: 'bob', body: { body: 'hi' } }), 404, NOT_FOUND);
    expect(await h.get(base, { as: 'bob' }).then((r) => json<Json[]>(r))).toHaveLength(2);
    const audits = (await h.audits()).filter((a) => a.action === 'comment.create');
    expect(audits.map((a) => a.actorId)).toEqual([h.ids.bob, h.ids.alice]);
    expect(audits[0]!.details).toMatchObject({ instanceId: 'one' });
  });
});

describe('draft submissions go with the draft', () => {
  const draftSetup = async (h: Harness) => {
    await createForm(h, 'simple');
    await create(h, 'simple', fixture('submissions/simple.one.xml'));
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'bob' })).status).toBe(200);
    await json(await postXml(h, `${F(h, 'simple')}/draft/submissions`, fixture('submissions/simple.two.xml')));
    await json(await postXml(h, `${F(h, 'simple')}/draft/submissions`, fixture('submissions/simple.three.xml')));
    expect((await json<Json[]>(await h.get(`${F(h, 'simple')}/draft/submissions`, { as: 'bob' }))).map((s) => s.instanceId)).toEqual(['three', 'two']);
  };
  const draftRows = async (h: Harness) => h.db.select().from(submissions).where(eq(submissions.draft, true));
  /** Their data is gone; each row stays, deleted and without versions, keeping its instanceID taken (Central soft-deletes them). */
  const expectDraftGone = async (h: Harness) => {
    const rows = await draftRows(h);
    expect(rows.map((r) => r.instanceId).sort()).toEqual(['three', 'two']);
    for (const r of rows) expect(r).toMatchObject({ currentDefId: null, deletedAt: expect.any(Date) });
    expect(await h.db.select().from(submissionDefs).where(inArray(submissionDefs.submissionId, rows.map((r) => r.id)))).toEqual([]);
  };

  test('publish: the draft list is empty and the published list does not contain them', async () => {
    const h = await harness();
    await draftSetup(h);
    const res = await h.post(`${F(h, 'simple')}/draft/publish?version=x`, { as: 'bob' });
    expect(res.status, await res.clone().text()).toBe(200);
    // No draft any more: the draft's submission list is 404.1, as Central.
    expect((await h.get(`${F(h, 'simple')}/draft/submissions`, { as: 'bob' })).status).toBe(404);
    expect((await json<Json[]>(await h.get(`${F(h, 'simple')}/submissions`, { as: 'bob' }))).map((s) => s.instanceId)).toEqual(['one']);
    await expectDraftGone(h);
    // A new draft starts empty.
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'bob' })).status).toBe(200);
    expect(await json(await h.get(`${F(h, 'simple')}/draft/submissions`, { as: 'bob' }))).toEqual([]);
  });

  test('replace (POST F/draft with new XML): the new draft has no submissions', async () => {
    const h = await harness();
    await draftSetup(h);
    const xml = fixture('forms/simple.xml').replace('<data id="simple">', '<data id="simple" version="2">');
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'bob', body: xml, headers: XML })).status).toBe(200);
    expect(await json(await h.get(`${F(h, 'simple')}/draft/submissions`, { as: 'bob' }))).toEqual([]);
    await expectDraftGone(h);
    expect((await json<Json[]>(await h.get(`${F(h, 'simple')}/submissions`, { as: 'bob' }))).map((s) => s.instanceId)).toEqual(['one']);
  });

  test('DELETE F/draft: the draft submissions are gone', async () => {
    const h = await harness();
    await draftSetup(h);
    expect((await h.delete(`${F(h, 'simple')}/draft`, { as: 'bob' })).status).toBe(200);
    expect((await h.get(`${F(h, 'simple')}/draft/submissions`, { as: 'bob' })).status).toBe(404);
    await expectDraftGone(h);
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'bob' })).status).toBe(200);
    expect(await json(await h.get(`${F(h, 'simple')}/draft/submissions`, { as: 'bob' }))).toEqual([]);
    expect((await json<Json[]>(await h.get(`${F(h, 'simple')}/submissions`, { as: 'bob' }))).map((s) => s.instanceId)).toEqual(['one']);
  });
});

describe('role matrix', () => {
  /** A request of one row; `prep` may create what a mutation consumes (as bob) and is run per actor. */
  interface Req { path: string; body?: unknown; headers?: Record<string, string> }
  interface Row { name: string; method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'; write: boolean; ok?: number; req: (h: Harness, n: number) => Promise<Req> | Req }

  const sub = (h: Harness) => S(h, 'binaryType', 'both');
  const dsub = (h: Harness) => `${F(h, 'binaryType')}/draft/submissions/both`;
  const get = (name: string, path: (h: Harness) => string): Row => ({ name: `GET ${name}`, method: 'GET', write: false, req: (h) => ({ path: path(h) }) });
  const newXml = (id: string) => binaryXml.replace('<instanceID>both</instanceID>', `<instanceID>${id}</instanceID>`);
  const bytes = { body: enc.encode('bytes'), headers: { 'Content-Type': 'image/jpeg' } };

  const rows: Row[] = [
    get('F/submissions', (h) => `${F(h, 'binaryType')}/submissions`),
    get('F/draft/submissions', (h) => `${F(h, 'binaryType')}/draft/submissions`),
    get('S', sub),
    get('F/draft/submissions/S', dsub),
    get('S.xml', (h) => `${sub(h)}.xml`),
    get('F/draft/submissions/S.xml', (h) => `${dsub(h)}.xml`),
    get('S/audits', (h) => `${sub(h)}/audits`),
    get('F/submissions/keys', (h) => `${F(h, 'binaryType')}/submissions/keys`),
    get('F/draft/submissions/keys', (h) => `${F(h, 'binaryType')}/draft/submissions/keys`),
    get('F/submissions/submitters', (h) => `${F(h, 'binaryType')}/submissions/submitters`),
    get('S/attachments', (h) => `${sub(h)}/attachments`),
    get('S/attachments/{name}', (h) => `${sub(h)}/attachments/${FILE1}`),
    get('F/draft/submissions/S/attachments', (h) => `${dsub(h)}/attachments`),
    get('F/draft/submissions/S/attachments/{name}', (h) => `${dsub(h)}/attachments/${FILE1}`),
    get('S/versions', (h) => `${sub(h)}/versions`),
    get('S/versions/{v}', (h) => `${sub(h)}/versions/both`),
    get('S/versions/{v}.xml', (h) => `${sub(h)}/versions/both.xml`),
    get('S/versions/{v}/attachments', (h) => `${sub(h)}/versions/both/attachments`),
    get('S/versions/{v}/attachments/{name}', (h) => `${sub(h)}/versions/both/attachments/${FILE1}`),
    get('S/diffs', (h) => `${sub(h)}/diffs`),
    get('S/comments', (h) => `${sub(h)}/comments`),
    { name: 'POST F/submissions', method: 'POST', write: true, req: (h, n) => ({ path: `${F(h, 'binaryType')}/submissions`, body: newXml(`m${n}`), headers: XML }) },
    { name: 'POST F/draft/submissions', method: 'POST', write: true, req: (h, n) => ({ path: `${F(h, 'binaryType')}/draft/submissions`, body: newXml(`m${n}`), headers: XML }) },
    {
      name: 'PUT S', method: 'PUT', write: true,
      req: async (h, n) => {
        const current = (await json(await h.get(sub(h), { as: 'bob' }))).currentVersion.instanceId as string;
        return { path: sub(h), body: binaryXml.replace('<instanceID>both</instanceID>', `<deprecatedID>${current}</deprecatedID><instanceID>e${n}</instanceID>`), headers: XML };
      },
    },
    { name: 'PATCH S', method: 'PATCH', write: true, req: (h) => ({ path: sub(h), body: { reviewState: 'approved' } }) },
    {
      name: 'DELETE S', method: 'DELETE', write: true,
      req: async (h, n) => {
        await create(h, 'binaryType', newXml(`d${n}`));
        return { path: S(h, 'binaryType', `d${n}`) };
      },
    },
    {
      name: 'POST S/restore', method: 'POST', write: true,
      req: async (h, n) => {
        await create(h, 'binaryType', newXml(`r${n}`));
        expect((await h.delete(S(h, 'binaryType', `r${n}`), { as: 'bob' })).status).toBe(200);
        return { path: `${S(h, 'binaryType', `r${n}`)}/restore` };
      },
    },
    { name: 'POST S/comments', method: 'POST', write: true, req: (h) => ({ path: `${sub(h)}/comments`, body: { body: 'a comment' } }) },
    { name: 'POST S/attachments/{name}', method: 'POST', write: true, req: (h) => ({ path: `${sub(h)}/attachments/${FILE2}`, ...bytes }) },
    { name: 'DELETE S/attachments/{name}', method: 'DELETE', write: true, req: (h) => ({ path: `${sub(h)}/attachments/${FILE2}` }) },
    { name: 'POST F/draft/submissions/S/attachments/{name}', method: 'POST', write: true, req: (h) => ({ path: `${dsub(h)}/attachments/${FILE2}`, ...bytes }) },
    { name: 'DELETE F/draft/submissions/S/attachments/{name}', method: 'DELETE', write: true, req: (h) => ({ path: `${dsub(h)}/attachments/${FILE2}` }) },
    { name: 'DELETE S/versions/{v}/attachments/{name}', method: 'DELETE', write: true, req: (h) => ({ path: `${sub(h)}/versions/both/attachments/${FILE1}` }) },
    // Without Enketo, 409.11 for those allowed; rights are checked first.
    { name: 'GET S/edit', method: 'GET', write: true, ok: 409, req: (h) => ({ path: `${sub(h)}/edit` }) },
  ];

  /** binaryType with 'both' (FILE1 uploaded, then edited to 'both-edit'), and a draft with its own 'both'. */
  async function setup(h: Harness): Promise<void> {
    await createForm(h, 'binaryType');
    await create(h, 'binaryType', binaryXml);
    expect((await h.post(`${sub(h)}/attachments/${FILE1}`, { as: 'bob', ...bytes })).status).toBe(200);
    await put(h, 'binaryType', 'both', edit(binaryXml, 'both', 'both-edit'));
    expect((await h.post(`${F(h, 'binaryType')}/draft`, { as: 'bob' })).status).toBe(200);
    await json(await postXml(h, `${F(h, 'binaryType')}/draft/submissions`, binaryXml));
    expect((await h.post(`${dsub(h)}/attachments/${FILE1}`, { as: 'bob', ...bytes })).status).toBe(200);
  }

  test.each(rows)('$name: alice and bob allowed, chelsea 403.1, anonymous 401.2, a project viewer reads only', async (row) => {
    const h = await harness();
    await setup(h);
    const v = await viewer(h);
    let n = 0;
    const send = async (as: As) => {
      const r = await row.req(h, (n += 1));
      return h.request(row.method, r.path, { as, body: r.body, headers: r.headers });
    };
    await expectProblem(await send('chelsea'), 403, FORBIDDEN);
    await expectProblem(await send('anonymous'), 401, AUTH_FAILED);
    const byViewer = await send(v.as);
    if (row.write) await expectProblem(byViewer, 403, FORBIDDEN);
    else expect(byViewer.status, await byViewer.clone().text()).toBe(200);
    for (const as of ['alice', 'bob'] as const) {
      const res = await send(as);
      const text = await res.text();
      expect(res.status, `${as}: ${text}`).toBe(row.ok ?? 200);
      if (row.ok === 409) expect(JSON.parse(text)).toMatchObject({ code: 409.11 });
    }
  });
});
