/**
 * Offline entities (entities-version 2024.1): updates of an offline branch apply in branch order
 * whatever their arrival order; one that arrives before its predecessor waits in the backlog
 * (`submission.backlog.hold`) and is requeued when the gap fills (`submission.backlog.reprocess`),
 * or forced through by processEntityBacklog after the timeout (`submission.backlog.force`):
 * on the latest version, as a create when the entity does not exist, and a later create then
 * applies as an update. Real HTTP Requests with the offlineEntity fixture form.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { entitySubmissionBacklog } from '../../../drizzle/schema';
import { systemCtx } from '../../../lib/context';
import { countHeldSubmissions, processEntityBacklog } from '../../../lib/entities/backlog';
import { harness, json, type Harness } from '../../helpers/harness';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const XML = { 'Content-Type': 'application/xml' };
const P = (h: Harness) => `/v1/projects/${h.projectId}`;
const E = (h: Harness, uuid = UUID) => `${P(h)}/datasets/people/entities/${uuid}`;
const UUID = '12345678-1234-4123-8234-123456789abc';
const NEW = '12345678-1234-4123-8234-123456789ddd';
const BRANCH = 'aaaaaaaa-1234-4123-8234-123456789abc';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** The offlineEntity form and the entity it updates (version 1, as in Central's suite). */
async function setup(h: Harness) {
  const res = await h.post(`${P(h)}/forms?publish=true`, { as: 'alice', body: fixture('forms/offlineEntity.xml'), headers: XML });
  expect(res.status).toBe(200);
  const e = await h.post(`${P(h)}/datasets/people/entities`, { as: 'alice', body: { uuid: UUID, label: 'Johnny Doe', data: { first_name: 'Johnny', age: '22' } } });
  expect(e.status).toBe(200);
}

/** An update of UUID in BRANCH based on branch version `base` (trunk 1), setting status. */
const update = (instanceId: string, base: number, status: string, opts: { uuid?: string; trunk?: string; branch?: string } = {}) =>
  fixture('submissions/offlineEntity.one.xml')
    .replace('<instanceID>one</instanceID>', `<instanceID>${instanceId}</instanceID>`)
    .replace('branchId=""', `branchId="${opts.branch ?? BRANCH}"`)
    .replace('baseVersion="1"', `baseVersion="${base}"`)
    .replace('trunkVersion="1"', `trunkVersion="${opts.trunk ?? '1'}"`)
    .replace(`id="${UUID}"`, `id="${opts.uuid ?? UUID}"`)
    .replace('<status>arrived</status>', `<status>${status}</status>`);

async function submit(h: Harness, xml: string) {
  const res = await h.post(`${P(h)}/forms/offlineEntity/submissions`, { as: 'alice', body: xml, headers: XML });
  expect(res.status, await res.clone().text()).toBe(200);
}

const entity = async (h: Harness, uuid = UUID) => json<Json>(await h.get(E(h, uuid), { as: 'alice' }));

describe('offline branches out of order', () => {
  test('three updates arriving in reverse order are held, then applied in branch order when the first arrives', async () => {
    const h = await harness();
    await setup(h);
    await submit(h, update('u3', 3, 's3'));
    await submit(h, update('u2', 2, 's2'));
    expect((await entity(h)).currentVersion.version).toBe(1);
    expect(await countHeldSubmissions(systemCtx(h.deps), UUID)).toBe(2);
    await submit(h, update('u1', 1, 's1'));
    const e = await entity(h);
    expect(e.currentVersion).toMatchObject({ version: 4, baseVersion: 3, branchBaseVersion: 3, trunkVersion: 1, branchId: BRANCH, data: { status: 's3' } });
    expect(e.conflict).toBeNull();
    const versions = await json<Json[]>(await h.get(`${E(h)}/versions`, { as: 'alice' }));
    expect(versions.map((v) => [v.version, v.baseVersion, v.branchBaseVersion, v.data.status, v.conflict])).toEqual([
      [1, null, null, undefined, null], [2, 1, 1, 's1', null], [3, 2, 2, 's2', null], [4, 3, 3, 's3', null],
    ]);
    expect(await countHeldSubmissions(systemCtx(h.deps))).toBe(0);
    const audits = await json<Json[]>(await h.get(`${P(h)}/forms/offlineEntity/submissions/u3/audits`, { as: 'alice' }));
    expect(audits.map((a) => a.action)).toEqual(['entity.update.version', 'submission.backlog.reprocess', 'submission.backlog.hold', 'submission.create']);
    // Nothing applied twice: one version per submission, and running the jobs again changes nothing.
    const { drainJobs } = await import('../../../lib/jobs');
    await drainJobs(systemCtx(h.deps));
    expect((await entity(h)).currentVersion.version).toBe(4);
  });

  test('an update before its entity exists waits for the offline create, then follows it', async () => {
    const h = await harness();
    await setup(h);
    const create = fixture('submissions/offlineEntity.two.xml');
    await submit(h, update('after-create', 1, 'checked in', { uuid: NEW, trunk: '' }));
    expect((await h.get(E(h, NEW), { as: 'alice' })).status).toBe(404);
    await submit(h, create);
    expect((await entity(h, NEW)).currentVersion).toMatchObject({ version: 2, baseVersion: 1, data: { status: 'checked in', first_name: 'Megan' } });
  });
});

