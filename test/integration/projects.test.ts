import { readFileSync } from 'node:fs';
import { count, eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { projects, submissions } from '../../drizzle/schema';
import { harness, json, type As, type Harness } from '../helpers/harness';
import { userWithRole } from '../helpers/roles';

type Project = { id: number; name: string; description: string | null; archived: boolean | null; [k: string]: unknown };

const projectKeys = ['id', 'name', 'description', 'archived', 'keyId', 'createdAt', 'updatedAt', 'deletedAt'];
const isoPattern = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function createProject(h: Harness, name: string, extra: Record<string, unknown> = {}): Promise<Project> {
  const res = await h.post('/v1/projects', { as: 'alice', body: { name, ...extra } });
  expect(res.status).toBe(200);
  return json<Project>(res);
}

async function projectRowCount(h: Harness): Promise<number> {
  const [row] = await h.db.select({ n: count() }).from(projects);
  return row!.n;
}

async function expectProblem(res: Response, status: number, code: number): Promise<Record<string, unknown>> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = await json(res);
  expect(body.code).toBe(code);
  expect(typeof body.message).toBe('string');
  return body;
}

describe('GET /v1/projects', () => {
  test('anonymous callers get [] (the spec\'s rule; Central answers 401.2), and a dead session still 401.2', async () => {
    const h = await harness();
    const res = await h.get('/v1/projects');
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual([]);
    const dead = await h.get('/v1/projects', { headers: { Authorization: 'Bearer no-such-session-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' } });
    expect(dead.status).toBe(401);
    expect(await json(dead)).toMatchObject({ code: 401.2 });
  });

  test('alice (site admin) sees every project, each with verbs', async () => {
    const h = await harness();
    const other = await createProject(h, 'Second Project');
    const list = await json<Project[]>(await h.get('/v1/projects', { as: 'alice' }));
    const ids = list.map((p) => p.id);
    expect(ids).toContain(h.projectId);
    expect(ids).toContain(other.id);
    for (const p of list) {
      expect(Object.keys(p).slice(0, projectKeys.length)).toEqual(projectKeys);
      expect(p.verbs).toEqual(expect.arrayContaining(['project.read', 'project.update', 'project.delete']));
    }
  });

  test('bob (manager of Default Project) sees only it, with verbs including project.update', async () => {
    const h = await harness();
    await createProject(h, 'Not Bobs');
    const list = await json<Project[]>(await h.get('/v1/projects', { as: 'bob' }));
    expect(list.map((p) => p.name)).toEqual(['Default Project']);
    expect(list[0]!.id).toBe(h.projectId);
    expect(list[0]!.verbs).toEqual(expect.arrayContaining(['project.read', 'project.update', 'form.create']));
    expect(list[0]!.verbs).not.toContain('project.create');
  });

  test('chelsea (no role) gets []', async () => {
    const h = await harness();
    const res = await h.get('/v1/projects', { as: 'chelsea' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual([]);
  });

  test('archived projects sort last, then by name', async () => {
    const h = await harness();
    const zeta = await createProject(h, 'Zeta');
    const alpha = await createProject(h, 'Alpha');
    const beta = await createProject(h, 'Beta');
    const gamma = await createProject(h, 'Gamma', { archived: true });
    expect((await h.patch(`/v1/projects/${alpha.id}`, { as: 'alice', body: { archived: true } })).status).toBe(200);
    // archived: false counts as not archived
    expect((await h.patch(`/v1/projects/${zeta.id}`, { as: 'alice', body: { archived: false } })).status).toBe(200);
    const mine = new Set([zeta.id, alpha.id, beta.id, gamma.id]);
    const list = await json<Project[]>(await h.get('/v1/projects', { as: 'alice' }));
    expect(list.filter((p) => mine.has(p.id)).map((p) => p.name)).toEqual(['Beta', 'Zeta', 'Alpha', 'Gamma']);
    // every non-archived project comes before every archived one
    const firstArchived = list.findIndex((p) => p.archived === true);
    expect(list.slice(firstArchived).every((p) => p.archived === true)).toBe(true);
  });

  test('?forms=true adds formList ([] while the project has no forms) and ?datasets=true adds datasetList: []', async () => {
    const h = await harness();
    const plain = await json<Project[]>(await h.get('/v1/projects', { as: 'bob' }));
    expect(plain[0]).not.toHaveProperty('formList');
    expect(plain[0]).not.toHaveProperty('datasetList');
    const withForms = await json<Project[]>(await h.get('/v1/projects?forms=true', { as: 'bob' }));
    expect(withForms[0]!.formList).toEqual([]);
    expect(withForms[0]).not.toHaveProperty('datasetList');
    const withDatasets = await json<Project[]>(await h.get('/v1/projects?datasets=true', { as: 'bob' }));
    expect(withDatasets[0]!.datasetList).toEqual([]);
    expect(withDatasets[0]).not.toHaveProperty('formList');
    const both = await json<Project[]>(await h.get('/v1/projects?forms=true&datasets=true', { as: 'bob' }));
    expect(both[0]).toMatchObject({ id: h.projectId, formList: [], datasetList: [] });
  });

  test('extended metadata adds forms, appUsers, datasets, lastSubmission, lastEntity; appUsers counts App Users', async () => {
    const h = await harness();
    const extended = { 'X-Extended-Metadata': 'true' };
    const before = await json<Project[]>(await h.get('/v1/projects', { as: 'bob', headers: extended }));
    expect(before).toHaveLength(1);
    expect(before[0]).toMatchObject({ id: h.projectId, forms: 0, datasets: 0, lastSubmission: null, lastEntity: null });
    expect(typeof before[0]!.appUsers).toBe('number');
    const plain = await json<Project[]>(await h.get('/v1/projects', { as: 'bob' }));
    expect(plain[0]).not.toHaveProperty('appUsers');
    expect(plain[0]).not.toHaveProperty('forms');

    const created = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName: 'Field 1' } });
    expect(created.status).toBe(200);
    const after = await json<Project[]>(await h.get('/v1/projects', { as: 'bob', headers: extended }));
    expect(after[0]!.appUsers).toBe((before[0]!.appUsers as number) + 1);
  });
});

