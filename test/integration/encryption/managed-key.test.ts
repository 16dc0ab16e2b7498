/**
 * POST /v1/projects/:id/key (managed encryption): rights, validation, the forms it rewrites, forms
 * made later, keys listed for submissions, audits. Real requests through the route table.
 */
import { describe, expect, test } from 'vitest';
import { harness, json, type Harness } from '../../helpers/harness';
import { userWithRole } from '../../helpers/roles';
import { appUserFor, fixture, publishForm } from '../../helpers/submitting';

const SECRET = 'supersecret';
const key = (h: Harness, body: unknown, as: Parameters<Harness['post']>[1] extends infer O ? O extends { as?: infer A } ? A : never : never = 'bob') =>
  h.post(`/v1/projects/${h.projectId}/key`, { as, body });
const formXml = async (h: Harness, path: string) => (await h.get(`/v1/projects/${h.projectId}/forms/${path}`, { as: 'bob' })).text();

describe('POST /v1/projects/:id/key', () => {
  test('role matrix: administrator and manager may; viewer, data collector, App User, no role: 403.1; anonymous 401.2', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/simple.xml'));
    const viewer = await userWithRole(h, 'viewer', 'viewer@example.org');
    const collector = await userWithRole(h, 'formfill', 'collector@example.org');
    const appUser = await appUserFor(h, 'simple', 'Collector phone');
    for (const as of [viewer, collector, 'chelsea' as const, { bearer: appUser.token }]) {
      const res = await key(h, { passphrase: SECRET }, as);
      expect(res.status).toBe(403);
      expect((await json(res)).code).toBe(403.1);
    }
    const anon = await key(h, { passphrase: SECRET }, 'anonymous');
    expect(anon.status).toBe(401);
    expect((await json(anon)).code).toBe(401.2);
    expect((await h.post('/v1/projects/99999/key', { as: 'alice', body: { passphrase: SECRET } })).status).toBe(404);

    const ok = await key(h, { passphrase: SECRET, hint: 'it is a secret' }, 'bob');
    expect(ok.status).toBe(200);
    const project = await json(ok);
    expect(project).toMatchObject({ id: h.projectId, keyId: expect.any(Number) });
    // and alice (administrator) meets the 409 of an active key
    const again = await key(h, { passphrase: SECRET }, 'alice');
    expect(again.status).toBe(409);
    expect(await json(again)).toMatchObject({ code: 409.4, message: 'Could not activate feature (managed encryption) as it was already activated' });
  });

  test('400.2 without a passphrase, 400.21 when shorter than 10, 400.11 not a string; nothing changes', async () => {
    const h = await harness();
    for (const [body, code] of [[{}, 400.2], [{ passphrase: '' }, 400.2], [{ passphrase: '   ' }, 400.2], [{ passphrase: 'x' }, 400.21], [{ passphrase: 123 }, 400.11]] as const) {
      const res = await key(h, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await json(res)).code).toBe(code);
    }
    expect((await json(await h.get(`/v1/projects/${h.projectId}`, { as: 'bob' }))).keyId).toBeNull();
    expect(await h.auditActions()).toEqual([]);
  });

  test('extant forms get a new published version with the key, drafts too; self-keyed forms stay; audits as Central', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/simple.xml'));
    await publishForm(h, fixture('forms/withrepeat.xml'));
    await publishForm(h, fixture('forms/encrypted.xml'));
    // simple2 has only a draft; simple also gets a draft
    expect((await h.post(`/v1/projects/${h.projectId}/forms`, { as: 'bob', body: fixture('forms/simple2.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    expect((await h.post(`/v1/projects/${h.projectId}/forms/simple/draft`, { as: 'bob' })).status).toBe(200);
    const draftBefore = await json(await h.get(`/v1/projects/${h.projectId}/forms/simple/draft`, { as: 'bob' }));

    const res = await key(h, { passphrase: SECRET, hint: 'it is a secret' });
    expect(res.status).toBe(200);
    const { keyId } = await json(res);

    const simple = await formXml(h, 'simple.xml');
    expect(simple).toMatch(/<data id="simple" version="\[encrypted:[a-zA-Z0-9+/]{8}\]">/);
    expect(simple).toMatch(/<submission base64RsaPublicKey="[a-zA-Z0-9+/]{392}"\/><\/model>/);
    const withrepeat = await formXml(h, 'withrepeat.xml');
    expect(withrepeat).toMatch(/<data id="withrepeat" orx:version="1.0\[encrypted:[a-zA-Z0-9+/]{8}\]">/);
    expect(withrepeat).toMatch(/<submission base64RsaPublicKey="[a-zA-Z0-9+/]{392}"\/><\/model>/);
    expect(await formXml(h, 'encrypted.xml')).toBe(fixture('forms/encrypted.xml'));
    const simpleDraft = await formXml(h, 'simple/draft.xml');
    expect(simpleDraft).toMatch(/<data id="simple" version="\[encrypted:[a-zA-Z0-9+/]{8}\]">/);
    const simple2 = await formXml(h, 'simple2/draft.xml');
    expect(simple2).toMatch(/<data id="simple2" version="2\.1\[encrypted:[a-zA-Z0-9+/]{8}\]">/);
    expect(simple2).toMatch(/<submission base64RsaPublicKey="[a-zA-Z0-9+/]{392}"\/><\/model>/);
    // one suffix for the whole operation
    const suffixes = new Set([simple, withrepeat, simpleDraft, simple2].map((x) => /\[encrypted:[^\]]+\]/.exec(x)![0]));
    expect(suffixes.size).toBe(1);

    // form JSON: keyId and the new version; the draft kept its token and public id
    const form = await json(await h.get(`/v1/projects/${h.projectId}/forms/simple`, { as: 'bob' }));
    expect(form).toMatchObject({ keyId, version: expect.stringMatching(/^\[encrypted:.{8}\]$/) });
    const draftAfter = await json(await h.get(`/v1/projects/${h.projectId}/forms/simple/draft`, { as: 'bob' }));
    expect(draftAfter.draftToken).toBe(draftBefore.draftToken);
    expect(draftAfter.keyId).toBe(keyId);
    const versions = await json(await h.get(`/v1/projects/${h.projectId}/forms/simple/versions`, { as: 'bob' }));
    expect(versions.map((v: { version: string }) => v.version)).toEqual([form.version, '']);
    const selfKeyed = await json(await h.get(`/v1/projects/${h.projectId}/forms/encrypted`, { as: 'bob' }));
    expect(selfKeyed.keyId).not.toBe(keyId);
    expect(selfKeyed.version).toBe('working3');

    // project JSON, plain and extended
    expect((await json(await h.get(`/v1/projects/${h.projectId}`, { as: 'bob' }))).keyId).toBe(keyId);
    expect((await json(await h.get(`/v1/projects/${h.projectId}`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }))).keyId).toBe(keyId);

    const audits = (await h.audits()).filter((a) => a.action.startsWith('project') || a.action.startsWith('form.update'));
    const after = audits.slice(audits.findIndex((a) => a.action === 'project.update'));
    expect(after.map((a) => [a.action, a.details])).toEqual([
      ['project.update', { encrypted: true }],
      ['project.update', { data: { keyId } }],
      ...after.slice(2).map((a) => ['form.update.publish', a.details]),
    ]);
    expect(after.filter((a) => a.action === 'form.update.publish')).toHaveLength(2); // simple, withrepeat
  });

  test('forms created or drafted later are encrypted with the project key; a self-keyed upload keeps its own', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/simple.xml'));
    const { keyId } = await json(await key(h, { passphrase: SECRET }));
    const created = await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'bob', body: fixture('forms/simple2.xml'), headers: { 'Content-Type': 'application/xml' } });
    expect(created.status).toBe(200);
    const body = await json(created);
    expect(body.version).toMatch(/^2\.1\[encrypted:[a-zA-Z0-9+/]{8}\]$/);
    expect(body.keyId).toBe(keyId);
    expect(await formXml(h, 'simple2.xml')).toMatch(/<submission base64RsaPublicKey="[a-zA-Z0-9+/]{392}"\/>/);

    // a new draft uploaded in plain gets the key too
    const draft = await h.post(`/v1/projects/${h.projectId}/forms/simple/draft?ignoreWarnings=true`, { as: 'bob', body: fixture('forms/simple.xml').replace('id="simple"', 'id="simple" version="3"'), headers: { 'Content-Type': 'application/xml' } });
    expect(draft.status).toBe(200);
    const d = await json(await h.get(`/v1/projects/${h.projectId}/forms/simple/draft`, { as: 'bob' }));
    expect(d).toMatchObject({ keyId, version: expect.stringMatching(/^3\[encrypted:.{8}\]$/) });

    const own = await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'bob', body: fixture('forms/encrypted.xml'), headers: { 'Content-Type': 'application/xml' } });
    const ownJson = await json(own);
    expect(ownJson.version).toBe('working3');
    expect(ownJson.keyId).not.toBe(keyId);
  });

  test('draft submissions are cleared, live submissions stay', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/simple.xml'));
    expect((await h.post(`/v1/projects/${h.projectId}/forms/simple/submissions`, { as: 'bob', body: fixture('submissions/simple.one.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    expect((await h.post(`/v1/projects/${h.projectId}/forms/simple/draft`, { as: 'bob' })).status).toBe(200);
    expect((await h.post(`/v1/projects/${h.projectId}/forms/simple/draft/submissions`, { as: 'bob', body: fixture('submissions/simple.two.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    expect((await key(h, { passphrase: SECRET })).status).toBe(200);
    const ext = { as: 'bob' as const, headers: { 'X-Extended-Metadata': 'true' } };
    expect((await json(await h.get(`/v1/projects/${h.projectId}/forms/simple`, ext))).submissions).toBe(1);
    expect(await json(await h.get(`/v1/projects/${h.projectId}/forms/simple/draft/submissions`, { as: 'bob' }))).toEqual([]);
    expect(await json(await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions`, { as: 'bob' }))).toHaveLength(1);
  });
});
