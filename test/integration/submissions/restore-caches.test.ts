/**
 * In-process caches after a database restore (issue 17, Done when): restoring a snapshot brings
 * back rows whose ids are reused by later writes with other content (Central's harness resets so
 * between tests; operators restore backups). Nothing remembered in the process may then answer
 * from the old rows: the published form definition's fields read by OpenRosa ingestion, and a
 * verified Basic credential. The restore here is a real one: every table's rows and every
 * sequence put back as they were at the snapshot, in one transaction, on this file's own database.
 */
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { formDefs, forms } from '../../../drizzle/schema';
import { localApp } from '../../../infra/local/app';
import { systemCtx, type Deps } from '../../../lib/context';
import { rawRows } from '../../../lib/db/raw';
import { createLogger } from '../../../lib/log';
import { withDeps } from '../../../lib/runtime/entry';
import { createFsBlobStore } from '../../../lib/runtime/fs-blobs';
import { createUserTask, promoteUserTask } from '../../../lib/users/admin-tasks';
import { COLLECT, jpeg, multipart } from '../../helpers/collect';
import { ownDatabase, type OwnDatabase } from '../../helpers/own-database';

let own: OwnDatabase;
let deps: Deps;
let server: ServerType | undefined;
let base: string;

const EMAIL = 'restore-admin@example.org';
const FIRST_PASSWORD = 'restore admin password 1';
const LATER_PASSWORD = 'a later password, gone after the restore 2';
const basic = (password: string) => ({ Authorization: `Basic ${Buffer.from(`${EMAIL}:${password}`).toString('base64')}` });

/** A form `restored` whose `photo` is plain text (`binary: false`) or a photo (a media field). */
const form = (photoType: 'string' | 'binary') => `<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa">
  <h:head><h:title>Restored ${photoType}</h:title>
    <model>
      <instance><data id="restored"><meta><instanceID/></meta><name/><photo/></data></instance>
      <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" calculate="concat('uuid:', uuid())"/>
      <bind nodeset="/data/name" type="string"/>
      <bind nodeset="/data/photo" type="${photoType}"/>
    </model>
  </h:head>
  <h:body><input ref="/data/name"><label>Name</label></input></h:body>
</h:html>`;
const instance = '<data id="restored"><meta><instanceID>one</instanceID></meta><name>Alice</name><photo>a.jpg</photo></data>';

interface Snapshot {
  tables: Array<{ name: string; rows: string }>;
  sequences: Array<{ name: string; last: string | null }>;
}

/** Every table's rows (as JSON) and every sequence's position. */
async function snapshot(): Promise<Snapshot> {
  const db = own.database.db;
  const names = await rawRows<{ name: string }>(db, sql`select table_name as name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`);
  const tables = [];
  for (const { name } of names) {
    const [row] = await rawRows<{ rows: string }>(db, sql`select coalesce(json_agg(t), '[]'::json)::text as rows from ${sql.identifier(name)} t`);
    tables.push({ name, rows: row!.rows });
  }
  const sequences = await rawRows<{ name: string; last: string | null }>(db, sql`select sequencename as name, last_value::text as last
    from pg_sequences where schemaname = 'public'`);
  return { tables, sequences };
}

/** Puts every row and sequence back as in `snap` (foreign keys checked by nobody mid-way: replica role). */
async function restore(snap: Snapshot): Promise<void> {
  await own.database.db.transaction(async (tx) => {
    await tx.execute(sql`set local session_replication_role = replica`);
    for (const t of snap.tables) {
      await tx.execute(sql`delete from ${sql.identifier(t.name)}`);
      await tx.execute(sql`insert into ${sql.identifier(t.name)} overriding system value
        select * from json_populate_recordset(null::${sql.identifier(t.name)}, ${t.rows}::json)`);
    }
    for (const s of snap.sequences) {
      if (s.last == null) await tx.execute(sql`select setval(${s.name}::regclass, 1, false)`);
      else await tx.execute(sql`select setval(${s.name}::regclass, ${s.last}::bigint, true)`);
    }
  });
}

async function call(method: string, path: string, headers: Record<string, string>, body?: BodyInit): Promise<Response> {
  return fetch(`${base}${path}`, { method, headers, body });
}

