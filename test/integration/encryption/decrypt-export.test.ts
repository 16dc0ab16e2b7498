/**
 * Encrypted submissions end to end: a project turns managed encryption on, a device sends
 * submissions encrypted the way Collect encrypts them (test/helpers/encrypt-submission.ts, OpenSSL)
 * as real OpenRosa multipart bodies, and the CSV / ZIP exports decrypt them with the passphrase
 * from the query or a POST body. Also: no passphrase, a wrong one, self-supplied keys, multi-POST
 * media, rights, OData.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { harness, json, type As, type Harness } from '../../helpers/harness';
import { userWithRole } from '../../helpers/roles';
import { fixtureUsers } from '../../fixtures/users';
import { appUserFor, fixture, fixtureBytes, multipart, publishForm, submitOpenRosa } from '../../helpers/submitting';
import { encryptSubmission, formKeyAndVersion, type PlainFile } from '../../helpers/encrypt-submission';
import { ISO_MS_UTC, parseCsv, readZip } from '../exports/helpers';

const SECRET = 'supersecret';
const FORM = `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa">
  <h:head><h:title>Household</h:title>
    <model>
      <instance>
        <data id="household" version="7">
          <meta><instanceID/></meta>
          <name/><age/><photo/>
          <member jr:template=""><mname/></member>
        </data>
      </instance>
      <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" calculate="concat('uuid:', uuid())"/>
      <bind nodeset="/data/name" type="string"/>
      <bind nodeset="/data/age" type="int"/>
      <bind nodeset="/data/photo" type="binary"/>
      <bind nodeset="/data/member/mname" type="string"/>
    </model>
  </h:head>
  <h:body>
    <input ref="/data/name"><label>Name</label></input>
    <input ref="/data/age"><label>Age</label></input>
    <upload ref="/data/photo" mediatype="image/*"><label>Photo</label></upload>
    <repeat nodeset="/data/member"><input ref="/data/member/mname"><label>Member</label></input></repeat>
  </h:body>
</h:html>`;

const plainXml = (version: string, id: string, name: string, age: number, photo: string | null, members: string[]) =>
  `<data id="household" version="${version}"><meta><instanceID>${id}</instanceID></meta><name>${name}</name><age>${age}</age>`
  + `<photo>${photo ?? ''}</photo>${members.map((m) => `<member><mname>${m}</mname></member>`).join('')}</data>`;

interface Setup { h: Harness; device: As; keyId: number; version: string; publicKey: string; photos: Map<string, Uint8Array> }

/** Publishes the form, sends one plain submission, enables encryption, sends two encrypted ones with a photo each. */
async function setup(): Promise<Setup> {
  const h = await harness();
  await publishForm(h, FORM);
  const au = await appUserFor(h, 'household', 'Phone');
  const device: As = { key: au.token };
  await submitOpenRosa(h, device, plainXml('7', 'uuid:plain-1', 'Plain Pat', 51, null, ['p1']));
  const enabled = await h.post(`/v1/projects/${h.projectId}/key`, { as: 'bob', body: { passphrase: SECRET, hint: 'the usual' } });
  expect(enabled.status).toBe(200);
  const { keyId } = await json(enabled);
  const { publicKey, version } = formKeyAndVersion(await (await h.get(`/v1/projects/${h.projectId}/forms/household.xml`, { as: 'bob' })).text());
  expect(version).toMatch(/^7\[encrypted:.{8}\]$/);
  const photos = new Map<string, Uint8Array>();
  for (const [i, name, members] of [[1, 'Ana, "the first"', ['a1', 'a2']], [2, 'Ben', []]] as const) {
    const photo: PlainFile = { name: `photo-${i}.jpg`, bytes: randomBytes(50_000 + i) };
    photos.set(photo.name, photo.bytes);
    const instanceId = `uuid:enc-${i}`;
    const enc = encryptSubmission({ publicKey, xmlFormId: 'household', version, instanceId, xml: plainXml(version, instanceId, name, 30 + i, photo.name, [...members]), media: [photo] });
    await submitOpenRosa(h, device, enc.envelope, { files: enc.files });
  }
  return { h, device, keyId, version, publicKey, photos };
}

const zipPath = (h: Harness, query = '') => `/v1/projects/${h.projectId}/forms/household/submissions.csv.zip${query}`;

async function zipFiles(res: Response): Promise<Map<string, Uint8Array>> {
  expect(res.status, res.status === 200 ? '' : await res.clone().text()).toBe(200);
  return new Map(readZip(new Uint8Array(await res.arrayBuffer())).map((e) => [e.name, e.data]));
}
const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

