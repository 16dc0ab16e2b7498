/**
 * A real SMTP server on a loopback port for mail tests (no TLS, no auth): it accepts every message
 * and keeps it, parsed with mailparser, in `inbox`. Test-only. Closed automatically when the test ends.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { onTestFinished } from 'vitest';

export interface ReceivedMail {
  /** The SMTP envelope recipients (RCPT TO). */
  envelopeTo: string[];
  from: string;
  to: string[];
  subject: string;
  html: string;
  raw: string;
}

export interface SmtpSink {
  port: number;
  inbox: ReceivedMail[];
  /** Config overrides that point the SMTP Mailer at this sink. */
  config: { EMAIL_HOST: string; EMAIL_PORT: number };
}

const addresses = (field: unknown): string[] => {
  const list = (field == null ? [] : Array.isArray(field) ? field : [field]) as Array<{ value: Array<{ address?: string }> }>;
  return list.flatMap((f) => f.value.map((v) => v.address ?? ''));
};

/** Starts the sink on 127.0.0.1 (a free port). */
export async function smtpSink(): Promise<SmtpSink> {
  const inbox: ReceivedMail[] = [];
  const open = new Set<Socket>();
  const server: Server = createServer((socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    let buffer = '';
    let inData = false;
    let rcpt: string[] = [];
    const reply = (line: string) => socket.write(`${line}\r\n`);
    const pump = async (): Promise<void> => {
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          const raw = buffer.slice(0, end + 2).replace(/^\.\./gm, '.');
          buffer = buffer.slice(end + 5);
          inData = false;
          const parsed = await simpleParser(raw);
          inbox.push({
            envelopeTo: rcpt,
            from: addresses(parsed.from)[0] ?? '',
            to: addresses(parsed.to),
            subject: parsed.subject ?? '',
            html: typeof parsed.html === 'string' ? parsed.html.replace(/\r?\n$/, '') : '',
            raw,
          });
          rcpt = [];
          reply('250 queued');
          continue;
        }
        const nl = buffer.indexOf('\r\n');
        if (nl < 0) return;
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO') reply('250-sink\r\n250 8BITMIME');
        else if (verb === 'RCPT') {
          rcpt.push(/<([^>]*)>/.exec(line)?.[1] ?? '');
          reply('250 OK');
        } else if (['HELO', 'MAIL', 'RSET', 'NOOP'].includes(verb)) reply('250 OK');
        else if (verb === 'DATA') {
          inData = true;
          reply('354 go ahead');
        } else if (verb === 'QUIT') {
          reply('221 bye');
          socket.end();
          return;
        } else reply('502 not implemented');
      }
    };
    let chain = Promise.resolve();
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      chain = chain.then(pump).catch(() => { socket.destroy(); });
    });
    socket.on('error', () => {});
    reply('220 sink ESMTP');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  onTestFinished(() => new Promise<void>((resolve) => {
    for (const s of open) s.destroy();
    server.close(() => resolve());
  }));
  return { port, inbox, config: { EMAIL_HOST: '127.0.0.1', EMAIL_PORT: port } };
}
