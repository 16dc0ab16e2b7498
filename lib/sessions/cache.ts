import { and, eq, isNull, sql } from 'drizzle-orm';
import { actors, users } from '../../drizzle/schema';
import { toActor } from '../actors';
import { onCommit, type Actor, type Ctx, type SessionInfo } from '../context';

/**
 * A short-lived, per-process memory of successful session lookups, so that a device polling the
 * form list does not cost a database round trip for its credentials on every request (measured:
 * about a quarter of the OpenRosa throughput on PostgreSQL). Only hits are kept, for at most
 * SESSION_CACHE_SECONDS (0 turns it off), and never past the session's own expiry. Anything in this
 * process that ends sessions or disables an actor clears it at once; another instance (serverless,
 * several servers) may keep accepting a revoked token for at most that many seconds.
 */
type Found = { actor: Actor; session: Omit<SessionInfo, 'token'> };
interface Store {
  entries: Map<string, { until: number; value: Found }>;
  generation: number;
}

const stores = new WeakMap<object, Store>();
const MAX_ENTRIES = 10_000;

function storeFor(ctx: Ctx): Store {
  const key = ctx.tx?.root ?? ctx.db;
  let store = stores.get(key);
  if (!store) stores.set(key, (store = { entries: new Map(), generation: 0 }));
  return store;
}

/** A remembered lookup for a token hash, or undefined. */
export function recall(ctx: Ctx, tokenHash: string): Found | undefined {
  if (ctx.config.SESSION_CACHE_SECONDS <= 0) return undefined;
  const hit = storeFor(ctx).entries.get(tokenHash);
  const now = Date.now();
  if (!hit || hit.until <= now || hit.value.session.expiresAt.getTime() <= now) return undefined;
  return hit.value;
}

/** The current generation: pass it to remember() so a lookup that raced an invalidation is dropped. */
export const generation = (ctx: Ctx): number => storeFor(ctx).generation;

/** Remembers a successful lookup made at generation `gen`. */
export function remember(ctx: Ctx, tokenHash: string, value: Found, gen: number): void {
  const seconds = ctx.config.SESSION_CACHE_SECONDS;
  if (seconds <= 0) return;
  const store = storeFor(ctx);
  if (store.generation !== gen) return;
  if (store.entries.size >= MAX_ENTRIES) store.entries.delete(store.entries.keys().next().value!);
  store.entries.set(tokenHash, { until: Date.now() + seconds * 1000, value });
}

/** Forgets every remembered session (logout, revocation, user or App User deletion). */
export function forgetSessions(ctx: Ctx): void {
  const store = storeFor(ctx);
  const forget = () => {
    store.entries.clear();
    store.generation += 1;
  };
  forget();
  // Again after commit: a lookup between now and the commit still reads the old rows.
  onCommit(ctx, forget);
}

/**
 * Verified Basic credentials, remembered for BASIC_CACHE_SECONDS so that a client sending Basic on
 * every request (Excel, Power BI over OData) does not pay bcrypt each time. Keyed by a SHA-256 of
 * email and password (never the password itself); each entry holds the actor id and the stored
 * bcrypt hash it was verified against, and is used only while the user's row still has both (one
 * indexed read per request, instead of bcrypt): a password change, a deleted user, or a database
 * restore that gives the email another account or password is seen at once. Also dropped by
 * forgetSessions() through the same generation counter.
 */
const BASIC_CACHE_SECONDS = 30;
const basicStores = new WeakMap<object, Map<string, { until: number; actorId: number; passwordHash: string; gen: number }>>();

/** The live user with this email and its stored bcrypt hash (as lib/users/passwords reads it). */
async function userByEmail(ctx: Ctx, email: string) {
  const [row] = await ctx.db
    .select({ a: actors, hash: users.passwordHash })
    .from(users)
    .innerJoin(actors, eq(actors.id, users.actorId))
    .where(and(sql`lower(${users.email}) = lower(${email})`, eq(users.deleted, false), isNull(actors.deletedAt)));
  return row;
}

/**
 * The actor a remembered Basic credential stands for, read fresh from the database, or undefined
 * (nothing remembered, expired, or the user's row no longer matches what was verified).
 */
export async function recallBasic(ctx: Ctx, email: string, credentialHash: string): Promise<Actor | undefined> {
  const key = ctx.tx?.root ?? ctx.db;
  const hit = basicStores.get(key)?.get(credentialHash);
  if (!hit || hit.until <= Date.now() || hit.gen !== storeFor(ctx).generation) return undefined;
  const row = await userByEmail(ctx, email);
  if (!row || row.a.id !== hit.actorId || row.hash !== hit.passwordHash) {
    basicStores.get(key)?.delete(credentialHash);
    return undefined;
  }
  return toActor(row.a);
}

/** Remembers a Basic credential verified for `actor` at generation `gen` (with the hash it matched). */
export async function rememberBasic(ctx: Ctx, email: string, credentialHash: string, actor: Actor, gen: number): Promise<void> {
  if (storeFor(ctx).generation !== gen) return;
  const row = await userByEmail(ctx, email);
  if (!row || row.a.id !== actor.id || row.hash == null) return;
  const key = ctx.tx?.root ?? ctx.db;
  let map = basicStores.get(key);
  if (!map) basicStores.set(key, (map = new Map()));
  if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value!);
  map.set(credentialHash, { until: Date.now() + BASIC_CACHE_SECONDS * 1000, actorId: actor.id, passwordHash: row.hash, gen });
}
