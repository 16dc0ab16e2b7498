/**
 * Account mail and the single-use reset token, over real HTTP routes and a real SMTP server on
 * loopback (test/helpers/smtp-sink.ts), with the SMTP Mailer the server uses (lib/runtime/mail.ts).
 */
import { readFile, readdir } from 'node:fs/promises';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { actors, assignments, sessions, users } from '../../../drizzle/schema';
import type { Config } from '../../../lib/config';
import { systemCtx, withTx } from '../../../lib/context';
import type { Logger } from '../../../lib/log';
import { composeMail, sendAfterCommit } from '../../../lib/mail';
import { createOutboxMailer, createSmtpMailer, nodeMailer } from '../../../lib/runtime/mail';
import { fixtureUsers } from '../../fixtures/users';
import { harness, json, type Harness } from '../../helpers/harness';
import { smtpSink, type SmtpSink } from '../../helpers/smtp-sink';

const AUTH_FAILED = { message: 'Could not authenticate with the provided credentials.', code: 401.2 };
const FORBIDDEN = { message: 'The authentication you provided does not have rights to perform that action.', code: 403.1 };
const TOKEN = /token=([A-Za-z0-9!$]+)/;

/** A harness whose server sends mail through SMTP to a fresh sink. */
async function withSink(config: Partial<Config> = {}): Promise<{ h: Harness; sink: SmtpSink }> {
  const h = await harness(config);
  const sink = await smtpSink();
  h.deps.mailer = createSmtpMailer({ ...h.deps.config, ...sink.config });
  return { h, sink };
}

