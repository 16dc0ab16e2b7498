import { md5 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';

/**
 * SHA-256 (the blob key) and MD5 (OpenRosa's `md5:` hashes) of some bytes, as lowercase hex.
 * SHA-256 through Web Crypto (native on Node and Workers: media run to 100 MB); MD5, which Web
 * Crypto lacks, in pure JS (@noble/hashes).
 */
export async function hashBytes(bytes: Uint8Array): Promise<{ sha: string; md5: string }> {
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return { sha: bytesToHex(new Uint8Array(digest)), md5: bytesToHex(md5(bytes)) };
}

/** SHA-256 of a UTF-8 string as lowercase hex (session token hashes; small, so synchronous JS). */
export function sha256Hex(text: string): string {
  return bytesToHex(sha256(new TextEncoder().encode(text)));
}
