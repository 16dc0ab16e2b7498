/**
 * Every unpaged list streams (issue 21): users, App Users, forms, form versions, audits, entities,
 * Datasets, projects, public links and assignments are read by keyset in batches
 * (lib/db/keyset.ts) and written as read (lib/http/json-stream.ts). For each list, seeded past
 * several batches: the answer streamed over real HTTP in batches of 1,000, and read in batches of 7
 * (hundreds of keyset boundaries), is the very answer of the list read in one query (the whole
 * list in memory, as before streaming): the same rows, order and JSON; plain and extended. A
 * failure after the first byte breaks the response off instead of ending a valid-looking array.
 * Also a submission's comments, versions and audits, a form's submitters and an Entity's versions, diffs
 * (with their conflict fields) and audits. Over HTTP each answer is chunked, without Content-Length,
 * its first chunk the first batch alone.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, test } from 'vitest';
import { listBatch } from '../../../lib/db/keyset';
import { fixtureUsers } from '../../fixtures/users';
import { harness, json, type Harness } from '../../helpers/harness';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const central = (path: string) => JSON.parse(fixture(`central-outputs/${path}`)) as Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type Who = 'alice' | 'bob';

afterEach(() => {
  listBatch.rows = 1000;
});

/**
 * GETs a list three ways and checks they agree: in one query (batch size above the list: the
 * in-memory answer), in batches of `small` (7) through the route table, and in batches of 1,000 streamed over
 * a real HTTP server (the body read chunk by chunk). @returns the list.
 */
