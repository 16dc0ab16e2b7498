/**
 * The scheduled jobs, one entry for every scheduler: the CLI verbs (infra/local/cli.ts), the
 * Workers cron triggers (infra/workers/scheduled.ts, wrangler.toml [triggers]) and the AWS
 * EventBridge rules all call `runScheduledJob`, so a job means the same thing everywhere.
 * This module wires the domains' maintenance verbs together; it is imported by entries only
 * (lib/jobs/index.ts stays free of domains).
 */
import { sweepOrphanBlobs } from '../blobs';
import type { Ctx } from '../context';
import { purgeDatasets } from '../datasets/trash';
// Registers the `submission.entities` job handler, so the drain can run entity work.
import '../entities';
import { processEntityBacklog } from '../entities/backlog';
import { purgeForms } from '../forms';
import { purgeExpiredSessions } from '../sessions';
import { purgeSubmissions } from '../submissions/manage';
import { drainJobs } from './index';

/** The scheduled jobs by name (the CLI verb of each). */
export type ScheduledJobName = 'jobs' | 'entity-backlog' | 'sessions-purge' | 'purge' | 'blobs-sweep';

/**
 * When each job runs in a deployment: `cron` for Workers ([triggers] crons in wrangler.toml, UTC,
 * five fields) and `rate` for EventBridge (`rate(...)`). The job drain is frequent because jobs
 * normally run in their request and the drain only catches leftovers; the Trash purge and the blob
 * sweep are daily because they are about days-old rows.
 */
export const SCHEDULE: ReadonlyArray<{ cron: string; rate: string; jobs: readonly ScheduledJobName[] }> = [
  { cron: '*/5 * * * *', rate: 'rate(5 minutes)', jobs: ['jobs'] },
  { cron: '17 * * * *', rate: 'rate(1 hour)', jobs: ['entity-backlog', 'sessions-purge'] },
  { cron: '43 3 * * *', rate: 'rate(1 day)', jobs: ['purge', 'blobs-sweep'] },
];

/** Every job name, in the order a "run them all" pass uses. */
export const SCHEDULED_JOB_NAMES: readonly ScheduledJobName[] = ['jobs', 'entity-backlog', 'sessions-purge', 'purge', 'blobs-sweep'];

/** Whether `name` is a scheduled job. Pure. */
export const isScheduledJobName = (name: string): name is ScheduledJobName =>
  (SCHEDULED_JOB_NAMES as readonly string[]).includes(name);

/** What one run did: counts by kind, and a sentence for logs and the CLI. */
export interface ScheduledJobResult {
  name: ScheduledJobName;
  counts: Record<string, number>;
  message: string;
}

/**
 * Runs one scheduled job as the system (no actor, every rights check passes).
 * - `jobs`: deferred work left pending (lib/jobs drainJobs; entity work from submissions).
 * - `entity-backlog`: offline entity updates held past the backlog timeout (5 days; `force`: all).
 * - `sessions-purge`: expired sessions deleted.
 * - `purge`: forms, submissions and entity lists in the Trash for over 30 days (`force`: all).
 * - `blobs-sweep`: store objects no `blobs` row refers to (left by a crash) deleted.
 * @param ctx a system context (lib/context systemCtx) outside any transaction.
 * @param opts.force the CLI's --force (purge, entity-backlog); schedulers never pass it.
 * @returns the counts and a one-line message. Effects: those of the verb run (rows, store objects).
 * @throws Error for an unknown name; whatever the verb throws (the scheduler logs and retries).
 */
export async function runScheduledJob(ctx: Ctx, name: ScheduledJobName, opts: { force?: boolean } = {}): Promise<ScheduledJobResult> {
  const force = opts.force === true;
  switch (name) {
    case 'jobs': {
      const ran = await drainJobs(ctx);
      return { name, counts: { jobs: ran }, message: `Ran ${ran} pending job(s).` };
    }
    case 'entity-backlog': {
      const held = await processEntityBacklog(ctx, { force });
      return { name, counts: { submissions: held }, message: `Force-processed ${held} held submission(s).` };
    }
    case 'sessions-purge': {
      const n = await purgeExpiredSessions(ctx);
      return { name, counts: { sessions: n }, message: `Deleted ${n} expired session(s).` };
    }
    case 'purge': {
      const forms = (await purgeForms(ctx, { force })).length;
      const submissions = await purgeSubmissions(ctx, { force });
      const datasets = (await purgeDatasets(ctx, { force })).length;
      return {
        name,
        counts: { forms, submissions, datasets },
        message: `Purged ${forms} form(s), ${submissions} submission(s) and ${datasets} entity list(s) from the Trash.`,
      };
    }
    case 'blobs-sweep': {
      const deleted = (await sweepOrphanBlobs(ctx)).length;
      return { name, counts: { blobs: deleted }, message: `Deleted ${deleted} orphaned blob(s).` };
    }
    default:
      throw new Error(`unknown scheduled job ${String(name)}`);
  }
}

/**
 * The jobs a cron expression stands for (SCHEDULE), for a Workers `scheduled` event. Pure.
 * @returns the job names; every job for an expression not in SCHEDULE (a hand-made trigger).
 */
export function jobsForCron(cron: string): readonly ScheduledJobName[] {
  return SCHEDULE.find((s) => s.cron === cron)?.jobs ?? SCHEDULED_JOB_NAMES;
}

/**
 * Runs each named job in turn, a failure logged and not stopping the others (one scheduler tick).
 * @returns the results of those that succeeded. Effects: those of runScheduledJob; errors logged.
 */
export async function runScheduledJobs(ctx: Ctx, names: readonly ScheduledJobName[]): Promise<ScheduledJobResult[]> {
  const out: ScheduledJobResult[] = [];
  for (const name of names) {
    try {
      const result = await runScheduledJob(ctx, name);
      ctx.log.info('scheduled job', { job: name, ...result.counts });
      out.push(result);
    } catch (err) {
      ctx.log.error('scheduled job failed', { job: name, err });
    }
  }
  return out;
}
