/**
 * The cron Worker (wrangler.toml [env.scheduled], its triggers): each cron expression runs the jobs
 * lib/jobs/scheduled.ts SCHEDULE lists for it, through runScheduledJob, the entry the CLI verbs and
 * the EventBridge rules use too. It answers no HTTP requests (no route, workers_dev = false); under
 * `wrangler dev --test-scheduled`, GET /__scheduled?cron=… fires it by hand.
 */
import { systemCtx } from '../../lib/context';
import { jobsForCron, runScheduledJobs } from '../../lib/jobs/scheduled';
import { createWorkerDeps } from '../../lib/runtime/workers';

interface ScheduledControllerLike {
  cron: string;
  scheduledTime: number;
}

interface ExecutionCtxLike {
  waitUntil(p: Promise<unknown>): void;
}

export default {
  scheduled(controller: ScheduledControllerLike, env: Record<string, unknown>, executionCtx: ExecutionCtxLike): void {
    const { deps, done } = createWorkerDeps(env);
    const run = runScheduledJobs(systemCtx(deps), jobsForCron(controller.cron)).finally(done);
    executionCtx.waitUntil(run);
  },
};
