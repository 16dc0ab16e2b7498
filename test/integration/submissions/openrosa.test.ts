import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { and, eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { blobs, submissionAttachments, submissionDefs, submissions } from '../../../drizzle/schema';
import { harness, json, type Harness } from '../../helpers/harness';
import { multipart } from '../../helpers/submitting';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const OR = { 'X-OpenRosa-Version': '1.0' };
const md5 = (b: Uint8Array | string) => createHash('md5').update(b).digest('hex');

async function publish(h: Harness, form: string): Promise<void> {
  const res = await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'bob', body: fixture(`forms/${form}.xml`), headers: { 'Content-Type': 'application/xml' } });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function appUserFor(h: Harness, xmlFormId: string): Promise<string> {
  const au = await json<{ id: number; token: string }>(await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName: 'Tablet' } }));
  expect((await h.post(`/v1/projects/${h.projectId}/forms/${xmlFormId}/assignments/app-user/${au.id}`, { as: 'bob' })).status).toBe(200);
  return au.token;
}

async function submit(h: Harness, token: string, xml: string, files: Array<{ name: string; bytes: Uint8Array; type: string }> = []) {
  const { body, type } = multipart(xml, files);
  return h.post(`/v1/projects/${h.projectId}/submission?deviceID=collect%3Atest`, { as: { key: token }, body, headers: { ...OR, 'Content-Type': type } });
}

const messageOf = async (res: Response) => /<message nature="([^"]*)">([\s\S]*?)<\/message>/.exec(await res.text());

