/**
 * The cryptography of ODK encrypted submissions and of managed (passphrase-protected) project keys.
 * Pure: no database, HTTP or blob store; runs on Node, Workers and Lambda alike (Web Crypto plus
 * small audited JS for what Web Crypto lacks).
 *
 * Submissions (shared/reference/odk-xforms-spec-encryption.md; known-answer vectors in
 * shared/fixtures/encryption/collect-encryption-vectors.json):
 * - the device wraps a random 256-bit AES key with the form's RSA public key, RSA-OAEP with SHA-256
 *   and MGF1-SHA-256 (Web Crypto's RSA-OAEP uses the same hash for MGF1): `unwrapSubmissionKey`;
 * - each file gets its own IV: seed = MD5(instanceID ‖ key), and for file n the seed's byte
 *   `n % 16` is incremented before it is taken (`submissionIv`); media files come first, in the
 *   envelope's order, then the submission XML;
 * - the files are AES-256-CFB (128-bit feedback) over PKCS#7-padded plaintext (`CfbDecipher`).
 *   Web Crypto has no CFB, and its modes cannot apply the forward cipher to many arbitrary blocks
 *   in one call, so CFB decryption (P[i] = C[i] ⊕ E(C[i-1]), C[-1] = IV) is built here on AES-ECB
 *   from @noble/ciphers, one call per chunk: every E input is ciphertext already at hand.
 *
 * Managed keys (what Central does at POST P/key, behaviour only): a 2048-bit RSA pair; the private
 * key's PKCS#8 PEM text is encrypted with AES-256-CBC (PKCS#7) under PBKDF2-SHA-256(passphrase,
 * 16-byte salt, 128,000 iterations, 32 bytes); the archive keeps base64 `privkey`, `salt`, `iv`, so
 * keys move between Central and Fieldbase unchanged.
 */
import { ecb } from '@noble/ciphers/aes.js';
import { md5 } from '@noble/hashes/legacy.js';
import { encryptionProblems as problems } from './problems';

/** A passphrase-protected private key, as stored in `keys.private` (Central's shape). */
export interface ManagedKeyArchive {
  /** base64 of AES-256-CBC(PKCS#8 PEM text of the RSA private key). */
  privkey: string;
  /** base64 of the 16-byte PBKDF2 salt. */
  salt: string;
  /** base64 of the 16-byte AES-CBC IV. */
  iv: string;
}

/** PBKDF2 iterations for the passphrase (Central's figure: archives must stay interchangeable). */
export const PBKDF2_ITERATIONS = 128_000;
const OAEP = { name: 'RSA-OAEP', hash: 'SHA-256' } as const;

const buf = (b: Uint8Array): Uint8Array<ArrayBuffer> => b as Uint8Array<ArrayBuffer>;

/** base64 → bytes (standard alphabet; whitespace ignored). @throws Error on invalid input. Pure. */
export function fromBase64(text: string): Uint8Array {
  const bin = atob(text.replace(/\s+/g, ''));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i += 1) out[i] = bin.charCodeAt(i);
  return out;
}

