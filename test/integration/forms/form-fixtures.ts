/**
 * Shared helpers for the Forms integration tests (forms, drafts, attachments, trash): the real
 * fixture files from /work/shared and Central's recorded outputs, plus small request helpers.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { json, type As, type Harness } from '../../helpers/harness';
import type { FixtureUser } from '../../fixtures/users';

const shared = new URL('../../../../shared/', import.meta.url);

/** Bytes of a file under /work/shared/fixtures/. */
export const fixtureBytes = (path: string): Uint8Array => new Uint8Array(readFileSync(new URL(`fixtures/${path}`, shared)));
/** Text of a file under /work/shared/fixtures/. */
export const fixtureText = (path: string): string => readFileSync(new URL(`fixtures/${path}`, shared), 'utf8');
/** A fixture form's XML text (/work/shared/fixtures/forms/<name>.xml). */
export const formXml = (name: string): string => fixtureText(`forms/${name}.xml`);
/** A recorded Central JSON output (central-outputs/<form>/api/<file>.json). */
export const centralApi = <T = unknown>(form: string, file: string): T =>
  JSON.parse(fixtureText(`central-outputs/${form}/api/${file}.json`)) as T;

/** A recorded Central error (central-outputs/_errors/<slug>.json): status and the parsed body. */
export function centralError(slug: string): { status: number; body: Record<string, unknown> } {
  const rec = JSON.parse(fixtureText(`central-outputs/_errors/${slug}.json`)) as { status: number; body: string };
  return { status: rec.status, body: JSON.parse(rec.body) as Record<string, unknown> };
}

/** Keys of Form JSON in Central's order (central-outputs/simple/api/form.json). */
export const formKeys = Object.keys(centralApi<Record<string, unknown>>('simple', 'form'));
/** Keys of single-form extended JSON in Central's order (form-extended.json). */
export const formExtendedKeys = Object.keys(centralApi<Record<string, unknown>>('simple', 'form-extended'));
/** Keys of an Actor in Central's order (createdBy in form-extended.json). */
export const actorKeys = Object.keys(centralApi<{ createdBy: Record<string, unknown> }>('simple', 'form-extended').createdBy);
/** Keys of a Form Attachment in Central's order (withAttachments/api/form-attachments.json). */
export const attachmentKeys = Object.keys(centralApi<Array<Record<string, unknown>>>('withAttachments', 'form-attachments')[0]!);

export const isoPattern = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
export const xmlHeaders = { 'Content-Type': 'application/xml' };
export const extended = { 'X-Extended-Metadata': 'true' };

export const md5 = (b: Uint8Array | string) => createHash('md5').update(b).digest('hex');
export const sha1 = (b: Uint8Array | string) => createHash('sha1').update(b).digest('hex');
export const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** P/forms for the harness project. */
export const P = (h: Harness) => `/v1/projects/${h.projectId}`;
/** F for the harness project. */
export const F = (h: Harness, xmlFormId: string) => `/v1/projects/${h.projectId}/forms/${xmlFormId}`;

/** Uploads an XForm to P/forms (as alice unless told) and expects 200; returns the Form JSON. */
export async function createForm(
  h: Harness,
  xml: string | Uint8Array,
  opts: { publish?: boolean; as?: FixtureUser; query?: string } = {},
): Promise<Json> {
  const q = [opts.publish ? 'publish=true' : '', opts.query ?? ''].filter(Boolean).join('&');
  const res = await h.post(`${P(h)}/forms${q ? `?${q}` : ''}`, { as: opts.as ?? 'alice', body: xml, headers: xmlHeaders });
  if (res.status !== 200) throw new Error(`form upload failed: ${res.status} ${await res.text()}`);
  return json(res);
}

/** Replaces/creates the draft of a form (POST F/draft) and expects {success: true}. */
export async function setDraft(h: Harness, xmlFormId: string, xml?: string, query = ''): Promise<void> {
  const res = await h.post(`${F(h, xmlFormId)}/draft${query}`, {
    as: 'alice',
    ...(xml === undefined ? {} : { body: xml, headers: xmlHeaders }),
  });
  if (res.status !== 200) throw new Error(`draft upload failed: ${res.status} ${await res.text()}`);
  expect(await json(res)).toEqual({ success: true });
}

/** Publishes the draft (POST F/draft/publish) and expects {success: true}. */
export async function publish(h: Harness, xmlFormId: string, query = '', headers: Record<string, string> = {}): Promise<void> {
  const res = await h.post(`${F(h, xmlFormId)}/draft/publish${query}`, { as: 'alice', headers });
  if (res.status !== 200) throw new Error(`publish failed: ${res.status} ${await res.text()}`);
  expect(await json(res)).toEqual({ success: true });
}

/** Asserts a Problem response: status, JSON content type, numeric code and a message; returns the body. */
export async function expectProblem(res: Response, code: number): Promise<Json> {
  expect(res.status).toBe(Math.floor(code));
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = await json(res);
  expect(body.code).toBe(code);
  expect(typeof body.message).toBe('string');
  return body;
}

/** Asserts a response equals Central's recorded error byte for byte (status, parsed body with key order). */
export async function expectCentralError(res: Response, slug: string, body?: Record<string, unknown>): Promise<void> {
  const expected = centralError(slug);
  expect(res.status).toBe(expected.status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const got = await json(res);
  const want = body ?? expected.body;
  expect(got).toEqual(want);
  expect(JSON.stringify(got)).toBe(JSON.stringify(want));
}

/** simple.xml edited: no `age` field (a Structure Change). */
export const simpleWithoutAge = () =>
  formXml('simple')
    .replace(/\s*<age\/>/, '')
    .replace(/\s*<bind nodeset="\/data\/age"[^>]*\/>/, '')
    .replace(/\s*<input ref="\/data\/age">[\s\S]*?<\/input>/, '');

/** simple.xml edited: a version attribute on the root. */
export const simpleVersioned = (version: string) => formXml('simple').replace('<data id="simple">', `<data id="simple" version="${version}">`);

/** withAttachments.xml with another xmlFormId (same expected attachments). */
export const withAttachmentsAs = (xmlFormId: string) => formXml('withAttachments').replace('<data id="withAttachments">', `<data id="${xmlFormId}">`);

/** An attachment file of the withAttachments capture (goodone.csv, goodtwo.mp3). */
export const attachmentFile = (name: string) => fixtureBytes(`central-outputs/withAttachments/inputs/form-attachments/${name}`);

/** The spreadsheet Content-Types (central-api.yaml, POST P/forms). */
export const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
export const XLS = 'application/vnd.ms-excel';

/** POSTs spreadsheet bytes (default .xlsx, as alice), with X-XlsForm-FormId-Fallback when given. */
export function postSpreadsheet(h: Harness, path: string, bytes: Uint8Array, opts: { type?: string; fallback?: string; as?: As } = {}) {
  return h.post(path, {
    as: opts.as ?? 'alice',
    body: bytes,
    headers: { 'Content-Type': opts.type ?? XLSX, ...(opts.fallback == null ? {} : { 'X-XlsForm-FormId-Fallback': opts.fallback }) },
  });
}

/** POST P/forms with a spreadsheet; expects 200 and returns the Form JSON. */
export async function uploadSpreadsheet(h: Harness, bytes: Uint8Array, opts: { type?: string; fallback?: string; query?: string } = {}): Promise<Json> {
  const res = await postSpreadsheet(h, `${P(h)}/forms${opts.query ?? ''}`, bytes, opts);
  expect(res.status, await res.clone().text()).toBe(200);
  return json(res);
}
