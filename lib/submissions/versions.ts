import { and, asc, eq } from 'drizzle-orm';
import { formDefs, submissionDefs, type SubmissionDefRow } from '../../drizzle/schema';
import { actorJson } from '../actors';
import type { Ctx } from '../context';
import { keyset, keysetRead } from '../db/keyset';
import { canOnFormOrReject, getFormOrNotFound, type LoadedForm } from '../forms/queries';
import { mapBatches } from '../http/json-stream';
import { problems } from '../problem';
import { diffSubmissionXml, type SubmissionDiffChange } from '../xforms/diff-submissions';
import type { FormField } from '../xforms/types';
import { actorsById, getSubmissionOrNotFound } from './queries';

/** A live (non-draft) submission of a form the actor may read. @throws 404.1; 401.2/403.1. */
export async function loadReadable(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, draft = false) {
  const f: LoadedForm = await getFormOrNotFound(ctx, projectId, xmlFormId);
  await canOnFormOrReject(ctx, 'submission.read', f);
  return { f, ...(await getSubmissionOrNotFound(ctx, f, instanceId, draft)) };
}

/**
 * One version of a submission by its own instanceID (S/versions/{versionId}).
 * @returns the submission_defs row and its form version string. @throws 404.1. Reads only.
 */
export async function getVersionOrNotFound(ctx: Ctx, submissionId: number, versionId: string): Promise<{ def: SubmissionDefRow; formVersion: string }> {
  const [row] = await ctx.db
    .select({ def: submissionDefs, formVersion: formDefs.version })
    .from(submissionDefs)
    .innerJoin(formDefs, eq(formDefs.id, submissionDefs.formDefId))
    .where(and(eq(submissionDefs.submissionId, submissionId), eq(submissionDefs.instanceId, versionId)));
  if (!row) throw problems.user.notFound();
  return row;
}

/** Submission Version JSON (central-outputs/withrepeat/api/submission-versions[-extended].json). */
function versionJson(def: SubmissionDefRow, formVersion: string, submitter?: ReturnType<typeof actorJson> | null) {
  const base = {
    submitterId: def.submitterId, createdAt: def.createdAt.toISOString(), instanceName: def.instanceName, instanceId: def.instanceId,
    current: def.current, deviceId: def.deviceId, userAgent: def.userAgent,
  };
  // Central adds formVersion with the extended metadata only.
  return submitter === undefined ? base : { ...base, submitter, formVersion };
}

/** A submission's versions, newest first (ties by id). */
const versionOrder = keyset([{ expr: submissionDefs.createdAt, type: 'timestamptz', desc: true }, { expr: submissionDefs.id, type: 'int', desc: true }]);

/**
 * Versions of a submission, newest first (GET S/versions; `draft` for F/draft/submissions/…); extended
 * adds `submitter` and `formVersion`. Read by keyset in batches of 1,000 (lib/db/keyset.ts), each
 * batch's submitters in one query, for a streamed answer (lib/http/json-stream.ts).
 * @returns an async generator of batches of Submission Version JSON.
 * @throws 404.1; 401.2/403.1 without submission.read (before the first batch). Reads only.
 */
export async function listVersions(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, extended: boolean, draft = false) {
  const { sub } = await loadReadable(ctx, projectId, xmlFormId, instanceId, draft);
  const rows = keysetRead(versionOrder, (after, limit) => ctx.db
    .select({ def: submissionDefs, formVersion: formDefs.version, ...versionOrder.fields })
    .from(submissionDefs)
    .innerJoin(formDefs, eq(formDefs.id, submissionDefs.formDefId))
    .where(and(eq(submissionDefs.submissionId, sub.id), after))
    .orderBy(...versionOrder.orderBy).limit(limit));
  return mapBatches(rows, async (batch) => {
    if (!extended) return batch.map((r) => versionJson(r.def, r.formVersion));
    const people = await actorsById(ctx, batch.map((r) => r.def.submitterId));
    return batch.map((r) => {
      const a = r.def.submitterId == null ? undefined : people.get(r.def.submitterId);
      return versionJson(r.def, r.formVersion, a ? actorJson(a) : null);
    });
  });
}

/** One version (GET S/versions/{versionId}), extended as the list. @throws 404.1; 401.2/403.1. */
export async function getVersion(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, versionId: string, extended: boolean, draft = false) {
  const { sub } = await loadReadable(ctx, projectId, xmlFormId, instanceId, draft);
  const { def, formVersion } = await getVersionOrNotFound(ctx, sub.id, versionId);
  if (!extended) return versionJson(def, formVersion);
  const a = def.submitterId == null ? undefined : (await actorsById(ctx, [def.submitterId])).get(def.submitterId);
  return versionJson(def, formVersion, a ? actorJson(a) : null);
}

/** A version's XML byte for byte (GET S/versions/{versionId}.xml). @throws 404.1; 401.2/403.1. */
export async function getVersionXml(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, versionId: string, draft = false): Promise<string> {
  const { sub } = await loadReadable(ctx, projectId, xmlFormId, instanceId, draft);
  return (await getVersionOrNotFound(ctx, sub.id, versionId)).def.xml;
}

/**
 * What changed in each edit (GET S/diffs; spec, Submission diff): `{ [versionInstanceId]: changes }`
 * for every version but the first, newest first, each against the version before it
 * (lib/xforms/diff-submissions.ts). @throws 404.1; 401.2/403.1 without submission.read.
 */
export async function diffVersions(ctx: Ctx, projectId: number, xmlFormId: string, instanceId: string, draft = false): Promise<Record<string, SubmissionDiffChange[]>> {
  const { sub } = await loadReadable(ctx, projectId, xmlFormId, instanceId, draft);
  const rows = await ctx.db
    .select({ instanceId: submissionDefs.instanceId, xml: submissionDefs.xml, fields: formDefs.fields })
    .from(submissionDefs)
    .innerJoin(formDefs, eq(formDefs.id, submissionDefs.formDefId))
    .where(eq(submissionDefs.submissionId, sub.id))
    .orderBy(asc(submissionDefs.createdAt), asc(submissionDefs.id));
  const out: Record<string, SubmissionDiffChange[]> = {};
  for (let i = rows.length - 1; i >= 1; i -= 1) {
    const older = rows[i - 1]!;
    const newer = rows[i]!;
    // Both versions' fields, so a repeat known to either is compared as a repeat.
    const fields: FormField[] = [...newer.fields, ...older.fields.filter((f) => !newer.fields.some((n) => n.path === f.path))];
    out[newer.instanceId] = diffSubmissionXml(older.xml, newer.xml, fields);
  }
  return out;
}
