/**
 * Entity Lists in Central's web UI (issues 14 and 15): the Entity Lists tab, a Dataset's entities,
 * properties and settings (approval, with pending submissions converted), entity detail and edit,
 * and conflicts raised by submissions (online and offline branches arriving out of order), shown
 * and resolved in the browser; each step's effect is checked through the API, and the follow-up
 * form's entity list attachment (what the next device download gets) through an App User.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { unique } from './api';
import { browserSuite } from './ui';

const s = browserSuite();
const enc = encodeURIComponent;

const NS = 'xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa" xmlns:entities="http://www.opendatakit.org/xforms/entities" xmlns:orx="http://openrosa.org/xforms"';

/** Registration form: creates a household Entity (entities-version 2024.1) with hh_name and members. */
const REGISTER = `<?xml version="1.0"?>
<h:html ${NS}>
  <h:head><h:title>Household registration</h:title>
    <model entities:entities-version="2024.1.0">
      <instance>
        <data id="hh_register" orx:version="1">
          <hh_name/><members/>
          <meta><instanceID/><entity dataset="households" id="" create="1"><label/></entity></meta>
        </data>
      </instance>
      <bind nodeset="/data/hh_name" type="string" entities:saveto="hh_name"/>
      <bind nodeset="/data/members" type="int" entities:saveto="members"/>
      <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
      <bind nodeset="/data/meta/entity/@id" type="string" readonly="true()"/>
      <bind nodeset="/data/meta/entity/label" type="string" calculate="/data/hh_name"/>
    </model>
  </h:head>
  <h:body>
    <input ref="/data/hh_name"><label>Household name</label></input>
    <input ref="/data/members"><label>Members</label></input>
  </h:body>
</h:html>`;

/** Follow-up form: updates a household (offline-capable, 2024.1) and reads the list as households.csv. */
const VISIT = `<?xml version="1.0"?>
<h:html ${NS}>
  <h:head><h:title>Household visit</h:title>
    <model entities:entities-version="2024.1.0">
      <instance>
        <data id="hh_visit" orx:version="1">
          <hh/><members/>
          <meta><instanceID/><entity dataset="households" id="" update="1" baseVersion="" trunkVersion="" branchId=""/></meta>
        </data>
      </instance>
      <instance id="households" src="jr://file-csv/households.csv"/>
      <bind nodeset="/data/hh" type="string"/>
      <bind nodeset="/data/members" type="int" entities:saveto="members"/>
      <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
      <bind nodeset="/data/meta/entity/@id" type="string" readonly="true()" calculate="/data/hh"/>
    </model>
  </h:head>
  <h:body>
    <select1 ref="/data/hh"><label>Household</label>
      <itemset nodeset="instance('households')/root/item"><value ref="name"/><label ref="label"/></itemset>
    </select1>
    <input ref="/data/members"><label>Members</label></input>
  </h:body>
</h:html>`;

const registration = (instanceId: string, uuid: string, name: string, members: number) =>
  `<data id="hh_register" version="1"><hh_name>${name}</hh_name><members>${members}</members>`
  + `<meta><instanceID>${instanceId}</instanceID><entity dataset="households" id="${uuid}" create="1"><label>${name}</label></entity></meta></data>`;

const visit = (instanceId: string, uuid: string, members: number, v: { base: number; trunk?: number; branch?: string }) =>
  `<data id="hh_visit" version="1"><hh>${uuid}</hh><members>${members}</members>`
  + `<meta><instanceID>${instanceId}</instanceID><entity dataset="households" id="${uuid}" update="1" baseVersion="${v.base}"`
  + ` trunkVersion="${v.trunk ?? ''}" branchId="${v.branch ?? ''}"/></meta></data>`;

interface EntityJson {
  uuid: string;
  conflict: string | null;
  currentVersion: { version: number; label: string; data: Record<string, string>; baseVersion: number | null };
}

