import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import type { Ctx } from '../context';
import { problems } from '../problem';
import { findSession, isValidToken } from '../sessions';
import { checkPasswordThrottled } from '../sessions';
import { generation, recallBasic, rememberBasic } from '../sessions/cache';
import { sha256Hex } from '../blobs/hash';
import { clientAddress } from './client-address';
import type { AppEnv } from './app';
import { keyToken } from './app';
import { peekJsonBody, readBodyText } from './body';

/**
 * The session cookie's names. Over HTTPS it is `__Host-session` (Secure, as Central behind
 * https); over plain HTTP (allowed only on loopback by default, ALLOW_HTTP_AUTH) it is `session`
 * without Secure, as Central configured with an http:// domain, because Chromium drops Secure
 * cookies set by http://127.0.0.1.
 */
export const SESSION_COOKIE = '__Host-session';
export const PLAIN_SESSION_COOKIE = 'session';
export const CSRF_COOKIE = '__csrf';

/** Whether the request itself came over HTTPS (the URL, or a trusted proxy's X-Forwarded-Proto). */
export function isHttps(c: Context<AppEnv>, ctx: Ctx): boolean {
  if (new URL(c.req.url).protocol === 'https:') return true;
  return ctx.config.TRUST_PROXY === true && c.req.header('x-forwarded-proto')?.split(',')[0]?.trim() === 'https';
}

/**
 * Whether Basic or cookie authentication may be used on this request: HTTPS (the URL, or
 * `X-Forwarded-Proto: https` from a proxy trusted by TRUST_PROXY), or plain HTTP when ALLOW_HTTP_AUTH is on (the embedded default on
 * loopback). Central answers 401.3 otherwise (central-problem-codes.md).
 */
export function isSecureEnough(c: Context<AppEnv>, ctx: Ctx): boolean {
  return ctx.config.ALLOW_HTTP_AUTH === true || isHttps(c, ctx);
}

function decodeBasic(value: string): { email: string; password: string } | null {
  let plain: string;
  try {
    const bin = atob(value.trim());
    plain = new TextDecoder().decode(Uint8Array.from(bin, (ch) => ch.charCodeAt(0)));
  } catch {
    return null;
  }
  // A regex, not split(':'): the password may itself contain colons.
  if (plain.includes('\0')) return null; // no account has one; PostgreSQL text cannot hold it
  const m = /^([^:]+):(.+)$/s.exec(plain);
  return m ? { email: m[1]!, password: m[2]! } : null;
}

/**
 * Builds `ctx.auth` from the request (authentication only; rights are checked by lib verbs).
 * Order: App User key in the URL (`/v1/key/{token}/…`: malformed → 401.2, unknown or not an App
 * User/public link → 403.1, as Central); `Authorization: Bearer` (unknown → 401.2); `Authorization:
 * Basic` (never a challenge; plain HTTP → 401.3; wrong → 401.2); the session cookie (ignored over
 * plain HTTP unless allowed; a cookie naming no live session → 401.2 at once, as Central; a POST
 * needs a CSRF proof, else 401.2). No credentials: anonymous (the group app then answers 401.2 on
 * every route that is not anonymous, as Central).
 * @throws Problem 401.2, 401.3, 403.1.
 */
