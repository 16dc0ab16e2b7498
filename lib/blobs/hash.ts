import { md5 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';

/**
 * SHA-256 (the blob key) and MD5 (OpenRosa's `md5:` hashes) of some bytes, as lowercase hex.
 * Pure JS (@noble/hashes): Web Crypto has no MD5, and this runs the same on Node and Workers.
 */
export function hashBytes(bytes: Uint8Array): { sha: string; md5: string } {
  return { sha: bytesToHex(sha256(bytes)), md5: bytesToHex(md5(bytes)) };
}

/** SHA-256 of a UTF-8 string as lowercase hex (session token hashes). */
export function sha256Hex(text: string): string {
  return bytesToHex(sha256(new TextEncoder().encode(text)));
}
