import { expect } from 'vitest';
import { Problem } from '../../lib/problem';

/** Expects `fn` to throw a Problem with `code`; returns it (unit tests of pure lib functions). */
export function problemOf(fn: () => unknown, code: number): Problem {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(Problem);
  const p = caught as Problem;
  expect({ code: p.code, message: p.message }).toMatchObject({ code });
  return p;
}
