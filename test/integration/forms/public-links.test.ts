import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { actors, assignments, publicLinks, sessions } from '../../../drizzle/schema';
import { systemCtx } from '../../../lib/context';
import { purgeForms } from '../../../lib/forms';
import { harness, json, type As, type Harness } from '../../helpers/harness';
import { userWithRole } from '../../helpers/roles';
import { fixture, publishForm } from '../../helpers/submitting';

const FORBIDDEN = { message: 'The authentication you provided does not have rights to perform that action.', code: 403.1 };
const NOT_FOUND = { message: 'Could not find the resource you were looking for.', code: 404.1 };
const TOKEN = /^[A-Za-z0-9!$]{64}$/;
const LINK_KEYS = ['once', 'id', 'type', 'displayName', 'createdAt', 'updatedAt', 'deletedAt', 'token'];
const EXTENDED_KEYS = [...LINK_KEYS, 'createdBy', 'properties'];

interface Link { id: number; displayName: string; once: boolean | null; token: string | null }

const links = (h: Harness, xmlFormId = 'simple') => `/v1/projects/${h.projectId}/forms/${xmlFormId}/public-links`;

async function setup(): Promise<Harness> {
  const h = await harness();
  await publishForm(h, fixture('forms/simple.xml'));
  return h;
}

async function createLink(h: Harness, body: Record<string, unknown> = { displayName: 'Household link' }, xmlFormId = 'simple'): Promise<Link> {
  const res = await h.post(links(h, xmlFormId), { as: 'bob', body });
  expect(res.status, await res.clone().text()).toBe(200);
  return json<Link>(res);
}

async function acteeOf(h: Harness, actorId: number): Promise<string> {
  const [a] = await h.db.select().from(actors).where(eq(actors.id, actorId));
  return a!.acteeId;
}

describe('POST F/public-links', () => {
  test('bob creates a link: Central shape with a token, once null; the pub-link role on the form; audits', async () => {
    const h = await setup();
    const link = await createLink(h);
    expect(Object.keys(link)).toEqual(LINK_KEYS);
    expect(link).toMatchObject({ once: null, type: 'public_link', displayName: 'Household link', updatedAt: null, deletedAt: null });
    expect(link.token).toMatch(TOKEN);

    const [session] = await h.db.select().from(sessions).where(eq(sessions.actorId, link.id));
    expect(session!.tokenHash).toBe(createHash('sha256').update(link.token!).digest('hex'));
    expect(session!.expiresAt.toISOString()).toBe('9999-12-31T23:59:59.000Z');
    const grants = await h.db.select().from(assignments).where(eq(assignments.actorId, link.id));
    expect(grants).toHaveLength(1);
    const forms = await json(await h.get(`/v1/projects/${h.projectId}/forms/simple/assignments/pub-link`, { as: 'bob' }));
    expect(forms.map((a: { id: number }) => a.id)).toEqual([link.id]);

    const audits = (await h.audits()).filter((a) => !a.action.startsWith('form.'));
    expect(audits.map((a) => a.action)).toEqual(['public_link.assignment.create', 'public_link.create']);
    const acteeId = await acteeOf(h, link.id);
    expect(audits.every((a) => a.actorId === h.ids.bob && a.acteeId === acteeId)).toBe(true);
    const [row] = await h.db.select().from(publicLinks).where(eq(publicLinks.actorId, link.id));
    expect(row).toMatchObject({ createdBy: h.ids.bob, once: null });
  });

  test('once: true is kept and returned; once must be a boolean', async () => {
    const h = await setup();
    expect((await createLink(h, { displayName: 'Once', once: true })).once).toBe(true);
    expect((await createLink(h, { displayName: 'Not once', once: false })).once).toBe(false);
    const bad = await h.post(links(h), { as: 'bob', body: { displayName: 'x', once: 'yes' } });
    expect(bad.status).toBe(400);
    expect((await json(bad)).code).toBe(400.11);
  });

  test('missing displayName → 400.2; unknown form → 404.1', async () => {
    const h = await setup();
    const res = await h.post(links(h), { as: 'bob', body: {} });
    expect(res.status).toBe(400);
    expect((await json(res)).code).toBe(400.2);
    const missing = await h.post(links(h, 'nope'), { as: 'bob', body: { displayName: 'x' } });
    expect(missing.status).toBe(404);
    expect(await json(missing)).toEqual(NOT_FOUND);
  });

  test('role matrix: admin and manager may; viewer, data collector, App User, chelsea 403.1; anonymous 401.2', async () => {
    const h = await setup();
    const viewer = await userWithRole(h, 'viewer', 'viewer@example.org');
    const collector = await userWithRole(h, 'formfill', 'collector@example.org');
    const appUser = await json<{ token: string }>(await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName: 'AU' } }));
    expect((await h.post(links(h), { as: 'alice', body: { displayName: 'a' } })).status).toBe(200);
    expect((await h.post(links(h), { as: 'bob', body: { displayName: 'b' } })).status).toBe(200);
    for (const as of [viewer, collector, { key: appUser.token }, 'chelsea'] as As[]) {
      for (const [method, path] of [['POST', links(h)], ['GET', links(h)]] as const) {
        const res = await h.request(method, path, { as, body: method === 'POST' ? { displayName: 'no' } : undefined });
        expect(res.status, `${method} ${JSON.stringify(as)}`).toBe(403);
        expect(await json(res)).toEqual(FORBIDDEN);
      }
    }
    expect((await h.post(links(h), { body: { displayName: 'no' } })).status).toBe(401);
    expect((await h.get(links(h))).status).toBe(401);
    // The viewer reads the list of actor properties but cannot define one.
    expect((await h.get(`/v1/projects/${h.projectId}/actor-properties`, { as: viewer })).status).toBe(200);
  });
});

