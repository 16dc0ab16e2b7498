/**
 * The whole web-UI session of /work/shared/reference/web-ui-requests.md, replayed in order over a
 * real socket as central-frontend makes it: a new administrator logs in with POST /v1/sessions and
 * from then on is authenticated only by the cookies that response set, sending
 * `X-Requested-With: XMLHttpRequest` and the CSRF token on every non-GET. One test per row of the
 * list, asserting Central's status and the response's shape (key order against Central's captures
 * in central-outputs where one exists). The tests of this file share one server and one
 * transaction (rolled back at the end), so they run in order and each sees what the earlier ones did.
 *
 * Steps marked "extra" are not rows of the list: the first visit's preference PUTs (the document
 * mentions them), checks the issue asks for (preferences in extended users/current, 404.1/400.23,
 * draft/dataset-diff, the Web Forms submission showing in the OData queries), and setup a real UI
 * session would have gotten elsewhere (submissions from a device; the Web Form's tab logging in).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { fixtureUsers } from '../../fixtures/users';
import { Browser, centralJson, parseSetCookies, standInUi, suiteServer, uiRequestRows, type StandInUi, type SuiteServer, type UiRow } from './helpers';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const XML_FORM_ID = 'webui';
const FORM_XML = `<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa" xmlns:odk="http://www.opendatakit.org/xforms">
  <h:head>
    <h:title>Web UI form</h:title>
    <model odk:xforms-version="1.0.0">
      <instance>
        <data id="${XML_FORM_ID}" version="2026.1">
          <meta><instanceID/></meta>
          <name/>
          <age/>
          <location/>
        </data>
      </instance>
      <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
      <bind nodeset="/data/name" type="string"/>
      <bind nodeset="/data/age" type="int"/>
      <bind nodeset="/data/location" type="geopoint"/>
    </model>
  </h:head>
  <h:body>
    <input ref="/data/name"><label>Name</label></input>
    <input ref="/data/age"><label>Age</label></input>
    <input ref="/data/location"><label>Where</label></input>
  </h:body>
</h:html>`;

const instance = (id: string, name: string, age: number, location: string) =>
  `<data xmlns:jr="http://openrosa.org/javarosa" xmlns:orx="http://openrosa.org/xforms" id="${XML_FORM_ID}" version="2026.1"><meta><instanceID>${id}</instanceID></meta><name>${name}</name><age>${age}</age><location>${location}</location></data>`;

const DEVICE_ID = 'uuid:device-1'; // sent from a device before the UI looks at the table
const TRASHED_ID = 'uuid:device-2'; // sent, then deleted: what `$filter=__system/deletedAt ne null` counts
const WEB_FORM_ID = 'uuid:9d3e6c4a-webforms-0001'; // what ODK Web Forms sends at the end
const WEB_FORM_DEVICE = 'abc'; // deviceID=wf:abc

const UI_USER = { email: 'new.admin@getodk.org', password: 'new-admin-password-1' };

const AUTH_FAILED = { message: 'Could not authenticate with the provided credentials.', code: 401.2 };
const NOT_FOUND = { message: 'Could not find the resource you were looking for.', code: 404.1 };
const SUCCESS = { success: true };

// Central's key orders, from its captures.
const formKeys = Object.keys(centralJson('simple/api/form'));
const formExtendedKeys = Object.keys(centralJson('simple/api/form-extended'));
const actorKeys = Object.keys(centralJson('simple/api/form-extended').createdBy);
const submissionKeys = Object.keys(centralJson('simple/api/submission'));
const versionKeys = Object.keys(centralJson('simple/api/submission').currentVersion);
const fieldKeys = Object.keys(centralJson('simple/api/fields')[0]);
const odataSystemKeys = Object.keys(centralJson('simple/odata/Submissions-one').value[0].__system);
const odataOneEnvelope = Object.keys(centralJson('simple/odata/Submissions-one'));
const odataCountEnvelope = Object.keys(centralJson('simple/odata/Submissions-count'));
const userKeys = ['email', 'lastLoginAt', ...actorKeys]; // Central's User frame: email, lastLoginAt, then its Actor
const projectKeys = ['id', 'name', 'description', 'archived', 'keyId', 'createdAt', 'updatedAt', 'deletedAt'];
const sessionKeys = ['token', 'csrf', 'expiresAt', 'createdAt']; // Central's Session frame
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** What the steps share: the server, the browser, ids learnt along the way. */
interface State {
  s: SuiteServer;
  b: Browser;
  ui: StandInUi;
  userId: number;
  projectId: number;
  session: Json;
}

