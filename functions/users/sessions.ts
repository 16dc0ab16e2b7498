/**
 * Sessions: log in (sets the session and CSRF cookies), restore, log out. Ending the session the
 * request itself authenticated with (by cookie or Bearer) also clears both cookies, as Central does.
 */
import { newApp, success } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { clientAddress } from '../../lib/http/client-address';
import { clearSessionCookies, setSessionCookies } from '../../lib/http/cookies';
import { stringParam } from '../../lib/http/params';
import * as sessions from '../../lib/sessions';

export const sessionsRoutes = newApp()
  .post('/v1/sessions', async (c) => {
    const session = await sessions.logIn(c.var.ctx, await jsonBody(c), c.req.header('user-agent') ?? null, clientAddress(c));
    setSessionCookies(c, session);
    return c.json(session);
  })
  .get('/v1/sessions/restore', (c) => c.json(sessions.restoreSession(c.var.ctx)))
  .delete('/v1/sessions/current', async (c) => {
    await sessions.endCurrentSession(c.var.ctx);
    clearSessionCookies(c);
    return success(c);
  })
  .delete('/v1/sessions/:token', async (c) => {
    await sessions.endSession(c.var.ctx, stringParam(c, 'token'));
    if (c.var.ctx.auth.session?.token === c.req.param('token')) clearSessionCookies(c);
    return success(c);
  });
