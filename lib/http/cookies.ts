import type { Context } from 'hono';
import { setCookie } from 'hono/cookie';
import type { SessionJson } from '../sessions';
import type { AppEnv } from './app';
import { CSRF_COOKIE, isHttps, PLAIN_SESSION_COOKIE, SESSION_COOKIE } from './auth';

/**
 * Sets the browser cookies a login answers with (Central, lib/http/sessions.js): the HttpOnly
 * session cookie and the readable `__csrf` cookie, both SameSite=Strict and Path=/. Over HTTPS
 * (or a trusted proxy's `X-Forwarded-Proto: https`) the session cookie is `__Host-session` and both
 * are Secure; over plain HTTP (loopback, ALLOW_HTTP_AUTH) it is `session` and neither is Secure, as
 * Central configured with an http:// domain: Chromium keeps Secure cookies from http://localhost
 * but drops them from http://127.0.0.1.
 */
export function setSessionCookies(c: Context<AppEnv>, session: SessionJson): void {
  const expires = new Date(session.expiresAt);
  const secure = isHttps(c, c.var.ctx);
  const name = secure ? SESSION_COOKIE : PLAIN_SESSION_COOKIE;
  setCookie(c, name, session.token, { path: '/', expires, httpOnly: true, secure, sameSite: 'Strict' });
  setCookie(c, CSRF_COOKIE, session.csrf, { path: '/', expires, secure, sameSite: 'Strict' });
}

/**
 * Clears the session cookie of this scheme and the CSRF cookie (logout), in Central's form
 * (`=null; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT`). Central marks both Secure even over
 * plain HTTP, where a browser then ignores the clearing; Fieldbase sets Secure only over HTTPS, so
 * the browser really forgets them (README, differences from Central).
 */
export function clearSessionCookies(c: Context<AppEnv>): void {
  const secure = isHttps(c, c.var.ctx);
  const gone = { path: '/', expires: new Date(0), secure, sameSite: 'Strict' } as const;
  setCookie(c, secure ? SESSION_COOKIE : PLAIN_SESSION_COOKIE, 'null', { ...gone, httpOnly: true });
  setCookie(c, CSRF_COOKIE, 'null', gone);
}
