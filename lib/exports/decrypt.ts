/**
 * Decryption inside CSV/ZIP exports (spec: export passphrase rules; Central's briefcase.js and
 * attachments.js behaviour): for one page of exported rows, the envelopes of the encrypted ones
 * whose managed key the request unlocked, their decrypted submission XML parsed into values, and
 * their media decrypted as they stream into the ZIP. Rows under a key that was not unlocked
 * (no passphrase, or a self-supplied key) are left alone: metadata only, `not decrypted`.
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import { blobs, formDefs, submissionAttachments, submissionDefs, submissions } from '../../drizzle/schema';
import { concatBytes } from '../bytes';
import type { Ctx } from '../context';
import type { CfbDecipher } from '../encryption/crypto';
import type { Decryptor } from '../encryption/decryptor';
import { parseSubmission } from '../xforms/parse-submission';
import type { FormField, SubmissionValue } from '../xforms/types';

/**
 * Runs `fn` over `items` with at most LANES at a time (bounds the buffers and RSA jobs in flight
 * to a few, whatever the batch size). @returns when all are done.
 */
async function inLanes<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(LANES, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}
const LANES = 8;

/** The envelope of one encrypted version, as stored at ingestion. */
export interface Envelope {
  defId: number;
  keyId: number | null;
  instanceId: string;
  /** `media/file` texts, trimmed, in document order, blanks kept ('') so positions are IV indexes. */
  mediaFiles: string[];
  xmlFile: string | null;
  /** SHA-256 of the received encrypted XML file's blob, or null while it is missing. */
  xmlSha: string | null;
  /** Per-file decipher factory, null when the key is not unlocked. */
  open: ((index: number) => CfbDecipher) | null;
}

/**
 * The envelopes of the given encrypted versions whose keys the decryptor holds. One query; the
 * AES keys are unwrapped a few at a time (RSA runs off the main thread on Node).
 * @returns defId → Envelope. A version whose key does not unwrap (damaged data) is left out
 *   (it then reads as `not decrypted`), and a warning is logged.
 */
export async function envelopesFor(ctx: Ctx, decryptor: Decryptor, defIds: number[]): Promise<Map<number, Envelope>> {
  const out = new Map<number, Envelope>();
  if (!decryptor.active || defIds.length === 0) return out;
  const rows = await ctx.db
    .select({
      defId: submissionDefs.id,
      keyId: formDefs.keyId,
      instanceId: submissions.instanceId,
      values: submissionDefs.values,
      xmlSha: sql<string | null>`(select b.sha from ${submissionAttachments} a join ${blobs} b on b.id = a.blob_id
        where a.submission_def_id = ${submissionDefs.id} and a.name = btrim(${submissionDefs.rootValues} ->> '/encryptedXmlFile'))`,
    })
    .from(submissionDefs)
    .innerJoin(submissions, eq(submissions.id, submissionDefs.submissionId))
    .innerJoin(formDefs, eq(formDefs.id, submissionDefs.formDefId))
    .where(and(inArray(submissionDefs.id, defIds), eq(submissionDefs.encrypted, true)));
  await inLanes(rows.filter((r) => decryptor.canDecrypt(r.keyId)), async (r) => {
    const text = (path: string) => r.values.find((v) => v.path === path)?.value.trim() ?? null;
    try {
      const open = await decryptor.forSubmission({ keyId: r.keyId, instanceId: r.instanceId, base64EncryptedKey: text('/base64EncryptedKey') });
      out.set(r.defId, {
        defId: r.defId, keyId: r.keyId, instanceId: r.instanceId,
        mediaFiles: r.values.filter((v) => v.path === '/media/file').map((v) => v.value.trim()),
        xmlFile: text('/encryptedXmlFile') || null,
        xmlSha: r.xmlSha,
        open,
      });
    } catch (err) {
      ctx.log.warn('encrypted submission key does not unwrap', { defId: r.defId, err, requestId: ctx.requestId });
    }
  });
  return out;
}

/**
 * The decrypted bytes of one blob, streamed: each chunk read from the store is decrypted as it
 * comes, the padding checked at the end. Yields nothing for a blob missing from the store.
 * @throws Problem 400.12 when the file does not decrypt (bad padding): the export stream then errors.
 */
export async function* decryptedChunks(ctx: Ctx, sha: string, decipher: CfbDecipher): AsyncGenerator<Uint8Array> {
  const stream = await ctx.blobs.get(sha);
  if (!stream) return;
  for await (const value of streamChunks(stream)) {
    const plain = decipher.update(value);
    if (plain.length > 0) yield plain;
  }
  yield decipher.final();
}

/** A byte stream's chunks in order, its reader's lock released when the consumer stops. */
async function* streamChunks(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * A stored blob's bytes as they are read from the store (lib/blobs).
 * @returns chunks in order; nothing for an object missing from the store (a lost object leaves an
 *   export entry empty rather than breaking the whole export). No side effects.
 */
export async function* blobChunks(ctx: Ctx, sha: string): AsyncGenerator<Uint8Array> {
  const stream = await ctx.blobs.get(sha);
  if (stream) yield* streamChunks(stream);
}

/**
 * Reads chunks to the end and joins them (small files only: submission XML, client audit logs).
 * @returns one buffer of every chunk in order. No side effects.
 */
export async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return concatBytes(parts);
}

/**
 * The field values of each decryptable version in the page (its submission XML decrypted and
 * parsed against its form definition's fields, as ingestion parses plain submissions).
 * @param fieldsOf the fields of a form definition by id.
 * @returns defId → values. Versions that cannot be decrypted (missing XML file or blob, a key not
 *   unlocked, data that does not decrypt or parse) are absent: they export as `not decrypted`.
 */
export async function decryptValues(
  ctx: Ctx, envelopes: Map<number, Envelope>, formDefIdOf: Map<number, number>, fieldsOf: (formDefId: number) => FormField[] | undefined,
): Promise<Map<number, SubmissionValue[]>> {
  const out = new Map<number, SubmissionValue[]>();
  await inLanes([...envelopes.values()], async (e) => {
    if (!e.open || e.xmlSha == null) return;
    try {
      const xml = await collect(decryptedChunks(ctx, e.xmlSha, e.open(e.mediaFiles.length)));
      if (xml.length === 0) return;
      out.set(e.defId, parseSubmission(xml, fieldsOf(formDefIdOf.get(e.defId)!)).values);
    } catch (err) {
      ctx.log.warn('encrypted submission does not decrypt', { defId: e.defId, err, requestId: ctx.requestId });
    }
  });
  return out;
}
