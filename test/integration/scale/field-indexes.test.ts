/**
 * Indexes that follow the filters users run (issue 21, lib/odata/field-indexes.ts): an OData
 * `$filter` on a form field builds an expression index on that field in the background; later
 * filters are answered through it (EXPLAIN shows an index scan) with the same rows as before, and
 * a submission whose value the index cannot read as its kind is still accepted.
 * Runs on this file's own database (real concurrency: CREATE INDEX CONCURRENTLY needs to run
 * outside a transaction): PostgreSQL when DATABASE_URL is set, else PGlite (plain CREATE INDEX).
 */
import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { localApp } from '../../../infra/local/app';
import { systemCtx, type Deps } from '../../../lib/context';
import { rawRows } from '../../../lib/db/raw';
import { createLogger } from '../../../lib/log';
import { fieldIndexesSettled } from '../../../lib/odata/field-indexes';
import { withDeps } from '../../../lib/runtime/entry';
import { createFsBlobStore } from '../../../lib/runtime/fs-blobs';
import { createUserTask, promoteUserTask } from '../../../lib/users/admin-tasks';
import { COLLECT, multipart } from '../../helpers/collect';
import { ownDatabase, type OwnDatabase } from '../../helpers/own-database';

let own: OwnDatabase;
let deps: Deps;
let server: ServerType | undefined;
let base: string;
let P: string;
const EMAIL = 'field-index-admin@example.org';
const PASSWORD = 'field index admin password';
const auth = { Authorization: `Basic ${Buffer.from(`${EMAIL}:${PASSWORD}`).toString('base64')}` };
const N = 3000;

const formXml = `<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa">
  <h:head><h:title>Indexed</h:title>
    <model>
      <instance><data id="indexed"><meta><instanceID/></meta><name/><age/><born/></data></instance>
      <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" calculate="concat('uuid:', uuid())"/>
      <bind nodeset="/data/name" type="string"/>
      <bind nodeset="/data/age" type="int"/>
      <bind nodeset="/data/born" type="date"/>
    </model>
  </h:head>
  <h:body><input ref="/data/name"><label>Name</label></input></h:body>
</h:html>`;
const instance = (id: string, name: string, age: string, born: string) =>
  `<data id="indexed"><meta><instanceID>${id}</instanceID></meta><name>${name}</name><age>${age}</age><born>${born}</born></data>`;

async function submit(id: string, name: string, age: string, born: string): Promise<number> {
  const { body, type } = multipart(instance(id, name, age, born), []);
  return (await fetch(`${base}${P}/submission`, { method: 'POST', headers: { ...COLLECT, ...auth, 'Content-Type': type }, body })).status;
}

async function feed(filter: string): Promise<string[]> {
  const res = await fetch(`${base}${P}/forms/indexed.svc/Submissions?$filter=${encodeURIComponent(filter)}&$select=__id`, { headers: auth });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { value: Array<{ __id: string }> }).value.map((r) => r.__id).sort();
}

/** The SQL statements the server runs for one request (drizzle's logger). */
async function statementsOf(run: () => Promise<unknown>): Promise<Array<{ query: string; params: unknown[] }>> {
  const logger = (own.database.db as unknown as { session: { logger: { logQuery: (q: string, p: unknown[]) => void } } }).session.logger;
  const before = logger.logQuery;
  const out: Array<{ query: string; params: unknown[] }> = [];
  logger.logQuery = (query, params) => { out.push({ query, params }); };
  try {
    await run();
  } finally {
    logger.logQuery = before;
  }
  return out;
}

