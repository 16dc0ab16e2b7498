/**
 * Enketo ids as Central requests them (lib/enketo, lib/forms/enketo.ts), against a real Enketo-like
 * HTTP server on loopback (this file's stub: it records each request and answers as Enketo's API
 * v2 does, or fails when told to).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { and, eq, isNull } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { forms, jobs } from '../../../drizzle/schema';
import { systemCtx } from '../../../lib/context';
import { runJobs } from '../../../lib/jobs';
import { harness, json, type Harness } from '../../helpers/harness';
import { createForm, F, formXml, publish } from './form-fixtures';

interface Seen { path: string; form: Record<string, string>; authorization: string | undefined; cookie: string | undefined }

let server: Server;
let base = '';
const seen: Seen[] = [];
/** What the stub answers next: ids to hand out, or a failure status. */
let mode: { fail?: number } = {};
let counter = 0;

const body = (req: IncomingMessage) => new Promise<string>((resolve) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
});

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const text = await body(req);
    seen.push({ path: req.url ?? '', form: Object.fromEntries(new URLSearchParams(text)), authorization: req.headers.authorization, cookie: req.headers.cookie });
    if (mode.fail) {
      res.writeHead(mode.fail, { 'Content-Type': 'application/json' });
      res.end('{"message":"nope"}');
      return;
    }
    counter += 1;
    res.writeHead(201, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ enketo_id: `id${counter}`, single_once_url: `https://enketo.example/single/once${counter}` }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/-`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const withEnketo = () => harness({ ENKETO_URL: base, ENKETO_API_KEY: 'secret key', PUBLIC_URL: 'https://forms.example.org' });
const reset = (m: { fail?: number } = {}) => { seen.length = 0; mode = m; };
const row = async (h: Harness, id: string) => (await h.db.select().from(forms).where(eq(forms.xmlFormId, id)))[0]!;

describe('Enketo configured (ENKETO_URL, ENKETO_API_KEY)', () => {
  test('a new draft asks for its id with the Draft Token URL; publishing asks for the form ids with a session that reads only that form', async () => {
    const h = await withEnketo();
    reset();
    const created = await createForm(h, formXml('simple'));
    expect(seen).toHaveLength(1);
    const token = (created as { draftToken: string }).draftToken;
    expect(seen[0]).toMatchObject({
      path: '/-/api/v2/survey/all',
      form: { server_url: `https://forms.example.org/v1/test/${token}/projects/${h.projectId}/forms/simple/draft`, form_id: 'simple' },
      authorization: `Basic ${Buffer.from('secret key:').toString('base64')}`,
      cookie: '__Host-session=undefined',
    });
    const draft = await json(await h.get(`${F(h, 'simple')}/draft`, { as: 'alice' })) as Record<string, unknown>;
    expect(draft.enketoId).toBe(`id${counter}`);
    expect(draft.enketoOnceId).toBeNull();

    reset();
    await publish(h, 'simple');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.form).toEqual({ server_url: `https://forms.example.org/v1/projects/${h.projectId}`, form_id: 'simple' });
    // Enketo pulls the form with a session that reads this form and nothing else.
    const session = /^__Host-session=([A-Za-z0-9!$]{64})$/.exec(seen[0]!.cookie ?? '')![1]!;
    expect((await h.get(`${F(h, 'simple')}.xml`, { as: { bearer: session } })).status).toBe(200);
    expect((await h.get(`/v1/projects/${h.projectId}/forms`, { as: { bearer: session } })).status).toBe(403);
    const form = await json(await h.get(F(h, 'simple'), { as: 'alice' })) as Record<string, unknown>;
    expect(form).toMatchObject({ enketoId: `id${counter}`, enketoOnceId: `once${counter}` });

    // A new draft gets a new id; republishing keeps the form's ids and asks nothing.
    reset();
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'alice' })).status).toBe(200);
    expect(seen).toHaveLength(1);
    await publish(h, 'simple', '?version=2');
    expect(seen).toHaveLength(1);
    expect(await json(await h.get(F(h, 'simple'), { as: 'alice' }))).toMatchObject({ enketoId: form.enketoId, enketoOnceId: form.enketoOnceId });
  });

  test('Enketo failing: the request still succeeds without ids and the background job asks again', async () => {
    const h = await withEnketo();
    reset({ fail: 500 });
    const res = await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'alice', body: formXml('simple'), headers: { 'Content-Type': 'application/xml' } });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ enketoId: null, enketoOnceId: null });
    expect(seen).toHaveLength(2); // the draft's id (as Central asks even when publishing at once), then the form's
    const form = await row(h, 'simple');
    const pending = await h.db.select().from(jobs).where(and(eq(jobs.action, 'enketo.publish'), isNull(jobs.doneAt)));
    expect(pending.map((j) => j.payload.formId)).toEqual([form.id]);

    reset();
    expect(await runJobs(systemCtx(h.deps), pending.map((j) => j.id))).toBe(1);
    expect(seen).toHaveLength(1);
    expect(await json(await h.get(F(h, 'simple'), { as: 'alice' }))).toMatchObject({ enketoId: `id${counter}`, enketoOnceId: `once${counter}` });
  });
});

describe('no Enketo configured', () => {
  test('nothing is asked; a published form gets ids drawn here (Web Forms), a draft none', async () => {
    const h = await harness();
    reset();
    await createForm(h, formXml('simple'));
    expect((await json(await h.get(`${F(h, 'simple')}/draft`, { as: 'alice' })) as Record<string, unknown>).enketoId).toBeNull();
    await publish(h, 'simple');
    const form = await json(await h.get(F(h, 'simple'), { as: 'alice' })) as Record<string, string>;
    expect(form.enketoId).toMatch(/^[A-Za-z0-9]{16}$/);
    expect(form.enketoOnceId).toMatch(/^[A-Za-z0-9]{64}$/);
    expect(seen).toHaveLength(0);
  });
});
