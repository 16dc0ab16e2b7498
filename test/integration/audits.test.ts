import { describe, expect, test } from 'vitest';
import { verboseActions } from '../../lib/audits';
import { harness, json, type Harness } from '../helpers/harness';

interface Audit {
  actorId: number | null;
  action: string;
  acteeId: string | null;
  details: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  loggedAt: string;
  notes: string | null;
  actor?: unknown;
  actee?: unknown;
}

const auditKeys = ['actorId', 'action', 'acteeId', 'details', 'loggedAt', 'notes'];

async function list(h: Harness, query = '', headers: Record<string, string> = {}): Promise<Audit[]> {
  const res = await h.get(`/v1/audits${query}`, { as: 'alice', headers });
  expect(res.status).toBe(200);
  return json<Audit[]>(res);
}

async function createProject(h: Harness, name: string): Promise<{ id: number; name: string }> {
  const res = await h.post('/v1/projects', { as: 'alice', body: { name } });
  expect(res.status).toBe(200);
  return json(res);
}

async function createUser(h: Harness, email: string): Promise<{ id: number }> {
  const res = await h.post('/v1/users', { as: 'alice', body: { email } });
  expect(res.status).toBe(200);
  return json(res);
}

/** The audit rows this test wrote, as the API shows them (newest first). */
async function ours(h: Harness, query = ''): Promise<Audit[]> {
  const written = new Set((await h.audits()).map((r) => `${r.action}|${r.acteeId}`));
  const sep = query === '' ? '?' : '&';
  const count = (await h.audits()).length;
  return (await list(h, `${query}${sep}limit=${Math.max(count, 1) + 50}`)).filter((a) => written.has(`${a.action}|${a.acteeId}`));
}

describe('GET /v1/audits: access', () => {
  test('only alice (audit.read) may read the log: bob and chelsea 403.1, anonymous 401.2', async () => {
    const h = await harness();
    expect((await h.get('/v1/audits', { as: 'alice' })).status).toBe(200);
    for (const as of ['bob', 'chelsea'] as const) {
      const res = await h.get('/v1/audits', { as });
      expect(res.status).toBe(403);
      expect((await json(res)).code).toBe(403.1);
    }
    const anon = await h.get('/v1/audits');
    expect(anon.status).toBe(401);
    expect(await json(anon)).toEqual({ message: 'Could not authenticate with the provided credentials.', code: 401.2 });
  });
});

