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
 *
 * Fast mode (seedSubmissionsFast): the same rows generated inside PostgreSQL by INSERT … SELECT over
 * generate_series from the same templates (fills by random()/gen_random_uuid()), sample rows of each
 * batch read back and checked against parseSubmission (checkStoredRows). Its limit is PostgreSQL's
 * jsonb input of `values` and root_values (~2 ms of CPU a soak row under load).
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

// ---------------------------------------------------------------------------------------------
// Fast mode: rows generated inside PostgreSQL

/** SQL expressions, one per placeholder name, each a fresh random text per evaluation (as defaultFills). */
export type SqlFills = Record<string, string>;

export const defaultSqlFills: SqlFills = {
  uuid: 'gen_random_uuid()::text',
  randInt: 'floor(random() * 1000000)::int::text',
  smallInt: 'floor(random() * 100)::int::text',
  word: `(array[${WORDS.map((w) => `'${w}'`).join(', ')}])[1 + floor(random() * ${WORDS.length})::int]`,
};

export interface FastSeedOptions {
  /** Rows `from`..`to`-1 (row i is created at epochMs + i × stepMs, from template i mod templates.length). */
  from: number;
  to: number;
  /** Submission templates (placeholders as for templateGenerator). */
  templates: string[];
  fills?: SqlFills;
  epochMs: number;
  stepMs?: number;
  /** Rows per statement (5,000). */
  batch?: number;
  /** Statements in flight (2). */
  concurrency?: number;
  /** Print rows seeded and rows/s every 50,000 rows. */
  progress?: boolean;
}

// A marker that survives parseSubmission, JSON.stringify and rootTextOf unchanged: fill k of a row.
const MARKER = /ZQXFILL(\d+)XQZ/;
const quote = (s: string) => `'${s.replace(/'/g, "''")}'`;

/**
 * One template as SQL: the template is filled with markers (fill k → `ZQXFILL{k}XQZ`) through
 * templateGenerator, so the XML, `values`, root_values and root_text are exactly what the JS path
 * builds; each text is then split at the markers and joined again over a row's fresh fills, columns
 * f1, f2, … (not one array: a subscript walks and detoasts the whole array, 2 ms a row).
 */
function templateSql(template: string, fields: FormField[], fills: SqlFills): { fills: string[]; xml: string; instanceId: string; instanceName: string; values: string; root: string; rootText: string } {
  const names = template.split(PLACEHOLDER).filter((p) => PLACEHOLDER.test(p)).map((p) => p.slice(2, -2));
  for (const n of names) if (!fills[n]) throw new Error(`no SQL fill for {{${n}}}`);
  let k = 0;
  const markerFills: Fills = Object.fromEntries(names.map((n) => [n, () => `ZQXFILL${k++}XQZ`]));
  const g = templateGenerator(template, fields, markerFills)();
  // array_to_string copies each piece once (a chain of 500 `||` copies the growing text 500 times).
  const concat = (text: string) => {
    const parts = text.split(MARKER).map((p, i) => (i % 2 === 1 ? `f${Number(p) + 1}` : quote(p))).filter((p) => p !== "''");
    return parts.length === 0 ? "''" : parts.length === 1 ? parts[0]! : `array_to_string(array[${parts.join(', ')}], '')`;
  };
  // Fills are inserted into JSON text unescaped: they must need no escaping (ours are [0-9a-z-]).
  return {
    fills: names.map((n) => fills[n]!),
    xml: concat(g.xml),
    instanceId: concat(g.instanceId),
    instanceName: g.instanceName == null ? 'null::text' : concat(g.instanceName),
    values: `(${concat(JSON.stringify(g.values))})::jsonb`,
    root: `(${concat(JSON.stringify(rootValuesOf(g.values)))})::jsonb`,
    rootText: concat(rootTextOf(g.values, fields)),
  };
}

/** Sorted-key JSON: jsonb does not keep key order. */
const canonical = (v: unknown): string => JSON.stringify(v, (_k, x: unknown) => (x && typeof x === 'object' && !Array.isArray(x)
  ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));

/**
 * Reads stored rows back and checks each against what ingestion stores for its XML: parseSubmission's
 * instanceID, MD5, instanceName and values, rootValuesOf, rootTextOf.
 * @throws on the first difference.
 */
export async function checkStoredRows(database: NodeDatabase, fields: FormField[], defIds: number[]): Promise<void> {
  const result = (await database.db.execute(sql`select d.instance_id, d.xml, d.md5, d.instance_name, d.values, d.root_values, d.root_text, s.instance_id as sub_instance_id, s.current_def_id
    from submission_defs d join submissions s on s.id = d.submission_id where d.id in (${sql.join(defIds.map((id) => sql`${id}`), sql`, `)})`)) as unknown;
  const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<Record<string, unknown>>;
  if (rows.length !== defIds.length) throw new Error(`checked ${rows.length} of ${defIds.length} rows`);
  for (const r of rows) {
    const parsed = parseSubmission(r.xml as string, fields);
    const diffs = [
      parsed.instanceId !== r.instance_id || r.sub_instance_id !== r.instance_id ? 'instanceID' : '',
      parsed.hash.md5 !== r.md5 ? 'MD5' : '',
      parsed.instanceName !== r.instance_name ? 'instanceName' : '',
      canonical(parsed.values) !== canonical(r.values) ? 'values' : '',
      canonical(rootValuesOf(parsed.values)) !== canonical(r.root_values) ? 'root_values' : '',
      rootTextOf(parsed.values, fields) !== r.root_text ? 'root_text' : '',
      parsed.attachments.length > 0 ? 'files' : '',
      r.current_def_id == null ? 'current_def_id' : '',
    ].filter(Boolean);
    if (diffs.length > 0) throw new Error(`stored row ${String(r.instance_id)} differs from what ingestion stores: ${diffs.join(', ')}`);
  }
}

