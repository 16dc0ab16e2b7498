/**
 * A purge deletes the blobs no row refers to any more; every table that refers to blobs must keep
 * its own (issue 18's blob work): the server's logo and hero image (config) too, or the purge
 * either fails on the foreign key or deletes the bytes of a live setting.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { systemCtx } from '../../../lib/context';
import { purgeForms } from '../../../lib/forms';
import { purgeSubmissions } from '../../../lib/submissions/manage';
import { harness } from '../../helpers/harness';

const FORM = `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml">
  <h:head><h:title>Doomed</h:title><model><instance><data id="doomed"><name/><meta><instanceID/></meta></data></instance>
  <bind nodeset="/data/name" type="string"/></model></h:head><h:body/></h:html>`;

describe('purge and the blobs other tables refer to', () => {
  test('a purge keeps the logo and hero image (config) and their bytes', async () => {
    const h = await harness();
    const logo = new Uint8Array(randomBytes(512));
    const hero = new Uint8Array(randomBytes(512));
    for (const [key, bytes] of [['logo', logo], ['hero-image', hero]] as const) {
      const res = await h.post(`/v1/config/${key}`, { as: 'alice', body: bytes, headers: { 'Content-Type': 'image/png' } });
      expect(res.status, key).toBe(200);
    }
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.post(`${P}/forms?publish=true`, { as: 'alice', body: FORM, headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    expect((await h.delete(`${P}/forms/doomed`, { as: 'alice' })).status).toBe(200);

    expect(await purgeForms(systemCtx(h.deps), { force: true })).toHaveLength(1);
    await purgeSubmissions(systemCtx(h.deps), { force: true });

    for (const [key, bytes] of [['logo', logo], ['hero-image', hero]] as const) {
      const res = await h.get(`/v1/config/${key}`, { as: 'alice' });
      expect(res.status, key).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(bytes)), key).toBe(true);
    }
  });
});
