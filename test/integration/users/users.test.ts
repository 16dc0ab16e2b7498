import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { actors, assignments, sessions, users } from '../../../drizzle/schema';
import { fixtureUsers } from '../../fixtures/users';
import { harness, json, type Harness } from '../../helpers/harness';

const AUTH_FAILED = { message: 'Could not authenticate with the provided credentials.', code: 401.2 };
const FORBIDDEN = { message: 'The authentication you provided does not have rights to perform that action.', code: 403.1 };
const NOT_FOUND = { message: 'Could not find the resource you were looking for.', code: 404.1 };
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const USER_KEYS = ['email', 'lastLoginAt', 'id', 'type', 'displayName', 'createdAt', 'updatedAt', 'deletedAt'];

async function createUser(h: Harness, body: Record<string, unknown>) {
  const res = await h.post('/v1/users', { as: 'alice', body });
  expect(res.status).toBe(200);
  return json(res);
}

async function login(h: Harness, email: string, password: string) {
  return h.post('/v1/sessions', { body: { email, password } });
}

describe('POST /v1/users', () => {
  test('alice creates a user; the answer is the User in Central key order; audits user.create and the password', async () => {
    const h = await harness();
    const res = await h.post('/v1/users', {
      as: 'alice',
      body: { email: 'dave@getodk.org', password: 'dave-password-1', displayName: 'Dave' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(USER_KEYS);
    expect(body).toMatchObject({ email: 'dave@getodk.org', lastLoginAt: null, type: 'user', displayName: 'Dave', deletedAt: null });
    expect(body.createdAt).toMatch(ISO);
    expect(typeof body.id).toBe('number');

    // Central: the User row as created (no password yet), then the password set as a user.update.
    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['user.create', 'user.update']);
    expect(audits[0]!.actorId).toBe(h.ids.alice);
    const [actor] = await h.db.select().from(actors).where(eq(actors.id, body.id));
    expect(audits[0]!.acteeId).toBe(actor!.acteeId);
    expect(audits[0]!.details).toEqual({ data: { actorId: body.id, email: 'dave@getodk.org', password: null, lastLoginAt: null } });
    expect(audits[1]!.details).toEqual({ data: { password: true } });

    // The password works, and the stored hash is not the password.
    expect((await login(h, 'dave@getodk.org', 'dave-password-1')).status).toBe(200);
    const [row] = await h.db.select().from(users).where(eq(users.actorId, body.id));
    expect(row!.passwordHash).not.toBe('dave-password-1');
    expect(row!.passwordHash).toMatch(/^\$2[aby]\$/);
  });

  test('displayName defaults to the email; without a password the user cannot log in', async () => {
    const h = await harness();
    const body = await createUser(h, { email: 'nopass@getodk.org' });
    expect(body.displayName).toBe('nopass@getodk.org');
    const [row] = await h.db.select().from(users).where(eq(users.actorId, body.id));
    expect(row!.passwordHash).toBeNull();
    const res = await login(h, 'nopass@getodk.org', 'anything-at-all');
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
  });

  test('no email → 400.2 reporting displayName (Central)', async () => {
    const h = await harness();
    const res = await h.post('/v1/users', { as: 'alice', body: { password: 'long-enough-pw' } });
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({
      message: 'Required parameter displayName missing.',
      code: 400.2,
      details: { field: 'displayName' },
    });
    expect(await h.auditActions()).toEqual([]);
  });

  test('short password → 400.21 (Central body)', async () => {
    const h = await harness();
    const res = await h.post('/v1/users', { as: 'alice', body: { email: 'short@getodk.org', password: 'short' } });
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({
      message: 'The password or passphrase provided does not meet the required length.',
      code: 400.21,
    });
    const rows = await h.db.select().from(users).where(eq(users.email, 'short@getodk.org'));
    expect(rows).toEqual([]);
  });

  test('password over 72 bytes → 400.38 (bytes, not characters)', async () => {
    const h = await harness();
    // 37 two-byte characters: 37 characters but 74 bytes.
    const res = await h.post('/v1/users', { as: 'alice', body: { email: 'long@getodk.org', password: 'é'.repeat(37) } });
    expect(res.status).toBe(400);
    expect((await json(res)).code).toBe(400.38);
    // 72 bytes exactly is fine (a password zxcvbn rates strong).
    const strong72 = 'correct-horse-battery-staple-'.repeat(3).slice(0, 72);
    const ok = await h.post('/v1/users', { as: 'alice', body: { email: 'long@getodk.org', password: strong72 } });
    expect(ok.status).toBe(200);
  });

  test('email that is a number → 400.11', async () => {
    const h = await harness();
    const res = await h.post('/v1/users', { as: 'alice', body: { email: 42, password: 'long-enough-pw' } });
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body.code).toBe(400.11);
    expect(body.details).toMatchObject({ field: 'email' });
  });

  test('duplicate email → 409.3 with Central details shape', async () => {
    const h = await harness();
    const email = fixtureUsers.bob.email;
    const res = await h.post('/v1/users', { as: 'alice', body: { email, password: 'another-password' } });
    expect(res.status).toBe(409);
    expect(await json(res)).toEqual({
      message: `A resource already exists with email,deleted value(s) of ${email},false.`,
      code: 409.3,
      details: { fields: ['email', 'deleted'], values: [email, 'false'], table: 'users' },
    });
    expect(await h.auditActions()).toEqual([]);
  });

  test('bob and chelsea get 403.1; anonymous gets 401.2', async () => {
    const h = await harness();
    const body = { email: 'eve@getodk.org', password: 'eve-password-1' };
    for (const who of ['bob', 'chelsea'] as const) {
      const res = await h.post('/v1/users', { as: who, body });
      expect(res.status).toBe(403);
      expect(await json(res)).toEqual(FORBIDDEN);
    }
    const anon = await h.post('/v1/users', { body });
    expect(anon.status).toBe(401);
    expect(await json(anon)).toEqual(AUTH_FAILED);
    expect(await h.db.select().from(users).where(eq(users.email, 'eve@getodk.org'))).toEqual([]);
  });
});

describe('GET /v1/users', () => {
  test('alice gets every live user sorted by email', async () => {
    const h = await harness();
    await createUser(h, { email: 'aaron@getodk.org' });
    await createUser(h, { email: 'zed@getodk.org' });
    const res = await h.get('/v1/users', { as: 'alice' });
    expect(res.status).toBe(200);
    const list = await json(res);
    const emails = list.map((u: { email: string }) => u.email);
    expect(emails).toEqual([...emails].sort());
    expect(emails).toEqual(expect.arrayContaining([
      'aaron@getodk.org', fixtureUsers.alice.email, fixtureUsers.bob.email, fixtureUsers.chelsea.email, 'zed@getodk.org',
    ]));
    expect(emails.indexOf('aaron@getodk.org')).toBeLessThan(emails.indexOf(fixtureUsers.alice.email));
    for (const u of list) expect(Object.keys(u)).toEqual(USER_KEYS);
  });

  test('chelsea (no user.list) gets []', async () => {
    const h = await harness();
    const res = await h.get('/v1/users', { as: 'chelsea' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual([]);
  });

  test('chelsea with q = an exact email gets that one user', async () => {
    const h = await harness();
    const res = await h.get(`/v1/users?q=${encodeURIComponent(fixtureUsers.bob.email)}`, { as: 'chelsea' });
    expect(res.status).toBe(200);
    const list = await json(res);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ id: h.ids.bob, email: fixtureUsers.bob.email, displayName: 'bob' });
    // A substring is not an exact match: no list rights, nothing.
    expect(await json(await h.get('/v1/users?q=bob', { as: 'chelsea' }))).toEqual([]);
  });

  test('alice searches by substring of email or display name', async () => {
    const h = await harness();
    await createUser(h, { email: 'someone@example.org', displayName: 'Robert Bobson' });
    const list = await json(await h.get('/v1/users?q=bob', { as: 'alice' }));
    const emails = list.map((u: { email: string }) => u.email);
    expect(emails).toEqual(expect.arrayContaining([fixtureUsers.bob.email, 'someone@example.org']));
    expect(emails).not.toContain(fixtureUsers.alice.email);
    expect(emails).not.toContain(fixtureUsers.chelsea.email);
    // LIKE wildcards in q are literal.
    expect(await json(await h.get('/v1/users?q=%25', { as: 'alice' }))).toEqual([]);
    expect(await json(await h.get('/v1/users?q=nobody-matches-this', { as: 'alice' }))).toEqual([]);
  });

  test('anonymous gets 401.2 (Central)', async () => {
    const h = await harness();
    const res = await h.get('/v1/users');
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
  });
});

describe('GET /v1/users/:id', () => {
  test('chelsea may read herself but not bob', async () => {
    const h = await harness();
    const self = await h.get(`/v1/users/${h.ids.chelsea}`, { as: 'chelsea' });
    expect(self.status).toBe(200);
    const body = await json(self);
    expect(Object.keys(body)).toEqual(USER_KEYS);
    expect(body).toMatchObject({ id: h.ids.chelsea, email: fixtureUsers.chelsea.email, type: 'user' });

    const other = await h.get(`/v1/users/${h.ids.bob}`, { as: 'chelsea' });
    expect(other.status).toBe(403);
    expect(await json(other)).toEqual(FORBIDDEN);
  });

  test('alice reads anyone', async () => {
    const h = await harness();
    const res = await h.get(`/v1/users/${h.ids.bob}`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ id: h.ids.bob, email: fixtureUsers.bob.email, displayName: 'bob' });
  });

  test('unknown ids → 404.1; not an integer → 400.11; beyond 32 bits → 400.22 (Central, from PostgreSQL)', async () => {
    const h = await harness();
    for (const id of ['999999', '-1']) {
      const res = await h.get(`/v1/users/${id}`, { as: 'alice' });
      expect(res.status, id).toBe(404);
      expect(await json(res)).toEqual(NOT_FOUND);
    }
    for (const id of ['abc', '1.5']) {
      const res = await h.get(`/v1/users/${id}`, { as: 'alice' });
      expect(res.status, id).toBe(400);
      expect(await json(res)).toMatchObject({ code: 400.11, message: `Invalid input data type: expected "${id}" to be (type integer)` });
    }
    const big = await h.get('/v1/users/1099511627776', { as: 'alice' });
    expect(big.status).toBe(400);
    expect(await json(big)).toMatchObject({ code: 400.22, message: "Provided value '1099511627776' is out of range for type 'integer'" });
  });
});

