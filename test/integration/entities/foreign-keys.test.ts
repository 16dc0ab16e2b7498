/**
 * The keys of entities and their versions to the Dataset, the creator, the source and the entity,
 * checked once per statement by triggers (migrations 0027, 0029) rather than by per-row foreign keys: a bulk
 * create stores what it did, and a row naming a parent that does not exist, or a delete of a
 * parent still named, is still refused with PostgreSQL's foreign key error (23503, its table,
 * constraint and detail), which the API answers as 400.14, as before.
 */
import { readFileSync } from 'node:fs';
import { and, eq, sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { datasets, entities, entityDefs, entityDefSources } from '../../../drizzle/schema';
import { problemFromDbError } from '../../../lib/db/errors';
import { harness, json, type Harness } from '../../helpers/harness';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const D = (h: Harness) => `${P(h)}/datasets/people`;
const uuidOf = (i: number) => `12345678-1234-4123-8234-${i.toString(16).padStart(12, '0')}`;

/** A published simpleEntity Dataset `people` with three entities from one bulk create by alice. */
async function seed(h: Harness) {
  const res = await h.post(`${P(h)}/forms?publish=true`, { as: 'alice', body: fixture('forms/simpleEntity.xml'), headers: { 'Content-Type': 'application/xml' } });
  expect(res.status).toBe(200);
  const list = [0, 1, 2].map((i) => ({ uuid: uuidOf(i), label: `Person ${i}`, data: { first_name: `name${i}` } }));
  const bulk = await h.post(`${D(h)}/entities`, { as: 'alice', body: { entities: list, source: { name: 'people.csv' } } });
  expect(bulk.status).toBe(200);
  expect(await json(bulk)).toEqual({ success: true });
  const [ds] = await h.db.select().from(datasets).where(and(eq(datasets.projectId, h.projectId), eq(datasets.name, 'people')));
  const [source] = await h.db.select().from(entityDefSources).where(eq(entityDefSources.type, 'bulk'));
  return { datasetId: ds!.id, sourceId: source!.id };
}

/** Runs `work` in a savepoint and answers the database error it raised (the test's transaction goes on). */
async function refusal(h: Harness, work: (db: Harness['db']) => Promise<unknown>): Promise<{ code?: string; constraint?: string; table?: string; detail?: string }> {
  try {
    await h.db.transaction(async (tx) => { await work(tx as unknown as Harness['db']); });
  } catch (err) {
    const e = ((err as { cause?: unknown }).cause ?? err) as Record<string, string | undefined>;
    return {
      code: e.code, constraint: e.constraint ?? e.constraint_name, table: e.table ?? e.table_name, detail: e.detail,
      problem: problemFromDbError(err)?.code as unknown as string,
    } as never;
  }
  throw new Error('not refused');
}

describe('entity foreign keys, checked once per statement', () => {
  test('a bulk create stores the Dataset, the creator and the source on every entity and version', async () => {
    const h = await harness();
    const { datasetId, sourceId } = await seed(h);
    const rows = await h.db.select({ uuid: entities.uuid, datasetId: entities.datasetId, creatorId: entities.creatorId, sourceId: entityDefs.sourceId, defCreator: entityDefs.creatorId })
      .from(entities).innerJoin(entityDefs, eq(entityDefs.entityId, entities.id)).orderBy(entities.uuid);
    expect(rows).toEqual([0, 1, 2].map((i) => ({ uuid: uuidOf(i), datasetId, creatorId: h.ids.alice, sourceId, defCreator: h.ids.alice })));
  });

  test('a row naming a Dataset, creator or source that does not exist is refused as a foreign key violation (400.14)', async () => {
    const h = await harness();
    const { datasetId, sourceId } = await seed(h);
    // One bad row among good ones is enough.
    expect(await refusal(h, (db) => db.insert(entities).values([
      { uuid: uuidOf(10), datasetId, creatorId: h.ids.alice }, { uuid: uuidOf(11), datasetId: 987654, creatorId: h.ids.alice },
    ]))).toEqual({
      code: '23503', constraint: 'entities_dataset_id_datasets_id_fk', table: 'entities',
      detail: 'Key (dataset_id)=(987654) is not present in table "datasets".', problem: 400.14,
    });
    expect(await refusal(h, (db) => db.insert(entities).values({ uuid: uuidOf(12), datasetId, creatorId: 987654 }))).toMatchObject({
      code: '23503', constraint: 'entities_creator_id_actors_id_fk', detail: 'Key (creator_id)=(987654) is not present in table "actors".',
    });
    const [e0] = await h.db.select().from(entities).where(eq(entities.uuid, uuidOf(0)));
    expect(await refusal(h, (db) => db.insert(entityDefs).values({ entityId: e0!.id, sourceId: 987654, version: 2, label: 'x', data: {}, dataReceived: {} })))
      .toMatchObject({ code: '23503', constraint: 'entity_defs_source_id_entity_def_sources_id_fk', table: 'entity_defs' });
    // A version naming an entity that does not exist, alone or beside good rows.
    expect(await refusal(h, (db) => db.insert(entityDefs).values([
      { entityId: e0!.id, sourceId, version: 5, current: false, label: 'x', data: {}, dataReceived: {} },
      { entityId: 987654, sourceId, version: 1, label: 'x', data: {}, dataReceived: {} },
    ]))).toEqual({
      code: '23503', constraint: 'entity_defs_entity_id_entities_id_fk', table: 'entity_defs',
      detail: 'Key (entity_id)=(987654) is not present in table "entities".', problem: 400.14,
    });
    const [d0] = await h.db.select().from(entityDefs).where(eq(entityDefs.entityId, e0!.id));
    expect(await refusal(h, (db) => db.update(entityDefs).set({ entityId: 987654 }).where(eq(entityDefs.id, d0!.id))))
      .toMatchObject({ code: '23503', constraint: 'entity_defs_entity_id_entities_id_fk' });
    expect(await refusal(h, (db) => db.update(entities).set({ datasetId: 987654 }).where(eq(entities.id, e0!.id))))
      .toMatchObject({ code: '23503', constraint: 'entities_dataset_id_datasets_id_fk' });
    // A null creator (Central's system work) and good keys still insert.
    await h.db.insert(entities).values({ uuid: uuidOf(13), datasetId, creatorId: null });
    await h.db.insert(entityDefs).values({ entityId: e0!.id, sourceId, version: 2, current: false, label: 'x', data: {}, dataReceived: {} });
    expect((await h.get(`${D(h)}/entities/${uuidOf(1)}`, { as: 'alice' })).status).toBe(200);
  });

  test('deleting a Dataset, source or creator that entities still name is refused', async () => {
    const h = await harness();
    const { datasetId, sourceId } = await seed(h);
    // Only the entities still name the Dataset (its form links and properties go first, as in a purge).
    await h.db.execute(sql`delete from ds_property_fields where ds_property_id in (select id from ds_properties where dataset_id = ${datasetId})`);
    await h.db.execute(sql`delete from ds_properties where dataset_id = ${datasetId}`);
    await h.db.execute(sql`delete from dataset_form_defs where dataset_id = ${datasetId}`);
    await h.db.execute(sql`update form_attachments set dataset_id = null where dataset_id = ${datasetId}`);
    expect(await refusal(h, (db) => db.delete(datasets).where(eq(datasets.id, datasetId)))).toMatchObject({
      code: '23503', constraint: 'entities_dataset_id_datasets_id_fk', table: 'entities', detail: `Key (id)=(${datasetId}) is still referenced from table "entities".`,
    });
    expect(await refusal(h, (db) => db.delete(entityDefSources).where(eq(entityDefSources.id, sourceId))))
      .toMatchObject({ code: '23503', constraint: 'entity_defs_source_id_entity_def_sources_id_fk', table: 'entity_defs' });
    expect(await refusal(h, (db) => db.execute(sql`delete from actors where id = ${h.ids.alice}`)))
      .toMatchObject({ code: '23503' });
    const [e1] = await h.db.select().from(entities).where(eq(entities.uuid, uuidOf(1)));
    expect(await refusal(h, (db) => db.delete(entities).where(eq(entities.datasetId, datasetId)))).toMatchObject({
      code: '23503', constraint: 'entity_defs_entity_id_entities_id_fk', table: 'entity_defs',
    });
    expect((await refusal(h, (db) => db.delete(entities).where(eq(entities.id, e1!.id)))).detail)
      .toBe(`Key (id)=(${e1!.id}) is still referenced from table "entity_defs".`);
    // Once the entities are gone, the Dataset and the source may go (what a purge does).
    await h.db.delete(entityDefs).where(eq(entityDefs.sourceId, sourceId));
    await h.db.delete(entities).where(eq(entities.datasetId, datasetId));
    await h.db.delete(entityDefSources).where(eq(entityDefSources.id, sourceId));
    await h.db.delete(datasets).where(eq(datasets.id, datasetId));
    expect(await h.db.select().from(entityDefSources).where(eq(entityDefSources.id, sourceId))).toEqual([]);
    expect(await h.db.select().from(datasets).where(eq(datasets.id, datasetId))).toEqual([]);
  });
});