describe('decrypting exports', () => {
  test('the keys are listed; with the passphrase the ZIP has the plaintext values, repeats and media bytes', async () => {
    const { h, keyId, version, photos } = await setup();
    const keys = await json(await h.get(`/v1/projects/${h.projectId}/forms/household/submissions/keys`, { as: 'bob' }));
    expect(keys).toEqual([{ id: keyId, public: expect.stringMatching(/^[A-Za-z0-9+/]{392}$/), managed: true, hint: 'the usual', createdAt: expect.stringMatching(ISO_MS_UTC) }]);

    const files = await zipFiles(await h.get(zipPath(h, `?${keyId}=${SECRET}`), { as: 'bob' }));
    expect([...files.keys()]).toEqual(['household.csv', 'household-member.csv', 'media/photo-1.jpg', 'media/photo-2.jpg']);
    const rows = parseCsv(text(files.get('household.csv')));
    expect(rows[0]).toEqual(['SubmissionDate', 'meta-instanceID', 'name', 'age', 'photo', 'KEY', 'SubmitterID', 'SubmitterName', 'AttachmentsPresent', 'AttachmentsExpected', 'Status', 'ReviewState', 'DeviceID', 'Edits', 'FormVersion']);
    const body = rows.slice(1).map((r) => r.slice(1, 11).concat(r.slice(13)));
    expect(body).toEqual([
      ['uuid:enc-2', 'Ben', '32', 'photo-2.jpg', 'uuid:enc-2', expect.any(String), 'Phone', '2', '2', '', '0', version],
      ['uuid:enc-1', 'Ana, "the first"', '31', 'photo-1.jpg', 'uuid:enc-1', expect.any(String), 'Phone', '2', '2', '', '0', version],
      ['uuid:plain-1', 'Plain Pat', '51', '', 'uuid:plain-1', expect.any(String), 'Phone', '0', '0', '', '0', '7'],
    ]);
    expect(parseCsv(text(files.get('household-member.csv')))).toEqual([
      ['mname', 'PARENT_KEY', 'KEY'],
      ['a1', 'uuid:enc-1', 'uuid:enc-1/member[1]'],
      ['a2', 'uuid:enc-1', 'uuid:enc-1/member[2]'],
      ['p1', 'uuid:plain-1', 'uuid:plain-1/member[1]'],
    ]);
    for (const [name, bytes] of photos) expect(Buffer.from(files.get(`media/${name}`)!).equals(Buffer.from(bytes)), name).toBe(true);
  });

  test('without a passphrase: metadata only, `not decrypted`, no encrypted media; OData does not decrypt', async () => {
    const { h, version } = await setup();
    const files = await zipFiles(await h.get(zipPath(h), { as: 'bob' }));
    expect([...files.keys()]).toEqual(['household.csv', 'household-member.csv']);
    const rows = parseCsv(text(files.get('household.csv'))).slice(1);
    expect(rows.map((r) => r.slice(1, 5).concat(r.slice(8, 11), r.slice(14)))).toEqual([
      ['', '', '', '', '2', '2', 'not decrypted', version],
      ['', '', '', '', '2', '2', 'not decrypted', version],
      ['uuid:plain-1', 'Plain Pat', '51', '', '0', '0', '', '7'],
    ]);
    const odata = await json(await h.get(`/v1/projects/${h.projectId}/forms/household.svc/Submissions?%24orderby=__system%2FsubmissionDate%20desc`, { as: 'bob' }));
    expect(odata.value[0]).toMatchObject({ __id: 'uuid:enc-2', __system: { status: 'notDecrypted' } });
    expect(odata.value[0].name).toBeUndefined();
  });

  test('a wrong passphrase is 400.12 before any byte; the passphrase also works in a url-encoded or JSON POST body and for submissions.csv', async () => {
    const { h, keyId } = await setup();
    for (const path of [zipPath(h, `?${keyId}=wrongwrongwrong`), `/v1/projects/${h.projectId}/forms/household/submissions.csv?${keyId}=nope`]) {
      const res = await h.get(path, { as: 'bob' });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/json/);
      expect(await json(res)).toMatchObject({ code: 400.12, message: 'Could not perform decryption. Double check your passphrase and your data and try again.' });
    }
    const form = await zipFiles(await h.post(zipPath(h), { as: 'bob', body: `${keyId}=${SECRET}`, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }));
    expect(parseCsv(text(form.get('household.csv')))[1]![2]).toBe('Ben');
    const jsonBody = await zipFiles(await h.post(zipPath(h), { as: 'bob', body: { [keyId]: SECRET } }));
    expect(parseCsv(text(jsonBody.get('household.csv')))[2]![2]).toBe('Ana, "the first"');
    const csv = await h.get(`/v1/projects/${h.projectId}/forms/household/submissions.csv?${keyId}=${SECRET}`, { as: 'bob' });
    expect(csv.status).toBe(200);
    expect(parseCsv(await csv.text()).map((r) => r[2])).toEqual(['name', 'Ben', 'Ana, "the first"', 'Plain Pat']);
    // The web UI's download: a plain HTML form POST over the session cookie, `__csrf` in the body.
    const cookie = { cookie: fixtureUsers.bob.token };
    const ui = await zipFiles(await h.post(zipPath(h), { as: cookie, body: `${keyId}=${SECRET}&__csrf=${fixtureUsers.bob.csrf}`, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }));
    expect(parseCsv(text(ui.get('household.csv')))[1]![2]).toBe('Ben');
    const noCsrf = await h.post(zipPath(h), { as: cookie, body: `${keyId}=${SECRET}`, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(noCsrf.status).toBe(401);
    // attachments=false: no media, still decrypted
    const noMedia = await zipFiles(await h.get(zipPath(h, `?attachments=false&${keyId}=${SECRET}`), { as: 'bob' }));
    expect([...noMedia.keys()]).toEqual(['household.csv', 'household-member.csv']);
  });

  test('rights: viewer and manager decrypt; data collector, no role: 403.1; anonymous 401.2', async () => {
    const { h, keyId } = await setup();
    const viewer = await userWithRole(h, 'viewer', 'viewer@example.org');
    const collector = await userWithRole(h, 'formfill', 'collector@example.org');
    for (const as of [viewer, 'bob' as const, 'alice' as const]) {
      const files = await zipFiles(await h.get(zipPath(h, `?${keyId}=${SECRET}`), { as }));
      expect(parseCsv(text(files.get('household.csv')))[1]![2]).toBe('Ben');
    }
    for (const as of [collector, 'chelsea' as const]) {
      const res = await h.get(zipPath(h, `?${keyId}=${SECRET}`), { as });
      expect(res.status).toBe(403);
      expect((await json(res)).code).toBe(403.1);
    }
    const anon = await h.get(zipPath(h, `?${keyId}=${SECRET}`), { as: 'anonymous' });
    expect(anon.status).toBe(401);
    expect((await json(anon)).code).toBe(401.2);
  });

  test('media sent in a later POST (multi-part upload) decrypt; the envelope alone shows `missing encrypted form data`', async () => {
    const { h, device, keyId, version, publicKey } = await setup();
    const photo = { name: 'late.jpg', bytes: randomBytes(70_000) };
    const enc = encryptSubmission({ publicKey, xmlFormId: 'household', version, instanceId: 'uuid:enc-late', xml: plainXml(version, 'uuid:enc-late', 'Late', 40, 'late.jpg', []), media: [photo] });
    await submitOpenRosa(h, device, enc.envelope); // envelope only
    let rows = parseCsv(await (await h.get(`/v1/projects/${h.projectId}/forms/household/submissions.csv?${keyId}=${SECRET}`, { as: 'bob' })).text());
    expect(rows[1]!.slice(1, 3).concat(rows[1]!.slice(8, 11))).toEqual(['', '', '0', '2', 'missing encrypted form data']);
    // then the same envelope with the media (Collect's later part), then with the XML file
    await submitOpenRosa(h, device, enc.envelope, { files: [enc.files[0]!] });
    await submitOpenRosa(h, device, enc.envelope, { files: [enc.files[1]!] });
    const files = await zipFiles(await h.get(zipPath(h, `?${keyId}=${SECRET}`), { as: 'bob' }));
    rows = parseCsv(text(files.get('household.csv')));
    expect(rows[1]!.slice(1, 3).concat(rows[1]!.slice(8, 11))).toEqual(['uuid:enc-late', 'Late', '2', '2', '']);
    expect(Buffer.from(files.get('media/late.jpg')!).equals(photo.bytes)).toBe(true);
  });

  test('an encrypted submission without an instanceID is rejected as Central does (400.2)', async () => {
    const { h, device, version } = await setup();
    const { body, type } = multipart(`<data id="household" version="${version}" encrypted="yes" xmlns="http://www.opendatakit.org/xforms/encrypted"><base64EncryptedKey>AAAA</base64EncryptedKey><encryptedXmlFile>submission.xml.enc</encryptedXmlFile></data>`);
    const res = await h.post(`/v1/projects/${h.projectId}/submission`, { as: device, body, headers: { 'X-OpenRosa-Version': '1.0', 'Content-Type': type } });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('instanceId (required for encrypted submissions)');
  });
});

describe('client audit logs', () => {
  test('encrypted audit.csv files become `<form> - audit.csv` when decrypted, and stay out of media', async () => {
    const h = await harness();
    const enabled = await json(await h.post(`/v1/projects/${h.projectId}/key`, { as: 'bob', body: { passphrase: SECRET } }));
    await publishForm(h, fixture('forms/clientAudits.xml'));
    const au = await appUserFor(h, 'audits', 'Phone');
    const { publicKey, version } = formKeyAndVersion(await (await h.get(`/v1/projects/${h.projectId}/forms/audits.xml`, { as: 'bob' })).text());
    for (const [instance, csv] of [['one', 'central-misc/audit.csv'], ['two', 'central-misc/audit2.csv']] as const) {
      const xml = fixture(`submissions/clientAudits.${instance}.xml`).replace('<data id="audits">', `<data id="audits" version="${version}">`);
      const enc = encryptSubmission({ publicKey, xmlFormId: 'audits', version, instanceId: instance, xml, media: [{ name: 'audit.csv', bytes: fixtureBytes(csv) }] });
      await submitOpenRosa(h, { key: au.token }, enc.envelope, { files: enc.files });
    }
    const files = await zipFiles(await h.get(`/v1/projects/${h.projectId}/forms/audits/submissions.csv.zip?${enabled.keyId}=${SECRET}`, { as: 'bob' }));
    expect([...files.keys()]).toEqual(['audits.csv', 'audits - audit.csv']);
    expect(text(files.get('audits - audit.csv'))).toBe(`instance ID,event,node,start,end,latitude,longitude,accuracy,old-value,new-value,user,change-reason
one,a,/data/a,2000-01-01T00:01,2000-01-01T00:02,1,2,3,aa,bb,,
one,b,/data/b,2000-01-01T00:02,2000-01-01T00:03,4,5,6,cc,dd,,
one,c,/data/c,2000-01-01T00:03,2000-01-01T00:04,7,8,9,ee,ff,,
one,d,/data/d,2000-01-01T00:10,,10,11,12,gg,,,
one,e,/data/e,2000-01-01T00:11,,,,,hh,ii,,
two,f,/data/f,2000-01-01T00:04,2000-01-01T00:05,-1,-2,,aa,bb,,
two,g,/data/g,2000-01-01T00:05,2000-01-01T00:06,-3,-4,,cc,dd,,
two,h,/data/h,2000-01-01T00:06,2000-01-01T00:07,-5,-6,,ee,ff,,
`);
    expect(parseCsv(text(files.get('audits.csv'))).map((r) => r[3])).toEqual(['name', 'Bob', 'Alice']);
    // without the passphrase there is no audit entry
    const sealed = await zipFiles(await h.get(`/v1/projects/${h.projectId}/forms/audits/submissions.csv.zip`, { as: 'bob' }));
    expect([...sealed.keys()]).toEqual(['audits.csv']);
  });
});

describe('self-supplied keys', () => {
  test('the fixture submission (Collect, central-misc key) is stored and listed, never decrypted, even with a passphrase for its key id', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/encrypted.xml'));
    const res = await h.post(`/v1/projects/${h.projectId}/forms/encrypted/submissions`, { as: 'bob', body: fixture('submissions/encrypted.two.xml'), headers: { 'Content-Type': 'application/xml' } });
    expect(res.status).toBe(200);
    const up = await h.post(`/v1/projects/${h.projectId}/forms/encrypted/submissions/uuid:99b303d9-6494-477b-a30d-d8aae8867335/attachments/submission.xml.enc`, {
      as: 'bob', body: fixtureBytes('encryption/encrypted.two.submission.xml.enc'), headers: { 'Content-Type': 'application/octet-stream' },
    });
    expect(up.status).toBe(200);
    const keys = await json(await h.get(`/v1/projects/${h.projectId}/forms/encrypted/submissions/keys`, { as: 'bob' }));
    expect(keys).toEqual([{ id: expect.any(Number), public: expect.stringMatching(/^MIIBIjAN/), managed: null, hint: null, createdAt: expect.stringMatching(ISO_MS_UTC) }]);
    const files = await zipFiles(await h.get(`/v1/projects/${h.projectId}/forms/encrypted/submissions.csv.zip?${keys[0].id}=anything-at-all`, { as: 'bob' }));
    expect([...files.keys()]).toEqual(['encrypted.csv']);
    const rows = parseCsv(text(files.get('encrypted.csv')));
    expect(rows[1]!.slice(-7, -4)).toEqual(['1', '2', 'not decrypted']);
  });
});
