/**
 * Form pages in Central's web UI: upload, draft testing (in the browser with ODK Web Forms, and on a
 * device through the draft QR code), publish, versions, settings (state and Web Forms), delete and
 * restore. Each test starts from its own project set up through the API.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { FIXTURES, fixture, unique } from './api';
import { browserSuite, fillQuestion } from './ui';

const s = browserSuite();

/** simple.xml with a version, so that a second upload makes a new version. */
const simpleVersion = (version: string): string => fixture('forms/simple.xml').replace('<data id="simple">', `<data id="simple" version="${version}">`);

describe('Form', () => {
  test('upload', async () => {
    const project = await s.api.createProject(unique('Form upload'));
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/new-form`);
    const uploaded = ui.waitForApi('POST', new RegExp(`^/v1/projects/${project.id}/forms$`));
    await ui.page.locator('#form-upload input[type=file]').setInputFiles(fileURLToPath(new URL('forms/simple.xml', FIXTURES)));
    expect((await uploaded).status()).toBe(200);
    await ui.page.waitForURL(new RegExp(`/projects/${project.id}/forms/simple/draft$`));
    await ui.settle();
    expect(await s.api.get(`/v1/projects/${project.id}/forms/simple`)).toMatchObject({ xmlFormId: 'simple', name: 'Simple', publishedAt: null });
    expect(await s.api.get(`/v1/projects/${project.id}/forms/simple/draft`)).toMatchObject({ xmlFormId: 'simple' });
    await ui.clean();
  });

  test('draft: test in the browser (ODK Web Forms)', async () => {
    const project = await s.api.createProject(unique('Draft in browser'));
    await s.api.createForm(project.id, 'forms/simple.xml', { draft: true });
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/forms/simple/draft`);
    // A new form's draft offers the choice of form filler: ODK Web Forms (the default for new forms).
    const webForms = ui.page.locator('#form-edit-web-form input[type=radio]').first();
    if (!(await webForms.isChecked())) {
      const patched = ui.waitForApi('PATCH', new RegExp(`^/v1/projects/${project.id}/forms/simple$`));
      await webForms.check();
      expect((await patched).status()).toBe(200);
    }
    expect((await s.api.get(`/v1/projects/${project.id}/forms/simple`)).webformsEnabled).toBe(true);
    await ui.settle();

    const [tab] = await Promise.all([ui.context.waitForEvent('page'), ui.page.locator('#submission-list-test-in-browser').click()]);
    await tab.waitForURL(new RegExp(`/projects/${project.id}/forms/simple/draft/submissions/new`));
    await fillQuestion(tab, 'What is your name?', 'Draft tester');
    await fillQuestion(tab, 'What is your age?', '41');
    const sent = tab.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === `/v1/projects/${project.id}/forms/simple/draft/submissions`);
    await tab.locator('.form-footer button').last().click();
    expect((await sent).status()).toBe(200);
    const subs = await s.api.get<Array<{ instanceId: string }>>(`/v1/projects/${project.id}/forms/simple/draft/submissions`);
    expect(subs).toHaveLength(1);
    const xml = (await s.api.request('GET', `/v1/projects/${project.id}/forms/simple/draft/submissions/${encodeURIComponent(subs[0]!.instanceId)}.xml`)).text;
    expect(xml).toContain('<name>Draft tester</name>');
    expect(xml, xml).toContain('<age>41</age>');
    await tab.close();
    await ui.clean();
  });

  test('draft: test on a device (draft QR code)', async () => {
    const project = await s.api.createProject(unique('Draft on device'));
    await s.api.createForm(project.id, 'forms/simple.xml', { draft: true });
    const draft = await s.api.get<{ draftToken: string }>(`/v1/projects/${project.id}/forms/simple/draft`);
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/forms/simple/draft`);
    await ui.page.locator('#submission-list-test-on-device').click();
    await ui.page.locator('.form-draft-qr-panel .collect-qr img').waitFor();
    const settings = (await ui.qrSettings()).at(-1)!;
    const url = `${s.server.base}/v1/test/${draft.draftToken}/projects/${project.id}/forms/simple/draft`;
    expect(settings.general.server_url).toBe(url);
    // What Collect then does with it: the form list, and a test submission.
    const formList = await fetch(`${url}/formList`, { headers: { 'X-OpenRosa-Version': '1.0' } });
    expect(formList.status).toBe(200);
    expect(await formList.text()).toContain('<formID>simple</formID>');
    const body = new FormData();
    body.append('xml_submission_file', new Blob(['<data id="simple"><meta><instanceID>uuid:device-1</instanceID></meta><name>Device</name><age>7</age></data>'], { type: 'text/xml' }), 'submission.xml');
    const sub = await fetch(`${url}/submission`, { method: 'POST', headers: { 'X-OpenRosa-Version': '1.0' }, body });
    expect(sub.status).toBe(201);
    expect((await s.api.get<unknown[]>(`/v1/projects/${project.id}/forms/simple/draft/submissions`))).toHaveLength(1);
    await ui.clean();
  });

  test('publish', async () => {
    const project = await s.api.createProject(unique('Publish'));
    await s.api.createForm(project.id, 'forms/simple.xml', { draft: true });
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/forms/simple/draft`);
    await ui.page.locator('#form-edit-publish-button').click();
    const modal = ui.page.locator('#form-draft-publish');
    const version = modal.locator('input.form-control');
    if (await version.count()) await version.fill('v1'); // asked for when the draft's version is empty or taken
    await modal.locator('textarea').fill('First release');
    const published = ui.waitForApi('POST', new RegExp(`^/v1/projects/${project.id}/forms/simple/draft/publish$`));
    await modal.locator('button[type=submit]').click();
    expect((await published).status()).toBe(200);
    await ui.settle();
    const form = await s.api.get(`/v1/projects/${project.id}/forms/simple`);
    expect(form.publishedAt).toEqual(expect.any(String));
    const versions = await s.api.get<Array<{ publishNotes?: string }>>(`/v1/projects/${project.id}/forms/simple/versions`);
    expect(versions).toHaveLength(1);
    expect((await s.api.request('GET', `/v1/projects/${project.id}/forms/simple/draft`)).status).toBe(404);
    await ui.clean();
  });

  test('versions: list and view XML', async () => {
    const project = await s.api.createProject(unique('Versions'));
    await s.api.createForm(project.id, simpleVersion('1'));
    await s.api.post(`/v1/projects/${project.id}/forms/simple/draft`, simpleVersion('2'));
    await s.api.post(`/v1/projects/${project.id}/forms/simple/draft/publish`);
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/forms/simple/versions`);
    const rows = ui.page.locator('#form-version-table .form-version-row');
    await rows.first().waitFor();
    const api = await s.api.get<Array<{ version: string }>>(`/v1/projects/${project.id}/forms/simple/versions`);
    expect(api.map((v) => v.version)).toEqual(['2', '1']);
    expect((await rows.locator('td.version').allInnerTexts()).map((t) => t.split('\n')[0]!.trim())).toEqual(['2', '1']);
    await rows.nth(1).locator('.form-version-def-dropdown button').click();
    const xml = ui.waitForApi('GET', new RegExp(`^/v1/projects/${project.id}/forms/simple/versions/1\\.xml$`));
    await rows.nth(1).locator('.form-version-def-dropdown a', { hasText: 'View XML' }).click();
    expect((await xml).status()).toBe(200);
    await expect.poll(() => ui.page.locator('.modal:visible pre, .modal:visible code').first().innerText()).toContain('version="1"');
    await ui.clean();
  });

  test('settings: form state (through Form Access) shows on the Settings tab', async () => {
    const project = await s.api.createProject(unique('Form state'));
    await s.api.createForm(project.id, 'forms/simple.xml');
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/forms/simple/settings`);
    await ui.page.locator('#form-settings a', { hasText: 'Form Access' }).first().click();
    await ui.page.waitForURL(new RegExp(`/projects/${project.id}/form-access$`));
    await ui.settle();
    await ui.page.locator('#project-form-access-table select').selectOption('closed');
    const saved = ui.waitForApi('PUT', new RegExp(`^/v1/projects/${project.id}$`));
    await ui.page.locator('#project-form-access-save-button').click();
    expect((await saved).status()).toBe(200);
    expect((await s.api.get(`/v1/projects/${project.id}/forms/simple`)).state).toBe('closed');
    await ui.goto(`/projects/${project.id}/forms/simple/settings`);
    await expect.poll(() => ui.page.locator('#form-head .nav-tabs li', { hasText: 'Settings' }).innerText()).toContain('Closed');
    await ui.clean();
  });

  test('settings: Web Forms switched on and off', async () => {
    const project = await s.api.createProject(unique('Web Forms setting'));
    await s.api.createForm(project.id, 'forms/simple.xml');
    const before = (await s.api.get(`/v1/projects/${project.id}/forms/simple`)).webformsEnabled as boolean;
    const ui = s.admin;
    for (const target of [!before, before]) {
      await ui.goto(`/projects/${project.id}/forms/simple/settings`);
      await ui.page.locator('#web-form-settings-form input[type=radio]').nth(target ? 0 : 1).check(); // ODK Web Forms, Enketo
      const patched = ui.waitForApi('PATCH', new RegExp(`^/v1/projects/${project.id}/forms/simple$`));
      await ui.page.locator('.modal:visible .modal-actions .btn-primary').click();
      expect((await patched).status()).toBe(200);
      expect((await s.api.get(`/v1/projects/${project.id}/forms/simple`)).webformsEnabled).toBe(target);
    }
    await ui.clean();
  });

  test('delete', async () => {
    const project = await s.api.createProject(unique('Form delete'));
    await s.api.createForm(project.id, 'forms/simple.xml');
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/forms/simple/settings`);
    await ui.page.locator('#form-settings .panel-simple-danger .btn-danger').click();
    const deleted = ui.waitForApi('DELETE', new RegExp(`^/v1/projects/${project.id}/forms/simple$`));
    await ui.page.locator('#form-delete .btn-danger').click();
    expect((await deleted).status()).toBe(200);
    await ui.page.waitForURL(new RegExp(`/projects/${project.id}$`));
    expect((await s.api.request('GET', `/v1/projects/${project.id}/forms/simple`)).status).toBe(404);
    const trash = await s.api.get<Array<{ xmlFormId: string }>>(`/v1/projects/${project.id}/forms?deleted=true`);
    expect(trash.map((f) => f.xmlFormId)).toEqual(['simple']);
    await ui.settle();
    await ui.clean();
  });

  test('restore from the Trash', async () => {
    const project = await s.api.createProject(unique('Form restore'));
    await s.api.createForm(project.id, 'forms/simple.xml');
    await s.api.ok('DELETE', `/v1/projects/${project.id}/forms/simple`);
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}`);
    const trash = ui.page.locator('#form-trash-list');
    await trash.waitFor();
    if (!(await trash.locator('details').evaluate((d) => (d as HTMLDetailsElement).open))) await trash.locator('summary').click();
    await trash.locator('.form-trash-row-restore-button').click();
    const restored = ui.waitForApi('POST', new RegExp(`^/v1/projects/${project.id}/forms/\\d+/restore$`));
    await ui.page.locator('#form-restore .btn-danger').click();
    expect((await restored).status()).toBe(200);
    expect(await s.api.get(`/v1/projects/${project.id}/forms/simple`)).toMatchObject({ xmlFormId: 'simple' });
    await ui.settle();
    await ui.clean();
  });
});