/** A Logger that keeps what it is told (the real one writes to the console). */
function recordingLogger(): Logger & { lines: Array<{ level: string; msg: string; data?: Record<string, unknown> }> } {
  const lines: Array<{ level: string; msg: string; data?: Record<string, unknown> }> = [];
  const at = (level: string) => (msg: string, data?: Record<string, unknown>) => void lines.push({ level, msg, data });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const login = (h: Harness, email: string, password: string) => h.post('/v1/sessions', { body: { email, password } });
const tokenOf = (html: string) => TOKEN.exec(html)![1]!;

describe('POST /v1/users mail', () => {
  test('without a password: an invitation with a claim link; the token sets the password once', async () => {
    const { h, sink } = await withSink();
    const res = await h.post('/v1/users', { as: 'alice', body: { email: 'david@getodk.org' } });
    expect(res.status).toBe(200);
    const created = await json(res);

    expect(sink.inbox).toHaveLength(1);
    const mail = sink.inbox[0]!;
    expect(mail).toMatchObject({ to: ['david@getodk.org'], envelopeTo: ['david@getodk.org'], subject: 'ODK Central account created', from: 'no-reply@localhost' });
    // The web UI's claim page on the request's origin (no PUBLIC_URL here), and the reset page.
    expect(mail.html).toMatch(/href="http:\/\/localhost\/account\/claim\?token=[A-Za-z0-9!$]{64}"/);
    expect(mail.html).toContain('http://localhost/reset-password');
    const token = tokenOf(mail.html);

    // The token is a singleUse actor allowed only to reset this user's password.
    expect((await h.get(`/v1/users/${created.id}`, { as: { bearer: token } })).status).toBe(403);
    expect((await h.get('/v1/users/current', { as: { bearer: token } })).status).toBe(404);

    const verify = await h.post('/v1/users/reset/verify', { as: { bearer: token }, body: { new: 'testresetpassword' } });
    expect(verify.status).toBe(200);
    expect(await json(verify)).toEqual({ success: true });
    expect((await login(h, 'david@getodk.org', 'testresetpassword')).status).toBe(200);

    // Replay: the token's actor is gone.
    const again = await h.post('/v1/users/reset/verify', { as: { bearer: token }, body: { new: 'another strong one 9' } });
    expect(again.status).toBe(401);
    expect(await json(again)).toEqual(AUTH_FAILED);

    // Audits: the creation, the password set by the token's actor; the token's end is not audited.
    const audits = await h.audits();
    expect(audits.map((a) => a.action)).toEqual(['user.create', 'user.update', 'user.session.create']);
    expect(audits[1]!.details).toEqual({ data: { password: true } });
    const [single] = await h.db.select().from(actors).where(eq(actors.id, audits[1]!.actorId!));
    expect(single).toMatchObject({ type: 'singleUse', displayName: `Reset token for ${created.id}`, meta: { resetPassword: created.id } });
    expect(single!.deletedAt).not.toBeNull();
    expect(await h.db.select().from(sessions).where(eq(sessions.actorId, single!.id))).toEqual([]);
    expect(await h.db.select().from(assignments).where(eq(assignments.actorId, single!.id))).toEqual([]);
    // Verifying sends nothing.
    expect(sink.inbox).toHaveLength(1);
  });

  test('with a password: a message about the assigned password, without a token; links use PUBLIC_URL', async () => {
    const { h, sink } = await withSink({ PUBLIC_URL: 'https://forms.example.org' });
    const res = await h.post('/v1/users', { as: 'alice', body: { email: 'david@getodk.org', password: 'PWORD-david-14671-]' } });
    expect(res.status).toBe(200);
    expect(sink.inbox).toHaveLength(1);
    const mail = sink.inbox[0]!;
    expect(mail).toMatchObject({ to: ['david@getodk.org'], subject: 'ODK Central account created', from: 'no-reply@forms.example.org' });
    expect(mail.html).toMatch(/Your account was created with an assigned password\./);
    expect(mail.html).toContain('https://forms.example.org/reset-password');
    expect(mail.html).not.toMatch(TOKEN);
  });

  test('a refused or failed request sends nothing', async () => {
    const { h, sink } = await withSink();
    expect((await h.post('/v1/users', { as: 'bob', body: { email: 'david@getodk.org' } })).status).toBe(403);
    expect((await h.post('/v1/users', { as: 'alice', body: { email: 'david@getodk.org', password: 'hunter2!!!' } })).status).toBe(400);
    expect((await h.post('/v1/users', { as: 'alice', body: { email: fixtureUsers.bob.email } })).status).toBe(409);
    expect(sink.inbox).toEqual([]);
  });

  test('a failed send is logged and the account stays', async () => {
    const h = await harness();
    const log = recordingLogger();
    h.deps.log = log;
    // Port 1 on loopback: nothing listens, the connection is refused.
    h.deps.mailer = createSmtpMailer({ ...h.deps.config, EMAIL_HOST: '127.0.0.1', EMAIL_PORT: 1 });
    const res = await h.post('/v1/users', { as: 'alice', body: { email: 'david@getodk.org' } });
    expect(res.status).toBe(200);
    const [row] = await h.db.select().from(users).where(eq(users.email, 'david@getodk.org'));
    expect(row).toBeDefined();
    expect(log.lines).toContainEqual(expect.objectContaining({
      level: 'error', msg: 'sending mail failed', data: expect.objectContaining({ to: 'david@getodk.org', subject: 'ODK Central account created' }),
    }));
  });

  test('without a mailer (Workers, Lambda without EMAIL_HOST) a warning names the message, never its token', async () => {
    const h = await harness();
    const log = recordingLogger();
    h.deps.log = log;
    expect(h.deps.mailer).toBeUndefined();
    expect((await h.post('/v1/users', { as: 'alice', body: { email: 'david@getodk.org' } })).status).toBe(200);
    const warning = log.lines.find((l) => l.level === 'warn');
    expect(warning).toMatchObject({ data: { to: 'david@getodk.org', subject: 'ODK Central account created' } });
    expect(JSON.stringify(log.lines)).not.toMatch(TOKEN);
  });
});

describe('outbox: .eml files when no SMTP is configured', () => {
  test('the local server default writes each message under DATA_DIR/mail and logs its path', async () => {
    const h = await harness();
    const log = recordingLogger();
    h.deps.log = log;
    const dataDir = mkdtempSync(join(process.env.FIELDBASE_TEST_TMP ?? tmpdir(), 'fieldbase-mail-'));
    const mailer = nodeMailer({ ...h.deps.config, DATA_DIR: dataDir, EMAIL_HOST: undefined }, { outbox: true });
    expect(mailer?.kind).toBe('outbox');
    h.deps.mailer = mailer;
    expect(nodeMailer({ ...h.deps.config, EMAIL_HOST: undefined }, { outbox: false })).toBeUndefined();
    expect(nodeMailer({ ...h.deps.config, EMAIL_HOST: '127.0.0.1' }, { outbox: true })?.kind).toBe('smtp');

    expect((await h.post('/v1/users/reset/initiate', { body: { email: fixtureUsers.chelsea.email } })).status).toBe(200);
    const files = await readdir(join(dataDir, 'mail'));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/\.eml$/);
    const path = join(dataDir, 'mail', files[0]!);
    const parsed = await simpleParser(await readFile(path));
    expect(parsed.subject).toBe('ODK Central account password reset');
    expect(parsed.to).toMatchObject({ value: [{ address: fixtureUsers.chelsea.email }] });
    const token = tokenOf(String(parsed.html));
    expect(log.lines).toContainEqual(expect.objectContaining({ level: 'info', data: expect.objectContaining({ path }) }));

    // The link in the file works.
    expect((await h.post('/v1/users/reset/verify', { as: { bearer: token }, body: { new: 'from the outbox 42' } })).status).toBe(200);
    expect((await login(h, fixtureUsers.chelsea.email, 'from the outbox 42')).status).toBe(200);
  });
});

