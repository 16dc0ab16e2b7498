/**
 * The browser side: one Chromium per test file (playwright-core, no browser download), one
 * logged-in context per user, and per test a record of what went wrong on the page: every /v1
 * response with status >= 400 (method, path, status, body), every red alert the UI showed (even if
 * it went away again), page errors and console errors. `clean()` asserts there was no red alert,
 * no failed /v1 response beyond the UI's expected probes and no uncaught page error. When a test
 * fails, the record, a screenshot of every open page and the server log's path are printed.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { chromium, type Browser, type BrowserContext, type Page, type Response } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, expect, inject } from 'vitest';
import { Api } from './api';
import { CHROMIUM_ARGS } from './chromium';
import type { FieldbaseServer } from './global-setup';

/**
 * Central's red alert (components/red-alert.vue: `.alert.red-alert`, shown at the bottom of the
 * page or at the top of an open modal); `.alert-danger` is the older Bootstrap one.
 */
export const RED_ALERT = '.red-alert, .alert-danger';

export interface Failure {
  method: string;
  url: string;
  status: number;
  body: string;
}

/** Records red alerts in the page into window.__fbRedAlerts, however briefly they show. */
const RED_ALERT_WATCH = `(() => {
  const seen = new Set();
  const check = () => {
    for (const el of document.querySelectorAll(${JSON.stringify(RED_ALERT)})) {
      const text = (el.textContent || '').trim();
      if (el.offsetParent !== null && text && !seen.has(el) ) {
        seen.add(el);
        if (window.__fbRedAlert) window.__fbRedAlert(text);
      } else if (el.offsetParent === null) seen.delete(el);
    }
  };
  setInterval(check, 50);
  // QR codes: collect-qr.vue passes the deflated settings through btoa(); keep what it encodes.
  const btoa0 = window.btoa.bind(window);
  window.__fbQr = [];
  window.btoa = (s) => { const out = btoa0(s); if (s.length > 2 && s.charCodeAt(0) === 0x78) window.__fbQr.push(out); return out; };
})();`;

export class UiUser {
  readonly failures: Failure[] = [];
  readonly redAlerts: string[] = [];
  readonly errors: string[] = [];
  private pending: Promise<unknown>[] = [];

  constructor(
    readonly context: BrowserContext,
    public page: Page,
    readonly base: string,
  ) {}

  static async open(browser: Browser, base: string): Promise<UiUser> {
    const context = await browser.newContext({ baseURL: base, viewport: { width: 1400, height: 900 }, acceptDownloads: true });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    const user = new UiUser(context, page, base);
    await context.exposeBinding('__fbRedAlert', (_source, text: string) => {
      user.redAlerts.push(text);
    });
    await context.addInitScript(RED_ALERT_WATCH);
    context.on('response', (res) => user.onResponse(res));
    context.on('page', (p) => user.watchPage(p));
    user.watchPage(page);
    return user;
  }