interface Step {
  /** The row of the list this step replays; absent for an extra step. */
  row?: UiRow;
  /** Label of an extra step. */
  extra?: string;
  run(st: State): Promise<void>;
}

const readJson = async (res: Response): Promise<Json> => {
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return res.json();
};

/** `/v1/...` with the list's placeholders filled in, percent-encoded as the UI does. */
const fill = (st: State, path: string) => path
  .replaceAll('{projectId}', String(st.projectId))
  .replaceAll('{xmlFormId}', encodeURIComponent(XML_FORM_ID))
  .replaceAll('{instanceId}', encodeURIComponent(DEVICE_ID))
  .replaceAll('{id}', WEB_FORM_DEVICE);

/** A Bearer request as another client (a device, an admin script), outside the UI session. */
const asAlice = (st: State, method: string, path: string, body?: string, contentType?: string) =>
  fetch(st.s.base + path, {
    method,
    headers: { Authorization: `Bearer ${fixtureUsers.alice.token}`, ...(contentType ? { 'Content-Type': contentType } : {}) },
    body,
  });

const expectOData = async (res: Response) => {
  expect(res.status).toBe(200);
  expect(res.headers.get('odata-version')).toBe('4.0');
  return readJson(res);
};

const expectOneDeviceRow = (row: Json) => {
  expect(Object.keys(row)).toEqual(['meta', 'name', 'age', 'location', '__id', '__system']);
  expect(row.__id).toBe(DEVICE_ID);
  expect(row.meta).toEqual({ instanceID: DEVICE_ID });
  expect(row.name).toBe('Dana');
  expect(row.age).toBe(41);
  expect(row.location).toBe('POINT (36.8219 -1.2921 1650)'); // $wkt=true: lon lat alt, accuracy dropped
  expect(Object.keys(row.__system)).toEqual(odataSystemKeys);
  expect(row.__system).toMatchObject({ submitterName: 'alice', deviceId: 'collect:device-1', reviewState: null, deletedAt: null, formVersion: '2026.1', edits: 0 });
  expect(typeof row.__system.submitterId).toBe('string');
};

/**
 * The rows of the list, each with what to send and what to check. `row` is looked up by
 * (method, path, step) so the test below can prove the replay matches the document.
 */