describe('sendAfterCommit', () => {
  test('inside a transaction: nothing until commit, nothing at all on rollback', async () => {
    const h = await harness();
    const sink = await smtpSink();
    const ctx = { ...systemCtx({ ...h.deps, mailer: createSmtpMailer({ ...h.deps.config, ...sink.config }) }) };
    const message = composeMail('accountPasswordChanged', 'someone@getodk.org', 'http://localhost');

    await expect(withTx(ctx, async (tx) => {
      await sendAfterCommit(tx, [message]);
      throw new Error('rolled back');
    })).rejects.toThrow('rolled back');

    await withTx(ctx, async (tx) => {
      await sendAfterCommit(tx, [message]);
      expect(sink.inbox).toEqual([]);
    });
    await expect.poll(() => sink.inbox.length).toBe(1);
    expect(sink.inbox[0]).toMatchObject({ to: ['someone@getodk.org'], subject: 'ODK Central account password change' });
  });
});

describe('PATCH /v1/users/:id mail', () => {
  test('an email change is told to the previous address, in Central\'s words', async () => {
    const { h, sink } = await withSink();
    const res = await h.patch(`/v1/users/${h.ids.alice}`, { as: 'alice', body: { email: 'david123@getodk.org' } });
    expect(res.status).toBe(200);
    expect(sink.inbox).toHaveLength(1);
    expect(sink.inbox[0]).toMatchObject({ to: ['alice@getodk.org'], subject: 'ODK Central account email changed' });
    expect(sink.inbox[0]!.html).toBe('<html>Hello!<p><p>We are emailing because you have an ODK Central account, and somebody has just changed the email address associated with the account from this one you are reading right now (alice@getodk.org) to a new address (david123@getodk.org).</p><p>If this is expected, you can ignore this email. If it is not expected, please contact your ODK system administrator immediately.</p></html>');
  });

  test('no mail when the email stays or only the display name changes', async () => {
    const { h, sink } = await withSink();
    expect((await h.patch(`/v1/users/${h.ids.alice}`, { as: 'alice', body: { email: 'alice@getodk.org' } })).status).toBe(200);
    expect((await h.patch(`/v1/users/${h.ids.chelsea}`, { as: 'chelsea', body: { displayName: 'C' } })).status).toBe(200);
    expect(sink.inbox).toEqual([]);
  });
});

