/**
 * Shared by the export and OData tests: fixture files, and OpenRosa submissions as Collect sends
 * them (multipart bodies, App Users assigned to a form, publishing as bob).
 */
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { json, type As, type Harness } from './harness';

const SHARED = new URL('../../../shared/fixtures/', import.meta.url);

/** A shared fixture file as text (`forms/simple.xml`, `central-outputs/simple/submissions.csv`). */
export const fixture = (path: string): string => readFileSync(new URL(path, SHARED), 'utf8');
/** A shared fixture file as bytes. */
export const fixtureBytes = (path: string): Uint8Array => new Uint8Array(readFileSync(new URL(path, SHARED)));

/** What Collect sends with each request. */
export const COLLECT = {
  'X-OpenRosa-Version': '1.0',
  'User-Agent': 'org.odk.collect.android/v2024.3.2 okhttp/4.12.0 Dalvik/2.1.0 (Linux; U; Android 14)',
} as const;
/** A browser User-Agent (an Enketo edit arrives with one). */
export const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';

export interface MultipartFile {
  name: string;
  bytes: Uint8Array;
  type: string;
}

/** A multipart/form-data OpenRosa body: the `xml_submission_file` part, then one part per file. */
export function multipart(xml: string, files: MultipartFile[] = []): { body: Uint8Array; type: string } {
  const boundary = `----fieldbase${Math.random().toString(16).slice(2)}`;
  const enc = new TextEncoder();
  const parts: Uint8Array[] = [];
  const text = (s: string) => parts.push(enc.encode(s));
  text(`--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="submission.xml"\r\nContent-Type: text/xml\r\n\r\n`);
  text(xml);
  text('\r\n');
  for (const f of files) {
    text(`--${boundary}\r\nContent-Disposition: form-data; name="${f.name}"; filename="${f.name}"\r\nContent-Type: ${f.type}\r\n\r\n`);
    parts.push(f.bytes);
    text('\r\n');
  }
  text(`--${boundary}--\r\n`);
  const body = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let o = 0;
  for (const p of parts) {
    body.set(p, o);
    o += p.byteLength;
  }
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

/** Publishes a form from its XForm text (bob, ignoring warnings, as the captures did). */
export async function publishForm(h: Harness, xml: string): Promise<void> {
  const res = await h.post(`/v1/projects/${h.projectId}/forms?ignoreWarnings=true&publish=true`, { as: 'bob', body: xml, headers: { 'Content-Type': 'application/xml' } });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** A new App User of the project named `displayName`, assigned to `xmlFormId`. */
export async function appUserFor(h: Harness, xmlFormId: string, displayName: string): Promise<{ id: number; token: string }> {
  const res = await h.post(`/v1/projects/${h.projectId}/app-users`, { as: 'bob', body: { displayName } });
  expect(res.status).toBe(200);
  const au = await json<{ id: number; token: string }>(res);
  expect((await h.post(`/v1/projects/${h.projectId}/forms/${xmlFormId}/assignments/app-user/${au.id}`, { as: 'bob' })).status).toBe(200);
  return au;
}

/** POST P/submission (OpenRosa multipart) as `as`, with `?deviceID=` when given. */
export async function submitOpenRosa(h: Harness, as: As, xml: string, opts: { deviceId?: string; files?: MultipartFile[]; userAgent?: string } = {}) {
  const { body, type } = multipart(xml, opts.files ?? []);
  const query = opts.deviceId == null ? '' : `?deviceID=${encodeURIComponent(opts.deviceId)}`;
  const headers = { ...COLLECT, 'Content-Type': type, ...(opts.userAgent ? { 'User-Agent': opts.userAgent } : {}) };
  const res = await h.post(`/v1/projects/${h.projectId}/submission${query}`, { as, body, headers });
  expect(res.status, await res.clone().text()).toBe(201);
  return res;
}
