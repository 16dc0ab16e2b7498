import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';

// DESIGN rule 1: functions → lib → drizzle/schema. Enforced here by reading imports.
const root = new URL('../..', import.meta.url).pathname;
const files = (dir: string): string[] =>
  readdirSync(join(root, dir)).flatMap((f) => {
    const p = join(dir, f);
    return statSync(join(root, p)).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
const imports = (file: string) =>
  [...readFileSync(join(root, file), 'utf8').matchAll(/^\s*import[^'"]*['"]([^'"]+)['"]/gm)].map((m) => m[1]!);

describe('dependency direction', () => {
  test('functions/ never import drizzle-orm, drizzle/ or lib/db', () => {
    const bad = files('functions').flatMap((f) =>
      imports(f).filter((i) => i.startsWith('drizzle-orm') || /(^|\/)drizzle\//.test(i) || i.includes('lib/db')).map((i) => `${f}: ${i}`));
    expect(bad).toEqual([]);
  });

  test('lib/ imports hono only in lib/http and lib/runtime', () => {
    const bad = files('lib')
      .filter((f) => !f.startsWith('lib/http/') && !f.startsWith('lib/runtime/'))
      .flatMap((f) => imports(f).filter((i) => i === 'hono' || i.startsWith('hono/')).map((i) => `${f}: ${i}`));
    expect(bad).toEqual([]);
  });

  test('lib/xlsform is pure: only its own modules, lib/bytes, SheetJS and fflate (no db, http, blobs)', () => {
    const allowed = /^(\.\/|\.\.\/bytes$|@e965\/xlsx$|fflate$)/;
    const bad = files('lib/xlsform').flatMap((f) => imports(f).filter((i) => !allowed.test(i)).map((i) => `${f}: ${i}`));
    expect(bad).toEqual([]);
  });

  test('Node-only modules are imported only under lib/runtime', () => {
    const nodeOnly = /^(node:|fs$|path$|os$|@electric-sql\/pglite|drizzle-orm\/pglite)/;
    const bad = files('lib')
      .filter((f) => !f.startsWith('lib/runtime/'))
      .flatMap((f) => imports(f).filter((i) => nodeOnly.test(i)).map((i) => `${relative(root, join(root, f))}: ${i}`));
    expect(bad).toEqual([]);
  });
});
