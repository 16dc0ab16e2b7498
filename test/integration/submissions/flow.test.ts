/**
 * The submission flow end to end, as ODK Collect and then a staff user make it, over a real socket
 * (h.listen(), global fetch): formList → form download (hash checked) → HEAD preflight → a
 * submission with two photos split over two POSTs (one multipart body built by hand, one by
 * FormData) → an edit with deprecatedID (no files: media carried over by name) → the manager lists,
 * reads, reviews, comments on and downloads the attachments of that submission, and the
 * submission's audit trail shows each step (shared/spec/interface.md: OpenRosa endpoints,
 * Submission rules 1–3, Submissions (REST)).
 */
import { strFromU8, unzipSync } from 'fflate';
import { describe, expect, test } from 'vitest';
import { fixtureUsers } from '../../fixtures/users';
import {
  COLLECT, COLLECT_UA, jpeg, md5, multipart, openRosaMessage, parseXml, PHOTOS_FORM, PHOTOS_FORM_ID, PHOTOS_VERSION,
  photosSubmission, SUBMISSION_OK, XFORMS_LIST,
} from '../../helpers/collect';
import { harness } from '../../helpers/harness';

const BOB = { Authorization: `Bearer ${fixtureUsers.bob.token}` };
const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer());

/** Checks a 201 OpenRosaResponse for a stored submission. */
async function expectAccepted(res: Response): Promise<void> {
  const body = await res.text();
  expect(res.status, body).toBe(201);
  expect(res.headers.get('content-type')).toBe('text/xml; charset=utf-8');
  expect(res.headers.get('x-openrosa-version')).toBe('1.0');
  expect(res.headers.get('x-openrosa-accept-content-length')).toBe('100000000');
  expect(openRosaMessage(body)).toEqual({ nature: '', text: SUBMISSION_OK });
}

