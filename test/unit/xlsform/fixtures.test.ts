/**
 * Issue 7: every XLSForm fixture converts to the XForm pyxform 4.5 produced for it (equivalence as
 * pyxform's own test compares, test/helpers/xform-equivalence.ts), with the same warnings and
 * itemsets.csv; every must-fail sheet fails with pyxform's error; every produced form is accepted by
 * our XForm parser with the same fields as the expected XForm. Fixtures: shared/fixtures/README.md.
 *
 * Two sets, compared differently:
 * - `xlsform/` (7 upstream pyxform pairs, tests/example_xls + tests/test_expected_output): made with
 *   `form_name=<stem>`, so the primary instance root is `<stem>` and every absolute path starts with
 *   `/stem/` (survey_no_name excepted: `data`). We convert the way Central does (no form_name, the
 *   form id from `formIdFallback = stem`), which gives `<data id="stem">` and `/data/…`; so the
 *   EXPECTED text goes through `renameRoot` first: `<stem` / `</stem` (the root's open and close tags,
 *   exactly two) become `<data` / `</data`, and `/stem/` at the start of a path (after a quote, a
 *   space, `(` or `'`: nodeset, ref, itext ids, jr:itext(), output values) becomes `/data/`. Nothing
 *   else changes (the id attribute keeps the stem, as the fallback gives it). These files are
 *   hand-maintained and pretty-printed (`<label>The fruit <output …/>\n pulled from csv</label>`),
 *   so text is compared trimmed, as pyxform's xml_compare does. They carry no warnings or itemsets
 *   expectations, so neither is asserted for them.
 * - `xlsform-generated/{pyxform-examples,authored}/`: our pyxform 4.5.0 conversions run as
 *   pyxform-http runs it (root `data`, id = file stem, pretty_print=False): text is compared exactly;
 *   warnings must equal `<stem>.warnings.txt` (none when the file is absent), itemsets must equal
 *   `<stem>.itemsets.csv` (null when absent); `<stem>.error.txt` means the conversion must throw
 *   XlsFormError whose message is the file's text without `PyXFormError: `.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { convertXlsForm, XlsFormError, type XlsFormResult } from '../../../lib/xlsform';
import { parseForm } from '../../../lib/xforms/parse-form';
import { xformDifferences } from '../../helpers/xform-equivalence';

const SHARED = fileURLToPath(new URL('../../../../shared/', import.meta.url));
const UPSTREAM = join(SHARED, 'fixtures/xlsform');
const GENERATED = ['pyxform-examples', 'authored'].map((d) => join(SHARED, 'fixtures/xlsform-generated', d));
const TEMPLATE = join(SHARED, 'reference/xlsform/odk-xlsform-template.xlsx');

interface Fixture {
  /** `set/stem`, the test name. */
  name: string;
  stem: string;
  sheet: string;
  upstream: boolean;
  /** Expected XForm (already renamed to the `data` root), or null for must-fail sheets. */
  xml: string | null;
  /** Expected error message (no `PyXFormError: ` prefix), or null. */
  error: string | null;
  /** Expected warnings; null when not known (upstream set). */
  warnings: string[] | null;
  /** Expected itemsets.csv text, or null when none is expected (no upstream pair uses select_one_external). */
  itemsets: string | null | undefined;
}

/**
 * Splits a warnings.txt into warnings. One warning a line, except that pyxform warnings may contain
 * newlines (`[row : 2] Row without name, text, or label is being skipped:\n{'_Category': …}`): a
 * line starts a new warning when it begins with `[row : ` or an upper-case letter (every pyxform
 * warning does: "Language …", "The following …", "This form …", "On the …"); any other line (the
 * dict dump `{…}`) continues the previous warning, joined with `\n`. Empty trailing lines are dropped.
 */
function splitWarnings(text: string): string[] {
  const out: string[] = [];
  const lines = text.replace(/\r\n/g, '\n').replace(/\n+$/, '').split('\n');
  for (const line of lines) {
    if (out.length === 0 || line.startsWith('[row : ') || /^[A-Z]/.test(line)) out.push(line);
    else out[out.length - 1] += `\n${line}`;
  }
  return text.trim() === '' ? [] : out;
}

/** The upstream expectation with its `<stem>` root and `/stem/` paths renamed to `data` (see the top). */
function renameRoot(xml: string, stem: string): string {
  if (stem === 'data') return xml;
  const esc = stem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  let tags = 0;
  const renamed = xml
    .replace(new RegExp(`(</?)${esc}(?=[\\s/>])`, 'g'), (_m, open: string) => {
      tags += 1;
      return `${open}data`;
    })
    .replace(new RegExp(`(?<=["' (,])/${esc}/`, 'g'), '/data/');
  if (tags !== 2) throw new Error(`renameRoot(${stem}): expected the root's 2 tags, renamed ${tags}`);
  if (new RegExp(`/${esc}/`).test(renamed)) throw new Error(`renameRoot(${stem}): a /${stem}/ path was left`);
  return renamed;
}

const sheetsIn = (dir: string) => readdirSync(dir).filter((f) => /\.xlsx?$/.test(f)).sort();
const readIf = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : null);

function upstreamFixtures(): Fixture[] {
  return sheetsIn(UPSTREAM).map((sheet) => {
    const stem = basename(sheet, extname(sheet));
    const raw = readFileSync(join(UPSTREAM, `${stem}.xml`), 'utf8');
    const root = /<instance>\s*<([\w.-]+)[\s>]/.exec(raw)?.[1];
    if (!root) throw new Error(`${stem}.xml: no primary instance root`);
    return {
      name: `xlsform/${stem}`, stem, sheet: join(UPSTREAM, sheet), upstream: true,
      xml: root === 'data' ? raw : renameRoot(raw, stem),
      error: null, warnings: null, itemsets: null,
    };
  });
}

