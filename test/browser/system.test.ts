/**
 * System pages in Central's web UI: the server audit log, the settings pages (Customization: login
 * page title, description and logo; Usage Data), and logging out (the session ends on the server).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { unique } from './api';
import { browserSuite } from './ui';

const s = browserSuite();

describe('System', () => {
  test('audit log', async () => {
    const project = await s.api.createProject(unique('Audited'));
    await s.api.ok('PATCH', `/v1/projects/${project.id}`, { name: `${project.name} renamed` });
    const ui = s.admin;
    const audits = ui.waitForApi('GET', /^\/v1\/audits$/);
    await ui.goto('/system/audits');
    const res = await audits;
    expect(res.status()).toBe(200);
    const shown = (await res.json()) as Array<{ action: string }>;
    const rows = ui.page.locator('#audit-table .audit-row');
    await expect.poll(() => rows.count()).toBe(shown.length);
    const update = rows.filter({ hasText: `${project.name} renamed` }).filter({ hasText: 'Update' });
    await expect.poll(() => update.count()).toBeGreaterThan(0);
    const api = await s.api.get<Array<{ action: string; details: Record<string, unknown> | null }>>('/v1/audits?action=project.update');
    expect(api.some((a) => a.details?.data && (a.details.data as { name?: string }).name === `${project.name} renamed`)).toBe(true);
    await ui.clean();
  });

  test('settings: Customization of the login page', async () => {
    const ui = s.admin;
    await ui.goto('/system/config');
    const title = unique('Fieldbase survey server');
    const input = ui.page.locator('#config-login-edit-title');
    await input.fill(title);
    const saved = ui.waitForApi('POST', /^\/v1\/config\/login-appearance$/);
    await input.blur();
    expect((await saved).status()).toBe(200);
    expect(await s.api.get('/v1/config/login-appearance')).toMatchObject({ value: { title } });
    expect(await s.api.get('/v1/config/public')).toMatchObject({ 'login-appearance': { value: { title } } });
    // What an anonymous visitor's login page then shows.
    const visitor = await s.newUser();
    await visitor.goto('/');
    await expect.poll(() => visitor.page.locator('#account-login h1').innerText()).toBe(title);

    // The logo: an image file chosen on the same page.
    const png = new URL('../../../shared/central-frontend/dist/favicon-32x32.png', import.meta.url);
    const uploaded = ui.waitForApi('POST', /^\/v1\/config\/logo$/);
    await ui.page.locator('#config-login-edit .config-login-file-select input[type=file]').first().setInputFiles(fileURLToPath(png));
    expect((await uploaded).status()).toBe(200);
    expect(await s.api.get('/v1/config/public')).toMatchObject({ logo: { key: 'logo', blobExists: true } });
    const logo = await fetch(`${s.server.base}/v1/config/public/logo`);
    expect(logo.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await logo.arrayBuffer()).equals(readFileSync(png))).toBe(true);
    await ui.clean();
    // Back to the default for the other tests.
    await s.api.ok('DELETE', '/v1/config/login-appearance');
    await s.api.ok('DELETE', '/v1/config/logo');
  });

  test('settings: Usage Data (analytics) saved', async () => {
    const ui = s.admin;
    await ui.goto('/system/analytics');
    const form = ui.page.locator('#analytics-form');
    await form.locator('input[type=radio]').nth(1).check(); // "No, I do not want to share"
    const saved = ui.waitForApi('POST', /^\/v1\/config\/analytics$/);
    await form.locator('button[type=submit]').click();
    expect((await saved).status()).toBe(200);
    expect(await s.api.get('/v1/config/analytics')).toMatchObject({ key: 'analytics', value: { enabled: false } });
    await ui.clean();
    await s.api.ok('DELETE', '/v1/config/analytics');
  });

  test('logout ends the session', async () => {
    const email = `logout-${Date.now()}@fieldbase.test`;
    const password = 'logout-password';
    await s.api.createUser(email, password, 'Logs Out');
    const ui = await s.newUser();
    await ui.login(email, password);
    const cookie = (await ui.context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const me = () => fetch(`${s.server.base}/v1/users/current`, { headers: { Cookie: cookie } });
    expect((await me()).status).toBe(200);

    await ui.page.locator('#navbar-actions > a').click();
    const loggedOut = ui.waitForApi('DELETE', /^\/v1\/sessions\/current$/);
    await ui.page.locator('#navbar-actions-log-out').click();
    expect((await loggedOut).status()).toBe(200);
    await ui.page.locator('#account-login').waitFor();
    expect((await me()).status).toBe(401);
    await ui.clean();
  });
});
