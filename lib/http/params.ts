import type { Context } from 'hono';
import { problems } from '../problem';
import type { AppEnv } from './app';

/**
 * A numeric path id (`:projectId`, `:actorId`, `:id`), checked before any query as PostgreSQL
 * checks Central's integer columns: not an integer → 400.11 (`expected "1a" to be (type integer)`),
 * beyond a 32-bit integer → 400.22. An id that fits but names nothing is the verb's 404.1.
 * @throws Problem 400.11, 400.22.
 */
export function intParam(c: Context<AppEnv>, name: string): number {
  const raw = c.req.param(name) ?? '';
  if (!/^[+-]?\d{1,100}$/.test(raw.trim())) throw problems.user.invalidDataTypeOfParameter({ value: raw, expected: 'type integer' });
  const n = Number(raw.trim());
  if (n > 2_147_483_647 || n < -2_147_483_648) throw problems.user.valueOutOfRangeForType({ value: raw.trim(), type: 'integer' });
  return n;
}

/** The `:projectId` path parameter. @throws Problem 400.11 / 400.22 when it is not a 32-bit integer. */
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