describe('GET /v1/audits: rows', () => {
  test('newest first; each row has actorId, action, acteeId, details, loggedAt, notes', async () => {
    const h = await harness();
    const a = await createProject(h, 'Audit A');
    const b = await createProject(h, 'Audit B');
    const rows = await list(h, '?limit=2');
    expect(rows).toHaveLength(2);
    expect(rows.map((r) => r.details.data.name)).toEqual([b.name, a.name]);
    for (const r of rows) {
      expect(Object.keys(r)).toEqual(auditKeys);
      expect(r).toMatchObject({ actorId: h.ids.alice, action: 'project.create', notes: null });
      expect(typeof r.acteeId).toBe('string');
      expect(r.loggedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    expect(rows[0]!.acteeId).not.toBe(rows[1]!.acteeId);

    // the whole log is ordered newest first
    const all = await list(h);
    for (let i = 1; i < all.length; i++) expect(all[i - 1]!.loggedAt >= all[i]!.loggedAt).toBe(true);
  });

  test('?action=project.create matches that action exactly', async () => {
    const h = await harness();
    const before = await list(h, '?action=project.create');
    const p = await createProject(h, 'Filtered');
    await h.patch(`/v1/projects/${p.id}`, { as: 'alice', body: { description: 'updated' } });
    await createUser(h, 'filtered@getodk.org');
    const after = await list(h, '?action=project.create');
    expect(after).toHaveLength(before.length + 1);
    expect(after.every((r) => r.action === 'project.create')).toBe(true);
    expect(after[0]!.details.data.name).toBe('Filtered');
    expect(await list(h, '?action=no.such.action')).toEqual([]);
  });

  test('?action=project and ?action=user select the action groups', async () => {
    const h = await harness();
    const p = await createProject(h, 'Grouped');
    await h.patch(`/v1/projects/${p.id}`, { as: 'alice', body: { name: 'Grouped 2' } });
    await createUser(h, 'grouped@getodk.org');
    await h.delete(`/v1/projects/${p.id}`, { as: 'alice' });
    expect(await h.auditActions()).toEqual(['project.create', 'project.update', 'user.create', 'project.delete']);

    const projectGroup = await list(h, '?action=project');
    expect(projectGroup.every((r) => ['project.create', 'project.update', 'project.delete'].includes(r.action))).toBe(true);
    expect(projectGroup.slice(0, 3).map((r) => r.action)).toEqual(['project.delete', 'project.update', 'project.create']);

    const userGroup = await list(h, '?action=user');
    expect(userGroup.every((r) => r.action.startsWith('user.'))).toBe(true);
    expect(userGroup[0]).toMatchObject({ action: 'user.create', actorId: h.ids.alice });
    expect(userGroup[0]!.details.data.email).toBe('grouped@getodk.org');
  });

  test('?action=nonverbose leaves out the verbose actions', async () => {
    const h = await harness();
    await createProject(h, 'Nonverbose');
    const rows = await list(h, '?action=nonverbose');
    expect(rows[0]).toMatchObject({ action: 'project.create' });
    expect(rows.some((r) => verboseActions.includes(r.action))).toBe(false);
  });

  test('start is inclusive and end exclusive (ISO timestamps)', async () => {
    const h = await harness();
    await createProject(h, 'Timed');
    const [mine] = await list(h, '?action=project.create&limit=1');
    expect(mine!.details.data.name).toBe('Timed');
    const t = new Date(mine!.loggedAt);
    const plus = (ms: number) => encodeURIComponent(new Date(t.getTime() + ms).toISOString());
    const has = (rows: Audit[]) => rows.some((r) => r.acteeId === mine!.acteeId);

    expect(has(await list(h, `?action=project.create&start=${encodeURIComponent(mine!.loggedAt)}`))).toBe(true);
    expect(has(await list(h, `?action=project.create&start=${plus(1)}`))).toBe(false);
    expect(has(await list(h, `?action=project.create&end=${encodeURIComponent(mine!.loggedAt)}`))).toBe(false);
    expect(has(await list(h, `?action=project.create&end=${plus(1)}`))).toBe(true);
    expect(has(await list(h, `?action=project.create&start=${plus(-1000)}&end=${plus(1000)}`))).toBe(true);
    const future = await list(h, `?start=${plus(24 * 3600 * 1000)}`);
    expect(future).toEqual([]);

    // Central's documented forms: a date alone, 'z', and an explicit offset
    expect(has(await list(h, '?action=project.create&start=2000-01-01z'))).toBe(true);
    expect(has(await list(h, '?action=project.create&start=2000-01-01'))).toBe(true);
    expect(has(await list(h, `?action=project.create&start=${encodeURIComponent('2000-01-01+08')}`))).toBe(true);
    expect(has(await list(h, `?action=project.create&end=${encodeURIComponent('2000-01-01T12:12:12+08')}`))).toBe(false);
  });

  test('limit and offset page through the log', async () => {
    const h = await harness();
    await createProject(h, 'Page 1');
    await createProject(h, 'Page 2');
    await createProject(h, 'Page 3');
    const names = async (q: string) => (await list(h, `?action=project.create&${q}`)).map((r) => r.details.data.name);
    expect(await names('limit=1')).toEqual(['Page 3']);
    expect(await names('limit=1&offset=1')).toEqual(['Page 2']);
    expect(await names('limit=2&offset=1')).toEqual(['Page 2', 'Page 1']);
    expect((await names('offset=1')).slice(0, 2)).toEqual(['Page 2', 'Page 1']);
    expect(await names('limit=0')).toEqual([]);
  });

  test('limit=abc: Central\'s exact 400.11 body', async () => {
    const h = await harness();
    const res = await h.get('/v1/audits?limit=abc', { as: 'alice' });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await res.text()).toBe(
      '{"message":"Invalid input data type: expected (limit) to be (integer)","code":400.11,"details":{"field":"limit","expected":"integer"}}',
    );
    const offset = await h.get('/v1/audits?offset=xyz', { as: 'alice' });
    expect(await json(offset)).toMatchObject({ code: 400.11, details: { field: 'offset', expected: 'integer' } });
  });

  test('an unparseable start or end: 400.11', async () => {
    const h = await harness();
    for (const field of ['start', 'end']) {
      const res = await h.get(`/v1/audits?${field}=not-a-date`, { as: 'alice' });
      expect(res.status).toBe(400);
      expect(await json(res)).toMatchObject({ code: 400.11, details: { field } });
    }
  });

  test('extended adds actor (the acting user) and actee (the project for project.create)', async () => {
    const h = await harness();
    const project = await createProject(h, 'Extended');
    const [row] = await list(h, '?action=project.create&limit=1', { 'X-Extended-Metadata': 'true' });
    expect(Object.keys(row!)).toEqual([...auditKeys, 'actor', 'actee']);
    expect(row!.actor).toEqual({
      id: h.ids.alice, type: 'user', displayName: 'alice', createdAt: expect.any(String), updatedAt: null, deletedAt: null,
    });
    expect(row!.actee).toEqual(project);

    const user = await createUser(h, 'extended@getodk.org');
    const [userRow] = await list(h, '?action=user.create&limit=1', { 'X-Extended-Metadata': 'true' });
    expect(userRow!.actee).toMatchObject({ id: user.id, type: 'user', displayName: 'extended@getodk.org' });

    const plain = await list(h, '?action=project.create&limit=1');
    expect(plain[0]).not.toHaveProperty('actor');
    expect(plain[0]).not.toHaveProperty('actee');
    expect(await ours(h, '?action=project.create')).toHaveLength(1);
  });
});

describe('GET /v1/audits: the timestamp forms Central documents', () => {
  test('date-only, z suffix, numeric offsets and minute precision all parse; end is exclusive', async () => {
    const h = await harness();
    await createProject(h, 'Timestamp forms');
    const names = async (query: string) =>
      (await list(h, `?action=project.create&${query}`)).filter((a) => a.details?.data?.name === 'Timestamp forms').length;
    expect(await names('start=2000-01-01z')).toBe(1);
    expect(await names(`start=2000-01-01${encodeURIComponent('+08')}`)).toBe(1);
    expect(await names('end=2001-01-01T00:00.000z')).toBe(0);
    expect(await names(`end=2999-01-01T12:12:12${encodeURIComponent('+08')}`)).toBe(1);
    const [row] = await list(h, '?action=project.create&limit=1');
    // end is exclusive: an end equal to the row's own time leaves it out; start equal keeps it.
    expect(await names(`end=${encodeURIComponent(row!.loggedAt)}`)).toBe(0);
    expect(await names(`start=${encodeURIComponent(row!.loggedAt)}`)).toBe(1);
  });
});
