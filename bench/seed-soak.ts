/**
 * Bulk seeding of submissions for the volume benches (bench/odata.ts; usable by bench/export.ts):
 * rows as ingestion stores them (lib/submissions/ingest.ts createNew: a submissions row, its
 * current submission_defs row with the XML, its MD5, `values` in parseSubmission's shape and
 * `root_values` = rootValuesOf(values), and current_def_id), written straight into the database
 * without the HTTP path or audit rows.
 *
 * Rows come from a submission template whose placeholders (`{{uuid}}` first, then e.g.
 * `{{randInt}}`, `{{word}}`) each fill one whole leaf text: the template is parsed once with
 * parseSubmission, and a filled XML's `values` are that skeleton with the same fills, so 100,000
 * rows cost no XML parsing. Every batch's first row is checked against parseSubmission (instanceID,
 * MD5, instanceName, values), so the fast path cannot drift from what ingestion stores. Forms whose
 * submissions expect files (binary fields) are refused: no submission_attachments rows are made.
 *
 * One SQL statement per batch: the rows go as one JSON parameter, ids come from the identity
 * sequences up front, and both tables are written by data-modifying CTEs, so the circular
 * submissions.current_def_id ↔ submission_defs.submission_id references hold when the statement's
 * foreign keys are checked. Works on postgres.js and PGlite. Each batch raises
 * gin_pending_list_limit for its transaction (see insertBatch); the closing VACUUM merges what is
 * pending, so the tables end as ingestion would leave them after autovacuum.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { and, count, eq, sql } from 'drizzle-orm';
import { submissions } from '../drizzle/schema';
import type { NodeDatabase } from '../lib/runtime/node';
import { parseSubmission, rootTextOf, rootValuesOf } from '../lib/xforms/parse-submission';
import type { FormField, SubmissionValue } from '../lib/xforms/types';

/** The 250-question soak form (shared/fixtures/forms/central-e2e/soak): no groups, no repeats, 250 string fields. */
export const SOAK_FORM_ID = '250_questions';

export function soakFixtures(): { formXml: string; template: string } {
  const dir = new URL('../../shared/fixtures/forms/central-e2e/soak/', import.meta.url);
  return { formXml: readFileSync(new URL('250q-form.xml', dir), 'utf8'), template: readFileSync(new URL('250q-submission.template.xml', dir), 'utf8') };
}

/** One generated submission: what ingestion would store for its XML. */
export interface GeneratedSubmission {
  instanceId: string;
  xml: string;
  md5: string;
  instanceName: string | null;
  values: SubmissionValue[];
}

/** Placeholder fills: each returns text that needs no XML escaping. */
export type Fills = Record<string, () => string>;

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'];
export const defaultFills: Fills = {
  uuid: () => randomUUID(),
  randInt: () => String(Math.floor(Math.random() * 1e6)),
  smallInt: () => String(Math.floor(Math.random() * 100)),
  word: () => WORDS[Math.floor(Math.random() * WORDS.length)]!,
};

const PLACEHOLDER = /(\{\{[A-Za-z]+\}\})/;

/**
 * A generator of submissions from a template (its instanceID `uuid:{{uuid}}`).
 * @throws when a placeholder is unknown, shares a leaf with another or sits outside a leaf text,
 *   or when the template's submission would expect files.
 */
