import { createHash } from 'node:crypto';

/**
 * SHA-256 and MD5 of a stream of chunks through node:crypto (OpenSSL on Node, BoringSSL on Workers
 * with nodejs_compat): media of up to 100 MB are hashed while they stream in (lib/blobs/staged.ts)
 * at native speed, where @noble/hashes in JavaScript spends seconds of CPU.
 * @returns `update(chunk)` and `digest()` (lowercase hex; call once).
 */
export function nativeHashStream(): { update(chunk: Uint8Array): void; digest(): { sha: string; md5: string } } {
  const sha = createHash('sha256');
  const md5 = createHash('md5');
  return {
    update(chunk) {
      sha.update(chunk);
      md5.update(chunk);
    },
    digest: () => ({ sha: sha.digest('hex'), md5: md5.digest('hex') }),
  };
}
