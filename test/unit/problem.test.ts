import { describe, expect, test } from 'vitest';
import { problemFromDbError } from '../../lib/db/errors';
import { Problem, problems } from '../../lib/problem';

describe('Problem', () => {
  test('status is the integer part of the code; JSON keys are message, code, details', () => {
    const p = problems.user.uniquenessViolation({ fields: ['email', 'deleted'], values: ['a@b.org', 'false'], table: 'users' });
    expect(p.status).toBe(409);
    expect(JSON.stringify(p)).toBe(
      '{"message":"A resource already exists with email,deleted value(s) of a@b.org,false.","code":409.3,"details":{"fields":["email","deleted"],"values":["a@b.org","false"],"table":"users"}}',
    );
    expect(JSON.stringify(problems.user.notFound())).toBe('{"message":"Could not find the resource you were looking for.","code":404.1}');
  });

  test("messages match Central's captured bodies", () => {
    expect(problems.user.unparseable({ format: 'json', rawLength: 9 }).message).toBe('Could not parse the given data (9 chars) as json.');
    expect(problems.user.missingParameters({ expected: ['email', 'password'], got: {} }).message).toBe(
      'Required parameters missing. Expected (email, password), got (email: undefined, password: undefined).',
    );
    expect(problems.user.invalidDataTypeOfParameter({ field: 'limit', expected: 'integer' }).message).toBe(
      'Invalid input data type: expected (limit) to be (integer)',
    );
    expect(problems.user.unexpectedApiVersion({ got: '2' }).message).toBe('Unexpected an API version (accepts: 1) (got: 2).');
  });
});

describe('problemFromDbError', () => {
  test('unique violation (wrapped by Drizzle) becomes 409.3 with fields and values', () => {
    const pg = { code: '23505', detail: 'Key (lower(email))=(x@y.org) already exists.', table_name: 'users' };
    const p = problemFromDbError({ message: 'Failed query', cause: pg });
    expect(p).toBeInstanceOf(Problem);
    expect(p!.code).toBe(409.3);
    expect(p!.details).toEqual({ fields: ['email'], values: ['x@y.org'], table: 'users' });
  });

  test('snake_case columns are reported in camelCase, as Central names them', () => {
    const p = problemFromDbError({ code: '23505', detail: 'Key (project_id, xml_form_id)=(1, simple) already exists.', table: 'forms' });
    expect(p!.details).toEqual({ fields: ['projectId', 'xmlFormId'], values: ['1', 'simple'], table: 'forms' });
  });

  test('foreign key → 400.14, not null → 400.2, unrelated errors → null', () => {
    expect(problemFromDbError({ code: '23503', detail: 'Key (role_id)=(99) is not present in table "roles".', table: 'assignments' })!.code).toBe(400.14);
    expect(problemFromDbError({ code: '23502', column: 'name' })!.details).toEqual({ field: 'name' });
    expect(problemFromDbError(new Error('socket hang up'))).toBeNull();
  });
});