describe('Collect submits, edits; a manager reviews (real socket)', () => {
  test('formList → download → two POSTs with one photo each → edit → list, read, review, comment, download, audits', async () => {
    const h = await harness();
    const base = await h.listen();
    const P = `/v1/projects/${h.projectId}`;
    const F = `${P}/forms/${PHOTOS_FORM_ID}`;
    const bob = (path: string, init: RequestInit = {}) =>
      fetch(`${base}${path}`, { ...init, headers: { ...BOB, ...(init.headers as Record<string, string> | undefined) } });
    const bobJson = async <T = any>(path: string, init: RequestInit = {}): Promise<T> => { // eslint-disable-line @typescript-eslint/no-explicit-any
      const res = await bob(path, init);
      const text = await res.text();
      expect(res.status, `${init.method ?? 'GET'} ${path}: ${text}`).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      return JSON.parse(text) as T;
    };
    const jsonInit = (method: string, body: unknown): RequestInit => ({ method, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

    // --- The manager publishes the form and makes an App User for the tablet (over the socket too).
    await bobJson(`${P}/forms?publish=true`, { method: 'POST', headers: { 'Content-Type': 'application/xml' }, body: PHOTOS_FORM });
    const au = await bobJson<{ id: number; token: string; displayName: string }>(`${P}/app-users`, jsonInit('POST', { displayName: 'Tablet 7' }));
    expect(au.token).toMatch(/^[A-Za-z0-9!$]{64}$/);
    await bobJson(`${F}/assignments/app-user/${au.id}`, { method: 'POST' });

    // --- Collect. Its configured server URL is {base}/v1/key/{token}/projects/{id}.
    const server = `${base}/v1/key/${au.token}/projects/${h.projectId}`;
    const listRes = await fetch(`${server}/formList`, { headers: COLLECT });
    const listBody = await listRes.text();
    expect(listRes.status, listBody).toBe(200);
    expect(listRes.headers.get('content-type')).toMatch(/^text\/xml(;|$)/);
    expect(listRes.headers.get('x-openrosa-version')).toBe('1.0');
    const xforms = parseXml(listBody);
    expect([xforms.local, xforms.uri]).toEqual(['xforms', XFORMS_LIST]);
    expect(xforms.children).toHaveLength(1);
    const listed = Object.fromEntries(xforms.children[0]!.children.map((c) => [c.local, c.text]));
    expect(listed).toEqual({
      formID: PHOTOS_FORM_ID, name: 'Two photos', version: PHOTOS_VERSION, hash: `md5:${md5(PHOTOS_FORM)}`,
      downloadUrl: `${server}/forms/${PHOTOS_FORM_ID}.xml`,
    }); // no media expected: no manifestUrl

    const dl = await fetch(listed.downloadUrl!, { headers: COLLECT });
    expect(dl.status).toBe(200);
    const formBytes = await bytesOf(dl);
    expect(`md5:${md5(formBytes)}`).toBe(listed.hash);
    expect(new TextDecoder().decode(formBytes)).toBe(PHOTOS_FORM);

    const head = await fetch(`${server}/submission`, { method: 'HEAD', headers: COLLECT });
    expect(head.status).toBe(204);
    expect(head.headers.get('x-openrosa-accept-content-length')).toBe('100000000');
    expect(head.headers.get('x-openrosa-version')).toBe('1.0');

    // --- Submit: the XML names two photos; Collect sends them over two POSTs (rule 1).
    const instanceId = 'uuid:6d1b4c7e-2f0a-4a8e-9c55-0d7a3b9e1f21';
    const front = { name: '1718182933211.jpg', bytes: jpeg(1), type: 'image/jpeg' };
    const back = { name: '1718182957842.jpg', bytes: jpeg(2, 61 * 1024 + 7), type: 'image/jpeg' };
    const xml = photosSubmission({ instanceId, site: 'North gate', front: front.name, back: back.name });
    const submissionUrl = `${server}/submission?deviceID=${encodeURIComponent('collect:R3x9mJw2Qk7Lp0Zt')}`;

    // First POST: a body built by hand (CRLF boundaries), the XML and the first photo.
    const first = multipart(xml, [front]);
    await expectAccepted(await fetch(submissionUrl, { method: 'POST', headers: { ...COLLECT, 'Content-Type': first.type }, body: first.body }));
    const S = `${F}/submissions/${encodeURIComponent(instanceId)}`;
    expect(await bobJson(`${S}/attachments`)).toEqual([{ name: front.name, exists: true }, { name: back.name, exists: false }]);

    // Second POST: identical XML, the second photo; the body made by fetch from a FormData.
    const form = new FormData();
    form.append('xml_submission_file', new Blob([xml], { type: 'text/xml' }), 'submission.xml');
    form.append(back.name, new Blob([back.bytes], { type: back.type }), back.name);
    await expectAccepted(await fetch(submissionUrl, { method: 'POST', headers: COLLECT, body: form }));
    expect(await bobJson(`${S}/attachments`)).toEqual([{ name: front.name, exists: true }, { name: back.name, exists: true }]);

    // --- Edit (rule 2): deprecatedID names the version edited, a new instanceID; no files sent.
    const editId = 'uuid:0b8e5f43-91d2-4c67-b1a0-6e2f4d8c7a35';
    const editXml = photosSubmission({ instanceId: editId, deprecatedId: instanceId, site: 'South gate', front: front.name, back: back.name });
    const edit = multipart(editXml);
    await expectAccepted(await fetch(submissionUrl, { method: 'POST', headers: { ...COLLECT, 'Content-Type': edit.type }, body: edit.body }));

    // --- The manager: list, read, review, comment, download.
    const subs = await bobJson<Array<Record<string, any>>>(`${F}/submissions`); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(subs).toHaveLength(1);
    expect(subs[0]).toMatchObject({
      instanceId, submitterId: au.id, deviceId: 'collect:R3x9mJw2Qk7Lp0Zt', userAgent: COLLECT_UA, reviewState: 'edited', deletedAt: null,
      currentVersion: { instanceId: editId, current: true, submitterId: au.id, deviceId: 'collect:R3x9mJw2Qk7Lp0Zt', userAgent: COLLECT_UA, instanceName: null },
    });

    const one = await bobJson(S);
    expect(one).toEqual(subs[0]);
    // The edit's instanceID is a version, not a submission: Central's 301 to that version.
    const moved = await bob(`${F}/submissions/${encodeURIComponent(editId)}`, { redirect: 'manual' });
    expect(moved.status).toBe(301);
    expect(moved.headers.get('location')).toBe(`${S}/versions/${encodeURIComponent(editId)}`);

    const xmlRes = await bob(`${F}/submissions/${encodeURIComponent(instanceId)}.xml`);
    expect(xmlRes.status).toBe(200);
    expect(xmlRes.headers.get('content-type')).toBe('application/xml; charset=utf-8');
    expect(Buffer.from(await bytesOf(xmlRes)).equals(Buffer.from(editXml, 'utf8'))).toBe(true);

    const reviewed = await bobJson(S, jsonInit('PATCH', { reviewState: 'approved' }));
    expect(reviewed).toMatchObject({ instanceId, reviewState: 'approved', submitterId: au.id });
    const comment = await bobJson(`${S}/comments`, jsonInit('POST', { body: 'Front photo is blurry; kept anyway.' }));
    expect(comment).toEqual({ body: 'Front photo is blurry; kept anyway.', actorId: h.ids.bob, createdAt: expect.any(String) });
    expect(await bobJson(`${S}/comments`)).toEqual([comment]);
    expect((await bobJson(S)).reviewState).toBe('approved');

    // Both photos were carried over to the edit by name; each downloads byte for byte, with ETag/304.
    expect(await bobJson(`${S}/attachments`)).toEqual([{ name: front.name, exists: true }, { name: back.name, exists: true }]);
    for (const photo of [front, back]) {
      const url = `${S}/attachments/${encodeURIComponent(photo.name)}`;
      const res = await bob(url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/jpeg');
      // Central shows JPEG, PNG and GIF submission attachments inline (lib/util/blob.js); other types download.
      expect(res.headers.get('content-disposition')).toBe(`inline; filename="${photo.name}"; filename*=UTF-8''${photo.name}`);
      const etag = res.headers.get('etag');
      expect(etag).toBe(`"${md5(photo.bytes)}"`);
      expect(Buffer.from(await bytesOf(res)).equals(Buffer.from(photo.bytes))).toBe(true);
      const again = await bob(url, { headers: { 'If-None-Match': etag! } });
      expect(again.status).toBe(304);
      expect(again.headers.get('etag')).toBe(etag);
      expect((await bytesOf(again)).byteLength).toBe(0);
      // The first version holds the same files.
      const old = await bob(`${S}/versions/${encodeURIComponent(instanceId)}/attachments/${encodeURIComponent(photo.name)}`);
      expect(old.status).toBe(200);
      expect(md5(await bytesOf(old))).toBe(md5(photo.bytes));
    }

    const versions = await bobJson<Array<Record<string, unknown>>>(`${S}/versions`);
    expect(versions.map((v) => [v.instanceId, v.current, v.submitterId, v.userAgent])).toEqual([
      [editId, true, au.id, COLLECT_UA],
      [instanceId, false, au.id, COLLECT_UA],
    ]);
    const oldXml = await bob(`${S}/versions/${encodeURIComponent(instanceId)}.xml`);
    expect(await oldXml.text()).toBe(xml);

    const diffs = await bobJson<Record<string, unknown[]>>(`${S}/diffs`);
    expect(Object.keys(diffs)).toEqual([editId]);
    expect(diffs[editId]).toHaveLength(3);
    expect(diffs[editId]).toEqual(expect.arrayContaining([
      { old: 'North gate', new: 'South gate', path: ['site'] },
      { old: instanceId, new: editId, path: ['meta', 'instanceID'] },
      { new: instanceId, path: ['meta', 'deprecatedID'] },
    ]));

    // --- The submission's audit trail, newest first: every step, and nothing else.
    const trail = await bobJson<Array<{ action: string; actorId: number | null; acteeId: string; loggedAt: string }>>(`${S}/audits`);
    expect(trail.map((a) => a.action)).toEqual([
      // One attachment event per photo, each POST's (as Central).
      'comment.create', 'submission.update', 'submission.update.version', 'submission.attachment.update', 'submission.attachment.update', 'submission.create',
    ]);
    expect(trail.map((a) => a.actorId)).toEqual([h.ids.bob, h.ids.bob, au.id, au.id, au.id, au.id]);
    expect(new Set(trail.map((a) => a.acteeId)).size).toBe(1);
    const rows = (await h.audits()).filter((r) => (r.details as { submissionId?: number } | null)?.submissionId != null);
    expect(rows.filter((r) => r.action === 'submission.attachment.update').map((r) => (r.details as { name: string }).name).sort()).toEqual([front.name, back.name].sort());
    const extended = await bobJson<Array<{ actor: { id: number } | null; actee: { xmlFormId: string } }>>(`${S}/audits`, { headers: { 'X-Extended-Metadata': 'true' } });
    expect(extended.map((a) => [a.actor?.id, a.actee.xmlFormId])).toEqual(trail.map((a) => [a.actorId, PHOTOS_FORM_ID]));

    // --- The manager downloads the ZIP export (issue 5, "Done when"): Central's columns, the photos beside the CSV.
    const zipRes = await bob(`${F}/submissions.csv.zip`);
    expect(zipRes.status).toBe(200);
    expect(zipRes.headers.get('content-type')).toBe('application/zip');
    expect(zipRes.headers.get('content-disposition')).toBe(`attachment; filename="${PHOTOS_FORM_ID}.zip"; filename*=UTF-8''${PHOTOS_FORM_ID}.zip`);
    const files = unzipSync(new Uint8Array(await zipRes.arrayBuffer()));
    expect(Object.keys(files)).toEqual([`${PHOTOS_FORM_ID}.csv`, `media/${back.name}`, `media/${front.name}`].sort((a, b) => (a.endsWith('.csv') ? -1 : b.endsWith('.csv') ? 1 : a < b ? -1 : 1)));
    const [header, row, end] = strFromU8(files[`${PHOTOS_FORM_ID}.csv`]!).split('\n');
    expect(header).toBe('SubmissionDate,site,photo_front,photo_back,meta-instanceID,KEY,SubmitterID,SubmitterName,AttachmentsPresent,AttachmentsExpected,Status,ReviewState,DeviceID,Edits,FormVersion');
    expect(row!.split(',').slice(1)).toEqual(['South gate', front.name, back.name, editId, instanceId, String(au.id), au.displayName, '2', '2', '', 'approved', expect.any(String), '1', PHOTOS_VERSION]);
    expect(end).toBe('');
    for (const photo of [front, back]) expect(Buffer.from(files[`media/${photo.name}`]!).equals(Buffer.from(photo.bytes))).toBe(true);
  });
});