describe('GET /v1/users/current', () => {
  test('plain shape in Central key order', async () => {
    const h = await harness();
    const res = await h.get('/v1/users/current', { as: 'bob' });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(USER_KEYS);
    expect(body).toMatchObject({ email: fixtureUsers.bob.email, id: h.ids.bob, type: 'user', displayName: 'bob', deletedAt: null });
    expect(body.createdAt).toMatch(ISO);
  });

  test('extended: verbs and preferences; alice has user.create, chelsea does not', async () => {
    const h = await harness();
    const headers = { 'X-Extended-Metadata': 'true' };
    const alice = await json(await h.get('/v1/users/current', { as: 'alice', headers }));
    expect(alice.verbs).toEqual(expect.arrayContaining(['user.create', 'user.list', 'project.create']));
    expect(alice.preferences).toEqual({ site: {}, projects: {} });
    expect(alice).toMatchObject({ id: h.ids.alice, email: fixtureUsers.alice.email });
    expect(Object.keys(alice)).toEqual(expect.arrayContaining([...USER_KEYS, 'verbs', 'preferences']));

    const chelsea = await json(await h.get('/v1/users/current', { as: 'chelsea', headers }));
    expect(Array.isArray(chelsea.verbs)).toBe(true);
    expect(chelsea.verbs).not.toContain('user.create');
    expect(chelsea.verbs).not.toContain('user.list');
    expect(chelsea.preferences).toEqual({ site: {}, projects: {} });
  });

  test('anonymous → 401.2', async () => {
    const h = await harness();
    const res = await h.get('/v1/users/current');
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
  });
});

