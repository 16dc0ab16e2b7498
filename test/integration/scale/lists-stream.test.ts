/**
 * Streaming JSON lists (issue 21): GET F/submissions is written as it is read, in keyset batches,
 * with the same JSON (keys, order, extended metadata) as one in-memory array.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { systemCtx } from '../../../lib/context';
import { jsonArrayStream } from '../../../lib/http/json-stream';
import { listSubmissions } from '../../../lib/submissions/queries';
import { fixtureUsers } from '../../fixtures/users';
import { harness, json, type Harness } from '../../helpers/harness';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const central = (path: string) => JSON.parse(fixture(`central-outputs/${path}`)) as Record<string, unknown>;

/** Publishes simple.xml, sends simple.one.xml through OpenRosa, then copies it in SQL to `n` submissions in all. */
async function seed(h: Harness, n: number): Promise<void> {
  const res = await h.post(`/v1/projects/${h.projectId}/forms?publish=true`, { as: 'bob', body: fixture('forms/simple.xml'), headers: { 'Content-Type': 'application/xml' } });
  expect(res.status).toBe(200);
  const boundary = 'b0undary';
  const body = `--${boundary}\r\nContent-Disposition: form-data; name="xml_submission_file"; filename="s.xml"\r\nContent-Type: text/xml\r\n\r\n${fixture('submissions/simple.one.xml')}\r\n--${boundary}--\r\n`;
  const sent = await h.post(`/v1/projects/${h.projectId}/submission`, {
    as: 'bob', body, headers: { 'X-OpenRosa-Version': '1.0', 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'User-Agent': 'test-agent' },
  });
  expect(sent.status).toBe(201);
  // Copies of 'one' named c2..cN, created 1 s apart after it (newest first: cN … c2, one).
  await h.db.execute(sql`
    with src as (select s.*, d.form_def_id, d.xml, d.md5, d.values, d.root_values, d.root_text from submissions s join submission_defs d on d.id = s.current_def_id where s.instance_id = 'one'),
    input as materialized (
      select g, 'c' || g as iid, src.created_at + g * interval '1 second' as at,
        nextval(pg_get_serial_sequence('submissions', 'id')) as sid, nextval(pg_get_serial_sequence('submission_defs', 'id')) as did
      from src, generate_series(2, ${n}) g
    ), s as (
      insert into submissions (id, form_id, instance_id, draft, submitter_id, device_id, user_agent, current_def_id, created_at)
      overriding system value
      select sid, src.form_id, iid, false, src.submitter_id, src.device_id, src.user_agent, did, at from input, src returning 1
    )
    insert into submission_defs (id, submission_id, form_def_id, instance_id, xml, md5, submitter_id, device_id, user_agent, values, root_values, root_text, created_at)
    overriding system value
    select did, sid, src.form_def_id, iid, src.xml, src.md5, src.submitter_id, src.device_id, src.user_agent, src.values, src.root_values, src.root_text, at from input, src`);
}

