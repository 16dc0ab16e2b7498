/**
 * Managed encryption (POST P/key) and the decryption keys of an export. This domain sits above
 * projects, forms and submissions: it changes forms when a project turns encryption on, and the
 * exports ask it for a decryptor; none of those import it.
 *
 * Spec: interface.md `POST /v1/projects/{id}/key`, Encryption key entry, the export passphrase
 * rules; odk-xforms-spec-encryption.md; Central's lib/model/query/projects.js setManagedEncryption
 * and lib/resources/projects.js (behaviour only).
 */
import { and, eq, inArray, isNull } from 'drizzle-orm';
import { formDefs, forms, keys, projects } from '../../drizzle/schema';
import { audit } from '../audits/log';
import { canOrReject } from '../authz/can';
import { withTx, type Ctx } from '../context';
import { carryAttachments, deleteUnpublishedDef, insertDef, readUpload } from '../forms/definitions';
import { encryptedVersionSuffix, withManagedKey } from '../forms/managed-key';
import { problems } from '../problem';
import { getProjectOrNotFound, projectActee, projectJson, type ProjectJson } from '../projects';
import { deleteDraftSubmissions } from '../submissions/manage';
import { generateManagedKey } from './crypto';
import { encryptionProblems } from './problems';

export { Decryptor, loadDecryptor, type DecryptionPassphrases, type EncryptedSubmission } from './decryptor';

/** A string field of the body: absent/null → undefined; another type → 400.11. */
function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const v = body[field];
  if (v == null) return undefined;
  if (typeof v !== 'string') throw problems.user.invalidDataTypeOfParameter({ field, expected: 'string' });
  return v;
}

/**
 * Turns on managed encryption for a project (POST /v1/projects/{id}/key).
 * @param body `{ passphrase: string (≥ 10 characters), hint?: string }`.
 * @returns Project JSON with the new `keyId`.
 * @throws 404.1 no such project; 401.2/403.1 without project.update; 409.4 already enabled;
 *   400.2 no (or a blank) passphrase; 400.21 a passphrase under 10 characters; 400.11 a non-string.
 * Effects, in one transaction (the project row locked for update, so definitions made meanwhile
 * wait and then get the key: lib/forms/managed-key.ts): a managed `keys` row with the protected
 * private key and hint; projects.key_id; for every live form without its own key, a new published
 * version with the public key and an `[encrypted:…]` version suffix (attachments carried,
 * audit `form.update.publish`), and its draft replaced the same way (draft token kept, the old
 * draft definition deleted); every draft submission of the project deleted (they belong to the
 * unencrypted drafts); audits `project.update` `{ encrypted: true }` then `{ data: { keyId } }`
 * (Central logs both). CPU: one RSA-2048 key generation and PBKDF2 before the transaction.
 */
export async function setManagedEncryption(ctx: Ctx, projectId: number, body: unknown): Promise<ProjectJson> {
  const project = await getProjectOrNotFound(ctx, projectId);
  await canOrReject(ctx, 'project.update', projectActee(project));
  if (project.keyId != null) throw encryptionProblems.alreadyActive({ feature: 'managed encryption' });
  const input = (body != null && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const passphrase = optionalString(input, 'passphrase');
  const hint = optionalString(input, 'hint');
  if (passphrase == null || passphrase.trim() === '') throw problems.user.missingParameter({ field: 'passphrase' });
  if (passphrase.length < 10) throw problems.user.passwordTooShort();

  const generated = await generateManagedKey(passphrase);
  return withTx(ctx, async (tx) => {
    const [locked] = await tx.db.select().from(projects)
      .where(and(eq(projects.id, project.id), isNull(projects.deletedAt))).for('update');
    if (!locked) throw problems.user.notFound();
    if (locked.keyId != null) throw encryptionProblems.alreadyActive({ feature: 'managed encryption' });
    await audit(tx, tx, 'project.update', project.acteeId, { encrypted: true });

    const [key] = await tx.db.insert(keys)
      .values({ public: generated.public, private: generated.archive, managed: true, hint: hint ?? null })
      .returning();
    const [updated] = await tx.db.update(projects).set({ keyId: key!.id, updatedAt: new Date() })
      .where(eq(projects.id, project.id)).returning();
    await audit(tx, tx, 'project.update', project.acteeId, { data: { keyId: key!.id } });

    const suffix = encryptedVersionSuffix();
    const live = await tx.db.select().from(forms).where(and(eq(forms.projectId, project.id), isNull(forms.deletedAt)));
    const defIds = live.flatMap((f) => [f.currentDefId, f.draftDefId]).filter((id): id is number => id != null);
    const defs = new Map((defIds.length ? await tx.db.select().from(formDefs).where(inArray(formDefs.id, defIds)) : []).map((d) => [d.id, d]));
    for (const form of live) {
      const current = form.currentDefId == null ? null : defs.get(form.currentDefId)!;
      const draft = form.draftDefId == null ? null : defs.get(form.draftDefId)!;
      const encrypt = (def: typeof current & object) => {
        const upload = withManagedKey(readUpload(new TextEncoder().encode(def.xml), 'application/xml'), key!.public, suffix);
        if (def.xlsBlobId != null) upload.xls = { blobId: def.xlsBlobId, contentType: def.xlsContentType ?? 'application/octet-stream' };
        return upload;
      };
      if (current && current.keyId == null) {
        const next = await insertDef(tx, form, encrypt(current), true);
        await carryAttachments(tx, current.id, next.id);
        await tx.db.update(forms).set({ currentDefId: next.id, updatedAt: new Date() }).where(eq(forms.id, form.id));
        await audit(tx, tx, 'form.update.publish', form.acteeId, { oldDefId: current.id, newDefId: next.id });
      }
      if (draft && draft.keyId == null) {
        const next = await insertDef(tx, form, encrypt(draft), false);
        await carryAttachments(tx, draft.id, next.id);
        await tx.db.update(forms).set({ draftDefId: next.id, updatedAt: new Date() }).where(eq(forms.id, form.id));
        await deleteDraftSubmissions(tx, form);
        await deleteUnpublishedDef(tx, draft.id);
      } else {
        await deleteDraftSubmissions(tx, form);
      }
    }
    return projectJson(updated!);
  });
}