describe('PUT /v1/users/:id/password', () => {
  test('mails the user; ends the other sessions, keeps the one used', async () => {
    const { h, sink } = await withSink();
    const { password, email } = fixtureUsers.chelsea;
    const mine = await json(await login(h, email, password));
    const other = await json(await login(h, email, password));
    const res = await h.put(`/v1/users/${h.ids.chelsea}/password`, { as: { bearer: mine.token }, body: { old: password, new: 'a brand new passphrase' } });
    expect(res.status).toBe(200);
    expect((await h.get('/v1/users/current', { as: { bearer: other.token } })).status).toBe(401);
    expect((await h.get('/v1/users/current', { as: 'chelsea' })).status).toBe(401); // the fixture session too
    expect((await h.get('/v1/users/current', { as: { bearer: mine.token } })).status).toBe(200);
    expect(sink.inbox).toHaveLength(1);
    expect(sink.inbox[0]).toMatchObject({ to: [email], subject: 'ODK Central account password change' });
  });

  test('with Basic auth every session ends', async () => {
    const { h } = await withSink();
    const { password, email } = fixtureUsers.chelsea;
    const session = await json(await login(h, email, password));
    const res = await h.put(`/v1/users/${h.ids.chelsea}/password`, { as: { basic: [email, password] }, body: { old: password, new: 'a brand new passphrase' } });
    expect(res.status).toBe(200);
    expect((await h.get('/v1/users/current', { as: { bearer: session.token } })).status).toBe(401);
  });

  test('a guessable password → 400.44 in Central\'s words; nothing changes, nothing is sent', async () => {
    const { h, sink } = await withSink();
    const res = await h.put(`/v1/users/${h.ids.alice}/password`, { as: 'alice', body: { old: fixtureUsers.alice.password, new: 'hunter2!!!' } });
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({
      code: 400.44,
      message: 'The supplied password is too weak: this is similar to a commonly used password',
      details: { warning: 'This is similar to a commonly used password', suggestions: ['Add another word or two. Uncommon words are better.'] },
    });
    for (const bad of [123, {}, []]) {
      const typed = await h.put(`/v1/users/${h.ids.alice}/password`, { as: 'alice', body: { old: fixtureUsers.alice.password, new: bad } });
      expect(typed.status, JSON.stringify(bad)).toBe(400);
      expect((await json(typed)).code).toBe(400.11);
    }
    expect((await login(h, fixtureUsers.alice.email, fixtureUsers.alice.password)).status).toBe(200);
    expect((await h.get('/v1/users/current', { as: 'alice' })).status).toBe(200);
    expect(sink.inbox).toEqual([]);
  });
});

