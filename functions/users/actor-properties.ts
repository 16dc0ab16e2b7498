/** Actor properties of a project: P/actor-properties. */
import { isExtended, newApp, success } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { projectId } from '../../lib/http/params';
import * as actorProperties from '../../lib/actor-properties';

export const actorPropertiesRoutes = newApp()
  .get('/v1/projects/:projectId/actor-properties', async (c) =>
    c.json(await actorProperties.listActorProperties(c.var.ctx, projectId(c), isExtended(c))))
  .post('/v1/projects/:projectId/actor-properties', async (c) => {
    await actorProperties.createActorProperty(c.var.ctx, projectId(c), await jsonBody(c));
    return success(c);
  });
