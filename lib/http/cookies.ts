import type { Context } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import type { SessionJson } from '../sessions';
import type { AppEnv } from './app';
import { CSRF_COOKIE, SESSION_COOKIE } from './auth';

/**
 * Sets the browser cookies a login answers with (Central): the HttpOnly session cookie and the
 * readable `__csrf` cookie the UI echoes back on non-GET requests. Both Secure and SameSite=Strict
 * (browsers treat http://localhost as secure, so the local server works too).
 */
export function setSessionCookies(c: Context<AppEnv>, session: SessionJson): void {
  const expires = new Date(session.expiresAt);
  setCookie(c, SESSION_COOKIE, session.token, { path: '/', expires, httpOnly: true, secure: true, sameSite: 'Strict', prefix: undefined });
  setCookie(c, CSRF_COOKIE, session.csrf, { path: '/', expires, secure: true, sameSite: 'Strict' });
}

/** Clears both cookies (logout). */
export function clearSessionCookies(c: Context<AppEnv>): void {
  deleteCookie(c, SESSION_COOKIE, { path: '/', secure: true });
  deleteCookie(c, CSRF_COOKIE, { path: '/', secure: true });
}
