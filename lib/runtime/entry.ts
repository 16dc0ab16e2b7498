import type { Deps } from '../context';

export interface FetchApp {
  fetch(request: Request, env?: unknown, executionCtx?: unknown): Response | Promise<Response>;
}

interface ExecutionCtxLike {
  waitUntil?(p: Promise<unknown>): void;
}

/**
 * Wraps a group app (or the dispatcher) so each request carries its Deps in the Hono env binding
 * `deps`. `getDeps` runs per request: it may return shared deps (Node, Lambda) or per-request ones
 * with a `done` hook (Workers), which runs once the response body has been sent or abandoned (in
 * waitUntil where there is one), so a streamed export keeps its database client to the end.
 */
export function withDeps(
  app: FetchApp,
  getDeps: (env: Record<string, unknown>) => { deps: Deps; done?: () => Promise<void> },
): { fetch(request: Request, env?: unknown, executionCtx?: unknown): Promise<Response> } {
  return {
    async fetch(request, env, executionCtx) {
      const bindings = (env ?? {}) as Record<string, unknown>;
      const { deps, done } = getDeps(bindings);
      const ectx = executionCtx as ExecutionCtxLike | undefined;
      const finish = (p: Promise<unknown>) => {
        const settled = p.catch(() => {}).then(() => done!()).catch(() => {});
        if (ectx?.waitUntil) ectx.waitUntil(settled);
        return settled;
      };
      let response: Response;
      try {
        response = await app.fetch(request, { ...bindings, deps }, executionCtx);
      } catch (err) {
        if (done) await finish(Promise.resolve());
        throw err;
      }
      if (!done) return response;
      if (response.body == null) {
        const settled = finish(Promise.resolve());
        if (!ectx?.waitUntil) await settled;
        return response;
      }
      // A streamed body (exports) still reads from the database: release the per-request client
      // only once the body has been sent or the client went away.
      const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
      void finish(response.body.pipeTo(writable));
      return new Response(readable, { status: response.status, statusText: response.statusText, headers: response.headers });
    },
  };
}
