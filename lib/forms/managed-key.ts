/**
 * Managed encryption as it touches form definitions: a project with a managed key (POST P/key)
 * encrypts every form definition made in it, as Central does (lib/resources/forms.js getPartial,
 * Form#withManagedKey; behaviour only): the project's public key goes into the XForm's
 * `<submission base64RsaPublicKey>` and `[encrypted:XXXXXXXX]` is appended to its version.
 * A form that carries its own (self-supplied) key is left as it is.
 */
import { eq } from 'drizzle-orm';
import { keys, projects } from '../../drizzle/schema';
import type { Ctx } from '../context';
import { addVersionSuffix, injectPublicKey } from '../xforms/rewrite';
import { parseForm } from '../xforms/parse-form';
import type { Upload } from './definitions';

/**
 * Central's version suffix: `[encrypted:` + base64 of the current epoch milliseconds as 6 bytes,
 * big-endian (8 characters) + `]`. One suffix is shared by all forms encrypted in one operation.
 * @param now epoch milliseconds. Pure.
 */
export function encryptedVersionSuffix(now: number = Date.now()): string {
  const bytes = new Uint8Array(6);
  for (let i = 5, v = now; i >= 0; i -= 1, v = Math.floor(v / 256)) bytes[i] = v % 256;
  return `[encrypted:${btoa(String.fromCharCode(...bytes))}]`;
}

/**
 * The definition with the managed key put in: XML rewritten (key injected, version suffixed) and
 * parsed again (so hashes, version and `base64RsaPublicKey` describe the new text). The source
 * spreadsheet and itemsets stay with it. Pure (CPU).
 */
export function withManagedKey(upload: Upload, publicKey: string, suffix: string): Upload {
  const xml = addVersionSuffix(injectPublicKey(upload.xml, publicKey), suffix);
  return { ...upload, xml, parsed: parseForm(new TextEncoder().encode(xml)) };
}

/**
 * The project's managed public key, if encryption is on, read with a share lock on the project row
 * so that enabling encryption (which locks the row for update) and creating a definition do not
 * interleave: a definition made while POST P/key runs waits, then gets the key.
 * @returns `{ id, public }` or null. Call inside withTx.
 */
export async function projectManagedKey(ctx: Ctx, projectId: number): Promise<{ id: number; public: string } | null> {
  const [row] = await ctx.db
    .select({ id: keys.id, public: keys.public })
    .from(projects)
    .innerJoin(keys, eq(keys.id, projects.keyId))
    .where(eq(projects.id, projectId))
    .for('share', { of: projects });
  return row ?? null;
}

/**
 * A new definition for a project as it must be stored: unchanged when the project has no managed
 * key or the form brings its own key, else with the project's key (withManagedKey).
 * Reads the project's key under a share lock (projectManagedKey). Call inside withTx.
 */
export async function applyProjectKey(ctx: Ctx, projectId: number, upload: Upload): Promise<Upload> {
  if (upload.parsed.base64RsaPublicKey) return upload;
  const key = await projectManagedKey(ctx, projectId);
  return key ? withManagedKey(upload, key.public, encryptedVersionSuffix()) : upload;
}