describe('POST /v1/projects', () => {
  test('alice creates a project: Central key order, values, and a project.create audit', async () => {
    const h = await harness();
    const res = await h.post('/v1/projects', { as: 'alice', body: { name: 'Malaria Survey' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(projectKeys);
    expect(body).toMatchObject({ name: 'Malaria Survey', description: null, archived: null, keyId: null, updatedAt: null, deletedAt: null });
    expect(Number.isInteger(body.id)).toBe(true);
    expect(body.createdAt).toMatch(isoPattern);

    const rows = await h.audits();
    expect(rows.map((r) => r.action)).toEqual(['project.create']);
    expect(rows[0]!.actorId).toBe(h.ids.alice);
    expect((rows[0]!.details as { data: { name: string } }).data.name).toBe('Malaria Survey');
    const [stored] = await h.db.select().from(projects).where(eq(projects.id, body.id));
    expect(stored!.acteeId).toBe(rows[0]!.acteeId);

    const fetched = await json(await h.get(`/v1/projects/${body.id}`, { as: 'alice' }));
    expect(fetched).toEqual(body);
  });

  test('description and archived may be given at creation', async () => {
    const h = await harness();
    const p = await createProject(h, 'Described', { description: 'Some **markdown**', archived: true });
    expect(p).toMatchObject({ name: 'Described', description: 'Some **markdown**', archived: true });
  });

  test('bob and chelsea get 403.1, anonymous gets 401.2; nothing is written', async () => {
    const h = await harness();
    const before = await projectRowCount(h);
    for (const as of ['bob', 'chelsea'] as const) {
      const body = await expectProblem(await h.post('/v1/projects', { as, body: { name: 'Nope' } }), 403, 403.1);
      expect(body.message).toBe('The authentication you provided does not have rights to perform that action.');
    }
    const anon = await h.post('/v1/projects', { body: { name: 'Nope' } });
    expect(anon.status).toBe(401);
    expect(await anon.text()).toBe('{"message":"Could not authenticate with the provided credentials.","code":401.2}');
    expect(await projectRowCount(h)).toBe(before);
    expect(await h.auditActions()).toEqual([]);
  });

  test('missing name: 400.2 { field: "name" }', async () => {
    const h = await harness();
    const before = await projectRowCount(h);
    const res = await h.post('/v1/projects', { as: 'alice', body: { description: 'no name' } });
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({ message: 'Required parameter name missing.', code: 400.2, details: { field: 'name' } });
    const empty = await h.post('/v1/projects', { as: 'alice', body: {} });
    expect((await json(empty)).code).toBe(400.2);
    expect(await projectRowCount(h)).toBe(before);
    expect(await h.auditActions()).toEqual([]);
  });

  test('name of the wrong type: 400.11', async () => {
    const h = await harness();
    const before = await projectRowCount(h);
    const body = await expectProblem(await h.post('/v1/projects', { as: 'alice', body: { name: 42 } }), 400, 400.11);
    expect(body.details).toMatchObject({ field: 'name' });
    expect(await projectRowCount(h)).toBe(before);
    expect(await h.auditActions()).toEqual([]);
  });

  test('malformed JSON: Central\'s exact 400.1 body; nothing written', async () => {
    const h = await harness();
    const before = await projectRowCount(h);
    const raw = '{"name":x';
    expect(raw).toHaveLength(9);
    const res = await h.post('/v1/projects', { as: 'alice', body: raw, headers: { 'Content-Type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await res.text()).toBe(
      '{"message":"Could not parse the given data (9 chars) as json.","code":400.1,"details":{"format":"json","rawLength":9}}',
    );
    expect(await projectRowCount(h)).toBe(before);
    expect(await h.auditActions()).toEqual([]);
  });
});

describe('GET /v1/projects/:id', () => {
  test('bob reads his project; chelsea gets 403.1', async () => {
    const h = await harness();
    const res = await h.get(`/v1/projects/${h.projectId}`, { as: 'bob' });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(projectKeys);
    expect(body).toMatchObject({ id: h.projectId, name: 'Default Project' });
    await expectProblem(await h.get(`/v1/projects/${h.projectId}`, { as: 'chelsea' }), 403, 403.1);
  });

  test('bob cannot read a project he has no role on', async () => {
    const h = await harness();
    const other = await createProject(h, 'Elsewhere');
    await expectProblem(await h.get(`/v1/projects/${other.id}`, { as: 'bob' }), 403, 403.1);
  });

  test('unknown ids: 404.1; junk 400.11 and too big or small 400.22, as Central (projects.js)', async () => {
    const h = await harness();
    for (const id of ['999999999', '-1']) {
      const body = await expectProblem(await h.get(`/v1/projects/${id}`, { as: 'alice' }), 404, 404.1);
      expect(body).toEqual({ message: 'Could not find the resource you were looking for.', code: 404.1 });
    }
    for (const id of ['1a', 'abc', '1.5']) await expectProblem(await h.get(`/v1/projects/${id}`, { as: 'alice' }), 400, 400.11);
    for (const id of ['10000000000', '-10000000000', '99999999999999999999']) {
      await expectProblem(await h.get(`/v1/projects/${id}`, { as: 'alice' }), 400, 400.22);
    }
  });

  test('extended: verbs first, then the project, then the counts', async () => {
    const h = await harness();
    const res = await h.get(`/v1/projects/${h.projectId}`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } });
    expect(res.status).toBe(200);
    const body = await json(res);
    const keys = Object.keys(body);
    expect(keys[0]).toBe('verbs');
    expect(keys.slice(1, 1 + projectKeys.length)).toEqual(projectKeys);
    expect(keys).toEqual(expect.arrayContaining(['forms', 'appUsers', 'datasets', 'lastSubmission', 'lastEntity']));
    expect(body.verbs).toEqual(expect.arrayContaining(['project.read', 'project.update', 'form.create']));
    expect(body.verbs).not.toContain('project.create');
    expect(body).toMatchObject({ id: h.projectId, forms: 0, datasets: 0, lastSubmission: null, lastEntity: null });

    const created = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName: 'Field 2' } });
    expect(created.status).toBe(200);
    const after = await json(await h.get(`/v1/projects/${h.projectId}`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(after.appUsers).toBe(body.appUsers + 1);
  });
});

describe('PATCH /v1/projects/:id', () => {
  test('updates name, description and archived; sets updatedAt; audits project.update', async () => {
    const h = await harness();
    const p = await createProject(h, 'Before');
    const res = await h.patch(`/v1/projects/${p.id}`, {
      as: 'alice',
      body: { name: 'After', description: 'Now described', archived: true },
    });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(projectKeys);
    expect(body).toMatchObject({ id: p.id, name: 'After', description: 'Now described', archived: true, createdAt: p.createdAt });
    expect(body.updatedAt).toMatch(isoPattern);
    expect(await json(await h.get(`/v1/projects/${p.id}`, { as: 'alice' }))).toEqual(body);

    const rows = await h.audits();
    expect(rows.map((r) => r.action)).toEqual(['project.create', 'project.update']);
    expect(rows[1]!.acteeId).toBe(rows[0]!.acteeId);
    expect(rows[1]!.actorId).toBe(h.ids.alice);
    expect(rows[1]!.details).toMatchObject({ data: { name: 'After', description: 'Now described', archived: true } });
  });

  test('fields left out are kept', async () => {
    const h = await harness();
    const p = await createProject(h, 'Keep', { description: 'kept' });
    const body = await json(await h.patch(`/v1/projects/${p.id}`, { as: 'alice', body: { archived: true } }));
    expect(body).toMatchObject({ name: 'Keep', description: 'kept', archived: true });
  });

  test('bob may update his project; chelsea gets 403.1 and nothing changes', async () => {
    const h = await harness();
    const ok = await h.patch(`/v1/projects/${h.projectId}`, { as: 'bob', body: { description: 'by bob' } });
    expect(ok.status).toBe(200);
    expect(await json(ok)).toMatchObject({ name: 'Default Project', description: 'by bob' });
    await expectProblem(await h.patch(`/v1/projects/${h.projectId}`, { as: 'chelsea', body: { name: 'Hijacked' } }), 403, 403.1);
    expect(await h.auditActions()).toEqual(['project.update']);
    const now = await json(await h.get(`/v1/projects/${h.projectId}`, { as: 'bob' }));
    expect(now.name).toBe('Default Project');
  });

  test('an empty name is rejected with 400 and not stored', async () => {
    const h = await harness();
    const p = await createProject(h, 'Named');
    const res = await h.patch(`/v1/projects/${p.id}`, { as: 'alice', body: { name: '' } });
    expect(res.status).toBe(400);
    expect(String((await json(res)).code)).toMatch(/^400/);
    expect((await json(await h.get(`/v1/projects/${p.id}`, { as: 'alice' }))).name).toBe('Named');
    expect(await h.auditActions()).toEqual(['project.create']);
  });

  test('unknown project: 404.1', async () => {
    const h = await harness();
    await expectProblem(await h.patch('/v1/projects/999999999', { as: 'alice', body: { name: 'x' } }), 404, 404.1);
  });
});

describe('PUT /v1/projects/:id', () => {
  test('true PUT semantics: omitted description and archived become null', async () => {
    const h = await harness();
    const p = await createProject(h, 'Full', { description: 'desc', archived: true });
    const res = await h.put(`/v1/projects/${p.id}`, { as: 'alice', body: { name: 'Replaced' } });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(projectKeys);
    expect(body).toMatchObject({ id: p.id, name: 'Replaced', description: null, archived: null });
    expect(body.updatedAt).toMatch(isoPattern);
    expect(await json(await h.get(`/v1/projects/${p.id}`, { as: 'alice' }))).toEqual(body);
    expect(await h.auditActions()).toEqual(['project.create', 'project.update']);
  });

  test('all fields given are stored', async () => {
    const h = await harness();
    const p = await createProject(h, 'Put me');
    const body = await json(await h.put(`/v1/projects/${p.id}`, {
      as: 'alice', body: { name: 'Put', description: 'd', archived: true },
    }));
    expect(body).toMatchObject({ name: 'Put', description: 'd', archived: true });
  });

  test('missing name: 400.2 and nothing changes', async () => {
    const h = await harness();
    const p = await createProject(h, 'Stays', { description: 'still here' });
    const res = await h.put(`/v1/projects/${p.id}`, { as: 'alice', body: { description: 'x' } });
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ code: 400.2, details: { field: 'name' } });
    expect(await json(await h.get(`/v1/projects/${p.id}`, { as: 'alice' }))).toMatchObject({ name: 'Stays', description: 'still here' });
    expect(await h.auditActions()).toEqual(['project.create']);
  });

  test('forms: [] is accepted when the project has no forms', async () => {
    const h = await harness();
    const p = await createProject(h, 'No forms');
    const res = await h.put(`/v1/projects/${p.id}`, { as: 'alice', body: { name: 'Still no forms', forms: [] } });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ name: 'Still no forms' });
  });

  test('a forms list naming a form that does not exist: 501.2, and the whole PUT is rolled back', async () => {
    const h = await harness();
    const p = await createProject(h, 'Original', { description: 'orig' });
    const res = await h.put(`/v1/projects/${p.id}`, {
      as: 'alice',
      body: { name: 'Changed', forms: [{ xmlFormId: 'ghost', state: 'open' }] },
    });
    expect(res.status).toBe(501);
    const body = await json(res);
    expect(body.code).toBe(501.2);
    expect(body.message).toMatch(/full list of forms/);
    expect(await json(await h.get(`/v1/projects/${p.id}`, { as: 'alice' }))).toMatchObject({ name: 'Original', description: 'orig', updatedAt: null });
    expect(await h.auditActions()).toEqual(['project.create']);
  });

  test('bob may PUT his project; chelsea gets 403.1', async () => {
    const h = await harness();
    const ok = await h.put(`/v1/projects/${h.projectId}`, { as: 'bob', body: { name: 'Default Project', description: 'bob put' } });
    expect(ok.status).toBe(200);
    await expectProblem(await h.put(`/v1/projects/${h.projectId}`, { as: 'chelsea', body: { name: 'x' } }), 403, 403.1);
  });
});

