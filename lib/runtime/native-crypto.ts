import { createDecipheriv } from 'node:crypto';

/**
 * OpenSSL's AES-CFB-128 as a raw block engine for lib/encryption's CfbDecipher (Node and Lambda):
 * `update` of whole blocks, no padding handling (CfbDecipher holds back and checks the padding).
 * Workers have no such thing and use CfbDecipher's own engine (AES from @noble/ciphers); both are
 * tested against the Collect vectors (test/unit/encryption/crypto.test.ts).
 * @param key 16, 24 or 32 bytes. @param iv 16 bytes.
 * @returns a function decrypting consecutive ciphertext ranges (each a multiple of 16 bytes).
 */
export function nativeAesCfb(key: Uint8Array, iv: Uint8Array): (cipher: Uint8Array) => Uint8Array {
  const decipher = createDecipheriv(`aes-${key.length * 8}-cfb`, key, iv).setAutoPadding(false);
  return (cipher) => decipher.update(cipher);
}