  private watchPage(page: Page) {
    page.on('pageerror', (err) => this.errors.push(`pageerror: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') this.errors.push(`console: ${msg.text()}`);
    });
  }

  private onResponse(res: Response) {
    const url = new URL(res.url());
    if (!url.pathname.startsWith('/v1/') || res.status() < 400) return;
    const failure: Failure = { method: res.request().method(), url: url.pathname + url.search, status: res.status(), body: '' };
    this.failures.push(failure);
    this.pending.push(
      res.text().then(
        (t) => (failure.body = t.slice(0, 400)),
        () => undefined,
      ),
    );
  }

  /** Clears the record (each test starts afresh). */
  reset() {
    this.failures.length = 0;
    this.redAlerts.length = 0;
    this.errors.length = 0;
    this.pending = [];
  }

  /** Failures other than the UI's expected probes (restore without a session, analytics config). */
  unexpectedFailures(): Failure[] {
    return this.failures.filter((f) => !(f.url === '/v1/sessions/restore' && f.status === 404) && !(f.url === '/v1/sessions/restore' && f.status === 401) && !(f.url === '/v1/config/analytics' && f.status === 404));
  }

  async report(): Promise<string> {
    await Promise.all(this.pending);
    const lines: string[] = [];
    for (const f of this.failures) lines.push(`  ${f.method} ${f.url} → ${f.status} ${f.body}`);
    for (const a of this.redAlerts) lines.push(`  red alert: ${a}`);
    for (const e of this.errors.slice(0, 10)) lines.push(`  ${e.slice(0, 300)}`);
    return lines.join('\n');
  }

  /**
   * Asserts that no red alert is showing now or showed during the test, that no /v1 request of the
   * page failed (beyond the UI's expected probes), even one the UI does not report, and that the
   * page threw no uncaught exception.
   */
  async clean() {
    await this.page.waitForTimeout(150); // let an alert from the last response render
    const visible = await this.page.locator(RED_ALERT).filter({ visible: true }).allTextContents();
    const all = [...new Set([...this.redAlerts, ...visible.map((t) => t.trim())])];
    expect(all, `red alerts shown in the UI; failed /v1 responses:\n${await this.report()}`).toEqual([]);
    const failed = this.unexpectedFailures().map((f) => `${f.method} ${f.url} → ${f.status} ${f.body}`);
    expect(failed, 'failed /v1 responses').toEqual([]);
    // An exception thrown in the page (often a JSON shape the UI did not expect).
    expect(this.errors.filter((e) => e.startsWith('pageerror')), 'uncaught errors in the page').toEqual([]);
  }

  /** Logs in through the login page. */
  async login(email: string, password: string) {
    const { page } = this;
    await page.goto('/');
    await page.locator('#account-login input[type=email]').fill(email);
    await page.locator('#account-login input[type=password]').fill(password);
    await page.locator('#account-login button[type=submit]').click();
    await page.waitForURL((url) => !url.pathname.startsWith('/login') && !url.pathname.startsWith('/account/login'), { timeout: 15_000 });
    await page.locator('#navbar').waitFor();
  }

  /** Goes to a page of the single-page app and waits for its requests to settle. */
  async goto(path: string) {
    await this.page.goto(path);
    await this.settle();
  }

  async settle() {
    await this.page.waitForLoadState('networkidle').catch(() => undefined);
    await this.page.locator('#loading, .loading').filter({ visible: true }).first().waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
  }

  /** The settings of every QR code drawn on the page so far (JSON decoded from collect-qr.vue's payload). */
  async qrSettings(page: Page = this.page): Promise<Array<{ general: { server_url: string }; project: { name: string } }>> {
    const payloads = await page.evaluate(() => (window as unknown as { __fbQr: string[] }).__fbQr);
    return payloads.map((b64) => JSON.parse(inflateSync(Buffer.from(b64, 'base64')).toString('utf8')));
  }

  /** Waits for the response to a /v1 request the page is about to send. */
  waitForApi(method: string, pathPattern: RegExp, timeout = 20_000): Promise<Response> {
    return this.page.waitForResponse((r) => r.request().method() === method && pathPattern.test(new URL(r.url()).pathname), { timeout });
  }
}

export interface Suite {
  server: FieldbaseServer;
  /** The administrator's API client (Bearer). */
  api: Api;
  browser: Browser;
  /** The administrator, logged in through the UI, with "What's new" already dismissed. */
  admin: UiUser;
  /** Opens another browser context (not logged in); closed at the end of the file. */
  newUser(): Promise<UiUser>;
}

/**
 * Call at the top of a test file: launches Chromium, logs the administrator in, and wires the
 * per-test record and the screenshot on failure.
 */
export function browserSuite(): Suite {
  const server = inject('fieldbase');
  const suite = { server } as Suite;
  const users: UiUser[] = [];
  beforeAll(async () => {
    suite.api = await Api.login(server.base, server.email, server.password);
    await suite.api.dismissWhatsNew().catch(() => undefined);
    suite.browser = await chromium.launch({ executablePath: server.chromium, args: CHROMIUM_ARGS, headless: true });
    suite.newUser = async () => {
      const u = await UiUser.open(suite.browser, server.base);
      users.push(u);
      return u;
    };
    suite.admin = await suite.newUser();
    await suite.admin.login(server.email, server.password);
  }, 60_000);
  afterAll(async () => {
    await suite.browser?.close();
  });
  beforeEach((ctx) => {
    for (const u of users) u.reset();
    if (process.env.FIELDBASE_BROWSER_REPORT) {
      // Debugging aid: the record of every test, passed or not.
      ctx.onTestFinished(async () => {
        const parts = await Promise.all(users.map((u) => u.report()));
        console.log(`[browser] ${ctx.task.name}\n${parts.filter(Boolean).join('\n')}`);
      });
    }
    ctx.onTestFailed(async () => {
      mkdirSync(server.artifacts, { recursive: true });
      const name = ctx.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 80);
      const lines = [`[browser] ${ctx.task.name} failed. Server log: ${server.logFile}`];
      for (const [i, u] of users.entries()) {
        for (const p of u.context.pages()) {
          const file = join(server.artifacts, `${name}-${i}-${u.context.pages().indexOf(p)}.png`);
          await p.screenshot({ path: file, fullPage: true }).then(() => lines.push(`  screenshot: ${file} (${p.url()})`), () => undefined);
        }
        const r = await u.report();
        if (r) lines.push(`  context ${i}:\n${r}`);
      }
      console.error(lines.join('\n'));
    });
  });
  return suite;
}

/** Fills the ODK Web Forms question labelled `label` (its nearest enclosing element with an input). */
export async function fillQuestion(page: Page, label: string, value: string) {
  const input = page.getByText(label, { exact: true }).locator('xpath=ancestor::*[.//input][1]').locator('input').first();
  await input.fill('');
  await input.pressSequentially(value); // typed: PrimeVue's number input ignores a programmatic fill
  await input.press('Tab');
}
