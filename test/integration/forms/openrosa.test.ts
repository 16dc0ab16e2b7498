/**
 * OpenRosa: P/formList, F/manifest, form and media downloads as Collect makes them, and the Draft
 * Token paths /v1/test/{token}/…/draft/… (shared/spec/interface.md, OpenRosa endpoints; FormList
 * rules; Authentication 3 and 5). Responses are parsed as XML, never string-matched.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { formDefs, forms } from '../../../drizzle/schema';
import { OR_RESPONSE, parseXml, XFORMS_LIST, type El } from '../../helpers/collect';
import { sql } from 'drizzle-orm';
import { eq, harness, json, type As, type Harness } from '../../helpers/harness';

// ---------------------------------------------------------------------------------------------
// XML

const XFORMS_MANIFEST = 'http://openrosa.org/xforms/xformsManifest';

/** A child element's fields, by local name → text (every child must be a leaf in that namespace). */
function fields(el: El, ns: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of el.children) {
    expect(c.uri).toBe(ns);
    expect(c.children).toEqual([]);
    expect(out[c.local]).toBeUndefined();
    out[c.local] = c.text;
  }
  return out;
}

interface ListedForm { formID: string; name: string; version: string; hash: string; downloadUrl: string; manifestUrl?: string }
interface MediaFile { filename: string; hash: string; downloadUrl: string }

/** Checks a 200 OpenRosa document response (status, headers) and returns its parsed body. */
async function openRosaDoc(res: Response): Promise<El> {
  const body = await res.text();
  expect(res.status, body).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/xml(;|$)/);
  expect(res.headers.get('x-openrosa-version')).toBe('1.0');
  expect(res.headers.get('x-openrosa-accept-content-length')).toBe('100000000');
  return parseXml(body);
}

async function formListOf(res: Response): Promise<ListedForm[]> {
  const root = await openRosaDoc(res);
  expect(root.local).toBe('xforms');
  expect(root.uri).toBe(XFORMS_LIST);
  for (const c of root.children) expect(c.local).toBe('xform'); // never an xforms-group
  return root.children.map((c) => {
    const f = fields(c, XFORMS_LIST) as unknown as ListedForm;
    expect(Object.keys(f)).toEqual(f.manifestUrl === undefined
      ? ['formID', 'name', 'version', 'hash', 'downloadUrl']
      : ['formID', 'name', 'version', 'hash', 'downloadUrl', 'manifestUrl']);
    return f;
  });
}

async function manifestOf(res: Response): Promise<MediaFile[]> {
  const root = await openRosaDoc(res);
  expect(root.local).toBe('manifest');
  expect(root.uri).toBe(XFORMS_MANIFEST);
  return root.children.map((c) => {
    expect(c.local).toBe('mediaFile');
    expect(c.attrs).toEqual({});
    const m = fields(c, XFORMS_MANIFEST) as unknown as MediaFile;
    expect(Object.keys(m)).toEqual(['filename', 'hash', 'downloadUrl']);
    return m;
  });
}

const MESSAGES = {
  header: 'An expected header field (X-OpenRosa-Version) did not match the expected format.',
  auth: 'Could not authenticate with the provided credentials.',
  forbidden: 'The authentication you provided does not have rights to perform that action.',
  notFound: 'Could not find the resource you were looking for.',
  draft: 'You tried to access a draft testing endpoint, but it does not exist anymore or your access is no longer valid. If the form has been published and you would like to submit to it, you should configure your device with an App User token. If there is a new draft, you may have to reconfigure your device from the draft settings.',
} as const;

/** Central's recorded OpenRosa error bodies (shared/fixtures/central-outputs/_errors). */
const centralError = (slug: string) =>
  JSON.parse(readFileSync(new URL(`../../../../shared/fixtures/central-outputs/_errors/${slug}.json`, import.meta.url), 'utf8')) as
    { status: number; contentType: string; body: string };

/** Asserts an OpenRosaResponse error: status, text/xml, OpenRosa headers, one `nature="error"` message. */
async function expectOpenRosaError(res: Response, status: number, message: string): Promise<void> {
  const body = await res.text();
  expect(res.status, body).toBe(status);
  expect(res.headers.get('content-type')).toBe('text/xml; charset=utf-8');
  expect(res.headers.get('x-openrosa-version')).toBe('1.0');
  expect(res.headers.get('x-openrosa-accept-content-length')).toBe('100000000');
  const root = parseXml(body);
  expect(root).toEqual({
    local: 'OpenRosaResponse', uri: OR_RESPONSE, attrs: { xmlns: OR_RESPONSE, items: '0' }, text: expect.any(String),
    children: [{ local: 'message', uri: OR_RESPONSE, attrs: { nature: 'error' }, children: [], text: message }],
  });
}

// ---------------------------------------------------------------------------------------------
// Setup

const md5 = (b: Uint8Array | string) => createHash('md5').update(b).digest('hex');
const OR = { 'X-OpenRosa-Version': '1.0' };
const fixture = (name: string) =>
  readFileSync(new URL(`../../../../shared/fixtures/forms/${name}.xml`, import.meta.url), 'utf8');

/** simple.xml under another form id (and title, or none). */
function simpleAs(xmlFormId: string, title: string | null = `Simple ${xmlFormId}`): string {
  const xml = fixture('simple').replace('id="simple"', `id="${xmlFormId}"`);
  return title == null ? xml.replace(/\s*<h:title>Simple<\/h:title>/, '') : xml.replace('<h:title>Simple</h:title>', `<h:title>${title}</h:title>`);
}

const FILES = {
  'goodone.csv': { bytes: new TextEncoder().encode('name,label\nnorth,North\nsouth,South\n'), type: 'text/csv' },
  'goodtwo.mp3': { bytes: Uint8Array.from({ length: 2048 }, (_, i) => (i * 37 + 11) % 256), type: 'audio/mpeg' },
} as const;
type FileName = keyof typeof FILES;

