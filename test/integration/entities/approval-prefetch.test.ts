/**
 * An approval reads its entity work's prelude in the same round trip as its own update (lib/jobs
 * prefetchInlineJob); lib/entities uses that read only when it saw the approval's update (the
 * submission's updatedAt is the review's), else reads again. Here a prelude read before the
 * approval (its "already used for an entity" flag false) is handed to the entity work after the
 * approval made the entity: keyed with another review time it is read again and nothing happens;
 * keyed as fresh it would be believed, and the create would fail (the control, 409.3).
 */
import { readFileSync } from 'node:fs';
import { and, eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { submissions } from '../../../drizzle/schema';
import { systemCtx, withTx } from '../../../lib/context';
import { processSubmissionEvent, type PreludeKey } from '../../../lib/entities/from-submissions';
import { prefetchInlineJob, type Prefetched } from '../../../lib/jobs';
import { harness, json } from '../../helpers/harness';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const XML = { 'Content-Type': 'application/xml' };
const UUID = '12345678-1234-4123-8234-123456789abc';

describe('an approval\'s prefetched entity prelude', () => {
  test('is used only when it saw the approval; a stale one is read again', async () => {
    const h = await harness();
    const P = `/v1/projects/${h.projectId}`;
    expect((await h.post(`${P}/forms?publish=true`, { as: 'alice', body: fixture('forms/simpleEntity.xml'), headers: XML })).status).toBe(200);
    expect((await h.patch(`${P}/datasets/people`, { as: 'alice', body: { approvalRequired: true } })).status).toBe(200);
    const xml = `<data xmlns:jr="http://openrosa.org/javarosa" xmlns:entities="http://www.opendatakit.org/xforms/entities" id="simpleEntity" version="1.0">
      <meta><instanceID>one</instanceID><entities:entity dataset="people" id="uuid:${UUID}" create="1"><entities:label>Alice</entities:label></entities:entity></meta>
      <name>Alice</name><age>88</age><hometown>Toronto</hometown></data>`;
    expect((await h.post(`${P}/forms/simpleEntity/submissions`, { as: 'alice', body: xml, headers: XML })).status).toBe(200);
    const sub = async () => (await h.db.select().from(submissions).where(and(eq(submissions.instanceId, 'one'), eq(submissions.draft, false))))[0]!;
    const { id: submissionId, currentDefId } = await sub();
    const defId = currentDefId!;
    const ctx = systemCtx(h.deps);

    // The prelude as it is before the approval: no entity version from this submission yet.
    const staleRows = await withTx(ctx, async (tx) => (await prefetchInlineJob(tx, 'submission.entities', { defId, reviewedAt: 'before' } satisfies PreludeKey)!.result) as unknown[]);
    expect(staleRows).toHaveLength(1);
    expect(staleRows).toMatchObject([{ used: false }]);

    expect((await h.patch(`${P}/forms/simpleEntity/submissions/one`, { as: 'alice', body: { reviewState: 'approved' } })).status).toBe(200);
    expect((await json<Array<{ uuid: string }>>(await h.get(`${P}/datasets/people/entities`, { as: 'alice' }))).map((e) => e.uuid)).toEqual([UUID]);
    const reviewedAt = (await sub()).updatedAt!.toISOString();

    const ev = { action: 'submission.update', submissionId, submissionDefId: defId, reviewState: 'approved', actorId: h.ids.alice };
    const stale = (key: PreludeKey, rows: unknown[] = staleRows): Prefetched => ({ key, result: Promise.resolve(rows) });
    const errors = async () => (await h.audits()).filter((a) => a.action === 'entity.error');

    // Read before the approval's update (its updatedAt is not the review's): read again, the
    // submission is seen as used, nothing happens.
    await withTx(ctx, (tx) => processSubmissionEvent(tx, ev, stale({ defId, reviewedAt })));
    expect(await errors()).toEqual([]);
    // For another submission version: read again as well.
    await withTx(ctx, (tx) => processSubmissionEvent(tx, ev, stale({ defId: defId + 1000, reviewedAt })));
    expect(await errors()).toEqual([]);

    // The control: the same stale flags, on a row whose updatedAt is the review's, are believed,
    // and the create runs into the entity the approval made.
    const claimingFresh = (staleRows as Array<{ sub: object }>).map((r) => ({ ...r, sub: { ...r.sub, updatedAt: new Date(reviewedAt) } }));
    await withTx(ctx, (tx) => processSubmissionEvent(tx, ev, stale({ defId, reviewedAt }, claimingFresh)));
    expect((await errors()).map((a) => (a.details as { problem: { problemCode: number } }).problem.problemCode)).toEqual([409.3]);
    expect((await json<unknown[]>(await h.get(`${P}/datasets/people/entities`, { as: 'alice' })))).toHaveLength(1);
  });
});