describe('POST /v1/users/reset/initiate', () => {
  test('an unknown address gets nothing; a deleted account gets a notice; a live one a reset link', async () => {
    const { h, sink } = await withSink();
    expect((await h.post('/v1/users/reset/initiate', { body: { email: 'winnifred@getodk.org' } })).status).toBe(200);
    expect(sink.inbox).toEqual([]);

    expect((await h.delete(`/v1/users/${h.ids.chelsea}`, { as: 'alice' })).status).toBe(200);
    expect((await h.post('/v1/users/reset/initiate', { body: { email: fixtureUsers.chelsea.email } })).status).toBe(200);
    expect(sink.inbox).toHaveLength(1);
    expect(sink.inbox[0]).toMatchObject({ to: [fixtureUsers.chelsea.email], subject: 'ODK Central account password reset' });
    expect(sink.inbox[0]!.html).toMatch(/account has been deleted/);
    expect(sink.inbox[0]!.html).not.toMatch(TOKEN);

    const res = await h.post('/v1/users/reset/initiate', { body: { email: fixtureUsers.alice.email } });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    expect(sink.inbox).toHaveLength(2);
    const mail = sink.inbox[1]!;
    expect(mail).toMatchObject({ to: [fixtureUsers.alice.email], subject: 'ODK Central account password reset' });
    // Asking does not end anything yet; verifying ends every session of the user.
    expect((await h.get('/v1/users/current', { as: 'alice' })).status).toBe(200);
    expect((await login(h, fixtureUsers.alice.email, fixtureUsers.alice.password)).status).toBe(200);
    const verify = await h.post('/v1/users/reset/verify', { as: { bearer: tokenOf(mail.html) }, body: { new: 'resetthis!' } });
    expect(verify.status).toBe(200);
    expect((await h.get('/v1/users/current', { as: 'alice' })).status).toBe(401);
    expect((await login(h, fixtureUsers.alice.email, 'resetthis!')).status).toBe(200);
    // Nothing audited for asking without invalidate.
    expect((await h.auditActions()).filter((a) => a !== 'user.session.create')).toEqual(['user.delete', 'user.update']);
  });

  test('invalidate=true: the password stops at once, sessions end, the link is still mailed; audited', async () => {
    const { h, sink } = await withSink();
    const res = await h.post('/v1/users/reset/initiate?invalidate=true', { as: 'alice', body: { email: fixtureUsers.bob.email } });
    expect(res.status).toBe(200);
    expect((await login(h, fixtureUsers.bob.email, fixtureUsers.bob.password)).status).toBe(401);
    expect((await h.get('/v1/users/current', { as: 'bob' })).status).toBe(401);
    expect(sink.inbox).toHaveLength(1);
    expect(sink.inbox[0]).toMatchObject({ to: [fixtureUsers.bob.email], subject: 'ODK Central account password reset' });
    const audits = await h.audits();
    expect(audits.map((a) => [a.action, a.details])).toEqual([['user.update', { data: { password: null } }]]);
    expect((await h.post('/v1/users/reset/verify', { as: { bearer: tokenOf(sink.inbox[0]!.html) }, body: { new: 'bobs new passphrase' } })).status).toBe(200);
    expect((await login(h, fixtureUsers.bob.email, 'bobs new passphrase')).status).toBe(200);
  });

  test('blank, missing or non-string email → 400 with Central details; nothing sent', async () => {
    const { h, sink } = await withSink();
    for (const body of [{ email: '' }, {}, { email: null }]) {
      const res = await h.post('/v1/users/reset/initiate', { as: 'alice', body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await json(res)).toEqual({ message: 'Required parameter email missing.', code: 400.2, details: { field: 'email' } });
    }
    const typed = await h.post('/v1/users/reset/initiate', { body: { email: ['alice@getodk.org'] } });
    expect(typed.status).toBe(400);
    expect((await json(typed)).code).toBe(400.11);
    expect(sink.inbox).toEqual([]);
  });
});

describe('POST /v1/users/reset/verify', () => {
  test('a logged-in user cannot skip the old password (403.1); anonymous → 401.2; an unknown token → 401.2', async () => {
    const h = await harness();
    const self = await h.post('/v1/users/reset/verify', { as: 'alice', body: { new: 'coolpassword' } });
    expect(self.status).toBe(403);
    expect(await json(self)).toEqual(FORBIDDEN);
    const anonymous = await h.post('/v1/users/reset/verify', { body: { new: 'coolpassword' } });
    expect(anonymous.status).toBe(401);
    expect(await json(anonymous)).toEqual(AUTH_FAILED);
    const unknown = await h.post('/v1/users/reset/verify', { as: { bearer: 'x'.repeat(64) }, body: { new: 'coolpassword' } });
    expect(unknown.status).toBe(401);
  });

  test('a rejected password leaves the token usable; the user\'s deletion makes it 404.1', async () => {
    const { h, sink } = await withSink();
    await h.post('/v1/users/reset/initiate', { body: { email: fixtureUsers.chelsea.email } });
    const token = tokenOf(sink.inbox[0]!.html);
    const short = await h.post('/v1/users/reset/verify', { as: { bearer: token }, body: { new: 'tooshort' } });
    expect(short.status).toBe(400);
    expect((await json(short)).code).toBe(400.21);
    const missing = await h.post('/v1/users/reset/verify', { as: { bearer: token }, body: {} });
    expect(await json(missing)).toEqual({ message: 'Required parameter new missing.', code: 400.2, details: { field: 'new' } });

    expect((await h.delete(`/v1/users/${h.ids.chelsea}`, { as: 'alice' })).status).toBe(200);
    const gone = await h.post('/v1/users/reset/verify', { as: { bearer: token }, body: { new: 'a fine passphrase' } });
    expect(gone.status).toBe(404);
  });

  test('the token expires with its session (24 hours)', async () => {
    const { h, sink } = await withSink();
    const before = Date.now();
    await h.post('/v1/users/reset/initiate', { body: { email: fixtureUsers.chelsea.email } });
    const token = tokenOf(sink.inbox[0]!.html);
    const rows = await h.db.select().from(sessions).innerJoin(actors, eq(actors.id, sessions.actorId)).where(eq(actors.type, 'singleUse'));
    expect(rows).toHaveLength(1);
    const ttl = rows[0]!.sessions.expiresAt.getTime() - before;
    expect(ttl).toBeGreaterThan(23.9 * 3_600_000);
    expect(ttl).toBeLessThan(24.1 * 3_600_000);
    await h.db.update(sessions).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(sessions.actorId, rows[0]!.actors.id));
    expect((await h.post('/v1/users/reset/verify', { as: { bearer: token }, body: { new: 'a fine passphrase' } })).status).toBe(401);
  });
});