describe('force-processing the backlog', () => {
  test('after the timeout only: a missing predecessor is skipped, the held update applies on the latest version', async () => {
    const h = await harness();
    await setup(h);
    await submit(h, update('u2', 2, 'working'));
    const ctx = systemCtx(h.deps);
    expect(await processEntityBacklog(ctx)).toBe(0);
    await h.db.update(entitySubmissionBacklog).set({ loggedAt: sql`now() - interval '6 days'` });
    expect(await processEntityBacklog(ctx)).toBe(1);
    expect((await entity(h)).currentVersion).toMatchObject({ version: 2, baseVersion: 1, branchBaseVersion: 2, data: { status: 'working' } });
    expect(await countHeldSubmissions(ctx)).toBe(0);
    const audits = await json<Json[]>(await h.get(`${P(h)}/forms/offlineEntity/submissions/u2/audits`, { as: 'alice' }));
    expect(audits.map((a) => a.action)).toEqual(['entity.update.version', 'submission.backlog.force', 'submission.backlog.hold', 'submission.create']);
    // The late predecessor is then an ordinary out-of-branch-order update: a soft conflict, nothing lost.
    await submit(h, update('u1', 1, 'arrived'));
    expect((await entity(h)).currentVersion.version).toBe(3);
  });

  test('an update of a missing entity becomes a create (auto generated label); the late create applies as an update with a conflict', async () => {
    const h = await harness();
    await setup(h);
    await submit(h, fixture('submissions/offlineEntity.two.xml')
      .replace('create="1"', 'update="1"').replace(`branchId=""`, `branchId="${BRANCH}"`).replace('<instanceID>two', '<instanceID>two-update')
      .replace('baseVersion=""', 'baseVersion="1"').replace('<status>new</status>', '<status>checked in</status>')
      .replace('<label>Megan (20)</label>', '').replace('<age>20</age>', '').replace('<name>Megan</name>', ''));
    expect(await processEntityBacklog(systemCtx(h.deps), { force: true })).toBe(1);
    const made = await entity(h, NEW);
    expect(made.currentVersion).toMatchObject({ version: 1, label: 'auto generated', branchId: BRANCH, branchBaseVersion: 1, data: { status: 'checked in' } });
    expect(made.conflict).toBeNull();
    await submit(h, fixture('submissions/offlineEntity.two.xml'));
    const after = await entity(h, NEW);
    expect(after.currentVersion).toMatchObject({ version: 2, baseVersion: 1, branchId: null, data: { age: '20', status: 'new', first_name: 'Megan' } });
    expect(after.conflict).toBe('hard');
    const versions = await json<Json[]>(await h.get(`${E(h, NEW)}/versions`, { as: 'alice' }));
    expect(versions.map((v) => v.conflict)).toEqual([null, 'hard']);
  });

  test('two held updates of a branch whose first is missing apply in order', async () => {
    const h = await harness();
    await setup(h);
    await submit(h, update('u3', 3, 'departed'));
    await submit(h, update('u2', 2, 'working'));
    expect(await processEntityBacklog(systemCtx(h.deps), { force: true })).toBe(2);
    expect((await entity(h)).currentVersion).toMatchObject({ version: 3, baseVersion: 2, branchBaseVersion: 3, data: { status: 'departed' } });
  });
});

describe('two devices, one household', () => {
  test('both offline, out of order: applied in branch order, conflict marked, resolved, the list shows the resolved entity', async () => {
    const h = await harness();
    await setup(h);
    const A = 'aaaaaaaa-0000-4123-8234-123456789abc';
    const B = 'bbbbbbbb-0000-4123-8234-123456789abc';
    // Device A's second update arrives first (held), then device B's only update, then A's first.
    await submit(h, update('a2', 2, 'a-second', { branch: A }));
    await submit(h, update('b1', 1, 'b-first', { branch: B }));
    expect((await entity(h)).currentVersion).toMatchObject({ version: 2, branchId: B, data: { status: 'b-first' } });
    await submit(h, update('a1', 1, 'a-first', { branch: A }));
    const e = await entity(h);
    expect(e.currentVersion).toMatchObject({ version: 4, baseVersion: 3, branchId: A, branchBaseVersion: 2, data: { status: 'a-second' } });
    expect(e.conflict).toBe('hard');
    const versions = await json<Json[]>(await h.get(`${E(h)}/versions`, { as: 'alice' }));
    expect(versions.map((v) => [v.version, v.branchId, v.data.status ?? null, v.conflict])).toEqual([
      [1, null, null, null], [2, B, 'b-first', null], [3, A, 'a-first', 'hard'], [4, A, 'a-second', 'soft'],
    ]);
    const resolved = await h.patch(`${E(h)}?resolve=true&baseVersion=4`, { as: 'alice' });
    expect(resolved.status).toBe(200);
    expect((await entity(h)).conflict).toBeNull();
    const csv = await (await h.get(`${P(h)}/datasets/people/entities.csv`, { as: 'alice' })).text();
    expect(csv).toContain(`${UUID},Johnny Doe`);
    expect(csv).toContain('a-second');
    const odata = await json<Json>(await h.get(`${P(h)}/datasets/people.svc/Entities?$filter=__id eq '${UUID}'`, { as: 'alice' }));
    expect(odata.value[0]).toMatchObject({ status: 'a-second', __system: { version: 4, conflict: null } });
  });
});
