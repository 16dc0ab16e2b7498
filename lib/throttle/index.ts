/**
 * Login throttling: failed password checks (POST /v1/sessions and HTTP Basic) are counted in the
 * database per submitted email and per client address, so the limit holds across processes and
 * serverless instances. Past LOGIN_MAX_FAILURES for an email (or LOGIN_MAX_FAILURES_PER_ADDRESS for
 * an address) within LOGIN_LOCK_MINUTES, attempts answer 429.1 with Retry-After until the lock
 * ends, without running bcrypt, so a flood cannot exhaust the CPU either. The key is the email as
 * sent, never the account: the answer and its timing are the same whether the account exists.
 * Central has no such limit (README, differences from Central).
 */
import { eq, inArray, sql } from 'drizzle-orm';
import { loginFailures } from '../../drizzle/schema';
import { audit } from '../audits/log';
import type { Ctx } from '../context';
import { problems } from '../problem';

const emailKey = (email: string) => `email:${email.trim().toLowerCase()}`;
const addressKey = (address: string) => `address:${address}`;

/**
 * Refuses the attempt when its email or client address is locked.
 * @param address the client's address, or null when unknown (then only the email counts).
 * @throws Problem 429.1 `{ retryAfter }` (seconds) while locked. Reads only.
 */
export async function assertLoginAllowed(ctx: Ctx, email: string, address: string | null): Promise<void> {
  const keys = address ? [emailKey(email), addressKey(address)] : [emailKey(email)];
  const rows = await ctx.db.select().from(loginFailures).where(inArray(loginFailures.key, keys));
  const now = Date.now();
  const until = Math.max(0, ...rows.map((r) => r.lockedUntil?.getTime() ?? 0));
  if (until > now) throw problems.user.tooManyLoginAttempts({ retryAfter: Math.ceil((until - now) / 1000) });
}

/**
 * Counts one failed check for the email and the address; a count reaching its limit within the
 * window locks that key for LOGIN_LOCK_MINUTES. A window that has passed starts again at 1.
 * Effects: upserts login_failures rows (committed with the request's statement, outside any
 * transaction of the login); audits `user.session.throttle` `{ email, address }` when a lock starts.
 */
export async function recordLoginFailure(ctx: Ctx, email: string, address: string | null): Promise<void> {
  const minutes = ctx.config.LOGIN_LOCK_MINUTES;
  const window = sql`interval '1 minute' * ${minutes}`;
  const keys: Array<[string, number]> = [[emailKey(email), ctx.config.LOGIN_MAX_FAILURES]];
  if (address) keys.push([addressKey(address), ctx.config.LOGIN_MAX_FAILURES_PER_ADDRESS]);
  for (const [key, max] of keys) {
    const stale = sql`${loginFailures.firstFailedAt} < now() - ${window}`;
    const next = sql`case when ${stale} then 1 else ${loginFailures.failures} + 1 end`;
    const [row] = await ctx.db
      .insert(loginFailures)
      .values({ key, failures: 1, firstFailedAt: sql`now()`, lockedUntil: max <= 1 ? sql`now() + ${window}` : null })
      .onConflictDoUpdate({
        target: loginFailures.key,
        set: {
          failures: next,
          firstFailedAt: sql`case when ${stale} then now() else ${loginFailures.firstFailedAt} end`,
          lockedUntil: sql`case when ${next} >= ${max} then now() + ${window} else ${loginFailures.lockedUntil} end`,
        },
      })
      .returning();
    if (row && row.failures === max) {
      ctx.log.warn('login throttled', { key, failures: row.failures, requestId: ctx.requestId });
      await audit(ctx, ctx, 'user.session.throttle', null, { email: email.trim().toLowerCase(), address });
    }
  }
}

/** Clears the email's failure count after a successful check. Effects: deletes its row. */
export async function recordLoginSuccess(ctx: Ctx, email: string): Promise<void> {
  await ctx.db.delete(loginFailures).where(eq(loginFailures.key, emailKey(email)));
}
