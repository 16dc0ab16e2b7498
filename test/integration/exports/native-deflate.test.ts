/**
 * The ZIP export with Node's native deflate (Deps.deflateRaw, what `npm start` uses) gives the
 * same entries as the JavaScript deflate the test harness uses, with valid CRCs and sizes.
 */
import { readFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { unzipSync } from 'fflate';
import { expect, test } from 'vitest';
import { exportZip } from '../../../lib/exports';
import { systemCtx } from '../../../lib/context';
import { nativeDeflateRaw } from '../../../lib/runtime/node';
import { harness } from '../../helpers/harness';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');

/** Entry name → { crc, compressed method } from the central directory. */
function centralDirectory(zip: Uint8Array): Map<string, { crc: number; method: number; size: number }> {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let eocd = zip.byteLength - 22;
  while (view.getUint32(eocd, true) !== 0x06054b50) eocd -= 1;
  let at = view.getUint32(eocd + 16, true);
  const out = new Map<string, { crc: number; method: number; size: number }>();
  for (let n = view.getUint16(eocd + 10, true); n > 0; n -= 1) {
    const nameLength = view.getUint16(at + 28, true);
    const name = new TextDecoder().decode(zip.subarray(at + 46, at + 46 + nameLength));
    out.set(name, { method: view.getUint16(at + 10, true), crc: view.getUint32(at + 16, true), size: view.getUint32(at + 24, true) });
    at += 46 + nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
  }
  return out;
}

test('native and JavaScript deflate give the same files, with correct CRC-32 and sizes', async () => {
  const h = await harness();
  expect((await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'bob', body: fixture('forms/withrepeat.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
  for (const k of ['one', 'two', 'three']) {
    expect((await h.post(`/v1/projects/${h.projectId}/forms/withrepeat/submissions`, { as: 'bob', body: fixture(`submissions/withrepeat.${k}.xml`), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
  }
  const query = { filter: null, attachments: true, groupPaths: true, deletedFields: false, splitSelectMultiples: false };
  // Native deflate with native CRC (npm start), native deflate with the JavaScript CRC, all JavaScript.
  const read = async (mode: 'native' | 'native-js-crc' | 'js') => {
    const ctx = { ...systemCtx(h.deps), ...(mode !== 'js' ? { deflateRaw: nativeDeflateRaw } : {}), ...(mode === 'native' ? { crc32 } : {}) };
    return new Uint8Array(await new Response((await exportZip(ctx, h.projectId, 'withrepeat', false, query)).stream).arrayBuffer());
  };
  const js = unzipSync(await read('js'));
  expect(Object.keys(js)).toEqual(['withrepeat.csv', 'withrepeat-child.csv']);
  for (const mode of ['native', 'native-js-crc'] as const) {
    const zip = await read(mode);
    const files = unzipSync(zip);
    expect(Object.keys(files), mode).toEqual(Object.keys(js));
    const dir = centralDirectory(zip);
    for (const [name, bytes] of Object.entries(files)) {
      expect(Buffer.from(bytes).equals(Buffer.from(js[name]!)), `${mode} ${name}`).toBe(true);
      expect(dir.get(name), `${mode} ${name}`).toEqual({ method: 8, crc: crc32(bytes), size: bytes.byteLength });
    }
  }
});