function steps(rows: UiRow[]): Step[] {
  let next = 0;
  const row = (step: string, method: string, path: string): UiRow => {
    const found = rows.find((r, i) => i >= next && r.step === step && r.method === method && r.path === path);
    if (!found) throw new Error(`no row ${step} ${method} ${path} in web-ui-requests.md after #${next}`);
    next = rows.indexOf(found) + 1;
    return found;
  };
  /** Sends a row's request as the UI does and checks Central's status. */
  const send = async (st: State, r: UiRow, opts: { body?: unknown; headers?: Record<string, string> } = {}) => {
    const res = await st.b.request(r.method, fill(st, r.path), { ...opts, extended: r.extended });
    if (res.status !== r.status) throw new Error(`${r.method} ${r.path}: expected ${r.status}, got ${res.status}: ${await res.clone().text()}`);
    return res;
  };
  const odataTable = '/v1/projects/{projectId}/forms/{xmlFormId}.svc/Submissions?%24top=250&%24skip=0&%24count=true&%24wkt=true&%24orderby=__system%2FsubmissionDate+desc';

  const list: Step[] = [];
  const add = (r: UiRow, run: (st: State, r: UiRow) => Promise<void>) => list.push({ row: r, run: (st) => run(st, r) });
  const extra = (label: string, run: (st: State) => Promise<void>) => list.push({ extra: label, run });

  // ---- login-page ----
  add(row('login-page', 'GET', '/client-config.json'), async (st, r) => {
    const res = await send(st, r);
    expect(await readJson(res)).toEqual({});
  });
  add(row('login-page', 'GET', '/v1/sessions/restore'), async (st, r) => {
    const res = await send(st, r);
    expect(await readJson(res)).toEqual(AUTH_FAILED);
    expect(res.headers.getSetCookie()).toEqual([]);
  });
  add(row('login-page', 'GET', '/v1/config/public'), async (st, r) => {
    const body = await readJson(await send(st, r));
    // Nothing configured: none of login-appearance, logo, hero-image.
    expect(body).toEqual({});
  });

  // ---- login ----
  add(row('login', 'POST', '/v1/sessions'), async (st, r) => {
    const res = await send(st, r, { body: UI_USER });
    const body = await readJson(res);
    expect(Object.keys(body)).toEqual(sessionKeys);
    expect(body.expiresAt).toMatch(ISO);
    expect(body.createdAt).toMatch(ISO);
    const cookies = parseSetCookies(res);
    // Plain HTTP on loopback: `session`, not Secure (Chromium drops Secure cookies from
    // http://127.0.0.1), as Central configured with an http:// domain.
    const session = cookies.find((c) => c.name === 'session')!;
    const csrf = cookies.find((c) => c.name === '__csrf')!;
    expect(session.value).toBe(body.token);
    expect(session.attrs).toMatchObject({ httponly: '', samesite: 'Strict', path: '/' });
    expect(session.attrs).not.toHaveProperty('secure');
    expect(csrf.value).toBe(body.csrf);
    expect(csrf.attrs).not.toHaveProperty('httponly');
    expect(csrf.attrs).not.toHaveProperty('secure');
    // From here on the browser sends only these cookies.
    expect([...st.b.jar.keys()].sort()).toEqual(['__csrf', 'session']);
    st.session = body;
  });
  add(row('login', 'GET', '/v1/users/current'), async (st, r) => {
    const body = await readJson(await send(st, r));
    expect(Object.keys(body)).toEqual(['verbs', 'preferences', ...userKeys]);
    expect(body).toMatchObject({ id: st.userId, type: 'user', email: UI_USER.email });
    expect(body.preferences).toEqual({ site: {}, projects: {} });
    expect(body.verbs).toEqual(expect.arrayContaining(['project.create', 'config.read', 'user.list', 'assignment.list']));
  });
  add(row('login', 'GET', '/v1/config/analytics'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual(NOT_FOUND);
  });
  add(row('login', 'GET', '/v1/users'), async (st, r) => {
    const body = await readJson(await send(st, r));
    expect(Array.isArray(body)).toBe(true);
    for (const u of body) expect(Object.keys(u)).toEqual(userKeys);
    expect(body.map((u: Json) => u.email)).toEqual(expect.arrayContaining([UI_USER.email, fixtureUsers.alice.email]));
  });
  add(row('login', 'GET', '/v1/projects?forms=true&datasets=true'), async (st, r) => {
    const body = await readJson(await send(st, r));
    const project = body.find((p: Json) => p.id === st.s.projectId);
    expect(Object.keys(project).slice(0, projectKeys.length)).toEqual(projectKeys);
    expect(project.formList).toEqual([]);
    expect(project.datasetList).toEqual([]);
  });

  // ---- a new user's first visit ----
  extra('first visit: PUT /v1/user-preferences/site/whatsNewDismissed → 200', async (st) => {
    const res = await st.b.put('/v1/user-preferences/site/whatsNewDismissed', { body: { propertyValue: true } });
    expect(res.status).toBe(200);
    expect(await readJson(res)).toEqual(SUCCESS);
  });
  extra('first visit: PUT /v1/user-preferences/site/mailingListOptIn → 200', async (st) => {
    const res = await st.b.put('/v1/user-preferences/site/mailingListOptIn', { body: { propertyValue: false } });
    expect(res.status).toBe(200);
    expect(await readJson(res)).toEqual(SUCCESS);
  });
  extra('extended /v1/users/current shows them under preferences.site', async (st) => {
    const res = await st.b.get('/v1/users/current', { extended: true });
    expect(res.status).toBe(200);
    expect((await readJson(res)).preferences).toEqual({ site: { whatsNewDismissed: true, mailingListOptIn: false }, projects: {} });
  });
  extra('a PUT replaces the value; PUT without propertyValue → 400.23; with other keys → 400.33', async (st) => {
    expect((await st.b.put('/v1/user-preferences/site/mailingListOptIn', { body: { propertyValue: { v: [1, 'two'] } } })).status).toBe(200);
    const missing = await st.b.put('/v1/user-preferences/site/mailingListOptIn', { body: { value: true } });
    expect(missing.status).toBe(400);
    expect(await readJson(missing)).toEqual({ message: "Could not find a property named 'propertyValue'", code: 400.23, details: { property: 'propertyValue' } });
    const more = await st.b.put('/v1/user-preferences/site/mailingListOptIn', { body: { propertyValue: 1, other: 2 } });
    expect(more.status).toBe(400);
    expect(await readJson(more)).toEqual({
      message: 'Expected properties: (propertyValue). Got (propertyValue, other).', code: 400.33,
      details: { expected: ['propertyValue'], actual: ['propertyValue', 'other'] },
    });
    const me = await readJson(await st.b.get('/v1/users/current', { extended: true }));
    expect(me.preferences.site).toEqual({ whatsNewDismissed: true, mailingListOptIn: { v: [1, 'two'] } });
  });
  extra('DELETE of a missing preference → 404.1; of an existing one → 200 and it is gone', async (st) => {
    const missing = await st.b.delete('/v1/user-preferences/site/neverSet');
    expect(missing.status).toBe(404);
    expect(await readJson(missing)).toEqual(NOT_FOUND);
    const gone = await st.b.delete('/v1/user-preferences/site/mailingListOptIn');
    expect(gone.status).toBe(200);
    expect(await readJson(gone)).toEqual(SUCCESS);
    expect((await st.b.delete('/v1/user-preferences/site/mailingListOptIn')).status).toBe(404);
    const me = await readJson(await st.b.get('/v1/users/current', { extended: true }));
    expect(me.preferences.site).toEqual({ whatsNewDismissed: true });
  });

  // ---- create-project ----
  add(row('create-project', 'POST', '/v1/projects'), async (st, r) => {
    const body = await readJson(await send(st, r, { body: { name: 'Web UI project' } }));
    expect(Object.keys(body)).toEqual(projectKeys);
    expect(body).toMatchObject({ name: 'Web UI project', description: null, archived: null, keyId: null, updatedAt: null, deletedAt: null });
    st.projectId = body.id;
  });
  add(row('create-project', 'GET', '/v1/projects/{projectId}'), async (st, r) => {
    const body = await readJson(await send(st, r));
    expect(Object.keys(body)).toEqual(expect.arrayContaining([...projectKeys, 'verbs', 'forms', 'appUsers', 'datasets', 'lastSubmission']));
    expect(body).toMatchObject({ id: st.projectId, forms: 0, appUsers: 0, datasets: 0, lastSubmission: null });
    expect(body.verbs).toEqual(expect.arrayContaining(['form.create', 'project.update']));
  });
  extra('a project preference: PUT /v1/user-preferences/project/{projectId}/… → preferences.projects["<id>"]', async (st) => {
    const res = await st.b.put(`/v1/user-preferences/project/${st.projectId}/formTrashCollapsed`, { body: { propertyValue: false } });
    expect(res.status).toBe(200);
    expect(await readJson(res)).toEqual(SUCCESS);
    const me = await readJson(await st.b.get('/v1/users/current', { extended: true }));
    expect(me.preferences).toEqual({ site: { whatsNewDismissed: true }, projects: { [String(st.projectId)]: { formTrashCollapsed: false } } });
    const unknown = await st.b.put('/v1/user-preferences/project/999999/formTrashCollapsed', { body: { propertyValue: true } });
    expect(unknown.status).toBe(404);
    const missing = await st.b.delete(`/v1/user-preferences/project/${st.projectId}/neverSet`);
    expect(missing.status).toBe(404);
    expect(await readJson(missing)).toEqual(NOT_FOUND);
    expect((await st.b.put(`/v1/user-preferences/project/${st.projectId}/x`, { body: {} })).status).toBe(400);
  });
  add(row('create-project', 'GET', '/v1/projects/{projectId}/forms'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual([]);
  });
  add(row('create-project', 'GET', '/v1/projects/{projectId}/forms?deleted=true'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual([]);
  });

  // ---- form-upload ----
  add(row('form-upload', 'POST', '/v1/projects/{projectId}/forms'), async (st, r) => {
    const body = await readJson(await send(st, r, { body: FORM_XML, headers: { 'Content-Type': 'application/xml' } }));
    expect(Object.keys(body)).toEqual(Object.keys(centralJson('simple/api/form-create-response')));
    expect(body).toMatchObject({ projectId: st.projectId, xmlFormId: XML_FORM_ID, state: 'open', enketoId: null, enketoOnceId: null, webformsEnabled: true, version: '2026.1', publishedAt: null, name: 'Web UI form' });
    expect(typeof body.draftToken).toBe('string');
  });
  add(row('form-upload', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}'), async (st, r) => {
    const body = await readJson(await send(st, r));
    expect(Object.keys(body)).toEqual(formExtendedKeys);
    expect(body).toMatchObject({ submissions: 0, reviewStates: { received: 0, hasIssues: 0, edited: 0 }, lastSubmission: null, enketoId: null, webformsEnabled: true });
    expect(Object.keys(body.createdBy)).toEqual(actorKeys);
    expect(body.createdBy.id).toBe(st.userId);
  });
  add(row('form-upload', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/assignments/app-user'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual([]);
  });
  add(row('form-upload', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/draft'), async (st, r) => {
    const body = await readJson(await send(st, r));
    expect(Object.keys(body).slice(0, formKeys.length)).toEqual(formKeys);
    expect(Object.keys(body)).toEqual(expect.arrayContaining(['submissions', 'reviewStates', 'lastSubmission', 'createdBy']));
    expect(body).toMatchObject({ publishedAt: null, version: '2026.1', submissions: 0 });
    expect(typeof body.draftToken).toBe('string');
  });
  add(row('form-upload', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/draft/attachments'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual([]);
  });
  add(row('form-upload', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/draft/submissions/keys'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual([]);
  });
  add(row('form-upload', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/versions'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual([]); // nothing published yet
  });
  const expectFields = (body: Json) => {
    for (const f of body) expect(Object.keys(f)).toEqual(fieldKeys);
    expect(body.map((f: Json) => [f.path, f.type])).toEqual([
      ['/meta', 'structure'], ['/meta/instanceID', 'string'], ['/name', 'string'], ['/age', 'int'], ['/location', 'geopoint'],
    ]);
  };
  add(row('form-upload', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/draft/fields?odata=true'), async (st, r) => {
    expectFields(await readJson(await send(st, r)));
  });
  extra('GET F/draft/dataset-diff → 200 [] (no Datasets)', async (st) => {
    const res = await st.b.get(fill(st, '/v1/projects/{projectId}/forms/{xmlFormId}/draft/dataset-diff'));
    expect(res.status).toBe(200);
    expect(await readJson(res)).toEqual([]);
  });
  add(row('form-upload', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/draft.svc/Submissions?%24top=250&%24skip=0&%24count=true&%24wkt=true&%24orderby=__system%2FsubmissionDate+desc'), async (st, r) => {
    const body = await expectOData(await send(st, r));
    expect(Object.keys(body)).toEqual(odataCountEnvelope);
    expect(body).toEqual({
      value: [],
      '@odata.context': `${st.s.base}/v1/projects/${st.projectId}/forms/${XML_FORM_ID}/draft.svc/$metadata#Submissions`,
      '@odata.count': 0,
    });
  });

  // ---- form-publish ----
  add(row('form-publish', 'POST', '/v1/projects/{projectId}/forms/{xmlFormId}/draft/publish'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual(SUCCESS);
  });
  add(row('form-publish', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/attachments'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual([]);
  });
  add(row('form-publish', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/dataset-diff'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual([]);
  });

  // ---- submissions-table ----
  extra('(setup) two submissions arrive from a device; one is then deleted', async (st) => {
    const path = `/v1/projects/${st.projectId}/forms/${XML_FORM_ID}/submissions`;
    for (const [id, name, device] of [[DEVICE_ID, 'Dana', 'collect:device-1'], [TRASHED_ID, 'Trash', 'collect:device-2']] as const) {
      const res = await asAlice(st, 'POST', `${path}?deviceID=${encodeURIComponent(device)}`, instance(id, name, 41, '-1.2921 36.8219 1650 5'), 'application/xml');
      expect(res.status, await res.clone().text()).toBe(200);
    }
    expect((await asAlice(st, 'DELETE', `${path}/${encodeURIComponent(TRASHED_ID)}`)).status).toBe(200);
  });
  add(row('submissions-table(in-app tab)', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/submissions/keys'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual([]);
  });
  add(row('submissions-table(in-app tab)', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}.svc/Submissions?%24top=0&%24count=true&%24filter=__system%2FdeletedAt+ne+null'), async (st, r) => {
    const body = await expectOData(await send(st, r));
    expect(Object.keys(body)).toEqual(odataCountEnvelope);
    // The deleted submission counts; $top=0 returns no rows.
    expect(body).toEqual({
      value: [],
      '@odata.context': `${st.s.base}/v1/projects/${st.projectId}/forms/${XML_FORM_ID}.svc/$metadata#Submissions`,
      '@odata.count': 1,
    });
  });
  add(row('submissions-table(in-app tab)', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/fields?odata=true'), async (st, r) => {
    expectFields(await readJson(await send(st, r)));
  });
  add(row('submissions-table(in-app tab)', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/submissions/submitters'), async (st, r) => {
    const body = await readJson(await send(st, r));
    expect(body).toHaveLength(1);
    expect(Object.keys(body[0])).toEqual(actorKeys);
    expect(body[0]).toMatchObject({ id: st.s.ids.alice, type: 'user', displayName: 'alice' });
  });
  add(row('submissions-table(in-app tab)', 'GET', odataTable), async (st, r) => {
    const body = await expectOData(await send(st, r));
    expect(Object.keys(body)).toEqual(odataCountEnvelope);
    expect(body['@odata.count']).toBe(1); // the deleted one is not listed
    expect(body.value).toHaveLength(1);
    expectOneDeviceRow(body.value[0]);
  });

  // ---- submission-detail ----
  add(row('submission-detail', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/submissions/{instanceId}/versions/{instanceId}'), async (st, r) => {
    const body = await readJson(await send(st, r));
    expect(Object.keys(body)).toEqual(versionKeys);
    expect(body).toMatchObject({ instanceId: DEVICE_ID, current: true, deviceId: 'collect:device-1', submitterId: st.s.ids.alice, instanceName: null });
  });
  add(row('submission-detail', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/fields'), async (st, r) => {
    expectFields(await readJson(await send(st, r)));
  });
  add(row('submission-detail', 'GET', "/v1/projects/{projectId}/forms/{xmlFormId}.svc/Submissions('{instanceId}')?%24select=__id%2C__system%2Cmeta"), async (st, r) => {
    const body = await expectOData(await send(st, r));
    expect(Object.keys(body)).toEqual(odataOneEnvelope);
    expect(body['@odata.context']).toBe(`${st.s.base}/v1/projects/${st.projectId}/forms/${XML_FORM_ID}.svc/$metadata#Submissions`);
    expect(body.value).toHaveLength(1);
    const [one] = body.value;
    expect(Object.keys(one).sort()).toEqual(['__id', '__system', 'meta']);
    expect(one.__id).toBe(DEVICE_ID);
    expect(one.meta).toEqual({ instanceID: DEVICE_ID });
    expect(Object.keys(one.__system)).toEqual(odataSystemKeys);
  });
  add(row('submission-detail', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/submissions/{instanceId}/comments'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual([]);
  });
  add(row('submission-detail', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/submissions/{instanceId}/audits'), async (st, r) => {
    const body = await readJson(await send(st, r));
    expect(body.map((a: Json) => a.action)).toEqual(['submission.create']);
    expect(Object.keys(body[0])).toEqual(['actorId', 'action', 'acteeId', 'details', 'loggedAt', 'notes', 'actor', 'actee']);
    expect(Object.keys(body[0].actor)).toEqual(actorKeys);
    expect(body[0].details).toMatchObject({ instanceId: DEVICE_ID });
  });
  add(row('submission-detail', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}/submissions/{instanceId}/diffs'), async (st, r) => {
    expect(await readJson(await send(st, r))).toEqual({}); // never edited
  });

  // ---- users-page ----
  add(row('users-page', 'GET', '/v1/assignments/admin'), async (st, r) => {
    const body = await readJson(await send(st, r));
    for (const a of body) expect(Object.keys(a)).toEqual(actorKeys);
    expect(body.map((a: Json) => a.id)).toEqual(expect.arrayContaining([st.s.ids.alice, st.userId]));
  });

  // ---- logout ----
  add(row('logout', 'DELETE', '/v1/sessions/current'), async (st, r) => {
    const oldCookies = st.b.cookieHeader()!;
    const res = await send(st, r);
    expect(await readJson(res)).toEqual(SUCCESS);
    // Both cookies cleared, so the browser forgets them.
    expect(st.b.lastSetCookies.map((c) => c.name).sort()).toEqual(['__csrf', 'session']);
    expect(st.b.jar.size).toBe(0);
    // The old cookie is dead: refused at once (401.2), as Central.
    const replay = await fetch(`${st.s.base}/v1/sessions/restore`, { headers: { Cookie: oldCookies } });
    expect(replay.status).toBe(401);
    expect(await readJson(replay)).toEqual(AUTH_FAILED);
  });

  // ---- web-form-new-submission ----
  extra("(setup) the Web Form's tab has a session: POST /v1/sessions", async (st) => {
    const res = await st.b.post('/v1/sessions', { body: UI_USER });
    expect(res.status).toBe(200);
    expect([...st.b.jar.keys()].sort()).toEqual(['__csrf', 'session']);
  });
  add(row('web-form-new-submission(load)', 'GET', '/v1/projects/{projectId}/forms/{xmlFormId}.xml'), async (st, r) => {
    const res = await send(st, r);
    expect(res.headers.get('content-type')).toMatch(/^application\/xml/);
    expect(await res.text()).toBe(FORM_XML);
  });
  add(row('web-form-new-submission(send)', 'POST', '/v1/projects/{projectId}/forms/{xmlFormId}/submissions?deviceID=wf%3A{id}'), async (st, r) => {
    const res = await send(st, r, { body: instance(WEB_FORM_ID, 'Wanjiru', 29, '-0.0917 34.7680 1131 3.5'), headers: { 'Content-Type': 'application/xml' } });
    const body = await readJson(res);
    expect(Object.keys(body)).toEqual(submissionKeys);
    expect(body).toMatchObject({ instanceId: WEB_FORM_ID, submitterId: st.userId, deviceId: `wf:${WEB_FORM_DEVICE}`, reviewState: null, deletedAt: null });
    expect(Object.keys(body.currentVersion)).toEqual(versionKeys);
  });
  extra('the Web Forms submission shows first in the table query the UI makes', async (st) => {
    const res = await st.b.get(fill(st, odataTable));
    const body = await expectOData(res);
    expect(body['@odata.count']).toBe(2);
    // The suite runs in one transaction, so both submissionDates are equal here; the newer
    // submission still comes first.
    expect(body.value.map((v: Json) => v.__id)).toEqual([WEB_FORM_ID, DEVICE_ID]);
    const [wf] = body.value;
    expect(wf.location).toBe('POINT (34.768 -0.0917 1131)');
    expect(wf.__system).toMatchObject({ deviceId: `wf:${WEB_FORM_DEVICE}`, submitterId: String(st.userId), submitterName: UI_USER.email });
  });
  extra("…and in Submissions('{instanceId}')?$select=__id,__system,meta", async (st) => {
    const path = `/v1/projects/${st.projectId}/forms/${XML_FORM_ID}.svc/Submissions(${encodeURIComponent(`'${WEB_FORM_ID}'`)})?%24select=__id%2C__system%2Cmeta`;
    const body = await expectOData(await st.b.get(path));
    expect(body.value).toHaveLength(1);
    expect(body.value[0]).toEqual({
      meta: { instanceID: WEB_FORM_ID },
      __id: WEB_FORM_ID,
      __system: expect.objectContaining({ deviceId: `wf:${WEB_FORM_DEVICE}`, submitterId: String(st.userId), reviewState: null, deletedAt: null }),
    });
  });
  extra("Submissions('{instanceId}')?$wkt=true: the single entity with its point as WKT", async (st) => {
    const path = `/v1/projects/${st.projectId}/forms/${XML_FORM_ID}.svc/Submissions('${encodeURIComponent(WEB_FORM_ID)}')?%24wkt=true`;
    const body = await expectOData(await st.b.get(path));
    expect(Object.keys(body)).toEqual(odataOneEnvelope);
    expect(body.value[0]).toMatchObject({ __id: WEB_FORM_ID, name: 'Wanjiru', age: 29, location: 'POINT (34.768 -0.0917 1131)' });
  });

  return list;
}

