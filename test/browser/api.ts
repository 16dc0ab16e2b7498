/**
 * The API side of the browser tests: plain fetch with a Bearer token from POST /v1/sessions, used
 * to set up what a test starts from (projects, forms, submissions, users) and to check the
 * server-side effect of what was done in the browser.
 */
import { readFileSync } from 'node:fs';

export const FIXTURES = new URL('../../../shared/fixtures/', import.meta.url);

/** A fixture file under /work/shared/fixtures/ (e.g. 'forms/simple.xml'). */
export const fixture = (path: string): string => readFileSync(new URL(path, FIXTURES), 'utf8');

export interface ApiResponse<T = any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

type Body = string | Uint8Array | Record<string, unknown> | unknown[] | undefined;

export class Api {
  constructor(
    readonly base: string,
    readonly token: string | null,
  ) {}

  /** Logs in by POST /v1/sessions (a Bearer session, no cookie). */
  static async login(base: string, email: string, password: string): Promise<Api> {
    const res = await fetch(`${base}/v1/sessions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    if (res.status !== 200) throw new Error(`POST /v1/sessions for ${email}: ${res.status} ${await res.text()}`);
    const { token } = (await res.json()) as { token: string };
    return new Api(base, token);
  }

  /** Any request; `headers` may override the Authorization header (e.g. a cookie instead). */
  async request(method: string, path: string, body?: Body, headers: Record<string, string> = {}): Promise<ApiResponse> {
    const h: Record<string, string> = {};
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    let payload: string | Uint8Array | undefined;
    if (typeof body === 'string') {
      payload = body;
      h['Content-Type'] = body.trimStart().startsWith('<') ? 'application/xml' : 'text/plain';
    } else if (body instanceof Uint8Array) {
      payload = body;
      h['Content-Type'] = 'application/octet-stream';
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      h['Content-Type'] = 'application/json';
    }
    Object.assign(h, headers);
    const res = await fetch(new URL(path, this.base), { method, headers: h, body: payload as BodyInit | undefined });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json')) {
      try {
        parsed = JSON.parse(text);
      } catch {
        /* leave the text */
      }
    }
    return { status: res.status, body: parsed, text, headers: res.headers };
  }

  /** The JSON body of a request that must succeed (2xx), else an error naming the request and answer. */
  async ok<T = any>(method: string, path: string, body?: Body, headers?: Record<string, string>): Promise<T> { // eslint-disable-line @typescript-eslint/no-explicit-any
    const res = await this.request(method, path, body, headers);
    if (res.status < 200 || res.status > 299) throw new Error(`${method} ${path}: ${res.status} ${res.text.slice(0, 500)}`);
    return res.body as T;
  }

  get<T = any>(path: string, headers?: Record<string, string>): Promise<T> { // eslint-disable-line @typescript-eslint/no-explicit-any
    return this.ok<T>('GET', path, undefined, headers);
  }

  post<T = any>(path: string, body?: Body, headers?: Record<string, string>): Promise<T> { // eslint-disable-line @typescript-eslint/no-explicit-any
    return this.ok<T>('POST', path, body, headers);
  }

  // ---- set-up shortcuts ----

  async createProject(name: string): Promise<{ id: number; name: string }> {
    return this.post('/v1/projects', { name });
  }

  /** Uploads an XForm (a fixture path or the XML itself), published unless `draft`. */
  async createForm(projectId: number, xml: string, opts: { draft?: boolean } = {}): Promise<{ xmlFormId: string; name: string | null }> {
    const source = xml.trimStart().startsWith('<') ? xml : fixture(xml);
    return this.post(`/v1/projects/${projectId}/forms${opts.draft ? '' : '?publish=true'}`, source);
  }

  /** Sends a submission through the REST endpoint (as the Bearer user). */
  async submit(projectId: number, xmlFormId: string, xml: string): Promise<{ instanceId: string }> {
    return this.post(`/v1/projects/${projectId}/forms/${encodeURIComponent(xmlFormId)}/submissions`, xml);
  }

  async createAppUser(projectId: number, displayName: string): Promise<{ id: number; token: string; displayName: string }> {
    return this.post(`/v1/projects/${projectId}/app-users`, { displayName });
  }

  async createUser(email: string, password?: string, displayName?: string): Promise<{ id: number; email: string; displayName: string }> {
    const user = await this.post<{ id: number; email: string; displayName: string }>('/v1/users', { email, ...(password ? { password } : {}) });
    if (displayName) return this.ok('PATCH', `/v1/users/${user.id}`, { displayName });
    return user;
  }

  /**
   * Sends a submission as a device does: OpenRosa multipart POST to the App User's key URL
   * (`/v1/key/{token}/projects/{id}/submission`), the XML as `xml_submission_file` and each file as
   * its own part. Answers the status and body (201 expected).
   */
  async openRosaSubmit(projectId: number, token: string, xml: string, files: Array<{ name: string; bytes: Uint8Array; type?: string }> = []): Promise<ApiResponse> {
    const form = new FormData();
    form.append('xml_submission_file', new Blob([xml], { type: 'text/xml' }), 'submission.xml');
    for (const f of files) form.append(f.name, new Blob([f.bytes as Uint8Array<ArrayBuffer>], { type: f.type ?? 'application/octet-stream' }), f.name);
    const res = await fetch(new URL(`/v1/key/${token}/projects/${projectId}/submission`, this.base), {
      method: 'POST',
      headers: { 'X-OpenRosa-Version': '1.0' },
      body: form,
    });
    return { status: res.status, body: await res.text(), text: '', headers: res.headers };
  }

  /** Marks "What's new" as seen for this session's user, so the modal stays out of the way. */
  async dismissWhatsNew(): Promise<void> {
    await this.ok('PUT', '/v1/user-preferences/site/whatsNewDismissed', { propertyValue: '2026.2' });
  }
}

/** A submission of the `simple` fixture form (meta/instanceID, name, age). */
export const simpleSubmission = (instanceId: string, name: string, age: number): string =>
  `<data id="simple"><meta><instanceID>${instanceId}</instanceID></meta><name>${name}</name><age>${age}</age></data>`;

/** A submission of the `geotest` fixture form (geoTypes.xml) with a point at (lat, lon). */
export const geoSubmission = (instanceId: string, lat: number, lon: number): string =>
  `<data id="geotest" version="10"><survey_started_at>2026-01-01T10:00:00.000Z</survey_started_at>` +
  `<singular><input_geopoint>${lat} ${lon} 0 0</input_geopoint><input_geotrace/><input_geoshape/></singular>` +
  `<plural_count>0</plural_count><survey_ended_at>2026-01-01T10:05:00.000Z</survey_ended_at>` +
  `<meta><instanceID>${instanceId}</instanceID></meta></data>`;

/** A unique suffix for names within one run. */
let counter = 0;
export const unique = (prefix: string): string => `${prefix} ${Date.now().toString(36)}${(counter++).toString(36)}`;
