/** User preferences (site and per project) and the server configuration the UI reads. */
import { newApp, success } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { intParam, stringParam } from '../../lib/http/params';
import { getConfig, publicConfig } from '../../lib/users/config';
import { deletePreference, setPreference } from '../../lib/users/preferences';

export const preferencesRoutes = newApp()
  .put('/v1/user-preferences/site/:name', async (c) => {
    await setPreference(c.var.ctx, null, stringParam(c, 'name'), await jsonBody(c));
    return success(c);
  })
  .delete('/v1/user-preferences/site/:name', async (c) => {
    await deletePreference(c.var.ctx, null, stringParam(c, 'name'));
    return success(c);
  })
  .put('/v1/user-preferences/project/:projectId/:name', async (c) => {
    await setPreference(c.var.ctx, intParam(c, 'projectId'), stringParam(c, 'name'), await jsonBody(c));
    return success(c);
  })
  .delete('/v1/user-preferences/project/:projectId/:name', async (c) => {
    await deletePreference(c.var.ctx, intParam(c, 'projectId'), stringParam(c, 'name'));
    return success(c);
  })
  .get('/v1/config/public', (c) => c.json(publicConfig()))
  .get('/v1/config/:key', async (c) => c.json(await getConfig(c.var.ctx, stringParam(c, 'key'))));
