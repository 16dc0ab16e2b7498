import { describe, expect, test } from 'vitest';
import { actees, actors, assignments, forms, projects, type FormRow } from '../../../drizzle/schema';
import { eq, harness, json, type Harness } from '../../helpers/harness';

const ACTOR_KEYS = ['id', 'type', 'displayName', 'createdAt', 'updatedAt', 'deletedAt'];
const X = { headers: { 'X-Extended-Metadata': 'true' } };

const roleId = async (h: Harness, system: string): Promise<number> =>
  (await json<{ id: number }>(await h.get(`/v1/roles/${system}`, { as: 'alice' }))).id;

const acteeIdOfActor = async (h: Harness, actorId: number): Promise<string> => {
  const [row] = await h.db.select().from(actors).where(eq(actors.id, actorId));
  return row!.acteeId;
};

const projectActeeId = async (h: Harness, projectId = h.projectId): Promise<string> => {
  const [row] = await h.db.select().from(projects).where(eq(projects.id, projectId));
  return row!.acteeId;
};

/** Forms have no API yet: inserts the actee and the forms row directly. */
async function createForm(h: Harness, xmlFormId: string, projectId = h.projectId): Promise<FormRow> {
  const acteeId = crypto.randomUUID();
  await h.db.insert(actees).values({ id: acteeId, species: 'form', parent: await projectActeeId(h, projectId) });
  const [row] = await h.db.insert(forms).values({ projectId, xmlFormId, acteeId }).returning();
  return row!;
}

async function createAppUser(h: Harness, displayName = 'Collector'): Promise<{ id: number; token: string }> {
  const res = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName } });
  expect(res.status).toBe(200);
  return json(res);
}

const expectProblem = async (res: Response, code: number) => {
  expect(res.status).toBe(Math.floor(code));
  expect(await json(res)).toMatchObject({ code });
};

const visibleProjectNames = async (h: Harness, as: 'chelsea' | 'bob') =>
  (await json<Array<{ name: string }>>(await h.get('/v1/projects', { as }))).map((p) => p.name);