export async function authenticate(c: Context<AppEnv>, ctx: Ctx): Promise<void> {
  const key = keyToken(c.req.raw);
  if (key !== null) {
    if (!isValidToken(key)) throw problems.user.authenticationFailed();
    const found = await findSession(ctx, key);
    if (!found || (found.actor.type !== 'field_key' && found.actor.type !== 'public_link')) {
      throw problems.user.insufficientRights();
    }
    ctx.auth = { actor: found.actor, session: found.session, via: 'key' };
    return;
  }

  const header = c.req.header('authorization');
  if (header != null && header !== '') {
    if (header.startsWith('Bearer ')) {
      const found = await findSession(ctx, header.slice(7).trim());
      if (!found) throw problems.user.authenticationFailed();
      ctx.auth = { actor: found.actor, session: found.session, via: 'bearer' };
      return;
    }
    if (header.startsWith('Basic ')) {
      if (!isSecureEnough(c, ctx)) throw problems.user.httpsOnly();
      const creds = decodeBasic(header.slice(6));
      if (!creds) throw problems.user.authenticationFailed();
      const actor = await basicActor(c, ctx, creds.email, creds.password);
      if (!actor) throw problems.user.authenticationFailed();
      ctx.auth = { actor, session: null, via: 'basic' };
      return;
    }
    throw problems.user.authenticationFailed();
  }

  // The cookie named for this scheme first: a stale cookie of the other scheme may linger.
  const names = isHttps(c, ctx) ? [SESSION_COOKIE, PLAIN_SESSION_COOKIE] : [PLAIN_SESSION_COOKIE, SESSION_COOKIE];
  const cookie = names.map((n) => getCookie(c, n)).find((v) => v != null && v !== '');
  if (cookie == null || !isSecureEnough(c, ctx)) return;
  // A cookie that names no live session (logged out, expired) is refused, as Central does.
  const found = await findSession(ctx, cookie);
  if (!found) throw problems.user.authenticationFailed();
  // CSRF: only POST needs proof (Central). A cross-site page can send a form POST without a
  // preflight, but not a PATCH, PUT or DELETE, nor X-Requested-With: those need a CORS preflight,
  // which Fieldbase never grants. The proof is X-Requested-With: XMLHttpRequest (what the UI sends),
  // or the session's token as a JSON body `__csrf` or an X-CSRF-Token header.
  if (c.req.method === 'POST' && c.req.header('x-requested-with') !== 'XMLHttpRequest') {
    const sent = c.req.header('x-csrf-token') ?? (await csrfFromBody(c));
    if (sent == null || sent === '' || sent !== found.session.csrf) throw problems.user.authenticationFailed();
  } else if (c.req.method === 'POST' && (c.req.header('content-type') ?? '').includes('json')) {
    await csrfFromBody(c); // never let `__csrf` reach the verb as data
  }
  ctx.auth = { actor: found.actor, session: found.session, via: 'cookie' };
}

/**
 * Basic credentials through the login throttle, remembered for a short while once verified (so a
 * client sending them on every request pays bcrypt once, not each time).
 */
async function basicActor(c: Context<AppEnv>, ctx: Ctx, email: string, password: string) {
  const hash = sha256Hex(`${email.toLowerCase()}\0${password}`);
  const known = await recallBasic(ctx, email, hash);
  if (known) return known;
  const gen = generation(ctx);
  const actor = await checkPasswordThrottled(ctx, email, password, clientAddress(c));
  if (actor) await rememberBasic(ctx, email, hash, actor, gen);
  return actor;
}

async function csrfFromBody(c: Context<AppEnv>): Promise<string | undefined> {
  const type = (c.req.header('content-type') ?? '').toLowerCase();
  if (type.startsWith('application/x-www-form-urlencoded')) {
    // The UI's decrypting export download is a plain HTML form POST carrying `__csrf` (Central
    // parses it before authenticating). Hono caches the text, so the handler can still read it.
    const text = await readBodyText(c, c.var.ctx.config.MAX_JSON_BYTES, 'form');
    return new URLSearchParams(text).get('__csrf') ?? undefined;
  }
  if (!type.includes('json')) return undefined;
  const body = await peekJsonBody(c).catch(() => undefined);
  if (body == null || typeof body !== 'object') return undefined;
  const csrf = (body as Record<string, unknown>).__csrf;
  // The token must not reach the verb as if it were data (Central strips it too).
  delete (body as Record<string, unknown>).__csrf;
  return typeof csrf === 'string' ? csrf : undefined;
}
