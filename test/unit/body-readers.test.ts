/**
 * Issue 18: every request body is read through lib/http/body.ts (readBodyBytes, readBodyText,
 * jsonBody, readUploadBytes, countedBody), which counts while the body streams and stops at its
 * limit. Hono's own readers (`c.req.json()`, `text()`, `arrayBuffer()`, `parseBody()`, …) read the
 * whole body first, so a chunked 200 MB body would cost 200 MB. This test keeps them out.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

const root = new URL('../..', import.meta.url).pathname;
const files = (dir: string): string[] =>
  readdirSync(join(root, dir)).flatMap((f) => {
    const p = join(dir, f);
    return statSync(join(root, p)).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });

/** The modules allowed to touch the raw body: the guard itself. */
const GUARD = new Set(['lib/http/body.ts']);
const RAW_READERS = /\bc\.req\.(?:json|text|arrayBuffer|blob|formData|parseBody)\s*\(|\bc\.req\.raw\.body\b|\breq\.(?:json|text|arrayBuffer|blob|formData)\s*\(/;

describe('request bodies', () => {
  test('functions/ and lib/ read bodies only through lib/http/body.ts', () => {
    const bad = [...files('functions'), ...files('lib')]
      .filter((f) => !GUARD.has(f))
      .flatMap((f) => readFileSync(join(root, f), 'utf8').split('\n')
        .map((line, i) => [line, i + 1] as const)
        .filter(([line]) => !/^\s*(\/\/|\*)/.test(line) && RAW_READERS.test(line))
        .map(([line, n]) => `${f}:${n}: ${line.trim()}`));
    expect(bad).toEqual([]);
  });
});