/** bytes → base64 (standard alphabet, padded). Pure. */
export function toBase64(bytes: Uint8Array): string {
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

const pem = (label: string, der: Uint8Array): string =>
  `-----BEGIN ${label}-----\n${toBase64(der).replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END ${label}-----\n`;

// DER helpers for wrapping a PKCS#1 RSAPrivateKey in a PKCS#8 PrivateKeyInfo (Web Crypto imports
// only PKCS#8; Collect's tooling and openssl 1.x write PKCS#1 "RSA PRIVATE KEY" files).
const derLength = (n: number): number[] => {
  if (n < 0x80) return [n];
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return [0x80 | bytes.length, ...bytes];
};
const der = (tag: number, body: Uint8Array): Uint8Array => {
  const head = [tag, ...derLength(body.length)];
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
};
// SEQUENCE { OID 1.2.840.113549.1.1.1 (rsaEncryption), NULL }, and INTEGER 0 (version).
const RSA_ALGORITHM = Uint8Array.from([0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00]);
const VERSION_0 = Uint8Array.from([0x02, 0x01, 0x00]);

/**
 * Imports an RSA private key for RSA-OAEP/SHA-256 decryption from PEM text: PKCS#8
 * (`PRIVATE KEY`, what managed archives hold) or PKCS#1 (`RSA PRIVATE KEY`).
 * @throws Problem 400.12 (undecryptable) when the text is no such key. Pure (Web Crypto).
 */
export async function importPrivateKeyPem(text: string): Promise<CryptoKey> {
  const m = /-----BEGIN (RSA )?PRIVATE KEY-----([\s\S]*?)-----END (?:RSA )?PRIVATE KEY-----/.exec(text);
  if (!m) throw problems.undecryptable();
  try {
    const body = fromBase64(m[2]!);
    const pkcs8 = m[1] ? der(0x30, concat([VERSION_0, RSA_ALGORITHM, der(0x04, body)])) : body;
    return await crypto.subtle.importKey('pkcs8', buf(pkcs8), OAEP, false, ['decrypt']);
  } catch {
    throw problems.undecryptable();
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

async function passphraseKey(passphrase: string, salt: Uint8Array, usage: 'encrypt' | 'decrypt'): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey('raw', buf(new TextEncoder().encode(passphrase)), 'PBKDF2', false, ['deriveKey']);
  return crypto.subtle.deriveKey(
    { name: 'PBKDF2', hash: 'SHA-256', salt: buf(salt), iterations: PBKDF2_ITERATIONS },
    base, { name: 'AES-CBC', length: 256 }, false, [usage],
  );
}

/**
 * Generates a managed key pair and protects its private half with the passphrase.
 * @returns `public`: base64 DER SubjectPublicKeyInfo (the PEM body without envelope or newlines,
 *   392 characters: what goes into a form's `base64RsaPublicKey`); `archive`: the protected
 *   private key. CPU: one RSA-2048 generation (~50–200 ms) and one PBKDF2 (~50 ms). Pure.
 */
export async function generateManagedKey(passphrase: string): Promise<{ public: string; archive: ManagedKeyArchive }> {
  const pair = await crypto.subtle.generateKey(
    { ...OAEP, modulusLength: 2048, publicExponent: Uint8Array.from([1, 0, 1]) }, true, ['encrypt', 'decrypt'],
  );
  const spki = new Uint8Array(await crypto.subtle.exportKey('spki', pair.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey('pkcs8', pair.privateKey));
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const iv = crypto.getRandomValues(new Uint8Array(16));
  const key = await passphraseKey(passphrase, salt, 'encrypt');
  const sealed = await crypto.subtle.encrypt({ name: 'AES-CBC', iv }, key, buf(new TextEncoder().encode(pem('PRIVATE KEY', pkcs8))));
  return { public: toBase64(spki), archive: { privkey: toBase64(new Uint8Array(sealed)), salt: toBase64(salt), iv: toBase64(iv) } };
}

/**
 * Opens a managed key archive with its passphrase.
 * @returns the RSA private key (RSA-OAEP/SHA-256, decrypt only, not extractable).
 * @throws Problem 400.12 (undecryptable) for a wrong passphrase (bad padding, or a plaintext that is
 *   no key) or a damaged archive. Pure (Web Crypto; one PBKDF2, ~50 ms).
 */
export async function unlockPrivateKey(archive: ManagedKeyArchive, passphrase: string): Promise<CryptoKey> {
  let text: string;
  try {
    const key = await passphraseKey(passphrase, fromBase64(archive.salt), 'decrypt');
    const plain = await crypto.subtle.decrypt({ name: 'AES-CBC', iv: buf(fromBase64(archive.iv)) }, key, buf(fromBase64(archive.privkey)));
    text = new TextDecoder('utf-8', { fatal: true }).decode(plain);
  } catch {
    throw problems.undecryptable();
  }
  return importPrivateKeyPem(text);
}

/**
 * Unwraps a submission's AES key (`base64EncryptedKey` of the envelope) with the private key:
 * RSA-OAEP, SHA-256, MGF1-SHA-256.
 * @returns the 32-byte AES key. @throws Problem 400.12 when it does not decrypt. Pure.
 */
export async function unwrapSubmissionKey(privateKey: CryptoKey, base64EncryptedKey: string): Promise<Uint8Array> {
  try {
    const key = new Uint8Array(await crypto.subtle.decrypt(OAEP, privateKey, buf(fromBase64(base64EncryptedKey))));
    if (key.length !== 16 && key.length !== 24 && key.length !== 32) throw new Error('bad key length');
    return key;
  } catch {
    throw problems.undecryptable();
  }
}

/**
 * The IVs of one submission's files (spec: "Encrypted Submissions"): seed = MD5(UTF-8 instanceID ‖
 * aesKey); for file `n` (0-based, media first in envelope order, then the submission XML), each
 * step idx = 0..n increments seed[idx % 16] (mod 256), and the IV is the seed after step n.
 * @returns a function from file index to a fresh 16-byte IV. Pure.
 */
export function submissionIvs(instanceId: string, aesKey: Uint8Array): (index: number) => Uint8Array {
  const seed = md5(concat([new TextEncoder().encode(instanceId), aesKey]));
  const ivs: Uint8Array[] = [];
  return (index) => {
    for (let idx = ivs.length; idx <= index; idx += 1) {
      seed[idx % 16] = (seed[idx % 16]! + 1) & 0xff;
      ivs.push(seed.slice());
    }
    return ivs[index]!.slice();
  };
}

/**
 * A raw AES-CFB-128 decryption engine: `(key, iv)` → a function decrypting consecutive ciphertext
 * ranges of whole blocks (no padding handling). Node's is OpenSSL (lib/runtime/native-crypto.ts).
 */
export type CfbEngine = (key: Uint8Array, iv: Uint8Array) => (cipher: Uint8Array) => Uint8Array;

/**
 * Streaming AES-CFB-128 decryption with PKCS#7 unpadding: feed ciphertext chunks of any size to
 * `update` (it returns the plaintext that is certain so far), then call `final` for the rest.
 * The last 16 bytes are held back until `final`, which checks and strips the padding.
 * Memory: the chunk being decrypted plus at most 31 bytes. Pure (CPU only).
 */
export class CfbDecipher {
  private readonly key: Uint8Array;
  /** A native raw CFB engine for this file (Node: OpenSSL), else null: AES-ECB from @noble/ciphers. */
  private readonly native: ((cipher: Uint8Array) => Uint8Array) | null;
  /** The previous ciphertext block (the IV at first): the next keystream block's cipher input. */
  private feedback: Uint8Array;
  /** Ciphertext not yet decrypted (less than a block, or held for `final`). */
  private pending: Uint8Array = new Uint8Array(0);

  /**
   * @param key 16, 24 or 32 bytes. @param iv 16 bytes.
   * @param engine optional native raw CFB (Deps.aesCfb): same output, OpenSSL speed.
   */
  constructor(key: Uint8Array, iv: Uint8Array, engine?: CfbEngine) {
    if (iv.length !== 16) throw new Error('CFB needs a 16-byte IV');
    this.key = key;
    this.feedback = iv.slice();
    this.native = engine ? engine(key, iv) : null;
  }

  /**
   * Decrypts whole blocks of `pending ‖ chunk`, keeping back the last block (it carries the
   * padding) and any partial one. One allocation per call: the returned plaintext, which is also
   * the cipher's input and output buffer (the keystream is computed in place).
   */
  update(chunk: Uint8Array): Uint8Array {
    const p = this.pending;
    const total = p.length + chunk.length;
    let usable = total - 16;
    usable -= ((usable % 16) + 16) % 16;
    if (usable <= 0) {
      this.pending = concat([p, chunk]);
      return new Uint8Array(0);
    }
    // data = p ‖ chunk, never built: ranges of it are copied straight where they are needed.
    const copy = (target: Uint8Array, offset: number, from: number, to: number) => {
      if (from < p.length) {
        const end = Math.min(to, p.length);
        target.set(p.subarray(from, end), offset);
        offset += end - from;
        from = end;
      }
      if (from < to) target.set(chunk.subarray(from - p.length, to - p.length), offset);
    };
    if (this.native) {
      let input: Uint8Array;
      if (p.length === 0) input = chunk.subarray(0, usable);
      else {
        input = new Uint8Array(usable);
        copy(input, 0, 0, usable);
      }
      const rest = new Uint8Array(total - usable);
      copy(rest, 0, usable, total);
      this.pending = rest;
      return this.native(input);
    }
    const out = new Uint8Array(usable);
    out.set(this.feedback);
    copy(out, 16, 0, usable - 16);
    ecb(this.key, { disablePadding: true }).encrypt(out, out);
    const fromPending = Math.min(p.length, usable);
    for (let i = 0; i < fromPending; i += 1) out[i] = out[i]! ^ p[i]!;
    for (let i = fromPending, j = fromPending - p.length; i < usable; i += 1, j += 1) out[i] = out[i]! ^ chunk[j]!;
    const feedback = new Uint8Array(16);
    copy(feedback, 0, usable - 16, usable);
    this.feedback = feedback;
    const rest = new Uint8Array(total - usable);
    copy(rest, 0, usable, total);
    this.pending = rest;
    return out;
  }

  /**
   * Decrypts what is left and strips the PKCS#7 padding.
   * @throws Problem 400.12 when the total length is not a positive multiple of 16 or the padding is
   *   invalid (a wrong key, a truncated file).
   */
  final(): Uint8Array {
    const data = this.pending;
    this.pending = new Uint8Array(0);
    if (data.length === 0 || data.length % 16 !== 0) throw problems.undecryptable();
    const plain = this.blocks(data);
    const pad = plain[plain.length - 1]!;
    if (pad < 1 || pad > 16 || pad > plain.length) throw problems.undecryptable();
    for (let i = plain.length - pad; i < plain.length; i += 1) if (plain[i] !== pad) throw problems.undecryptable();
    return plain.subarray(0, plain.length - pad);
  }

  /** CFB over whole blocks: E(feedback ‖ C[0..n-2]) ⊕ C, in one ECB call, in place. */
  private blocks(cipher: Uint8Array): Uint8Array {
    if (this.native) return this.native(cipher);
    const out = new Uint8Array(cipher.length);
    out.set(this.feedback);
    out.set(cipher.subarray(0, cipher.length - 16), 16);
    ecb(this.key, { disablePadding: true }).encrypt(out, out);
    for (let i = 0; i < out.length; i += 1) out[i] = out[i]! ^ cipher[i]!;
    this.feedback = cipher.slice(cipher.length - 16);
    return out;
  }
}

/**
 * Decrypts one whole encrypted file (AES-CFB, PKCS#7), with an optional native engine. @returns the plaintext.
 * @throws Problem 400.12 as CfbDecipher.final. Pure.
 */
export function decryptFile(key: Uint8Array, iv: Uint8Array, cipher: Uint8Array, engine?: CfbEngine): Uint8Array {
  const d = new CfbDecipher(key, iv, engine);
  const head = d.update(cipher);
  const tail = d.final();
  return concat([head, tail]);
}
