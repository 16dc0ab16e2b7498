/**
 * Exports stream (DESIGN rule 5): an export of 3,000 submissions is read slowly, chunk by chunk;
 * the first chunk comes before the later rows are read from the database, memory stays bounded
 * while it is read, and a reader that cancels stops the reads.
 */
import { createHash } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { submissionDefs, submissions } from '../../../drizzle/schema';
import { systemCtx, type Ctx } from '../../../lib/context';
import type { Db } from '../../../lib/db/client';
import { exportCsv, exportZip } from '../../../lib/exports';
import { createSubmission } from '../../../lib/submissions/ingest';
import { harness, type Harness } from '../../helpers/harness';
import { fixture, parseCsv, publishForm, readZip } from './helpers';

const COUNT = 3000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const padding = 'x'.repeat(400);
const enc = new TextEncoder();

/**
 * withrepeat with COUNT submissions (s0 oldest … s2999 newest, newer ids being newer), two
 * children each. One is made through the lib (lib/submissions/ingest createSubmission) with a
 * marker `Q` where the number goes; the others are its rows copied with the marker replaced, in
 * batches (thousands of lib calls would take most of a minute on PGlite).
 */
async function manySubmissions(h: Harness): Promise<void> {
  await publishForm(h, fixture('forms/withrepeat.xml'));
  const xml = `<data id="withrepeat" version="1.0"><orx:meta xmlns:orx="http://openrosa.org/xforms"><orx:instanceID>sQ</orx:instanceID></orx:meta>`
    + `<name>Name Q, "quoted" ${padding}</name><age>7</age><children><child><name>aQ</name><age>1</age></child><child><name>bQ</name><age>2</age></child></children></data>`;
  await createSubmission(systemCtx(h.deps), { projectId: h.projectId, xmlFormId: 'withrepeat', draft: false, xml: enc.encode(xml), deviceId: null, userAgent: null });
  const [sub] = await h.db.select().from(submissions).where(eq(submissions.instanceId, 'sQ'));
  const [def] = await h.db.select().from(submissionDefs).where(eq(submissionDefs.submissionId, sub!.id));
  // Every column as the lib wrote it (so the copies follow the schema), the marker replaced.
  const numbered = <T extends object>(row: T, n: number): T => JSON.parse(JSON.stringify(row).replaceAll('Q', String(n)), (k, v: unknown) =>
    (typeof v === 'string' && /At$/.test(k) ? new Date(v) : v)) as T;
  const { id: _s, createdAt: _c, currentDefId: _d, ...subCols } = sub!;
  const { id: _i, submissionId: _p, createdAt: _dc, ...defCols } = def!;
  for (let from = 1; from < COUNT; from += 500) {
    const ns = Array.from({ length: Math.min(500, COUNT - from) }, (_, k) => from + k);
    const ids = await h.db.insert(submissions).values(ns.map((n) => numbered(subCols, n))).returning({ id: submissions.id });
    await h.db.insert(submissionDefs).values(ns.map((n, k) => {
      const d = numbered(defCols, n);
      return { ...d, submissionId: ids[k]!.id, md5: createHash('md5').update(d.xml).digest('hex') };
    }));
  }
  await h.db.execute(sql`update ${submissions} s set current_def_id = d.id from ${submissionDefs} d where d.submission_id = s.id and s.current_def_id is null`);
  // The lib's own row becomes s0; it has the smallest id, so it is the oldest.
  const zero = numbered(defCols, 0);
  await h.db.update(submissionDefs).set({ ...zero, md5: createHash('md5').update(zero.xml).digest('hex') }).where(eq(submissionDefs.id, def!.id));
  await h.db.update(submissions).set({ instanceId: 's0' }).where(eq(submissions.id, sub!.id));
}

/** Heap samples taken while a stream is read. */
function sampler() {
  const base = process.memoryUsage().heapUsed;
  let max = base;
  return {
    sample: () => (max = Math.max(max, process.memoryUsage().heapUsed)),
    growth: () => max - base,
  };
}

/** A Db whose select calls are counted (each export batch is one select). */
function countingDb(db: Db): { db: Db; selects: () => number } {
  let n = 0;
  const proxy = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'select' || prop === 'selectDistinct') n += 1;
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  return { db: proxy, selects: () => n };
}

const query = { attachments: true, groupPaths: true, deletedFields: false, splitSelectMultiples: false, filter: null };

