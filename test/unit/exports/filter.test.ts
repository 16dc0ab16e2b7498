/**
 * lib/exports/filter.ts: OData `$filter` → SQL. Literals are always bound parameters (never SQL
 * text), Central's subset compiles, and everything else fails with Central's problems.
 */
import { sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, test } from 'vitest';
import { compileODataFilter, parseODataFilter, type FilterFieldResolver } from '../../../lib/exports/filter';
import { systemFilterField } from '../../../lib/exports';
import { problemOf } from '../../helpers/problems';

const dialect = new PgDialect();
const resolve: FilterFieldResolver = (path) => {
  switch (path) {
    case '__id': return { sql: sql`"instance_id"`, type: 'text' };
    case '__system/submissionDate': return { sql: sql`"created_at"`, type: 'time' };
    case '__system/submitterId': return { sql: sql`"submitter_id"`, type: 'number' };
    case '__system/reviewState': return { sql: sql`"review_state"`, type: 'text' };
    default: return null;
  }
};
const compile = (text: string, r: FilterFieldResolver = resolve) => dialect.sqlToQuery(compileODataFilter(text, r));
/** The SQL without its casts (`$1::text` → `$1`): the shape of the expression. */
const shape = (text: string) => compile(text).sql.replace(/::[a-z]+/g, '');

describe('compileODataFilter', () => {
  test('the SQL text has placeholders, never the literal; the literals are the parameters', () => {
    const hostile = "x'); drop table submissions; --";
    const q = compile(`__id eq '${hostile.replace(/'/g, "''")}' or __system/reviewState eq 'approved'`);
    expect(q.sql).not.toContain('drop table');
    expect(q.sql).not.toContain('approved');
    expect(q.sql).toMatch(/\$1/);
    expect(q.sql).toMatch(/\$2/);
    // Equality with a value binds it twice (`= $1 and … is not distinct from $2`: a B-tree can answer the first).
    expect(q.params).toEqual([hostile, hostile, 'approved', 'approved']);
    for (const [text, literal] of [
      ['__system/submissionDate lt 2020-01-01', '2020-01-01'],
      ['__system/submissionDate ge 2021-07-15T15:00:00.000+03:00', '2021-07-15T15:00:00.000+03:00'],
      ['__system/submitterId eq 12345', '12345'],
      ['year(__system/submissionDate) eq 2019', '2019'],
    ]) {
      const c = compile(text!);
      expect(c.sql, text).not.toContain(literal);
      expect(c.params.map(String), text).toContain(literal);
    }
  });

  test("Central's subset: comparisons, and/or/not with parentheses, now() and the date parts, null, $root/Submissions", () => {
    expect(shape("__id eq 'a'")).toBe('("instance_id" = $1 and "instance_id" is not distinct from $2)');
    expect(shape("__id ne 'a'")).toBe('("instance_id" is distinct from $1)');
    expect(compile('__system/reviewState eq null')).toEqual(expect.objectContaining({ sql: '("review_state" is not distinct from null)', params: [] }));
    expect(shape('__system/submissionDate lt now()')).toBe('("created_at" < now())');
    for (const part of ['year', 'month', 'day', 'hour', 'minute', 'second']) {
      expect(shape(`${part}(__system/submissionDate) ge 1`)).toBe(`(extract(${part} from "created_at") >= $1)`);
    }
    expect(shape("(not (__id eq 'a')) and (__system/submitterId gt 1 or __system/submitterId le 2)"))
      .toBe('(((not (("instance_id" = $1 and "instance_id" is not distinct from $2)))) and ((("submitter_id" > $3) or ("submitter_id" <= $4))))');
    // odata-v4-parser, Central's parser, reads `not X and Y` as `not (X and Y)`; kept, as Central has it.
    expect(shape("not (__id eq 'a') and __system/submitterId gt 1"))
      .toBe('(not ((("instance_id" = $1 and "instance_id" is not distinct from $2)) and ("submitter_id" > $3)))');
    expect(shape("$root/Submissions/__id eq 'a'")).toBe(shape("__id eq 'a'"));
    // A literal takes the kind of the field it is compared with (a quoted date is a date).
    expect(compile("__system/submissionDate lt '2020-01-01'").sql).toMatch(/^\("created_at" < \$1::timestamptz\)$/);
    expect(compile("__system/submitterId eq '5'").sql).toMatch(/^\("submitter_id" = \$1::(numeric|int\w*|bigint) and "submitter_id" is not distinct from \$2::(numeric|int\w*|bigint)\)$/);
  });

  test("errors with Central's codes and details: 400.18 unparseable, 501.4 unsupported syntax, 501.5 unknown field", () => {
    expect(problemOf(() => compile('__system/submitterId eq'), 400.18).details).toEqual({ reason: 'Unexpected character at 20' });
    expect(problemOf(() => compile("contains(__system/submitterName,'x')", (p) => resolve(p) ?? { sql: sql`x`, type: 'text' }), 501.4).details)
      .toEqual({ at: 0, type: 'MethodCallExpression', text: "contains(__system/submitterName,'x')" });
    expect(problemOf(() => compile("name eq 'Alice'"), 501.5).details).toEqual({ at: 0, text: 'name' });
    problemOf(() => compile('__system/submitterId add 1 eq 2'), 501.4);
    problemOf(() => compile("tolower(__id) eq 'a'"), 501.4);
    problemOf(() => compile("__id in ('a','b')"), 400.18);
    problemOf(() => compile('__system/submissionDate lt 2020-13-45'), 400.18);
    // Kinds that cannot meet in SQL are refused before any query (not as an error mid-stream).
    expect(problemOf(() => compile('year(__id) eq 2020'), 501.4).details).toEqual({ at: 0, type: 'MethodCallExpression', text: 'year(__id)' });
    expect(problemOf(() => compile('__system/submissionDate eq __id'), 501.4).details).toMatchObject({ type: 'EqualsExpression' });
    expect(shape('year(2020-01-01) eq year(__system/submissionDate)')).toBe('(extract(year from $1) is not distinct from extract(year from "created_at"))');
  });
});

describe('systemFilterField (what exports may filter on)', () => {
  test("__id and __system/ submissionDate, updatedAt, submitterId, reviewState, deletedAt; nothing else", () => {
    for (const path of ['__id', '__system/submissionDate', '__system/updatedAt', '__system/submitterId', '__system/reviewState', '__system/deletedAt']) {
      expect(systemFilterField(path), path).not.toBeNull();
    }
    for (const path of ['__system/submitterName', '__system/deviceId', '__system/attachmentsPresent', 'name', 'meta/instanceID']) {
      expect(systemFilterField(path), path).toBeNull();
    }
  });
});

describe('parseODataFilter bounds (CPU: the parser slows steeply with nesting)', () => {
  test('nesting past 100 parentheses or a filter over 10,000 characters is a quick 400.18', () => {
    const deep = `${'('.repeat(3000)}__system/reviewState eq 'approved'${')'.repeat(3000)}`;
    const t0 = performance.now();
    expect(() => parseODataFilter(deep)).toThrow(expect.objectContaining({ code: 400.18 }));
    expect(() => parseODataFilter(`__id eq '${'x'.repeat(10_001)}'`)).toThrow(expect.objectContaining({ code: 400.18 }));
    expect(performance.now() - t0).toBeLessThan(100);
    const ok = `${'('.repeat(20)}__system/reviewState eq 'approved'${')'.repeat(20)}`;
    expect(parseODataFilter(ok)).toBeTruthy();
  });
});