describe('POST P/submission (OpenRosa)', () => {
  test('an App User submits: 201 OpenRosaResponse; the XML is stored byte for byte with its values and audit', async () => {
    const h = await harness();
    await publish(h, 'simple');
    const token = await appUserFor(h, 'simple');
    const xml = fixture('submissions/simple.one.xml');
    const res = await submit(h, token, xml);
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toBe('text/xml; charset=utf-8');
    expect(res.headers.get('x-openrosa-version')).toBe('1.0');
    expect(res.headers.get('x-openrosa-accept-content-length')).toBe('100000000');
    const m = await messageOf(res);
    expect(m?.[1]).toBe('');
    expect(m?.[2]).toBe('full submission upload was successful!');
    const [row] = await h.db.select().from(submissions).where(eq(submissions.instanceId, 'one'));
    expect(row).toMatchObject({ reviewState: null, deviceId: 'collect:test', draft: false });
    const [def] = await h.db.select().from(submissionDefs).where(eq(submissionDefs.submissionId, row!.id));
    expect(def!.xml).toBe(xml);
    expect(def!.md5).toBe(md5(xml));
    expect(def!.values.find((v) => v.path === '/age')?.value).toBe('30');
    expect(await h.auditActions()).toContain('submission.create');
  });

  test('rule 1: the same XML again adds media; different XML for the same instanceID is 409.1', async () => {
    const h = await harness();
    await publish(h, 'binaryType');
    const token = await appUserFor(h, 'binaryType');
    const xml = fixture('submissions/binaryType.both.xml');
    const names = [...xml.matchAll(/<file[12]>([^<]+)<\/file[12]>/g)].map((m) => m[1]!);
    expect(names.length).toBe(2);
    const a = { name: names[0]!, bytes: new TextEncoder().encode('first file'), type: 'image/jpeg' };
    const b = { name: names[1]!, bytes: new TextEncoder().encode('second file'), type: 'image/jpeg' };
    expect((await submit(h, token, xml, [a])).status).toBe(201);
    expect((await submit(h, token, xml, [b])).status).toBe(201);
    const rows = await h.db
      .select({ name: submissionAttachments.name, md5: blobs.md5 })
      .from(submissionAttachments)
      .innerJoin(blobs, eq(blobs.id, submissionAttachments.blobId));
    expect(rows.map((r) => r.md5).sort()).toEqual([md5('first file'), md5('second file')].sort());
    expect((await h.db.select().from(submissions)).filter((s) => s.instanceId === /<instanceID>([^<]+)</.exec(xml)![1])).toHaveLength(1);
    const conflict = await submit(h, token, xml.replace('</data>', '<!-- changed --></data>'));
    expect(conflict.status).toBe(409);
    expect((await messageOf(conflict))?.[2]).toContain('different XML');
  });

  test('rule 2: an edit with deprecatedID makes a new current version; editing the old one again is 409.9', async () => {
    const h = await harness();
    await publish(h, 'simple');
    const token = await appUserFor(h, 'simple');
    const one = fixture('submissions/simple.one.xml');
    expect((await submit(h, token, one)).status).toBe(201);
    const edit = one.replace('<instanceID>one</instanceID>', '<deprecatedID>one</deprecatedID><instanceID>one-edit</instanceID>').replace('<age>30</age>', '<age>31</age>');
    expect((await submit(h, token, edit)).status).toBe(201);
    const [sub] = await h.db.select().from(submissions).where(eq(submissions.instanceId, 'one'));
    expect(sub!.reviewState).toBe('edited');
    const defs = await h.db.select().from(submissionDefs).where(eq(submissionDefs.submissionId, sub!.id));
    expect(defs.map((d) => [d.instanceId, d.current]).sort()).toEqual([['one', false], ['one-edit', true]]);
    const again = one.replace('<instanceID>one</instanceID>', '<deprecatedID>one</deprecatedID><instanceID>one-edit2</instanceID>');
    expect((await submit(h, token, again)).status).toBe(409);
    const ghost = one.replace('<instanceID>one</instanceID>', '<deprecatedID>ghost</deprecatedID><instanceID>x</instanceID>');
    expect((await submit(h, token, ghost)).status).toBe(404);
    expect(await h.auditActions()).toContain('submission.update.version');
  });

  test('errors as Central: unknown version 404.6, closed form 409.2, not assigned 401, no XML part 400.7, not multipart 400.39, missing header 400', async () => {
    const h = await harness();
    await publish(h, 'simple');
    const token = await appUserFor(h, 'simple');
    const one = fixture('submissions/simple.one.xml');
    const v = await submit(h, token, one.replace('id="simple"', 'id="simple" version="9.9"'));
    expect(v.status).toBe(404);
    expect((await messageOf(v))?.[2]).toContain("'9.9' does not exist");
    await publish(h, 'withrepeat');
    expect((await submit(h, token, fixture('submissions/withrepeat.one.xml'))).status).toBe(401);
    expect((await h.patch(`/v1/projects/${h.projectId}/forms/simple`, { as: 'bob', body: { state: 'closed' } })).status).toBe(200);
    expect((await submit(h, token, one)).status).toBe(409);
    await h.patch(`/v1/projects/${h.projectId}/forms/simple`, { as: 'bob', body: { state: 'closing' } });
    expect((await submit(h, token, one)).status).toBe(201);
    const { type } = multipart(one);
    const empty = await h.post(`/v1/projects/${h.projectId}/submission`, {
      as: { key: token }, body: `--${type.split('boundary=')[1]}--\r\n`, headers: { ...OR, 'Content-Type': type },
    });
    expect(empty.status).toBe(400);
    expect((await messageOf(empty))?.[2]).toBe('Required multipart POST field xml_submission_file missing.');
    expect((await h.post(`/v1/projects/${h.projectId}/submission`, { as: { key: token }, body: one, headers: { ...OR, 'Content-Type': 'text/xml' } })).status).toBe(400);
    const again = multipart(one);
    expect((await h.post(`/v1/projects/${h.projectId}/submission`, { as: { key: token }, body: again.body, headers: { 'Content-Type': again.type } })).status).toBe(400);
    expect((await h.post(`/v1/projects/${h.projectId}/submission`, { body: again.body, headers: { ...OR, 'Content-Type': again.type } })).status).toBe(401);
  });

  test('a failed submission leaves no rows and no blobs; HEAD preflight advertises the accepted length', async () => {
    const h = await harness();
    await publish(h, 'binaryType');
    const token = await appUserFor(h, 'binaryType');
    const xml = fixture('submissions/binaryType.both.xml');
    const name = /<file1>([^<]+)<\/file1>/.exec(xml)![1]!;
    const unique = new TextEncoder().encode(`bytes ${Math.random()}`);
    // A version the form does not have: refused after the media were read.
    const res = await submit(h, token, xml.replace(/id="binaryType"/, 'id="binaryType" version="nope"'), [{ name, bytes: unique, type: 'image/jpeg' }]);
    expect(res.status).toBe(404);
    expect(await h.db.select().from(submissions)).toEqual([]);
    expect(await h.db.select().from(blobs).where(eq(blobs.md5, md5(unique)))).toEqual([]);
    const head = await h.request('HEAD', `/v1/projects/${h.projectId}/submission`, { as: { key: token }, headers: OR });
    expect(head.status).toBe(204);
    expect(head.headers.get('x-openrosa-accept-content-length')).toBe('100000000');
  });

  test('Draft Token submission goes to the draft and keeps published data apart', async () => {
    const h = await harness();
    await h.post(`/v1/projects/${h.projectId}/forms`, { as: 'bob', body: fixture('forms/simple.xml'), headers: { 'Content-Type': 'application/xml' } });
    const { draftToken } = await json<{ draftToken: string }>(await h.get(`/v1/projects/${h.projectId}/forms/simple/draft`, { as: 'bob' }));
    const { body, type } = multipart(fixture('submissions/simple.one.xml'));
    const res = await h.post(`/v1/test/${draftToken}/projects/${h.projectId}/forms/simple/draft/submission`, { body, headers: { ...OR, 'Content-Type': type } });
    expect(res.status).toBe(201);
    const [row] = await h.db.select().from(submissions).where(and(eq(submissions.instanceId, 'one'), eq(submissions.draft, true)));
    expect(row).toBeDefined();
    const bad = await h.post(`/v1/test/${'x'.repeat(64)}/projects/${h.projectId}/forms/simple/draft/submission`, { body, headers: { ...OR, 'Content-Type': type } });
    expect(bad.status).toBe(404);
  });
});