describe('DELETE /v1/projects/:id', () => {
  test('bob deletes his project: {success:true}, then 404.1, gone from listings, audited', async () => {
    const h = await harness();
    const res = await h.delete(`/v1/projects/${h.projectId}`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });

    await expectProblem(await h.get(`/v1/projects/${h.projectId}`, { as: 'bob' }), 404, 404.1);
    await expectProblem(await h.get(`/v1/projects/${h.projectId}`, { as: 'alice' }), 404, 404.1);
    const aliceList = await json<Project[]>(await h.get('/v1/projects', { as: 'alice' }));
    expect(aliceList.map((p) => p.id)).not.toContain(h.projectId);
    expect(await json(await h.get('/v1/projects', { as: 'bob' }))).toEqual([]);

    const rows = await h.audits();
    expect(rows.map((r) => r.action)).toEqual(['project.delete']);
    expect(rows[0]!.actorId).toBe(h.ids.bob);
    const [stored] = await h.db.select().from(projects).where(eq(projects.id, h.projectId));
    expect(stored!.acteeId).toBe(rows[0]!.acteeId);
    expect(stored!.deletedAt).not.toBeNull();

    // a second delete finds nothing
    await expectProblem(await h.delete(`/v1/projects/${h.projectId}`, { as: 'bob' }), 404, 404.1);
    // and a deleted project cannot be updated
    await expectProblem(await h.patch(`/v1/projects/${h.projectId}`, { as: 'alice', body: { name: 'x' } }), 404, 404.1);
    expect(await h.auditActions()).toEqual(['project.delete']);
  });

  test('chelsea gets 403.1 and the project stays', async () => {
    const h = await harness();
    await expectProblem(await h.delete(`/v1/projects/${h.projectId}`, { as: 'chelsea' }), 403, 403.1);
    expect((await h.get(`/v1/projects/${h.projectId}`, { as: 'bob' })).status).toBe(200);
    expect(await h.auditActions()).toEqual([]);
  });

  test('anonymous gets 401.2; unknown id 404.1', async () => {
    const h = await harness();
    await expectProblem(await h.delete(`/v1/projects/${h.projectId}`), 401, 401.2);
    await expectProblem(await h.delete('/v1/projects/999999999', { as: 'alice' }), 404, 404.1);
  });
});

