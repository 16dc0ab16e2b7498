/**
 * OpenRosa submissions over a real socket, where the local server's multipart reader reads the
 * Node request directly (lib/http/multipart.ts nodeBodyReader): a body arriving in small chunks,
 * several submissions on one keep-alive connection, a body cut before its closing boundary.
 */
import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { blobs, submissionAttachments, submissionDefs } from '../../../drizzle/schema';
import { harness, type Harness } from '../../helpers/harness';
import { appUserFor, multipart, publishForm } from '../../helpers/submitting';

const OR = { 'X-OpenRosa-Version': '1.0' };
const md5 = (b: Uint8Array | string) => createHash('md5').update(b).digest('hex');

/** A media form: one text field and one photo. */
const PHOTO_FORM = `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa">
  <h:head>
    <h:title>Socket photo</h:title>
    <model>
      <instance><data id="socket_photo"><name/><photo/><meta><instanceID/></meta></data></instance>
      <bind nodeset="/data/name" type="string"/>
      <bind nodeset="/data/photo" type="binary"/>
      <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
    </model>
  </h:head>
  <h:body>
    <input ref="/data/name"><label>Name</label></input>
    <upload mediatype="image/*" ref="/data/photo"><label>Photo</label></upload>
  </h:body>
</h:html>`;
const submissionXml = (id: string) =>
  `<data id="socket_photo"><name>Ada</name><photo>p.jpg</photo><meta><instanceID>uuid:${id}</instanceID></meta></data>`;

/** A body as a stream of pieces, `size` bytes within `small` of either end (sent chunked: no Content-Length). */
const pieces = (body: Uint8Array, size: number, small: number) => {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(ctrl) {
      if (at >= body.byteLength) return ctrl.close();
      // Small pieces at the start and at the end (the part heads and the closing delimiter).
      const n = at < small || at > body.byteLength - small ? size : 4096;
      ctrl.enqueue(body.slice(at, at + n));
      at += n;
    },
  });
};

async function storedPhoto(h: Harness, instanceId: string): Promise<string | null> {
  const [row] = await h.db.select({ md5: blobs.md5 }).from(submissionAttachments)
    .innerJoin(submissionDefs, eq(submissionDefs.id, submissionAttachments.submissionDefId))
    .innerJoin(blobs, eq(blobs.id, submissionAttachments.blobId))
    .where(eq(submissionDefs.instanceId, instanceId));
  return row?.md5 ?? null;
}

describe('POST P/submission over a socket', () => {
  test('small chunks, one keep-alive connection, a cut body 400.39', async () => {
    const h = await harness();
    await publishForm(h, PHOTO_FORM);
    const { token } = await appUserFor(h, 'socket_photo', 'Socket tablet');
    const url = `${await h.listen()}/v1/key/${token}/projects/${h.projectId}/submission`;
    const photo = new Uint8Array(70_000).map((_, i) => (i * 7919) % 251);

    // Chunked, in 7-byte pieces up to the photo's bytes, then 4 kB ones: delimiters and headers split across reads.
    const one = multipart(submissionXml('socket-1'), [{ name: 'p.jpg', bytes: photo, type: 'image/jpeg' }]);
    const res1 = await fetch(url, { method: 'POST', body: pieces(one.body, 7, 400), headers: { ...OR, 'Content-Type': one.type }, duplex: 'half' } as RequestInit);
    expect(res1.status, await res1.clone().text()).toBe(201);
    await res1.text();
    expect(await storedPhoto(h, 'uuid:socket-1')).toBe(md5(photo));
    const [def] = await h.db.select({ xml: submissionDefs.xml }).from(submissionDefs).where(eq(submissionDefs.instanceId, 'uuid:socket-1'));
    expect(def!.xml).toBe(submissionXml('socket-1'));

    // Several in turn on the same keep-alive connection (Content-Length bodies).
    for (const id of ['socket-2', 'socket-3']) {
      const b = multipart(submissionXml(id), [{ name: 'p.jpg', bytes: photo, type: 'image/jpeg' }]);
      const res = await fetch(url, { method: 'POST', body: b.body as BodyInit, headers: { ...OR, 'Content-Type': b.type } });
      expect(res.status, await res.clone().text()).toBe(201);
      await res.text();
      expect(await storedPhoto(h, `uuid:${id}`)).toBe(md5(photo));
    }

    // A body that ends before its closing boundary.
    const cut = multipart(submissionXml('socket-4'), [{ name: 'p.jpg', bytes: photo, type: 'image/jpeg' }]);
    const res4 = await fetch(url, { method: 'POST', body: cut.body.subarray(0, 40_000) as BodyInit, headers: { ...OR, 'Content-Type': cut.type } });
    expect(res4.status).toBe(400);
    expect(await res4.json()).toEqual({ code: 400.39, message: 'Multipart form content failed to parse.', details: 'Unexpected end of form' });
    expect(await storedPhoto(h, 'uuid:socket-4')).toBeNull();
  });
});