describe('purging a form takes its submissions and their files', () => {
  test('purge --force removes submissions, versions, attachments and their unshared blobs', async () => {
    const h = await harness();
    await publish(h, 'binaryType');
    const token = await appUserFor(h, 'binaryType');
    const xml = fixture('submissions/binaryType.both.xml');
    const name = /<file1>([^<]+)<\/file1>/.exec(xml)![1]!;
    const bytes = new TextEncoder().encode(`purge me ${Math.random()}`);
    expect((await submit(h, token, xml, [{ name, bytes, type: 'image/jpeg' }])).status).toBe(201);
    const [blob] = await h.db.select().from(blobs).where(eq(blobs.md5, md5(bytes)));
    expect(await h.deps.blobs.has(blob!.sha)).toBe(true);
    expect((await h.delete(`/v1/projects/${h.projectId}/forms/binaryType`, { as: 'bob' })).status).toBe(200);
    const { purgeForms } = await import('../../../lib/forms');
    const { systemCtx } = await import('../../../lib/context');
    expect(await purgeForms(systemCtx(h.deps), { force: true })).toHaveLength(1);
    expect(await h.db.select().from(submissions)).toEqual([]);
    expect(await h.db.select().from(submissionDefs)).toEqual([]);
    expect(await h.db.select().from(blobs).where(eq(blobs.md5, md5(bytes)))).toEqual([]);
    expect(await h.deps.blobs.has(blob!.sha)).toBe(false);
  });
});

describe('bad input stores nothing', () => {
  test('odd or long instanceIDs 400, a media name with a path 400, over the limit 413', async () => {
    const h = await harness({ MAX_UPLOAD_BYTES: 20_000 });
    await publish(h, 'binaryType');
    const token = await appUserFor(h, 'binaryType');
    const xml = fixture('submissions/binaryType.both.xml');
    const id = /<instanceID>([^<]+)</.exec(xml)![1]!;
    expect((await submit(h, token, xml.replace(id, 'x'.repeat(65)))).status).toBe(400);
    expect((await submit(h, token, xml.replace(id, 'bad id/with slash'))).status).toBe(400);
    const withPath = await submit(h, token, xml, [{ name: '../../etc/passwd', bytes: new TextEncoder().encode('x'), type: 'text/plain' }]);
    expect(withPath.status).toBe(400);
    const big = await submit(h, token, xml, [{ name: 'big.jpg', bytes: new Uint8Array(25_000), type: 'image/jpeg' }]);
    expect(big.status).toBe(413);
    expect(big.headers.get('content-type')).toBe('text/xml; charset=utf-8');
    expect(await h.db.select().from(submissions)).toEqual([]);
  });
});

describe('X-OpenRosa-Accept-Content-Length follows MAX_UPLOAD_BYTES', () => {
  test('the HEAD preflight advertises the configured limit', async () => {
    const h = await harness({ MAX_UPLOAD_BYTES: 5_000_000 });
    await publish(h, 'simple');
    const token = await appUserFor(h, 'simple');
    const head = await h.request('HEAD', `/v1/projects/${h.projectId}/submission`, { as: { key: token }, headers: OR });
    expect(head.headers.get('x-openrosa-accept-content-length')).toBe('5000000');
  });
});