describe('GET /v1/projects?forms=true: the home page list', () => {
  const XML = { 'Content-Type': 'application/xml' };
  const shared = (path: string) => readFileSync(new URL(`../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
  type FormItem = { xmlFormId: string; name: string | null; submissions: number; reviewStates: Record<string, number>; lastSubmission: string | null; [k: string]: unknown };
  type Listed = Project & { formList: FormItem[]; forms: number; lastSubmission: string | null };
  const list = async (h: Harness, as: As, extended = false) =>
    json<Listed[]>(await h.get('/v1/projects?forms=true&datasets=true', { as, headers: extended ? { 'X-Extended-Metadata': 'true' } : {} }));
  const mine = async (h: Harness, as: As, extended = false) => (await list(h, as, extended)).find((p) => p.id === h.projectId);

  async function formsWithSubmissions(h: Harness) {
    const P = `/v1/projects/${h.projectId}`;
    for (const form of ['simple', 'withrepeat']) {
      expect((await h.post(`${P}/forms?publish=true`, { as: 'bob', body: shared(`forms/${form}.xml`), headers: XML })).status).toBe(200);
    }
    expect((await h.post(`${P}/forms`, { as: 'bob', body: shared('forms/binaryType.xml'), headers: XML })).status).toBe(200); // a draft
    for (const k of ['one', 'two', 'three']) {
      expect((await h.post(`${P}/forms/simple/submissions`, { as: 'bob', body: shared(`submissions/simple.${k}.xml`), headers: XML })).status).toBe(200);
    }
    expect((await h.patch(`${P}/forms/simple/submissions/two`, { as: 'bob', body: { reviewState: 'hasIssues' } })).status).toBe(200);
    expect((await h.patch(`${P}/forms/simple/submissions/three`, { as: 'bob', body: { reviewState: 'approved' } })).status).toBe(200);
    await h.db.update(submissions).set({ createdAt: new Date('2031-02-03T04:05:06.789Z') }).where(eq(submissions.instanceId, 'one'));
    // A deleted submission and a draft test submission count nowhere.
    expect((await h.post(`${P}/forms/withrepeat/submissions`, { as: 'bob', body: shared('submissions/withrepeat.one.xml'), headers: XML })).status).toBe(200);
    expect((await h.delete(`${P}/forms/withrepeat/submissions/rone`, { as: 'bob' })).status).toBe(200);
    expect((await h.post(`${P}/forms/binaryType/draft/submissions`, { as: 'bob', body: shared('submissions/binaryType.both.xml'), headers: XML })).status).toBe(200);
  }

  test('each form carries its extended fields: submissions, reviewStates, lastSubmission, createdBy', async () => {
    const h = await harness();
    await formsWithSubmissions(h);
    expect((await h.post(`/v1/projects/${h.projectId}/forms/simple/public-links`, { as: 'bob', body: { displayName: 'Open survey' } })).status).toBe(200);
    const project = (await mine(h, 'bob'))!;
    const byId = Object.fromEntries(project.formList.map((f) => [f.xmlFormId, f]));
    expect(Object.keys(byId).sort()).toEqual(['binaryType', 'simple', 'withrepeat']);
    expect(byId.simple).toMatchObject({
      submissions: 3, reviewStates: { received: 1, hasIssues: 1, edited: 0 }, lastSubmission: '2031-02-03T04:05:06.789Z',
      entityRelated: false, excelContentType: null, publicLinks: 1, createdBy: { id: h.ids.bob, type: 'user' },
    });
    expect(byId.withrepeat).toMatchObject({ submissions: 0, reviewStates: { received: 0, hasIssues: 0, edited: 0 }, lastSubmission: null, publicLinks: 0 });
    expect(byId.binaryType).toMatchObject({ submissions: 0, publishedAt: null, lastSubmission: null });
    // The same shape as GET F with X-Extended-Metadata, field for field.
    const single = await json<Record<string, unknown>>(await h.get(`/v1/projects/${h.projectId}/forms/simple`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    const { publishNotes: _notes, ...singleWithoutNotes } = single;
    expect(byId.simple).toEqual(singleWithoutNotes);
    // As Central, the project's forms and lastSubmission come from the list, extended or not.
    expect(project).toMatchObject({ forms: 3, lastSubmission: '2031-02-03T04:05:06.789Z', datasetList: [] });
    expect(await mine(h, 'bob', true)).toMatchObject({ forms: 3, lastSubmission: '2031-02-03T04:05:06.789Z', appUsers: 0 });
  });

  test('who sees which forms: drafts need form.update, closed forms form.read; no role sees no project', async () => {
    const h = await harness();
    await formsWithSubmissions(h);
    expect((await h.patch(`/v1/projects/${h.projectId}/forms/withrepeat`, { as: 'bob', body: { state: 'closed' } })).status).toBe(200);
    const ids = async (as: As) => (await mine(h, as))?.formList.map((f) => f.xmlFormId).sort();
    expect(await ids('alice')).toEqual(['binaryType', 'simple', 'withrepeat']);
    expect(await ids('bob')).toEqual(['binaryType', 'simple', 'withrepeat']);
    expect(await ids(await userWithRole(h, 'viewer', 'viewer-list@example.org'))).toEqual(['simple', 'withrepeat']);
    expect(await ids(await userWithRole(h, 'formfill', 'collector-list@example.org'))).toEqual(['simple']);
    expect(await mine(h, 'chelsea')).toBeUndefined();
    const anonymous = await h.get('/v1/projects?forms=true');
    expect([200, 401, 403]).toContain(anonymous.status);
    if (anonymous.status === 200) expect(await json(anonymous)).toEqual([]);
  });

  test('many forms over several projects: each project its own, ordered by name', async () => {
    const h = await harness();
    const P = `/v1/projects/${h.projectId}`;
    for (let i = 0; i < 30; i += 1) {
      const xml = shared('forms/simple.xml').replace('id="simple"', `id="simple${i}"`).replace('<h:title>Simple</h:title>', `<h:title>Simple ${String(i).padStart(2, '0')}</h:title>`);
      expect((await h.post(`${P}/forms?publish=true`, { as: 'bob', body: xml, headers: XML })).status).toBe(200);
    }
    const other = await createProject(h, 'Second');
    expect((await h.post(`/v1/projects/${other.id}/forms?publish=true`, { as: 'alice', body: shared('forms/simple.xml'), headers: XML })).status).toBe(200);
    const all = await list(h, 'alice');
    expect(all.find((p) => p.id === h.projectId)!.formList.map((f) => f.name)).toEqual(Array.from({ length: 30 }, (_, i) => `Simple ${String(i).padStart(2, '0')}`));
    expect(all.find((p) => p.id === other.id)!.formList.map((f) => f.xmlFormId)).toEqual(['simple']);
  });
});
