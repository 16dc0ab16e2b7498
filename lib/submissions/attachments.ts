import { and, asc, eq } from 'drizzle-orm';
import { blobs, submissionAttachments } from '../../drizzle/schema';
import { audit } from '../audits/log';
import { storeBlob } from '../blobs';
import { withTx, type Ctx } from '../context';
import { rejection, verbsOn } from '../authz/can';
import { formActee, getFormOrNotFound } from '../forms/queries';
import { problems } from '../problem';
import { getSubmissionOrNotFound } from './queries';
import { getVersionOrNotFound, loadReadable } from './versions';

/** Where an attachment lives: a submission, and a version of it (the current one unless named). */
export interface AttachmentTarget {
  projectId: number;
  xmlFormId: string;
  instanceId: string;
  draft: boolean;
  /** A version's instanceID (S/versions/{versionId}/attachments…); omitted: the current version. */
  versionId?: string;
}

async function defFor(ctx: Ctx, t: AttachmentTarget) {
  const loaded = await loadReadable(ctx, t.projectId, t.xmlFormId, t.instanceId, t.draft);
  if (t.versionId == null) return loaded.def;
  return (await getVersionOrNotFound(ctx, loaded.sub.id, t.versionId)).def;
}

/**
 * The files a version expects, by name (GET S/attachments and S/versions/{v}/attachments, also
 * draft): `[{ name, exists }]`, `exists` when the server holds the file.
 * @throws 404.1; 401.2/403.1 without submission.read. Reads only.
 */
export async function listAttachments(ctx: Ctx, t: AttachmentTarget): Promise<Array<{ name: string; exists: boolean }>> {
  const def = await defFor(ctx, t);
  const rows = await ctx.db.select().from(submissionAttachments).where(eq(submissionAttachments.submissionDefId, def.id)).orderBy(asc(submissionAttachments.name));
  return rows.map((r) => ({ name: r.name, exists: r.blobId != null }));
}

/**
 * One received file of a version (GET S/attachments/{filename}, also draft and per version).
 * @returns `{ name, sha, md5, contentType }` for lib/http/responses blobResponse (ETag = MD5); the
 *   type as uploaded (an upload without one: text/csv for .csv, application/geo+json for .geojson,
 *   else application/octet-stream), with `; charset=utf-8` on text types, as Central serves it.
 * @throws 404.1 unknown or not received; 401.2/403.1 without submission.read.
 */
export async function getAttachmentFile(ctx: Ctx, t: AttachmentTarget, name: string) {
  const def = await defFor(ctx, t);
  const [row] = await ctx.db
    .select({ a: submissionAttachments, sha: blobs.sha, md5: blobs.md5 })
    .from(submissionAttachments)
    .innerJoin(blobs, eq(blobs.id, submissionAttachments.blobId))
    .where(and(eq(submissionAttachments.submissionDefId, def.id), eq(submissionAttachments.name, name)));
  if (!row) throw problems.user.notFound();
  return { name, sha: row.sha, md5: row.md5, contentType: servedType(row.a.contentType) };
}

/**
 * The type Central stores for an upload without one (util/blob.js defaultMimetypeFor): by name for
 * CSV and GeoJSON only; anything else stays unknown (served as application/octet-stream).
 */
function defaultTypeFor(name: string): string | null {
  const ext = name.includes('.') ? name.slice(name.lastIndexOf('.')).toLowerCase() : '';
  return ext === '.csv' ? 'text/csv' : ext === '.geojson' ? 'application/geo+json' : null;
}

/**
 * The Content-Type a stored type is served with, as Central's Express sets it: unknown is
 * application/octet-stream, and text types (and JSON, JavaScript) get `; charset=utf-8` unless they
 * name a charset.
 */
function servedType(stored: string | null): string {
  const type = stored || 'application/octet-stream';
  if (/;\s*charset=/i.test(type)) return type;
  const base = type.split(';')[0]!.trim().toLowerCase();
  return /^text\/|^application\/(javascript|json)$/.test(base) ? `${type}; charset=utf-8` : type;
}

/**
 * Uploads (bytes) or clears (null) one expected file of the current version (POST / DELETE
 * S/attachments/{filename}, also draft), or clears one of an older version (DELETE
 * S/versions/{versionId}/attachments/{filename}); spec, Submission attachment states. Clearing
 * keeps the expected entry.
 * Uploading also works for an actor holding only `submission.create` (a Data Collector, an App
 * User, a public link filling the form in Web Forms), as Central: into its own submission, not
 * edited since, for a file not yet received.
 * Effects: blob stored (rolled back with the transaction), row updated; audit
 * `submission.attachment.update` `{ instanceId, submissionDefId, name, oldBlobId, newBlobId }`.
 * @throws 404.1 unknown submission or a name the version does not expect; 401.2/403.1 without
 *   submission.update (or, uploading, submission.create and the conditions above).
 */
export async function setAttachment(ctx: Ctx, t: AttachmentTarget, name: string, file: { bytes: Uint8Array; contentType: string | null } | null): Promise<void> {
  await withTx(ctx, async (tx) => {
    const f = await getFormOrNotFound(tx, t.projectId, t.xmlFormId);
    const uploading = file != null && t.versionId == null;
    const verbs = await verbsOn(tx, formActee(f));
    const mayUpdate = tx.system || verbs.has('submission.update');
    if (!mayUpdate && !(uploading && verbs.has('submission.create'))) throw rejection(tx);
    const current = await getSubmissionOrNotFound(tx, f, t.instanceId, t.draft);
    const sub = current.sub;
    const def = t.versionId == null ? current.def : (await getVersionOrNotFound(tx, sub.id, t.versionId)).def;
    const [row] = await tx.db
      .select()
      .from(submissionAttachments)
      .where(and(eq(submissionAttachments.submissionDefId, def.id), eq(submissionAttachments.name, name)))
      .for('update');
    if (!row) throw problems.user.notFound();
    if (!mayUpdate) {
      // Central's rule for submission.create only: the submitter, the first version, a missing file.
      const own = tx.auth.actor != null && def.submitterId === tx.auth.actor.id;
      if (!own || row.blobId != null || def.instanceId !== sub.instanceId) throw problems.user.insufficientRights();
    }
    const blob = file ? await storeBlob(tx, file.bytes, file.contentType) : null;
    await tx.db
      .update(submissionAttachments)
      .set({ blobId: blob?.id ?? null, contentType: file ? file.contentType || defaultTypeFor(name) : null, updatedAt: new Date() })
      .where(and(eq(submissionAttachments.submissionDefId, def.id), eq(submissionAttachments.name, name)));
    await audit(tx, tx, 'submission.attachment.update', f.form.acteeId, {
      submissionId: sub.id, instanceId: sub.instanceId, submissionDefId: def.id, name, oldBlobId: row.blobId, newBlobId: blob?.id ?? null,
    });
  });
}
