/**
 * The scheduled-jobs function: EventBridge rules (infra/aws/cdk/stack.ts, one per entry of
 * lib/jobs/scheduled.ts SCHEDULE) invoke it with `{ "jobs": [...] }`, and it runs those jobs with
 * the same lib functions as the CLI verbs and the Workers cron triggers (runScheduledJobs).
 */
import { systemCtx, type Deps } from '../../lib/context';
import { isScheduledJobName, runScheduledJobs, type ScheduledJobResult } from '../../lib/jobs/scheduled';
import { loadConfig, processEnv } from '../../lib/runtime/env';
import { LAMBDA_DEFAULTS } from '../../lib/runtime/lambda';
import { createNodeDeps } from '../../lib/runtime/node';

let shared: Promise<Deps> | null = null;

/**
 * Runs the jobs named in the event, one after another; a failing job is logged and does not stop
 * the others.
 * @param event `{ jobs: ScheduledJobName[] }` (the rule's input).
 * @returns what each job did. @throws Error naming an unknown job (the rule is misconfigured).
 */
export async function handler(event: { jobs?: unknown }): Promise<ScheduledJobResult[]> {
  const names = Array.isArray(event?.jobs) ? event.jobs.map(String) : [];
  const unknown = names.filter((n) => !isScheduledJobName(n));
  if (unknown.length > 0) throw new Error(`scheduled: unknown job(s) ${unknown.join(', ')}`);
  shared ??= createNodeDeps(loadConfig({ ...LAMBDA_DEFAULTS, ...processEnv() }), { mailOutbox: false });
  const deps = await shared;
  return runScheduledJobs(systemCtx(deps), names.filter(isScheduledJobName));
}
