/**
 * entities.csv written by PostgreSQL (`COPY … TO STDOUT` in CSV format, lib/entities/entity-lists.ts)
 * over a database of this file's own (the COPY runs on a pooled connection of its own, which a
 * rolled-back test transaction would hide from it): byte for byte the CSV of the paged path
 * (the same app without copyToStream), for values that need quoting (commas, quotes, CR, LF),
 * empty and missing properties, backslashes, apostrophes and non-ASCII, a property added through
 * the API, an updated entity, a deleted one, a creator's name needing quotes; and the deleted
 * Dataset's CSV from the Trash; a reader that stops early leaves the pool usable. On PGlite both apps take the paged path.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { localApp } from '../../../infra/local/app';
import { type Deps } from '../../../lib/context';
import { createLogger } from '../../../lib/log';
import { withDeps } from '../../../lib/runtime/entry';
import { createFsBlobStore } from '../../../lib/runtime/fs-blobs';
import { createUserTask, promoteUserTask } from '../../../lib/users/admin-tasks';
import { systemCtx } from '../../../lib/context';
import { ownDatabase, type OwnDatabase } from '../../helpers/own-database';
import { parseCsv } from '../exports/helpers';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const uuidOf = (i: number) => `${(0x10000000 + i).toString(16).slice(-8)}-1234-4123-8234-${i.toString(16).padStart(12, '0')}`;

let own: OwnDatabase;
let copying: ReturnType<typeof localApp>;
let paging: ReturnType<typeof localApp>;
let auth: Record<string, string>;
let P: string;

const call = async (app: ReturnType<typeof localApp>, method: string, path: string, body?: unknown, type = 'application/json') => app.fetch(new Request(`http://localhost${path}`, {
  method, headers: { ...auth, 'Content-Type': type }, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
}));
const ok = async (method: string, path: string, body?: unknown, type?: string) => {
  const res = await call(copying, method, path, body, type);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path} → ${res.status}: ${text}`);
  return JSON.parse(text);
};
const bytes = async (app: ReturnType<typeof localApp>, path: string) => {
  const res = await call(app, 'GET', path);
  expect(res.status).toBe(200);
  return { type: res.headers.get('content-type'), disposition: res.headers.get('content-disposition'), body: Buffer.from(await res.arrayBuffer()) };
};

beforeAll(async () => {
  own = await ownDatabase('fb_h37_csv');
  const base: Deps = { db: own.database.db, blobs: createFsBlobStore(own.blobDir), config: own.config, log: createLogger('silent') };
  copying = withDeps(localApp(), () => ({ deps: { ...base, copyToStream: true } }));
  paging = withDeps(localApp(), () => ({ deps: base }));
  const email = 'csv-admin@example.org';
  const password = 'csv admin password 1';
  await createUserTask(systemCtx(base), email, password);
  await promoteUserTask(systemCtx(base), email);
  auth = {};
  auth = { Authorization: `Bearer ${(await ok('POST', '/v1/sessions', { email, password })).token}` };
  const me = await ok('GET', '/v1/users/current');
  await ok('PATCH', `/v1/users/${me.id}`, { displayName: 'Admin, "the" one' });
  P = `/v1/projects/${(await ok('POST', '/v1/projects', { name: 'CSV copy' })).id}`;
  await ok('POST', `${P}/forms?publish=true`, fixture('forms/simpleEntity.xml'), 'application/xml');
  // A property added through the API, after the form's.
  await ok('POST', `${P}/datasets/people/properties`, { name: 'height' });
});

afterAll(async () => {
  await own?.close();
});

describe('entities.csv through COPY', () => {
  test('the same bytes as the paged path, live and from the Trash', async () => {
    const values = ['plain', 'a,comma', 'a "quote"', 'line\nbreak', 'carriage\rreturn', '', ' spaced ', 'back\\slash', "it's", 'ünïcödé ✓', '"', ','];
    const list = values.map((v, i) => ({
      uuid: uuidOf(i),
      label: v === '' ? `empty ${i}` : v,
      data: { first_name: v, ...(i % 2 === 0 ? { age: String(i) } : {}), ...(i % 3 === 0 ? { 'height': `${v}!` } : {}) },
    }));
    await ok('POST', `${P}/datasets/people/entities`, { entities: list, source: { name: 'people.csv', size: 1 } });
    await ok('PATCH', `${P}/datasets/people/entities/${uuidOf(3)}?baseVersion=1`, { label: 'updated, "twice"', data: { age: '' } });
    await ok('DELETE', `${P}/datasets/people/entities/${uuidOf(4)}`);

    const path = `${P}/datasets/people/entities.csv`;
    const copied = await bytes(copying, path);
    const paged = await bytes(paging, path);
    expect(copied.body.equals(paged.body)).toBe(true);
    expect(copied.type).toBe(paged.type);
    const rows = parseCsv(copied.body.toString('utf8'));
    expect(rows[0]).toEqual(['__id', 'label', 'first_name', 'age', 'height', '__createdAt', '__creatorId', '__creatorName', '__updates', '__updatedAt', '__version']);
    expect(rows.length).toBe(values.length); // one deleted, plus the header
    const row3 = rows.find((r) => r[0] === uuidOf(3))!;
    expect(row3.slice(1, 5)).toEqual(['updated, "twice"', 'line\nbreak', '', 'line\nbreak!']);
    expect(row3.slice(7)).toEqual(['Admin, "the" one', '1', expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), '2']);
    expect(rows.find((r) => r[0] === uuidOf(5))!.slice(1, 5)).toEqual(['empty 5', '', '', '']);
    expect(rows.find((r) => r[0] === uuidOf(8))!.slice(1, 5)).toEqual(["it's", "it's", '8', '']);

    // The Trash: the Dataset deleted (its form first), its CSV as it was.
    expect((await call(copying, 'DELETE', `${P}/forms/simpleEntity`)).status).toBe(200);
    expect((await call(copying, 'DELETE', `${P}/datasets/people`)).status).toBe(200);
    const [trashed] = await ok('GET', `${P}/datasets?deleted=true`);
    const trashPath = `${P}/trash/datasets/${trashed.id}/entities.csv`;
    const copiedTrash = await bytes(copying, trashPath);
    const pagedTrash = await bytes(paging, trashPath);
    expect(copiedTrash.body.equals(pagedTrash.body)).toBe(true);
    expect(copiedTrash.disposition).toContain('people-deleted.csv');
    expect(copiedTrash.body.equals(copied.body)).toBe(true);
  });

  test('a reader that stops after the first chunk leaves the pool usable', async () => {
    // The first Dataset is in the Trash now: one of many rows (several 64 kB chunks) in a new project.
    const P2 = `/v1/projects/${(await ok('POST', '/v1/projects', { name: 'CSV copy 2' })).id}`;
    await ok('POST', `${P2}/forms?publish=true`, fixture('forms/simpleEntity.xml'), 'application/xml');
    const list = Array.from({ length: 3000 }, (_, i) => ({ uuid: uuidOf(1000 + i), label: `Person ${i}`, data: { first_name: `name ${i}` } }));
    await ok('POST', `${P2}/datasets/people/entities`, { entities: list, source: { name: 'people.csv', size: 1 } });
    // More readers that stop than the pool has connections (a connection not given back would hang the next).
    for (let k = 0; k < 12; k += 1) {
      const res = await call(copying, 'GET', `${P2}/datasets/people/entities.csv`);
      const reader = res.body!.getReader();
      await reader.read();
      await reader.cancel();
    }
    const whole = await bytes(copying, `${P2}/datasets/people/entities.csv`);
    expect(whole.body.equals((await bytes(paging, `${P2}/datasets/people/entities.csv`)).body)).toBe(true);
    expect(parseCsv(whole.body.toString('utf8')).length).toBe(3001);
  });
});
