/** Audits group: GET /v1/audits (the server audit log). */
import { groupApp, isExtended } from '../../lib/http/app';
import { jsonArrayResponse } from '../../lib/http/json-stream';
import { paging } from '../../lib/http/params';
import { listAudits } from '../../lib/audits';

const app = groupApp().get('/v1/audits', async (c) =>
  jsonArrayResponse(await listAudits(c.var.ctx, {
    action: c.req.query('action'),
    start: c.req.query('start'),
    end: c.req.query('end'),
    ...paging(c),
  }, isExtended(c))));

export default app;
