/**
 * The public Worker: dispatches each request by lib/http/route-table.ts to the group Worker behind
 * a service binding (PROJECTS, ASSIGNMENTS, USERS, AUDITS), so groups deploy and scale alone.
 */
import { dispatcher, type Fetcher } from '../../lib/http/dispatch';
import type { GroupName } from '../../lib/http/route-table';

const bindings: Record<GroupName, string> = {
  projects: 'PROJECTS',
  assignments: 'ASSIGNMENTS',
  users: 'USERS',
  audits: 'AUDITS',
  forms: 'FORMS',
  submissions: 'SUBMISSIONS',
  exports: 'EXPORTS',
  entities: 'ENTITIES',
};

export default {
  fetch(request: Request, env: Record<string, Fetcher>, executionCtx: unknown): Response | Promise<Response> {
    const groups = Object.fromEntries(
      Object.entries(bindings).map(([group, binding]) => [group, { fetch: (r: Request) => env[binding]!.fetch(r) }]),
    ) as Record<GroupName, Fetcher>;
    return dispatcher(groups).fetch(request, env, executionCtx);
  },
};
