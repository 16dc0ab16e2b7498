import type { Context } from 'hono';
import { problems } from '../problem';
import type { AppEnv } from './app';

/**
 * A numeric path id (`:projectId`, `:actorId`, `:id`). Junk (not a positive integer) can match no
 * row, so it answers 404.1 as Central does for an id that does not exist.
 * @throws Problem 404.1.
 */
export function intParam(c: Context<AppEnv>, name: string): number {
  const raw = c.req.param(name) ?? '';
  if (!/^\d{1,15}$/.test(raw)) throw problems.user.notFound();
  return Number(raw);
}

/** The `:projectId` path parameter. @throws Problem 404.1 when it is not a number. */
export const projectId = (c: Context<AppEnv>) => intParam(c, 'projectId');

/** A string path parameter, percent-decoded by Hono. @throws Problem 404.1 when absent. */
export function stringParam(c: Context<AppEnv>, name: string): string {
  const raw = c.req.param(name);
  if (raw == null || raw === '') throw problems.user.notFound();
  return raw;
}

/**
 * `limit` / `offset` query parameters (Central: non-integers give 400.11).
 * @returns numbers or undefined. @throws Problem 400.11 `{ field, expected: 'integer' }`.
 */
export function paging(c: Context<AppEnv>): { limit?: number; offset?: number } {
  const out: { limit?: number; offset?: number } = {};
  for (const field of ['limit', 'offset'] as const) {
    const raw = c.req.query(field);
    if (raw == null) continue;
    const n = Number.parseInt(raw, 10);
    if (Number.isNaN(n)) throw problems.user.invalidDataTypeOfParameter({ field, expected: 'integer' });
    out[field] = Math.max(0, n);
  }
  return out;
}