/** EXPLAIN of the feed's statement for a filter, sequential scans disabled (the table is small; the question is whether the index can answer). */
async function plan(filter: string): Promise<string> {
  const logged = await statementsOf(() => feed(filter));
  const q = logged.find((x) => /from "submissions"/.test(x.query) && /root_values/.test(x.query) && !/submission_field_indexes/.test(x.query));
  expect(q, 'the feed statement').toBeDefined();
  return own.database.db.transaction(async (tx) => {
    await tx.execute(sql`set local enable_seqscan = off`);
    // Parameters inlined as literals: as a custom plan would see them.
    const text = `explain ${q!.query.replace(/\$(\d+)/g, (_, n: string) => literal(q!.params[Number(n) - 1]))}`;
    const rows = await rawRows<Record<string, string>>(tx as never, sql.raw(text));
    return rows.map((r) => Object.values(r)[0]).join('\n');
  });
}
const literal = (v: unknown) => (v == null ? 'null' : typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`);

beforeAll(async () => {
  own = await ownDatabase('fb_fieldidx');
  deps = { db: own.database.db, blobs: createFsBlobStore(own.blobDir), config: { ...own.config, ODATA_FIELD_INDEX_MIN_ROWS: 0 }, log: createLogger('silent') };
  const ctx = systemCtx(deps);
  await createUserTask(ctx, EMAIL, PASSWORD);
  await promoteUserTask(ctx, EMAIL);
  const app = withDeps(localApp(), () => ({ deps }));
  base = await new Promise<string>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(`http://127.0.0.1:${info.port}`));
  });
  const res = await fetch(`${base}/v1/projects`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Indexed' }) });
  P = `/v1/projects/${((await res.json()) as { id: number }).id}`;
  expect((await fetch(`${base}${P}/forms?publish=true`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/xml' }, body: formXml })).status).toBe(200);
  expect(await submit('one', 'n1', '1', '2020-01-01')).toBe(201);
  expect(await submit('noname', '', '5', '')).toBe(201);
  // N − 2 more as copies of 'one' with their own values: name nG, age G % 90, born 2020-01-01 + G days.
  await own.database.db.execute(sql`
    with src as (select s.*, d.form_def_id, d.xml, d.md5, d.values, d.root_text from submissions s join submission_defs d on d.id = s.current_def_id where s.instance_id = 'one'),
    input as materialized (
      select g, 'c' || g as iid, src.created_at + g * interval '1 second' as at,
        jsonb_build_object('/meta/instanceID', 'c' || g, '/name', 'n' || g, '/age', (g % 90)::text, '/born', to_char(date '2020-01-01' + g, 'YYYY-MM-DD')) as root,
        nextval(pg_get_serial_sequence('submissions', 'id')) as sid, nextval(pg_get_serial_sequence('submission_defs', 'id')) as did
      from src, generate_series(2, ${N - 1}) g
    ), s as (
      insert into submissions (id, form_id, instance_id, draft, submitter_id, device_id, user_agent, current_def_id, created_at)
      overriding system value
      select sid, src.form_id, iid, false, src.submitter_id, src.device_id, src.user_agent, did, at from input, src returning 1
    )
    insert into submission_defs (id, submission_id, form_def_id, instance_id, xml, md5, submitter_id, device_id, user_agent, values, root_values, root_text, created_at)
    overriding system value
    select did, sid, src.form_def_id, iid, src.xml, src.md5, src.submitter_id, src.device_id, src.user_agent, src.values, input.root, src.root_text, at from input, src`);
  // Statistics as autovacuum would have them after such a load.
  await own.database.db.execute(sql`analyze`);
}, 120_000);

afterAll(async () => {
  await fieldIndexesSettled();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await own?.close();
});

const cases = [
  "name eq 'n1234'",
  'age gt 87',
  'age eq 0',
  'born lt 2020-01-05',
  "not (name eq 'n7')",
  'age ge 10 and age lt 12',
];

describe('field indexes', () => {
  test('a filtered field gets an index; the same filters answer the same rows through it (EXPLAIN: index scans)', async () => {
    const before: Record<string, string[]> = {};
    for (const f of cases) before[f] = await feed(f);
    expect(before["name eq 'n1234'"]).toEqual(['c1234']);
    expect(before['age gt 87']).toHaveLength(Array.from({ length: N - 2 }, (_, i) => (i + 2) % 90).filter((a) => a > 87).length);
    // `not (name eq …)` keeps the submission without a name, as Central's `is not distinct from`.
    expect(before["not (name eq 'n7')"]).toContain('noname');
    expect(before["not (name eq 'n7')"]).toHaveLength(N - 1);
    await fieldIndexesSettled();
    const built = await rawRows<{ path: string; kind: string; state: string; name: string }>(own.database.db,
      sql`select path, kind, state, name from submission_field_indexes order by path`);
    expect(built.map((r) => [r.path, r.kind, r.state])).toEqual([['/age', 'number', 'ready'], ['/born', 'time', 'ready'], ['/name', 'text', 'ready']]);
    const pgIndexes = await rawRows<{ indexname: string }>(own.database.db, sql`select indexname from pg_indexes where tablename = 'submission_defs'`);
    for (const r of built) expect(pgIndexes.map((x) => x.indexname)).toContain(r.name);

    for (const f of cases) expect(await feed(f), f).toEqual(before[f]);
    const eqPlan = await plan("name eq 'n1234'");
    expect(eqPlan).toMatch(/(Index Scan using|Index Scan Backward using|Bitmap Index Scan on) sfi_text_/);
    // …and from the few versions found to their submissions by submissions_current_def, not by
    // reading every submission of the form (a 470 ms scan at 1,000,000).
    expect(eqPlan).toMatch(/Index Scan using submissions_current_def on submissions/);
    const rangePlan = await plan('age gt 87');
    expect(rangePlan).toMatch(/(Index Scan using|Index Scan Backward using|Bitmap Index Scan on) sfi_number_/);
    const datePlan = await plan('born lt 2020-01-05');
    expect(datePlan).toMatch(/(Index Scan using|Index Scan Backward using|Bitmap Index Scan on) sfi_time_/);
  }, 180_000);

  test('a value the index cannot read as its kind is still accepted and filtered as before', async () => {
    await fieldIndexesSettled();
    // 1e999999 overflows numeric and 2021-02-30 is no date: the index functions read them as null.
    expect(await submit('odd', 'odd', '1e999999', '2021-02-30')).toBe(201);
    expect(await feed("name eq 'odd'")).toEqual(['odd']);
    expect(await feed('age gt 1000')).toEqual([]);
  }, 60_000);
});
