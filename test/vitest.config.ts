import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    globalSetup: ['test/setup/global.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts', 'test/serverless/**/*.test.ts'] } },
      { extends: true, test: { name: 'contract', include: ['test/contract/**/*.test.ts'] } },
      {
        // Central's web UI in Chromium against `npm start` (test/browser/global-setup.ts): one server,
        // files one after another in a single fork.
        extends: true,
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          globalSetup: ['test/browser/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // A page in a new tab loads Central's whole UI first: 1 s (the default) is too short on a busy CI box.
          expect: { poll: { timeout: 10_000 } },
          poolOptions: { forks: { singleFork: true } },
        },
      },
    ],
  },
});
