import { describe, expect, test } from 'vitest';
import { actors, assignments } from '../../../drizzle/schema';
import { eq, harness, json, type Harness } from '../../helpers/harness';

const ACTOR_KEYS = ['id', 'type', 'displayName', 'createdAt', 'updatedAt', 'deletedAt'];

const roleId = async (h: Harness, system: string): Promise<number> =>
  (await json<{ id: number }>(await h.get(`/v1/roles/${system}`, { as: 'alice' }))).id;

const acteeIdOf = async (h: Harness, actorId: number): Promise<string> => {
  const [row] = await h.db.select().from(actors).where(eq(actors.id, actorId));
  return row!.acteeId;
};

const expectProblem = async (res: Response, code: number) => {
  expect(res.status).toBe(Math.floor(code));
  expect(await json(res)).toMatchObject({ code });
};

describe('GET /v1/assignments', () => {
  test('alice sees her own site-wide admin assignment', async () => {
    const h = await harness();
    const admin = await roleId(h, 'admin');
    const res = await h.get('/v1/assignments', { as: 'alice' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual([{ actorId: h.ids.alice, roleId: admin }]);
  });

  test('extended metadata expands the actor', async () => {
    const h = await harness();
    const admin = await roleId(h, 'admin');
    const res = await h.get('/v1/assignments', { as: 'alice', headers: { 'X-Extended-Metadata': 'true' } });
    expect(res.status).toBe(200);
    const body = await json<Array<{ actor: Record<string, unknown>; roleId: number }>>(res);
    expect(body).toHaveLength(1);
    expect(Object.keys(body[0]!)).toEqual(['actorId', 'roleId', 'actor']);
    expect(body[0]!.roleId).toBe(admin);
    expect(Object.keys(body[0]!.actor)).toEqual(ACTOR_KEYS);
    expect(body[0]!.actor).toMatchObject({ id: h.ids.alice, type: 'user', displayName: 'alice', deletedAt: null });
  });

  test.each(['bob', 'chelsea'] as const)('%s → 403.1', async (who) => {
    const h = await harness();
    await expectProblem(await h.get('/v1/assignments', { as: who }), 403.1);
  });

  test('anonymous → 401.2', async () => {
    const h = await harness();
    await expectProblem(await h.get('/v1/assignments'), 401.2);
  });
});

describe('GET /v1/assignments/:roleId', () => {
  test('lists the actors holding a site role, by system name or numeric id', async () => {
    const h = await harness();
    const res = await h.get('/v1/assignments/admin', { as: 'alice' });
    expect(res.status).toBe(200);
    const body = await json<Array<Record<string, unknown>>>(res);
    expect(body).toHaveLength(1);
    expect(Object.keys(body[0]!)).toEqual(ACTOR_KEYS);
    expect(body[0]).toMatchObject({ id: h.ids.alice, type: 'user', displayName: 'alice' });
    const byId = await h.get(`/v1/assignments/${await roleId(h, 'admin')}`, { as: 'alice' });
    expect(await json(byId)).toEqual(body);
  });

  test('a role nobody holds site-wide gives []', async () => {
    const h = await harness();
    const res = await h.get('/v1/assignments/manager', { as: 'alice' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual([]);
  });

  test('unknown role → 404.1; bob → 403.1', async () => {
    const h = await harness();
    await expectProblem(await h.get('/v1/assignments/nonexistent', { as: 'alice' }), 404.1);
    await expectProblem(await h.get('/v1/assignments/admin', { as: 'bob' }), 403.1);
  });
});

describe('POST /v1/assignments/:roleId/:actorId', () => {
  test('alice makes chelsea an administrator: chelsea can then create projects; audited on chelsea', async () => {
    const h = await harness();
    const admin = await roleId(h, 'admin');
    await expectProblem(await h.post('/v1/projects', { as: 'chelsea', body: { name: 'Before' } }), 403.1);

    const res = await h.post(`/v1/assignments/admin/${h.ids.chelsea}`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });

    const rows = await h.db.select().from(assignments).where(eq(assignments.actorId, h.ids.chelsea));
    expect(rows).toEqual([{ actorId: h.ids.chelsea, roleId: admin, acteeId: '*' }]);
    expect(await json(await h.get('/v1/assignments', { as: 'alice' }))).toEqual(
      expect.arrayContaining([{ actorId: h.ids.chelsea, roleId: admin }]),
    );

    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['user.assignment.create']);
    expect(audits[0]).toMatchObject({
      actorId: h.ids.alice,
      acteeId: await acteeIdOf(h, h.ids.chelsea),
      details: { roleId: admin, grantedActeeId: '*' },
    });

    const created = await h.post('/v1/projects', { as: 'chelsea', body: { name: 'Chelsea Project' } });
    expect(created.status).toBe(200);
    expect(await json(created)).toMatchObject({ name: 'Chelsea Project' });
  });

  test('a request body is ignored; a numeric role id works', async () => {
    const h = await harness();
    const admin = await roleId(h, 'admin');
    const res = await h.post(`/v1/assignments/${admin}/${h.ids.chelsea}`, { as: 'alice', body: { roleId: 9999, junk: true } });
    expect(res.status).toBe(200);
    expect(await json(await h.get('/v1/assignments/admin', { as: 'alice' }))).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: h.ids.chelsea })]),
    );
  });

  test('granting the same role again → 409.3, nothing more stored or audited', async () => {
    const h = await harness();
    expect((await h.post(`/v1/assignments/admin/${h.ids.chelsea}`, { as: 'alice' })).status).toBe(200);
    const again = await h.post(`/v1/assignments/admin/${h.ids.chelsea}`, { as: 'alice' });
    await expectProblem(again, 409.3);
    expect(await h.db.select().from(assignments).where(eq(assignments.actorId, h.ids.chelsea))).toHaveLength(1);
    expect(await h.auditActions()).toEqual(['user.assignment.create']);
  });

  test('granting alice the admin role she already holds → 409.3', async () => {
    const h = await harness();
    await expectProblem(await h.post(`/v1/assignments/admin/${h.ids.alice}`, { as: 'alice' }), 409.3);
  });

  test('unknown role or unknown actor → 404.1', async () => {
    const h = await harness();
    await expectProblem(await h.post(`/v1/assignments/nonexistent/${h.ids.chelsea}`, { as: 'alice' }), 404.1);
    await expectProblem(await h.post('/v1/assignments/999999/' + h.ids.chelsea, { as: 'alice' }), 404.1);
    await expectProblem(await h.post('/v1/assignments/admin/999999', { as: 'alice' }), 404.1);
    expect(await h.auditActions()).toEqual([]);
  });

  test('bob (a project manager) cannot grant site roles → 403.1', async () => {
    const h = await harness();
    await expectProblem(await h.post(`/v1/assignments/admin/${h.ids.chelsea}`, { as: 'bob' }), 403.1);
    await expectProblem(await h.post(`/v1/assignments/manager/${h.ids.chelsea}`, { as: 'bob' }), 403.1);
    await expectProblem(await h.post(`/v1/assignments/admin/${h.ids.bob}`, { as: 'bob' }), 403.1);
    expect(await h.db.select().from(assignments).where(eq(assignments.actorId, h.ids.chelsea))).toEqual([]);
    expect(await h.auditActions()).toEqual([]);
  });

  test('chelsea → 403.1; anonymous → 401.2', async () => {
    const h = await harness();
    await expectProblem(await h.post(`/v1/assignments/admin/${h.ids.chelsea}`, { as: 'chelsea' }), 403.1);
    await expectProblem(await h.post(`/v1/assignments/admin/${h.ids.chelsea}`), 401.2);
  });
});