describe('streaming exports', () => {
  test(`${COUNT} submissions: the CSV and the ZIP are read slowly, the first chunk comes before the last rows are read, memory stays bounded`, async () => {
    const h = await harness();
    await manySubmissions(h);

    // CSV, read slowly without keeping the text: count lines and keep the last one.
    const csv = await h.get(`/v1/projects/${h.projectId}/forms/withrepeat/submissions.csv`, { as: 'bob' });
    expect(csv.status).toBe(200);
    const reader = csv.body!.getReader();
    const mem = sampler();
    const first = await reader.read();
    expect(first.done).toBe(false);
    const decoder = new TextDecoder();
    let pending = decoder.decode(first.value, { stream: true });
    // The oldest submission is in the last batch: changed now, the change shows in the rows still to come.
    await h.db.update(submissions).set({ reviewState: 'approved' }).where(eq(submissions.instanceId, 's0'));
    let chunks = 1;
    let lines = 0;
    let last = '';
    for (;;) {
      await sleep(2);
      mem.sample();
      const { done, value } = await reader.read();
      if (done) break;
      chunks += 1;
      pending += decoder.decode(value, { stream: true });
      const cut = pending.lastIndexOf('\n');
      if (cut >= 0) {
        const complete = pending.slice(0, cut);
        lines += complete.split('\n').length;
        last = complete.slice(complete.lastIndexOf('\n') + 1);
        pending = pending.slice(cut + 1);
      }
    }
    expect(pending).toBe('');
    expect(lines).toBe(COUNT + 1);
    expect(chunks).toBeGreaterThanOrEqual(COUNT / 500); // one chunk per batch at least (the header rides with the first)
    const row = parseCsv(`${last}\n`)[0]!;
    expect(row[row.length - 10]).toBe('s0'); // KEY
    expect(row[row.length - 4]).toBe('approved'); // ReviewState, read after the first chunk was delivered
    expect(mem.growth()).toBeLessThan(200 * 1024 * 1024);

    // ZIP, read slowly; the archive then holds every row and every repeat row.
    await h.db.update(submissions).set({ reviewState: null }).where(eq(submissions.instanceId, 's0'));
    const zip = await h.get(`/v1/projects/${h.projectId}/forms/withrepeat/submissions.csv.zip`, { as: 'bob' });
    const zipReader = zip.body!.getReader();
    const zmem = sampler();
    const parts: Uint8Array[] = [];
    const firstZip = await zipReader.read();
    expect(firstZip.done).toBe(false);
    parts.push(firstZip.value!);
    await h.db.update(submissions).set({ reviewState: 'rejected' }).where(eq(submissions.instanceId, 's0'));
    for (;;) {
      await sleep(2);
      zmem.sample();
      const { done, value } = await zipReader.read();
      if (done) break;
      parts.push(value);
    }
    expect(parts.length).toBeGreaterThan(2);
    const bytes = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.byteLength;
    }
    const entries = readZip(bytes);
    expect(entries.map((e) => e.name)).toEqual(['withrepeat.csv', 'withrepeat-child.csv']);
    const root = parseCsv(new TextDecoder().decode(entries[0]!.data));
    expect(root).toHaveLength(COUNT + 1);
    expect(root[1]!.slice(1, 3)).toEqual(['s2999', `Name 2999, "quoted" ${padding}`]);
    expect(root[COUNT]![root[0]!.indexOf('ReviewState')]).toBe('rejected');
    const children = parseCsv(new TextDecoder().decode(entries[1]!.data));
    expect(children).toHaveLength(2 * COUNT + 1);
    expect(children[1]).toEqual(['a2999', '1', 's2999', 's2999/children/child[1]']);
    expect(children[2 * COUNT]).toEqual(['b0', '2', 's0', 's0/children/child[2]']);
    expect(zmem.growth()).toBeLessThan(200 * 1024 * 1024);
  }, 120_000);

  test('a reader that cancels mid-way stops the database reads; nothing escapes', async () => {
    const h = await harness();
    await manySubmissions(h);
    const escaped: unknown[] = [];
    const onError = (err: unknown) => escaped.push(err);
    process.on('unhandledRejection', onError);
    process.on('uncaughtException', onError);
    try {
      for (const kind of ['csv', 'zip'] as const) {
        const counting = countingDb(h.db);
        const ctx: Ctx = { ...systemCtx(h.deps), db: counting.db };
        const file = await (kind === 'csv' ? exportCsv : exportZip)(ctx, h.projectId, 'withrepeat', false, query);
        // The form, rights, layout and the first batch (read before answering, so its errors are proper ones).
        const planned = counting.selects();
        const reader = file.stream.getReader();
        let received = 0;
        while (received < 2) {
          const { done, value } = await reader.read();
          expect(done, kind).toBe(false);
          received += value!.byteLength > 0 ? 1 : 0;
        }
        const before = counting.selects();
        await expect(reader.cancel()).resolves.toBeUndefined();
        const cancelled = counting.selects();
        expect((await reader.read()).done).toBe(true);
        await sleep(50);
        // No batch was read after the cancel, and far from all of them (6) had been. The ZIP
        // reads ahead of its reader (lib/exports/zip.ts AHEAD_INPUT) so that the database, the
        // compressor and the socket work at once: one more batch may have been under way.
        expect(counting.selects(), kind).toBe(cancelled);
        expect(cancelled - before, kind).toBeLessThanOrEqual(kind === 'zip' ? 1 : 0);
        expect(before - planned, kind).toBeGreaterThanOrEqual(0);
        expect(cancelled - planned, kind).toBeLessThanOrEqual(2);
      }
      // Through HTTP too; the transaction is still usable afterwards.
      const res = await h.get(`/v1/projects/${h.projectId}/forms/withrepeat/submissions.csv.zip`, { as: 'bob' });
      const reader = res.body!.getReader();
      await reader.read();
      await reader.cancel();
      await sleep(50);
      const after = await h.get(`/v1/projects/${h.projectId}/forms/withrepeat/submissions.csv?$filter=${encodeURIComponent("__id eq 's7'")}`, { as: 'bob' });
      expect(parseCsv(await after.text()).map((r) => r[1])).toEqual(['meta-instanceID', 's7']);
    } finally {
      process.off('unhandledRejection', onError);
      process.off('uncaughtException', onError);
    }
    expect(escaped).toEqual([]);
  }, 120_000);
});
