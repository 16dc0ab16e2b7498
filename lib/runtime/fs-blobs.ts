import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, link, mkdir, open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { BlobStore } from '../blobs/store';
import { isBlobKey } from '../blobs/store';

const TEMP_KEY = /^tmp\/[0-9a-f-]{36}$/;

/**
 * The embedded default BlobStore: files under `root` (DATA_DIR/blobs), fanned out by the first two
 * hex characters of the key. Node only. Writes go to a temporary name and are renamed into place,
 * so a reader never sees a half-written file.
 */
export function createFsBlobStore(root: string): BlobStore {
  const pathOf = (key: string) => {
    // Temporary objects (streamed uploads, lib/blobs/staged.ts) live in root/tmp, outside the
    // fan-out folders that list() walks, so the orphan sweep never sees them.
    if (TEMP_KEY.test(key)) return join(root, key);
    if (!isBlobKey(key)) throw new Error(`invalid blob key ${key}`);
    return join(root, key.slice(0, 2), key);
  };
  return {
    kind: 'fs',
    async put(key, body) {
      const path = pathOf(key);
      await mkdir(join(root, key.slice(0, 2)), { recursive: true });
      const tmp = `${path}.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}.tmp`;
      await writeFile(tmp, body);
      await rename(tmp, path);
    },
    async get(key) {
      const path = pathOf(key);
      try {
        await stat(path);
      } catch {
        return null;
      }
      return Readable.toWeb(createReadStream(path)) as unknown as ReadableStream<Uint8Array>;
    },
    async has(key) {
      try {
        await stat(pathOf(key));
        return true;
      } catch {
        return false;
      }
    },
    async delete(key) {
      await rm(pathOf(key), { force: true });
    },
    async putTemporary(body) {
      await mkdir(join(root, 'tmp'), { recursive: true });
      const key = `tmp/${randomUUID()}`;
      const reader = body.getReader();
      const file = await open(pathOf(key), 'w');
      try {
        // Each chunk written out before the next is read: the producer may refill a chunk's
        // buffer then (lib/blobs/staged.ts), so nothing may hold it past that (a WriteStream does).
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (let off = 0; off < value.byteLength;) off += (await file.write(value, off, value.byteLength - off)).bytesWritten;
        }
        await file.close();
      } catch (err) {
        await file.close().catch(() => undefined);
        await reader.cancel(err).catch(() => undefined);
        await rm(pathOf(key), { force: true });
        throw err;
      }
      return key;
    },
    async copyTemporary(tempKey, key) {
      if (!TEMP_KEY.test(tempKey)) throw new Error(`invalid temporary key ${tempKey}`);
      await mkdir(join(root, key.slice(0, 2)), { recursive: true });
      // A hard link: no bytes copied, and the temporary name stays for a retry until deleted.
      await link(pathOf(tempKey), pathOf(key)).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code === 'EEXIST') return;
        await copyFile(pathOf(tempKey), pathOf(key));
      });
    },
    async *list() {
      let dirs: string[];
      try {
        dirs = await readdir(root);
      } catch {
        return;
      }
      for (const d of dirs.sort()) {
        if (!/^[0-9a-f]{2}$/.test(d)) continue;
        for (const f of (await readdir(join(root, d))).sort()) if (isBlobKey(f)) yield f;
      }
    },
  };
}
