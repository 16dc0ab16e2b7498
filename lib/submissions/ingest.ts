import { and, eq, isNotNull } from 'drizzle-orm';
import {
  formDefs, submissionAttachments, submissionDefs, submissions, type FormDefRow, type FormRow,
  type SubmissionDefRow, type SubmissionRow,
} from '../../drizzle/schema';
import { audit } from '../audits/log';
import { storeBlob } from '../blobs';
import { withTx, type Ctx } from '../context';
import { getFormOrNotFound, formActee, type LoadedForm } from '../forms/queries';
import { formByDraftToken } from '../forms/openrosa';
import { problemFromDbError } from '../db/errors';
import { problems } from '../problem';
import { can, rejection } from '../authz/can';
import { parseSubmission, readSubmission } from '../xforms/parse-submission';
import type { ParsedSubmission } from '../xforms/types';

/** A file part of an OpenRosa submission POST. */
export interface SubmittedFile {
  name: string;
  bytes: Uint8Array;
  contentType: string | null;
}

export interface OpenRosaSubmission {
  projectId: number;
  /** The submission XML (the xml_submission_file part), byte for byte. */
  xml: Uint8Array;
  files: SubmittedFile[];
  deviceId: string | null;
  userAgent: string | null;
  /** Submitting to the form's draft: through a Draft Token (no actor) or as a signed-in actor. */
  draft?: { token: string; xmlFormId: string } | null;
}

export type IngestOutcome = 'created' | 'attachments' | 'edited';

const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

async function targetFor(ctx: Ctx, input: OpenRosaSubmission, parsed: { xmlFormId: string; version: string }): Promise<{ form: FormRow; def: FormDefRow; draft: boolean }> {
  if (input.draft) {
    const { form, draft } = await formByDraftToken(ctx, input.draft.token, input.projectId, input.draft.xmlFormId);
    if (parsed.xmlFormId !== form.xmlFormId) throw problems.user.notFound();
    return { form, def: draft, draft: true };
  }
  const loaded: LoadedForm = await getFormOrNotFound(ctx, input.projectId, parsed.xmlFormId);
  // Central turns a rights failure into 401.2 on OpenRosa submission, so Collect asks for credentials.
  if (!(await can(ctx, 'submission.create', formActee(loaded)))) {
    const p = rejection(ctx);
    throw p.code === 403.1 ? problems.user.authenticationFailed() : p;
  }
  const [def] = await ctx.db
    .select()
    .from(formDefs)
    .where(and(eq(formDefs.formId, loaded.form.id), isNotNull(formDefs.publishedAt), eq(formDefs.version, parsed.version)));
  if (!def) throw problems.submission.formVersionNotFound({ formVersion: parsed.version });
  if (loaded.form.state === 'closed') throw problems.submission.notAcceptingSubmissions();
  return { form: loaded.form, def, draft: false };
}

async function findVersion(ctx: Ctx, formId: number, draft: boolean, instanceId: string): Promise<{ sub: SubmissionRow; def: SubmissionDefRow } | null> {
  const [row] = await ctx.db
    .select({ sub: submissions, def: submissionDefs })
    .from(submissionDefs)
    .innerJoin(submissions, eq(submissions.id, submissionDefs.submissionId))
    .where(and(eq(submissions.formId, formId), eq(submissions.draft, draft), eq(submissionDefs.instanceId, instanceId)));
  return row ?? null;
}

async function attachFiles(ctx: Ctx, defId: number, expected: string[], files: SubmittedFile[]): Promise<void> {
  const wanted = new Set(expected);
  for (const file of files) {
    // Parts the XML does not name are ignored, as Central does.
    if (!wanted.has(file.name)) continue;
    const blob = await storeBlob(ctx, file.bytes, file.contentType);
    await ctx.db
      .update(submissionAttachments)
      .set({ blobId: blob.id, contentType: file.contentType, updatedAt: new Date() })
      .where(and(eq(submissionAttachments.submissionDefId, defId), eq(submissionAttachments.name, file.name)));
  }
}

async function insertDef(
  ctx: Ctx,
  sub: SubmissionRow,
  formDef: FormDefRow,
  parsed: ParsedSubmission,
  xml: string,
  instanceId: string,
  input: OpenRosaSubmission,
): Promise<SubmissionDefRow> {
  const [def] = await ctx.db
    .insert(submissionDefs)
    .values({
      submissionId: sub.id,
      formDefId: formDef.id,
      instanceId,
      xml,
      md5: parsed.hash.md5,
      instanceName: parsed.instanceName,
      submitterId: ctx.auth.actor?.id ?? null,
      deviceId: input.deviceId,
      userAgent: input.userAgent,
      current: true,
      encrypted: parsed.encryption != null,
      values: parsed.values,
    })
    .returning();
  if (parsed.attachments.length > 0) {
    await ctx.db.insert(submissionAttachments).values(parsed.attachments.map((name) => ({ submissionDefId: def!.id, name })));
  }
  return def!;
}

