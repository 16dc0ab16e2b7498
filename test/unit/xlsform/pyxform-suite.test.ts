/**
 * Issue 19: pyxform v4.5.0's own test suite run against lib/xlsform. Each `assertPyxformXform` call
 * of pyxform's test modules is a case in pyxform-suite/cases.json (written by
 * pyxform-suite/extract.py from shared/reference/pyxform-tests); pyxform-suite/run-case.ts builds
 * its workbook, converts it and checks its expectations as pyxform's test base does.
 *
 * pyxform-suite/known-failures.json lists the cases not yet supported, each with a reason. A listed
 * case must still fail (so the list stays true: take it off the list when it starts passing), and an
 * unlisted case must pass. The totals (cases, run, not runnable, passed, failed, per module) are
 * printed and written to pyxform-suite/summary.json.
 *
 * PYXFORM_SUITE_UPDATE=1 rewrites known-failures.json from this run (keeping the reasons already
 * written for cases still failing) instead of failing on a mismatch.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, test } from 'vitest';
import { runCase, type Case } from './pyxform-suite/run-case';

const DIR = new URL('./pyxform-suite/', import.meta.url);
const data = JSON.parse(readFileSync(new URL('cases.json', DIR), 'utf8')) as { cases: Case[] };
const knownFile = new URL('known-failures.json', DIR);
const known = JSON.parse(readFileSync(knownFile, 'utf8')) as Record<string, string>;
const UPDATE = process.env.PYXFORM_SUITE_UPDATE === '1';

interface Result {
  c: Case;
  passed: boolean;
  failures: string[];
}
const results: Result[] = [];
const modules = [...new Set(data.cases.map((c) => c.module))];

for (const mod of modules) {
  describe(mod, () => {
    for (const c of data.cases.filter((x) => x.module === mod)) {
      if (!c.runnable) {
        test.skip(`${c.id}: not runnable (${c.reason})`, () => {});
        continue;
      }
      test(c.id + (c.subtest ? ` [${c.subtest.slice(0, 80)}]` : ''), () => {
        const out = runCase(c);
        const passed = c.expectAssertionFailure ? out.failures.length > 0 : out.failures.length === 0;
        results.push({ c, passed, failures: out.failures });
        if (UPDATE) return;
        if (known[c.id] !== undefined) {
          expect(passed, `${c.id} is listed in known-failures.json (${known[c.id]}) but now passes: take it off the list`).toBe(false);
        } else {
          expect(out.failures, `${c.id} fails; fix the converter or list it in known-failures.json`).toEqual(
            c.expectAssertionFailure ? expect.arrayContaining([expect.any(String)]) : [],
          );
        }
      });
    }
  });
}

afterAll(() => {
  const notRunnable = data.cases.filter((c) => !c.runnable);
  const passed = results.filter((r) => r.passed).length;
  const perModule: Record<string, { cases: number; run: number; passed: number; failed: number; notRunnable: number }> = {};
  for (const c of data.cases) {
    const m = (perModule[c.module] ??= { cases: 0, run: 0, passed: 0, failed: 0, notRunnable: 0 });
    m.cases++;
    if (!c.runnable) m.notRunnable++;
  }
  for (const r of results) {
    const m = perModule[r.c.module]!;
    m.run++;
    if (r.passed) m.passed++;
    else m.failed++;
  }
  const notRunnableReasons: Record<string, number> = {};
  for (const c of notRunnable) {
    const reason = (c.reason ?? '').replace(/ \(<MagicMock.*$/, '');
    notRunnableReasons[reason] = (notRunnableReasons[reason] ?? 0) + 1;
  }
  const failedByReason: Record<string, number> = {};
  for (const r of results.filter((x) => !x.passed)) {
    const reason = (known[r.c.id] ?? 'unlisted').replace(/ \(first failed check:[\s\S]*$/, '');
    failedByReason[reason] = (failedByReason[reason] ?? 0) + 1;
  }
  if (results.length < data.cases.length - notRunnable.length) return; // a filtered run: no summary
  const summary = {
    cases: data.cases.length,
    testMethods: new Set(data.cases.map((c) => `${c.module}::${c.test}`)).size,
    run: results.length,
    notRunnable: notRunnable.length,
    passed,
    failed: results.length - passed,
    passRate: results.length ? Math.round((passed / results.length) * 1000) / 10 : 0,
    notRunnableReasons,
    failedByReason: Object.fromEntries(Object.entries(failedByReason).sort((a, b) => b[1] - a[1])),
    perModule,
  };
  console.log(
    `pyxform suite: ${summary.cases} cases, ${summary.run} run, ${summary.notRunnable} not runnable, ` +
      `${summary.passed} passed, ${summary.failed} failed (${summary.passRate} % of those run)`,
  );
  for (const [mod, m] of Object.entries(perModule)) {
    if (m.failed > 0 || m.notRunnable > 0) console.log(`  ${mod}: ${m.passed}/${m.run} passed${m.notRunnable ? `, ${m.notRunnable} not runnable` : ''}`);
  }
  writeFileSync(new URL('summary.json', DIR), `${JSON.stringify(summary, null, 1)}\n`);
  if (UPDATE) {
    const next: Record<string, string> = {};
    for (const r of results.filter((x) => !x.passed).sort((a, b) => (a.c.id < b.c.id ? -1 : 1))) {
      next[r.c.id] = known[r.c.id] ?? `TODO: ${r.failures[0] ?? 'expected the checks to fail'}`.slice(0, 240);
    }
    writeFileSync(knownFile, `${JSON.stringify(next, null, 1)}\n`);
  }
});
