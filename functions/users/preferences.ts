/** User preferences (site and per project) and the server configuration (System > Customization). */
import type { Context } from 'hono';
import { newApp, success, type AppEnv } from '../../lib/http/app';
import { jsonBody } from '../../lib/http/body';
import { intParam, stringParam } from '../../lib/http/params';
import { blobResponse, bodyBytes } from '../../lib/http/responses';
import { getConfig, isImageConfig, publicConfig, setConfig, unsetConfig, type ConfigFile, type ConfigJson } from '../../lib/users/config';
import { deletePreference, setPreference } from '../../lib/users/preferences';

/** A JSON config as JSON, an image config as its bytes (Central's maskedBlobResponse). */
const configResponse = (c: Context<AppEnv>, found: ConfigJson | ConfigFile, cacheControl?: string) =>
  'sha' in found ? blobResponse(c, c.var.ctx, found, { cacheControl }) : c.json(found);

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
  .get('/v1/config/public', async (c) => c.json(await publicConfig(c.var.ctx)))
  .get('/v1/config/public/:key', async (c) =>
    configResponse(c, await getConfig(c.var.ctx, stringParam(c, 'key'), { public: true }), c.req.query('ts') ? 'max-age=31536000' : 'no-cache'))
  .get('/v1/config/:key', async (c) => configResponse(c, await getConfig(c.var.ctx, stringParam(c, 'key'))))
  .post('/v1/config/:key', async (c) => {
    const key = stringParam(c, 'key');
    const body = isImageConfig(key) ? { bytes: await bodyBytes(c), contentType: c.req.header('content-type') } : { json: await jsonBody(c) };
    return c.json(await setConfig(c.var.ctx, key, body));
  })
  .delete('/v1/config/:key', async (c) => {
    await unsetConfig(c.var.ctx, stringParam(c, 'key'));
    return success(c);
  });
