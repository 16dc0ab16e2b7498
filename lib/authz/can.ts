import { and, eq, inArray, sql } from 'drizzle-orm';
import { assignments, roles } from '../../drizzle/schema';
import type { Ctx } from '../context';
import { prepared } from '../db/prepared';
import { Problem, problems } from '../problem';
import { impliedVerbs } from './verbs';

/**
 * Something rights are checked on: its own actee id, its species ('project', 'user', …) and the
 * actee ids it lives in (a form's project). Grants on any of these, or on '*', apply.
 */
export interface ActeeRef {
  acteeId: string;
  species: string;
  parents?: string[];
}

/** A species itself as an actee (for "create a project", "list users"). */
export const speciesActee = (name: string): ActeeRef => ({ acteeId: name, species: name });

const acteeKeys = (actee: ActeeRef) => ['*', actee.species, actee.acteeId, ...(actee.parents ?? [])];

/**
 * The verbs the request's actor holds on `actee` (union over every role assigned on the actee, its
 * species, its parents and '*'), plus Central's self rules: a user may read and update itself and
 * end its own session. Cached per request.
 * @returns a Set of verb strings; empty for anonymous requests. Reads the database only.
 */
export function verbsOn(ctx: Ctx, actee: ActeeRef): Promise<Set<string>> {
  const actor = ctx.auth.actor;
  if (actor == null) return Promise.resolve(new Set());
  const keys = [...new Set(acteeKeys(actee))];
  const cacheKey = keys.join('\u0000');
  ctx.verbCache ??= new Map();
  const cached = ctx.verbCache.get(cacheKey);
  if (cached) return cached;
  const p = (async () => {
    // Prepared (lib/db/prepared) with five actee slots, padded by repetition: every rights check runs it.
    const slots = [0, 1, 2, 3, 4].map((i) => keys[Math.min(i, keys.length - 1)]!);
    if (keys.length > 5) throw new Error('verbsOn: at most five actee keys');
    const rows = await prepared(ctx.db, 'verbs_on', (d) => d
      .selectDistinct({ verb: sql<string>`jsonb_array_elements_text(${roles.verbs})` })
      .from(assignments)
      .innerJoin(roles, eq(roles.id, assignments.roleId))
      .where(and(
        eq(assignments.actorId, sql.placeholder('actorId')),
        inArray(assignments.acteeId, [0, 1, 2, 3, 4].map((i) => sql.placeholder(`k${i}`))),
      ))
      .prepare('verbs_on'))
      .execute({ actorId: actor.id, k0: slots[0], k1: slots[1], k2: slots[2], k3: slots[3], k4: slots[4] });
    return completeVerbs(ctx, actee, rows.map((r) => r.verb));
  })();
  ctx.verbCache.set(cacheKey, p);
  return p;
}

/** Adds Central's self rules and implied verbs to the verbs granted on an actee. */
function completeVerbs(ctx: Ctx, actee: ActeeRef, granted: string[]): Set<string> {
  const actor = ctx.auth.actor!;
  const verbs = new Set(granted);
  if (actor.acteeId === actee.acteeId) {
    if (actor.type === 'user') {
      verbs.add('user.read');
      verbs.add('user.update');
    }
    if (actor.type !== 'field_key') verbs.add('session.end');
  }
  for (const [verb, implied] of Object.entries(impliedVerbs)) {
    if (verbs.has(verb)) for (const v of implied) verbs.add(v);
  }
  return verbs;
}

/**
 * Records verbs a query already fetched with the target (the grants on '*', the actee's species,
 * the actee and its parents), so the rights check that follows needs no query of its own.
 * No-op for anonymous requests.
 */
export function primeVerbs(ctx: Ctx, actee: ActeeRef, granted: string[]): void {
  if (ctx.auth.actor == null) return;
  ctx.verbCache ??= new Map();
  ctx.verbCache.set([...new Set(acteeKeys(actee))].join('\u0000'), Promise.resolve(completeVerbs(ctx, actee, granted)));
}

/**
 * @param verb one verb, or a list that must all be held.
 * @returns whether the request's actor may do it on `actee`. System contexts (CLI) always may.
 */
export async function can(ctx: Ctx, verb: string | readonly string[], actee: ActeeRef): Promise<boolean> {
  if (ctx.system) return true;
  if (ctx.auth.actor == null) return false;
  const held = await verbsOn(ctx, actee);
  return (typeof verb === 'string' ? [verb] : verb).every((v) => held.has(v));
}

/** The Problem for a failed rights check: 401.2 when nobody authenticated (Central), else 403.1. */
export function rejection(ctx: Ctx): Problem {
  return ctx.auth.actor == null ? problems.user.authenticationFailed() : problems.user.insufficientRights();
}

/**
 * Rights check for lib verbs; call it right after loading the target (404 before 403).
 * @throws Problem 401.2 for anonymous requests, 403.1 when the actor lacks any of the verbs.
 */
export async function canOrReject(ctx: Ctx, verb: string | readonly string[], actee: ActeeRef): Promise<void> {
  if (!(await can(ctx, verb, actee))) throw rejection(ctx);
}

/**
 * Rejects anonymous requests (endpoints that need an actor but no particular verb).
 * @throws Problem 401.2.
 */
export function requireActor(ctx: Ctx): NonNullable<Ctx['auth']['actor']> {
  if (ctx.auth.actor == null && !ctx.system) throw problems.user.authenticationFailed();
  return ctx.auth.actor!;
}
