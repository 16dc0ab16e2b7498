/**
 * `@odata.count` of an unfiltered Submissions feed comes from the counts migration 0026's triggers
 * keep (lib/odata/counts.ts): it must equal the live submissions through every write that changes
 * them — new submissions, deletion to the Trash and restore, draft (test) submissions apart from
 * published ones, a draft's submissions dropped when it is published, an edit (a new version, no
 * new submission) — and stay equal when a read folds the delta rows.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { rawRows } from '../../../lib/db/raw';
import { harness, json, type Harness } from '../../helpers/harness';
import { fixture, publishForm } from './helpers';

const F = (h: Harness) => `/v1/projects/${h.projectId}/forms/simple`;
const xml = (id: string, name = 'Alice') => `<data id="simple"><meta><instanceID>${id}</instanceID></meta><name>${name}</name><age>30</age></data>`;

async function submit(h: Harness, path: string, body: string, status = 200): Promise<void> {
  const res = await h.post(path, { as: 'bob', body, headers: { 'Content-Type': 'text/xml' } });
  expect(res.status, await res.clone().text()).toBe(status);
}

/** `@odata.count` of the feed, and what counting the table answers. */
async function counts(h: Harness, draft: boolean): Promise<{ feed: number; table: number }> {
  const res = await h.get(`${F(h)}${draft ? '/draft.svc' : '.svc'}/Submissions?$top=1&$count=true`, { as: 'bob' });
  expect(res.status, await res.clone().text()).toBe(200);
  const [row] = await rawRows<{ n: number }>(h.db, sql`select count(*)::int as n from submissions s join forms f on f.id = s.form_id
    where f.project_id = ${h.projectId} and f.xml_form_id = 'simple' and s.draft = ${draft} and s.deleted_at is null`);
  return { feed: (await json<{ '@odata.count': number }>(res))['@odata.count'], table: row!.n };
}

describe('$count from the counts kept at write time', () => {
  test('follows submissions, the Trash, restores, drafts and edits', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/simple.xml'));
    expect(await counts(h, false)).toEqual({ feed: 0, table: 0 });
    for (const id of ['a', 'b', 'c']) await submit(h, `${F(h)}/submissions`, xml(id));
    expect(await counts(h, false)).toEqual({ feed: 3, table: 3 });

    expect((await h.delete(`${F(h)}/submissions/b`, { as: 'bob' })).status).toBe(200);
    expect(await counts(h, false)).toEqual({ feed: 2, table: 2 });
    // Deleted rows listed with the Trash filter are counted by the query, not the kept counts.
    const trash = await h.get(`${F(h)}.svc/Submissions?$count=true&$filter=__system/deletedAt ne null`, { as: 'bob' });
    expect((await json<{ '@odata.count': number }>(trash))['@odata.count']).toBe(1);
    expect((await h.post(`${F(h)}/submissions/b/restore`, { as: 'bob' })).status).toBe(200);
    expect(await counts(h, false)).toEqual({ feed: 3, table: 3 });

    // An edit is a new version of the same submission.
    const edit = await h.put(`${F(h)}/submissions/a`, { as: 'bob', body: xml('a2', 'Ann').replace('<instanceID>a2</instanceID>', '<instanceID>a2</instanceID><deprecatedID>a</deprecatedID>'), headers: { 'Content-Type': 'text/xml' } });
    expect(edit.status, await edit.clone().text()).toBe(200);
    expect(await counts(h, false)).toEqual({ feed: 3, table: 3 });

    // Draft (test) submissions are counted apart, and go when the draft is published.
    expect((await h.post(`${F(h)}/draft`, { as: 'bob' })).status).toBe(200);
    await submit(h, `${F(h)}/draft/submissions`, xml('d1'));
    await submit(h, `${F(h)}/draft/submissions`, xml('d2'));
    expect(await counts(h, true)).toEqual({ feed: 2, table: 2 });
    expect(await counts(h, false)).toEqual({ feed: 3, table: 3 });
    expect((await h.post(`${F(h)}/draft/publish?version=2`, { as: 'bob' })).status).toBe(200);
    expect((await counts(h, false))).toEqual({ feed: 3, table: 3 });
  });

  test('a read folds many delta rows into one, keeping the count', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/simple.xml'));
    for (const id of ['a', 'b']) await submit(h, `${F(h)}/submissions`, xml(id));
    const [form] = await rawRows<{ id: number }>(h.db, sql`select id from forms where project_id = ${h.projectId} and xml_form_id = 'simple'`);
    // 100 more deltas summing to 0.
    await h.db.execute(sql`insert into submission_counts (form_id, draft, n) select ${form!.id}, false, case when i % 2 = 0 then 1 else -1 end from generate_series(1, 100) i`);
    expect(await counts(h, false)).toEqual({ feed: 2, table: 2 });
    const [rows] = await rawRows<{ k: number; n: number }>(h.db, sql`select count(*)::int as k, sum(n)::int as n from submission_counts where form_id = ${form!.id} and draft = false`);
    expect(rows).toEqual({ k: 1, n: 2 });
    expect(await counts(h, false)).toEqual({ feed: 2, table: 2 });
  });
});