describe('PATCH /v1/users/:id', () => {
  test('chelsea updates her own displayName; updatedAt set; audit user.update', async () => {
    const h = await harness();
    const before = Date.now();
    const res = await h.patch(`/v1/users/${h.ids.chelsea}`, { as: 'chelsea', body: { displayName: 'Chelsea G.' } });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(Object.keys(body)).toEqual(USER_KEYS);
    expect(body).toMatchObject({ id: h.ids.chelsea, displayName: 'Chelsea G.', email: fixtureUsers.chelsea.email });
    expect(body.updatedAt).toMatch(ISO);
    expect(Date.parse(body.updatedAt)).toBeGreaterThanOrEqual(before - 1000);

    const again = await json(await h.get('/v1/users/current', { as: 'chelsea' }));
    expect(again.displayName).toBe('Chelsea G.');

    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['user.update']);
    expect(audits[0]!.actorId).toBe(h.ids.chelsea);
    expect(audits[0]!.details).toMatchObject({ data: { displayName: 'Chelsea G.' } });
  });

  test('alice changes a user email; the new email logs in', async () => {
    const h = await harness();
    const res = await h.patch(`/v1/users/${h.ids.chelsea}`, { as: 'alice', body: { email: 'chelsea2@getodk.org' } });
    expect(res.status).toBe(200);
    expect((await json(res)).email).toBe('chelsea2@getodk.org');
    expect((await login(h, 'chelsea2@getodk.org', fixtureUsers.chelsea.password)).status).toBe(200);
    expect((await login(h, fixtureUsers.chelsea.email, fixtureUsers.chelsea.password)).status).toBe(401);
  });

  test('chelsea updating bob → 403.1, nothing changes', async () => {
    const h = await harness();
    const res = await h.patch(`/v1/users/${h.ids.bob}`, { as: 'chelsea', body: { displayName: 'Hacked' } });
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual(FORBIDDEN);
    const [row] = await h.db.select().from(actors).where(eq(actors.id, h.ids.bob));
    expect(row!.displayName).toBe('bob');
    expect(await h.auditActions()).toEqual([]);
  });

  test('email already taken → 409.3', async () => {
    const h = await harness();
    const res = await h.patch(`/v1/users/${h.ids.chelsea}`, { as: 'chelsea', body: { email: fixtureUsers.bob.email } });
    expect(res.status).toBe(409);
    expect(await json(res)).toEqual({
      message: `A resource already exists with email,deleted value(s) of ${fixtureUsers.bob.email},false.`,
      code: 409.3,
      details: { fields: ['email', 'deleted'], values: [fixtureUsers.bob.email, 'false'], table: 'users' },
    });
  });

  test('keeping one\'s own email is not a conflict', async () => {
    const h = await harness();
    const res = await h.patch(`/v1/users/${h.ids.chelsea}`, { as: 'chelsea', body: { email: fixtureUsers.chelsea.email } });
    expect(res.status).toBe(200);
  });

  test('unknown user → 404.1', async () => {
    const h = await harness();
    const res = await h.patch('/v1/users/999999', { as: 'alice', body: { displayName: 'x' } });
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual(NOT_FOUND);
  });
});