describe('streamed lists', () => {
  test('GET F/submissions at 2,500 rows: several body chunks, newest first, the same JSON as one row, extended too', async () => {
    const h = await harness();
    const n = 2500;
    await seed(h, n);
    const base = await h.listen();
    const F = `/v1/projects/${h.projectId}/forms/simple`;
    const res = await fetch(`${base}${F}/submissions`, { headers: { Authorization: `Bearer ${fixtureUsers.bob.token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const reader = res.body!.getReader();
    const chunks: Uint8Array[] = [];
    for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value);
    // One chunk per 1,000-row batch at least (the transport may split them further).
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    const list = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Array<Record<string, unknown>>;
    expect(list).toHaveLength(n);
    expect(list[0]!.instanceId).toBe(`c${n}`);
    expect(list[n - 1]!.instanceId).toBe('one');
    expect(list.map((s) => s.instanceId)).toEqual([...Array.from({ length: n - 1 }, (_, i) => `c${n - i}`), 'one']);
    const shape = central('simple/api/submission.json');
    expect(Object.keys(list[0]!)).toEqual(Object.keys(shape));
    expect(Object.keys(list[0]!.currentVersion as object)).toEqual(Object.keys(shape.currentVersion as object));
    // The oldest row is exactly what GET S answers for it.
    expect(list[n - 1]).toEqual(await json(await h.get(`${F}/submissions/one`, { as: 'bob' })));

    const ext = await json<Array<Record<string, any>>>(await h.get(`${F}/submissions`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(ext).toHaveLength(n);
    expect(Object.keys(ext[0]!)).toEqual(Object.keys(central('simple/api/submission-extended.json')));
    expect(ext[1500]!.submitter).toMatchObject({ id: h.ids.bob, type: 'user', displayName: expect.any(String) });
    expect(ext[1500]!.currentVersion.submitter).toEqual(ext[1500]!.submitter);
    expect(ext[n - 1]).toEqual(await json(await h.get(`${F}/submissions/one`, { as: 'bob', headers: { 'X-Extended-Metadata': 'true' } })));
  }, 120_000);

  test('rows are read as the client reads: rows deleted after the first chunk are not in the rest', async () => {
    const h = await harness();
    await seed(h, 500);
    const ctx = systemCtx(h.deps);
    // Batches of 100: the first chunk holds rows c500..c401 and the one read ahead c400..c301.
    const stream = await jsonArrayStream(await listSubmissions(ctx, h.projectId, 'simple', false, false, 100), (b) => b, true);
    const reader = stream.getReader();
    const dec = new TextDecoder();
    // The opening bracket may come as a chunk of its own: read up to the first batch's rows.
    let text = '';
    while (!text.includes('"instanceId"')) text += dec.decode((await reader.read()).value!);
    expect(text.startsWith('[{"instanceId":"c500"')).toBe(true);
    // The 100 oldest go to the Trash now: a list built in memory would still hold them.
    await h.db.execute(sql`update submissions set deleted_at = now() where instance_id in (select 'c' || g from generate_series(2, 100) g) or instance_id = 'one'`);
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += dec.decode(r.value);
    const list = JSON.parse(text) as Array<{ instanceId: string }>;
    expect(list).toHaveLength(400);
    expect(list[399]!.instanceId).toBe('c101');
  });

  test('texts that need JSON escaping (quotes, backslash, control characters, non-ASCII) come out as GET S writes them, extended too', async () => {
    const h = await harness();
    await seed(h, 3);
    await h.db.execute(sql`update submissions set device_id = ${'dev "1"\\x\n\u0001'}, user_agent = ${'agent\tü 日本 😀'}, review_state = 'hasIssues' where instance_id = 'c2'`);
    await h.db.execute(sql`update submission_defs set instance_name = ${'name "q"\r\n'}, device_id = ${'dev "1"\\x\n\u0001'} where instance_id = 'c2'`);
    await h.db.execute(sql`update actors set display_name = ${'Bob "the" \\ builder ü'} where id = ${h.ids.bob}`);
    const F = `/v1/projects/${h.projectId}/forms/simple`;
    for (const headers of [{}, { 'X-Extended-Metadata': 'true' }] as Array<Record<string, string>>) {
      const list = await json<Array<Record<string, unknown>>>(await h.get(`${F}/submissions`, { as: 'bob', headers }));
      expect(list.map((s) => s.instanceId)).toEqual(['c3', 'c2', 'one']);
      expect(list[1]).toEqual(await json(await h.get(`${F}/submissions/c2`, { as: 'bob', headers })));
      expect(list[1]!.deviceId).toBe('dev "1"\\x\n\u0001');
    }
  });

  test('a current version whose instanceID, time, device, user agent and submitter differ from the submission\'s comes out as GET S writes it, extended too; limit and offset keep', async () => {
    const h = await harness();
    await seed(h, 4);
    await h.db.execute(sql`update submission_defs set instance_id = 'c3-v2', created_at = created_at + interval '90 minutes 0.5 seconds',
      device_id = ${'other "dev"'}, user_agent = null, submitter_id = null where instance_id = 'c3'`);
    await h.db.execute(sql`update submissions set updated_at = now(), device_id = null where instance_id = 'c3'`);
    const F = `/v1/projects/${h.projectId}/forms/simple`;
    for (const headers of [{}, { 'X-Extended-Metadata': 'true' }] as Array<Record<string, string>>) {
      const list = await json<Array<Record<string, any>>>(await h.get(`${F}/submissions`, { as: 'bob', headers }));
      expect(list.map((s) => s.instanceId)).toEqual(['c4', 'c3', 'c2', 'one']);
      expect(list[1]).toEqual(await json(await h.get(`${F}/submissions/c3`, { as: 'bob', headers })));
      expect(list[1]!.currentVersion).toMatchObject({ instanceId: 'c3-v2', deviceId: 'other "dev"', userAgent: null, submitterId: null });
      expect(list[1]!.currentVersion.createdAt).not.toBe(list[1]!.createdAt);
      const page = await json<Array<Record<string, unknown>>>(await h.get(`${F}/submissions?limit=2&offset=1`, { as: 'bob', headers }));
      expect(page).toEqual(list.slice(1, 3));
    }
  });

  test('an empty list is [] and a refused one is a Problem before any byte', async () => {
    const h = await harness();
    await seed(h, 1);
    expect(await json(await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions`, { as: 'bob' }))).toHaveLength(1);
    expect((await h.delete(`/v1/projects/${h.projectId}/forms/simple/submissions/one`, { as: 'bob' })).status).toBe(200);
    const empty = await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions`, { as: 'bob' });
    expect(empty.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await empty.text()).toBe('[]');
    const refused = await h.get(`/v1/projects/${h.projectId}/forms/simple/submissions`, { as: 'chelsea' });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 403.1 });
  });
});
