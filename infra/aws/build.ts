/**
 * Lambda bundles: each group's functions/<group>/lambda.ts, plus the router, migration and
 * scheduled-job functions (infra/aws/*.ts), bundled by esbuild into <outDir>/<name>/index.mjs.
 *
 * `npm run build:lambda` writes dist/lambda; the CDK app, `npm run deploy:check`, the serverless
 * tests and bench/serverless.ts call buildLambdaBundles with a folder of their own.
 *
 * Choices (README, Deploy on AWS):
 * - Code splitting: dynamic imports (nodemailer, the AWS SDK, PGlite's drivers) become chunks that
 *   load on first use, so a cold start parses only what the first request needs.
 * - Everything but PGlite is bundled, the AWS SDK included: the asset is self-contained and pinned
 *   to package-lock.json rather than to whatever SDK the Lambda runtime ships. PGlite is for local
 *   use only (Lambda always has DATABASE_URL), so it stays out.
 * - The banner gives ESM chunks a `require` for the CommonJS dependencies esbuild wraps (nodemailer,
 *   bcryptjs); its import is aliased because fflate's own `createRequire` import would collide.
 */
import { build, type Metafile, type Plugin } from 'esbuild';
import { cpSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { lambdaFunctions } from './functions';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** A bundle to build: a group function, or one of the support functions of the AWS stack. */
export interface BundleSpec {
  /** Folder name under the output folder; a group's name for group functions. */
  name: string;
  /** Entry module, relative to the repository root. */
  entry: string;
  /** The endpoint group it serves, or null for support functions. */
  group: string | null;
}

/** Group functions from infra/aws/functions.ts, then the support functions. */
export const bundleSpecs: BundleSpec[] = [
  ...lambdaFunctions.map((f) => ({ name: f.group, entry: f.entry, group: f.group })),
  // Dispatches API Gateway requests the HTTP API's routes cannot tell apart (infra/aws/router.ts).
  { name: 'router', entry: 'infra/aws/router.ts', group: null },
  // Applies drizzle migrations during `cdk deploy` (a custom resource).
  { name: 'migrate', entry: 'infra/aws/migrate.ts', group: null },
  // Runs the scheduled jobs for EventBridge (lib/jobs/scheduled.ts).
  { name: 'scheduled', entry: 'infra/aws/scheduled.ts', group: null },
];

/** One output file and its sizes in bytes. `lazy`: loaded by a dynamic import only, not at init. */
export interface BundleFile {
  path: string;
  bytes: number;
  gzipBytes: number;
  lazy: boolean;
}

export interface BuiltBundle {
  spec: BundleSpec;
  /** Absolute folder holding index.mjs and its chunks (the Lambda code asset). */
  dir: string;
  /** Absolute path of index.mjs (the handler module). */
  entryFile: string;
  files: BundleFile[];
  /** Bytes loaded at module init: index.mjs and the chunks it imports statically. */
  initBytes: number;
  initGzipBytes: number;
  /** Every JavaScript file of the asset, lazily loaded chunks included. */
  totalBytes: number;
  totalGzipBytes: number;
  /** Source files (repository-relative) that went into the bundle, for the own-code checks. */
  inputs: string[];
  /** esbuild's metafile (import graph), for tracing why a module is in a bundle. */
  metafile: Metafile;
}

const banner = "import { createRequire as __fbCreateRequire } from 'module'; const require = __fbCreateRequire(import.meta.url);";

/**
 * Builds the named bundles (default: all of bundleSpecs) into `outDir/<name>/`, emptied first.
 * The migrate bundle also gets drizzle/migrations next to it.
 * @param opts.minify default true (what is deployed and measured).
 * @returns each bundle's files and sizes (raw and gzipped, init and total).
 */
export async function buildLambdaBundles(opts: { outDir: string; names?: string[]; minify?: boolean; sourcemap?: boolean }): Promise<BuiltBundle[]> {
  const specs = opts.names ? bundleSpecs.filter((s) => opts.names!.includes(s.name)) : bundleSpecs;
  // esbuild runs the builds side by side in its one service process.
  return Promise.all(specs.map(async (spec) => {
    const dir = resolve(opts.outDir, spec.name);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const result = await build({
      absWorkingDir: root,
      entryPoints: { index: spec.entry },
      outdir: dir,
      bundle: true,
      splitting: true,
      chunkNames: 'chunks/[name]-[hash]',
      platform: 'node',
      target: 'node20',
      // ES module builds first: named exports through dynamic imports, and better tree shaking.
      mainFields: ['module', 'main'],
      format: 'esm',
      outExtension: { '.js': '.mjs' },
      minify: opts.minify ?? true,
      sourcemap: opts.sourcemap ?? false,
      metafile: true,
      // The embedded database is for local use; Lambda always has DATABASE_URL.
      external: ['@electric-sql/pglite', '@electric-sql/pglite/*'],
      banner: { js: banner },
      logLevel: 'warning',
      legalComments: 'none',
      plugins: [groupOnly(spec)],
    });
    if (spec.name === 'migrate') cpSync(join(root, 'drizzle/migrations'), join(dir, 'migrations'), { recursive: true });
    return describe(spec, dir, result.metafile);
  }));
}

/**
 * Modules only one group's function runs, replaced by a stub in every other bundle. The route table
 * sends every form upload to the forms group, yet lib/forms/index.ts (which converts XLSForms) is
 * reached by other groups for their own verbs (form attachments from submissions and entity lists,
 * the project key); without this their assets would carry SheetJS. The stub throws if ever called.
 */
const GROUP_ONLY: Record<string, { group: string; stub: string }> = {
  'lib/xlsform/index.ts': {
    group: 'forms',
    stub: "const no = () => { throw new Error('XLSForm conversion runs in the forms function only'); };"
      + ' export class XlsFormError extends Error { warnings = []; } export const convertXlsForm = no;',
  },
};

function groupOnly(spec: BundleSpec): Plugin {
  return {
    name: 'fieldbase-group-only',
    setup(b) {
      b.onResolve({ filter: /\/xlsform$/ }, (args) => {
        const path = relative(root, resolve(args.resolveDir, args.path, 'index.ts'));
        const only = GROUP_ONLY[path];
        if (!only || only.group === spec.group) return undefined;
        return { path, namespace: 'group-only' };
      });
      b.onLoad({ filter: /.*/, namespace: 'group-only' }, (args) => ({ contents: GROUP_ONLY[args.path]!.stub, loader: 'ts' }));
    },
  };
}

function describe(spec: BundleSpec, dir: string, meta: Metafile): BuiltBundle {
  const outputs = Object.entries(meta.outputs).filter(([p]) => p.endsWith('.mjs'));
  const byPath = new Map(outputs.map(([p, o]) => [resolve(root, p), o]));
  const entryFile = join(dir, 'index.mjs');
  // Init closure: the entry and every chunk reachable through static imports.
  const init = new Set<string>();
  const walk = (file: string) => {
    if (init.has(file)) return;
    init.add(file);
    for (const imp of byPath.get(file)?.imports ?? []) {
      if (imp.kind === 'import-statement' && !imp.external) walk(resolve(root, imp.path));
    }
  };
  walk(entryFile);
  const files: BundleFile[] = [...byPath.keys()].map((file) => {
    const bytes = readFileSync(file);
    return { path: relative(dir, file), bytes: bytes.byteLength, gzipBytes: gzipSync(bytes, { level: 9 }).byteLength, lazy: !init.has(file) };
  });
  const sum = (fs: BundleFile[], k: 'bytes' | 'gzipBytes') => fs.reduce((n, f) => n + f[k], 0);
  const initFiles = files.filter((f) => !f.lazy);
  const inputs = new Set<string>();
  for (const [, o] of outputs) for (const i of Object.keys(o.inputs)) inputs.add(i);
  return {
    spec, dir, entryFile, files,
    initBytes: sum(initFiles, 'bytes'), initGzipBytes: sum(initFiles, 'gzipBytes'),
    totalBytes: sum(files, 'bytes'), totalGzipBytes: sum(files, 'gzipBytes'),
    inputs: [...inputs].sort(),
    metafile: meta,
  };
}

/** "123.4 kB" (1 kB = 1000 bytes). Pure. */
export const kB = (n: number) => `${(n / 1000).toFixed(1)} kB`;

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const outDir = resolve(root, 'dist/lambda');
  const built = await buildLambdaBundles({ outDir });
  for (const b of built) {
    console.log(`${relative(root, b.dir)}/${basename(b.entryFile)}: init ${kB(b.initBytes)} (${kB(b.initGzipBytes)} gz), all ${kB(b.totalBytes)} (${kB(b.totalGzipBytes)} gz)`);
  }
}
