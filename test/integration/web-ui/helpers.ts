/**
 * Helpers for the web-UI tests: a server shared by every test of a `describe` (one rolled-back
 * transaction for the whole suite, so a UI session can be replayed one test per request), a
 * browser-like client with a cookie jar, a stand-in UI folder, and the request list of
 * /work/shared/reference/web-ui-requests.md.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Config } from '../../../lib/config';
import type { Deps } from '../../../lib/context';
import type { Db } from '../../../lib/db/client';
import { withDeps } from '../../../lib/runtime/entry';
import { localApp } from '../../../infra/local/app';
import { withUi } from '../../../infra/local/ui';
import { rolledBackTransaction } from '../../helpers/harness';
import { testDatabase } from '../../setup/db';

const shared = new URL('../../../../shared/', import.meta.url);

/** A text file under /work/shared/. */
export const sharedText = (path: string): string => readFileSync(new URL(path, shared), 'utf8');

/** A recorded Central JSON body (central-outputs/<path>.json). */
export const centralJson = <T = any>(path: string): T => // eslint-disable-line @typescript-eslint/no-explicit-any
  JSON.parse(sharedText(`fixtures/central-outputs/${path}.json`)) as T;

export interface SuiteServer {
  /** http://127.0.0.1:<port> */
  base: string;
  db: Db;
  deps: Deps;
  ids: { alice: number; bob: number; chelsea: number };
  projectId: number;
  /** Closes the socket and rolls the suite's transaction back. */
  close(): Promise<void>;
}

/**
 * A real server on a loopback port over one transaction that lives for a whole suite (call it in
 * `beforeAll`, and `close()` in `afterAll`): every request of the suite sees what the earlier ones
 * wrote, and nothing is left behind. Requests must not overlap (one transaction).
 * @param config overrides (e.g. `{ ALLOW_HTTP_AUTH: false }`); `uiDir` puts withUi() in front.
 */
export async function suiteServer(config: Partial<Config> = {}, uiDir?: string): Promise<SuiteServer> {
  const base = await testDatabase();
  const { db, release, txDone } = await rolledBackTransaction(base.deps.db);
  const deps: Deps = { ...base.deps, db, config: { ...base.config, ...config } };
  const app = withDeps(localApp(), () => ({ deps }));
  const fetch = withUi((request) => app.fetch(request), uiDir);
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  return {
    base: `http://127.0.0.1:${port}`,
    db,
    deps,
    ids: base.fixtures.ids,
    projectId: base.fixtures.projectId,
    close: async () => {
      await new Promise((r) => server.close(r));
      release();
      await txDone;
    },
  };
}

/** One parsed Set-Cookie header. */
export interface SetCookie {
  name: string;
  /** The value, percent-decoded. */
  value: string;
  /** The value as sent (what a browser sends back). */
  rawValue: string;
  /** Attribute names in lower case → value ('' for flags such as HttpOnly). */
  attrs: Record<string, string>;
  raw: string;
}

/** Parses the Set-Cookie headers of a response. */
export function parseSetCookies(res: Response): SetCookie[] {
  return res.headers.getSetCookie().map((raw) => {
    const [pair, ...rest] = raw.split(';');
    const eq = pair!.indexOf('=');
    const attrs: Record<string, string> = {};
    for (const a of rest) {
      const i = a.indexOf('=');
      const k = (i < 0 ? a : a.slice(0, i)).trim().toLowerCase();
      attrs[k] = i < 0 ? '' : a.slice(i + 1).trim();
    }
    const rawValue = pair!.slice(eq + 1).trim();
    return { name: pair!.slice(0, eq).trim(), value: decodeURIComponent(rawValue), rawValue, attrs, raw };
  });
}

/** Whether a Set-Cookie removes its cookie (Max-Age ≤ 0 or an Expires in the past). */
export function clears(c: SetCookie): boolean {
  const maxAge = c.attrs['max-age'];
  if (maxAge != null && Number(maxAge) <= 0) return true;
  const expires = c.attrs.expires;
  return expires != null && Date.parse(expires) < Date.now();
}

export interface BrowserRequest {
  body?: unknown;
  headers?: Record<string, string>;
  /** Sends `X-Extended-Metadata: true`. */
  extended?: boolean;
  /** Leaves `X-Requested-With` off a POST (a cross-site form post looks like that). */
  noCsrf?: boolean;
}

/**
 * What the UI does in a browser: keeps the cookies responses set (and drops the ones they clear),
 * sends them back, and adds `X-Requested-With: XMLHttpRequest` to every POST, as axios is set up in
 * central-frontend (container.js); PATCH, PUT and DELETE carry the cookie alone.
 */
