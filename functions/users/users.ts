/** Users: /v1/users[/:actorId|current][/password]. */
import { isExtended, newApp, success } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { intParam } from '../../lib/http/params';
import * as users from '../../lib/users';

export const usersRoutes = newApp()
  .get('/v1/users', async (c) => c.json(await users.listUsers(c.var.ctx, c.req.query('q'))))
  .post('/v1/users', async (c) => c.json(await users.createUser(c.var.ctx, await jsonBody(c))))
  .get('/v1/users/current', async (c) => c.json(await users.getCurrentUser(c.var.ctx, isExtended(c))))
  .get('/v1/users/:actorId', async (c) => c.json(await users.getUser(c.var.ctx, intParam(c, 'actorId'))))
  .patch('/v1/users/:actorId', async (c) =>
    c.json(await users.updateUser(c.var.ctx, intParam(c, 'actorId'), await jsonBody(c))))
  .post('/v1/users/reset/initiate', async (c) => {
    await users.initiatePasswordReset(c.var.ctx, await jsonBody(c), c.req.query('invalidate') === 'true');
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