const rows = uiRequestRows();
const plan = steps(rows);
const label = (step: Step, i: number) => {
  const n = String(i + 1).padStart(2, '0');
  if (step.extra) return `${n} (extra) ${step.extra}`;
  const r = step.row!;
  return `${n} ${r.step}: ${r.method} ${r.path} → ${r.status}${r.extended ? ' (X-Extended-Metadata)' : ''}`;
};

describe.sequential('the web UI session of web-ui-requests.md, one test per request', () => {
  const st = {} as State;
  let failed: string | null = null;

  beforeAll(async () => {
    st.ui = standInUi();
    st.s = await suiteServer({}, st.ui.dir);
    st.b = new Browser(st.s.base);
    // A new administrator (an admin created them): their first visit is the session replayed.
    const created = await asAlice(st, 'POST', '/v1/users', JSON.stringify(UI_USER), 'application/json');
    expect(created.status).toBe(200);
    st.userId = (await created.json()).id;
    expect((await asAlice(st, 'POST', `/v1/assignments/admin/${st.userId}`)).status).toBe(200);
  });
  afterAll(async () => {
    await st.s?.close();
    st.ui?.remove();
  });

  test('the replay covers every row of the list, in order', () => {
    expect(rows.length).toBe(39);
    expect(plan.filter((p) => p.row).map((p) => p.row)).toEqual(rows);
  });

  plan.forEach((step, i) => {
    test(label(step, i), async () => {
      // A later row depends on the earlier ones: after a failure, say which one broke the chain.
      if (failed) throw new Error(`skipped: an earlier step failed (${failed})`);
      try {
        await step.run(st);
      } catch (err) {
        failed = label(step, i);
        throw err;
      }
    });
  });
});
