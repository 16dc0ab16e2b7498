/** GET /v1/analytics/preview (the usage report an administrator may preview) and POST /v1/backup (rights only; not supported). */
import { newApp } from '../../lib/http/app';
import { analyticsPreview, backupNow } from '../../lib/users/analytics';

export const analyticsRoutes = newApp()
  .get('/v1/analytics/preview', async (c) => c.json(await analyticsPreview(c.var.ctx)))
  .post('/v1/backup', async (c) => backupNow(c.var.ctx));