describe('PUT /v1/users/:id/password', () => {
  test('wrong old password → 401.2', async () => {
    const h = await harness();
    const res = await h.put(`/v1/users/${h.ids.chelsea}/password`, {
      as: 'chelsea', body: { old: 'not-my-password', new: 'brand-new-password' },
    });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(AUTH_FAILED);
    expect((await login(h, fixtureUsers.chelsea.email, fixtureUsers.chelsea.password)).status).toBe(200);
  });

  test('success: the new password logs in, the old one does not; audit user.update', async () => {
    const h = await harness();
    const res = await h.put(`/v1/users/${h.ids.chelsea}/password`, {
      as: 'chelsea', body: { old: fixtureUsers.chelsea.password, new: 'brand-new-password' },
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });

    const ok = await login(h, fixtureUsers.chelsea.email, 'brand-new-password');
    expect(ok.status).toBe(200);
    const old = await login(h, fixtureUsers.chelsea.email, fixtureUsers.chelsea.password);
    expect(old.status).toBe(401);
    expect(await json(old)).toEqual(AUTH_FAILED);

    const audits = await h.audits();
    expect(audits[0]).toMatchObject({ action: 'user.update', actorId: h.ids.chelsea, details: { data: { password: true } } });
    // The password itself never reaches the audit log.
    expect(JSON.stringify(audits)).not.toContain('brand-new-password');
    // As Central's updatePassword: the actor's updatedAt is left alone.
    const [actor] = await h.db.select().from(actors).where(eq(actors.id, h.ids.chelsea));
    expect(actor!.updatedAt).toBeNull();
  });

  test('short new password → 400.21 and the old one still works', async () => {
    const h = await harness();
    const res = await h.put(`/v1/users/${h.ids.chelsea}/password`, {
      as: 'chelsea', body: { old: fixtureUsers.chelsea.password, new: 'short' },
    });
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({
      message: 'The password or passphrase provided does not meet the required length.',
      code: 400.21,
    });
    expect((await login(h, fixtureUsers.chelsea.email, fixtureUsers.chelsea.password)).status).toBe(200);
  });

  test('chelsea changing bob\'s password → 403.1', async () => {
    const h = await harness();
    const res = await h.put(`/v1/users/${h.ids.bob}/password`, {
      as: 'chelsea', body: { old: fixtureUsers.bob.password, new: 'brand-new-password' },
    });
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual(FORBIDDEN);
    expect((await login(h, fixtureUsers.bob.email, fixtureUsers.bob.password)).status).toBe(200);
  });

  test('missing new → 400.2; missing old fails as a wrong one (401.2, Central checks it first)', async () => {
    const h = await harness();
    const noNew = await h.put(`/v1/users/${h.ids.chelsea}/password`, { as: 'chelsea', body: { old: fixtureUsers.chelsea.password } });
    expect(noNew.status).toBe(400);
    expect(await json(noNew)).toEqual({ message: 'Required parameter new missing.', code: 400.2, details: { field: 'new' } });
    const empty = await h.put(`/v1/users/${h.ids.chelsea}/password`, { as: 'chelsea', body: {} });
    expect(empty.status).toBe(401);
    expect(await json(empty)).toEqual(AUTH_FAILED);
  });
});