/**
 * Ingests an OpenRosa submission (POST P/submission, the App User and Draft Token forms of it):
 * the OpenRosa Form Submission API and the spec's Submission rules 1 and 2.
 * - New instanceID: a submission and its first version are stored (XML byte for byte, the values
 *   every later read needs), with the media parts the XML names.
 * - Same instanceID and identical XML (rule 1): the media parts add or replace attachments.
 * - deprecatedID naming the current version (rule 2): a new current version; still-relevant media
 *   carry over by file name; the review state becomes `edited`.
 * @returns what happened. Effects, in one transaction (blobs included): rows in submissions,
 *   submission_defs, submission_attachments, blobs; audit `submission.create` or
 *   `submission.update.version`.
 * @throws 400.1/400.2 unparseable XML or no form id; 401.2 anonymous or not allowed to submit
 *   (Central answers 401 so clients ask for credentials); 404.1 unknown form; 404.4 bad Draft Token;
 *   404.5 deprecatedID unknown; 404.6 unknown form version; 409.1 same instanceID, different XML;
 *   409.2 form closed; 409.9 the edited or resubmitted version is no longer current; 409.18 deleted;
 *   400.8 an instanceID or deprecatedID over 64 characters or with other than [A-Za-z0-9:._-].
 */
export async function ingestOpenRosaSubmission(ctx: Ctx, input: OpenRosaSubmission): Promise<IngestOutcome> {
  try {
    return await ingestOnce(ctx, input);
  } catch (err) {
    // Two identical POSTs racing (Collect retries): the loser hits the unique index. Run it again;
    // it now finds the winner's row and answers as for a resubmission (rule 1), never a duplicate.
    if (!ctx.tx && problemFromDbError(err)?.code === 409.3) return ingestOnce(ctx, input);
    throw err;
  }
}

/** instanceIDs as clients make them (`uuid:…`), bounded so they stay sane in URLs and exports. */
const INSTANCE_ID = /^[A-Za-z0-9:._-]{1,64}$/;

async function ingestOnce(ctx: Ctx, input: OpenRosaSubmission): Promise<IngestOutcome> {
  if (!input.draft && ctx.auth.actor == null) throw problems.user.authenticationFailed();
  // One parse: the tree read here is reused once the form version's fields are known.
  const doc = readSubmission(input.xml);
  const xml = decoder.decode(input.xml);
  return withTx(ctx, async (tx) => {
    const { form, def: formDef, draft } = await targetFor(tx, input, doc);
    const parsed = parseSubmission(doc, formDef.fields);
    const instanceId = parsed.instanceId ?? crypto.randomUUID();
    for (const [field, value] of [['instanceID', instanceId], ['deprecatedID', parsed.deprecatedId]] as const) {
      if (value != null && !INSTANCE_ID.test(value)) {
        throw problems.user.unexpectedValue({ field, value, reason: 'expected at most 64 characters: letters, digits and : . _ -' });
      }
    }
    const existing = await findVersion(tx, form.id, draft, instanceId);

    if (existing) {
      if (existing.sub.deletedAt != null) throw problems.submission.duplicateSubmission();
      if (!existing.def.current) throw problems.submission.deprecatingOldSubmission({ instanceId });
      if (existing.def.xml !== xml) throw problems.submission.xmlConflict();
      await attachFiles(tx, existing.def.id, parsed.attachments, input.files);
      return 'attachments';
    }

    if (parsed.deprecatedId != null) {
      const old = await findVersion(tx, form.id, draft, parsed.deprecatedId);
      if (!old) throw problems.submission.deprecatedIdNotFound({ deprecatedId: parsed.deprecatedId });
      if (old.sub.deletedAt != null) throw problems.submission.duplicateSubmission();
      if (!old.def.current) throw problems.submission.deprecatingOldSubmission({ deprecatedId: parsed.deprecatedId });
      await tx.db.update(submissionDefs).set({ current: false }).where(eq(submissionDefs.id, old.def.id));
      const def = await insertDef(tx, old.sub, formDef, parsed, xml, instanceId, input);
      // Still-relevant media carry over by file name (rule 2); uploaded parts then replace them.
      const oldFiles = await tx.db.select().from(submissionAttachments).where(eq(submissionAttachments.submissionDefId, old.def.id));
      for (const f of oldFiles) {
        if (f.blobId == null || !parsed.attachments.includes(f.name)) continue;
        await tx.db
          .update(submissionAttachments)
          .set({ blobId: f.blobId, contentType: f.contentType, updatedAt: f.updatedAt })
          .where(and(eq(submissionAttachments.submissionDefId, def.id), eq(submissionAttachments.name, f.name)));
      }
      await attachFiles(tx, def.id, parsed.attachments, input.files);
      await tx.db.update(submissions).set({ currentDefId: def.id, reviewState: 'edited', updatedAt: new Date() }).where(eq(submissions.id, old.sub.id));
      await audit(tx, tx, 'submission.update.version', form.acteeId, { submissionId: old.sub.id, instanceId, submissionDefId: def.id });
      return 'edited';
    }

    const [sub] = await tx.db
      .insert(submissions)
      .values({ formId: form.id, instanceId, draft, submitterId: tx.auth.actor?.id ?? null, deviceId: input.deviceId, userAgent: input.userAgent })
      .returning();
    const def = await insertDef(tx, sub!, formDef, parsed, xml, instanceId, input);
    await tx.db.update(submissions).set({ currentDefId: def.id }).where(eq(submissions.id, sub!.id));
    await attachFiles(tx, def.id, parsed.attachments, input.files);
    await audit(tx, tx, 'submission.create', form.acteeId, { submissionId: sub!.id, instanceId, submissionDefId: def.id });
    return 'created';
  });
}

