/** App Users (field keys): P/app-users[/:actorId]. */
import { isExtended, newApp, success } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { jsonArrayResponse } from '../../lib/http/json-stream';
import { intParam, projectId } from '../../lib/http/params';
import * as appUsers from '../../lib/app-users';

export const appUsersRoutes = newApp()
  .get('/v1/projects/:projectId/app-users', async (c) =>
    jsonArrayResponse(await appUsers.listAppUsers(c.var.ctx, projectId(c), isExtended(c))))
  .post('/v1/projects/:projectId/app-users', async (c) =>
    c.json(await appUsers.createAppUser(c.var.ctx, projectId(c), await jsonBody(c))))
  .get('/v1/projects/:projectId/app-users/:actorId', async (c) =>
    c.json(await appUsers.getAppUser(c.var.ctx, projectId(c), intParam(c, 'actorId'), isExtended(c))))
  .patch('/v1/projects/:projectId/app-users/:actorId', async (c) =>
    c.json(await appUsers.updateAppUser(c.var.ctx, projectId(c), intParam(c, 'actorId'), await jsonBody(c))))
  .delete('/v1/projects/:projectId/app-users/:actorId', async (c) => {
    await appUsers.deleteAppUser(c.var.ctx, projectId(c), intParam(c, 'actorId'));
    return success(c);
  });
