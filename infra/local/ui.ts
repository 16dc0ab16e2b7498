/**
 * Serving Central's web UI (a central-frontend build in UI_DIR) from `npm start`, on the same
 * port as the API, as Central's nginx does: static files, `/client-config.json` as `{}`, the
 * single-page fallback to index.html, and the form-filling pages (Web Forms) to
 * apps/forms/index.html. Node only (the file system); Workers and Lambda deployments serve the
 * UI from a static host instead.
 */
import { readFile, stat } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json; charset=utf-8', '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif',
  '.ico': 'image/x-icon', '.webp': 'image/webp', '.woff': 'font/woff', '.woff2': 'font/woff2', '.ttf': 'font/ttf',
  '.txt': 'text/plain; charset=utf-8', '.xml': 'application/xml; charset=utf-8', '.wasm': 'application/wasm',
};

/** Pages the UI fills forms on (Web Forms): served from apps/forms/index.html. */
const FORM_PAGES = [/^\/f\//, /^\/projects\/[^/]+\/forms\/[^/]+(\/draft)?\/submissions\/new(\/|$)/, /^\/projects\/[^/]+\/forms\/[^/]+(\/draft)?\/preview(\/|$)/, /^\/projects\/[^/]+\/forms\/[^/]+\/submissions\/[^/]+\/edit(\/|$)/];

async function fileResponse(path: string, method: string): Promise<Response | null> {
  try {
    const info = await stat(path);
    if (!info.isFile()) return null;
    const headers = { 'Content-Type': TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream', 'Content-Length': String(info.size) };
    return new Response(method === 'HEAD' ? null : new Uint8Array(await readFile(path)), { status: 200, headers });
  } catch {
    return null;
  }
}

/**
 * @param uiDir the built UI folder.
 * @returns a handler answering UI requests (GET/HEAD outside `/v1`), or null for what is not its.
 */
export function uiHandler(uiDir: string): (request: Request) => Promise<Response | null> {
  const root = resolve(uiDir);
  return async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return null;
    const url = new URL(request.url);
    if (url.pathname === '/v1' || url.pathname.startsWith('/v1/')) return null;
    if (url.pathname === '/client-config.json') {
      return new Response(request.method === 'HEAD' ? null : '{}', { status: 200, headers: { 'Content-Type': 'application/json; charset=utf-8' } });
    }
    let path: string;
    try {
      path = decodeURIComponent(url.pathname);
    } catch {
      return new Response('Bad request', { status: 400 });
    }
    // Never outside UI_DIR: `..`, encoded slashes and NUL bytes all end up refused here.
    const target = resolve(root, `.${path}`);
    if (path.includes('\0') || (target !== root && !target.startsWith(root + sep))) return new Response('Not found', { status: 404 });
    const file = await fileResponse(target, request.method);
    if (file) return file;
    // A missing asset (a known static file type) is a 404; any other path is a page of the
    // single-page app, dots included (`/projects/1/forms/household.v2` is a form's page).
    const ext = extname(path).toLowerCase();
    if (ext !== '.html' && TYPES[ext] != null) return new Response('Not found', { status: 404, headers: { 'Content-Type': 'text/plain; charset=utf-8' } });
    const page = FORM_PAGES.some((re) => re.test(path)) ? 'apps/forms/index.html' : 'index.html';
    return (await fileResponse(resolve(root, page), request.method)) ?? new Response('Not found', { status: 404 });
  };
}

/** The local server's fetch: the UI (when UI_DIR is set) in front of the API. */
export function withUi(fetch: (request: Request) => Promise<Response>, uiDir: string | undefined): (request: Request) => Promise<Response> {
  if (!uiDir) return fetch;
  const ui = uiHandler(uiDir);
  return async (request) => (await ui(request)) ?? fetch(request);
}
