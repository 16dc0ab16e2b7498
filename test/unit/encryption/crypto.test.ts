/**
 * lib/encryption/crypto against the known-answer vectors of a real ODK Collect
 * (shared/fixtures/encryption), the fixture private key (central-misc/priv.pem) and, for random
 * inputs, Node's OpenSSL as an independent implementation (test code only: lib stays Web Crypto).
 */
import { constants, createCipheriv, createPublicKey, publicEncrypt, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import {
  CfbDecipher, decryptFile, fromBase64, generateManagedKey, importPrivateKeyPem, PBKDF2_ITERATIONS, submissionIvs,
  toBase64, unlockPrivateKey, unwrapSubmissionKey,
} from '../../../lib/encryption/crypto';
import { Problem } from '../../../lib/problem';
import { nativeAesCfb } from '../../../lib/runtime/native-crypto';

const fixtures = new URL('../../../../shared/fixtures/', import.meta.url).pathname;
const vectors = JSON.parse(readFileSync(`${fixtures}encryption/collect-encryption-vectors.json`, 'utf8'));
const privPem = readFileSync(`${fixtures}central-misc/priv.pem`, 'utf8');
const pubPem = readFileSync(`${fixtures}central-misc/pub.pem`, 'utf8');
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

async function rejectsUndecryptable(p: Promise<unknown> | (() => unknown)) {
  const err = await (typeof p === 'function' ? Promise.resolve().then(p) : p).then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(Problem);
  expect((err as Problem).code).toBe(400.12);
}

describe('submission decryption (Collect vectors)', () => {
  test('the envelope key unwraps with priv.pem (RSA-OAEP SHA-256, MGF1-SHA-256)', async () => {
    const priv = await importPrivateKeyPem(privPem);
    const e2e = vectors.endToEnd;
    expect(toBase64(await unwrapSubmissionKey(priv, e2e.base64EncryptedKey))).toBe(e2e.aesKeyBase64);
    expect(toBase64(await unwrapSubmissionKey(priv, vectors.keyUnwrapOnly.base64EncryptedKey))).toBe(vectors.keyUnwrapOnly.aesKeyBase64);
  });

  test('per-file IVs match the vector at every listed index', () => {
    const v = vectors.ivDerivation;
    const ivs = submissionIvs(v.instanceId, fromBase64(v.aesKeyBase64));
    for (const [index, expected] of Object.entries(v.ivsHex)) expect(hex(ivs(Number(index))), `iv ${index}`).toBe(expected);
    // asking again, or out of order, gives the same bytes
    expect(hex(ivs(0))).toBe(v.ivsHex['0']);
    const fresh = submissionIvs(v.instanceId, fromBase64(v.aesKeyBase64));
    expect(hex(fresh(31))).toBe(v.ivsHex['31']);
  });

  test('the payload decrypts end to end to the plaintext submission', async () => {
    const e2e = vectors.endToEnd;
    const priv = await importPrivateKeyPem(privPem);
    const key = await unwrapSubmissionKey(priv, e2e.base64EncryptedKey);
    const iv = submissionIvs(e2e.instanceId, key)(e2e.submissionXmlEncIvIndex);
    const file = new Uint8Array(readFileSync(`${fixtures}encryption/encrypted.two.submission.xml.enc`));
    expect(toBase64(file)).toBe(e2e.submissionXmlEncBase64);
    expect(new TextDecoder().decode(decryptFile(key, iv, file))).toBe(e2e.plaintext);
  });

  test('streamed in chunks of every small size, the output is the same', async () => {
    const e2e = vectors.endToEnd;
    const key = fromBase64(e2e.aesKeyBase64);
    const iv = submissionIvs(e2e.instanceId, key)(1);
    const file = fromBase64(e2e.submissionXmlEncBase64);
    for (const size of [1, 3, 15, 16, 17, 31, 32, 33, 100, 335, 336, 1000]) {
      const d = new CfbDecipher(key, iv);
      const parts: Uint8Array[] = [];
      for (let i = 0; i < file.length; i += size) parts.push(d.update(file.subarray(i, i + size)));
      parts.push(d.final());
      expect(Buffer.concat(parts).toString('utf8'), `chunk ${size}`).toBe(e2e.plaintext);
    }
  });

  test('truncated ciphertext, a wrong IV or a wrong key is rejected as undecryptable (400.12)', async () => {
    const e2e = vectors.endToEnd;
    const key = fromBase64(e2e.aesKeyBase64);
    const ivs = submissionIvs(e2e.instanceId, key);
    const file = fromBase64(e2e.submissionXmlEncBase64);
    await rejectsUndecryptable(() => decryptFile(key, ivs(1), file.subarray(0, 328)));
    await rejectsUndecryptable(() => decryptFile(key, ivs(1), file.subarray(0, 330)));
    await rejectsUndecryptable(() => decryptFile(key, ivs(1), new Uint8Array(0)));
    // A wrong key gives random padding: reject unless it happens to look valid (1 in ~256).
    const wrong = new Uint8Array(32).fill(7);
    const out = (() => { try { return decryptFile(wrong, ivs(1), file); } catch (e) { return e; } })();
    if (out instanceof Uint8Array) expect(new TextDecoder().decode(out)).not.toBe(e2e.plaintext);
    else expect((out as Problem).code).toBe(400.12);
    // A wrapped key under another RSA key does not unwrap.
    const other = await generateManagedKey('another passphrase');
    const otherPriv = await unlockPrivateKey(other.archive, 'another passphrase');
    await rejectsUndecryptable(unwrapSubmissionKey(otherPriv, e2e.base64EncryptedKey));
  });

  test('the native engine (Node: OpenSSL, Deps.aesCfb) gives the same plaintext, streamed in any chunk size', async () => {
    const e2e = vectors.endToEnd;
    const key = fromBase64(e2e.aesKeyBase64);
    const iv = submissionIvs(e2e.instanceId, key)(1);
    const file = fromBase64(e2e.submissionXmlEncBase64);
    expect(new TextDecoder().decode(decryptFile(key, iv, file, nativeAesCfb))).toBe(e2e.plaintext);
    for (const size of [1, 15, 16, 17, 33, 336]) {
      const d = new CfbDecipher(key, iv, nativeAesCfb);
      const parts: Uint8Array[] = [];
      for (let i = 0; i < file.length; i += size) parts.push(d.update(file.subarray(i, i + size)));
      parts.push(d.final());
      expect(Buffer.concat(parts).toString('utf8'), `chunk ${size}`).toBe(e2e.plaintext);
    }
    await rejectsUndecryptable(() => decryptFile(key, iv, file.subarray(0, 328), nativeAesCfb));
    const big = randomBytes(100_000);
    const pad = Buffer.concat([big, Buffer.alloc(16, 16)]);
    const c = createCipheriv('aes-256-cfb', key, iv).setAutoPadding(false);
    const cipher = Buffer.concat([c.update(pad), c.final()]);
    expect(Buffer.from(decryptFile(key, iv, cipher, nativeAesCfb)).equals(big)).toBe(true);
    expect(Buffer.from(decryptFile(key, iv, cipher)).equals(big)).toBe(true);
  });

  test('random files round-trip against OpenSSL AES-256-CFB with PKCS#7 (Collect\'s construction)', () => {
    for (const length of [0, 1, 15, 16, 17, 50_000, 65_537]) {
      const key = randomBytes(32);
      const iv = randomBytes(16);
      const plain = randomBytes(length);
      const pad = 16 - (length % 16);
      const padded = Buffer.concat([plain, Buffer.alloc(pad, pad)]);
      const c = createCipheriv('aes-256-cfb', key, iv).setAutoPadding(false);
      const cipher = Buffer.concat([c.update(padded), c.final()]);
      expect(hex(decryptFile(key, iv, cipher)), `length ${length}`).toBe(plain.toString('hex'));
    }
  });
});

describe('managed keys (POST P/key)', () => {
  test('a generated key is a 392-character SPKI, and its archive opens only with the passphrase', async () => {
    const { public: pub, archive } = await generateManagedKey('supersecret');
    expect(pub).toMatch(/^[A-Za-z0-9+/]{390}==$|^[A-Za-z0-9+/]{392}$/);
    expect(pub).toHaveLength(392);
    expect(fromBase64(archive.salt)).toHaveLength(16);
    expect(fromBase64(archive.iv)).toHaveLength(16);
    expect(PBKDF2_ITERATIONS).toBe(128_000);

    const priv = await unlockPrivateKey(archive, 'supersecret');
    // Encrypt an AES key the way Collect does, with the public key from the form.
    const aes = randomBytes(32);
    const wrapped = publicEncrypt({ key: createPublicKey({ key: Buffer.from(pub, 'base64'), format: 'der', type: 'spki' }), padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, aes);
    expect(hex(await unwrapSubmissionKey(priv, wrapped.toString('base64')))).toBe(aes.toString('hex'));

    await rejectsUndecryptable(unlockPrivateKey(archive, 'wrong passphrase'));
    await rejectsUndecryptable(unlockPrivateKey({ ...archive, privkey: archive.privkey.slice(4) }, 'supersecret'));
  });

  test('an archive made the way Central makes it (Node crypto, PBKDF2 + AES-256-CBC over PKCS#8 PEM) opens', async () => {
    const { pbkdf2Sync, generateKeyPairSync } = await import('node:crypto');
    const { privateKey, publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const salt = randomBytes(16);
    const iv = randomBytes(16);
    const key = pbkdf2Sync('superdupersecret', salt, 128000, 32, 'sha256');
    const c = createCipheriv('aes-256-cbc', key, iv);
    const privkey = c.update(privateKey, 'utf8', 'base64') + c.final('base64');
    const priv = await unlockPrivateKey({ privkey, salt: salt.toString('base64'), iv: iv.toString('base64') }, 'superdupersecret');
    const aes = randomBytes(32);
    const wrapped = publicEncrypt({ key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, aes);
    expect(hex(await unwrapSubmissionKey(priv, wrapped.toString('base64')))).toBe(aes.toString('hex'));
  });

  test('the fixture public key matches the fixture private key (PKCS#1 PEM import)', async () => {
    const priv = await importPrivateKeyPem(privPem);
    const aes = randomBytes(32);
    const wrapped = publicEncrypt({ key: pubPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, aes);
    expect(hex(await unwrapSubmissionKey(priv, wrapped.toString('base64')))).toBe(aes.toString('hex'));
    await rejectsUndecryptable(importPrivateKeyPem('not a key'));
  });
});