describe('GET F/public-links[/:id]', () => {
  test('newest first, revoked sessions last with token null; only this form; extended adds createdBy and properties', async () => {
    const h = await setup();
    await publishForm(h, fixture('forms/withrepeat.xml'));
    const one = await createLink(h, { displayName: 'one' });
    const two = await createLink(h, { displayName: 'two', once: true });
    await createLink(h, { displayName: 'three' });
    await createLink(h, { displayName: 'other form' }, 'withrepeat');
    expect((await h.delete(`/v1/sessions/${two.token}`, { as: 'bob' })).status).toBe(200);

    const list = await json<Link[]>(await h.get(links(h), { as: 'bob' }));
    expect(list.map((l) => l.displayName)).toEqual(['three', 'one', 'two']);
    expect(list[2]).toMatchObject({ once: true, token: null });
    for (const l of list) expect(Object.keys(l)).toEqual(LINK_KEYS);

    const extended = await json(await h.get(links(h), { as: 'alice', headers: { 'X-Extended-Metadata': 'true' } }));
    for (const l of extended) {
      expect(Object.keys(l)).toEqual(EXTENDED_KEYS);
      expect(l.createdBy).toMatchObject({ id: h.ids.bob, type: 'user' });
      expect(l.properties).toBeNull();
    }

    const single = await h.get(`${links(h)}/${one.id}`, { as: 'bob' });
    expect(single.status).toBe(200);
    expect(await json(single)).toEqual(list[1]);
    const ext = await json(await h.get(`${links(h)}/${one.id}`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(Object.keys(ext)).toEqual(EXTENDED_KEYS);
    expect((await h.get(`${links(h, 'withrepeat')}/${one.id}`, { as: 'bob' })).status).toBe(404);
    expect((await h.get(`${links(h)}/999999`, { as: 'bob' })).status).toBe(404);
    expect((await h.get(`${links(h)}/${one.id}`, { as: 'chelsea' })).status).toBe(403);

    // The form's extended metadata counts the live links.
    const form = await json(await h.get(`/v1/projects/${h.projectId}/forms/simple`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(form.publicLinks).toBe(2);
  });
});

describe('PATCH F/public-links/:id (properties)', () => {
  test('sets, unsets and audits public_link.property.set; unknown names 400.8; viewer 403.1', async () => {
    const h = await setup();
    for (const name of ['region', 'worker_id']) {
      expect((await h.post(`/v1/projects/${h.projectId}/actor-properties`, { as: 'bob', body: { name } })).status).toBe(200);
    }
    const link = await createLink(h, { displayName: 'With props', properties: { region: 'north' } });
    expect(link).not.toHaveProperty('properties');
    const path = `${links(h)}/${link.id}`;
    const got = await json(await h.get(path, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(got.properties).toEqual({ region: 'north' });

    const set = await h.patch(path, { as: 'bob', body: { properties: { region: ' south ', worker_id: '42' } } });
    expect(set.status).toBe(200);
    const body = await json(set);
    expect(Object.keys(body)).toEqual(EXTENDED_KEYS);
    expect(body.properties).toEqual({ region: 'south', worker_id: '42' });
    expect((await json(await h.patch(path, { as: 'bob', body: { properties: { region: null } } }))).properties).toEqual({ worker_id: '42' });
    expect((await json(await h.patch(path, { as: 'bob', body: { properties: { worker_id: '' } } }))).properties).toBeNull();

    const unknown = await h.patch(path, { as: 'bob', body: { properties: { nonexistent: 'x' } } });
    expect(unknown.status).toBe(400);
    expect(await json(unknown)).toMatchObject({ code: 400.8, details: { field: 'properties', value: 'nonexistent' } });
    const viewer = await userWithRole(h, 'viewer', 'viewer@example.org');
    expect((await h.patch(path, { as: viewer, body: { properties: { region: 'x' } } })).status).toBe(403);

    const audits = (await h.audits()).filter((a) => a.action === 'public_link.property.set');
    expect(audits.map((a) => a.details)).toEqual([
      { properties: { region: 'north' } },
      { properties: { region: 'south', worker_id: '42' } },
      { properties: { region: null } },
      { properties: { worker_id: null } },
    ]);
    expect(audits.every((a) => a.actorId === h.ids.bob)).toBe(true);
    expect(audits[0]!.acteeId).toBe(await acteeOf(h, link.id));
  });
});

describe('filling a form through a public link', () => {
  test('the link resolves its form by enketoId (and enketoOnceId), reads F.xml and submits with ?st= and /v1/key/; the submitter is the link', async () => {
    const h = await setup();
    const link = await createLink(h);
    const form = await json(await h.get(`/v1/projects/${h.projectId}/forms/simple`, { as: 'bob' }));
    expect(form.enketoId).toMatch(/^[A-Za-z0-9]{16}$/);
    expect(form.enketoOnceId).toMatch(/^[A-Za-z0-9]{64}$/);
    const st = encodeURIComponent(link.token!);

    for (const id of [form.enketoId, form.enketoOnceId]) {
      const resolved = await h.get(`/v1/form-links/${id}/form?st=${st}`);
      expect(resolved.status).toBe(200);
      expect(await json(resolved)).toEqual(form);
    }
    expect((await h.get(`/v1/form-links/nope/form?st=${st}`)).status).toBe(404);
    expect((await h.get(`/v1/form-links/${form.enketoId}/form`, { as: 'bob' })).status).toBe(200);
    expect((await h.get(`/v1/form-links/${form.enketoId}/form`, { as: 'chelsea' })).status).toBe(403);

    const xml = await h.get(`/v1/projects/${h.projectId}/forms/simple.xml?st=${st}`);
    expect(xml.status).toBe(200);
    expect(await xml.text()).toBe(fixture('forms/simple.xml'));

    const viaSt = await h.post(`/v1/projects/${h.projectId}/forms/simple/submissions?st=${st}`, {
      body: fixture('submissions/simple.one.xml'), headers: { 'Content-Type': 'text/xml' },
    });
    expect(viaSt.status, await viaSt.clone().text()).toBe(200);
    expect((await json(viaSt)).submitterId).toBe(link.id);
    const viaKey = await h.post(`/v1/projects/${h.projectId}/forms/simple/submissions`, {
      as: { key: link.token! }, body: fixture('submissions/simple.two.xml'), headers: { 'Content-Type': 'text/xml' },
    });
    expect(viaKey.status).toBe(200);
    expect((await json(viaKey)).submitterId).toBe(link.id);

    // Only this form.
    await publishForm(h, fixture('forms/withrepeat.xml'));
    const other = await h.post(`/v1/projects/${h.projectId}/forms/withrepeat/submissions?st=${st}`, {
      body: fixture('submissions/withrepeat.one.xml'), headers: { 'Content-Type': 'text/xml' },
    });
    expect(other.status).toBe(403);
  });

  test('as Web Forms does: form attachments read and missing submission attachments uploaded with ?st=', async () => {
    const h = await harness();
    // A form with a media file, uploaded as a draft, then published.
    const F = `/v1/projects/${h.projectId}/forms`;
    expect((await h.post(F, { as: 'bob', body: fixture('forms/withAttachments.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    expect((await h.post(`${F}/withAttachments/draft/attachments/goodone.csv`, { as: 'bob', body: 'a,b\n1,2\n', headers: { 'Content-Type': 'text/csv' } })).status).toBe(200);
    expect((await h.post(`${F}/withAttachments/draft/publish`, { as: 'bob' })).status).toBe(200);
    const attLink = await createLink(h, { displayName: 'att' }, 'withAttachments');
    const got = await h.get(`${F}/withAttachments/attachments/goodone.csv?st=${encodeURIComponent(attLink.token!)}`);
    expect(got.status).toBe(200);
    expect(await got.text()).toBe('a,b\n1,2\n');

    await publishForm(h, fixture('forms/binaryType.xml'));
    const link = await createLink(h, { displayName: 'media' }, 'binaryType');
    const st = encodeURIComponent(link.token!);
    const created = await h.post(`${F}/binaryType/submissions?st=${st}&deviceID=web`, {
      body: fixture('submissions/binaryType.both.xml'), headers: { 'Content-Type': 'text/xml', 'X-Requested-With': 'XMLHttpRequest' },
    });
    expect(created.status).toBe(200);
    const upload = await h.post(`${F}/binaryType/submissions/both/attachments/here_is_file2.jpg?st=${st}`, {
      body: 'jpeg bytes', headers: { 'Content-Type': 'image/jpeg', 'X-Requested-With': 'XMLHttpRequest' },
    });
    expect(upload.status, await upload.clone().text()).toBe(200);
    // Once present, only submission.update holders may replace it.
    const again = await h.post(`${F}/binaryType/submissions/both/attachments/here_is_file2.jpg?st=${st}`, {
      body: 'other', headers: { 'Content-Type': 'image/jpeg' },
    });
    expect(again.status).toBe(403);
    const atts = await json(await h.get(`${F}/binaryType/submissions/both/attachments`, { as: 'bob' }));
    expect(atts).toEqual([{ name: 'here_is_file2.jpg', exists: true }, { name: 'my_file1.mp4', exists: false }]);
  });

  test('a draft has no public ids; they are drawn at first publish and kept across versions', async () => {
    const h = await harness();
    const created = await json(await h.post(`/v1/projects/${h.projectId}/forms`, {
      as: 'bob', body: fixture('forms/simple.xml'), headers: { 'Content-Type': 'application/xml' },
    }));
    expect(created).toMatchObject({ enketoId: null, enketoOnceId: null });
    expect((await h.post(`/v1/projects/${h.projectId}/forms/simple/draft/publish`, { as: 'bob' })).status).toBe(200);
    const first = await json(await h.get(`/v1/projects/${h.projectId}/forms/simple`, { as: 'bob' }));
    expect(first.enketoId).toMatch(/^[A-Za-z0-9]{16}$/);
    expect((await h.post(`/v1/projects/${h.projectId}/forms/simple/draft`, { as: 'bob' })).status).toBe(200);
    expect((await json(await h.get(`/v1/projects/${h.projectId}/forms/simple/draft`, { as: 'bob' }))).enketoId).toBeNull();
    expect((await h.post(`/v1/projects/${h.projectId}/forms/simple/draft/publish?version=2`, { as: 'bob' })).status).toBe(200);
    const second = await json(await h.get(`/v1/projects/${h.projectId}/forms/simple`, { as: 'bob' }));
    expect([second.enketoId, second.enketoOnceId]).toEqual([first.enketoId, first.enketoOnceId]);
  });
});

describe('a closed form', () => {
  test('its public link reaches neither the form nor its sub-resources (403.1), as Central', async () => {
    const h = await harness();
    const F = `/v1/projects/${h.projectId}/forms`;
    expect((await h.post(`${F}?publish=true`, { as: 'bob', body: fixture('forms/withAttachments.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    const link = await createLink(h, { displayName: 'closed' }, 'withAttachments');
    expect((await h.patch(`${F}/withAttachments`, { as: 'bob', body: { state: 'closed' } })).status).toBe(200);
    const as = { key: link.token! };
    for (const path of [F, `${F}/withAttachments`, `${F}/withAttachments.xml`, `${F}/withAttachments/versions`, `${F}/withAttachments/fields`,
      `${F}/withAttachments/attachments`, `${F}/withAttachments/attachments/goodone.csv`]) {
      const res = await h.get(path, { as });
      expect(res.status, path).toBe(403);
    }
    expect((await h.get(`${F}/withAttachments/manifest`, { as, headers: { 'X-OpenRosa-Version': '1.0' } })).status).toBe(403);
  });
});

describe('revoking a public link', () => {
  test('DELETE: the token is refused afterwards, the link leaves the list; audited public_link.delete', async () => {
    const h = await setup();
    const link = await createLink(h);
    const st = encodeURIComponent(link.token!);
    expect((await h.delete(`${links(h)}/${link.id}`, { as: 'chelsea' })).status).toBe(403);
    const res = await h.delete(`${links(h)}/${link.id}`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    expect(await json(await h.get(links(h), { as: 'bob' }))).toEqual([]);
    expect(await h.db.select().from(sessions).where(eq(sessions.actorId, link.id))).toEqual([]);
    expect(await h.db.select().from(assignments).where(eq(assignments.actorId, link.id))).toEqual([]);

    const refused = await h.post(`/v1/projects/${h.projectId}/forms/simple/submissions`, {
      as: { key: link.token! }, body: fixture('submissions/simple.one.xml'), headers: { 'Content-Type': 'text/xml' },
    });
    expect(refused.status).toBe(403);
    expect((await h.get(`/v1/projects/${h.projectId}/forms/simple.xml?st=${st}`)).status).toBeGreaterThanOrEqual(401);
    expect((await h.delete(`${links(h)}/${link.id}`, { as: 'bob' })).status).toBe(404);
    expect((await h.auditActions()).slice(-1)).toEqual(['public_link.delete']);
    const grouped = await json(await h.get('/v1/audits?action=public_link', { as: 'alice' }));
    expect(grouped.map((a: { action: string }) => a.action)).toEqual(['public_link.delete', 'public_link.create', 'public_link.assignment.create']);
  });

  test('purging the form (Trash, then purge) takes its links along; their tokens stop working', async () => {
    const h = await setup();
    const link = await createLink(h);
    expect((await h.delete(`/v1/projects/${h.projectId}/forms/simple`, { as: 'bob' })).status).toBe(200);
    expect(await purgeForms(systemCtx(h.deps), { force: true })).toHaveLength(1);
    expect(await h.db.select().from(publicLinks).where(eq(publicLinks.actorId, link.id))).toEqual([]);
    expect(await h.db.select().from(sessions).where(eq(sessions.actorId, link.id))).toEqual([]);
    expect((await h.get('/v1/users/current', { as: { key: link.token! } })).status).toBe(403);
  });

  test('a project manager may revoke it by ending its session (as the web UI does): token null, public_link.session.end', async () => {
    const h = await setup();
    const link = await createLink(h);
    expect((await h.delete(`/v1/sessions/${link.token}`, { as: 'chelsea' })).status).toBe(403);
    expect((await h.delete(`/v1/sessions/${link.token}`, { as: 'bob' })).status).toBe(200);
    const [listed] = await json<Link[]>(await h.get(links(h), { as: 'bob' }));
    expect(listed).toMatchObject({ id: link.id, token: null });
    expect(await h.auditActions()).toContain('public_link.session.end');
  });
});
