/**
 * A form's Enketo ids, as Central requests them (spec: Forms, "enketoId"; lib/enketo is the
 * client). With ENKETO_URL/ENKETO_API_KEY set:
 * - a new draft (POST P/forms, POST F/draft without a current draft) asks Enketo for the draft's
 *   id with its Draft Token URL; a replaced draft keeps token and id;
 * - publishing asks for the form's ids (enketoId, enketoOnceId) when it lacks either, giving Enketo
 *   a 15-minute single-use session that may only read this form (the `formview` role).
 * The request waits for Enketo at most ENKETO_REQUEST_BOUND_MS; when Enketo fails or is slower, the
 * answer goes out without the id and a background job (lib/jobs, run by the scheduled sweep, not
 * in the request) asks once more. Without Enketo configured nothing is requested: drafts have no
 * id and publishing draws the ids itself (lib/forms `publicFormIds`), for Web Forms.
 */
import { and, eq, isNull } from 'drizzle-orm';
import { actors, assignments, forms, sessions, type FormRow } from '../../drizzle/schema';
import { insertActor } from '../actors';
import type { Ctx } from '../context';
import { createSurvey, enketoConfigured, type EnketoIds } from '../enketo';
import { enqueueJob, registerJobHandler } from '../jobs';
import { getRoleOrNotFound } from '../roles';
import { createSession } from '../sessions';

/** How long an API request waits for Enketo (Central: half a second). */
export const ENKETO_REQUEST_BOUND_MS = 500;
/** Lifetime of the session Enketo pulls a published form with (Central: 15 minutes). */
const SYNC_SESSION_MS = 15 * 60_000;

/** Whether this server asks Enketo for ids. Pure. */
export const usesEnketo = (ctx: Ctx): boolean => enketoConfigured(ctx.config);

/** The origin Enketo reaches this server at: PUBLIC_URL, else the request's. Pure. */
const domainOf = (ctx: Ctx, origin: string | null | undefined): string => ctx.config.PUBLIC_URL ?? origin ?? 'http://localhost';

/**
 * Asks Enketo for a draft's id (Central's pushDraftToEnketo): OpenRosa root
 * `{origin}/v1/test/{draftToken}/projects/{projectId}/forms/{xmlFormId}/draft`, no session.
 * @param boundMs give up after this long (a request); background work waits longer.
 * @returns the id, or null when Enketo is not configured, failed or was too slow (logged).
 * Effects: one request to Enketo.
 */
export async function requestDraftEnketoId(
  ctx: Ctx, d: { projectId: number; xmlFormId: string; draftToken: string }, origin: string | null | undefined, boundMs?: number,
): Promise<string | null> {
  if (!usesEnketo(ctx)) return null;
  const url = `${domainOf(ctx, origin)}/v1/test/${d.draftToken}/projects/${d.projectId}/forms/${encodeURIComponent(d.xmlFormId)}/draft`;
  try {
    return (await createSurvey(ctx.config, url, d.xmlFormId, undefined, boundMs)).enketoId ?? null;
  } catch (err) {
    ctx.log.warn('Enketo did not give a draft id', { error: (err as Error).message, xmlFormId: d.xmlFormId, requestId: ctx.requestId });
    return null;
  }
}

/**
 * Asks Enketo for a published form's ids (Central's pushFormToEnketo): OpenRosa root
 * `{origin}/v1/projects/{projectId}`, with a new session for Enketo's pull of the form: a
 * `singleUse` actor "Enketo sync token for {acteeId}" holding the `formview` role on this form
 * only, expiring in 15 minutes. Call inside the transaction that publishes.
 * @returns the ids, or null when Enketo is not configured, failed or was too slow (logged).
 * Effects: actee, actor, assignment and session rows; when Enketo fails, the session and
 *   assignment are removed again and the actor marked deleted (Central leaves them); one request
 *   to Enketo.
 */
export async function requestFormEnketoIds(
  tx: Ctx, form: Pick<FormRow, 'projectId' | 'xmlFormId' | 'acteeId'>, origin: string | null | undefined, boundMs?: number,
): Promise<EnketoIds | null> {
  if (!usesEnketo(tx)) return null;
  const expiresAt = new Date(Date.now() + SYNC_SESSION_MS);
  const actor = await insertActor(tx, { type: 'singleUse', displayName: `Enketo sync token for ${form.acteeId}` });
  const role = await getRoleOrNotFound(tx, 'formview');
  await tx.db.insert(assignments).values({ actorId: actor.id, roleId: role.id, acteeId: form.acteeId });
  const { token } = await createSession(tx, actor.id, expiresAt);
  try {
    return await createSurvey(tx.config, `${domainOf(tx, origin)}/v1/projects/${form.projectId}`, form.xmlFormId, token, boundMs);
  } catch (err) {
    tx.log.warn('Enketo did not give form ids', { error: (err as Error).message, xmlFormId: form.xmlFormId, requestId: tx.requestId });
    // No credential is left behind for a pull that will not happen (the retry makes its own).
    await tx.db.delete(sessions).where(eq(sessions.actorId, actor.id));
    await tx.db.delete(assignments).where(eq(assignments.actorId, actor.id));
    await tx.db.update(actors).set({ deletedAt: new Date() }).where(eq(actors.id, actor.id));
    return null;
  }
}

/**
 * Records the background retry of a draft id request that failed in the request (job
 * `enketo.draft`). Effects: a jobs row, run by the sweep after the commit.
 */
export async function retryDraftLater(tx: Ctx, formId: number, draftToken: string, origin: string | null | undefined): Promise<void> {
  await enqueueJob(tx, 'enketo.draft', { formId, draftToken, origin: origin ?? null }, { background: true });
}

/** The same for a published form's ids (job `enketo.publish`). Effects: a jobs row. */
export async function retryPublishLater(tx: Ctx, formId: number, origin: string | null | undefined): Promise<void> {
  await enqueueJob(tx, 'enketo.publish', { formId, origin: origin ?? null }, { background: true });
}

// Background: one more attempt, as Central's worker makes on the form.create /
// form.update.draft.set / form.update.publish events. It bails when the work is moot (the draft
// was published, replaced or deleted; the form got its ids). A failure is logged and the job ends:
// a later publish asks again for ids the form still lacks.
registerJobHandler('enketo.draft', async (tx, payload) => {
  const formId = Number(payload.formId);
  const [form] = await tx.db.select().from(forms).where(and(eq(forms.id, formId), isNull(forms.deletedAt))).for('update');
  if (!form || form.draftDefId == null || form.draftToken == null || form.draftToken !== payload.draftToken || form.draftEnketoId != null) return;
  const enketoId = await requestDraftEnketoId(tx, { projectId: form.projectId, xmlFormId: form.xmlFormId, draftToken: form.draftToken }, payload.origin as string | null);
  if (enketoId != null) await tx.db.update(forms).set({ draftEnketoId: enketoId }).where(eq(forms.id, form.id));
});

registerJobHandler('enketo.publish', async (tx, payload) => {
  const formId = Number(payload.formId);
  const [form] = await tx.db.select().from(forms).where(and(eq(forms.id, formId), isNull(forms.deletedAt))).for('update');
  if (!form || form.currentDefId == null || (form.enketoId != null && form.enketoOnceId != null)) return;
  const ids = await requestFormEnketoIds(tx, form, payload.origin as string | null);
  if (ids != null) await tx.db.update(forms).set(ids).where(eq(forms.id, form.id));
});
