import type { z } from 'zod';
import { Problem, problems } from './problem';

/**
 * Validates verb input with a Zod schema, turning the first issue into Central's Problem:
 * a missing value → 400.2 `{ field }`; a value of the wrong type → 400.11 `{ field, expected }`;
 * anything else (format, range) → 400.8 `{ field, value, reason }`.
 * @returns the parsed value. @throws Problem 400.x. Pure.
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.map(String).join('.') || 'body';
  const value = issue.path.reduce<unknown>(
    (v, k) => (v != null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k as string] : undefined),
    input,
  );
  if (issue.code === 'invalid_type') {
    if (value === undefined || value === null) return fail(problems.user.missingParameter({ field }));
    return fail(problems.user.invalidDataTypeOfParameter({ field, expected: issue.expected }));
  }
  return fail(problems.user.unexpectedValue({ field, value, reason: issue.message }));
}

function fail(p: Problem): never {
  throw p;
}