describe('bad input: each gets a clear OpenRosa error and stores nothing', () => {
  const stored = async (h: Harness) => (await h.db.select().from(submissions)).length;
  const nature = async (res: Response) => (await messageOf(res))?.[1];

  test('malformed, truncated, DOCTYPE, no form id, an unknown form id', async () => {
    const h = await harness();
    await publish(h, 'simple');
    const token = await appUserFor(h, 'simple');
    const one = fixture('submissions/simple.one.xml');
    const cases: Array<[string, string, number]> = [
      ['malformed', one.replace('</name>', '</nam>'), 400],
      ['truncated', one.slice(0, Math.floor(one.length / 2)), 400],
      ['DOCTYPE', `<?xml version="1.0"?><!DOCTYPE data [<!ENTITY a "aaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>${one.replace(/^<\?xml[^>]*>/, '')}`, 400],
      ['no form id', one.replace('id="simple"', ''), 400],
      ['not XML', 'hello, server', 400],
      ['unknown form', one.replace('id="simple"', 'id="no_such_form"'), 404],
    ];
    for (const [what, xml, status] of cases) {
      const res = await submit(h, token, xml);
      expect(res.status, what).toBe(status);
      expect(res.headers.get('content-type'), what).toBe('text/xml; charset=utf-8');
      expect(await nature(res), what).toBe('error');
    }
    expect(await stored(h)).toBe(0);
  });

  test('no instanceID: accepted under a generated uuid as Central (KoBoCAT-era devices); encrypted without one is 400.2', async () => {
    const h = await harness();
    await publish(h, 'simple');
    const token = await appUserFor(h, 'simple');
    const bare = fixture('submissions/simple.one.xml').replace(/<meta>[\s\S]*<\/meta>/, '');
    expect(bare).not.toContain('instanceID');
    expect((await submit(h, token, bare)).status).toBe(201);
    const [row] = await h.db.select().from(submissions);
    expect(row!.instanceId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    await publish(h, 'encrypted');
    await h.post(`/v1/projects/${h.projectId}/forms/encrypted/assignments/app-user/${(await h.db.select().from(submissions))[0]!.submitterId}`, { as: 'bob' });
    const enc = fixture('submissions/encrypted.one.xml').replace(/<orx:meta[\s\S]*?<\/orx:meta>/, '');
    expect(enc).not.toContain('instanceID');
    const res = await submit(h, token, enc);
    expect(res.status).toBe(400);
    expect((await messageOf(res))?.[2]).toContain('instanceId');
    expect(await stored(h)).toBe(1);
  });

  test('more than 1000 parts is 400; a chunked body over the limit is 413 before it is buffered', async () => {
    const h = await harness({ MAX_UPLOAD_BYTES: 200_000 });
    await publish(h, 'simple');
    const token = await appUserFor(h, 'simple');
    const xml = fixture('submissions/simple.one.xml');
    const many = multipart(xml, Array.from({ length: 1001 }, (_, i) => ({ name: `f${i}.txt`, bytes: new Uint8Array([65]), type: 'text/plain' })));
    const res = await h.post(`/v1/projects/${h.projectId}/submission`, { as: { key: token }, body: many.body, headers: { ...OR, 'Content-Type': many.type } });
    // A body the multipart reader refuses is answered as JSON (400.39), as Central's parser does.
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ code: 400.39, message: 'Multipart form content failed to parse.', details: 'more than 1000 parts' });

    const base = await h.listen();
    const { body, type } = multipart(xml, [{ name: 'big.jpg', bytes: new Uint8Array(300_000), type: 'image/jpeg' }]);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(ctrl) {
        if (sent >= body.byteLength) return ctrl.close();
        ctrl.enqueue(body.subarray(sent, sent + 16_384));
        sent += 16_384;
      },
    });
    const big = await fetch(`${base}/v1/key/${token}/projects/${h.projectId}/submission`, {
      method: 'POST', body: stream, headers: { ...OR, 'Content-Type': type }, duplex: 'half',
    } as RequestInit);
    expect(big.status).toBe(413);
    expect(await nature(big)).toBe('error');
    expect(await stored(h)).toBe(0);
  });
});
