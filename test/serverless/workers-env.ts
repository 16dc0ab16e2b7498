/**
 * Runs the Workers deployment locally, as wrangler.toml describes it: every Worker bundled by
 * `wrangler deploy --dry-run` (infra/workers/check.ts buildWorker, the same bundles a deploy
 * uploads) and loaded into one workerd through Miniflare (the engine of `wrangler dev`), the gateway
 * listening on a loopback port with its service bindings resolved to the group Workers, each group
 * with its Hyperdrive binding pointed at a real PostgreSQL database and its vars from the toml
 * (S3_* overridden to an s3rver) and its static assets (the users Worker's zxcvbn lists). Used by test/serverless/workers.test.ts and
 * bench/workers-memory.ts.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Log, LogLevel, Miniflare } from 'miniflare';
import { buildWorker, workerEnvs } from '../../infra/workers/check';

const root = resolve(new URL('../..', import.meta.url).pathname);

export interface WorkersDeployment {
  /** The gateway's base URL (http://127.0.0.1:port). */
  url: string;
  mf: Miniflare;
  stop(): Promise<void>;
}

/** The pieces of wrangler.toml the local run needs (top-level and per-env settings). */
function readToml(): {
  compatibilityDate: string; flags: string[]; services: Array<{ binding: string; service: string }>; envNames: Map<string, string>;
  envAssets: Map<string, { directory: string; binding: string }>;
} {
  const toml = readFileSync(join(root, 'wrangler.toml'), 'utf8');
  const compatibilityDate = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)![1]!;
  const flags = JSON.parse(/^compatibility_flags\s*=\s*(\[[^\]]*\])/m.exec(toml)![1]!) as string[];
  const services = [...toml.matchAll(/\[\[services\]\]\s*binding\s*=\s*"([^"]+)"\s*service\s*=\s*"([^"]+)"/g)].map((m) => ({ binding: m[1]!, service: m[2]! }));
  const envNames = new Map<string, string>();
  for (const m of toml.matchAll(/^\[env\.([A-Za-z0-9_-]+)\]\s*name\s*=\s*"([^"]+)"/gm)) envNames.set(m[1]!, m[2]!);
  // Static assets per env (`assets = { directory = "…", binding = "…", … }` in its section).
  const envAssets = new Map<string, { directory: string; binding: string }>();
  for (const m of toml.matchAll(/^\[env\.([A-Za-z0-9_-]+)\]([^[]*)/gm)) {
    const a = /^assets\s*=\s*\{([^}]*)\}/m.exec(m[2]!);
    if (!a) continue;
    const field = (k: string) => new RegExp(`${k}\\s*=\\s*"([^"]+)"`).exec(a[1]!)?.[1];
    envAssets.set(m[1]!, { directory: join(root, field('directory')!), binding: field('binding')! });
  }
  return { compatibilityDate, flags, services, envNames, envAssets };
}

/**
 * Builds and starts the gateway and every group Worker (not the cron Worker unless `withScheduled`).
 * @param opts.databaseUrl PostgreSQL the Hyperdrive bindings point at (migrated by the caller).
 * @param opts.s3 endpoint and bucket of a running S3 (s3rver).
 * @param opts.vars extra vars for every group Worker (ALLOW_HTTP_AUTH for plain-HTTP tests).
 * @returns the gateway URL and a stop function (disposes workerd, deletes the bundles).
 */
export async function startWorkers(opts: {
  databaseUrl: string;
  s3: { endpoint: string; bucket: string };
  vars?: Record<string, string>;
  withScheduled?: boolean;
}): Promise<WorkersDeployment> {
  const { compatibilityDate, flags, services, envNames, envAssets } = readToml();
  const envs = workerEnvs(readFileSync(join(root, 'wrangler.toml'), 'utf8')).filter((e) => opts.withScheduled || e !== 'scheduled');
  const out = mkdtempSync(join(tmpdir(), 'fb-workers-'));
  const built = await Promise.all(envs.map((env) => buildWorker(env, join(out, env || 'gateway'))));
  const failed = built.filter((b) => !b.ok);
  if (failed.length > 0) throw new Error(`wrangler build failed for ${failed.map((b) => b.env || 'gateway').join(', ')}:\n${failed[0]!.output}`);
  const scriptOf = (env: string) => {
    const dir = join(out, env || 'gateway');
    const js = readdirSync(dir).find((f) => /\.m?js$/.test(f))!;
    return join(dir, js);
  };
  const vars: Record<string, string> = {
    S3_BUCKET: opts.s3.bucket,
    S3_ENDPOINT: opts.s3.endpoint,
    S3_REGION: 'us-east-1',
    S3_FORCE_PATH_STYLE: 'true',
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    LOG_LEVEL: 'warn',
    ...opts.vars,
  };
  // Miniflare's Hyperdrive wants a password in the URL; with trust auth any one does.
  const hyperdriveUrl = new URL(opts.databaseUrl);
  if (!hyperdriveUrl.password) hyperdriveUrl.password = 'unused';
  const mf = new Miniflare({
    host: '127.0.0.1',
    port: 0,
    // FB_WORKERS_LOG=1 shows the Workers' console (our JSON log lines) on stdout.
    ...(process.env.FB_WORKERS_LOG ? { log: new Log(LogLevel.DEBUG) } : {}),
    workers: envs.map((env) => ({
      name: env === '' ? 'fieldbase' : envNames.get(env)!,
      modules: true,
      scriptPath: scriptOf(env),
      // Module names are paths relative to this root; the bundles live in a temp folder.
      modulesRoot: join(out, env || 'gateway'),
      compatibilityDate,
      compatibilityFlags: flags,
      // As deployed (run_worker_first): the Worker answers every request; assets only via the binding.
      ...(envAssets.has(env) ? { assets: { ...envAssets.get(env)!, routerConfig: { invoke_user_worker_ahead_of_assets: true, has_user_worker: true } } } : {}),
      ...(env === ''
        ? { serviceBindings: Object.fromEntries(services.map((s) => [s.binding, s.service])), bindings: { LOG_LEVEL: 'warn' } }
        : { hyperdrives: { HYPERDRIVE: hyperdriveUrl.toString() }, bindings: vars }),
    })),
  });
  const url = (await mf.ready).toString().replace(/\/$/, '');
  return {
    url,
    mf,
    async stop() {
      await mf.dispose();
      rmSync(out, { recursive: true, force: true });
    },
  };
}
