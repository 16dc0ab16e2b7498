import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Config } from '../config';
import type { Mailer } from '../mail';

// nodemailer is loaded on first use: most requests send no mail, and a Lambda bundle keeps it in a
// lazily loaded chunk instead of its start-up code.
const loadNodemailer = async () => (await import('nodemailer')).default;

/**
 * An SMTP Mailer (nodemailer) for EMAIL_HOST / EMAIL_PORT / EMAIL_SECURE / EMAIL_USER /
 * EMAIL_PASSWORD. Without EMAIL_SECURE, nodemailer upgrades with STARTTLS when the server offers it.
 * Node and Lambda only (it needs TCP sockets).
 * @throws Error when EMAIL_HOST is unset (a caller bug: check first).
 */
export function createSmtpMailer(config: Config): Mailer {
  if (!config.EMAIL_HOST) throw new Error('createSmtpMailer: EMAIL_HOST is not set');
  const options = {
    host: config.EMAIL_HOST,
    port: config.EMAIL_PORT ?? (config.EMAIL_SECURE ? 465 : 587),
    secure: config.EMAIL_SECURE,
    ...(config.EMAIL_USER ? { auth: { user: config.EMAIL_USER, pass: config.EMAIL_PASSWORD ?? '' } } : {}),
  };
  let transport: Promise<import('nodemailer').Transporter> | null = null;
  return {
    kind: 'smtp',
    async send(message) {
      transport ??= loadNodemailer().then((nodemailer) => nodemailer.createTransport(options));
      const info = await (await transport).sendMail(message);
      return { messageId: info.messageId };
    },
  };
}

/**
 * A Mailer for a server with no SMTP (the embedded default): each message becomes an .eml file in
 * `dir` (created on first use), named by time and a random suffix, which any mail program opens,
 * so a local administrator can follow an invitation or reset link. Node only.
 * @returns receipts carrying the file's absolute path.
 */
export function createOutboxMailer(dir: string): Mailer {
  let composer: Promise<import('nodemailer').Transporter<{ messageId: string; message: Buffer }>> | null = null;
  const folder = resolve(dir);
  return {
    kind: 'outbox',
    async send(message) {
      composer ??= loadNodemailer().then((nodemailer) => nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' }) as never);
      const info = await (await composer).sendMail(message);
      await mkdir(folder, { recursive: true });
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const path = join(folder, `${stamp}-${crypto.randomUUID().slice(0, 8)}.eml`);
      await writeFile(path, info.message as Buffer, { mode: 0o600 });
      return { path, messageId: info.messageId };
    },
  };
}

/**
 * The Mailer a Node process uses: SMTP when EMAIL_HOST is set; else, with `outbox` (the local
 * server and CLI), .eml files in DATA_DIR/mail; else none (Lambda: its disk is not kept), and
 * messages are only logged (lib/mail sendAfterCommit).
 */
export function nodeMailer(config: Config, opts: { outbox: boolean }): Mailer | undefined {
  if (config.EMAIL_HOST) return createSmtpMailer(config);
  return opts.outbox ? createOutboxMailer(join(config.DATA_DIR, 'mail')) : undefined;
}
