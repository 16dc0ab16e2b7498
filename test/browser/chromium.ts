/**
 * Where Chromium is: CHROMIUM_PATH, else `chromium` or `chromium-browser` on PATH (Debian's
 * `chromium` package). playwright-core downloads no browser, so without one the suite stops here
 * with a message saying how to install it.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

const NAMES = ['chromium', 'chromium-browser'];

export function findChromium(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CHROMIUM_PATH) {
    if (!executable(env.CHROMIUM_PATH)) throw new Error(`CHROMIUM_PATH=${env.CHROMIUM_PATH} is not an executable file.`);
    return env.CHROMIUM_PATH;
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    for (const name of NAMES) {
      const path = join(dir, name);
      if (dir && executable(path)) return path;
    }
  }
  throw new Error(
    'The browser tests (test/browser) need Chromium and found none (CHROMIUM_PATH unset; no chromium or chromium-browser on PATH). ' +
      'Install it with `apt-get install -y chromium` (Debian/Ubuntu), or set CHROMIUM_PATH to a Chromium or Chrome binary.',
  );
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Launch flags for headless Debian Chromium in a container (no sandbox, nothing phoning home). */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
