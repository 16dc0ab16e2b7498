import type { Context } from 'hono';
import { problems } from '../problem';
import type { AppEnv } from './app';

/**
 * Reads and parses the request's JSON body once per request (authentication may need `__csrf`
 * from it before the handler does).
 * @returns the parsed value; `{}` for an empty body (Central treats it as no fields).
 * @throws Problem 400.1 `{ format: 'json', rawLength }` when it is not JSON; 400.36 over MAX_JSON_BYTES.
 */
export async function peekJsonBody(c: Context<AppEnv>): Promise<unknown> {
  if (c.var.jsonBody !== undefined) return c.var.jsonBody;
  const max = c.var.ctx.config.MAX_JSON_BYTES;
  const declared = Number(c.req.header('content-length') ?? '0');
  if (declared > max) throw problems.user.requestTooLarge();
  const text = await c.req.text();
  if (text.length > max) throw problems.user.requestTooLarge();
  let value: unknown = {};
  if (text.trim() !== '') {
    try {
      value = JSON.parse(text);
    } catch {
      throw problems.user.unparseable({ format: 'json', rawLength: text.length });
    }
  }
  c.set('jsonBody', value);
  return value;
}

/** The JSON body for a handler: as peekJsonBody. */
export const jsonBody = peekJsonBody;
