/** Users: /v1/users[/:actorId|current][/password], password reset (initiate, verify). */
import type { Context } from 'hono';
import { isExtended, newApp, success, type AppEnv } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { jsonArrayResponse } from '../../lib/http/json-stream';
import { intParam } from '../../lib/http/params';
import { publicOrigin } from '../../lib/http/responses';
import * as users from '../../lib/users';

// Streamed as read (issue 21).
const list = async (c: Context<AppEnv>) => jsonArrayResponse(await users.listUsers(c.var.ctx, c.req.query('q')));
const mail = (c: Context<AppEnv>) => ({ origin: publicOrigin(c) });

export const usersRoutes = newApp()
  .get('/v1/users', list)
  .get('/v1/users/', list)
  .post('/v1/users', async (c) => c.json(await users.createUser(c.var.ctx, await jsonBody(c), mail(c))))
  .get('/v1/users/current', async (c) => c.json(await users.getCurrentUser(c.var.ctx, isExtended(c))))
  .get('/v1/users/:actorId', async (c) => c.json(await users.getUser(c.var.ctx, intParam(c, 'actorId'))))
  .patch('/v1/users/:actorId', async (c) =>
    c.json(await users.updateUser(c.var.ctx, intParam(c, 'actorId'), await jsonBody(c))))
  .post('/v1/users/reset/initiate', async (c) => {
    await users.initiatePasswordReset(c.var.ctx, await jsonBody(c), c.req.query('invalidate') === 'true', mail(c));
    return success(c);
  })
  .post('/v1/users/reset/verify', async (c) => {
    await users.resetPasswordWithToken(c.var.ctx, await jsonBody(c));
    return success(c);
  })
  .put('/v1/users/:actorId/password', async (c) => {
    await users.changePassword(c.var.ctx, intParam(c, 'actorId'), await jsonBody(c));
    return success(c);
  })
  .delete('/v1/users/:actorId', async (c) => {
    await users.deleteUser(c.var.ctx, intParam(c, 'actorId'));
    return success(c);
  });
