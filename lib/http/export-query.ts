import type { Context } from 'hono';
import type { AppEnv } from './app';
import { Problem } from '../problem';
import { peekJsonBody, readBodyText } from './body';

/** Central reads these flags as the exact strings `true` / `false`; anything else is the default. */
const flag = (c: Context<AppEnv>, name: string, fallback: boolean) => {
  const v = c.req.query(name);
  return v === 'true' ? true : v === 'false' ? false : fallback;
};

/**
 * The export query (spec: CSV export query parameters): `$filter`, `attachments` (default true),
 * `groupPaths` (true), `deletedFields` (false), `splitSelectMultiples` (false). Pure.
 */
export function exportQuery(c: Context<AppEnv>) {
  return {
    filter: c.req.query('$filter') ?? null,
    attachments: flag(c, 'attachments', true),
    groupPaths: flag(c, 'groupPaths', true),
    deletedFields: flag(c, 'deletedFields', false),
    splitSelectMultiples: flag(c, 'splitSelectMultiples', false),
  };
}

/**
 * `{keyId}={passphrase}` pairs of a POST export, from a form-urlencoded or JSON body (numeric keys
 * only; other members are ignored). Managed decryption is a later issue: they are plumbed, not used.
 */
export async function passphrases(c: Context<AppEnv>): Promise<Record<string, string>> {
  const type = c.req.header('content-type') ?? '';
  let body: Record<string, unknown> = {};
  try {
    if (/application\/json/i.test(type)) body = (await peekJsonBody(c)) as Record<string, unknown>;
    else if (/application\/x-www-form-urlencoded/i.test(type)) {
      body = Object.fromEntries(new URLSearchParams(await readBodyText(c, c.var.ctx.config.MAX_JSON_BYTES, 'form')));
    }
  } catch (err) {
    // An oversized body is refused, never read whole; anything unparseable simply has no passphrase.
    if (err instanceof Problem && err.code === 400.36) throw err;
    body = {};
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(body ?? {})) if (/^\d+$/.test(k) && typeof v === 'string') out[k] = v;
  for (const [k, v] of Object.entries(c.req.queries())) if (/^\d+$/.test(k) && v[0] != null) out[k] = v[0];
  return out;
}
