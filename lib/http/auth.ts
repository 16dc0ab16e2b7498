import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import type { Ctx } from '../context';
import { problems } from '../problem';
import { findSession, isValidToken } from '../sessions';
import { verifyUserPassword } from '../users/passwords';
import type { AppEnv } from './app';
import { keyToken } from './app';
import { peekJsonBody } from './body';

/** Names of the session cookie Fieldbase sets (Central's) and the one it also reads. */
export const SESSION_COOKIE = '__Host-session';
export const CSRF_COOKIE = '__csrf';

/**
 * Whether Basic or cookie authentication may be used on this request: HTTPS (the URL, or
 * `X-Forwarded-Proto: https` from a proxy trusted by TRUST_PROXY), or plain HTTP when ALLOW_HTTP_AUTH is on (the embedded default on
 * loopback). Central answers 401.3 otherwise (central-problem-codes.md).
 */
export function isSecureEnough(c: Context<AppEnv>, ctx: Ctx): boolean {
  if (ctx.config.ALLOW_HTTP_AUTH) return true;
  if (new URL(c.req.url).protocol === 'https:') return true;
  return ctx.config.TRUST_PROXY === true && c.req.header('x-forwarded-proto')?.split(',')[0]?.trim() === 'https';
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
  const m = /^([^:]+):(.+)$/s.exec(plain);
  return m ? { email: m[1]!, password: m[2]! } : null;
}

/**
 * Builds `ctx.auth` from the request (authentication only; rights are checked by lib verbs).
 * Order: App User key in the URL (`/v1/key/{token}/…`: malformed → 401.2, unknown or not an App
 * User/public link → 403.1, as Central); `Authorization: Bearer` (unknown → 401.2); `Authorization:
 * Basic` (never a challenge; plain HTTP → 401.3; wrong → 401.2); the session cookie (ignored over
 * plain HTTP and when unknown, leaving the request anonymous, as Central; a non-GET needs a CSRF
 * proof, else 401.2: the token as `X-CSRF-Token` or a JSON body `__csrf`, or, as Central accepts,
 * `X-Requested-With: XMLHttpRequest`, a header a cross-site page cannot send without a CORS
 * preflight, which Fieldbase never grants; a token that is sent must match). No credentials:
 * anonymous.
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
      const actor = await verifyUserPassword(ctx, creds.email, creds.password);
      if (!actor) throw problems.user.authenticationFailed();
      ctx.auth = { actor, session: null, via: 'basic' };
      return;
    }
    throw problems.user.authenticationFailed();
  }

  const cookie = getCookie(c, SESSION_COOKIE) ?? getCookie(c, 'session');
  if (cookie == null || !isSecureEnough(c, ctx)) return;
  const found = await findSession(ctx, cookie);
  if (!found) return;
  const method = c.req.method;
  if (method !== 'GET' && method !== 'HEAD') {
    const sent = c.req.header('x-csrf-token') ?? (await csrfFromBody(c));
    if (sent != null && sent !== '') {
      if (sent !== found.session.csrf) throw problems.user.authenticationFailed();
    } else if (c.req.header('x-requested-with') !== 'XMLHttpRequest') {
      throw problems.user.authenticationFailed();
    }
  }
  ctx.auth = { actor: found.actor, session: found.session, via: 'cookie' };
}

async function csrfFromBody(c: Context<AppEnv>): Promise<string | undefined> {
  if (!(c.req.header('content-type') ?? '').includes('json')) return undefined;
  const body = await peekJsonBody(c).catch(() => undefined);
  if (body == null || typeof body !== 'object') return undefined;
  const csrf = (body as Record<string, unknown>).__csrf;
  // The token must not reach the verb as if it were data (Central strips it too).
  delete (body as Record<string, unknown>).__csrf;
  return typeof csrf === 'string' ? csrf : undefined;
}