describe('DELETE /v1/assignments/:roleId/:actorId', () => {
  test('revokes: audited on chelsea, and chelsea loses the rights', async () => {
    const h = await harness();
    const admin = await roleId(h, 'admin');
    expect((await h.post(`/v1/assignments/admin/${h.ids.chelsea}`, { as: 'alice' })).status).toBe(200);
    expect((await h.get('/v1/assignments', { as: 'chelsea' })).status).toBe(200);

    const res = await h.delete(`/v1/assignments/admin/${h.ids.chelsea}`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    expect(await h.db.select().from(assignments).where(eq(assignments.actorId, h.ids.chelsea))).toEqual([]);

    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['user.assignment.create', 'user.assignment.delete']);
    expect(audits[1]).toMatchObject({
      actorId: h.ids.alice,
      acteeId: await acteeIdOf(h, h.ids.chelsea),
      details: { roleId: admin, revokedActeeId: '*' },
    });

    await expectProblem(await h.get('/v1/assignments', { as: 'chelsea' }), 403.1);
    await expectProblem(await h.post('/v1/projects', { as: 'chelsea', body: { name: 'After' } }), 403.1);
  });

  test('an assignment that does not exist → 404.1', async () => {
    const h = await harness();
    await expectProblem(await h.delete(`/v1/assignments/admin/${h.ids.chelsea}`, { as: 'alice' }), 404.1);
    // bob manages a project, but holds no site-wide manager role
    await expectProblem(await h.delete(`/v1/assignments/manager/${h.ids.bob}`, { as: 'alice' }), 404.1);
    expect(await h.auditActions()).toEqual([]);
  });

  test('unknown role or actor → 404.1', async () => {
    const h = await harness();
    await expectProblem(await h.delete(`/v1/assignments/nonexistent/${h.ids.alice}`, { as: 'alice' }), 404.1);
    await expectProblem(await h.delete('/v1/assignments/admin/999999', { as: 'alice' }), 404.1);
  });

  test('bob cannot revoke alice\'s admin role → 403.1, and alice keeps it', async () => {
    const h = await harness();
    await expectProblem(await h.delete(`/v1/assignments/admin/${h.ids.alice}`, { as: 'bob' }), 403.1);
    await expectProblem(await h.delete(`/v1/assignments/admin/${h.ids.alice}`), 401.2);
    expect((await h.get('/v1/assignments', { as: 'alice' })).status).toBe(200);
  });
});