export class Browser {
  /** Cookie name → value as the server set it (undecoded, as a browser keeps it). */
  readonly jar = new Map<string, string>();
  /** The Set-Cookie headers of the last response. */
  lastSetCookies: SetCookie[] = [];

  constructor(readonly base: string, readonly defaultHeaders: Record<string, string> = {}) {}

  cookieHeader(): string | undefined {
    if (this.jar.size === 0) return undefined;
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** A cookie's value, percent-decoded (what `document.cookie` parsing gives the UI). */
  cookie(name: string): string | undefined {
    const v = this.jar.get(name);
    return v == null ? undefined : decodeURIComponent(v);
  }

  async request(method: string, path: string, opts: BrowserRequest = {}): Promise<Response> {
    const headers: Record<string, string> = { ...this.defaultHeaders };
    const cookie = this.cookieHeader();
    if (cookie) headers.Cookie = cookie;
    if (opts.extended) headers['X-Extended-Metadata'] = 'true';
    if (method === 'POST' && !opts.noCsrf) headers['X-Requested-With'] = 'XMLHttpRequest';
    let body: BodyInit | undefined;
    if (opts.body !== undefined) {
      if (typeof opts.body === 'string' || opts.body instanceof Uint8Array) body = opts.body as BodyInit;
      else {
        body = JSON.stringify(opts.body);
        headers['Content-Type'] = 'application/json';
      }
    }
    Object.assign(headers, opts.headers ?? {});
    const res = await fetch(this.base + path, { method, headers, body, redirect: 'manual' });
    this.lastSetCookies = parseSetCookies(res);
    for (const c of this.lastSetCookies) {
      if (clears(c)) this.jar.delete(c.name);
      else this.jar.set(c.name, c.rawValue);
    }
    return res;
  }

  get = (path: string, opts?: BrowserRequest) => this.request('GET', path, opts);
  post = (path: string, opts?: BrowserRequest) => this.request('POST', path, opts);
  put = (path: string, opts?: BrowserRequest) => this.request('PUT', path, opts);
  patch = (path: string, opts?: BrowserRequest) => this.request('PATCH', path, opts);
  delete = (path: string, opts?: BrowserRequest) => this.request('DELETE', path, opts);
}

/** One row of the request table in web-ui-requests.md. */
export interface UiRow {
  step: string;
  method: string;
  path: string;
  status: number;
  extended: boolean;
}

/** The request table of /work/shared/reference/web-ui-requests.md, in order. */
export function uiRequestRows(): UiRow[] {
  const rows: UiRow[] = [];
  for (const line of sharedText('reference/web-ui-requests.md').split('\n')) {
    const m = /^\|\s*([^|]+?)\s*\|\s*(GET|POST|PUT|PATCH|DELETE)\s*\|\s*`([^`]+)`\s*\|\s*(\d{3})\s*\|\s*(yes)?\s*\|$/.exec(line);
    if (m) rows.push({ step: m[1]!, method: m[2]!, path: m[3]!, status: Number(m[4]), extended: m[5] === 'yes' });
  }
  return rows;
}

export interface StandInUi {
  /** The UI folder (UI_DIR). */
  dir: string;
  /** Text of a file outside the folder, next to it, that must never be served. */
  secret: string;
  remove(): void;
}

/**
 * A small stand-in for a central-frontend build: index.html, apps/forms/index.html, assets
 * (JS, CSS, SVG), and a secret.txt next to the folder (outside UI_DIR).
 */
export function standInUi(): StandInUi {
  const root = mkdtempSync(join(process.env.FIELDBASE_TEST_TMP ?? tmpdir(), 'fieldbase-ui-'));
  const dir = join(root, 'ui');
  mkdirSync(join(dir, 'apps', 'forms'), { recursive: true });
  mkdirSync(join(dir, 'assets'), { recursive: true });
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>Central</title><div id="app">MAIN-INDEX</div>');
  writeFileSync(join(dir, 'apps', 'forms', 'index.html'), '<!doctype html><title>Web Forms</title><div id="app">FORMS-INDEX</div>');
  writeFileSync(join(dir, 'assets', 'app.js'), 'console.log("APP-JS");\n');
  writeFileSync(join(dir, 'assets', 'style.css'), 'body { color: black; } /* STYLE-CSS */\n');
  writeFileSync(join(dir, 'assets', 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg"><!-- LOGO-SVG --></svg>');
  const secret = `TOP-SECRET-${Math.random().toString(36).slice(2)}`;
  writeFileSync(join(root, 'secret.txt'), secret);
  return { dir, secret, remove: () => rmSync(root, { recursive: true, force: true }) };
}
