/**
 * The entity paths built for volume (bench/entities.ts), checked for what users rely on: a bulk
 * create of more entities than one CSV page (10,000) answers as before and stores every entity
 * once with its first version; entities.csv then holds each exactly once, newest first, with CSV
 * quoting as csvLine writes it, across the page boundary; D/integrity answers for 10,000 ids at
 * once (deleted ones flagged, unknown ones left out); an OData property `$filter` with `eq`
 * gives the same rows as before and, on PostgreSQL (DATABASE_URL), is planned on the
 * entity_defs_current_data GIN index (EXPLAIN).
 */
import { readFileSync } from 'node:fs';
import { and, eq, sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { entities, entityDefs } from '../../../drizzle/schema';
import { entityConditions } from '../../../lib/odata/entities';
import { harness, json, type Harness } from '../../helpers/harness';
import { parseCsv } from '../exports/helpers';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const D = (h: Harness) => `${P(h)}/datasets/people`;
const N = 10_250;
const uuidOf = (i: number) => `${(0x10000000 + i).toString(16).slice(-8)}-1234-4123-8234-${i.toString(16).padStart(12, '0')}`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function seed(h: Harness) {
  const res = await h.post(`${P(h)}/forms?publish=true`, { as: 'alice', body: fixture('forms/simpleEntity.xml'), headers: { 'Content-Type': 'application/xml' } });
  expect(res.status).toBe(200);
  const list = Array.from({ length: N }, (_, i) => ({
    uuid: uuidOf(i),
    // Every 1,000th label needs quoting: a comma, a quote and a line break.
    label: i % 1000 === 7 ? `Person "${i}", the\nseventh` : `Person ${i}`,
    data: { first_name: `name${i % 100}`, ...(i % 2 === 0 ? { age: String(i % 90) } : {}) },
  }));
  const bulk = await h.post(`${D(h)}/entities`, { as: 'alice', body: { entities: list, source: { name: 'people.csv', size: 1 } } });
  expect(bulk.status).toBe(200);
  expect(await json(bulk)).toEqual({ success: true });
}

describe('entities at volume', () => {
  test('bulk create past one CSV page: every entity once, version 1, entities.csv newest first across the page boundary', async () => {
    const h = await harness();
    await seed(h);
    const [stored] = await h.db.select({ n: sql<number>`count(*)::int`, uuids: sql<number>`count(distinct ${entities.uuid})::int` }).from(entities)
      .innerJoin(entityDefs, and(eq(entityDefs.entityId, entities.id), eq(entityDefs.current, true), eq(entityDefs.version, 1)));
    expect(stored).toEqual({ n: N, uuids: N });
    expect((await h.auditActions()).filter((a) => a.startsWith('entity'))).toEqual(['entity.bulk.create']);
    const one = await json<Json>(await h.get(`${D(h)}/entities/${uuidOf(7)}`, { as: 'alice' }));
    expect(one.currentVersion).toMatchObject({ label: 'Person "7", the\nseventh', data: { first_name: 'name7' }, version: 1 });

    const res = await h.get(`${D(h)}/entities.csv`, { as: 'alice' });
    expect(res.status).toBe(200);
    const rows = parseCsv(await res.text());
    expect(rows[0]).toEqual(['__id', 'label', 'first_name', 'age', '__createdAt', '__creatorId', '__creatorName', '__updates', '__updatedAt', '__version']);
    expect(rows.length).toBe(N + 1);
    // One request, one createdAt: newest first is the reverse of the input order.
    expect(rows.slice(1).map((r) => r[0])).toEqual(Array.from({ length: N }, (_, k) => uuidOf(N - 1 - k)));
    const row7 = rows.find((r) => r[0] === uuidOf(7))!;
    expect(row7.slice(0, 4)).toEqual([uuidOf(7), 'Person "7", the\nseventh', 'name7', '']);
    expect(row7[4]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(row7.slice(7)).toEqual(['0', '', '1']);
    expect(rows.find((r) => r[0] === uuidOf(10_000))!.slice(2, 4)).toEqual(['name0', '10']);

    // A device's integrity check naming 10,000 entities (one unknown): each known one once, the deleted flagged.
    const gone = [uuidOf(1), uuidOf(5_000), uuidOf(9_999)];
    expect((await h.post(`${D(h)}/entities/bulk-delete`, { as: 'alice', body: { ids: gone } })).status).toBe(200);
    const asked = [...Array.from({ length: 9_999 }, (_, i) => uuidOf(i)), '99999999-1234-4123-8234-999999999999'];
    const integrity = await h.get(`${D(h)}/integrity?id=${asked.join(',')}`, { as: 'alice', headers: { 'X-OpenRosa-Version': '1.0' } });
    expect(integrity.status).toBe(200);
    const flags = [...(await integrity.text()).matchAll(/<entity id="([^"]+)">\s*<deleted>(true|false)<\/deleted>/g)].map((m) => [m[1], m[2]]);
    expect(flags.length).toBe(9_999);
    expect(new Set(flags.map((f) => f[0])).size).toBe(9_999);
    expect(flags.filter((f) => f[1] === 'true').map((f) => f[0]).sort()).toEqual([uuidOf(1), uuidOf(5_000)].sort());
  }, 180_000);

  test('a property $filter with eq: the same rows, found by the entity_defs_current_data index on PostgreSQL', async () => {
    const h = await harness();
    await seed(h);
    const feed = await json<Json>(await h.get(`${D(h)}.svc/Entities?$filter=${encodeURIComponent("first_name eq 'name42' and (age eq '42' or age eq null)")}`, { as: 'alice' }));
    const ageOf = (i: number) => (i % 2 === 0 ? String(i % 90) : null);
    const expected = Array.from({ length: N }, (_, i) => i).filter((i) => i % 100 === 42 && (ageOf(i) === '42' || ageOf(i) == null)).reverse();
    expect(expected.length).toBeGreaterThan(5);
    expect(feed.value.map((e: Json) => e.__id)).toEqual(expected.map(uuidOf));
    // A blank value is no containment (blank reads as null): nothing matches, as before.
    expect((await json<Json>(await h.get(`${D(h)}.svc/Entities?$filter=${encodeURIComponent("first_name eq ''")}`, { as: 'alice' }))).value).toEqual([]);
    if (!process.env.DATABASE_URL) return;
    const [dataset] = await h.db.execute<{ id: number }>(sql`select id from datasets where project_id = ${h.projectId} and name = 'people'`) as unknown as Array<{ id: number }>;
    const where = entityConditions(Number(dataset!.id), { filter: "first_name eq 'name42'" }, [{ name: 'first_name', odataName: 'first_name' }, { name: 'age', odataName: 'age' }]);
    const query = h.db.select({ uuid: entities.uuid }).from(entities)
      .innerJoin(entityDefs, and(eq(entityDefs.entityId, entities.id), eq(entityDefs.current, true)))
      .where(and(...where)).orderBy(sql`${entities.createdAt} desc, ${entities.id} desc`).limit(1001);
    await h.db.execute(sql`analyze entities`);
    await h.db.execute(sql`analyze entity_defs`);
    const plan = (await h.db.execute(sql`explain ${query.getSQL()}`) as unknown as Array<{ 'QUERY PLAN': string }>).map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain('entity_defs_current_data');
  }, 180_000);
});
