/**
 * The decryptor of one export: the managed private keys the request unlocked with its passphrases,
 * and the per-submission work (unwrap the AES key, derive the file's IV, stream AES-CFB).
 * Spec: interface.md export rules ("a wrong passphrase fails the whole request", self-supplied
 * keys are never decrypted); odk-xforms-spec-encryption.md.
 */
import { and, eq, inArray } from 'drizzle-orm';
import { keys } from '../../drizzle/schema';
import type { Ctx } from '../context';
import { CfbDecipher, submissionIvs, unlockPrivateKey, unwrapSubmissionKey, type CfbEngine } from './crypto';

/** `{keyId}={passphrase}` pairs from the query string or the POST body (numeric keys only). */
export type DecryptionPassphrases = Record<string, string>;

/** Unwrapped keys kept per request (~0.4 kB each with its wrapped key: ≤ ~8 MB). */
const CACHE_LIMIT = 20_000;

/** One encrypted submission version as the decryptor needs it. */
export interface EncryptedSubmission {
  /** keys.id of the form definition it was encrypted for (null: the definition has no key). */
  keyId: number | null;
  /** The submission's instanceID (the IV seed). */
  instanceId: string;
  /** The envelope's base64EncryptedKey. */
  base64EncryptedKey: string | null;
}

/**
 * Unlocked managed keys for one request; immutable once loaded. `forSubmission` gives, for one
 * submission, a function from file index to a fresh CfbDecipher (or null when the submission's key
 * was not unlocked: no passphrase given, or a self-supplied key).
 */
export class Decryptor {
  /**
   * Unwrapped AES keys by wrapped key, so that an export's second pass over the same rows (the
   * media after the CSV) does not pay RSA again. Bounded: cleared past CACHE_LIMIT entries.
   */
  private readonly aesKeys = new Map<string, Uint8Array>();

  /**
   * @param privateKeys the unlocked keys by keys.id.
   * @param engine a native AES-CFB engine (Deps.aesCfb, Node), else CfbDecipher's JavaScript AES.
   */
  constructor(private readonly privateKeys: ReadonlyMap<number, CryptoKey>, private readonly engine?: CfbEngine) {}

  /** A decryptor with no keys (no passphrases given): every encrypted row stays `not decrypted`. */
  static readonly none = new Decryptor(new Map());

  /** Whether any key was unlocked. */
  get active(): boolean {
    return this.privateKeys.size > 0;
  }

  /** Whether rows under this key can be decrypted. */
  canDecrypt(keyId: number | null): boolean {
    return keyId != null && this.privateKeys.has(keyId);
  }

  /**
   * @returns `(index) => CfbDecipher` for the submission's files (media in envelope order, then the
   *   submission XML), or null when its key is not unlocked.
   * @throws Problem 400.12 when the envelope's key does not unwrap (damaged data).
   */
  async forSubmission(s: EncryptedSubmission): Promise<((index: number) => CfbDecipher) | null> {
    const priv = s.keyId == null ? undefined : this.privateKeys.get(s.keyId);
    if (!priv || !s.base64EncryptedKey) return null;
    let aesKey = this.aesKeys.get(s.base64EncryptedKey);
    if (!aesKey) {
      aesKey = await unwrapSubmissionKey(priv, s.base64EncryptedKey);
      if (this.aesKeys.size >= CACHE_LIMIT) this.aesKeys.clear();
      this.aesKeys.set(s.base64EncryptedKey, aesKey);
    }
    const ivs = submissionIvs(s.instanceId, aesKey);
    return (index) => new CfbDecipher(aesKey!, ivs(index), this.engine);
  }
}

/**
 * Unlocks the managed keys named in `passphrases`. Ids that are not managed keys (unknown, or a
 * self-supplied key, which has no private half here) are ignored, as Central does.
 * @returns the Decryptor (Decryptor.none when nothing was given).
 * @throws Problem 400.12 when a passphrase does not open its key: the whole request fails, before
 *   any byte of the export is sent. Reads only (`keys`); CPU: one PBKDF2 per key (~50 ms).
 */
export async function loadDecryptor(ctx: Ctx, passphrases: DecryptionPassphrases | undefined): Promise<Decryptor> {
  const ids = Object.keys(passphrases ?? {}).filter((k) => /^\d+$/.test(k)).map(Number).filter(Number.isSafeInteger);
  if (ids.length === 0) return Decryptor.none;
  const rows = await ctx.db.select({ id: keys.id, private: keys.private }).from(keys)
    .where(and(inArray(keys.id, ids), eq(keys.managed, true)));
  const unlocked = new Map<number, CryptoKey>();
  for (const row of rows) {
    if (row.private == null) continue;
    unlocked.set(row.id, await unlockPrivateKey(row.private, passphrases![String(row.id)]!));
  }
  return new Decryptor(unlocked, ctx.aesCfb);
}