async function sameAsWhole(h: Harness, base: string, path: string, as: Who, headers: Record<string, string> = {}, small = 7): Promise<Json[]> {
  listBatch.rows = 1_000_000;
  const wholeRes = await h.get(path, { as, headers });
  expect(wholeRes.status).toBe(200);
  const whole = await json<Json[]>(wholeRes);
  listBatch.rows = small;
  expect(await json<Json[]>(await h.get(path, { as, headers }))).toEqual(whole);
  listBatch.rows = 1000;
  // A fresh connection each time: PGlite blocks the event loop, so a kept-alive one can pass the server's keep-alive timeout unseen.
  const res = await fetch(`${base}${path}`, { headers: { Authorization: `Bearer ${fixtureUsers[as].token}`, Connection: 'close', ...headers } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  // Streamed: chunked, no length known up front, and past a batch the first chunk is the first batch only.
  expect(res.headers.get('content-length')).toBeNull();
  expect(res.headers.get('transfer-encoding')).toBe('chunked');
  const chunks: string[] = [];
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(dec.decode(r.value, { stream: true }));
  const text = chunks.join('') + dec.decode();
  if (whole.length > 1000) {
    expect(chunks.length).toBeGreaterThanOrEqual(2);
    expect(chunks[0]!).toMatch(/^\[[[{]/);
    expect(chunks[0]!.endsWith(']')).toBe(false);
  }
  expect(JSON.parse(text)).toEqual(whole);
  // Byte for byte what c.json wrote before (JSON.stringify of the array).
  expect(text).toBe(JSON.stringify(whole));
  return whole;
}

/** Inserts `n` actors of a type (display names `${prefix}${g}`, created in 100 distinct microsecond times so many tie), returning nothing. */
const actorsSql = (type: string, prefix: string, n: number) => sql`
  with g as (select g, gen_random_uuid()::text as actee from generate_series(1, ${n}) g),
  a as (insert into actees (id, species) select actee, ${type} from g returning 1)
  insert into actors (type, display_name, actee_id, created_at)
  select ${type}, ${prefix} || g, actee, now() - (g % 100) * interval '1.001 ms' from g`;

describe('streamed lists match the whole list', () => {
  test('GET /v1/users (3,000), with q (trigram score, mixed directions); a user without user.list still gets []', async () => {
    const h = await harness();
    const n = 3000;
    await h.db.execute(actorsSql('user', 'Streamed User ', n));
    await h.db.execute(sql`insert into users (actor_id, email)
      select id, 'u' || lpad((id % 997)::text, 4, '0') || '.' || id || '@example.org' from actors where display_name like 'Streamed User %'`);
    const base = await h.listen();
    const list = await sameAsWhole(h, base, '/v1/users', 'alice');
    expect(list).toHaveLength(n + 3);
    expect(Object.keys(list[0])).toEqual(['email', 'lastLoginAt', 'id', 'type', 'displayName', 'createdAt', 'updatedAt', 'deletedAt']);
    expect(list[1500]).toEqual(await json(await h.get(`/v1/users/${list[1500].id}`, { as: 'alice' })));
    const found = await sameAsWhole(h, base, '/v1/users?q=u0100', 'alice');
    expect(found.length).toBeGreaterThan(3);
    // Every address holding it, and others that resemble it (trigram similarity).
    expect(found.filter((u: Json) => u.email.includes('u0100'))).toHaveLength(list.filter((u: Json) => u.email.includes('u0100')).length);
    expect(await sameAsWhole(h, base, `/v1/users?q=${encodeURIComponent(list[5].email)}`, 'alice')).toEqual([list[5]]);
    expect(await json(await h.get('/v1/users', { as: 'chelsea' }))).toEqual([]);
  }, 180_000);

  test('GET P/app-users (2,500, half without a token), plain and extended', async () => {
    const h = await harness();
    await h.db.execute(actorsSql('field_key', 'Streamed Device ', 2500));
    await h.db.execute(sql`insert into field_keys (actor_id, project_id, created_by, token)
      select id, ${h.projectId}, ${h.ids.bob}, case when id % 2 = 0 then md5(id::text) end from actors where display_name like 'Streamed Device %'`);
    const base = await h.listen();
    const P = `/v1/projects/${h.projectId}`;
    const list = await sameAsWhole(h, base, `${P}/app-users`, 'bob');
    expect(list).toHaveLength(2500);
    expect(list.findIndex((a: Json) => a.token == null)).toBe(1250);
    const ext = await sameAsWhole(h, base, `${P}/app-users`, 'bob', { 'X-Extended-Metadata': 'true' });
    expect(ext[2000]).toEqual(await json(await h.get(`${P}/app-users/${ext[2000].id}`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } })));
    expect((await h.get(`${P}/app-users`, { as: 'chelsea' })).status).toBe(403);
  }, 180_000);

  test('GET /v1/audits (2,500 more), with limit/offset across batches, an action filter, extended', async () => {
    const h = await harness();
    await h.db.execute(sql`insert into audits (actor_id, action, actee_id, details, logged_at)
      select case when g % 3 = 0 then ${h.ids.bob}::int end, case when g % 2 = 0 then 'user.update' else 'project.update' end,
        (select actee_id from projects where id = ${h.projectId}), jsonb_build_object('g', g), now() - (g % 50) * interval '1 second'
      from generate_series(1, 2500) g`);
    const base = await h.listen();
    const all = await sameAsWhole(h, base, '/v1/audits', 'alice');
    expect(all.length).toBeGreaterThanOrEqual(2500);
    const page = await sameAsWhole(h, base, '/v1/audits?offset=5&limit=2003', 'alice');
    expect(page).toEqual(all.slice(5, 2008));
    expect(await sameAsWhole(h, base, '/v1/audits?offset=2490&limit=5', 'alice')).toEqual(all.slice(2490, 2495));
    const users = await sameAsWhole(h, base, '/v1/audits?action=user.update', 'alice');
    expect(users.length).toBeGreaterThanOrEqual(1250);
    const ext = await sameAsWhole(h, base, '/v1/audits?limit=1500', 'alice', { 'X-Extended-Metadata': 'true' });
    expect(Object.keys(ext[0])).toEqual(['actorId', 'action', 'acteeId', 'details', 'loggedAt', 'notes', 'actor', 'actee']);
    expect((await h.get('/v1/audits', { as: 'bob' })).status).toBe(403);
  }, 180_000);

  test('GET D/entities (2,500 from one bulk create: one created time), plain, extended and deleted', async () => {
    const h = await harness();
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.post(`${P}/forms?publish=true`, { as: 'alice', body: fixture('forms/simpleEntity.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    const list = Array.from({ length: 2500 }, (_, i) => ({ label: `Person ${i}`, data: { first_name: `n${i}` } }));
    expect((await h.post(`${P}/datasets/people/entities`, { as: 'alice', body: { entities: list, source: { name: 'people.csv', size: 1 } } })).status).toBe(200);
    const base = await h.listen();
    const D = `${P}/datasets/people`;
    const all = await sameAsWhole(h, base, `${D}/entities`, 'bob');
    expect(all).toHaveLength(2500);
    const one = await json(await h.get(`${D}/entities/${all[1200].uuid}`, { as: 'bob' }));
    expect(all[1200].currentVersion).toMatchObject({ label: one.currentVersion.label, version: 1 });
    const ext = await sameAsWhole(h, base, `${D}/entities`, 'bob', { 'X-Extended-Metadata': 'true' });
    expect(ext[2499].creator).toMatchObject({ id: h.ids.alice });
    expect((await h.post(`${D}/entities/bulk-delete`, { as: 'alice', body: { ids: all.slice(0, 1100).map((e: Json) => e.uuid) } })).status).toBe(200);
    expect(await sameAsWhole(h, base, `${D}/entities?deleted=true`, 'bob')).toHaveLength(1100);
  }, 180_000);

  test('GET P/datasets (1,200, names from SQL), plain and extended', async () => {
    const h = await harness();
    await h.db.execute(sql`with g as (select g, gen_random_uuid()::text as actee from generate_series(1, 1200) g),
      a as (insert into actees (id, species) select actee, 'dataset' from g returning 1)
      insert into datasets (project_id, name, actee_id, published_at) select ${h.projectId}, 'ds' || (g * 7919 % 1200), actee, now() from g`);
    const base = await h.listen();
    const P = `/v1/projects/${h.projectId}`;
    expect(await sameAsWhole(h, base, `${P}/datasets`, 'bob')).toHaveLength(1200);
    const ext = await sameAsWhole(h, base, `${P}/datasets`, 'bob', { 'X-Extended-Metadata': 'true' });
    expect(ext[0]).toMatchObject({ entities: 0, lastEntity: null, conflicts: 0 });
  }, 180_000);

  test('GET /v1/projects (1,200, archived and repeated names), plain, extended, ?forms=true&datasets=true', async () => {
    const h = await harness();
    await h.db.execute(sql`with g as (select g, gen_random_uuid()::text as actee from generate_series(1, 1200) g),
      a as (insert into actees (id, species) select actee, 'project' from g returning 1)
      insert into projects (name, archived, actee_id) select 'Project ' || (g % 300), case g % 3 when 0 then true when 1 then false end, actee from g`);
    const base = await h.listen();
    const list = await sameAsWhole(h, base, '/v1/projects', 'alice');
    expect(list.length).toBeGreaterThanOrEqual(1201);
    expect(list.findIndex((p: Json) => p.archived === true)).toBe(list.length - 400);
    await sameAsWhole(h, base, '/v1/projects', 'alice', { 'X-Extended-Metadata': 'true' });
    await sameAsWhole(h, base, '/v1/projects?forms=true&datasets=true', 'alice');
    // bob sees his one project only.
    expect((await sameAsWhole(h, base, '/v1/projects', 'bob')).map((p: Json) => p.id)).toEqual([h.projectId]);
  }, 180_000);

  test('GET P/forms (1,100 copies of a published form, some in the Trash), GET F/versions (1,100 versions), extended', async () => {
    const h = await harness();
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.post(`${P}/forms?publish=true`, { as: 'bob', body: fixture('forms/simple.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    await h.db.execute(sql`
      with src as (select f.*, d.id as def_id from forms f join form_defs d on d.id = f.current_def_id where f.xml_form_id = 'simple' and f.project_id = ${h.projectId}),
      g as (select g, gen_random_uuid()::text as actee from generate_series(1, 1100) g),
      a as (insert into actees (id, species, parent) select actee, 'form', (select actee_id from projects where id = ${h.projectId}) from g returning 1),
      f as (insert into forms (project_id, xml_form_id, actee_id, created_by, deleted_at)
        select src.project_id, 'copy' || (g * 7 % 1100), actee, src.created_by, case when g % 10 = 0 then now() end from g, src returning id)
      insert into form_defs (form_id, xml, name, version, hash, sha, sha256, fields, datasets, created_at, published_at)
      select f.id, d.xml, d.name, d.version, d.hash, d.sha, d.sha256, d.fields, d.datasets, now(), now() from f, src join form_defs d on d.id = src.def_id`);
    await h.db.execute(sql`update forms f set current_def_id = d.id from form_defs d where d.form_id = f.id and f.current_def_id is null and f.xml_form_id like 'copy%'`);
    // 1,100 more published versions of 'simple', 100 distinct publish times.
    await h.db.execute(sql`insert into form_defs (form_id, xml, name, version, hash, sha, sha256, fields, datasets, published_at, published_by, publish_notes)
      select d.form_id, d.xml, d.name, 'v' || g, d.hash, d.sha, d.sha256, d.fields, d.datasets, now() - (1 + g % 100) * interval '1 minute', ${h.ids.bob}::int, 'note ' || g
      from generate_series(1, 1100) g, forms f join form_defs d on d.id = f.current_def_id where f.xml_form_id = 'simple' and f.project_id = ${h.projectId}`);
    const base = await h.listen();
    const forms = await sameAsWhole(h, base, `${P}/forms`, 'bob');
    expect(forms).toHaveLength(991);
    expect(Object.keys(forms[0])).toEqual(Object.keys(central('simple/api/form.json')));
    expect(forms[500]).toEqual(await json(await h.get(`${P}/forms/${forms[500].xmlFormId}`, { as: 'bob' })));
    await sameAsWhole(h, base, `${P}/forms`, 'bob', { 'X-Extended-Metadata': 'true' });
    expect(await sameAsWhole(h, base, `${P}/forms?deleted=true`, 'bob')).toHaveLength(110);
    const versions = await sameAsWhole(h, base, `${P}/forms/simple/versions`, 'bob');
    expect(versions).toHaveLength(1101);
    expect(versions[0].version).toBe('');
    const ext = await sameAsWhole(h, base, `${P}/forms/simple/versions`, 'bob', { 'X-Extended-Metadata': 'true' });
    expect(ext[1]).toMatchObject({ publishNotes: expect.stringMatching(/^note /) });
    expect((await h.get(`${P}/forms`, { as: 'chelsea' })).status).toBe(403);
  }, 240_000);

  test('GET F/public-links (1,100, half revoked) and the assignment lists (1,100 actors; form assignments on 3 forms)', async () => {
    const h = await harness();
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.post(`${P}/forms?publish=true`, { as: 'bob', body: fixture('forms/simple.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    await h.db.execute(actorsSql('public_link', 'Streamed Link ', 1100));
    await h.db.execute(sql`insert into public_links (actor_id, form_id, created_by, once, token)
      select a.id, f.id, ${h.ids.bob}, a.id % 3 = 0, md5(a.id::text) from actors a, forms f
      where a.display_name like 'Streamed Link %' and f.xml_form_id = 'simple' and f.project_id = ${h.projectId}`);
    await h.db.execute(sql`insert into sessions (token_hash, actor_id, csrf, expires_at)
      select md5('s' || id), id, 'x', now() + interval '1 day' from actors where display_name like 'Streamed Link %' and id % 2 = 0`);
    await h.db.execute(actorsSql('field_key', 'Streamed Assignee ', 1100));
    await h.db.execute(sql`insert into assignments (actor_id, role_id, actee_id)
      select a.id, r.id, (select actee_id from projects where id = ${h.projectId}) from actors a, roles r
      where a.display_name like 'Streamed Assignee %' and r.system in ('app-user', 'viewer') and (r.system = 'app-user' or a.id % 5 = 0)`);
    for (const id of ['simple2', 'simple3']) {
      const xml = fixture('forms/simple.xml').replace('id="simple"', `id="${id}"`);
      expect((await h.post(`${P}/forms?publish=true`, { as: 'bob', body: xml, headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    }
    await h.db.execute(sql`insert into assignments (actor_id, role_id, actee_id)
      select a.id, r.id, f.actee_id from actors a, roles r, forms f
      where a.display_name like 'Streamed Assignee %' and r.system = 'app-user' and f.project_id = ${h.projectId} and f.xml_form_id like 'simple%'`);
    const base = await h.listen();
    const F = `${P}/forms/simple`;
    const links = await sameAsWhole(h, base, `${F}/public-links`, 'bob');
    expect(links).toHaveLength(1100);
    expect(links.findIndex((l: Json) => l.token == null)).toBe(550);
    const extLinks = await sameAsWhole(h, base, `${F}/public-links`, 'bob', { 'X-Extended-Metadata': 'true' });
    expect(extLinks[700]).toEqual(await json(await h.get(`${F}/public-links/${extLinks[700].id}`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } })));
    const assigned = await sameAsWhole(h, base, `${P}/assignments`, 'bob');
    expect(assigned.length).toBeGreaterThanOrEqual(1320);
    await sameAsWhole(h, base, `${P}/assignments`, 'bob', { 'X-Extended-Metadata': 'true' });
    expect(await sameAsWhole(h, base, `${P}/assignments/app-user`, 'bob')).toHaveLength(1100);
    const onForms = await sameAsWhole(h, base, `${P}/assignments/forms`, 'bob');
    expect(onForms.length).toBeGreaterThanOrEqual(3300);
    expect(await sameAsWhole(h, base, `${P}/assignments/forms/app-user`, 'bob', { 'X-Extended-Metadata': 'true' })).toHaveLength(onForms.length);
    expect(await sameAsWhole(h, base, `${F}/assignments`, 'bob')).toHaveLength(1100);
    await sameAsWhole(h, base, '/v1/assignments', 'alice', { 'X-Extended-Metadata': 'true' });
  }, 240_000);
});

describe('streamed lists of one submission (comments, versions, audits) and of a form (submitters)', () => {
  test('GET S/comments (2,500), S/versions (1,100), S/audits (2,500), F/submissions/submitters (1,100 App Users); plain and extended', async () => {
    const h = await harness();
    const P = `/v1/projects/${h.projectId}`;
    const F = `${P}/forms/simple`;
    expect((await h.post(`${P}/forms?publish=true`, { as: 'bob', body: fixture('forms/simple.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    expect((await h.post(`${F}/submissions`, { as: 'bob', body: fixture('submissions/simple.one.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    const S = `${F}/submissions/one`;
    const subId = sql`(select s.id from submissions s join forms f on f.id = s.form_id where f.project_id = ${h.projectId} and s.instance_id = 'one')`;
    // Comments by bob and alice, 100 distinct times (many ties).
    await h.db.execute(sql`insert into comments (submission_id, actor_id, body, created_at)
      select ${subId}, case when g % 2 = 0 then ${h.ids.bob}::int else ${h.ids.alice}::int end, 'comment ' || g, now() - (g % 100) * interval '1.001 ms'
      from generate_series(1, 2500) g`);
    // 1,100 older versions of 'one' (copies of its first), 50 distinct times.
    await h.db.execute(sql`insert into submission_defs (submission_id, form_def_id, instance_id, xml, md5, submitter_id, device_id, user_agent, current, values, created_at)
      select d.submission_id, d.form_def_id, 'old' || g, d.xml, d.md5, case when g % 3 = 0 then null else d.submitter_id end, d.device_id, 'agent ' || g, false,
        d.values, d.created_at - (1 + g % 50) * interval '1 second'
      from generate_series(1, 1100) g, submission_defs d where d.submission_id = ${subId}`);
    // Audits naming the submission; a third about an entity that does not exist (extended: entityAvailable false).
    await h.db.execute(sql`insert into audits (actor_id, action, actee_id, details, logged_at)
      select case when g % 4 = 0 then null else ${h.ids.bob}::int end, case when g % 3 = 0 then 'entity.create' else 'submission.update' end,
        (select actee_id from forms where project_id = ${h.projectId} and xml_form_id = 'simple'),
        case when g % 3 = 0 then jsonb_build_object('submissionId', ${subId}, 'entityId', 900000 + g) else jsonb_build_object('submissionId', ${subId}, 'g', g) end,
        now() - (g % 50) * interval '1 second'
      from generate_series(1, 2500) g`);
    // Submissions by 1,100 App Users (300 distinct names), without versions: the submitters list reads submissions only.
    await h.db.execute(actorsSql('field_key', 'Submitter ', 1100));
    await h.db.execute(sql`update actors set display_name = 'Submitter ' || (id % 300) where display_name like 'Submitter %'`);
    await h.db.execute(sql`insert into submissions (form_id, instance_id, draft, submitter_id, deleted_at)
      select f.id, 'by' || a.id, false, a.id, now() from actors a, forms f
      where a.display_name like 'Submitter %' and f.project_id = ${h.projectId} and f.xml_form_id = 'simple'`);
    const base = await h.listen();

    const comments = await sameAsWhole(h, base, `${S}/comments`, 'bob');
    expect(comments).toHaveLength(2500);
    expect(Object.keys(comments[0])).toEqual(['body', 'actorId', 'createdAt']);
    const extComments = await sameAsWhole(h, base, `${S}/comments`, 'bob', { 'X-Extended-Metadata': 'true' });
    expect(extComments.map((c: Json) => c.actor.id)).toEqual(comments.map((c: Json) => c.actorId));
    expect(extComments[1700]).toEqual({ ...comments[1700], actor: expect.objectContaining({ displayName: expect.any(String) }) });

    const versions = await sameAsWhole(h, base, `${S}/versions`, 'bob');
    expect(versions).toHaveLength(1101);
    expect(versions[0]).toMatchObject({ instanceId: 'one', current: true });
    const centralVersions = JSON.parse(fixture('central-outputs/withrepeat/api/submission-versions.json')) as Json[];
    expect(Object.keys(versions[0])).toEqual(Object.keys(centralVersions[0]));
    const extVersions = await sameAsWhole(h, base, `${S}/versions`, 'bob', { 'X-Extended-Metadata': 'true' });
    expect(extVersions.filter((v: Json) => v.submitter === null)).toHaveLength(366);
    expect(extVersions[1050]).toEqual(await json(await h.get(`${S}/versions/${extVersions[1050].instanceId}`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } })));

    const audits = await sameAsWhole(h, base, `${S}/audits`, 'bob');
    expect(audits.length).toBeGreaterThanOrEqual(2500);
    const extAudits = await sameAsWhole(h, base, `${S}/audits`, 'bob', { 'X-Extended-Metadata': 'true' });
    expect(extAudits.find((a: Json) => a.action === 'entity.create').details.entity).toEqual({ entityAvailable: false });
    expect(extAudits[2000].actee).toMatchObject({ xmlFormId: 'simple' });

    const submitters = await sameAsWhole(h, base, `${F}/submissions/submitters`, 'bob');
    // bob, who sent 'one', and the App Users (whose submissions are in the Trash: still submitters, as before).
    expect(submitters).toHaveLength(1101);
    expect(submitters.filter((a: Json) => a.displayName === 'Submitter 7').map((a: Json) => a.id)).toEqual(
      submitters.filter((a: Json) => a.displayName === 'Submitter 7').map((a: Json) => a.id).sort((x: number, y: number) => x - y));
    expect((await h.get(`${S}/comments`, { as: 'chelsea' })).status).toBe(403);
    expect((await h.get(`${F}/submissions/nonesuch/versions`, { as: 'bob' })).status).toBe(404);
  }, 240_000);
});

/**
 * An Entity with versions 2..n added in SQL: ties nowhere (version order), bases one back except
 * conflicts (every 97th three back; some far back after 1,800, reaching before the last good
 * version), offline branches (contiguous b1, out-of-order b2, detached b3), creates applied as
 * updates, hard conflicts; sources (API details, 'create' actions); an entity.update.version audit
 * per version (every 13th with its own details.source); `resolveAt`: an entity.update.resolve naming that version.
 */
async function seedHistory(h: Harness, uuid: string, n: number, conflicts: boolean, resolveAt: number | null): Promise<void> {
  const c = conflicts;
  await h.db.execute(sql`
    with e as (select id from entities where uuid = ${uuid}),
    src as (insert into entity_def_sources (type, details) values ('api', '{"api":true}'), ('api', '{"action":"create"}') returning id, details)
    insert into entity_defs (entity_id, source_id, current, version, base_version, label, data, data_received, conflicting_properties,
      branch_id, trunk_version, branch_base_version, creator_id, user_agent, created_at)
    select e.id,
      case when ${c} and g % 250 = 0 then (select id from src where details ? 'action') when g % 5 = 0 then (select id from src where details ? 'api') end,
      g = ${n}, g,
      case when not ${c} then g - 1 when g % 97 = 0 then g - 3 when g > 1800 and g % 11 = 0 then g - 301
        when g = 1502 then 1500 when g = 1504 then 1502 else g - 1 end,
      'Label ' || (g / 3), jsonb_build_object('first_name', 'n' || (g / 2), 'age', (g % 40)::text, 'gone', 'x'),
      jsonb_build_object('first_name', 'n' || (g / 2), 'label', 'Label ' || (g / 4), 'age', (g % 7)::text),
      case when ${c} and g % 194 = 0 then '["age"]'::jsonb end,
      case when not ${c} then null when g between 1000 and 1010 then 'b1' when g in (1500, 1502, 1504) then 'b2' when g between 2000 and 2003 then 'b3' end,
      case when not ${c} then null when g between 1000 and 1010 then 999 when g in (1500, 1502, 1504) then 1499 when g between 2000 and 2003 then 1990 end,
      case when not ${c} then null when g between 1000 and 1010 then g - 1 end,
      case when g % 3 = 0 then ${h.ids.bob}::int when g % 3 = 1 then ${h.ids.alice}::int end, 'agent ' || (g % 10), now() + g * interval '1 ms'
    from generate_series(2, ${n}) g, e order by g`);
  await h.db.execute(sql`update entity_defs set current = false where version < ${n} and entity_id = (select id from entities where uuid = ${uuid})`);
  await h.db.execute(sql`insert into audits (actor_id, action, actee_id, details, logged_at)
    select ${h.ids.bob}::int, 'entity.update.version', ds.actee_id, jsonb_build_object('entityId', e.id, 'entityDefId', d.id, 'entity', jsonb_build_object('uuid', e.uuid, 'dataset', ds.name))
      || case when d.version % 13 = 0 then jsonb_build_object('source', jsonb_build_object('own', d.version)) else '{}'::jsonb end,
      now() + d.version * interval '1 ms'
    from entities e join datasets ds on ds.id = e.dataset_id join entity_defs d on d.entity_id = e.id where e.uuid = ${uuid} and d.version > 1`);
  if (resolveAt != null) {
    await h.db.execute(sql`insert into audits (actor_id, action, actee_id, details, logged_at)
      select ${h.ids.alice}::int, 'entity.update.resolve', ds.actee_id, jsonb_build_object('entityId', e.id, 'entityDefId', d.id, 'entity', jsonb_build_object('uuid', e.uuid, 'dataset', ds.name)), now() + interval '1 hour'
      from entities e join datasets ds on ds.id = e.dataset_id join entity_defs d on d.entity_id = e.id where e.uuid = ${uuid} and d.version = ${resolveAt}`);
  }
}

describe('streamed lists of one Entity (versions with their conflict fields, audits)', () => {
  test('GET E/versions (2,500 with conflicts, branches and a resolve; 1,100 without), ?relevantToConflict=true, extended; GET E/audits with paging', async () => {
    const h = await harness();
    const P = `/v1/projects/${h.projectId}`;
    const D = `${P}/datasets/people`;
    expect((await h.post(`${P}/forms?publish=true`, { as: 'alice', body: fixture('forms/simpleEntity.xml'), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    const u1 = '12345678-1234-4123-8123-123456789abc';
    const u2 = '12345678-1234-4123-8123-123456789abd';
    for (const uuid of [u1, u2]) {
      expect((await h.post(`${D}/entities`, { as: 'alice', body: { uuid, label: 'First', data: { first_name: 'a', age: '1' } } })).status).toBe(200);
    }
    await seedHistory(h, u1, 2500, true, 1600);
    await seedHistory(h, u2, 1100, false, null);
    const base = await h.listen();
    const E1 = `${D}/entities/${u1}`;
    const E2 = `${D}/entities/${u2}`;

    const v1 = await sameAsWhole(h, base, `${E1}/versions`, 'bob', {}, 97);
    expect(v1).toHaveLength(2500);
    expect(v1.map((v: Json) => v.version)).toEqual(Array.from({ length: 2500 }, (_, i) => i + 1));
    // The first unresolved conflict after the resolved 1,600th version is 1,649 (97 × 17): 1,648 is the last good one.
    expect(v1.filter((v: Json) => v.lastGoodVersion).map((v: Json) => v.version)).toEqual([1648]);
    expect(v1.find((v: Json) => v.version === 1649)).toMatchObject({ conflict: 'soft', resolved: false, relevantToConflict: true });
    expect(v1.find((v: Json) => v.version === 194)).toMatchObject({ conflict: 'hard', resolved: true });
    // b2 is out of order (1,502 is based on 1,500, not 1,501); b1 continues its trunk.
    expect(v1.find((v: Json) => v.version === 1502).conflict).toBe('soft');
    expect(v1.filter((v: Json) => v.version > 1000 && v.version <= 1010).map((v: Json) => v.conflict)).toEqual(Array(10).fill(null));
    // 1,804 (11 × 164) is based on 1,503, before the last good version: relevant.
    expect(v1.find((v: Json) => v.version === 1503).relevantToConflict).toBe(true);
    expect(v1.find((v: Json) => v.version === 1504).relevantToConflict).toBe(false);
    expect(v1[2499].data).toEqual({ first_name: 'n1250', age: '20' });
    expect(v1[12].source).toEqual({ own: 13 });
    expect(v1[4].source).toEqual({ api: true });
    const relevant = await sameAsWhole(h, base, `${E1}/versions?relevantToConflict=true`, 'bob', {}, 97);
    expect(relevant).toEqual(v1.filter((v: Json) => v.relevantToConflict));
    expect(relevant.length).toBeGreaterThan(853);
    const ext = await sameAsWhole(h, base, `${E1}/versions`, 'bob', { 'X-Extended-Metadata': 'true' }, 97);
    expect(ext.map(({ creator, ...v }: Json) => v)).toEqual(v1);
    expect(ext[1500].creator).toMatchObject({ id: h.ids.alice });

    const v2 = await sameAsWhole(h, base, `${E2}/versions`, 'bob', {}, 97);
    expect(v2.filter((v: Json) => v.lastGoodVersion).map((v: Json) => v.version)).toEqual([1100]);
    expect(v2.every((v: Json) => v.conflict === null && v.relevantToConflict === false)).toBe(true);
    expect(await json(await h.get(`${E2}/versions?relevantToConflict=true`, { as: 'bob' }))).toEqual([]);

    // E/diffs: one diff per version after the first, each against the version before it, across batch edges.
    const diffs = await sameAsWhole(h, base, `${E1}/diffs`, 'bob', {}, 97);
    expect(diffs).toHaveLength(2499);
    const withLabel = (v: Json): Record<string, string> => ({ label: v.label, ...v.data });
    for (const i of [0, 95, 96, 97, 1000, 2498]) {
      const before = withLabel(v1[i]);
      const after = withLabel(v1[i + 1]);
      expect(diffs[i]).toEqual(Object.keys(after).filter((k) => after[k] !== before[k]).map((k) => ({ old: before[k], new: after[k], propertyName: k })));
    }
    expect(diffs.some((d: Json[]) => d.length > 0)).toBe(true);

    const audits = await sameAsWhole(h, base, `${E1}/audits`, 'bob', {}, 97);
    expect(audits).toHaveLength(2501);
    expect(audits[0].action).toBe('entity.update.resolve');
    expect(audits[2500].action).toBe('entity.create');
    expect(await sameAsWhole(h, base, `${E1}/audits?offset=5&limit=1500`, 'bob', {}, 97)).toEqual(audits.slice(5, 1505));
    expect((await h.get(`${E1}/versions`, { as: 'chelsea' })).status).toBe(403);
    expect((await h.get(`${E1}/diffs`, { as: 'chelsea' })).status).toBe(403);
  }, 300_000);
});

describe('a failure while streaming', () => {
  test('a list that fails after its first batch errors its body stream (no closing bracket): the server then breaks the connection off', async () => {
    const h = await harness();
    await h.db.execute(actorsSql('user', 'Streamed User ', 3500));
    await h.db.execute(sql`insert into users (actor_id, email) select id, 'u' || id || '@example.org' from actors where display_name like 'Streamed User %'`);
    // Through the route table in process: the body is pulled only as it is read here, so the failure lands mid-list.
    const res = await h.get('/v1/users', { as: 'alice' });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let text = dec.decode((await reader.read()).value!);
    expect(text.startsWith('[{"email":')).toBe(true);
    // The table goes away under the list: the batch after the one read ahead fails.
    await h.db.execute(sql`alter table users rename to users_gone`);
    let failure: unknown = null;
    try {
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += dec.decode(r.value);
    } catch (err) {
      failure = err;
    }
    expect(String(failure)).toMatch(/users/);
    expect(text.length).toBeGreaterThan(1000);
    expect(text.endsWith(']')).toBe(false);
    expect(() => JSON.parse(text)).toThrow();
  }, 120_000);

  test('a failure in the first batch is still a Problem (no 200)', async () => {
    const h = await harness();
    await h.db.execute(sql`alter table field_keys rename to field_keys_gone`);
    const res = await h.get(`/v1/projects/${h.projectId}/app-users`, { as: 'bob' });
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toMatchObject({ message: 'Internal Server Error' });
  });
});
