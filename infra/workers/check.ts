/**
 * Offline check of the Workers deployment (`npx tsx infra/workers/check.ts`, part of
 * `npm run deploy:check`): builds every Worker of wrangler.toml (the gateway at the top level and
 * each [env.*]) with `wrangler deploy --dry-run --outdir`, prints each bundle's size (raw and
 * gzipped, and the heaviest packages), and fails when a build fails, a bundle passes 400 kB
 * gzipped, any Worker carries the AWS SDK or zxcvbn's dictionaries (lib/blobs/s3-fetch.ts and the
 * users Worker's static assets replace them), or the gateway carries code it never runs (zod,
 * drizzle, bcrypt).
 * No account or network is needed. Exit code 0 when all pass, 1 otherwise.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';

const root = resolve(new URL('../..', import.meta.url).pathname);
/** The budget per Worker, gzipped (Cloudflare's own limits are 3 MB free, 10 MB paid). */
const MAX_GZIP_BYTES = 400_000;
/** Packages the gateway must not bundle: it only routes (lib/http/dispatch.ts). */
const GATEWAY_FORBIDDEN = ['zod', 'drizzle-orm', '@aws-sdk', 'bcryptjs', 'postgres'];
/**
 * What no Worker bundles: the AWS SDK (Workers speak S3 through lib/blobs/s3-fetch.ts), and
 * zxcvbn's dictionaries (a static asset of the users Worker, lib/users/zxcvbn.ts).
 */
const WORKER_FORBIDDEN = ['@aws-sdk', '@smithy', 'node_modules/zxcvbn/lib/frequency_lists.js'];

/** The Workers of wrangler.toml: '' (the top level, the gateway) and every [env.NAME]. */
export function workerEnvs(toml: string): string[] {
  const envs = new Set<string>();
  for (const m of toml.matchAll(/^\[env\.([A-Za-z0-9_-]+)(?:\.[^\]]*)?\]/gm)) envs.add(m[1]!);
  return ['', ...envs];
}

interface Built {
  env: string;
  ok: boolean;
  raw: number;
  gzip: number;
  packages: Array<[string, number]>;
  /** Every input file of the bundle (esbuild's metafile), for the forbidden-code checks. */
  inputs: string[];
  output: string;
}

function run(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    const child = spawn(join(root, 'node_modules/.bin/wrangler'), args, {
      cwd: root,
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: '1', NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => { output += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { output += d.toString(); });
    child.on('close', (code) => done({ code: code ?? 1, output }));
  });
}

/** Bytes by package (or top-level folder of ours) in the bundle, and its input files, from esbuild's metafile. */
function packagesOf(metafile: string): { packages: Array<[string, number]>; inputs: string[] } {
  const meta = JSON.parse(readFileSync(metafile, 'utf8')) as {
    outputs: Record<string, { entryPoint?: string; inputs: Record<string, { bytesInOutput: number }> }>;
  };
  const by = new Map<string, number>();
  const inputs = new Set<string>();
  for (const out of Object.values(meta.outputs)) {
    for (const [file, input] of Object.entries(out.inputs)) {
      if (input.bytesInOutput > 0) inputs.add(file);
      const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
      const key = m ? m[1]! : file.split('/').slice(0, 2).join('/');
      by.set(key, (by.get(key) ?? 0) + input.bytesInOutput);
    }
  }
  return { packages: [...by].sort((a, b) => b[1] - a[1]), inputs: [...inputs] };
}

/** Builds one Worker into `dir` and measures its modules (every .js/.mjs/.wasm the upload holds). */
export async function buildWorker(env: string, dir: string): Promise<Built> {
  const { code, output } = await run(['deploy', '--dry-run', '--env', env, '--outdir', dir, '--metafile', join(dir, 'meta.json')]);
  if (code !== 0) return { env, ok: false, raw: 0, gzip: 0, packages: [], inputs: [], output };
  let raw = 0;
  const chunks: Buffer[] = [];
  for (const f of readdirSync(dir)) {
    if (!/\.(m?js|wasm)$/.test(f)) continue;
    const bytes = readFileSync(join(dir, f));
    raw += statSync(join(dir, f)).size;
    chunks.push(bytes);
  }
  // Cloudflare counts the upload compressed as a whole; gzip of the concatenation is that figure.
  const gzip = gzipSync(Buffer.concat(chunks), { level: 9 }).byteLength;
  return { env, ok: true, raw, gzip, ...packagesOf(join(dir, 'meta.json')), output };
}

const kb = (n: number) => `${(n / 1000).toFixed(1)} kB`;

async function main(): Promise<number> {
  const envs = workerEnvs(readFileSync(join(root, 'wrangler.toml'), 'utf8'));
  const out = mkdtempSync(join(tmpdir(), 'fb-workers-check-'));
  const results: Built[] = [];
  try {
    // Two builds at a time: wrangler's esbuild is multi-threaded already.
    const queue = [...envs];
    await Promise.all([0, 1].map(async () => {
      for (let env = queue.shift(); env !== undefined; env = queue.shift()) {
        results.push(await buildWorker(env, join(out, env || 'gateway')));
      }
    }));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  results.sort((a, b) => envs.indexOf(a.env) - envs.indexOf(b.env));
  const problems: string[] = [];
  console.log('Worker'.padEnd(14) + 'raw'.padStart(12) + 'gzip'.padStart(12) + '  heaviest packages (minified bytes)');
  for (const r of results) {
    const name = r.env || 'gateway';
    if (!r.ok) {
      problems.push(`${name}: wrangler deploy --dry-run failed\n${r.output.trim()}`);
      console.log(`${name.padEnd(14)}${'FAILED'.padStart(12)}`);
      continue;
    }
    const top = r.packages.slice(0, 5).map(([p, n]) => `${p} ${kb(n)}`).join(', ');
    const over = r.gzip > MAX_GZIP_BYTES;
    console.log(`${name.padEnd(14)}${kb(r.raw).padStart(12)}${kb(r.gzip).padStart(12)}${over ? ' OVER' : ''}  ${top}`);
    if (over) problems.push(`${name}: ${kb(r.gzip)} gzipped, over the ${kb(MAX_GZIP_BYTES)} budget`);
    const forbidden = r.inputs.filter((f) => WORKER_FORBIDDEN.some((x) => f.includes(x.includes('/') ? x : `node_modules/${x}/`)));
    if (forbidden.length > 0) problems.push(`${name} carries ${[...new Set(forbidden.map((f) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(f)?.[1] ?? f))].join(', ')}, which no Worker may bundle`);
    if (r.env === '') {
      const carried = r.packages.filter(([p]) => GATEWAY_FORBIDDEN.some((f) => p === f || p.startsWith(`${f}/`)));
      if (carried.length > 0) problems.push(`gateway carries ${carried.map(([p]) => p).join(', ')}, which it never runs`);
    }
  }
  if (problems.length > 0) {
    console.error(`\nWorkers check failed:\n- ${problems.join('\n- ')}`);
    return 1;
  }
  console.log(`\nAll ${results.length} Workers build; each is under ${kb(MAX_GZIP_BYTES)} gzipped.`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  main().then((code) => process.exit(code), (err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
