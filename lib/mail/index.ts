/**
 * Outgoing e-mail: the messages Fieldbase sends about accounts (as Central does, lib/formats/mail.js)
 * and the Mailer a runtime provides (lib/runtime/mail.ts: SMTP, or .eml files in DATA_DIR/mail).
 * Pure apart from `sendAfterCommit`, which hands messages to `ctx.mailer`. Runs on Node and Workers.
 */
import { onCommit, type Ctx } from '../context';

/** One message ready to send. Central sends HTML only; so do we, and tests read `html`. */
export interface MailMessage {
  to: string;
  subject: string;
  html: string;
}

/** Where a Mailer put a message: an SMTP message id, or the path of the .eml file written. */
export interface MailReceipt {
  messageId?: string;
  path?: string;
}

/**
 * Delivers messages. A runtime builds one (lib/runtime/mail.ts) and puts it in Deps; without one
 * (Workers, Lambda without EMAIL_HOST) nothing is sent and each message is logged as a warning.
 */
export interface Mailer {
  /** 'smtp' sends through a server; 'outbox' writes .eml files a local administrator can open. */
  readonly kind: 'smtp' | 'outbox';
  /** @throws whatever the transport throws (connection refused, rejected recipient). */
  send(message: MailMessage & { from: string }): Promise<MailReceipt>;
}

/** The kinds of message, as Central names its templates. */
export type MailKind =
  | 'accountCreated'
  | 'accountCreatedWithPassword'
  | 'accountEmailChanged'
  | 'accountReset'
  | 'accountResetDeleted'
  | 'accountPasswordChanged';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);

const link = (url: string) => `<a href="${escapeHtml(url)}">${escapeHtml(url)}</a>`;

/**
 * The link that sets a password with a single-use token: the web UI's claim page (central-frontend
 * routes.js: /account/claim, which POSTs /v1/users/reset/verify with the token as Bearer). Tokens are
 * [A-Za-z0-9!$] (lib/sessions/tokens.ts), left as they are in the query string, as Central writes them.
 */
export const claimUrl = (origin: string, token: string) => `${origin}/account/claim?token=${token}`;

/** The web UI page where anyone may ask for a new reset link. */
export const resetPasswordUrl = (origin: string) => `${origin}/reset-password`;

/**
 * Builds one message. Subjects are Central's (its tests and users' mail filters match them); the
 * bodies say what Central's say, in our words, except the email-change notice, whose text
 * Central's tests compare whole.
 * @param origin the server's public origin (PUBLIC_URL, else the request's), for links.
 * @param data `token` for accountCreated/accountReset; `oldEmail`/`newEmail` for accountEmailChanged.
 * @returns `{ to, subject, html }`. Pure. @throws Error when a needed datum is missing (a bug).
 */
