/**
 * Submission pages in Central's web UI: the table with a review-state filter, the map view
 * (GeoJSON), the download modal, the detail page, comments, review state, editing with ODK Web
 * Forms, delete and restore. Submissions are sent through the API beforehand.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { geoSubmission, simpleSubmission, unique } from './api';
import { browserSuite, fillQuestion } from './ui';

const s = browserSuite();

/** A project with the published `simple` form and these submissions (name, age); returns their instanceIds. */
async function withSubmissions(label: string, people: Array<[string, number]>) {
  const project = await s.api.createProject(unique(label));
  await s.api.createForm(project.id, 'forms/simple.xml');
  const ids: string[] = [];
  for (const [name, age] of people) {
    const id = `uuid:${randomUUID()}`;
    await s.api.submit(project.id, 'simple', simpleSubmission(id, name, age));
    ids.push(id);
  }
  const form = `/v1/projects/${project.id}/forms/simple`;
  const page = `/projects/${project.id}/forms/simple`;
  return { project, ids, form, page };
}

const enc = encodeURIComponent;

describe('Submissions', () => {
  test('table, filtered by review state', async () => {
    const { ids, form, page } = await withSubmissions('Table filter', [['Ana', 20], ['Ben', 30], ['Cy', 40]]);
    await s.api.ok('PATCH', `${form}/submissions/${enc(ids[1]!)}`, { reviewState: 'approved' });
    const ui = s.admin;
    await ui.goto(`${page}/submissions`);
    const rows = ui.page.locator('#submission-table .submission-metadata-row');
    await expect.poll(() => rows.count()).toBe(3);

    await ui.page.locator('#submission-filters-review-state .dropdown-trigger').click();
    const menu = ui.page.locator('#submission-filters-review-state');
    await menu.locator('.select-none').click();
    await menu.locator('.option-list label', { hasText: 'Approved' }).locator('input').check();
    const filtered = ui.page.waitForResponse((r) => r.url().includes('.svc/Submissions') && (new URL(r.url()).searchParams.get('$filter') ?? '').includes("__system/reviewState eq 'approved'"));
    await menu.locator('.action-bar .btn-primary').click();
    expect((await filtered).status()).toBe(200);
    await expect.poll(() => rows.count()).toBe(1);
    expect(await ui.page.locator('#submission-table').innerText()).toContain('Ben');
    const api = await s.api.get<{ value: Array<{ name: string }> }>(`${form}.svc/Submissions?$filter=${enc("__system/reviewState eq 'approved'")}`);
    expect(api.value.map((v) => v.name)).toEqual(['Ben']);
    expect(new URL(ui.page.url()).searchParams.getAll('reviewState')).toEqual(["'approved'"]);
    await ui.clean();
  });

  test('map view', async () => {
    const project = await s.api.createProject(unique('Map view'));
    await s.api.createForm(project.id, 'forms/geoTypes.xml');
    for (const [lat, lon] of [[-1.3, 36.8], [9.0, 38.7]] as const) await s.api.submit(project.id, 'geotest', geoSubmission(`uuid:${randomUUID()}`, lat, lon));
    const ui = s.admin;
    await ui.goto(`/projects/${project.id}/forms/geotest/submissions`);
    const geojson = ui.waitForApi('GET', new RegExp(`^/v1/projects/${project.id}/forms/geotest/submissions\\.geojson$`));
    await ui.page.locator('#submission-list-actions .radio-field label', { hasText: 'Map' }).click();
    const res = await geojson;
    expect(res.status()).toBe(200);
    const shown = (await res.json()) as { type: string; features: unknown[] };
    const api = await s.api.get<{ type: string; features: unknown[] }>(`/v1/projects/${project.id}/forms/geotest/submissions.geojson`);
    expect(shown.type).toBe('FeatureCollection');
    expect(api.features).toHaveLength(2);
    expect(shown.features).toHaveLength(2);
    await ui.page.locator('#map-view canvas').first().waitFor();
    expect(new URL(ui.page.url()).searchParams.get('map')).toBe('true');
    await ui.settle();
    await ui.clean();
  });

  test('download modal: CSV of the submissions', async () => {
    const { form, page } = await withSubmissions('Download', [['Ana', 20], ['Ben', 30]]);
    const ui = s.admin;
    await ui.goto(`${page}/submissions`);
    await ui.page.locator('#submission-download-button > button').click();
    const modal = ui.page.locator('.modal:visible', { has: ui.page.locator('#submission-download-actions') });
    await modal.waitFor();
    const [download] = await Promise.all([ui.page.waitForEvent('download'), modal.locator('#submission-download-actions a', { hasText: '.csv' }).first().click()]);
    const csv = readFileSync((await download.path())!, 'utf8');
    const api = (await s.api.request('GET', `${form}/submissions.csv`)).text;
    const lines = csv.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain('name');
    expect(csv.split('\n').slice(1).sort()).toEqual(api.split('\n').slice(1).sort());
    await ui.clean();
  });

  test('detail page', async () => {
    const { ids, form, page } = await withSubmissions('Detail', [['Dana', 52]]);
    const ui = s.admin;
    await ui.goto(`${page}/submissions`);
    const row = ui.page.locator('#submission-table .submission-metadata-row').first();
    await row.hover();
    const [tab] = await Promise.all([ui.context.waitForEvent('page'), row.locator('.more-button').click()]);
    await tab.waitForURL(new RegExp(`${page}/submissions/${enc(ids[0]!)}$`));
    const details = tab.locator('#submission-basic-details');
    await expect.poll(() => details.innerText()).toContain(ids[0]!);
    const sub = await s.api.get<{ submitter: { displayName: string } }>(`${form}/submissions/${enc(ids[0]!)}`, { 'X-Extended-Metadata': 'true' });
    expect(await details.innerText()).toContain(sub.submitter.displayName);
    await expect.poll(() => tab.locator('#submission-activity').innerText()).toContain('Submitted by');
    await tab.waitForLoadState('networkidle');
    await tab.close();
    await ui.clean();
  });

  test('comment', async () => {
    const { ids, form, page } = await withSubmissions('Comment', [['Eli', 33]]);
    const ui = s.admin;
    await ui.goto(`${page}/submissions/${enc(ids[0]!)}`);
    await ui.page.locator('#submission-comment textarea').fill('Checked on site');
    const posted = ui.waitForApi('POST', /\/comments$/);
    await ui.page.locator('#submission-comment button[type=submit]').click();
    expect((await posted).status()).toBe(200);
    const comments = await s.api.get<Array<{ body: string }>>(`${form}/submissions/${enc(ids[0]!)}/comments`);
    expect(comments.map((c) => c.body)).toEqual(['Checked on site']);
    await expect.poll(() => ui.page.locator('#submission-activity').innerText()).toContain('Checked on site');
    await ui.clean();
  });

  test('review state', async () => {
    const { ids, form, page } = await withSubmissions('Review', [['Fay', 28]]);
    const ui = s.admin;
    await ui.goto(`${page}/submissions/${enc(ids[0]!)}`);
    await ui.page.locator('#submission-activity-review-button').click();
    const modal = ui.page.locator('#submission-update-review-state');
    await modal.locator('input[type=radio][value=approved]').check();
    await modal.locator('textarea').fill('Looks right');
    const patched = ui.waitForApi('PATCH', new RegExp(`/submissions/${enc(ids[0]!)}$`));
    await modal.locator('button[type=submit]').click();
    expect((await patched).status()).toBe(200);
    expect((await s.api.get(`${form}/submissions/${enc(ids[0]!)}`)).reviewState).toBe('approved');
    await ui.settle();
    await ui.clean();
  });

  test('edit with ODK Web Forms', async () => {
    const { ids, form, page } = await withSubmissions('Edit', [['Gus', 61]]);
    const ui = s.admin;
    await ui.goto(`${page}/submissions/${enc(ids[0]!)}`);
    await ui.page.locator('#submission-activity-edit-button').click();
    await ui.page.waitForURL(/\/edit$/);
    const nameInput = ui.page.getByText('What is your name?', { exact: true }).locator('xpath=ancestor::*[.//input][1]').locator('input').first();
    await expect.poll(() => nameInput.inputValue()).toBe('Gus');
    await fillQuestion(ui.page, 'What is your name?', 'Gustav');
    const put = ui.waitForApi('PUT', new RegExp(`/submissions/${enc(ids[0]!)}$`));
    await ui.page.locator('.form-footer button').last().click();
    expect((await put).status()).toBe(200);
    const versions = await s.api.get<unknown[]>(`${form}/submissions/${enc(ids[0]!)}/versions`);
    expect(versions).toHaveLength(2);
    const xml = (await s.api.request('GET', `${form}/submissions/${enc(ids[0]!)}.xml`)).text;
    expect(xml).toContain('<name>Gustav</name>');
    expect(xml).toContain(`<deprecatedID>${ids[0]}</deprecatedID>`);
    // Web Forms then returns to the submission's page.
    await ui.page.waitForURL(new RegExp(`${page}/submissions/${enc(ids[0]!)}$`), { timeout: 15_000 });
    await ui.settle();
    await ui.clean();
  });

  test('delete', async () => {
    const { ids, form, page } = await withSubmissions('Delete', [['Hal', 45]]);
    const ui = s.admin;
    await ui.goto(`${page}/submissions/${enc(ids[0]!)}`);
    await ui.page.locator('#submission-activity-delete-button').click();
    const deleted = ui.waitForApi('DELETE', new RegExp(`/submissions/${enc(ids[0]!)}$`));
    await ui.page.locator('#submission-delete .btn-danger').click();
    expect((await deleted).status()).toBe(200);
    expect((await s.api.request('GET', `${form}/submissions/${enc(ids[0]!)}`)).status).toBe(404);
    const trash = await s.api.get<{ value: Array<{ __id: string }> }>(`${form}.svc/Submissions?$filter=${enc('__system/deletedAt ne null')}`);
    expect(trash.value.map((v) => v.__id)).toEqual([ids[0]]);
    await ui.page.waitForURL(new RegExp(`${page}/submissions$`));
    await ui.settle();
    await ui.clean();
  });

  test('restore', async () => {
    const { ids, form, page } = await withSubmissions('Restore', [['Ivy', 37]]);
    await s.api.ok('DELETE', `${form}/submissions/${enc(ids[0]!)}`);
    const ui = s.admin;
    await ui.goto(`${page}/submissions`);
    await ui.page.locator('.toggle-deleted-submissions').click();
    await ui.settle();
    const row = ui.page.locator('#submission-table .submission-metadata-row').first();
    await row.hover();
    await row.locator('.restore-button').click();
    const restored = ui.waitForApi('POST', new RegExp(`/submissions/${enc(ids[0]!)}/restore$`));
    await ui.page.locator('#submission-restore .btn-danger').click();
    expect((await restored).status()).toBe(200);
    expect((await s.api.get(`${form}/submissions/${enc(ids[0]!)}`)).instanceId).toBe(ids[0]);
    await ui.settle();
    await ui.clean();
  });
});
