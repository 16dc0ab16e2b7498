import { problemFromDbError } from '../db/errors';
import { routingPath, notFoundProblem } from './routing';
import { groupFor, type GroupName } from './route-table';

export interface Fetcher {
  fetch(request: Request, env?: unknown, executionCtx?: unknown): Response | Promise<Response>;
}

const problemResponse = (p: { toJSON(): unknown; status: number }) =>
  new Response(JSON.stringify(p.toJSON()), {
    status: p.status,
    headers: { 'Content-Type': 'application/json; charset=utf-8' },
  });

/**
 * Sends each request to the group app the route table names (the gateway's job, also done by the
 * local server so both behave alike). Paths no group owns answer 404.2 / 404.3 / 404.1 JSON.
 * @param groups the group apps (or service bindings) by name.
 */
export function dispatcher(groups: Record<GroupName, Fetcher>): Fetcher {
  return {
    async fetch(request, env, executionCtx) {
      let path: string;
      try {
        path = routingPath(request);
      } catch (err) {
        return problemResponse(problemFromDbError(err) ?? notFoundProblem('/v1/'));
      }
      const group = groupFor(path);
      if (group == null) return problemResponse(notFoundProblem(path));
      return groups[group].fetch(request, env, executionCtx);
    },
  };
}
