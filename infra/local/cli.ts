/**
 * `npm run cli -- <command> [--email E] [--password P]`: administration without the API.
 * Commands: user-create, user-promote, user-set-password, blobs-sweep, sessions-purge, jobs, entity-backlog, purge. With the embedded database,
 * stop the server first (PGlite allows one process at a time).
 */
import { parseArgs } from 'node:util';
import { isScheduledJobName, runScheduledJob } from '../../lib/jobs/scheduled';
import { ConfigError } from '../../lib/config';
import { systemCtx } from '../../lib/context';
import { Problem } from '../../lib/problem';
import { loadConfig, processEnv } from '../../lib/runtime/env';
import { createNodeDeps } from '../../lib/runtime/node';
import { createUserTask, promoteUserTask, setPasswordTask } from '../../lib/users/admin-tasks';

const usage = `usage: npm run cli -- <command> [options]
  user-create --email E --password P     create a web user
  user-promote --email E                 make a user a site administrator
  user-set-password --email E --password P
  blobs-sweep                            delete stored blobs no database row refers to
  sessions-purge                         delete expired sessions
  jobs                                   run deferred work left pending (entities from submissions)
  entity-backlog [--force]               apply offline entity updates held for over 5 days (--force: all now)
  purge [--force]                        purge forms, submissions and entity lists in the Trash for over 30 days (--force: all now)`;

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    args: process.argv.slice(2),
    allowPositionals: true,
    options: { email: { type: 'string' }, password: { type: 'string' }, force: { type: 'boolean' }, help: { type: 'boolean' } },
  });
  const command = positionals[0];
  if (!command || values.help) {
    console.log(usage);
    return command ? 0 : 2;
  }
  const need = (name: 'email' | 'password') => {
    const v = values[name];
    if (!v) throw new Error(`--${name} is required for ${command}`);
    return v;
  };
  const deps = await createNodeDeps(loadConfig(processEnv()));
  try {
    await deps.database.migrate();
    const ctx = systemCtx(deps);
    switch (command) {
      case 'user-create': {
        const user = await createUserTask(ctx, need('email'), need('password'));
        console.log(`Created user ${user.email} (id ${user.id}).`);
        break;
      }
      case 'user-promote':
        await promoteUserTask(ctx, need('email'));
        console.log(`${values.email} is now an administrator.`);
        break;
      case 'user-set-password':
        await setPasswordTask(ctx, need('email'), need('password'));
        console.log(`Password set for ${values.email}.`);
        break;
      case 'blobs-sweep':
      case 'purge':
      case 'jobs':
      case 'entity-backlog':
      case 'sessions-purge':
        // The scheduled jobs: the same entry as the Workers cron triggers and EventBridge rules.
        if (!isScheduledJobName(command)) throw new Error(command);
        console.log((await runScheduledJob(ctx, command, { force: values.force === true })).message);
        break;
      default:
        console.error(`unknown command ${command}\n${usage}`);
        return 2;
    }
    return 0;
  } finally {
    await deps.database.close();
  }
}

main()
  .then((code) => process.exit(code))
  .catch((err: unknown) => {
    if (err instanceof Problem) console.error(`${err.message} (${err.code})`);
    else if (err instanceof ConfigError) console.error(err.message);
    else console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
