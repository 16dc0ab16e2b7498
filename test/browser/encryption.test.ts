/**
 * Managed encryption in Central's web UI (issue 16): the project settings' "Enable encryption"
 * dialog (POST P/key), then encrypted submissions with media built as Collect builds them, and the
 * decrypting download from the submissions page (the UI posts the passphrase from a hidden iframe
 * form, with the CSRF token); the ZIP's values and media bytes must equal the plaintext. A wrong
 * passphrase shows Central's problem in a red alert and downloads nothing.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { unzipSync } from 'fflate';
import { describe, expect, test } from 'vitest';
import { encryptSubmission, formKeyAndVersion } from '../helpers/encrypt-submission';
import { unique } from './api';
import { browserSuite } from './ui';
import { parseCsv } from '../integration/exports/helpers';

const s = browserSuite();

const FORM = `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa" xmlns:orx="http://openrosa.org/xforms">
  <h:head><h:title>Clinic visit</h:title>
    <model>
      <instance>
        <data id="clinic" orx:version="3">
          <meta><instanceID/></meta>
          <patient/><temp/><photo/>
        </data>
      </instance>
      <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
      <bind nodeset="/data/patient" type="string"/>
      <bind nodeset="/data/temp" type="decimal"/>
      <bind nodeset="/data/photo" type="binary"/>
    </model>
  </h:head>
  <h:body>
    <input ref="/data/patient"><label>Patient</label></input>
    <input ref="/data/temp"><label>Temperature</label></input>
    <upload ref="/data/photo" mediatype="image/*"><label>Photo</label></upload>
  </h:body>
</h:html>`;

const PASSPHRASE = 'correct horse battery staple';

describe('Encryption', () => {
  test('enable encryption in the dialog, receive encrypted submissions with media, download them decrypted', async () => {
    const project = await s.api.createProject(unique('Encrypted clinic'));
    await s.api.createForm(project.id, FORM);
    const ui = s.admin;

    // The dialog: introduction → passphrase and hint → success.
    await ui.goto(`/projects/${project.id}/settings`);
    await ui.page.locator('#project-settings-enable-encryption-button').click();
    const modal = ui.page.locator('#project-enable-encryption');
    await modal.waitFor();
    await modal.locator('.modal-actions .btn-primary').click();
    await modal.locator('input[type=password], input[autocomplete=new-password]').first().fill(PASSPHRASE);
    await modal.locator('input[autocomplete=off]').fill('the staple one');
    const posted = ui.waitForApi('POST', new RegExp(`^/v1/projects/${project.id}/key$`));
    await modal.locator('button[type=submit]').click();
    expect((await posted).status()).toBe(200);
    await modal.locator('#project-enable-encryption-success-icon-container').waitFor();
    await modal.locator('.modal-actions .btn-primary').click();
    await modal.waitFor({ state: 'hidden' });

    // The project and its form now carry the managed key.
    const p = await s.api.get<{ keyId: number | null }>(`/v1/projects/${project.id}`);
    expect(p.keyId).toEqual(expect.any(Number));
    const form = await s.api.get<{ keyId: number | null }>(`/v1/projects/${project.id}/forms/clinic`);
    expect(form.keyId).toBe(p.keyId);
    const { publicKey, version } = formKeyAndVersion((await s.api.request('GET', `/v1/projects/${project.id}/forms/clinic.xml`)).text);
    expect(version).toMatch(/^3\[encrypted:.{8}\]$/);

    // Two devices' encrypted submissions, each with a photo.
    const phone = await s.api.createAppUser(project.id, 'Phone');
    const roles = await s.api.get<Array<{ id: number; system: string }>>('/v1/roles');
    await s.api.post(`/v1/projects/${project.id}/forms/clinic/assignments/${roles.find((r) => r.system === 'app-user')!.id}/${phone.id}`);
    const plain = [
      { id: `uuid:${randomUUID()}`, patient: 'Amina, "A."', temp: '37.2', photo: { name: 'amina.jpg', bytes: randomBytes(40_000) } },
      { id: `uuid:${randomUUID()}`, patient: 'Baraka', temp: '38.9', photo: { name: 'baraka.jpg', bytes: randomBytes(41_000) } },
    ];
    for (const v of plain) {
      const xml = `<data id="clinic" version="${version}"><meta><instanceID>${v.id}</instanceID></meta><patient>${v.patient.replace(/&/g, '&amp;')}</patient><temp>${v.temp}</temp><photo>${v.photo.name}</photo></data>`;
      const e = encryptSubmission({ publicKey, xmlFormId: 'clinic', version, instanceId: v.id, xml, media: [v.photo] });
      expect((await s.api.openRosaSubmit(project.id, phone.token, e.envelope, e.files)).status).toBe(201);
    }

    // A wrong passphrase: Central's problem in a red alert, nothing downloaded.
    await ui.goto(`/projects/${project.id}/forms/clinic/submissions`);
    await ui.page.locator('#submission-download-button > button, #submission-download-button').first().click();
    const download = ui.page.locator('.modal:visible', { has: ui.page.locator('#submission-download-actions') });
    await download.waitFor();
    await expect.poll(() => download.locator('#submission-download-passphrase-hint').innerText()).toContain('the staple one');
    await download.locator('input[type=password]').fill('not the passphrase');
    await download.locator('#submission-download-actions a', { hasText: '.zip' }).last().click();
    await expect.poll(() => ui.redAlerts.join(' '), { timeout: 10_000 }).toContain('passphrase');
    ui.redAlerts.length = 0;
    // Central's red alert may close the modal with it; open it again if so.
    if (!(await download.isVisible())) {
      await ui.page.locator('#submission-download-button > button, #submission-download-button').first().click();
      await download.waitFor();
    }

    // The right one: the ZIP with media, decrypted.
    await download.locator('input[type=password]').fill(PASSPHRASE);
    const [file] = await Promise.all([
      ui.page.waitForEvent('download', { timeout: 30_000 }),
      download.locator('#submission-download-actions a', { hasText: '.zip' }).last().click(),
    ]);
    const entries = unzipSync(new Uint8Array(readFileSync((await file.path())!)));
    expect(Object.keys(entries).sort()).toEqual(['clinic.csv', 'media/amina.jpg', 'media/baraka.jpg']);
    const rows = parseCsv(new TextDecoder().decode(entries['clinic.csv']));
    const header = rows[0]!;
    const col = (name: string) => header.indexOf(name);
    const body = rows.slice(1).map((r) => [r[col('meta-instanceID')], r[col('patient')], r[col('temp')], r[col('photo')], r[col('Status')]]);
    expect(body.sort()).toEqual(plain.map((v) => [v.id, v.patient, v.temp, v.photo.name, '']).sort());
    for (const v of plain) expect(Buffer.from(entries[`media/${v.photo.name}`]!).equals(v.photo.bytes), v.photo.name).toBe(true);
    await ui.settle();
    // The wrong-passphrase answer went to the iframe (a document load, not a /v1 fetch the UI made);
    // anything else must be clean.
    ui.failures.splice(0, ui.failures.length, ...ui.failures.filter((f) => !(f.method === 'POST' && f.url.includes('/submissions.csv.zip'))));
    await ui.clean();
  });
});
