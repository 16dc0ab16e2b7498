/**
 * Who may read a form (Central's canReadForm): a form never published only with form.update
 * (managers, admins), not viewers or data collectors; once published, viewers read it.
 */
import { describe, expect, test } from 'vitest';
import { harness } from '../../helpers/harness';
import { userWithRole } from '../../helpers/roles';

const FORM = `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml">
  <h:head><h:title>Draft only</h:title><model><instance><data id="draftonly"><meta><instanceID/></meta><q/></data></instance></model></h:head><h:body/></h:html>`;

describe('reading a never-published form', () => {
  test('viewer and data collector get 403.1 on F and F/versions; the manager 200; after publishing the viewer reads it', async () => {
    const h = await harness();
    expect((await h.post(`/v1/projects/${h.projectId}/forms`, { as: 'bob', body: FORM, headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    const viewer = await userWithRole(h, 'viewer', 'viewer@getodk.org');
    const collector = await userWithRole(h, 'formfill', 'collector@getodk.org');
    const F = `/v1/projects/${h.projectId}/forms/draftonly`;
    for (const path of [F, `${F}/versions`]) {
      expect((await h.get(path, { as: viewer })).status, path).toBe(403);
      expect((await h.get(path, { as: collector })).status, path).toBe(403);
      expect((await h.get(path, { as: 'bob' })).status, path).toBe(200);
    }
    expect((await h.post(`${F}/draft/publish`, { as: 'bob' })).status).toBe(200);
    for (const path of [F, `${F}.xml`, `${F}/versions`]) expect((await h.get(path, { as: viewer })).status, path).toBe(200);
  });
});