export function composeMail(
  kind: MailKind,
  to: string,
  origin: string,
  data: { token?: string; oldEmail?: string; newEmail?: string } = {},
): MailMessage {
  const need = (v: string | undefined, name: string) => {
    if (v == null) throw new Error(`mail ${kind}: ${name} missing`);
    return v;
  };
  const wrap = (subject: string, body: string) => ({ to, subject, html: `<html>Hello!${body}</html>` });
  const renewal = `<p>This link works once, for 24 hours. When it has expired, ask for another one on the password reset page:</p><p>${link(resetPasswordUrl(origin))}</p>`;
  switch (kind) {
    case 'accountCreated':
      return wrap('ODK Central account created',
        '<p>An account on an ODK Central server has been set up for this address.</p>'
        + '<p>If you did not expect this, you can ignore this message. Otherwise, follow this link to choose your password and start using the account:</p>'
        + `<p>${link(claimUrl(origin, need(data.token, 'token')))}</p>${renewal}`);
    case 'accountCreatedWithPassword':
      return wrap('ODK Central account created',
        '<p>An account on an ODK Central server has been set up for this address.</p>'
        + '<p>If you did not expect this, you can ignore this message. Your account was created with an assigned password. '
        + `Ask the person who created it for that password, then <a href="${escapeHtml(origin)}">sign in</a>.</p>`
        + '<p>If you never received the password, or have forgotten it, you can set a new one at any time here:</p>'
        + `<p>${link(resetPasswordUrl(origin))}</p>`);
    case 'accountEmailChanged':
      // Central's tests compare this body character for character: keep it as is.
      return wrap('ODK Central account email changed',
        '<p><p>We are emailing because you have an ODK Central account, and somebody has just changed the email address associated with the account from this one you are reading right now '
        + `(${escapeHtml(need(data.oldEmail, 'oldEmail'))}) to a new address (${escapeHtml(need(data.newEmail, 'newEmail'))}).</p>`
        + '<p>If this is expected, you can ignore this email. If it is not expected, please contact your ODK system administrator immediately.</p>');
    case 'accountReset':
      return wrap('ODK Central account password reset',
        '<p>Someone asked to reset the password of the ODK Central account at this address.</p>'
        + '<p>If that was not you, you can ignore this message: your password stays as it is. Otherwise, follow this link to choose a new password:</p>'
        + `<p>${link(claimUrl(origin, need(data.token, 'token')))}</p>${renewal}`);
    case 'accountResetDeleted':
      return wrap('ODK Central account password reset',
        '<p>Someone asked to reset the password of the ODK Central account at this address, but that account has been deleted.</p>'
        + '<p>If that was not you, you can ignore this message. Otherwise, check which address your account uses, or ask your ODK system administrator.</p>');
    case 'accountPasswordChanged':
      return wrap('ODK Central account password change',
        '<p>The password of your ODK Central account has just been changed.</p>'
        + '<p>If you did this, there is nothing more to do.</p>'
        + '<p>If you did not, contact your ODK system administrator at once.</p>');
  }
}

/** The sender address: EMAIL_FROM, else no-reply at PUBLIC_URL's host, else no-reply@localhost. */
export function senderAddress(config: Ctx['config']): string {
  if (config.EMAIL_FROM) return config.EMAIL_FROM;
  const host = config.PUBLIC_URL ? new URL(config.PUBLIC_URL).hostname : 'localhost';
  return `no-reply@${host}`;
}

/**
 * Sends messages once the current transaction has committed, so mail never announces an account or
 * token that was rolled back. Outside a transaction (the usual case: verbs call it after `withTx`
 * returns) it sends at once and waits, so the mail has left before the response does. Inside one
 * it is queued and sent after commit without waiting.
 * A failed send is logged (error) and never thrown: the change it reports stands. Without a mailer
 * each message is logged as a warning with its recipient and subject (never its token).
 * Effects: mail sent or written as .eml; log lines (the .eml path at info level).
 */
export async function sendAfterCommit(ctx: Ctx, messages: MailMessage[]): Promise<void> {
  const deliver = async () => {
    for (const m of messages) await deliverOne(ctx, m);
  };
  if (ctx.tx) {
    onCommit(ctx, () => void deliver());
    return;
  }
  await deliver();
}

async function deliverOne(ctx: Ctx, message: MailMessage): Promise<void> {
  const meta = { requestId: ctx.requestId, to: message.to, subject: message.subject };
  if (!ctx.mailer) {
    ctx.log.warn('no mail transport is configured (EMAIL_HOST): message not sent', meta);
    return;
  }
  try {
    const receipt = await ctx.mailer.send({ ...message, from: senderAddress(ctx.config) });
    if (receipt.path) ctx.log.info(`mail written to ${receipt.path} (no EMAIL_HOST configured): open it to follow its links`, { ...meta, path: receipt.path });
    else ctx.log.debug('mail sent', { ...meta, messageId: receipt.messageId });
  } catch (err) {
    ctx.log.error('sending mail failed', { ...meta, err });
  }
}
