/**
 * Home page in Central's web UI: the project list with each form's submission counts, and the
 * "What's new" modal whose dismissal is saved as a user preference.
 */
import { describe, expect, test } from 'vitest';
import { Api, simpleSubmission, unique } from './api';
import { browserSuite } from './ui';

const s = browserSuite();

describe('Home', () => {
  test('project list shows each form with its submission counts', async () => {
    const project = await s.api.createProject(unique('Home counts'));
    await s.api.createForm(project.id, 'forms/simple.xml');
    for (const [i, name] of ['Ana', 'Ben', 'Cy'].entries()) await s.api.submit(project.id, 'simple', simpleSubmission(`home-${project.id}-${i}`, name, 30 + i));
    await s.api.ok('PATCH', `/v1/projects/${project.id}/forms/simple/submissions/home-${project.id}-0`, { reviewState: 'hasIssues' });

    const listed = (await s.api.get<Array<{ id: number; formList: Array<Record<string, unknown>> }>>('/v1/projects?forms=true'))
      .find((p) => p.id === project.id)!;
    expect(listed.formList[0]).toMatchObject({ xmlFormId: 'simple', submissions: 3, reviewStates: { received: 2, hasIssues: 1, edited: 0 } });
    expect(listed.formList[0]!.lastSubmission).toEqual(expect.any(String));

    const ui = s.admin;
    await ui.goto('/');
    const block = ui.page.locator('.project-home-block').filter({ has: ui.page.locator('.title a', { hasText: project.name }) });
    const row = block.locator('.project-form-row').filter({ hasText: 'Simple' });
    await expect.poll(() => row.locator('.total-submissions').innerText()).toContain('3');
    const reviewCells = await row.locator('td.review-state').allInnerTexts();
    expect(reviewCells.map((t) => t.trim())).toEqual(['2', '1', '0']); // received, has issues, edited
    expect(await row.locator('.last-submission').innerText()).not.toMatch(/none/i);
    await ui.clean();
    expect(ui.errors.filter((e) => e.startsWith('pageerror')), await ui.report()).toEqual([]);
  });

  test('"What\'s new" dismissal persists across logins', async () => {
    const email = `whatsnew-${Date.now()}@fieldbase.test`;
    const password = 'whats-new-password';
    const user = await s.api.createUser(email, password);
    await s.api.ok('POST', `/v1/assignments/admin/${user.id}`);

    const ui = await s.newUser();
    await ui.login(email, password);
    const modal = ui.page.locator('#whats-new-modal');
    await modal.waitFor({ state: 'visible' });
    const saved = ui.waitForApi('PUT', /^\/v1\/user-preferences\/site\/whatsNewDismissed$/);
    await modal.locator('.modal-actions .btn-primary').click();
    expect((await saved).status()).toBe(200);
    await modal.waitFor({ state: 'hidden' });

    const api = await Api.login(s.server.base, email, password);
    const current = await api.get<{ preferences: { site: Record<string, unknown> } }>('/v1/users/current', { 'X-Extended-Metadata': 'true' });
    expect(current.preferences.site.whatsNewDismissed).toBe('2026.2');

    // A new login (a fresh browser) does not show it again.
    const again = await s.newUser();
    await again.login(email, password);
    await again.page.locator('#project-list').waitFor();
    await again.settle();
    expect(await again.page.locator('#whats-new-modal').isVisible()).toBe(false);
    await ui.clean();
    await again.clean();
  });
});