describe('GET P/assignments', () => {
  test('bob sees himself as manager', async () => {
    const h = await harness();
    const manager = await roleId(h, 'manager');
    const res = await h.get(`/v1/projects/${h.projectId}/assignments`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual([{ actorId: h.ids.bob, roleId: manager }]);
  });

  test('alice (site admin) may list them too', async () => {
    const h = await harness();
    const res = await h.get(`/v1/projects/${h.projectId}/assignments`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual([{ actorId: h.ids.bob, roleId: await roleId(h, 'manager') }]);
  });

  test('extended metadata expands the actor', async () => {
    const h = await harness();
    const res = await h.get(`/v1/projects/${h.projectId}/assignments`, { as: 'bob', ...X });
    expect(res.status).toBe(200);
    const body = await json<Array<{ actor: Record<string, unknown>; roleId: number }>>(res);
    expect(body).toHaveLength(1);
    expect(Object.keys(body[0]!)).toEqual(['actorId', 'roleId', 'actor']);
    expect(Object.keys(body[0]!.actor)).toEqual(ACTOR_KEYS);
    expect(body[0]).toMatchObject({ actor: { id: h.ids.bob, type: 'user', displayName: 'bob' }, roleId: await roleId(h, 'manager') });
  });

  test('chelsea → 403.1; anonymous → 401.2', async () => {
    const h = await harness();
    await expectProblem(await h.get(`/v1/projects/${h.projectId}/assignments`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.get(`/v1/projects/${h.projectId}/assignments`), 401.2);
  });
});

describe('GET P/assignments/:roleId', () => {
  test('lists the actors with the role, by system name or numeric id', async () => {
    const h = await harness();
    const res = await h.get(`/v1/projects/${h.projectId}/assignments/manager`, { as: 'bob' });
    expect(res.status).toBe(200);
    const body = await json<Array<Record<string, unknown>>>(res);
    expect(body).toHaveLength(1);
    expect(Object.keys(body[0]!)).toEqual(ACTOR_KEYS);
    expect(body[0]).toMatchObject({ id: h.ids.bob, type: 'user', displayName: 'bob' });
    const byId = await h.get(`/v1/projects/${h.projectId}/assignments/${await roleId(h, 'manager')}`, { as: 'bob' });
    expect(byId.status).toBe(200);
    expect(await json(byId)).toEqual(body);
    expect(await json(await h.get(`/v1/projects/${h.projectId}/assignments/viewer`, { as: 'bob' }))).toEqual([]);
  });

  test('unknown role → 404.1; chelsea → 403.1', async () => {
    const h = await harness();
    await expectProblem(await h.get(`/v1/projects/${h.projectId}/assignments/nonexistent`, { as: 'bob' }), 404.1);
    await expectProblem(await h.get(`/v1/projects/${h.projectId}/assignments/manager`, { as: 'chelsea' }), 403.1);
  });
});

describe('POST/DELETE P/assignments/:roleId/:actorId', () => {
  test('bob makes chelsea a viewer: she sees and reads the project but cannot change it', async () => {
    const h = await harness();
    const viewer = await roleId(h, 'viewer');
    const P = `/v1/projects/${h.projectId}`;
    expect(await visibleProjectNames(h, 'chelsea')).toEqual([]);
    await expectProblem(await h.get(P, { as: 'chelsea' }), 403.1);

    const res = await h.post(`${P}/assignments/viewer/${h.ids.chelsea}`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });

    const stored = await h.db.select().from(assignments).where(eq(assignments.actorId, h.ids.chelsea));
    expect(stored).toEqual([{ actorId: h.ids.chelsea, roleId: viewer, acteeId: await projectActeeId(h) }]);
    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['user.assignment.create']);
    expect(audits[0]).toMatchObject({
      actorId: h.ids.bob,
      acteeId: await acteeIdOfActor(h, h.ids.chelsea),
      details: { roleId: viewer, grantedActeeId: await projectActeeId(h) },
    });

    expect(await visibleProjectNames(h, 'chelsea')).toEqual(['Default Project']);
    const got = await h.get(P, { as: 'chelsea' });
    expect(got.status).toBe(200);
    expect(await json(got)).toMatchObject({ id: h.projectId, name: 'Default Project' });
    await expectProblem(await h.patch(P, { as: 'chelsea', body: { name: 'Hijacked' } }), 403.1);
    await expectProblem(await h.get(`${P}/assignments`, { as: 'chelsea' }), 403.1);
    expect(await json(await h.get(`${P}/assignments`, { as: 'bob' }))).toEqual(
      expect.arrayContaining([{ actorId: h.ids.chelsea, roleId: viewer }]),
    );
  });

  test('bob cannot grant a role with verbs he lacks (admin) → 403.1, nothing stored', async () => {
    const h = await harness();
    await expectProblem(await h.post(`/v1/projects/${h.projectId}/assignments/admin/${h.ids.chelsea}`, { as: 'bob' }), 403.1);
    expect(await h.db.select().from(assignments).where(eq(assignments.actorId, h.ids.chelsea))).toEqual([]);
    expect(await h.auditActions()).toEqual([]);
  });

  test('bob may make chelsea a fellow manager', async () => {
    const h = await harness();
    expect((await h.post(`/v1/projects/${h.projectId}/assignments/manager/${h.ids.chelsea}`, { as: 'bob' })).status).toBe(200);
    const res = await h.patch(`/v1/projects/${h.projectId}`, { as: 'chelsea', body: { name: 'Renamed by Chelsea' } });
    expect(res.status).toBe(200);
  });

  test('a Data Collector (formfill) sees the project in GET /v1/projects', async () => {
    const h = await harness();
    const res = await h.post(`/v1/projects/${h.projectId}/assignments/formfill/${h.ids.chelsea}`, { as: 'bob' });
    expect(res.status).toBe(200);
    const list = await json<Array<{ name: string; verbs: string[] }>>(await h.get('/v1/projects', { as: 'chelsea' }));
    expect(list.map((p) => p.name)).toEqual(['Default Project']);
    expect(list[0]!.verbs).toEqual(expect.arrayContaining(['project.read', 'open_form.list']));
    expect(list[0]!.verbs).not.toContain('project.update');
  });

  test('granting twice → 409.3', async () => {
    const h = await harness();
    expect((await h.post(`/v1/projects/${h.projectId}/assignments/viewer/${h.ids.chelsea}`, { as: 'bob' })).status).toBe(200);
    await expectProblem(await h.post(`/v1/projects/${h.projectId}/assignments/viewer/${h.ids.chelsea}`, { as: 'bob' }), 409.3);
    await expectProblem(await h.post(`/v1/projects/${h.projectId}/assignments/manager/${h.ids.bob}`, { as: 'bob' }), 409.3);
  });

  test('revoking: audited, and chelsea loses access', async () => {
    const h = await harness();
    const viewer = await roleId(h, 'viewer');
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.post(`${P}/assignments/viewer/${h.ids.chelsea}`, { as: 'bob' })).status).toBe(200);
    expect((await h.get(P, { as: 'chelsea' })).status).toBe(200);

    const res = await h.delete(`${P}/assignments/viewer/${h.ids.chelsea}`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['user.assignment.create', 'user.assignment.delete']);
    expect(audits[1]).toMatchObject({
      actorId: h.ids.bob,
      acteeId: await acteeIdOfActor(h, h.ids.chelsea),
      details: { roleId: viewer, revokedActeeId: await projectActeeId(h) },
    });
    expect(await visibleProjectNames(h, 'chelsea')).toEqual([]);
    await expectProblem(await h.get(P, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.delete(`${P}/assignments/viewer/${h.ids.chelsea}`, { as: 'bob' }), 404.1);
  });

  test('chelsea cannot grant herself a role → 403.1; anonymous → 401.2', async () => {
    const h = await harness();
    await expectProblem(await h.post(`/v1/projects/${h.projectId}/assignments/viewer/${h.ids.chelsea}`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.post(`/v1/projects/${h.projectId}/assignments/viewer/${h.ids.chelsea}`), 401.2);
    await expectProblem(await h.delete(`/v1/projects/${h.projectId}/assignments/manager/${h.ids.bob}`, { as: 'chelsea' }), 403.1);
  });

  test('unknown role or actor → 404.1', async () => {
    const h = await harness();
    await expectProblem(await h.post(`/v1/projects/${h.projectId}/assignments/nonexistent/${h.ids.chelsea}`, { as: 'bob' }), 404.1);
    await expectProblem(await h.post(`/v1/projects/${h.projectId}/assignments/viewer/999999`, { as: 'bob' }), 404.1);
  });

  test('a deleted user drops out of the project assignment lists', async () => {
    const h = await harness();
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.post(`${P}/assignments/viewer/${h.ids.chelsea}`, { as: 'bob' })).status).toBe(200);
    expect(await json(await h.get(`${P}/assignments/viewer`, { as: 'bob' }))).toHaveLength(1);
    expect((await h.delete(`/v1/users/${h.ids.chelsea}`, { as: 'alice' })).status).toBe(200);
    expect(await json(await h.get(`${P}/assignments`, { as: 'bob' }))).toEqual([{ actorId: h.ids.bob, roleId: await roleId(h, 'manager') }]);
    expect(await json(await h.get(`${P}/assignments/viewer`, { as: 'bob' }))).toEqual([]);
    await expectProblem(await h.post(`${P}/assignments/formfill/${h.ids.chelsea}`, { as: 'bob' }), 404.1);
  });

  test('an assignment on one project does not reach another', async () => {
    const h = await harness();
    const other = await json<{ id: number }>(await h.post('/v1/projects', { as: 'alice', body: { name: 'Other' } }));
    expect((await h.post(`/v1/projects/${h.projectId}/assignments/viewer/${h.ids.chelsea}`, { as: 'bob' })).status).toBe(200);
    await expectProblem(await h.get(`/v1/projects/${other.id}`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.get(`/v1/projects/${other.id}/assignments`, { as: 'bob' }), 403.1);
    await expectProblem(await h.post(`/v1/projects/${other.id}/assignments/viewer/${h.ids.chelsea}`, { as: 'bob' }), 403.1);
  });
});

