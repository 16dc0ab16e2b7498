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
 * with a `done` hook (Workers), which runs after the response (waitUntil where there is one).
 */
export function withDeps(
  app: FetchApp,
  getDeps: (env: Record<string, unknown>) => { deps: Deps; done?: () => Promise<void> },
): { fetch(request: Request, env?: unknown, executionCtx?: unknown): Promise<Response> } {
  return {
    async fetch(request, env, executionCtx) {
      const bindings = (env ?? {}) as Record<string, unknown>;
      const { deps, done } = getDeps(bindings);
      try {
        return await app.fetch(request, { ...bindings, deps }, executionCtx);
      } finally {
        if (done) {
          const p = done().catch(() => {});
          const ectx = executionCtx as ExecutionCtxLike | undefined;
          if (ectx?.waitUntil) ectx.waitUntil(p);
          else await p;
        }
      }
    },
  };
}
