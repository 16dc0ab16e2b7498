import { and, eq, isNull, sql, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import * as z from 'zod';
import { actors, assignments, publicLinks, sessions, type ActorRow, type PublicLinkRow } from '../../drizzle/schema';
import { actorPropertiesOf, setActorProperties, type ActorPropertiesJson } from '../actor-properties';
import { actorJson, insertActor, type ActorJson } from '../actors';
import { audit } from '../audits/log';
import { canOnFormOrReject, getFormOrNotFound, type LoadedForm } from '../forms/queries';
import { withTx, type Ctx } from '../context';
import { keyset, keysetRead } from '../db/keyset';
import { mapBatches } from '../http/json-stream';
import { problems } from '../problem';
import { getRoleOrNotFound } from '../roles';
import { createSession, forgetSessions, NEVER } from '../sessions';
import { parseInput } from '../validation';

/**
 * Public Access Links (Central: lib/resources/public-links.js, lib/model/query/public-links.js):
 * an Actor of type `public_link` bound to one form, holding the `pub-link` role there (read the
 * open form, create submissions), with a never-expiring session whose token goes in the public
 * URL as `?st=` (or a `/v1/key/{token}/` prefix). Revoking deletes the Actor and its session.
 */

/** Public link JSON in Central's key order: once, the Actor fields, token (null once revoked). */
export type PublicLinkJson = { once: boolean | null } & ActorJson & { token: string | null };

/** Extended public link JSON: adds createdBy (Actor) and properties (`{ name: value }`, or null). */
export type ExtendedPublicLinkJson = PublicLinkJson & { createdBy: ActorJson; properties: ActorPropertiesJson };

/** POST F/public-links body: a displayName (trimmed, 1–255 characters) and `once` (boolean, optional). */
export const CreatePublicLinkInput = z.object({
  displayName: z.string().trim().min(1).max(255),
  once: z.boolean().nullish(),
});

type Row = { a: ActorRow; l: PublicLinkRow; live: boolean; creator: ActorRow };

const linkJson = (r: Pick<Row, 'a' | 'l' | 'live'>): PublicLinkJson => ({
  once: r.l.once,
  ...actorJson(r.a),
  token: r.live ? r.l.token : null,
});

const liveLink = sql<boolean>`exists (select 1 from ${sessions} where ${sessions.actorId} = ${publicLinks.actorId})`;
/** Central's order of links: with a session first, newest first (ties by id). */
const linkOrder = keyset([
  { expr: liveLink, type: 'boolean', desc: true }, { expr: actors.createdAt, type: 'timestamptz', desc: true }, { expr: actors.id, type: 'int', desc: true },
]);

/**
 * Live links of a form (or one of them), those with a session first, newest first (Central's
 * order); `page` reads one keyset batch (`after`: linkOrder's WHERE part).
 */
async function selectLinks(ctx: Ctx, formId: number, actorId?: number, page?: { after: SQL | undefined; limit: number }): Promise<Row[]> {
  const creator = alias(actors, 'creator');
  const query = ctx.db
    .select({ a: actors, l: publicLinks, live: liveLink, creator, ...linkOrder.fields })
    .from(publicLinks)
    .innerJoin(actors, eq(actors.id, publicLinks.actorId))
    .innerJoin(creator, eq(creator.id, publicLinks.createdBy))
    .where(and(eq(publicLinks.formId, formId), isNull(actors.deletedAt), actorId == null ? undefined : eq(publicLinks.actorId, actorId), page?.after))
    .orderBy(...linkOrder.orderBy)
    .$dynamic();
  return page ? query.limit(page.limit) : query;
}

async function extendLinks(ctx: Ctx, rows: Row[]): Promise<ExtendedPublicLinkJson[]> {
  const properties = await actorPropertiesOf(ctx, rows.map((r) => r.a.id));
  return rows.map((r) => ({ ...linkJson(r), createdBy: actorJson(r.creator), properties: properties.get(r.a.id) ?? null }));
}

async function getLinkOrNotFound(ctx: Ctx, f: LoadedForm, actorId: number): Promise<Row> {
  const [row] = Number.isSafeInteger(actorId) ? await selectLinks(ctx, f.form.id, actorId) : [];
  if (!row) throw problems.user.notFound();
  return row;
}

/**
 * Public links of a form (GET F/public-links), live ones only, with a token first, newest first.
 * Extended adds `createdBy` and `properties`. Read by keyset in batches of 1,000 (lib/db/keyset.ts),
 * each batch's properties in one query, for a streamed answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of public link JSON.
 * @throws 404.1 unknown project or form; 401.2/403.1 without public_link.list on the form (before
 *   the first batch). Reads only.
 */
export async function listPublicLinks(
  ctx: Ctx,
  input: { projectId: number; xmlFormId: string; extended: boolean },
): Promise<AsyncGenerator<Array<PublicLinkJson | ExtendedPublicLinkJson>>> {
  const f = await getFormOrNotFound(ctx, input.projectId, input.xmlFormId);
  await canOnFormOrReject(ctx, 'public_link.list', f);
  const rows = keysetRead(linkOrder, (after, limit) => selectLinks(ctx, f.form.id, undefined, { after, limit }));
  return mapBatches(rows, (b) => (input.extended ? extendLinks(ctx, b) : b.map(linkJson)));
}

/**
 * Creates a public link on a form (POST F/public-links).
 * @param body `{ displayName, once?, properties? }`; `properties` as PATCH F/public-links/{id}.
 * @returns PublicLinkJson with its token (without properties, as Central).
 * Effects, in one transaction: actee (under the form), actor, never-expiring session, public_links
 *   row, the `pub-link` role on the form (audit `public_link.assignment.create`); audit
 *   `public_link.create` `{ data }`; property values and audit `public_link.property.set` when given.
 * @throws 404.1 unknown project or form; 401.2/403.1 without public_link.create on the form;
 *   400.2 no displayName; 400.11 `once` not a boolean; 400.8 bad properties.
 */
export async function createPublicLink(ctx: Ctx, input: { projectId: number; xmlFormId: string }, body: unknown): Promise<PublicLinkJson> {
  return withTx(ctx, async (tx) => {
    const f = await getFormOrNotFound(tx, input.projectId, input.xmlFormId);
    await canOnFormOrReject(tx, 'public_link.create', f);
    const data = parseInput(CreatePublicLinkInput, body);
    const actor = await insertActor(tx, { type: 'public_link', displayName: data.displayName, parentActeeId: f.form.acteeId });
    const session = await createSession(tx, actor.id, NEVER);
    const [link] = await tx.db
      .insert(publicLinks)
      .values({ actorId: actor.id, formId: f.form.id, createdBy: tx.auth.actor?.id ?? actor.id, once: data.once ?? null, token: session.token })
      .returning();
    const role = await getRoleOrNotFound(tx, 'pub-link');
    await tx.db.insert(assignments).values({ actorId: actor.id, roleId: role.id, acteeId: f.form.acteeId });
    await audit(tx, tx, 'public_link.assignment.create', actor.acteeId, { roleId: role.id, grantedActeeId: f.form.acteeId });
    const { token: _token, ...logged } = link!;
    await audit(tx, tx, 'public_link.create', actor.acteeId, { data: logged });
    await setActorProperties(tx, f.project.id, actor, (body as { properties?: unknown }).properties);
    return linkJson({ a: actor, l: link!, live: true });
  });
}

/**
 * One public link (GET F/public-links/{id}); extended adds `createdBy` and `properties`.
 * @throws 404.1 unknown form, or no live link of that id on it; 401.2/403.1 without public_link.read.
 */
export async function getPublicLink(
  ctx: Ctx,
  input: { projectId: number; xmlFormId: string; actorId: number; extended: boolean },
): Promise<PublicLinkJson | ExtendedPublicLinkJson> {
  const f = await getFormOrNotFound(ctx, input.projectId, input.xmlFormId);
  await canOnFormOrReject(ctx, 'public_link.read', f);
  const row = await getLinkOrNotFound(ctx, f, input.actorId);
  return input.extended ? (await extendLinks(ctx, [row]))[0]! : linkJson(row);
}

/**
 * Sets and unsets a public link's property values (PATCH F/public-links/{id}).
 * @param body `{ properties?: { name: string | null } }`, as PATCH P/app-users/{id}.
 * @returns the extended public link JSON. Effects, in one transaction: actor_property_values rows;
 *   audit `public_link.property.set` `{ properties }` unless `properties` is empty.
 * @throws 404.1; 401.2/403.1 without public_link.update on the form; 400.8 bad properties.
 */
export async function updatePublicLink(
  ctx: Ctx,
  input: { projectId: number; xmlFormId: string; actorId: number },
  body: unknown,
): Promise<ExtendedPublicLinkJson> {
  return withTx(ctx, async (tx) => {
    const f = await getFormOrNotFound(tx, input.projectId, input.xmlFormId);
    await canOnFormOrReject(tx, 'public_link.update', f);
    const row = await getLinkOrNotFound(tx, f, input.actorId);
    const properties = body != null && typeof body === 'object' ? (body as { properties?: unknown }).properties : undefined;
    await setActorProperties(tx, f.project.id, row.a, properties);
    return (await extendLinks(tx, await selectLinks(tx, f.form.id, row.a.id)))[0]!;
  });
}

/**
 * Revokes a public link for good (DELETE F/public-links/{id}): its token stops working and it
 * leaves the listings; its submissions keep it as their submitter.
 * Effects, in one transaction: actors.deletedAt, its session and assignments deleted, the kept
 *   token cleared; audit `public_link.delete`.
 * @throws 404.1 unknown form or link (a link of another form too); 401.2/403.1 without public_link.delete.
 */
export async function deletePublicLink(ctx: Ctx, input: { projectId: number; xmlFormId: string; actorId: number }): Promise<void> {
  await withTx(ctx, async (tx) => {
    const f = await getFormOrNotFound(tx, input.projectId, input.xmlFormId);
    await canOnFormOrReject(tx, 'public_link.delete', f);
    const { a } = await getLinkOrNotFound(tx, f, input.actorId);
    const now = new Date();
    await tx.db.update(actors).set({ deletedAt: now, updatedAt: now }).where(eq(actors.id, a.id));
    await tx.db.update(publicLinks).set({ token: null }).where(eq(publicLinks.actorId, a.id));
    await tx.db.delete(sessions).where(eq(sessions.actorId, a.id));
    forgetSessions(tx);
    await tx.db.delete(assignments).where(eq(assignments.actorId, a.id));
    await audit(tx, tx, 'public_link.delete', a.acteeId, null);
  });
}