beforeAll(async () => {
  own = await ownDatabase('fb_restore');
  deps = { db: own.database.db, blobs: createFsBlobStore(own.blobDir), config: own.config, log: createLogger('silent') };
  const ctx = systemCtx(deps);
  await createUserTask(ctx, EMAIL, FIRST_PASSWORD);
  await promoteUserTask(ctx, EMAIL);
  const app = withDeps(localApp(), () => ({ deps }));
  base = await new Promise<string>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(`http://127.0.0.1:${info.port}`));
  });
}, 60_000);

afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await own?.close();
});

describe('a database restore leaves no stale cached answer', () => {
  test('form fields and Basic credentials are read again when a restored id names other rows', async () => {
    const res = await call('POST', '/v1/projects', { ...basic(FIRST_PASSWORD), 'Content-Type': 'application/json' }, JSON.stringify({ name: 'Restore' }));
    expect(res.status).toBe(200);
    const P = `/v1/projects/${((await res.json()) as { id: number }).id}`;
    const snap = await snapshot();

    // After the snapshot: a form where `photo` is text, a submission to it (its definition's
    // fields now cached), a new password used over Basic (now remembered).
    expect((await call('POST', `${P}/forms?publish=true`, { ...basic(FIRST_PASSWORD), 'Content-Type': 'application/xml' }, form('string'))).status).toBe(200);
    const [before] = await own.database.db.select({ formId: forms.id, defId: forms.currentDefId }).from(forms).where(eq(forms.xmlFormId, 'restored'));
    const { body, type } = multipart(instance, [{ name: 'a.jpg', type: 'image/jpeg', bytes: jpeg(1) }]);
    expect((await call('POST', `${P}/submission`, { ...COLLECT, ...basic(FIRST_PASSWORD), 'Content-Type': type }, body)).status).toBe(201);
    const textAttachments = await call('GET', `${P}/forms/restored/submissions/one/attachments`, basic(FIRST_PASSWORD));
    expect(await textAttachments.json()).toEqual([]);
    const me = (await (await call('GET', '/v1/users/current', basic(FIRST_PASSWORD))).json()) as { id: number };
    const changed = await call('PUT', `/v1/users/${me.id}/password`, { ...basic(FIRST_PASSWORD), 'Content-Type': 'application/json' },
      JSON.stringify({ old: FIRST_PASSWORD, new: LATER_PASSWORD }));
    expect(changed.status).toBe(200);
    expect((await call('GET', '/v1/users/current', basic(LATER_PASSWORD))).status).toBe(200);
    expect((await call('GET', '/v1/users/current', basic(LATER_PASSWORD))).status).toBe(200);

    await restore(snap);

    // The password of the snapshot is the one that works again; the later one is refused at once.
    expect((await call('GET', '/v1/users/current', basic(LATER_PASSWORD))).status).toBe(401);
    expect((await call('GET', '/v1/users/current', basic(FIRST_PASSWORD))).status).toBe(200);

    // The same form and definition ids now name a form whose `photo` is a media field.
    expect((await call('POST', `${P}/forms?publish=true`, { ...basic(FIRST_PASSWORD), 'Content-Type': 'application/xml' }, form('binary'))).status).toBe(200);
    const [after] = await own.database.db.select({ formId: forms.id, defId: forms.currentDefId }).from(forms).where(eq(forms.xmlFormId, 'restored'));
    expect(after).toEqual(before);
    const [def] = await own.database.db.select({ fields: formDefs.fields }).from(formDefs).where(eq(formDefs.id, after!.defId!));
    expect(def!.fields.find((f) => f.path === '/photo')?.binary).toBe(true);

    const again = multipart(instance, [{ name: 'a.jpg', type: 'image/jpeg', bytes: jpeg(1) }]);
    expect((await call('POST', `${P}/submission`, { ...COLLECT, ...basic(FIRST_PASSWORD), 'Content-Type': again.type }, again.body)).status).toBe(201);
    const mediaAttachments = await call('GET', `${P}/forms/restored/submissions/one/attachments`, basic(FIRST_PASSWORD));
    expect(await mediaAttachments.json()).toEqual([{ name: 'a.jpg', exists: true }]);
  });
});