describe('DELETE /v1/users/:id', () => {
  test('alice deletes chelsea: her token, login and record are gone; the email is free again', async () => {
    const h = await harness();
    const res = await h.delete(`/v1/users/${h.ids.chelsea}`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });

    const bearer = await h.get('/v1/users/current', { as: 'chelsea' });
    expect(bearer.status).toBe(401);
    expect(await json(bearer)).toEqual(AUTH_FAILED);

    const loginRes = await login(h, fixtureUsers.chelsea.email, fixtureUsers.chelsea.password);
    expect(loginRes.status).toBe(401);
    expect(await json(loginRes)).toEqual(AUTH_FAILED);

    const basic = await h.get('/v1/projects', { as: { basic: [fixtureUsers.chelsea.email, fixtureUsers.chelsea.password] } });
    expect(basic.status).toBe(401);

    const get = await h.get(`/v1/users/${h.ids.chelsea}`, { as: 'alice' });
    expect(get.status).toBe(404);
    expect(await json(get)).toEqual(NOT_FOUND);

    const list = await json(await h.get('/v1/users', { as: 'alice' }));
    expect(list.map((u: { id: number }) => u.id)).not.toContain(h.ids.chelsea);

    // The row stays (marked deleted); sessions are gone.
    const [actor] = await h.db.select().from(actors).where(eq(actors.id, h.ids.chelsea));
    expect(actor!.deletedAt).not.toBeNull();
    expect(await h.db.select().from(sessions).where(eq(sessions.actorId, h.ids.chelsea))).toEqual([]);

    const again = await h.post('/v1/users', {
      as: 'alice', body: { email: fixtureUsers.chelsea.email, password: 'new-chelsea-pw' },
    });
    expect(again.status).toBe(200);
    const fresh = await json(again);
    expect(fresh.id).not.toBe(h.ids.chelsea);
    expect((await login(h, fixtureUsers.chelsea.email, 'new-chelsea-pw')).status).toBe(200);

    const audits = await h.audits();
    expect(audits[0]).toMatchObject({ action: 'user.delete', actorId: h.ids.alice, acteeId: actor!.acteeId });
  });

  test('deleting bob removes his project role', async () => {
    const h = await harness();
    expect((await h.delete(`/v1/users/${h.ids.bob}`, { as: 'alice' })).status).toBe(200);
    expect(await h.db.select().from(assignments).where(eq(assignments.actorId, h.ids.bob))).toEqual([]);
  });

  test('bob cannot delete a user → 403.1; deleting twice → 404.1', async () => {
    const h = await harness();
    const res = await h.delete(`/v1/users/${h.ids.chelsea}`, { as: 'bob' });
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual(FORBIDDEN);
    expect((await h.get('/v1/users/current', { as: 'chelsea' })).status).toBe(200);
    expect(await h.auditActions()).toEqual([]);

    expect((await h.delete(`/v1/users/${h.ids.chelsea}`, { as: 'alice' })).status).toBe(200);
    const twice = await h.delete(`/v1/users/${h.ids.chelsea}`, { as: 'alice' });
    expect(twice.status).toBe(404);
    expect(await h.auditActions()).toEqual(['user.delete']);
  });
});