export function templateGenerator(template: string, fields: FormField[], fills: Fills = defaultFills): () => GeneratedSubmission {
  const pieces = template.split(PLACEHOLDER);
  const names = pieces.filter((p) => PLACEHOLDER.test(p)).map((p) => p.slice(2, -2));
  for (const n of names) if (!fills[n]) throw new Error(`no fill for {{${n}}}`);
  if (names[0] !== 'uuid' || !template.includes('uuid:{{uuid}}')) throw new Error('the template must start with an instanceID uuid:{{uuid}}');
  const parsed = parseSubmission(template, fields);
  if (parsed.attachments.length > 0) throw new Error(`the template expects files (${parsed.attachments.join(', ')}); not supported`);
  const skeleton = parsed.values;
  const holes = skeleton.filter((v) => v.value.includes('{{'));
  if (holes.some((v) => !/^[^{]*\{\{[A-Za-z]+\}\}[^{]*$/.test(v.value)) || holes.length !== names.length) {
    throw new Error('every placeholder must sit alone in one leaf text');
  }
  const fns = names.map((n) => fills[n]!);
  return () => {
    const filled = fns.map((f) => f());
    let xml = '';
    let k = 0;
    for (const p of pieces) xml += PLACEHOLDER.test(p) ? filled[k++] : p;
    k = 0;
    const values = skeleton.map((v) => (v.value.includes('{{')
      ? { path: v.path, repeatIndex: v.repeatIndex, value: v.value.replace(PLACEHOLDER, () => filled[k++]!) }
      : v));
    return { instanceId: `uuid:${filled[0]}`, xml, md5: createHash('md5').update(xml).digest('hex'), instanceName: parsed.instanceName, values };
  };
}

/** @throws when parseSubmission reads the generated XML differently. */
export function checkGenerated(g: GeneratedSubmission, fields: FormField[]): void {
  const parsed = parseSubmission(g.xml, fields);
  if (parsed.instanceId !== g.instanceId || parsed.hash.md5 !== g.md5 || parsed.instanceName !== g.instanceName
    || JSON.stringify(parsed.values) !== JSON.stringify(g.values) || parsed.attachments.length > 0) {
    throw new Error('a generated submission differs from what parseSubmission reads (instanceID, MD5, instanceName, values or files)');
  }
}

export interface SeedTarget {
  /** forms.id and the published form_defs.id the rows belong to. */
  formId: number;
  formDefId: number;
  fields: FormField[];
  /** The submitter (an App User, as from Collect), or null. */
  submitterId: number | null;
}

export interface SeedOptions {
  /** Rows `from`..`to`-1 (row i is created at epochMs + i × stepMs). */
  from: number;
  to: number;
  /** Row i's submission (e.g. alternate templates by i). */
  generate: (i: number) => GeneratedSubmission;
  epochMs: number;
  stepMs?: number;
  /** Rows per statement (500). */
  batch?: number;
  /** Statements in flight (PostgreSQL; PGlite always 1). */
  concurrency?: number;
  /** Print rows seeded and rows/s every 50,000 rows (long seeds). */
  progress?: boolean;
}

const DEVICE_ID = 'collect:bench0123456789';
const USER_AGENT = 'org.odk.collect.android/v2024.3.0 bench';

async function insertBatch(db: NodeDatabase['db'], t: SeedTarget, rows: GeneratedSubmission[], createdAt: (k: number) => string): Promise<void> {
  const json = JSON.stringify(rows.map((r, k) => ({
    instance_id: r.instanceId, xml: r.xml, md5: r.md5, instance_name: r.instanceName, vals: r.values, root: rootValuesOf(r.values), root_text: rootTextOf(r.values, t.fields), created_at: createdAt(k),
  })));
  const result = await db.transaction(async (tx) => {
    // A larger GIN pending list for this transaction (submission_defs_root_values: ~250 entries per
    // row of the soak form): entries are merged into the index in big sorted runs (and by the
    // VACUUM at the end) instead of one 4 MB flush every ~60 rows. The stored state is the same.
    await tx.execute(sql`set local gin_pending_list_limit = '512MB'`);
    return tx.execute(sql`
    with input as materialized (
      select r.*, nextval(pg_get_serial_sequence('submissions', 'id')) as sid, nextval(pg_get_serial_sequence('submission_defs', 'id')) as did
      from json_to_recordset(${json}::json) as r(instance_id text, xml text, md5 text, instance_name text, vals jsonb, root jsonb, root_text text, created_at timestamptz)
    ), s as (
      insert into submissions (id, form_id, instance_id, draft, submitter_id, device_id, user_agent, current_def_id, created_at)
      overriding system value
      select sid, ${t.formId}, instance_id, false, ${t.submitterId}, ${DEVICE_ID}, ${USER_AGENT}, did, created_at from input
      returning 1
    ), d as (
      insert into submission_defs (id, submission_id, form_def_id, instance_id, xml, md5, instance_name, submitter_id, device_id, user_agent, current, encrypted, values, root_values, root_text, created_at)
      overriding system value
      select did, sid, ${t.formDefId}, instance_id, xml, md5, instance_name, ${t.submitterId}, ${DEVICE_ID}, ${USER_AGENT}, true, false, vals, root, root_text, created_at from input
      returning 1
    )
    select (select count(*) from s)::int as subs, (select count(*) from d)::int as defs`);
  });
  const row = (Array.isArray(result) ? result[0] : (result as { rows: unknown[] }).rows[0]) as { subs: number; defs: number } | undefined;
  if (row?.subs !== rows.length || row.defs !== rows.length) throw new Error(`short insert: ${JSON.stringify(row)} of ${rows.length}`);
}

/**
 * Seeds rows `from`..`to`-1 of a form. @returns seconds taken.
 * @throws on a failed batch (with the database's message, not the megabytes of parameters).
 */
export async function seedSubmissions(database: NodeDatabase, target: SeedTarget, opts: SeedOptions): Promise<number> {
  const t0 = performance.now();
  const batch = opts.batch ?? 500;
  const step = opts.stepMs ?? 10;
  const ranges: Array<[number, number]> = [];
  for (let i = opts.from; i < opts.to; i += batch) ranges.push([i, Math.min(opts.to, i + batch)]);
  let next = 0;
  const lanes = database.kind === 'postgres' ? (opts.concurrency ?? 2) : 1;
  await Promise.all(Array.from({ length: lanes }, async () => {
    while (next < ranges.length) {
      const [from, to] = ranges[next++]!;
      const rows = Array.from({ length: to - from }, (_, k) => opts.generate(from + k));
      checkGenerated(rows[0]!, target.fields);
      await insertBatch(database.db, target, rows, (k) => new Date(opts.epochMs + (from + k) * step).toISOString()).catch((err: unknown) => {
        const e = err as { cause?: Error; message?: string };
        throw new Error(`seeding rows ${from}..${to - 1} failed: ${e.cause?.message ?? String(e.message ?? err).slice(0, 500)}`);
      });
      if (opts.progress && Math.floor(to / 50_000) > Math.floor(from / 50_000)) {
        console.log(`  seeded to row ${to} (${((to - opts.from) / ((performance.now() - t0) / 1000)).toFixed(0)} rows/s)`);
      }
    }
  }));
  if (database.kind === 'postgres') await database.db.execute(sql`vacuum analyze submissions, submission_defs`);
  else await database.db.execute(sql`analyze submissions, submission_defs`);
  const [stored] = await database.db.select({ n: count() }).from(submissions).where(and(eq(submissions.formId, target.formId), sql`${submissions.currentDefId} is not null`));
  if (stored!.n < opts.to) throw new Error(`the form has ${stored!.n} submissions after seeding up to row ${opts.to}`);
  return (performance.now() - t0) / 1000;
}