describe('unknown project: 404.1 before any rights check', () => {
  test.each([
    ['GET', '/assignments'],
    ['GET', '/assignments/manager'],
    ['GET', '/assignments/forms'],
    ['POST', '/assignments/viewer/:chelsea'],
    ['DELETE', '/assignments/viewer/:chelsea'],
    ['GET', '/forms/simple/assignments'],
  ])('%s /v1/projects/999999%s → 404.1 for chelsea and bob; anonymous 401.2 first (Central)', async (method, suffix) => {
    const h = await harness();
    const path = `/v1/projects/999999${suffix.replace(':chelsea', String(h.ids.chelsea))}`;
    for (const as of ['chelsea', 'bob'] as const) {
      await expectProblem(await h.request(method, path, { as }), 404.1);
    }
    await expectProblem(await h.request(method, path, { as: 'anonymous' }), 401.2);
  });

  test('a deleted project → 404.1', async () => {
    const h = await harness();
    expect((await h.delete(`/v1/projects/${h.projectId}`, { as: 'alice' })).status).toBe(200);
    await expectProblem(await h.get(`/v1/projects/${h.projectId}/assignments`, { as: 'bob' }), 404.1);
  });
});

describe('form assignments', () => {
  test('bob assigns an App User to a form (app-user role): stored on the form, audited as field_key', async () => {
    const h = await harness();
    const appUserRole = await roleId(h, 'app-user');
    const form = await createForm(h, 'simple');
    const au = await createAppUser(h);
    const F = `/v1/projects/${h.projectId}/forms/simple`;

    const res = await h.post(`${F}/assignments/app-user/${au.id}`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });

    expect(await h.db.select().from(assignments).where(eq(assignments.actorId, au.id))).toEqual([
      { actorId: au.id, roleId: appUserRole, acteeId: form.acteeId },
    ]);
    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['field_key.create', 'field_key.assignment.create']);
    expect(audits[1]).toMatchObject({
      actorId: h.ids.bob,
      acteeId: await acteeIdOfActor(h, au.id),
      details: { roleId: appUserRole, grantedActeeId: form.acteeId },
    });
  });

  test('GET P/assignments/forms[/:roleId], F/assignments[/:roleId]', async () => {
    const h = await harness();
    const appUserRole = await roleId(h, 'app-user');
    const formfill = await roleId(h, 'formfill');
    await createForm(h, 'simple');
    await createForm(h, 'other');
    const au = await createAppUser(h);
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.post(`${P}/forms/simple/assignments/app-user/${au.id}`, { as: 'bob' })).status).toBe(200);
    expect((await h.post(`${P}/forms/other/assignments/formfill/${h.ids.chelsea}`, { as: 'bob' })).status).toBe(200);

    const summary = await h.get(`${P}/assignments/forms`, { as: 'bob' });
    expect(summary.status).toBe(200);
    const rows = await json<Array<Record<string, unknown>>>(summary);
    expect(rows).toHaveLength(2);
    expect(rows).toEqual(expect.arrayContaining([
      { actorId: au.id, xmlFormId: 'simple', roleId: appUserRole },
      { actorId: h.ids.chelsea, xmlFormId: 'other', roleId: formfill },
    ]));
    for (const r of rows) expect(Object.keys(r)).toEqual(['actorId', 'xmlFormId', 'roleId']);

    const ext = await json<Array<{ actor: Record<string, unknown>; xmlFormId: string; roleId: number }>>(
      await h.get(`${P}/assignments/forms`, { as: 'bob', ...X }),
    );
    expect(ext).toHaveLength(2);
    for (const r of ext) {
      expect(Object.keys(r)).toEqual(['actor', 'xmlFormId', 'roleId']);
      expect(Object.keys(r.actor)).toEqual(ACTOR_KEYS);
    }
    expect(ext).toEqual(expect.arrayContaining([
      { actor: expect.objectContaining({ id: au.id, type: 'field_key', displayName: 'Collector' }), xmlFormId: 'simple', roleId: appUserRole },
      { actor: expect.objectContaining({ id: h.ids.chelsea, type: 'user' }), xmlFormId: 'other', roleId: formfill },
    ]));

    expect(await json(await h.get(`${P}/assignments/forms/app-user`, { as: 'bob' }))).toEqual([
      { actorId: au.id, xmlFormId: 'simple', roleId: appUserRole },
    ]);
    expect(await json(await h.get(`${P}/assignments/forms/${appUserRole}`, { as: 'bob' }))).toEqual([
      { actorId: au.id, xmlFormId: 'simple', roleId: appUserRole },
    ]);
    expect(await json(await h.get(`${P}/assignments/forms/manager`, { as: 'bob' }))).toEqual([]);
    await expectProblem(await h.get(`${P}/assignments/forms/nonexistent`, { as: 'bob' }), 404.1);

    // project-level listing does not include form assignments
    expect(await json(await h.get(`${P}/assignments`, { as: 'bob' }))).toEqual([{ actorId: h.ids.bob, roleId: await roleId(h, 'manager') }]);

    const formList = await h.get(`${P}/forms/simple/assignments`, { as: 'bob' });
    expect(formList.status).toBe(200);
    expect(await json(formList)).toEqual([{ actorId: au.id, roleId: appUserRole }]);
    const formExt = await json<Array<{ actor: Record<string, unknown>; roleId: number }>>(
      await h.get(`${P}/forms/simple/assignments`, { as: 'bob', ...X }),
    );
    expect(formExt).toEqual([{ actorId: au.id, roleId: appUserRole, actor: expect.objectContaining({ id: au.id, type: 'field_key' }) }]);
    expect(Object.keys(formExt[0]!)).toEqual(['actorId', 'roleId', 'actor']);

    const byRole = await h.get(`${P}/forms/simple/assignments/app-user`, { as: 'bob' });
    expect(byRole.status).toBe(200);
    const actorsWithRole = await json<Array<Record<string, unknown>>>(byRole);
    expect(actorsWithRole).toHaveLength(1);
    expect(Object.keys(actorsWithRole[0]!)).toEqual(ACTOR_KEYS);
    expect(actorsWithRole[0]).toMatchObject({ id: au.id, type: 'field_key', displayName: 'Collector' });
    expect(await json(await h.get(`${P}/forms/other/assignments/app-user`, { as: 'bob' }))).toEqual([]);
  });

  test('a project without forms has no form assignments', async () => {
    const h = await harness();
    const res = await h.get(`/v1/projects/${h.projectId}/assignments/forms`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual([]);
  });

  test('chelsea cannot list or grant form assignments → 403.1', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    const P = `/v1/projects/${h.projectId}`;
    await expectProblem(await h.get(`${P}/assignments/forms`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.get(`${P}/forms/simple/assignments`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.post(`${P}/forms/simple/assignments/formfill/${h.ids.chelsea}`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.get(`${P}/forms/simple/assignments`), 401.2);
  });

  test('revoking a form assignment', async () => {
    const h = await harness();
    const appUserRole = await roleId(h, 'app-user');
    const form = await createForm(h, 'simple');
    const au = await createAppUser(h);
    const F = `/v1/projects/${h.projectId}/forms/simple`;
    expect((await h.post(`${F}/assignments/app-user/${au.id}`, { as: 'bob' })).status).toBe(200);
    await expectProblem(await h.post(`${F}/assignments/app-user/${au.id}`, { as: 'bob' }), 409.3);
    const res = await h.delete(`${F}/assignments/app-user/${au.id}`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(await json(await h.get(`${F}/assignments`, { as: 'bob' }))).toEqual([]);
    const audits = await h.audits();
    expect(audits.at(-1)).toMatchObject({
      action: 'field_key.assignment.delete',
      acteeId: await acteeIdOfActor(h, au.id),
      details: { roleId: appUserRole, revokedActeeId: form.acteeId },
    });
    await expectProblem(await h.delete(`${F}/assignments/app-user/${au.id}`, { as: 'bob' }), 404.1);
  });

  test('a deleted App User cannot be assigned → 404.1', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    const au = await createAppUser(h);
    expect((await h.delete(`/v1/projects/${h.projectId}/app-users/${au.id}`, { as: 'bob' })).status).toBe(200);
    await expectProblem(await h.post(`/v1/projects/${h.projectId}/forms/simple/assignments/app-user/${au.id}`, { as: 'bob' }), 404.1);
  });

  test('unknown form → 404.1 (also for a form of another project, and a deleted form)', async () => {
    const h = await harness();
    const au = await createAppUser(h);
    const other = await json<{ id: number }>(await h.post('/v1/projects', { as: 'alice', body: { name: 'Other' } }));
    await createForm(h, 'elsewhere', other.id);
    const gone = await createForm(h, 'gone');
    await h.db.update(forms).set({ deletedAt: new Date() }).where(eq(forms.id, gone.id));
    const P = `/v1/projects/${h.projectId}`;
    for (const xmlFormId of ['nonexistent', 'elsewhere', 'gone']) {
      await expectProblem(await h.get(`${P}/forms/${xmlFormId}/assignments`, { as: 'bob' }), 404.1);
      await expectProblem(await h.get(`${P}/forms/${xmlFormId}/assignments/app-user`, { as: 'bob' }), 404.1);
      await expectProblem(await h.post(`${P}/forms/${xmlFormId}/assignments/app-user/${au.id}`, { as: 'bob' }), 404.1);
      await expectProblem(await h.delete(`${P}/forms/${xmlFormId}/assignments/app-user/${au.id}`, { as: 'bob' }), 404.1);
      await expectProblem(await h.get(`${P}/forms/${xmlFormId}/assignments`, { as: 'chelsea' }), 404.1);
    }
  });
});

describe('PUT /v1/projects/:id (deep update)', () => {
  test('sets the form state and replaces its assignments', async () => {
    const h = await harness();
    const appUserRole = await roleId(h, 'app-user');
    const formfill = await roleId(h, 'formfill');
    const form = await createForm(h, 'simple');
    const au = await createAppUser(h);
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.post(`${P}/forms/simple/assignments/formfill/${h.ids.chelsea}`, { as: 'bob' })).status).toBe(200);
    const before = (await h.audits()).length;

    const res = await h.put(P, {
      as: 'bob',
      body: {
        name: 'Default Project',
        description: 'deep',
        forms: [{ xmlFormId: 'simple', state: 'closing', assignments: [{ roleId: appUserRole, actorId: au.id }] }],
      },
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ id: h.projectId, name: 'Default Project', description: 'deep', archived: null });

    const [stored] = await h.db.select().from(forms).where(eq(forms.id, form.id));
    expect(stored!.state).toBe('closing');
    expect(await json(await h.get(`${P}/forms/simple/assignments`, { as: 'bob' }))).toEqual([{ actorId: au.id, roleId: appUserRole }]);
    expect(await json(await h.get(`${P}/assignments/forms`, { as: 'bob' }))).toEqual([
      { actorId: au.id, xmlFormId: 'simple', roleId: appUserRole },
    ]);

    const audits = (await h.audits()).slice(before);
    expect(audits.map((a) => a.action)).toEqual(expect.arrayContaining([
      'project.update', 'form.update', 'user.assignment.delete', 'field_key.assignment.create',
    ]));
    expect(audits.find((a) => a.action === 'user.assignment.delete')).toMatchObject({
      acteeId: await acteeIdOfActor(h, h.ids.chelsea),
      details: { roleId: formfill, revokedActeeId: form.acteeId },
    });
    expect(audits.find((a) => a.action === 'field_key.assignment.create')).toMatchObject({
      acteeId: await acteeIdOfActor(h, au.id),
      details: { roleId: appUserRole, grantedActeeId: form.acteeId },
    });
  });

  test('a form listed without assignments keeps its assignments', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    const au = await createAppUser(h);
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.post(`${P}/forms/simple/assignments/app-user/${au.id}`, { as: 'bob' })).status).toBe(200);
    const res = await h.put(P, { as: 'bob', body: { name: 'Default Project', forms: [{ xmlFormId: 'simple', state: 'closed' }] } });
    expect(res.status).toBe(200);
    expect(await json(await h.get(`${P}/forms/simple/assignments`, { as: 'bob' }))).toEqual([
      { actorId: au.id, roleId: await roleId(h, 'app-user') },
    ]);
  });

  test('an empty assignments list removes every form assignment', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    const au = await createAppUser(h);
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.post(`${P}/forms/simple/assignments/app-user/${au.id}`, { as: 'bob' })).status).toBe(200);
    const res = await h.put(P, { as: 'bob', body: { name: 'Default Project', forms: [{ xmlFormId: 'simple', assignments: [] }] } });
    expect(res.status).toBe(200);
    expect(await json(await h.get(`${P}/forms/simple/assignments`, { as: 'bob' }))).toEqual([]);
  });

  test('a forms list that is not the full set → 501.2, and nothing changes', async () => {
    const h = await harness();
    const a = await createForm(h, 'a');
    await createForm(h, 'b');
    const P = `/v1/projects/${h.projectId}`;
    const before = (await h.audits()).length;
    for (const formsList of [
      [{ xmlFormId: 'a', state: 'closed' }],
      [],
      [{ xmlFormId: 'a', state: 'closed' }, { xmlFormId: 'b' }, { xmlFormId: 'c' }],
      [{ xmlFormId: 'a', state: 'closed' }, { xmlFormId: 'c' }],
    ]) {
      await expectProblem(await h.put(P, { as: 'bob', body: { name: 'Changed', forms: formsList } }), 501.2);
    }
    expect(await json(await h.get(P, { as: 'bob' }))).toMatchObject({ name: 'Default Project' });
    const [stored] = await h.db.select().from(forms).where(eq(forms.id, a.id));
    expect(stored!.state).toBe('open');
    expect((await h.audits()).length).toBe(before);
  });

  test('the same xmlFormId twice → 400.8', async () => {
    const h = await harness();
    await createForm(h, 'simple');
    const res = await h.put(`/v1/projects/${h.projectId}`, {
      as: 'bob',
      body: { name: 'Default Project', forms: [{ xmlFormId: 'simple' }, { xmlFormId: 'simple', state: 'closed' }] },
    });
    await expectProblem(res, 400.8);
  });

  test('true PUT: omitting description nulls it', async () => {
    const h = await harness();
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.patch(P, { as: 'bob', body: { description: 'a description' } })).status).toBe(200);
    expect(await json(await h.get(P, { as: 'bob' }))).toMatchObject({ description: 'a description' });
    const res = await h.put(P, { as: 'bob', body: { name: 'Renamed' } });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ name: 'Renamed', description: null, archived: null });
    expect(await json(await h.get(P, { as: 'bob' }))).toMatchObject({ name: 'Renamed', description: null });
  });

  test('chelsea → 403.1; unknown project → 404.1', async () => {
    const h = await harness();
    await expectProblem(await h.put(`/v1/projects/${h.projectId}`, { as: 'chelsea', body: { name: 'X' } }), 403.1);
    await expectProblem(await h.put('/v1/projects/999999', { as: 'bob', body: { name: 'X' } }), 404.1);
  });
});