describe('POST /v1/users/reset/initiate', () => {
  test('anyone may ask, for a known or unknown email, and learns nothing', async () => {
    const h = await harness();
    const known = await h.post('/v1/users/reset/initiate', { body: { email: 'chelsea@getodk.org' } });
    const unknown = await h.post('/v1/users/reset/initiate', { body: { email: 'nobody@example.org' } });
    expect(known.status).toBe(200);
    expect(await known.json()).toEqual({ success: true });
    expect(await unknown.json()).toEqual({ success: true });
    // Without invalidate nothing changes: chelsea still logs in.
    const login = await h.post('/v1/sessions', { body: { email: 'chelsea@getodk.org', password: 'chelsea-password' } });
    expect(login.status).toBe(200);
  });

  test('invalidate=true by an administrator stops the password and the sessions at once', async () => {
    const h = await harness();
    const res = await h.post('/v1/users/reset/initiate?invalidate=true', { as: 'alice', body: { email: 'chelsea@getodk.org' } });
    expect(res.status).toBe(200);
    expect((await h.post('/v1/sessions', { body: { email: 'chelsea@getodk.org', password: 'chelsea-password' } })).status).toBe(401);
    expect((await h.get('/v1/users/current', { as: 'chelsea' })).status).toBe(401);
    const [row] = (await h.audits()).filter((a) => a.action === 'user.update');
    expect(row?.details).toEqual({ data: { password: null } });
  });

  test('invalidate=true without the right fails the whole request; missing email is 400.2', async () => {
    const h = await harness();
    const res = await h.post('/v1/users/reset/initiate?invalidate=true', { as: 'bob', body: { email: 'chelsea@getodk.org' } });
    expect(res.status).toBe(403);
    expect((await h.post('/v1/users/reset/initiate?invalidate=true', { body: { email: 'chelsea@getodk.org' } })).status).toBe(401);
    expect((await h.post('/v1/sessions', { body: { email: 'chelsea@getodk.org', password: 'chelsea-password' } })).status).toBe(200);
    const missing = await h.post('/v1/users/reset/initiate', { body: {} });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ code: 400.2, details: { field: 'email' } });
  });
});
