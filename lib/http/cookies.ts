import type { Context } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
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

/** Clears the session cookies of this scheme and the CSRF cookie (logout). */
export function clearSessionCookies(c: Context<AppEnv>): void {
  const secure = isHttps(c, c.var.ctx);
  deleteCookie(c, secure ? SESSION_COOKIE : PLAIN_SESSION_COOKIE, { path: '/', secure, httpOnly: true, sameSite: 'Strict' });
  deleteCookie(c, CSRF_COOKIE, { path: '/', secure, sameSite: 'Strict' });
}