/** A project with both forms published, one App User (Phone) assigned to both; returns paths. */
async function householdProject(label: string, opts: { approvalRequired: boolean }) {
  const project = await s.api.createProject(unique(label));
  await s.api.createForm(project.id, REGISTER);
  await s.api.ok('PATCH', `/v1/projects/${project.id}/datasets/households`, { approvalRequired: opts.approvalRequired });
  await s.api.createForm(project.id, VISIT);
  const phone = await s.api.createAppUser(project.id, 'Phone');
  const roles = await s.api.get<Array<{ id: number; system: string }>>('/v1/roles');
  const appUserRole = roles.find((r) => r.system === 'app-user')!.id;
  for (const form of ['hh_register', 'hh_visit']) await s.api.post(`/v1/projects/${project.id}/forms/${form}/assignments/${appUserRole}/${phone.id}`);
  const dataset = `/v1/projects/${project.id}/datasets/households`;
  return { project, phone, dataset, page: `/projects/${project.id}` };
}

/** Polls the API until `check` passes (entity processing runs in the background job queue). */
async function eventually<T>(read: () => Promise<T>, check: (v: T) => boolean, what: string): Promise<T> {
  let last: T | undefined;
  for (let i = 0; i < 100; i += 1) {
    last = await read();
    if (check(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: still ${JSON.stringify(last)}`);
}

/** Opens an entity's page and clicks "Mark as resolved" in the conflict summary, then confirms. */
async function resolveInUi(page: string, uuid: string, dataset: string) {
  const ui = s.admin;
  await ui.goto(`${page}/entity-lists/households/entities/${uuid}`);
  const summary = ui.page.locator('#entity-conflict-summary');
  await summary.waitFor();
  await summary.locator('.panel-footer button').click();
  const resolved = ui.waitForApi('PATCH', new RegExp(`/datasets/households/entities/${uuid}$`));
  await ui.page.locator('.modal.confirmation .modal-actions .btn-primary').click();
  const res = await resolved;
  expect(res.status()).toBe(200);
  expect(new URL(res.url()).searchParams.get('resolve')).toBe('true');
  await summary.waitFor({ state: 'hidden' });
  const after = await s.api.get<EntityJson>(`${dataset}/entities/${uuid}`);
  expect(after.conflict).toBeNull();
  return after;
}

describe('Entity Lists', () => {
  test('registration on approval, the Entity Lists pages, edit in the UI, a conflict shown and resolved', async () => {
    const { project, phone, dataset, page } = await householdProject('Households', { approvalRequired: true });
    const uuid = randomUUID();
    const instanceId = `uuid:${randomUUID()}`;
    expect((await s.api.openRosaSubmit(project.id, phone.token, registration(instanceId, uuid, 'Odhiambo', 4))).status).toBe(201);
    // Approval is required: nothing yet.
    expect(await s.api.get(`${dataset}/entities`)).toEqual([]);

    // Approve in the UI.
    const ui = s.admin;
    await ui.goto(`${page}/forms/hh_register/submissions/${enc(instanceId)}`);
    await ui.page.locator('#submission-activity-review-button').click();
    const modal = ui.page.locator('#submission-update-review-state');
    await modal.locator('input[type=radio][value=approved]').check();
    const patched = ui.waitForApi('PATCH', new RegExp(`/submissions/${enc(instanceId)}$`));
    await modal.locator('button[type=submit]').click();
    expect((await patched).status()).toBe(200);
    const created = await eventually(() => s.api.get<EntityJson[]>(`${dataset}/entities`), (l) => l.length === 1, 'entity created on approval');
    expect(created[0]!.uuid).toBe(uuid);
    const v1 = await s.api.get<EntityJson>(`${dataset}/entities/${uuid}`);
    expect(v1.currentVersion).toMatchObject({ version: 1, label: 'Odhiambo', data: { hh_name: 'Odhiambo', members: '4' } });
    await ui.settle();

    // The Entity Lists tab lists the Dataset; its page lists the properties and the forms.
    await ui.goto(`${page}/entity-lists`);
    const row = ui.page.locator('.dataset-row', { hasText: 'households' });
    await row.waitFor();
    expect(await row.locator('.entities').innerText()).toContain('1');
    await row.locator('.name a').first().click();
    await ui.page.waitForURL(new RegExp(`${page}/entity-lists/households(/entities)?$`));
    await ui.goto(`${page}/entity-lists/households/properties`);
    const props = ui.page.locator('#dataset-properties');
    await expect.poll(() => props.innerText()).toContain('members');
    expect(await props.innerText()).toContain('hh_name');

    // The entities table shows the household; its row leads to the entity's page.
    await ui.goto(`${page}/entity-lists/households/entities`);
    const entityRows = ui.page.locator('#entity-table .entity-metadata-row');
    await expect.poll(() => entityRows.count()).toBe(1);
    await expect.poll(() => ui.page.locator('#entity-table').innerText()).toContain('Odhiambo');

    // Edit in the UI: members 4 → 5 (PATCH with baseVersion 1).
    await ui.goto(`${page}/entity-lists/households/entities/${uuid}`);
    await ui.page.locator('#entity-data-update-button').click();
    const update = ui.page.locator('#entity-update');
    await update.waitFor();
    const membersRow = update.locator('.entity-update-row', { hasText: 'members' });
    await membersRow.locator('textarea').fill('5');
    const saved = ui.waitForApi('PATCH', new RegExp(`/datasets/households/entities/${uuid}$`));
    await update.locator('button[type=submit]').click();
    const savedRes = await saved;
    expect(savedRes.status()).toBe(200);
    expect(new URL(savedRes.url()).searchParams.get('baseVersion')).toBe('1');
    const v2 = await s.api.get<EntityJson>(`${dataset}/entities/${uuid}`);
    expect(v2.currentVersion).toMatchObject({ version: 2, data: { members: '5', hh_name: 'Odhiambo' } });
    await update.waitFor({ state: 'hidden' });

    // A follow-up visit based on version 1 changes the same property: a hard conflict.
    const visitId = `uuid:${randomUUID()}`;
    expect((await s.api.openRosaSubmit(project.id, phone.token, visit(visitId, uuid, 7, { base: 1 }))).status).toBe(201);
    await s.api.ok('PATCH', `/v1/projects/${project.id}/forms/hh_visit/submissions/${enc(visitId)}`, { reviewState: 'approved' });
    const v3 = await eventually(() => s.api.get<EntityJson>(`${dataset}/entities/${uuid}`), (e) => e.currentVersion.version === 3, 'update applied');
    expect(v3.conflict).toBe('hard');
    expect(v3.currentVersion).toMatchObject({ baseVersion: 1, data: { members: '7' } });
    const versions = await s.api.get<Array<{ version: number; conflict: string | null; relevantToConflict: boolean }>>(`${dataset}/entities/${uuid}/versions?relevantToConflict=true`);
    expect(versions.map((v) => v.version)).toEqual([1, 2, 3]);

    // The Entity Lists tab and the table flag the conflict; the entity page shows and resolves it.
    await ui.goto(`${page}/entity-lists`);
    await expect.poll(() => ui.page.locator('.dataset-row', { hasText: 'households' }).locator('.conflicts').innerText()).toContain('1');
    await ui.goto(`${page}/entity-lists/households/entities/${uuid}`);
    const table = ui.page.locator('#entity-conflict-table');
    await expect.poll(() => table.innerText()).toContain('7');
    const after = await resolveInUi(page, uuid, dataset);
    expect(after.currentVersion).toMatchObject({ version: 3, data: { members: '7' } });
    await ui.settle();
    await ui.clean();
  });

  test('a new property, an entity created in the UI, deleted from the table and restored', async () => {
    const { dataset, page } = await householdProject('Create delete restore', { approvalRequired: false });
    const ui = s.admin;

    // A property added on the properties page.
    await ui.goto(`${page}/entity-lists/households/properties`);
    await ui.page.locator('#dataset-property-new-button').click();
    const propModal = ui.page.locator('#dataset-property-new');
    await propModal.locator('input').fill('village');
    const propPosted = ui.waitForApi('POST', /\/datasets\/households\/properties$/);
    await propModal.locator('button[type=submit]').click();
    expect((await propPosted).status()).toBe(200);
    const ds = await s.api.get<{ properties: Array<{ name: string }> }>(dataset);
    expect(ds.properties.map((p) => p.name)).toEqual(['hh_name', 'members', 'village']);
    await propModal.waitFor({ state: 'hidden' });

    // An entity created from the entities page (POST D/entities).
    await ui.goto(`${page}/entity-lists/households/entities`);
    await ui.page.locator('#dataset-entities-create-button').click();
    const create = ui.page.locator('#entity-create');
    await create.waitFor();
    await create.locator('.entity-update-row').first().locator('textarea').fill('Kamau');
    await create.locator('.entity-update-row', { hasText: 'hh_name' }).locator('textarea').fill('Kamau');
    await create.locator('.entity-update-row', { hasText: 'village' }).locator('textarea').fill('Nyeri');
    const posted = ui.waitForApi('POST', /\/datasets\/households\/entities$/);
    await create.locator('button[type=submit]').click();
    expect((await posted).status()).toBe(200);
    const list = await s.api.get<EntityJson[]>(`${dataset}/entities`);
    expect(list).toHaveLength(1);
    const uuid = list[0]!.uuid;
    const made = await s.api.get<EntityJson>(`${dataset}/entities/${uuid}`);
    expect(made.currentVersion).toMatchObject({ version: 1, label: 'Kamau', data: { hh_name: 'Kamau', village: 'Nyeri' } });
    await create.waitFor({ state: 'hidden' });

    // Deleted from the table's row actions.
    await ui.goto(`${page}/entity-lists/households/entities`);
    const row = ui.page.locator('#entity-table .entity-metadata-row').first();
    await row.waitFor();
    // The actions are in the table's frozen right part: hover the row's data to show them.
    const actions = ui.page.locator('#entity-table .btn-group').first();
    await row.hover();
    await actions.locator('.delete-button').click({ force: true });
    const deleted = ui.waitForApi('DELETE', new RegExp(`/entities/${uuid}$`));
    await ui.page.locator('#entity-delete .btn-danger').click();
    expect((await deleted).status()).toBe(200);
    expect((await s.api.request('GET', `${dataset}/entities/${uuid}`)).status).toBe(404);
    await ui.settle();

    // Restored from the deleted view.
    await ui.page.locator('.toggle-deleted-entities').click();
    await ui.settle();
    const deletedRow = ui.page.locator('#entity-table .restore-button').first();
    await deletedRow.waitFor();
    // The button sits in the table's horizontally scrolled part; click it as a keyboard user would.
    await deletedRow.evaluate((b) => (b as HTMLElement).click());
    const restored = ui.waitForApi('POST', new RegExp(`/entities/${uuid}/restore$`));
    await ui.page.locator('#entity-restore .btn-danger').click();
    expect((await restored).status()).toBe(200);
    expect((await s.api.get<EntityJson>(`${dataset}/entities/${uuid}`)).currentVersion.label).toBe('Kamau');
    await ui.settle();
    await ui.clean();
  });

  test('settings: approval off with pending submissions converts them into entities', async () => {
    const { project, phone, dataset, page } = await householdProject('Pending', { approvalRequired: true });
    const uuids = [randomUUID(), randomUUID()];
    for (const [i, uuid] of uuids.entries()) {
      expect((await s.api.openRosaSubmit(project.id, phone.token, registration(`uuid:${randomUUID()}`, uuid, `House ${i}`, i + 2))).status).toBe(201);
    }
    const ui = s.admin;
    await ui.goto(`${page}/entity-lists/households/settings`);
    const first = ui.waitForApi('PATCH', /\/datasets\/households$/);
    await ui.page.locator('#dataset-settings-form input[name=approvalRequired]').first().check();
    // Central's answer: 400.29 with the pending count, which opens the conversion modal.
    const problem = await first;
    expect(problem.status()).toBe(400);
    expect(((await problem.json()) as { code: number; details: { count: number } })).toMatchObject({ code: 400.29, details: { count: 2 } });
    const modal = ui.page.locator('#dataset-pending-submissions');
    await modal.waitFor();
    await modal.locator('input[name=convert]').nth(1).check();
    const converted = ui.waitForApi('PATCH', /\/datasets\/households$/);
    await modal.locator('.btn-danger').click();
    const res = await converted;
    expect(res.status()).toBe(200);
    expect(new URL(res.url()).searchParams.get('convert')).toBe('true');
    expect((await s.api.get(dataset)).approvalRequired).toBe(false);
    const list = await eventually(() => s.api.get<EntityJson[]>(`${dataset}/entities`), (l) => l.length === 2, 'pending submissions converted');
    expect(list.map((e) => e.uuid).sort()).toEqual([...uuids].sort());
    await ui.settle();
    // The 400.29 probe is the UI's expected first answer; anything else must be clean.
    ui.failures.splice(0, ui.failures.length, ...ui.failures.filter((f) => !(f.status === 400 && f.url.endsWith('/datasets/households'))));
    await ui.clean();
  });

  test('two devices offline update one household; out-of-order arrival applied in branch order, conflict resolved in the UI, next download shows it', async () => {
    const { project, phone, dataset, page } = await householdProject('Offline', { approvalRequired: false });
    const uuid = randomUUID();
    expect((await s.api.openRosaSubmit(project.id, phone.token, registration(`uuid:${randomUUID()}`, uuid, 'Wanjiru', 4))).status).toBe(201);
    await eventually(() => s.api.get<EntityJson[]>(`${dataset}/entities`), (l) => l.length === 1, 'household registered');
    const tablet = await s.api.createAppUser(project.id, 'Tablet');
    const roles = await s.api.get<Array<{ id: number; system: string }>>('/v1/roles');
    await s.api.post(`/v1/projects/${project.id}/forms/hh_visit/assignments/${roles.find((r) => r.system === 'app-user')!.id}/${tablet.id}`);

    // Device A (Phone), offline: two visits in its branch (trunk version 1): members 5, then 6.
    const branchA = randomUUID();
    const a1 = visit(`uuid:${randomUUID()}`, uuid, 5, { base: 1, trunk: 1, branch: branchA });
    const a2 = visit(`uuid:${randomUUID()}`, uuid, 6, { base: 2, trunk: 1, branch: branchA });
    // Device B (Tablet), offline from the same trunk version: members 3.
    const b1 = visit(`uuid:${randomUUID()}`, uuid, 3, { base: 1, trunk: 1, branch: randomUUID() });

    // They arrive out of order: A's second visit first (it waits for its predecessor), then B, then A's first.
    expect((await s.api.openRosaSubmit(project.id, phone.token, a2)).status).toBe(201);
    const held = await eventually(() => s.api.get<EntityJson>(`${dataset}/entities/${uuid}`), () => true, 'entity');
    expect(held.currentVersion.version).toBe(1);
    expect((await s.api.openRosaSubmit(project.id, tablet.token, b1)).status).toBe(201);
    await eventually(() => s.api.get<EntityJson>(`${dataset}/entities/${uuid}`), (e) => e.currentVersion.version === 2, 'B applied');
    expect((await s.api.openRosaSubmit(project.id, phone.token, a1)).status).toBe(201);
    const final = await eventually(() => s.api.get<EntityJson>(`${dataset}/entities/${uuid}`), (e) => e.currentVersion.version === 4, 'A applied in branch order');
    expect(final.currentVersion.data.members).toBe('6');
    expect(final.conflict).toBe('hard');
    const versions = await s.api.get<Array<{ version: number; data: Record<string, string>; branchId: string | null; baseVersion: number | null }>>(`${dataset}/entities/${uuid}/versions`);
    expect(versions.map((v) => [v.version, v.data.members])).toEqual([[1, '4'], [2, '3'], [3, '5'], [4, '6']]);
    expect(versions.slice(2).map((v) => v.branchId)).toEqual([branchA, branchA]);

    const after = await resolveInUi(page, uuid, dataset);
    expect(after.currentVersion).toMatchObject({ version: 4, data: { members: '6' } });

    // The next form download: the follow-up form's entity list, as a device fetches it.
    const manifest = await fetch(`${s.server.base}/v1/key/${phone.token}/projects/${project.id}/forms/hh_visit/manifest`, { headers: { 'X-OpenRosa-Version': '1.0' } });
    expect(manifest.status).toBe(200);
    const manifestXml = await manifest.text();
    expect(manifestXml).toContain('type="entityList"');
    const url = /<downloadUrl>([^<]+households\.csv)<\/downloadUrl>/.exec(manifestXml)?.[1];
    expect(url).toBeDefined();
    const csv = await (await fetch(url!.replace(/^https?:\/\/[^/]+/, s.server.base).replaceAll('&amp;', '&'), { headers: { 'X-OpenRosa-Version': '1.0' } })).text();
    const lines = csv.trim().split('\n');
    expect(lines[0]).toBe('name,label,__version,hh_name,members');
    expect(lines[1]).toBe(`${uuid},Wanjiru,4,Wanjiru,6`);
    await s.admin.settle();
    await s.admin.clean();
  });
});
