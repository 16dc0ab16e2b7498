import { Hono } from 'hono';
import type { Deps } from '../context';
import { withDeps, type FetchApp } from './entry';
import { loadConfig, processEnv } from './env';
import { createNodeDeps } from './node';

let shared: Promise<Deps> | null = null;

/** Deps shared by every invocation of one Lambda instance (a pooled postgres.js client). */
function lambdaDeps(): Promise<Deps> {
  shared ??= createNodeDeps(loadConfig(processEnv()), { mailOutbox: false });
  return shared;
}

/**
 * A Hono app for hono/aws-lambda's `handle` / `streamHandle` that runs `app` with Lambda deps.
 * Migrations are not run here: run `npm run db:migrate` as a deploy step.
 */
export function lambdaApp(app: FetchApp): Hono {
  const outer = new Hono();
  outer.all('*', async (c) => {
    const deps = await lambdaDeps();
    return withDeps(app, () => ({ deps })).fetch(c.req.raw, c.env);
  });
  return outer;
}
