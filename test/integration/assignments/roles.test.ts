import { describe, expect, test } from 'vitest';
import { harness, json } from '../../helpers/harness';

const SYSTEM_ROLES = ['admin', 'app-user', 'pwreset', 'manager', 'viewer', 'formview', 'formfill', 'pub-link'];
const ROLE_KEYS = ['id', 'name', 'system', 'createdAt', 'updatedAt', 'verbs'];

interface RoleJson { id: number; name: string; system: string; createdAt: string; updatedAt: string | null; verbs: string[] }

describe('GET /v1/roles', () => {
  test('anonymous → 401.2 (Central requires authentication everywhere but login)', async () => {
    const h = await harness();
    const res = await h.get('/v1/roles');
    expect(res.status).toBe(401);
    expect(await json(res)).toMatchObject({ code: 401.2 });
  });

  test('lists the 8 system roles in their fixed order to anyone signed in', async () => {
    const h = await harness();
    const res = await h.get('/v1/roles', { as: 'chelsea' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const roles = await json<RoleJson[]>(res);
    expect(roles.map((r) => r.system)).toEqual(SYSTEM_ROLES);
    for (const r of roles) {
      expect(Object.keys(r)).toEqual(ROLE_KEYS);
      expect(typeof r.id).toBe('number');
      expect(Number.isNaN(Date.parse(r.createdAt))).toBe(false);
      expect(Array.isArray(r.verbs)).toBe(true);
    }
  });

  test('carries Central\'s role names and verbs', async () => {
    const h = await harness();
    const roles = await json<RoleJson[]>(await h.get('/v1/roles', { as: 'chelsea' }));
    const bySystem = new Map(roles.map((r) => [r.system, r]));
    expect(bySystem.get('admin')!.name).toBe('Administrator');
    expect(bySystem.get('manager')!.name).toBe('Project Manager');
    expect(bySystem.get('viewer')!.name).toBe('Project Viewer');
    expect(bySystem.get('formfill')!.name).toBe('Data Collector');
    expect(bySystem.get('app-user')!.name).toBe('App User');
    expect(bySystem.get('admin')!.verbs).toEqual(expect.arrayContaining(['project.create', 'user.create', 'audit.read', 'assignment.create']));
    expect(bySystem.get('manager')!.verbs).toEqual(expect.arrayContaining(['project.update', 'assignment.create', 'field_key.create']));
    expect(bySystem.get('manager')!.verbs).not.toContain('project.create');
    expect(bySystem.get('viewer')!.verbs).toContain('project.read');
    expect(bySystem.get('viewer')!.verbs).not.toContain('project.update');
    expect(bySystem.get('formfill')!.verbs).toEqual(expect.arrayContaining(['project.read', 'open_form.list', 'submission.create']));
    expect(bySystem.get('app-user')!.verbs).toEqual(expect.arrayContaining(['open_form.read', 'submission.create']));
  });
});

describe('GET /v1/roles/:id', () => {
  test('by system name and by numeric id give the same role', async () => {
    const h = await harness();
    const bySystem = await h.get('/v1/roles/admin', { as: 'chelsea' });
    expect(bySystem.status).toBe(200);
    const admin = await json<RoleJson>(bySystem);
    expect(Object.keys(admin)).toEqual(ROLE_KEYS);
    expect(admin).toMatchObject({ name: 'Administrator', system: 'admin' });
    const byId = await h.get(`/v1/roles/${admin.id}`, { as: 'chelsea' });
    expect(byId.status).toBe(200);
    expect(await json(byId)).toEqual(admin);
    const fromList = (await json<RoleJson[]>(await h.get('/v1/roles', { as: 'chelsea' }))).find((r) => r.system === 'admin');
    expect(fromList).toEqual(admin);
  });

  test('every system role is reachable by its system name', async () => {
    const h = await harness();
    for (const system of SYSTEM_ROLES) {
      const res = await h.get(`/v1/roles/${system}`, { as: 'bob' });
      expect(res.status).toBe(200);
      expect((await json<RoleJson>(res)).system).toBe(system);
    }
  });

  test.each(['nonexistent', '999999'])('unknown role %s → 404.1', async (id) => {
    const h = await harness();
    const res = await h.get(`/v1/roles/${id}`, { as: 'chelsea' });
    expect(res.status).toBe(404);
    expect(await json(res)).toMatchObject({ code: 404.1 });
  });
});
