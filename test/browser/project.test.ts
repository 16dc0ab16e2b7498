/**
 * Project pages in Central's web UI: create, rename, archive, Form Access, project roles, App Users
 * (create, list, QR code, revoke) and Custom Properties. Each test sets up through the API what it
 * starts from, acts in the browser, and checks the effect through the API.
 */
import { describe, expect, test } from 'vitest';
import { unique } from './api';
import { browserSuite } from './ui';

const s = browserSuite();

async function roleId(system: string): Promise<number> {
  const roles = await s.api.get<Array<{ id: number; system: string }>>('/v1/roles');
  return roles.find((r) => r.system === system)!.id;
}

async function assignments(projectId: number): Promise<Array<{ actorId: number; roleId: number }>> {
  return s.api.get(`/v1/projects/${projectId}/assignments`);
}

describe('Project', () => {
  test('create', async () => {
    const ui = s.admin;
    const name = unique('Created in the UI');
    await ui.goto('/');
    await ui.page.locator('#project-list-new-button').click();
    const modal = ui.page.locator('#project-new');
    await modal.locator('input').fill(name);
    await modal.locator('button[type=submit]').click();
    await ui.page.waitForURL(/\/projects\/\d+$/);
    const id = Number(new URL(ui.page.url()).pathname.split('/').pop());
    expect(await s.api.get(`/v1/projects/${id}`)).toMatchObject({ id, name, archived: null });
    await ui.settle();
    await ui.clean();
  });

  test('rename', async () => {
    const project = await s.api.createProject(unique('Before rename'));
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/settings`);
    const name = unique('After rename');
    const form = ui.page.locator('#project-edit form');
    await form.locator('input').first().fill(name);
    await form.locator('textarea').fill('Described in the browser.');
    const saved = ui.waitForApi('PATCH', new RegExp(`^/v1/projects/${project.id}$`));
    await form.locator('button[type=submit]').click();
    expect((await saved).status()).toBe(200);
    expect(await s.api.get(`/v1/projects/${project.id}`)).toMatchObject({ name, description: 'Described in the browser.' });
    await ui.clean();
  });

  test('archive', async () => {
    const project = await s.api.createProject(unique('To archive'));
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/settings`);
    await ui.page.locator('#project-settings-archive-button').click();
    const saved = ui.waitForApi('PATCH', new RegExp(`^/v1/projects/${project.id}$`));
    await ui.page.locator('#project-archive .btn-danger').click();
    expect((await saved).status()).toBe(200);
    expect((await s.api.get(`/v1/projects/${project.id}`)).archived).toBe(true);
    await ui.settle();
    await ui.clean();
  });

  test('Form Access: form state and App User access saved', async () => {
    const project = await s.api.createProject(unique('Form access'));
    await s.api.createForm(project.id, 'forms/simple.xml');
    const appUser = await s.api.createAppUser(project.id, 'Tablet A');
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/form-access`);
    const table = ui.page.locator('#project-form-access-table');
    await table.locator('select').selectOption('closing');
    await table.locator('input[type=checkbox]').check();
    const saved = ui.waitForApi('PUT', new RegExp(`^/v1/projects/${project.id}$`));
    await ui.page.locator('#project-form-access-save-button').click();
    expect((await saved).status()).toBe(200);
    await ui.settle();
    expect((await s.api.get(`/v1/projects/${project.id}/forms/simple`)).state).toBe('closing');
    const access = await s.api.get<Array<{ id: number }>>(`/v1/projects/${project.id}/forms/simple/assignments/app-user`);
    expect(access.map((a) => a.id)).toEqual([appUser.id]);
    await ui.clean();
  });

  /** A web user with a display name, and the project's Project Roles tab searched for them. */
  async function searchUser(projectId: number, label: string) {
    const email = `${label.toLowerCase().replace(/\W+/g, '-')}-${Date.now()}@fieldbase.test`;
    const user = await s.api.createUser(email, undefined, unique(label));
    const ui = s.admin;
    await ui.goto(`/projects/${projectId}/users`);
    return { user, ui, row: ui.page.locator('#project-user-list tbody tr').filter({ hasText: user.displayName }) };
  }

  test('roles: assign', async () => {
    const project = await s.api.createProject(unique('Roles assign'));
    const { user, ui, row } = await searchUser(project.id, 'Role Assign');
    const search = ui.page.locator('#project-user-list-search-form input');
    await search.fill(user.email);
    await search.press('Enter');
    const saved = ui.waitForApi('POST', new RegExp(`^/v1/projects/${project.id}/assignments/\\d+/${user.id}$`));
    await row.locator('select').selectOption({ label: 'Project Manager' });
    expect((await saved).status()).toBe(200);
    expect(await assignments(project.id)).toContainEqual({ actorId: user.id, roleId: await roleId('manager') });
    await ui.clean();
  });

  test('roles: change', async () => {
    const project = await s.api.createProject(unique('Roles change'));
    const { user, ui } = await searchUser(project.id, 'Role Change');
    await s.api.post(`/v1/projects/${project.id}/assignments/viewer/${user.id}`);
    await ui.goto(`/projects/${project.id}/users`);
    const row = ui.page.locator('#project-user-list tbody tr').filter({ hasText: user.displayName });
    const added = ui.waitForApi('POST', new RegExp(`^/v1/projects/${project.id}/assignments/\\d+/${user.id}$`));
    await row.locator('select').selectOption({ label: 'Data Collector' });
    expect((await added).status()).toBe(200);
    await ui.settle();
    const mine = (await assignments(project.id)).filter((a) => a.actorId === user.id);
    expect(mine).toEqual([{ actorId: user.id, roleId: await roleId('formfill') }]);
    await ui.clean();
  });

  test('roles: remove', async () => {
    const project = await s.api.createProject(unique('Roles remove'));
    const { user, ui } = await searchUser(project.id, 'Role Remove');
    await s.api.post(`/v1/projects/${project.id}/assignments/manager/${user.id}`);
    await ui.goto(`/projects/${project.id}/users`);
    const row = ui.page.locator('#project-user-list tbody tr').filter({ hasText: user.displayName });
    const removed = ui.waitForApi('DELETE', new RegExp(`^/v1/projects/${project.id}/assignments/\\d+/${user.id}$`));
    await row.locator('select').selectOption({ value: '' });
    expect((await removed).status()).toBe(200);
    expect((await assignments(project.id)).filter((a) => a.actorId === user.id)).toEqual([]);
    await ui.clean();
  });

  test('App Users: create', async () => {
    const project = await s.api.createProject(unique('App users create'));
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/app-users`);
    await ui.page.locator('#field-key-list-create-button').click();
    const modal = ui.page.locator('#field-key-new');
    await modal.locator('input').first().fill('Tablet created');
    const created = ui.waitForApi('POST', new RegExp(`^/v1/projects/${project.id}/app-users$`));
    await modal.locator('button[type=submit]').click();
    expect((await created).status()).toBe(200);
    await modal.locator('#field-key-new-success').waitFor();
    await modal.locator('.modal-actions .btn-primary').click();
    const list = await s.api.get<Array<{ displayName: string; token: string }>>(`/v1/projects/${project.id}/app-users`);
    expect(list.map((u) => u.displayName)).toEqual(['Tablet created']);
    await ui.page.locator('#field-key-list-table .field-key-row').filter({ hasText: 'Tablet created' }).waitFor();
    await ui.clean();
  });

  test('App Users: list', async () => {
    const project = await s.api.createProject(unique('App users list'));
    for (const name of ['Tablet 1', 'Tablet 2', 'Tablet 3']) await s.api.createAppUser(project.id, name);
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/app-users`);
    const rows = ui.page.locator('#field-key-list-table .field-key-row');
    await rows.first().waitFor();
    const names = (await rows.locator('.display-name').allInnerTexts()).map((t) => t.trim()).sort();
    const api = await s.api.get<Array<{ displayName: string }>>(`/v1/projects/${project.id}/app-users`);
    expect(names).toEqual(api.map((u) => u.displayName).sort());
    expect(names).toEqual(['Tablet 1', 'Tablet 2', 'Tablet 3']);
    await ui.clean();
  });

  test('App Users: QR code carries a working server URL', async () => {
    const project = await s.api.createProject(unique('App users QR'));
    await s.api.createForm(project.id, 'forms/simple.xml');
    const appUser = await s.api.createAppUser(project.id, 'Tablet QR');
    await s.api.post(`/v1/projects/${project.id}/forms/simple/assignments/app-user/${appUser.id}`);
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/app-users`);
    await ui.page.locator('.field-key-row .field-key-row-popover-link').first().click();
    await ui.page.locator('.field-key-qr-panel .collect-qr img').waitFor();
    const settings = (await ui.qrSettings()).at(-1)!;
    expect(settings.general.server_url).toBe(`${s.server.base}/v1/key/${appUser.token}/projects/${project.id}`);
    expect(settings.project.name).toBe(project.name);
    const formList = await fetch(`${settings.general.server_url}/formList`, { headers: { 'X-OpenRosa-Version': '1.0' } });
    expect(formList.status).toBe(200);
    expect(await formList.text()).toContain('<formID>simple</formID>');
    await ui.clean();
  });

  test('App Users: revoke', async () => {
    const project = await s.api.createProject(unique('App users revoke'));
    const appUser = await s.api.createAppUser(project.id, 'Tablet revoked');
    const keyUrl = `${s.server.base}/v1/key/${appUser.token}/projects/${project.id}/formList`;
    expect((await fetch(keyUrl, { headers: { 'X-OpenRosa-Version': '1.0' } })).status).toBe(200);
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/app-users`);
    const row = ui.page.locator('.field-key-row').first();
    await row.hover(); // the action buttons show on hover
    await row.locator('.revoke-button').click();
    const revoked = ui.waitForApi('DELETE', /^\/v1\/sessions\//);
    await ui.page.locator('#field-key-revoke .btn-danger').click();
    expect((await revoked).status()).toBe(200);
    const refused = await fetch(keyUrl, { headers: { 'X-OpenRosa-Version': '1.0' } });
    expect([401, 403]).toContain(refused.status);
    const list = await s.api.get<Array<{ id: number; token: string | null }>>(`/v1/projects/${project.id}/app-users`);
    expect(list.find((u) => u.id === appUser.id)?.token).toBeNull();
    await ui.settle();
    await ui.clean();
  });

  test('Custom Properties: create a property, set it on an App User', async () => {
    const project = await s.api.createProject(unique('Custom properties'));
    const appUser = await s.api.createAppUser(project.id, 'Tablet props');
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/custom-properties`);
    await ui.page.locator('#custom-properties-list-new-button').click();
    const modal = ui.page.locator('#custom-properties-new');
    await modal.locator('input').fill('region');
    const created = ui.waitForApi('POST', new RegExp(`^/v1/projects/${project.id}/actor-properties$`));
    await modal.locator('button[type=submit]').click();
    expect((await created).status()).toBe(200);
    await ui.page.locator('#custom-properties-table td', { hasText: 'region' }).waitFor();
    const props = await s.api.get<Array<{ name: string }>>(`/v1/projects/${project.id}/actor-properties`);
    expect(props.map((p) => p.name)).toEqual(['region']);

    await ui.goto(`/projects/${project.id}/app-users`);
    const row = ui.page.locator('.field-key-row').first();
    await row.hover();
    await row.locator('.edit-button').click();
    const edit = ui.page.locator('#field-key-edit');
    await edit.locator('textarea').first().fill('North');
    const saved = ui.waitForApi('PATCH', new RegExp(`^/v1/projects/${project.id}/app-users/${appUser.id}$`));
    await edit.locator('.modal-actions .btn-primary').click();
    expect((await saved).status()).toBe(200);
    const list = await s.api.get<Array<{ id: number; properties?: Record<string, string> }>>(`/v1/projects/${project.id}/app-users`, { 'X-Extended-Metadata': 'true' });
    expect(list.find((u) => u.id === appUser.id)?.properties).toEqual({ region: 'North' });
    await ui.settle();
    await ui.clean();
  });
});
