/**
 * Web users in Central's web UI (the administrator's Users page): create, edit the display name,
 * reset the password, retire; and a user changing their own password on their account page.
 */
import { describe, expect, test } from 'vitest';
import { Api, unique } from './api';
import { browserSuite } from './ui';

const s = browserSuite();

const email = (label: string) => `${label}-${Date.now()}-${Math.floor(Math.random() * 1e6)}@fieldbase.test`;

async function loginStatus(address: string, password: string): Promise<number> {
  const res = await fetch(`${s.server.base}/v1/sessions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email: address, password }) });
  return res.status;
}

/** Opens the actions menu of the user's row on the Users page. */
async function rowMenu(address: string) {
  const ui = s.admin;
  await ui.goto('/users');
  const row = ui.page.locator('#user-list-table .user-row', { hasText: address });
  await row.locator('.dropdown-toggle').click();
  return row;
}

describe('Users', () => {
  test('create', async () => {
    const ui = s.admin;
    const address = email('created');
    const name = unique('Created User');
    await ui.goto('/users');
    await ui.page.locator('#user-list-new-button').click();
    const modal = ui.page.locator('#user-new');
    await modal.locator('input[type=email]').fill(address);
    await modal.locator('input[type=text]').fill(name);
    const created = ui.waitForApi('POST', /^\/v1\/users$/);
    await modal.locator('button[type=submit]').click();
    expect((await created).status()).toBe(200);
    await ui.page.locator('#user-list-table .user-row', { hasText: address }).waitFor();
    const users = await s.api.get<Array<{ email: string; displayName: string }>>('/v1/users');
    expect(users.find((u) => u.email === address)).toMatchObject({ email: address, displayName: name });
    await ui.settle();
    await ui.clean();
  });

  test('edit display name', async () => {
    const user = await s.api.createUser(email('rename'), undefined, 'Old Name');
    const ui = s.admin;
    await ui.goto(`/users/${user.id}/edit`);
    const form = ui.page.locator('#user-edit-basic-details form');
    await form.locator('input[type=text]').fill('New Name');
    const saved = ui.waitForApi('PATCH', new RegExp(`^/v1/users/${user.id}$`));
    await form.locator('button[type=submit]').click();
    expect((await saved).status()).toBe(200);
    expect((await s.api.get(`/v1/users/${user.id}`)).displayName).toBe('New Name');
    await ui.clean();
  });

  test('reset password', async () => {
    const address = email('reset');
    const password = 'reset-me-password';
    await s.api.createUser(address, password, 'Reset Me');
    expect(await loginStatus(address, password)).toBe(200);
    const row = await rowMenu(address);
    await row.locator('a.reset-password').click();
    const reset = s.admin.waitForApi('POST', /^\/v1\/users\/reset\/initiate$/);
    await s.admin.page.locator('#user-reset-password .modal-actions .btn-primary').click();
    expect((await reset).status()).toBe(200);
    expect((await reset).url()).toContain('invalidate=true');
    expect(await loginStatus(address, password)).toBe(401); // the old password is invalidated
    await s.admin.settle();
    await s.admin.clean();
  });

  test('retire', async () => {
    const address = email('retire');
    const password = 'retire-me-password';
    const user = await s.api.createUser(address, password, 'Retire Me');
    const row = await rowMenu(address);
    await row.locator('a.retire-user').click();
    const retired = s.admin.waitForApi('DELETE', new RegExp(`^/v1/users/${user.id}$`));
    await s.admin.page.locator('#user-retire .btn-danger').click();
    expect((await retired).status()).toBe(200);
    const users = await s.api.get<Array<{ id: number }>>('/v1/users');
    expect(users.map((u) => u.id)).not.toContain(user.id);
    expect(await loginStatus(address, password)).toBe(401);
    await s.admin.settle();
    await s.admin.clean();
  });

  test('own account: change password', async () => {
    const address = email('self');
    const oldPassword = 'my-first-password';
    const newPassword = 'my-second-password';
    await s.api.createUser(address, oldPassword, 'Self Service');
    const ui = await s.newUser();
    await ui.login(address, oldPassword);
    await ui.goto('/account/edit');
    const form = ui.page.locator('#user-edit-password form');
    await form.locator('input#user-edit-password-old-password, #user-edit-password-old-password input').fill(oldPassword);
    await form.locator('input#user-edit-password-new-password, #user-edit-password-new-password input').fill(newPassword);
    await form.locator('input#user-edit-password-confirm, #user-edit-password-confirm input').fill(newPassword);
    const saved = ui.waitForApi('PUT', /^\/v1\/users\/\d+\/password$/);
    await form.locator('button[type=submit]').click();
    expect((await saved).status()).toBe(200);
    expect(await loginStatus(address, oldPassword)).toBe(401);
    expect(await loginStatus(address, newPassword)).toBe(200);
    await Api.login(s.server.base, address, newPassword);
    await ui.settle();
    await ui.clean();
  });
});
