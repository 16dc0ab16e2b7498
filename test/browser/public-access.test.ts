/**
 * Public Access Links in Central's web UI: create one on the form's Public Access tab, fill the form
 * through it as an anonymous visitor (ODK Web Forms at /f/<enketoId>?st=<token>), and revoke it.
 */
import { describe, expect, test } from 'vitest';
import { simpleSubmission, unique } from './api';
import { browserSuite, fillQuestion } from './ui';

const s = browserSuite();

async function publishedForm(label: string) {
  const project = await s.api.createProject(unique(label));
  await s.api.createForm(project.id, 'forms/simple.xml');
  return { project, form: `/v1/projects/${project.id}/forms/simple`, page: `/projects/${project.id}/forms/simple` };
}

interface PublicLink {
  id: number;
  displayName: string;
  once: boolean;
  token: string | null;
}

describe('Public Access', () => {
  test('create a link', async () => {
    const { form, page } = await publishedForm('Public link create');
    const ui = s.admin;
    await ui.goto(`${page}/public-links`);
    await ui.page.locator('#public-link-list .heading-with-button .btn-primary').click();
    const modal = ui.page.locator('#public-link-create');
    await modal.locator('input.form-control').first().fill('Household link');
    const created = ui.waitForApi('POST', /\/public-links$/);
    await modal.locator('button[type=submit]').click();
    expect((await created).status()).toBe(200);
    const links = await s.api.get<PublicLink[]>(`${form}/public-links`);
    expect(links).toMatchObject([{ displayName: 'Household link', once: false, token: expect.any(String) }]);
    const { enketoId } = await s.api.get<{ enketoId: string }>(form);
    expect(enketoId).toEqual(expect.any(String));
    const url = `${s.server.base}/f/${encodeURIComponent(enketoId)}?st=${links[0]!.token}`;
    await expect.poll(async () => (await ui.page.locator('#public-link-table td.access-link').first().textContent())?.trim()).toBe(url);
    await ui.clean();
  });

  test('fill the form through it as an anonymous visitor', async () => {
    const { form } = await publishedForm('Public link fill');
    const link = await s.api.post<PublicLink>(`${form}/public-links`, { displayName: 'Open link', once: false });
    const { enketoId } = await s.api.get<{ enketoId: string }>(form);
    const visitor = await s.newUser(); // no login
    await visitor.page.goto(`/f/${encodeURIComponent(enketoId)}?st=${link.token}`);
    await fillQuestion(visitor.page, 'What is your name?', 'Visitor');
    await fillQuestion(visitor.page, 'What is your age?', '23');
    const sent = visitor.waitForApi('POST', /^\/v1\/projects\/\d+\/forms\/simple\/submissions$/);
    await visitor.page.locator('.form-footer button').last().click();
    expect((await sent).status()).toBe(200);
    const subs = await s.api.get<Array<{ instanceId: string; submitterId: number }>>(`${form}/submissions`);
    expect(subs).toHaveLength(1);
    expect(subs[0]!.submitterId).toBe(link.id);
    const xml = (await s.api.request('GET', `${form}/submissions/${encodeURIComponent(subs[0]!.instanceId)}.xml`)).text;
    expect(xml).toContain('<name>Visitor</name>');
    expect(await visitor.page.getByText('Your data was not submitted').count()).toBe(0); // Web Forms' error dialog
    await visitor.clean();
  });

  test('revoke it', async () => {
    const { form, page } = await publishedForm('Public link revoke');
    const link = await s.api.post<PublicLink>(`${form}/public-links`, { displayName: 'Soon revoked', once: false });
    const submitWithLink = (id: string) =>
      fetch(`${s.server.base}${form}/submissions?st=${link.token}`, { method: 'POST', headers: { 'Content-Type': 'application/xml' }, body: simpleSubmission(id, 'Late', 1) });
    expect((await submitWithLink('uuid:before-revoke')).status).toBe(200);
    const ui = s.admin;
    await ui.goto(`${page}/public-links`);
    const row = ui.page.locator('#public-link-table tr', { hasText: 'Soon revoked' }).first();
    await row.hover();
    await row.locator('.revoke-button').click();
    const revoked = ui.waitForApi('DELETE', /^\/v1\/sessions\//);
    await ui.page.locator('#public-link-revoke .btn-danger').click();
    expect((await revoked).status()).toBe(200);
    const links = await s.api.get<PublicLink[]>(`${form}/public-links`);
    expect(links.find((l) => l.id === link.id)?.token).toBeNull();
    expect([401, 403]).toContain((await submitWithLink('uuid:after-revoke')).status);
    await ui.settle();
    await ui.clean();
  });
});
