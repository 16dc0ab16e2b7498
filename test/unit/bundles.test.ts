import { build } from 'esbuild';
import { describe, expect, test } from 'vitest';

// Every group must bundle for Workers (workerd) without Node-only modules: lib/ code runs on both,
// and only lib/runtime/node.ts may reach PGlite or the file system.
const groups = ['projects', 'assignments', 'users', 'audits', 'forms', 'submissions', 'exports', 'entities'];

describe('Workers bundles', () => {
  test.each([...groups.map((g) => `functions/${g}/worker.ts`), 'infra/workers/gateway.ts'])('%s bundles without PGlite or node:fs', async (entry) => {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      metafile: true,
      format: 'esm',
      platform: 'browser',
      conditions: ['workerd', 'worker', 'browser'],
      external: ['node:*', 'cloudflare:*'],
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.filter((i) => /pglite|runtime\/node\.ts|runtime\/fs-blobs\.ts/.test(i))).toEqual([]);
    const imports = Object.values(result.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));
    expect(imports.filter((p) => /^node:(fs|child_process|net)$/.test(p))).toEqual([]);
  }, 60_000);
});
