/** Assignments group: /v1/roles, /v1/assignments, P/assignments, F/assignments. */
import type { Context } from 'hono';
import { groupApp, isExtended, success, type AppEnv } from '../../lib/http/app';
import { jsonArrayResponse } from '../../lib/http/json-stream';
import { intParam, projectId, stringParam } from '../../lib/http/params';
import * as assignments from '../../lib/assignments';
import * as roles from '../../lib/roles';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const formScope = (c: Context<AppEnv, any>) =>
  assignments.formScope(c.var.ctx, projectId(c), stringParam(c, 'xmlFormId'));

const app = groupApp()
  .get('/v1/roles', async (c) => c.json(await roles.listRoles(c.var.ctx)))
  .get('/v1/roles/:roleId', async (c) => c.json(await roles.getRole(c.var.ctx, stringParam(c, 'roleId'))))

  .get('/v1/assignments', async (c) =>
    jsonArrayResponse(await assignments.listAssignments(c.var.ctx, assignments.siteScope(), isExtended(c))))
  .get('/v1/assignments/:roleId', async (c) =>
    jsonArrayResponse(await assignments.listActorsWithRole(c.var.ctx, assignments.siteScope(), stringParam(c, 'roleId'))))
  .post('/v1/assignments/:roleId/:actorId', async (c) => {
    await assignments.grant(c.var.ctx, assignments.siteScope(), stringParam(c, 'roleId'), intParam(c, 'actorId'));
    return success(c);
  })
  .delete('/v1/assignments/:roleId/:actorId', async (c) => {
    await assignments.revoke(c.var.ctx, assignments.siteScope(), stringParam(c, 'roleId'), intParam(c, 'actorId'));
    return success(c);
  })

  .get('/v1/projects/:projectId/assignments', async (c) =>
    jsonArrayResponse(await assignments.listAssignments(c.var.ctx, await assignments.projectScope(c.var.ctx, projectId(c)), isExtended(c))))
  .get('/v1/projects/:projectId/assignments/forms', async (c) =>
    jsonArrayResponse(await assignments.listFormAssignments(c.var.ctx, projectId(c), null, isExtended(c))))
  .get('/v1/projects/:projectId/assignments/forms/:roleId', async (c) =>
    jsonArrayResponse(await assignments.listFormAssignments(c.var.ctx, projectId(c), stringParam(c, 'roleId'), isExtended(c))))
  .get('/v1/projects/:projectId/assignments/:roleId', async (c) =>
    jsonArrayResponse(await assignments.listActorsWithRole(c.var.ctx, await assignments.projectScope(c.var.ctx, projectId(c)), stringParam(c, 'roleId'))))
  .post('/v1/projects/:projectId/assignments/:roleId/:actorId', async (c) => {
    const scope = await assignments.projectScope(c.var.ctx, projectId(c));
    await assignments.grant(c.var.ctx, scope, stringParam(c, 'roleId'), intParam(c, 'actorId'));
    return success(c);
  })
  .delete('/v1/projects/:projectId/assignments/:roleId/:actorId', async (c) => {
    const scope = await assignments.projectScope(c.var.ctx, projectId(c));
    await assignments.revoke(c.var.ctx, scope, stringParam(c, 'roleId'), intParam(c, 'actorId'));
    return success(c);
  })

  .get('/v1/projects/:projectId/forms/:xmlFormId/assignments', async (c) =>
    jsonArrayResponse(await assignments.listAssignments(c.var.ctx, await formScope(c), isExtended(c))))
  .get('/v1/projects/:projectId/forms/:xmlFormId/assignments/:roleId', async (c) =>
    jsonArrayResponse(await assignments.listActorsWithRole(c.var.ctx, await formScope(c), stringParam(c, 'roleId'))))
  .post('/v1/projects/:projectId/forms/:xmlFormId/assignments/:roleId/:actorId', async (c) => {
    await assignments.grant(c.var.ctx, await formScope(c), stringParam(c, 'roleId'), intParam(c, 'actorId'));
    return success(c);
  })
  .delete('/v1/projects/:projectId/forms/:xmlFormId/assignments/:roleId/:actorId', async (c) => {
    await assignments.revoke(c.var.ctx, await formScope(c), stringParam(c, 'roleId'), intParam(c, 'actorId'));
    return success(c);
  });

export default app;