const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const F = (h: Harness, xmlFormId: string) => `${P(h)}/forms/${encodeURIComponent(xmlFormId)}`;

/** Creates a form as bob (published unless `publish: false`); returns the form JSON. */
async function createForm(h: Harness, xml: string, publish = true) {
  const res = await h.post(`${P(h)}/forms${publish ? '?publish=true' : ''}`, {
    as: 'bob', body: xml, headers: { 'Content-Type': 'application/xml' },
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return json(res);
}

async function uploadDraftAttachment(h: Harness, xmlFormId: string, name: FileName): Promise<void> {
  const res = await h.post(`${F(h, xmlFormId)}/draft/attachments/${name}`, {
    as: 'bob', body: FILES[name].bytes, headers: { 'Content-Type': FILES[name].type },
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function publishDraft(h: Harness, xmlFormId: string): Promise<void> {
  const res = await h.post(`${F(h, xmlFormId)}/draft/publish`, { as: 'bob' });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** withAttachments as a draft with `files` uploaded, then published. */
async function createWithAttachments(h: Harness, files: FileName[] = ['goodone.csv', 'goodtwo.mp3'], publish = true) {
  await createForm(h, fixture('withAttachments'), false);
  for (const name of files) await uploadDraftAttachment(h, 'withAttachments', name);
  if (publish) await publishDraft(h, 'withAttachments');
}

interface AppUser { id: number; token: string }

async function createAppUser(h: Harness, displayName = 'Collector'): Promise<AppUser> {
  const res = await h.post(`${P(h)}/app-users`, { as: 'bob', body: { displayName } });
  expect(res.status).toBe(200);
  return json<AppUser>(res);
}

async function assign(h: Harness, xmlFormId: string, appUser: AppUser): Promise<void> {
  const res = await h.post(`${F(h, xmlFormId)}/assignments/app-user/${appUser.id}`, { as: 'bob' });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function setState(h: Harness, xmlFormId: string, state: 'open' | 'closing' | 'closed'): Promise<void> {
  const res = await h.patch(F(h, xmlFormId), { as: 'bob', body: { state } });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function grantProjectRole(h: Harness, role: string, actorId: number): Promise<void> {
  const res = await h.post(`${P(h)}/assignments/${role}/${actorId}`, { as: 'bob' });
  expect(res.status, await res.clone().text()).toBe(200);
}

const formList = (h: Harness, as: As, query = '') => h.get(`${P(h)}/formList${query}`, { as, headers: OR });
const manifest = (h: Harness, xmlFormId: string, as: As) => h.get(`${F(h, xmlFormId)}/manifest`, { as, headers: OR });
const ids = (list: ListedForm[]) => list.map((f) => f.formID).sort();

/** A URL of an OpenRosa document as a path the harness can request (same origin, http://localhost). */
function localPath(url: string): string {
  const u = new URL(url);
  expect(u.origin).toBe('http://localhost');
  return `${u.pathname}${u.search}`;
}

const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer());

/** Three published forms (simple, withrepeat, withAttachments with both files) and a draft-only one. */
async function seedForms(h: Harness) {
  await createForm(h, fixture('simple'));
  await createForm(h, fixture('withrepeat'));
  await createWithAttachments(h);
  await createForm(h, simpleAs('draftOnly'), false);
}

// ---------------------------------------------------------------------------------------------

describe('GET P/formList as an App User', () => {
  test('lists only its assigned forms, with Central\'s fields, hashes and key URLs', async () => {
    const h = await harness();
    await seedForms(h);
    const au = await createAppUser(h);
    await assign(h, 'simple', au);
    await assign(h, 'withAttachments', au);
    await assign(h, 'draftOnly', au); // assigned, but never published: not offered

    const res = await formList(h, { key: au.token });
    const list = await formListOf(res);
    expect(res.headers.get('cache-control')).toBe('private, no-cache');
    expect(ids(list)).toEqual(['simple', 'withAttachments']);

    const prefix = `http://localhost/v1/key/${au.token}/projects/${h.projectId}/forms`;
    const simple = list.find((f) => f.formID === 'simple')!;
    const simpleXml = fixture('simple');
    expect(simple).toEqual({
      formID: 'simple', name: 'Simple', version: '', hash: `md5:${md5(simpleXml)}`, downloadUrl: `${prefix}/simple.xml`,
    });
    // No h:title: the name is the xmlFormId; it expects media, so a manifestUrl.
    const withAttachments = list.find((f) => f.formID === 'withAttachments')!;
    expect(withAttachments).toEqual({
      formID: 'withAttachments', name: 'withAttachments', version: '', hash: `md5:${md5(fixture('withAttachments'))}`,
      downloadUrl: `${prefix}/withAttachments.xml`, manifestUrl: `${prefix}/withAttachments/manifest`,
    });
    // Central's hash for the same fixture (central-outputs/withAttachments/openrosa/formList.xml).
    expect(withAttachments.hash).toBe('md5:52382fdcde9218403b7e6c4a7e6462a1');

    // Downloading each downloadUrl gives the exact XML whose MD5 is listed.
    for (const f of list) {
      const dl = await h.get(localPath(f.downloadUrl));
      expect(dl.status).toBe(200);
      const bytes = await bytesOf(dl);
      expect(`md5:${md5(bytes)}`).toBe(f.hash);
    }
    const dl = await h.get(localPath(simple.downloadUrl));
    expect(await dl.text()).toBe(simpleXml);
  });

  test('version comes from the XML; a form without a title is named by its id', async () => {
    const h = await harness();
    await createForm(h, fixture('withrepeat'));
    await createForm(h, simpleAs('untitled', null));
    const au = await createAppUser(h);
    await assign(h, 'withrepeat', au);
    await assign(h, 'untitled', au);
    const list = await formListOf(await formList(h, { key: au.token }));
    expect(list.map((f) => [f.formID, f.name, f.version, f.manifestUrl])).toEqual(expect.arrayContaining([
      ['withrepeat', 'withrepeat', '1.0', undefined],
      ['untitled', 'untitled', '', undefined],
    ]));
    expect(list).toHaveLength(2);
  });

  test('a form expecting media lists a manifestUrl even before any file is uploaded', async () => {
    const h = await harness();
    await createWithAttachments(h, []);
    const au = await createAppUser(h);
    await assign(h, 'withAttachments', au);
    const [f] = await formListOf(await formList(h, { key: au.token }));
    expect(f!.manifestUrl).toBe(`http://localhost/v1/key/${au.token}/projects/${h.projectId}/forms/withAttachments/manifest`);
  });

  test('an App User with no assignments gets an empty list', async () => {
    const h = await harness();
    await seedForms(h);
    const au = await createAppUser(h);
    expect(await formListOf(await formList(h, { key: au.token }))).toEqual([]);
  });

  test('formID, deviceID, verbose and listAllVersions are accepted and ignored (spec: the list is the same)', async () => {
    const h = await harness();
    await seedForms(h);
    const au = await createAppUser(h);
    for (const id of ['simple', 'withrepeat', 'withAttachments']) await assign(h, id, au);
    const plain = await formListOf(await formList(h, { key: au.token }));
    expect(ids(plain)).toEqual(['simple', 'withAttachments', 'withrepeat']);
    for (const q of ['?formID=withAttachments', '?deviceID=collect%3Aabc123', '?verbose=true', '?listAllVersions=true',
      '?formID=simple&deviceID=x&verbose=true&listAllVersions=true']) {
      const res = await h.get(`${P(h)}/formList${q}`, { as: { key: au.token }, headers: { ...OR, 'Accept-Language': 'fr' } });
      expect(await formListOf(res), q).toEqual(plain);
    }
  });

  test('closing and closed forms are not offered; reopening offers them again', async () => {
    const h = await harness();
    await seedForms(h);
    const au = await createAppUser(h);
    for (const id of ['simple', 'withrepeat', 'withAttachments']) await assign(h, id, au);
    await setState(h, 'simple', 'closing');
    await setState(h, 'withrepeat', 'closed');
    expect(ids(await formListOf(await formList(h, { key: au.token })))).toEqual(['withAttachments']);
    await setState(h, 'simple', 'open');
    expect(ids(await formListOf(await formList(h, { key: au.token })))).toEqual(['simple', 'withAttachments']);
  });

  test('a deleted form is not offered', async () => {
    const h = await harness();
    await seedForms(h);
    const au = await createAppUser(h);
    await assign(h, 'simple', au);
    await assign(h, 'withrepeat', au);
    expect((await h.delete(F(h, 'simple'), { as: 'bob' })).status).toBe(200);
    expect(ids(await formListOf(await formList(h, { key: au.token })))).toEqual(['withrepeat']);
  });

  test('the listed hash follows the published version, not a newer draft', async () => {
    const h = await harness();
    await createForm(h, fixture('simple'));
    const au = await createAppUser(h);
    await assign(h, 'simple', au);
    const v2 = fixture('simple').replace('id="simple"', 'id="simple" version="2"');
    const draft = await h.post(`${F(h, 'simple')}/draft`, { as: 'bob', body: v2, headers: { 'Content-Type': 'application/xml' } });
    expect(draft.status).toBe(200);
    const [before] = await formListOf(await formList(h, { key: au.token }));
    expect(before).toMatchObject({ version: '', hash: `md5:${md5(fixture('simple'))}` });
    await publishDraft(h, 'simple');
    const [after] = await formListOf(await formList(h, { key: au.token }));
    expect(after).toMatchObject({ version: '2', hash: `md5:${md5(v2)}` });
    expect(await (await h.get(localPath(after!.downloadUrl))).text()).toBe(v2);
  });
});

describe('GET P/formList served again (a list is rendered once per content)', () => {
  test('two App Users with the same forms each get their own key URLs; a revoked assignment leaves the list at once', async () => {
    const h = await harness();
    await seedForms(h);
    const [a, b] = [await createAppUser(h, 'A'), await createAppUser(h, 'B')];
    for (const au of [a, b]) for (const id of ['simple', 'withAttachments']) await assign(h, id, au);
    for (let round = 0; round < 2; round += 1) {
      for (const au of [a, b]) {
        const list = await formListOf(await formList(h, { key: au.token }));
        expect(ids(list)).toEqual(['simple', 'withAttachments']);
        for (const f of list) expect(f.downloadUrl).toBe(`http://localhost/v1/key/${au.token}/projects/${h.projectId}/forms/${f.formID}.xml`);
      }
    }
    const revoke = await h.delete(`${F(h, 'simple')}/assignments/app-user/${a.id}`, { as: 'bob' });
    expect(revoke.status, await revoke.clone().text()).toBe(200);
    expect(ids(await formListOf(await formList(h, { key: a.token })))).toEqual(['withAttachments']);
    expect(ids(await formListOf(await formList(h, { key: b.token })))).toEqual(['simple', 'withAttachments']);
    // Assigned again: the list A saw before is right again, and served as such.
    await assign(h, 'simple', a);
    expect(ids(await formListOf(await formList(h, { key: a.token })))).toEqual(['simple', 'withAttachments']);
  });

  test('a list served before changes at once when a form closes, is deleted or a project role is revoked', async () => {
    const h = await harness();
    await seedForms(h);
    const au = await createAppUser(h);
    for (const id of ['simple', 'withrepeat', 'withAttachments']) await assign(h, id, au);
    await grantProjectRole(h, 'formfill', h.ids.chelsea);
    const all = ['simple', 'withAttachments', 'withrepeat'];
    for (let round = 0; round < 2; round += 1) {
      expect(ids(await formListOf(await formList(h, { key: au.token })))).toEqual(all);
      expect(ids(await formListOf(await formList(h, 'chelsea')))).toEqual(all);
    }
    await setState(h, 'withrepeat', 'closing');
    expect(ids(await formListOf(await formList(h, { key: au.token })))).toEqual(['simple', 'withAttachments']);
    expect(ids(await formListOf(await formList(h, 'chelsea')))).toEqual(['simple', 'withAttachments']);
    expect((await h.delete(F(h, 'simple'), { as: 'bob' })).status).toBe(200);
    expect(ids(await formListOf(await formList(h, { key: au.token })))).toEqual(['withAttachments']);
    expect(ids(await formListOf(await formList(h, 'chelsea')))).toEqual(['withAttachments']);
    const revoke = await h.delete(`${P(h)}/assignments/formfill/${h.ids.chelsea}`, { as: 'bob' });
    expect(revoke.status, await revoke.clone().text()).toBe(200);
    expect(await formListOf(await formList(h, 'chelsea'))).toEqual([]);
    expect(ids(await formListOf(await formList(h, { key: au.token })))).toEqual(['withAttachments']);
  });

  test('changes written by another process (plain SQL, none of this server\'s code) are seen by the next poll', async () => {
    const h = await harness();
    await seedForms(h);
    const au = await createAppUser(h);
    for (const id of ['simple', 'withrepeat', 'withAttachments']) await assign(h, id, au);
    const list = async () => formListOf(await formList(h, { key: au.token }));
    const first = await formList(h, { key: au.token });
    const body = await first.text();
    // Unchanged: the same document again, byte for byte.
    expect(await (await formList(h, { key: au.token })).text()).toBe(body);
    await h.db.execute(sql`update forms set state = 'closed' where xml_form_id = 'withrepeat' and project_id = ${h.projectId}`);
    expect(ids(await list())).toEqual(['simple', 'withAttachments']);
    await h.db.execute(sql`delete from assignments where actor_id = ${au.id}
      and actee_id = (select actee_id from forms where xml_form_id = 'simple' and project_id = ${h.projectId})`);
    expect(ids(await list())).toEqual(['withAttachments']);
    await h.db.execute(sql`update forms set state = 'open' where xml_form_id = 'withrepeat' and project_id = ${h.projectId}`);
    expect(ids(await list())).toEqual(['withAttachments', 'withrepeat']);
    // Assigned again by another process: listed again.
    await h.db.execute(sql`insert into assignments (actor_id, role_id, actee_id)
      select ${au.id}, r.id, f.actee_id from roles r, forms f where r.system = 'app-user' and f.xml_form_id = 'simple' and f.project_id = ${h.projectId}`);
    expect(ids(await list())).toEqual(['simple', 'withAttachments', 'withrepeat']);
    // The project deleted: 404.
    await h.db.execute(sql`update projects set deleted_at = now() where id = ${h.projectId}`);
    expect((await formList(h, { key: au.token })).status).toBe(404);
  });

  test('a definition id that comes to hold other XML (a restored database) is listed with its new hash', async () => {
    const h = await harness();
    await createForm(h, fixture('simple'));
    const au = await createAppUser(h);
    await assign(h, 'simple', au);
    const [before] = await formListOf(await formList(h, { key: au.token }));
    expect(before!.hash).toBe(`md5:${md5(fixture('simple'))}`);
    // The same definition row, as a restore from another server could leave it: other XML and name.
    const [form] = await h.db.select().from(forms).where(eq(forms.xmlFormId, 'simple'));
    await h.db.update(formDefs).set({ hash: md5('other'), name: 'Restored' }).where(eq(formDefs.id, form!.currentDefId!));
    const [after] = await formListOf(await formList(h, { key: au.token }));
    expect(after).toMatchObject({ formID: 'simple', name: 'Restored', hash: `md5:${md5('other')}` });
  });
});

describe('GET P/formList as web users', () => {
  test('a Data Collector (formfill) sees every open published form of the project', async () => {
    const h = await harness();
    await seedForms(h);
    await createForm(h, simpleAs('closingOne'));
    await createForm(h, simpleAs('closedOne'));
    await setState(h, 'closingOne', 'closing');
    await setState(h, 'closedOne', 'closed');
    await grantProjectRole(h, 'formfill', h.ids.chelsea);
    const list = await formListOf(await formList(h, 'chelsea'));
    expect(ids(list)).toEqual(['simple', 'withAttachments', 'withrepeat']);
    // Bearer: plain /v1 URLs, no key prefix.
    expect(list.find((f) => f.formID === 'simple')!.downloadUrl).toBe(`http://localhost/v1/projects/${h.projectId}/forms/simple.xml`);
    expect(list.find((f) => f.formID === 'withAttachments')!.manifestUrl)
      .toBe(`http://localhost/v1/projects/${h.projectId}/forms/withAttachments/manifest`);
  });

  test('a project viewer (form.read) sees the open published forms, like a manager', async () => {
    const h = await harness();
    await seedForms(h);
    await createForm(h, simpleAs('closedOne'));
    await setState(h, 'closedOne', 'closed');
    await grantProjectRole(h, 'viewer', h.ids.chelsea);
    expect(ids(await formListOf(await formList(h, 'chelsea')))).toEqual(['simple', 'withAttachments', 'withrepeat']);
  });

  test('alice (admin) and bob (manager) see all open published forms; no drafts, closing or closed forms', async () => {
    const h = await harness();
    await seedForms(h);
    await createForm(h, simpleAs('closingOne'));
    await setState(h, 'closingOne', 'closing');
    for (const who of ['alice', 'bob'] as const) {
      expect(ids(await formListOf(await formList(h, who))), who).toEqual(['simple', 'withAttachments', 'withrepeat']);
    }
  });

  test('chelsea with no role: an empty list', async () => {
    const h = await harness();
    await seedForms(h);
    expect(await formListOf(await formList(h, 'chelsea'))).toEqual([]);
  });

  test('unknown project → 404 OpenRosa XML', async () => {
    const h = await harness();
    await expectOpenRosaError(await h.get('/v1/projects/999999/formList', { as: 'alice', headers: OR }), 404, MESSAGES.notFound);
  });
});

describe('OpenRosa request errors', () => {
  test('missing X-OpenRosa-Version → 400 OpenRosa XML (Central 400.6)', async () => {
    const h = await harness();
    await createForm(h, fixture('simple'));
    const central = centralError('400.6-openrosa-header-missing');
    const res = await h.get(`${P(h)}/formList`, { as: 'alice' });
    expect(res.status).toBe(central.status);
    expect(res.headers.get('content-type')).toBe(central.contentType);
    const body = await res.clone().text();
    expect(parseXml(body)).toEqual(parseXml(central.body));
    await expectOpenRosaError(res, 400, MESSAGES.header);
  });

  test.each(['2.0', '1', '1.1', ''])('X-OpenRosa-Version %j → 400 OpenRosa XML', async (version) => {
    const h = await harness();
    await createForm(h, fixture('simple'));
    const au = await createAppUser(h);
    await assign(h, 'simple', au);
    const headers = { 'X-OpenRosa-Version': version };
    await expectOpenRosaError(await h.get(`${P(h)}/formList`, { as: { key: au.token }, headers }), 400, MESSAGES.header);
    await expectOpenRosaError(await h.get(`${F(h, 'simple')}/manifest`, { as: { key: au.token }, headers }), 400, MESSAGES.header);
  });

  test('anonymous formList → 401 OpenRosa XML (authentication is always required)', async () => {
    const h = await harness();
    await expectOpenRosaError(await formList(h, 'anonymous'), 401, MESSAGES.auth);
  });

  test('a malformed key → 401 XML (Central 401.2); a well-formed unknown key → 403 XML', async () => {
    const h = await harness();
    const central = centralError('401.2-appuser-key-malformed');
    const malformed = await h.get(`/v1/key/not-a-token/projects/${h.projectId}/formList`, { headers: OR });
    expect(parseXml(await malformed.clone().text())).toEqual(parseXml(central.body));
    await expectOpenRosaError(malformed, 401, MESSAGES.auth);
    await expectOpenRosaError(await formList(h, { key: 'A'.repeat(64) }), 403, MESSAGES.forbidden);
    await expectOpenRosaError(await manifest(h, 'simple', { key: 'A'.repeat(64) }), 403, MESSAGES.forbidden);
  });

  test('a deleted App User\'s key → 403 XML', async () => {
    const h = await harness();
    await createForm(h, fixture('simple'));
    const au = await createAppUser(h);
    await assign(h, 'simple', au);
    expect((await h.delete(`${P(h)}/app-users/${au.id}`, { as: 'bob' })).status).toBe(200);
    await expectOpenRosaError(await formList(h, { key: au.token }), 403, MESSAGES.forbidden);
  });
});

describe('GET F/manifest', () => {
  test('one mediaFile per uploaded file with md5 hash and a key download URL that serves those bytes', async () => {
    const h = await harness();
    await createWithAttachments(h);
    const au = await createAppUser(h);
    await assign(h, 'withAttachments', au);
    const files = await manifestOf(await manifest(h, 'withAttachments', { key: au.token }));
    const base = `http://localhost/v1/key/${au.token}/projects/${h.projectId}/forms/withAttachments/attachments`;
    expect(files).toEqual([
      { filename: 'goodone.csv', hash: `md5:${md5(FILES['goodone.csv'].bytes)}`, downloadUrl: `${base}/goodone.csv` },
      { filename: 'goodtwo.mp3', hash: `md5:${md5(FILES['goodtwo.mp3'].bytes)}`, downloadUrl: `${base}/goodtwo.mp3` },
    ]);
    for (const f of files) {
      const dl = await h.get(localPath(f.downloadUrl));
      expect(dl.status).toBe(200);
      const bytes = await bytesOf(dl);
      expect(`md5:${md5(bytes)}`).toBe(f.hash);
      expect(bytes).toEqual(FILES[f.filename as FileName].bytes);
    }
  });

  test('files the server does not hold are not listed', async () => {
    const h = await harness();
    await createWithAttachments(h, ['goodone.csv']);
    const au = await createAppUser(h);
    await assign(h, 'withAttachments', au);
    const files = await manifestOf(await manifest(h, 'withAttachments', { key: au.token }));
    expect(files.map((f) => f.filename)).toEqual(['goodone.csv']);
    // and a form that expects nothing has an empty manifest
    await createForm(h, fixture('simple'));
    await assign(h, 'simple', au);
    expect(await manifestOf(await manifest(h, 'simple', { key: au.token }))).toEqual([]);
  });

  test('Bearer users get plain /v1 download URLs', async () => {
    const h = await harness();
    await createWithAttachments(h, ['goodtwo.mp3']);
    const files = await manifestOf(await manifest(h, 'withAttachments', 'bob'));
    expect(files).toEqual([{
      filename: 'goodtwo.mp3', hash: `md5:${md5(FILES['goodtwo.mp3'].bytes)}`,
      downloadUrl: `http://localhost/v1/projects/${h.projectId}/forms/withAttachments/attachments/goodtwo.mp3`,
    }]);
  });

  test('unknown form → 404 OpenRosa XML (Central 404.1)', async () => {
    const h = await harness();
    const central = centralError('404.1-openrosa-manifest-not-found');
    const res = await manifest(h, 'nope', 'alice');
    expect(parseXml(await res.clone().text())).toEqual(parseXml(central.body));
    await expectOpenRosaError(res, 404, MESSAGES.notFound);
  });

  test('a draft-only form has no published manifest → 404 XML', async () => {
    const h = await harness();
    await createWithAttachments(h, ['goodone.csv'], false);
    await expectOpenRosaError(await manifest(h, 'withAttachments', 'bob'), 404, MESSAGES.notFound);
  });

  test('an App User not assigned to the form → 403 XML', async () => {
    const h = await harness();
    await createWithAttachments(h);
    await createForm(h, fixture('simple'));
    const au = await createAppUser(h);
    await assign(h, 'simple', au);
    await expectOpenRosaError(await manifest(h, 'withAttachments', { key: au.token }), 403, MESSAGES.forbidden);
  });

  test('closed form: the App User is refused (403 XML); closing is still readable', async () => {
    const h = await harness();
    await createWithAttachments(h);
    const au = await createAppUser(h);
    await assign(h, 'withAttachments', au);
    await setState(h, 'withAttachments', 'closing');
    expect(await manifestOf(await manifest(h, 'withAttachments', { key: au.token }))).toHaveLength(2);
    await setState(h, 'withAttachments', 'closed');
    await expectOpenRosaError(await manifest(h, 'withAttachments', { key: au.token }), 403, MESSAGES.forbidden);
    expect(await manifestOf(await manifest(h, 'withAttachments', 'bob'))).toHaveLength(2);
  });
});

describe('App User downloads: F.xml and F/attachments/{name}', () => {
  test('only for assigned forms (403 otherwise) and never for closed forms', async () => {
    const h = await harness();
    await createWithAttachments(h);
    await createForm(h, fixture('simple'));
    const au = await createAppUser(h);
    await assign(h, 'withAttachments', au);
    const key = { key: au.token };

    const xml = await h.get(`${F(h, 'withAttachments')}.xml`, { as: key });
    expect(xml.status).toBe(200);
    expect(await xml.text()).toBe(fixture('withAttachments'));
    const csv = await h.get(`${F(h, 'withAttachments')}/attachments/goodone.csv`, { as: key });
    expect(csv.status).toBe(200);
    expect(await bytesOf(csv)).toEqual(FILES['goodone.csv'].bytes);
    expect(csv.headers.get('etag')).toBe(`"${md5(FILES['goodone.csv'].bytes)}"`);

    // Not assigned to simple.
    expect((await h.get(`${F(h, 'simple')}.xml`, { as: key })).status).toBe(403);
    // An uploaded-but-missing name on an assigned form is a 404.
    expect((await h.get(`${F(h, 'withAttachments')}/attachments/nothere.csv`, { as: key })).status).toBe(404);

    // A second App User, assigned nowhere.
    const other = await createAppUser(h, 'Other');
    expect((await h.get(`${F(h, 'withAttachments')}.xml`, { as: { key: other.token } })).status).toBe(403);
    expect((await h.get(`${F(h, 'withAttachments')}/attachments/goodone.csv`, { as: { key: other.token } })).status).toBe(403);

    await setState(h, 'withAttachments', 'closed');
    expect((await h.get(`${F(h, 'withAttachments')}.xml`, { as: key })).status).toBe(403);
    expect((await h.get(`${F(h, 'withAttachments')}/attachments/goodone.csv`, { as: key })).status).toBe(403);
    // bob (form.read) still reads a closed form
    expect((await h.get(`${F(h, 'withAttachments')}.xml`, { as: 'bob' })).status).toBe(200);
  });
});

describe('Draft Token paths /v1/test/{token}/projects/{p}/forms/{f}/draft/…', () => {
  async function draftToken(h: Harness, xmlFormId: string): Promise<string> {
    const res = await h.get(`${F(h, xmlFormId)}/draft`, { as: 'bob' });
    expect(res.status).toBe(200);
    const { draftToken: token } = await json<{ draftToken: string }>(res);
    expect(token).toEqual(expect.any(String));
    return token;
  }
  const T = (h: Harness, token: string, xmlFormId: string) => `/v1/test/${token}/projects/${h.projectId}/forms/${xmlFormId}/draft`;

  test('formList lists only the draft, with draft URLs; the XML and media download with no other authentication', async () => {
    const h = await harness();
    await createForm(h, fixture('simple'));
    await createWithAttachments(h, ['goodone.csv', 'goodtwo.mp3'], false);
    const token = await draftToken(h, 'withAttachments');
    const base = `http://localhost${T(h, token, 'withAttachments')}`;

    const list = await formListOf(await h.get(`${T(h, token, 'withAttachments')}/formList`, { headers: OR }));
    expect(list).toEqual([{
      formID: 'withAttachments', name: 'withAttachments', version: '', hash: `md5:${md5(fixture('withAttachments'))}`,
      downloadUrl: `${base}.xml`, manifestUrl: `${base}/manifest`,
    }]);

    const xml = await h.get(localPath(list[0]!.downloadUrl));
    expect(xml.status).toBe(200);
    expect(`md5:${md5(await bytesOf(xml))}`).toBe(list[0]!.hash);

    const files = await manifestOf(await h.get(localPath(list[0]!.manifestUrl!), { headers: OR }));
    expect(files).toEqual([
      { filename: 'goodone.csv', hash: `md5:${md5(FILES['goodone.csv'].bytes)}`, downloadUrl: `${base}/attachments/goodone.csv` },
      { filename: 'goodtwo.mp3', hash: `md5:${md5(FILES['goodtwo.mp3'].bytes)}`, downloadUrl: `${base}/attachments/goodtwo.mp3` },
    ]);
    for (const f of files) {
      const dl = await h.get(localPath(f.downloadUrl));
      expect(dl.status).toBe(200);
      expect(`md5:${md5(await bytesOf(dl))}`).toBe(f.hash);
    }
  });

  test('a token with $ and ! is echoed as is in the draft URLs (as Central, which reuses the request path)', async () => {
    const h = await harness();
    await createWithAttachments(h, ['goodone.csv'], false);
    const token = `${'x'.repeat(30)}$!${'y'.repeat(30)}$!`;
    await h.db.update(forms).set({ draftToken: token }).where(eq(forms.xmlFormId, 'withAttachments'));
    expect(await draftToken(h, 'withAttachments')).toBe(token);
    const base = `http://localhost/v1/test/${token}/projects/${h.projectId}/forms/withAttachments/draft`;
    const [f] = await formListOf(await h.get(`${T(h, token, 'withAttachments')}/formList`, { headers: OR }));
    expect(f).toMatchObject({ downloadUrl: `${base}.xml`, manifestUrl: `${base}/manifest` });
    const files = await manifestOf(await h.get(localPath(f!.manifestUrl!), { headers: OR }));
    expect(files.map((m) => m.downloadUrl)).toEqual([`${base}/attachments/goodone.csv`]);
    expect((await h.get(localPath(files[0]!.downloadUrl))).status).toBe(200);
    expect((await h.get(localPath(f!.downloadUrl))).status).toBe(200);
  });

  test('a draft of a form without media lists no manifestUrl', async () => {
    const h = await harness();
    await createForm(h, simpleAs('drafty'), false);
    const token = await draftToken(h, 'drafty');
    const [f] = await formListOf(await h.get(`${T(h, token, 'drafty')}/formList`, { headers: OR }));
    expect(f).toEqual({
      formID: 'drafty', name: 'Simple drafty', version: '', hash: `md5:${md5(simpleAs('drafty'))}`,
      downloadUrl: `http://localhost${T(h, token, 'drafty')}.xml`,
    });
  });

  test('draft formList and manifest require X-OpenRosa-Version', async () => {
    const h = await harness();
    await createWithAttachments(h, ['goodone.csv'], false);
    const token = await draftToken(h, 'withAttachments');
    await expectOpenRosaError(await h.get(`${T(h, token, 'withAttachments')}/formList`), 400, MESSAGES.header);
    await expectOpenRosaError(await h.get(`${T(h, token, 'withAttachments')}/manifest`), 400, MESSAGES.header);
  });

  test('after publish the token is dead: 404 XML (Central 404.4) on every draft path', async () => {
    const h = await harness();
    await createWithAttachments(h, ['goodone.csv'], false);
    const token = await draftToken(h, 'withAttachments');
    expect((await h.get(`${T(h, token, 'withAttachments')}/formList`, { headers: OR })).status).toBe(200);
    await publishDraft(h, 'withAttachments');
    const central = centralError('404.4-draft-test-token-invalid');
    const res = await h.get(`${T(h, token, 'withAttachments')}/formList`, { headers: OR });
    expect(parseXml(await res.clone().text())).toEqual(parseXml(central.body));
    await expectOpenRosaError(res, 404, MESSAGES.draft);
    await expectOpenRosaError(await h.get(`${T(h, token, 'withAttachments')}/manifest`, { headers: OR }), 404, MESSAGES.draft);
    await expectOpenRosaError(await h.get(`${T(h, token, 'withAttachments')}.xml`), 404, MESSAGES.draft);
    await expectOpenRosaError(await h.get(`${T(h, token, 'withAttachments')}/attachments/goodone.csv`), 404, MESSAGES.draft);
  });

  test('after DELETE F/draft the token is dead: 404.4 XML', async () => {
    const h = await harness();
    await createForm(h, fixture('simple'));
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'bob' })).status).toBe(200);
    const token = await draftToken(h, 'simple');
    expect((await h.get(`${T(h, token, 'simple')}.xml`)).status).toBe(200);
    expect((await h.delete(`${F(h, 'simple')}/draft`, { as: 'bob' })).status).toBe(200);
    await expectOpenRosaError(await h.get(`${T(h, token, 'simple')}/formList`, { headers: OR }), 404, MESSAGES.draft);
    await expectOpenRosaError(await h.get(`${T(h, token, 'simple')}.xml`), 404, MESSAGES.draft);
  });

  test('a wrong token, or the right token on another form → 404.4 XML', async () => {
    const h = await harness();
    await createForm(h, simpleAs('draftA'), false);
    await createForm(h, simpleAs('draftB'), false);
    const token = await draftToken(h, 'draftA');
    await expectOpenRosaError(await h.get(`${T(h, 'B'.repeat(64), 'draftA')}/formList`, { headers: OR }), 404, MESSAGES.draft);
    await expectOpenRosaError(await h.get(`${T(h, token, 'draftB')}/formList`, { headers: OR }), 404, MESSAGES.draft);
    await expectOpenRosaError(await h.get(`/v1/test/${token}/projects/999999/forms/draftA/draft/formList`, { headers: OR }), 404, MESSAGES.draft);
  });

  test('an unuploaded draft attachment through the token → 404', async () => {
    const h = await harness();
    await createWithAttachments(h, ['goodone.csv'], false);
    const token = await draftToken(h, 'withAttachments');
    expect((await h.get(`${T(h, token, 'withAttachments')}/attachments/goodtwo.mp3`)).status).toBe(404);
  });
});

describe('role matrix', () => {
  type Who = 'anonymous' | 'alice' | 'bob' | 'chelsea' | 'assigned App User' | 'unassigned App User';
  const whoAs = (who: Who, assigned: AppUser, unassigned: AppUser): As =>
    who === 'assigned App User' ? { key: assigned.token } : who === 'unassigned App User' ? { key: unassigned.token } : who;

  async function setup(h: Harness) {
    await createWithAttachments(h);
    await createForm(h, fixture('simple'));
    const assigned = await createAppUser(h, 'Assigned');
    const unassigned = await createAppUser(h, 'Unassigned');
    await assign(h, 'withAttachments', assigned);
    return { assigned, unassigned };
  }

  test.each<[Who, number, string[] | null]>([
    ['anonymous', 401, null],
    ['alice', 200, ['simple', 'withAttachments']],
    ['bob', 200, ['simple', 'withAttachments']],
    ['chelsea', 200, []],
    ['assigned App User', 200, ['withAttachments']],
    ['unassigned App User', 200, []],
  ])('GET P/formList as %s → %i', async (who, status, listed) => {
    const h = await harness();
    const { assigned, unassigned } = await setup(h);
    const res = await formList(h, whoAs(who, assigned, unassigned));
    if (listed == null) await expectOpenRosaError(res, status, MESSAGES.auth);
    else expect(ids(await formListOf(res))).toEqual(listed);
  });

  test.each<[Who, number, string | null]>([
    ['anonymous', 401, MESSAGES.auth],
    ['alice', 200, null],
    ['bob', 200, null],
    ['chelsea', 403, MESSAGES.forbidden],
    ['assigned App User', 200, null],
    ['unassigned App User', 403, MESSAGES.forbidden],
  ])('GET F/manifest as %s → %i', async (who, status, message) => {
    const h = await harness();
    const { assigned, unassigned } = await setup(h);
    const res = await manifest(h, 'withAttachments', whoAs(who, assigned, unassigned));
    if (message != null) await expectOpenRosaError(res, status, message);
    else expect((await manifestOf(res)).map((f) => f.filename)).toEqual(['goodone.csv', 'goodtwo.mp3']);
  });
});

describe('Collect flow over a real socket', () => {
  test('App User: formList → form XML → manifest → every media file, hashes verified', async () => {
    const h = await harness();
    const base = await h.listen();
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const bob = { Authorization: `Bearer ${'B'.repeat(62)}ob` };
    const post = (path: string, body: BodyInit, headers: Record<string, string>) =>
      fetch(`${base}${path}`, { method: 'POST', headers: { ...bob, ...headers }, body });
    const P1 = `/v1/projects/${h.projectId}`;

    // Set up through the socket too: a form with media, a plain one, an App User assigned to the first.
    expect((await post(`${P1}/forms`, fixture('withAttachments'), { 'Content-Type': 'application/xml' })).status).toBe(200);
    for (const [name, f] of Object.entries(FILES)) {
      expect((await post(`${P1}/forms/withAttachments/draft/attachments/${name}`, f.bytes, { 'Content-Type': f.type })).status).toBe(200);
    }
    expect((await post(`${P1}/forms/withAttachments/draft/publish`, '', {})).status).toBe(200);
    expect((await post(`${P1}/forms?publish=true`, fixture('simple'), { 'Content-Type': 'application/xml' })).status).toBe(200);
    const au = (await (await post(`${P1}/app-users`, JSON.stringify({ displayName: 'Collect' }), { 'Content-Type': 'application/json' })).json()) as AppUser;
    expect((await post(`${P1}/forms/withAttachments/assignments/app-user/${au.id}`, '', {})).status).toBe(200);

    // Collect: the configured server URL is {base}/v1/key/{token}/projects/{id}.
    const server = `${base}/v1/key/${au.token}/projects/${h.projectId}`;
    const list = await formListOf(await fetch(`${server}/formList`, { headers: OR }));
    expect(ids(list)).toEqual(['withAttachments']);
    const [form] = list;
    expect(form!.downloadUrl).toBe(`${server}/forms/withAttachments.xml`);
    expect(form!.manifestUrl).toBe(`${server}/forms/withAttachments/manifest`);

    const xml = await fetch(form!.downloadUrl, { headers: OR });
    expect(xml.status).toBe(200);
    const xmlBytes = await bytesOf(xml);
    expect(`md5:${md5(xmlBytes)}`).toBe(form!.hash);

    const media = await manifestOf(await fetch(form!.manifestUrl!, { headers: OR }));
    expect(media.map((m) => m.filename)).toEqual(['goodone.csv', 'goodtwo.mp3']);
    for (const m of media) {
      expect(m.downloadUrl.startsWith(`${server}/forms/withAttachments/attachments/`)).toBe(true);
      const res = await fetch(m.downloadUrl, { headers: OR });
      expect(res.status).toBe(200);
      const bytes = await bytesOf(res);
      expect(`md5:${md5(bytes)}`).toBe(m.hash);
      expect(bytes).toEqual(FILES[m.filename as FileName].bytes);
    }

    // Without the header the list is refused, over the wire too.
    await expectOpenRosaError(await fetch(`${server}/formList`), 400, MESSAGES.header);
  });
});

describe('draft testing without a Draft Token (spec, Authentication 5)', () => {
  test('a manager gets F/draft/formList and F/draft/manifest; the URLs lead to the draft XML and files', async () => {
    const h = await harness();
    await createWithAttachments(h, ['goodone.csv'], false);
    const [listed] = await formListOf(await h.get(`${F(h, 'withAttachments')}/draft/formList`, { as: 'bob', headers: OR }));
    expect(listed!.formID).toBe('withAttachments');
    expect(new URL(listed!.downloadUrl).pathname).toBe(`${F(h, 'withAttachments')}/draft.xml`);
    expect(new URL(listed!.manifestUrl!).pathname).toBe(`${F(h, 'withAttachments')}/draft/manifest`);
    const xml = await h.get(new URL(listed!.downloadUrl).pathname, { as: 'bob' });
    expect(md5(new Uint8Array(await xml.arrayBuffer()))).toBe(listed!.hash.replace(/^md5:/, ''));
    const media = await manifestOf(await h.get(new URL(listed!.manifestUrl!).pathname, { as: 'bob', headers: OR }));
    expect(media.map((m) => m.filename)).toEqual(['goodone.csv']);
    const file = await h.get(new URL(media[0]!.downloadUrl).pathname, { as: 'bob' });
    expect(md5(new Uint8Array(await file.arrayBuffer()))).toBe(media[0]!.hash.replace(/^md5:/, ''));
  });

  test('rights and errors: chelsea 403 XML, anonymous 401 XML, no draft 404 XML, header required', async () => {
    const h = await harness();
    await createForm(h, fixture('simple'));
    const path = `${F(h, 'simple')}/draft/formList`;
    await expectOpenRosaError(await h.get(path, { as: 'bob', headers: OR }), 404, MESSAGES.notFound);
    await h.post(`${F(h, 'simple')}/draft`, { as: 'bob' });
    expect((await h.get(path, { as: 'chelsea', headers: OR })).status).toBe(403);
    expect((await h.get(path, { headers: OR })).status).toBe(401);
    expect((await h.get(path, { as: 'bob' })).status).toBe(400);
    expect((await h.get(path, { as: 'bob', headers: OR })).status).toBe(200);
  });
});