function generatedFixtures(dir: string): Fixture[] {
  const set = basename(dir);
  return sheetsIn(dir).map((sheet) => {
    const stem = basename(sheet, extname(sheet));
    const at = (suffix: string) => join(dir, `${stem}${suffix}`);
    const xml = readIf(at('.xml'));
    const errorText = readIf(at('.error.txt'));
    if ((xml === null) === (errorText === null)) throw new Error(`${set}/${stem}: expected exactly one of .xml and .error.txt`);
    const warningsText = readIf(at('.warnings.txt'));
    return {
      name: `${set}/${stem}`, stem, sheet: join(dir, sheet), upstream: false, xml,
      error: errorText === null ? null : errorText.trim().replace(/^PyXFormError: /, ''),
      warnings: warningsText === null ? [] : splitWarnings(warningsText),
      itemsets: readIf(at('.itemsets.csv')),
    };
  });
}

const ALL = [...upstreamFixtures(), ...GENERATED.flatMap(generatedFixtures)];
const converting = ALL.filter((f) => f.xml !== null);
const failing = ALL.filter((f) => f.error !== null);

/** One conversion per fixture, shared by its test cases. */
const results = new Map<string, XlsFormResult>();
function convert(f: Fixture): XlsFormResult {
  let r = results.get(f.name);
  if (!r) {
    r = convertXlsForm(new Uint8Array(readFileSync(f.sheet)), { formIdFallback: f.stem });
    results.set(f.name, r);
  }
  return r;
}

/** The differences, cut to the first 40 so a failure stays readable. */
const firstDifferences = (diffs: string[]) => (diffs.length > 40 ? [...diffs.slice(0, 40), `… and ${diffs.length - 40} more differences`] : diffs);

/** What parseForm reads that must not depend on how the XForm was written (hashes do). */
const parsedShape = (xml: string) => {
  const { hash: _h, sha: _s, sha256: _s2, ...rest } = parseForm(xml);
  return rest;
};

/** Line endings of a CSV made comparable only at the very end (a final line terminator or not). */
const csvText = (s: string) => s.replace(/(\r?\n)+$/, '');

describe('fixture inventory', () => {
  test('finds every fixture set (7 upstream pairs, 21 + 10 generated conversions, 4 + 4 must-fail)', () => {
    expect(ALL.filter((f) => f.upstream)).toHaveLength(7);
    expect(converting.filter((f) => !f.upstream)).toHaveLength(31);
    expect(failing).toHaveLength(8);
  });

  test('the warnings split keeps multi-line warnings whole', () => {
    expect(splitWarnings("[row : 2] Row without name, text, or label is being skipped:\n{'_Category': 'x'}\nThe following language declarations do not contain valid machine-readable codes: English.\n"))
      .toEqual(["[row : 2] Row without name, text, or label is being skipped:\n{'_Category': 'x'}", 'The following language declarations do not contain valid machine-readable codes: English.']);
  });

  test('the renamed upstream expectations are equivalent to themselves and use the data root', () => {
    for (const f of ALL.filter((x) => x.upstream)) {
      expect(xformDifferences(f.xml!, f.xml!, { text: 'trim' }), f.name).toEqual([]);
      expect(parseForm(f.xml!).fields.length, f.name).toBeGreaterThan(0);
      expect(f.xml, f.name).toMatch(/<instance>\s*<data[\s>]/);
    }
  });
});

describe.each(converting)('$name', (f) => {
  test('converts to the expected XForm', () => {
    const { xml } = convert(f);
    expect(firstDifferences(xformDifferences(f.xml!, xml, { text: f.upstream ? 'trim' : 'exact' }))).toEqual([]);
  });

  // pyxform's upstream pairs record no warnings; ours (xlsform-generated) do.
  if (!f.upstream) {
    test('gives pyxform\'s warnings', () => {
      expect(convert(f).warnings).toEqual(f.warnings);
    });
  }

  test('gives pyxform\'s itemsets.csv (or none)', () => {
    const { itemsets } = convert(f);
    if (f.itemsets === null) expect(itemsets).toBeNull();
    else expect(itemsets === null ? null : csvText(itemsets)).toEqual(csvText(f.itemsets!));
  });

  test('parseForm accepts it, with the fields of the expected XForm', () => {
    const { xml } = convert(f);
    const actual = parsedShape(xml);
    expect(actual).toEqual(parsedShape(f.xml!));
    expect(actual.xmlFormId).not.toBe('');
  });
});

describe.each(failing)('$name (must fail)', (f) => {
  test('throws XlsFormError with pyxform\'s message', () => {
    let caught: unknown;
    try {
      convertXlsForm(new Uint8Array(readFileSync(f.sheet)), { formIdFallback: f.stem });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(XlsFormError);
    expect((caught as XlsFormError).message).toBe(f.error);
  });
});

describe('ODK XLSForm template (shared/reference/xlsform)', () => {
  test('converts, and parseForm accepts it', () => {
    const result = convertXlsForm(new Uint8Array(readFileSync(TEMPLATE)), { formIdFallback: 'odk-xlsform-template' });
    expect(Array.isArray(result.warnings)).toBe(true);
    const parsed = parseForm(result.xml);
    expect(parsed.xmlFormId).toBe('odk-xlsform-template'); // its settings sheet names no form_id
    expect(parsed.version).toBe('20241205120839');
    expect(parsed.hasMeta).toBe(true);
    expect(parsed.fields.length).toBeGreaterThan(0);
  });
});
