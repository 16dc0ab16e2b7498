import { describe, expect, test } from 'vitest';
import { harness, json } from '../helpers/harness';

describe('harness smoke', () => {
  test('alice lists the Default Project; anonymous gets [] (the spec\'s exception to Central\'s 401)', async () => {
    const h = await harness();
    const res = await h.get('/v1/projects', { as: 'alice' });
    expect(res.status).toBe(200);
    expect((await json(res)).map((p: { name: string }) => p.name)).toContain('Default Project');
    const anonymous = await h.get('/v1/projects');
    expect(anonymous.status).toBe(200);
    expect(await json(anonymous)).toEqual([]);
    // Any other route still refuses no credentials with 401.2, as Central.
    const project = await h.get(`/v1/projects/${h.projectId}`);
    expect(project.status).toBe(401);
    expect((await json(project)).code).toBe(401.2);
  });

  test('a project created in one test is gone in the next (rollback)', async () => {
    const h = await harness();
    const res = await h.post('/v1/projects', { as: 'alice', body: { name: 'Transient' } });
    expect(res.status).toBe(200);
    expect(await h.auditActions()).toEqual(['project.create']);
  });

  test('...and is not visible here', async () => {
    const h = await harness();
    const names = (await json(await h.get('/v1/projects', { as: 'alice' }))).map((p: { name: string }) => p.name);
    expect(names).not.toContain('Transient');
  });

  test('real HTTP over a loopback socket', async () => {
    const h = await harness();
    const base = await h.listen();
    const res = await fetch(`${base}/v1/projects/${h.projectId}`, { headers: { Authorization: `Bearer ${'B'.repeat(62)}ob` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: h.projectId, name: 'Default Project' });
  });
});
