import { Problem, problems } from '../problem';

interface PgErrorLike {
  code?: string;
  detail?: string;
  table?: string;
  table_name?: string;
  column?: string;
  column_name?: string;
  constraint?: string;
  constraint_name?: string;
}

/** Drizzle wraps driver errors (DrizzleQueryError.cause); find the PostgreSQL error underneath. */
function findPgError(err: unknown): PgErrorLike | null {
  let e: unknown = err;
  for (let i = 0; i < 5 && e != null && typeof e === 'object'; i += 1) {
    const o = e as PgErrorLike & { cause?: unknown };
    if (typeof o.code === 'string' && /^[0-9A-Z]{5}$/.test(o.code)) return o;
    e = o.cause;
  }
  return null;
}

/** "Key (a, lower(b))=(x, y) already exists." → fields/values as strings, as Central reports them. */
function parseKeyDetail(detail: string | undefined): { fields: string[]; values: string[] } | null {
  const m = /^Key \((.*)\)=\((.*)\) (already exists|is not present)/.exec(detail ?? '');
  if (!m) return null;
  // Our columns are snake_case; Central's (whose names clients see in 409.3 details) are camelCase.
  const camel = (f: string) => f.replace(/_([a-z])/g, (_m, ch: string) => ch.toUpperCase());
  const fields = m[1]!.split(', ').map((f) => camel(f.replace(/^lower\((.*)\)$/, '$1').replace(/"/g, '')));
  const values = m[2]!.split(', ');
  return { fields, values };
}

/**
 * Maps a database error to the Problem Central answers for it, or returns null when it is not one
 * the client caused. 23505 unique → 409.3; 23503 foreign key → 400.14; 23502 not null → 400.2;
 * 22P02 bad input syntax, 22007/22008 bad or out-of-range date → 400.11; 22001 too long → 400.13;
 * 22003 out of range → 400.22; 22021/22P05 a NUL character in text → 400.11 (DESIGN rule 7).
 * @param err anything thrown by a query. Pure: no side effects.
 */
export function problemFromDbError(err: unknown): Problem | null {
  if (err instanceof Problem) return err;
  const pg = findPgError(err);
  if (pg == null) return null;
  const table = pg.table ?? pg.table_name;
  switch (pg.code) {
    case '23505': {
      const kv = parseKeyDetail(pg.detail);
      return problems.user.uniquenessViolation({
        fields: kv?.fields ?? [pg.constraint ?? pg.constraint_name ?? 'unknown'],
        values: kv?.values ?? [],
        ...(table ? { table } : {}),
      });
    }
    case '23503': {
      const kv = parseKeyDetail(pg.detail);
      return problems.user.keyDoesNotExist({
        field: kv?.fields[0] ?? 'unknown',
        value: kv?.values[0] ?? null,
        table: table ?? 'unknown',
      });
    }
    case '23502':
      return problems.user.missingParameter({ field: pg.column ?? pg.column_name ?? 'unknown' });
    case '22P02':
    case '22007': // invalid date/time format
    case '22008': // date/time out of range (a filter on 2020-02-30)
      return new Problem(400.11, 'Invalid input data type.', { value: pg.detail ?? null, expected: 'valid input' });
    case '22001':
      return new Problem(400.13, 'The value provided is too long.', {});
    case '22003': { // numeric value out of range (Central: 400.22)
      const m = /value "([^"]+)" is out of range for type (\w+)/.exec((pg as { message?: string }).message ?? '');
      return problems.user.valueOutOfRangeForType({ value: m?.[1] ?? '', type: m?.[2] ?? 'integer' });
    }
    case '22021': // a NUL character (or invalid byte) in a text value: PostgreSQL stores no such text
    case '22P05':
      return problems.user.invalidDataTypeOfParameter({ value: '\\u0000', expected: 'text without NUL characters' });
    default:
      return null;
  }
}
