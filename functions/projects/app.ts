/** Projects group: /v1/projects[/:projectId]. JSON only; rights are checked in lib/projects. */
import { groupApp, isExtended, success } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { jsonArrayResponse } from '../../lib/http/json-stream';
import { projectId } from '../../lib/http/params';
import { setManagedEncryption } from '../../lib/encryption';
import * as projects from '../../lib/projects';

const app = groupApp()
  .get('/v1/projects', async (c) =>
    jsonArrayResponse(await projects.listProjects(c.var.ctx, {
      extended: isExtended(c),
      forms: c.req.query('forms') === 'true',
      datasets: c.req.query('datasets') === 'true',
    })))
  .post('/v1/projects', async (c) => c.json(await projects.createProject(c.var.ctx, await jsonBody(c))))
  .get('/v1/projects/:projectId', async (c) => c.json(await projects.getProject(c.var.ctx, projectId(c), isExtended(c))))
  .patch('/v1/projects/:projectId', async (c) =>
    c.json(await projects.patchProject(c.var.ctx, projectId(c), await jsonBody(c))))
  .put('/v1/projects/:projectId', async (c) =>
    c.json(await projects.putProject(c.var.ctx, projectId(c), await jsonBody(c))))
  .post('/v1/projects/:projectId/key', async (c) =>
    c.json(await setManagedEncryption(c.var.ctx, projectId(c), await jsonBody(c))))
  .delete('/v1/projects/:projectId', async (c) => {
    await projects.deleteProject(c.var.ctx, projectId(c));
    return success(c);
  });

export default app;
