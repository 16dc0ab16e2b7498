/**
 * Submission behaviour pinned by Central's own tests (api/submissions.js, forms/draft.js,
 * audits.js, other/authentication.js): an edit whose new instanceID is already a version (409.3),
 * draft submissions whatever version they name, PUT of a draft's test submission, the instanceIDs
 * of a replaced draft's test submissions staying taken, and X-Action-Notes on submission audits.
 */
import { and, eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { audits, submissionDefs, submissions } from '../../../drizzle/schema';
import { harness, json, type Harness } from '../../helpers/harness';
import { fixture, multipart } from '../../helpers/submitting';

const OR = { 'X-OpenRosa-Version': '1.0' };
const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const F = (h: Harness) => `${P(h)}/forms/simple`;
const XML = { 'Content-Type': 'application/xml' };
const one = fixture('submissions/simple.one.xml');
const two = fixture('submissions/simple.two.xml');
/** simple.one with instanceID `id` and deprecatedID `deprecated`. */
const withIds = (deprecated: string, id: string) =>
  one.replace('<instanceID>one</instanceID>', `<deprecatedID>${deprecated}</deprecatedID><instanceID>${id}</instanceID>`);

async function publishSimple(h: Harness): Promise<void> {
  const res = await h.post(`${P(h)}/forms?publish=true`, { as: 'bob', body: fixture('forms/simple.xml'), headers: XML });
  expect(res.status, await res.clone().text()).toBe(200);
}
const submitOpenRosa = (h: Harness, xml: string, headers: Record<string, string> = {}) => {
  const m = multipart(xml);
  return h.post(`${P(h)}/submission`, { as: 'bob', body: m.body, headers: { ...OR, 'Content-Type': m.type, ...headers } });
};

describe('OpenRosa edits: the new instanceID', () => {
  test('an edit whose new instanceID is already a version of the form is 409.3 naming it (Central)', async () => {
    const h = await harness();
    await publishSimple(h);
    expect((await submitOpenRosa(h, one)).status).toBe(201);
    expect((await submitOpenRosa(h, withIds('one', 'two'))).status).toBe(201);
    const res = await submitOpenRosa(h, withIds('two', 'one'));
    expect(res.status).toBe(409);
    expect(await res.text()).toContain('A resource already exists with instanceID value(s) of one.');
    // Nothing changed: two is still the current version.
    const defs = await h.db.select({ instanceId: submissionDefs.instanceId, current: submissionDefs.current }).from(submissionDefs).orderBy(submissionDefs.id);
    expect(defs).toEqual([{ instanceId: 'one', current: false }, { instanceId: 'two', current: true }]);
  });

  test('resending the edit that replaced a version adds its media (no new version); another XML is 409.1', async () => {
    const h = await harness();
    await publishSimple(h);
    expect((await submitOpenRosa(h, one)).status).toBe(201);
    expect((await submitOpenRosa(h, withIds('one', 'two'))).status).toBe(201);
    expect((await submitOpenRosa(h, withIds('one', 'two'))).status).toBe(201);
    expect((await h.db.select().from(submissionDefs)).length).toBe(2);
    const other = await submitOpenRosa(h, withIds('one', 'two').replace('Alice', 'Alyssa'));
    expect(other.status).toBe(409);
    // Deprecating a version that is neither current nor replaced by the sent one: 409.9.
    expect((await submitOpenRosa(h, withIds('two', 'three'))).status).toBe(201);
    const stale = await submitOpenRosa(h, withIds('one', 'four'));
    expect(stale.status).toBe(409);
    expect(await stale.text()).toContain('the copy you were editing (one) is now out of date');
  });
});

describe('draft test submissions', () => {
  test('a draft takes a submission whatever version it names (REST)', async () => {
    const h = await harness();
    await publishSimple(h);
    expect((await h.post(`${F(h)}/draft`, { as: 'bob' })).status).toBe(200);
    const res = await h.post(`${F(h)}/draft/submissions`, { as: 'bob', body: '<data id="simple" version="-1"><meta><instanceID>one</instanceID></meta></data>', headers: XML });
    expect(res.status).toBe(200);
    expect((await json(res)).instanceId).toBe('one');
    // A live submission still needs a published version (404.6).
    const live = await h.post(`${F(h)}/submissions`, { as: 'bob', body: '<data id="simple" version="-1"><meta><instanceID>x</instanceID></meta></data>', headers: XML });
    expect(live.status).toBe(404);
  });

  test('PUT F/draft/submissions/{id} makes a new version of a test submission; without credentials 401', async () => {
    const h = await harness();
    await publishSimple(h);
    expect((await h.post(`${F(h)}/draft`, { as: 'bob' })).status).toBe(200);
    expect((await h.put(`${F(h)}/draft/submissions/uuid`, { as: 'anonymous', body: withIds('uuid', 'x'), headers: XML })).status).toBe(401);
    expect((await h.post(`${F(h)}/draft/submissions`, { as: 'bob', body: one, headers: XML })).status).toBe(200);
    const put = await h.put(`${F(h)}/draft/submissions/one`, { as: 'bob', body: withIds('one', 'one2'), headers: { ...XML, 'X-Action-Notes': 'fixing%20it' } });
    expect(put.status, await put.clone().text()).toBe(200);
    expect((await json(put)).currentVersion.instanceId).toBe('one2');
    const [sub] = await h.db.select().from(submissions).where(eq(submissions.instanceId, 'one'));
    expect(sub).toMatchObject({ draft: true, reviewState: 'edited' });
    const versions = await json(await h.get(`${F(h)}/draft/submissions/one/versions`, { as: 'bob' }));
    expect(versions.map((v: { instanceId: string }) => v.instanceId)).toEqual(['one2', 'one']);
    const [logged] = await h.db.select().from(audits).where(eq(audits.action, 'submission.update.version'));
    expect(logged!.notes).toBe('fixing it');
    // The live path does not see it; a stale deprecatedID is 409.9.
    expect((await h.put(`${F(h)}/submissions/one`, { as: 'bob', body: withIds('one', 'one3'), headers: XML })).status).toBe(404);
    expect((await h.put(`${F(h)}/draft/submissions/one`, { as: 'bob', body: withIds('one', 'one3'), headers: XML })).status).toBe(409);
  });

  test('replacing the draft deletes its test submissions, but their instanceIDs stay taken (409)', async () => {
    const h = await harness();
    await publishSimple(h);
    expect((await h.post(`${F(h)}/draft`, { as: 'bob' })).status).toBe(200);
    expect((await h.post(`${F(h)}/draft/submissions`, { as: 'bob', body: one, headers: XML })).status).toBe(200);
    const replaced = await h.post(`${F(h)}/draft`, { as: 'bob', body: fixture('forms/simple.xml').replace('id="simple"', 'id="simple" version="drafty2"'), headers: XML });
    expect(replaced.status).toBe(200);
    // A new instanceID goes in; the list shows only it.
    expect((await h.post(`${F(h)}/draft/submissions`, { as: 'bob', body: two, headers: XML })).status).toBe(200);
    const list = await json(await h.get(`${F(h)}/draft/submissions`, { as: 'bob' }));
    expect(list.map((s: { instanceId: string }) => s.instanceId)).toEqual(['two']);
    // The old one's instanceID: 409 over REST and over OpenRosa.
    expect((await h.post(`${F(h)}/draft/submissions`, { as: 'bob', body: one, headers: XML })).status).toBe(409);
    const m = multipart(one);
    const openRosa = await h.post(`${F(h)}/draft/submission`, { as: 'bob', body: m.body, headers: { ...OR, 'Content-Type': m.type } });
    expect(openRosa.status).toBe(409);
    // Its row is a deleted one without versions; the draft's extended count leaves it out.
    const [kept] = await h.db.select().from(submissions).where(and(eq(submissions.instanceId, 'one'), eq(submissions.draft, true)));
    expect(kept!.deletedAt).not.toBeNull();
    expect(kept!.currentDefId).toBeNull();
    const draft = await json(await h.get(`${F(h)}/draft`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(draft.submissions).toBe(1);
    // Publishing deletes the rest the same way; the published form's submissions are untouched.
    expect((await h.post(`${F(h)}/draft/publish`, { as: 'bob' })).status).toBe(200);
    expect((await h.db.select().from(submissions).where(eq(submissions.draft, true))).every((s) => s.deletedAt != null)).toBe(true);
    expect((await h.post(`${F(h)}/submissions`, { as: 'bob', body: one.replace('id="simple"', 'id="simple" version="drafty2"'), headers: XML })).status).toBe(200);
  });
});

describe('X-Action-Notes on submission audits', () => {
  test('OpenRosa submission.create keeps the decoded notes; a bad encoding is 400.6', async () => {
    const h = await harness();
    await publishSimple(h);
    expect((await submitOpenRosa(h, one, { 'X-Action-Notes': 'doing this for work%21' })).status).toBe(201);
    expect((await submitOpenRosa(h, two)).status).toBe(201);
    const rows = await h.db.select({ notes: audits.notes, details: audits.details }).from(audits).where(eq(audits.action, 'submission.create')).orderBy(audits.id);
    expect(rows.map((r) => r.notes)).toEqual(['doing this for work!', null]);
    const bad = await submitOpenRosa(h, fixture('submissions/simple.three.xml'), { 'X-Action-Notes': 'oops%ae' });
    expect(bad.status).toBe(400);
    expect((await h.db.select().from(submissions)).length).toBe(2);
  });

  test('REST create and an OpenRosa edit keep the notes too', async () => {
    const h = await harness();
    await publishSimple(h);
    expect((await h.post(`${F(h)}/submissions`, { as: 'bob', body: one, headers: { ...XML, 'X-Action-Notes': 'rest' } })).status).toBe(200);
    expect((await submitOpenRosa(h, withIds('one', 'two'), { 'X-Action-Notes': 'edit' })).status).toBe(201);
    const rows = await h.db.select({ action: audits.action, notes: audits.notes }).from(audits).orderBy(audits.id);
    expect(rows.filter((r) => r.action.startsWith('submission.'))).toEqual([
      { action: 'submission.create', notes: 'rest' },
      { action: 'submission.update.version', notes: 'edit' },
    ]);
  });
});