/**
 * Seeds rows `from`..`to`-1 of a form with INSERT … SELECT over generate_series: no row crosses
 * the wire, so PostgreSQL's own insert speed is the limit (thousands of rows/s on 2 cores, against
 * ~200 for seedSubmissions). The rows are those seedSubmissions writes (same columns, same texts
 * from the same templates; random fills drawn by PostgreSQL's random() and gen_random_uuid()); the
 * first and last row of every batch are read back and checked by checkStoredRows against
 * parseSubmission. @returns seconds taken. Ends with VACUUM ANALYZE (PostgreSQL) as seedSubmissions.
 * @throws on a failed batch or a check that fails.
 */
export async function seedSubmissionsFast(database: NodeDatabase, target: SeedTarget, opts: FastSeedOptions): Promise<number> {
  const t0 = performance.now();
  const batch = opts.batch ?? 5000;
  const step = opts.stepMs ?? 10;
  const fills = opts.fills ?? defaultSqlFills;
  const shapes = opts.templates.map((t) => templateSql(t, target.fields, fills));
  const m = shapes.length;
  const pick = (field: Exclude<keyof ReturnType<typeof templateSql>, 'fills'>) => (m === 1 ? shapes[0]![field]
    : `case i % ${m} ${shapes.map((s, j) => `when ${j} then ${s[field]}`).join(' ')} end`);
  const fillColumns = Array.from({ length: Math.max(...shapes.map((s) => s.fills.length)) }, (_, k) => `${m === 1 ? shapes[0]!.fills[k]
    : `case i % ${m} ${shapes.map((s, j) => `when ${j} then ${s.fills[k] ?? 'null'}`).join(' ')} end`} as f${k + 1}`).join(', ');
  const statement = (from: number, to: number) => `
    with input as materialized (
      select i, ${fillColumns},
        nextval(pg_get_serial_sequence('submissions', 'id')) as sid, nextval(pg_get_serial_sequence('submission_defs', 'id')) as did,
        to_timestamp((${opts.epochMs}::float8 + i::float8 * ${step}) / 1000) as created_at
      from generate_series(${from}, ${to - 1}) as i
    ), d as (
      insert into submission_defs (id, submission_id, form_def_id, instance_id, xml, md5, instance_name, submitter_id, device_id, user_agent, current, encrypted, values, root_values, root_text, created_at)
      overriding system value
      select did, sid, ${target.formDefId}, instance_id, xml, md5(xml), instance_name, ${target.submitterId ?? 'null'}, ${quote(DEVICE_ID)}, ${quote(USER_AGENT)}, true, false, vals, root, root_text, created_at
      from (select did, sid, created_at, ${pick('instanceId')} as instance_id, ${pick('xml')} as xml, ${pick('instanceName')} as instance_name,
        ${pick('values')} as vals, ${pick('root')} as root, ${pick('rootText')} as root_text from input) x
      returning id, instance_id
    ), s as (
      insert into submissions (id, form_id, instance_id, draft, submitter_id, device_id, user_agent, current_def_id, created_at)
      overriding system value
      select sid, ${target.formId}, ${pick('instanceId')}, false, ${target.submitterId ?? 'null'}, ${quote(DEVICE_ID)}, ${quote(USER_AGENT)}, did, created_at from input
      returning 1
    )
    select (select count(*) from s)::int as subs, (select count(*) from d)::int as defs, (select min(id) from d) as first, (select max(id) from d) as last`;
  const ranges: Array<[number, number]> = [];
  for (let i = opts.from; i < opts.to; i += batch) ranges.push([i, Math.min(opts.to, i + batch)]);
  let next = 0;
  let done = 0;
  const lanes = database.kind === 'postgres' ? (opts.concurrency ?? 2) : 1;
  await Promise.all(Array.from({ length: lanes }, async () => {
    while (next < ranges.length) {
      const [from, to] = ranges[next++]!;
      const result = await database.db.transaction(async (tx) => {
        await tx.execute(sql`set local work_mem = '256MB'`);
        return tx.execute(sql.raw(statement(from, to)));
      }).catch((err: unknown) => {
        const e = err as { cause?: Error; message?: string };
        throw new Error(`seeding rows ${from}..${to - 1} failed: ${e.cause?.message ?? String(e.message ?? err).slice(0, 500)}`);
      });
      const row = (Array.isArray(result) ? result[0] : (result as { rows: unknown[] }).rows[0]) as { subs: number; defs: number; first: number; last: number } | undefined;
      if (row?.subs !== to - from || row.defs !== to - from) throw new Error(`short insert: ${JSON.stringify(row)} of ${to - from}`);
      await checkStoredRows(database, target.fields, [...new Set([Number(row.first), Number(row.last)])]);
      const before = done;
      done += to - from;
      if (opts.progress && Math.floor(done / 50_000) > Math.floor(before / 50_000)) {
        console.log(`  seeded ${done} rows (${(done / ((performance.now() - t0) / 1000)).toFixed(0)} rows/s)`);
      }
    }
  }));
  if (database.kind === 'postgres') await database.db.execute(sql`vacuum analyze submissions, submission_defs`);
  else await database.db.execute(sql`analyze submissions, submission_defs`);
  const [stored] = await database.db.select({ n: count() }).from(submissions).where(and(eq(submissions.formId, target.formId), sql`${submissions.currentDefId} is not null`));
  if (stored!.n < opts.to) throw new Error(`the form has ${stored!.n} submissions after seeding up to row ${opts.to}`);
  return (performance.now() - t0) / 1000;
}
