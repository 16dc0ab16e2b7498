/**
 * Issue 7: XLSForm features the fixture pairs (fixtures.test.ts) do not cover, one focused
 * spreadsheet each, built in memory with SheetJS and converted with convertXlsForm. Each produced
 * XForm is read with a small saxes DOM (test/helpers/xlsform-sheets.ts) and checked for the
 * elements and attributes the ODK XForms spec and pyxform 4.5 define (shapes and expression texts
 * as pyxform's own tests state them: tests/test_randomize_itemsets.py, test_repeat_count.py,
 * test_repeat.py, test_last_saved.py, entities/test_update_survey.py, pyxform/errors.py), and is
 * accepted by our XForm parser (parseForm). Error messages are pyxform's words (no
 * `PyXFormError: ` prefix), with the sheet row (`[row : N]`, the header being row 1).
 */
import { describe, expect, test } from 'vitest';
import { convertXlsForm, XlsFormError, type XlsFormResult } from '../../../lib/xlsform';
import { parseForm } from '../../../lib/xforms/parse-form';
import type { ParsedForm } from '../../../lib/xforms/types';
import {
  attr,
  childrenNamed,
  descendants,
  find,
  findAll,
  is,
  parseXml,
  textContent,
  workbook,
  type Rows,
  type Sheets,
  type XEl,
} from '../../helpers/xlsform-sheets';

interface Form extends XlsFormResult {
  doc: XEl;
  model: XEl;
  body: XEl;
  /** The primary instance's root element (`<data id=…>`). */
  data: XEl;
  parsed: ParsedForm;
}

/** Converts the sheets (form id fallback `feat`) and parses the XForm both ways; throws on either failure. */
function convert(sheets: Sheets, bookType: 'xlsx' | 'xls' = 'xlsx'): Form {
  const result = convertXlsForm(workbook(sheets, bookType), { formIdFallback: 'feat' });
  const doc = parseXml(result.xml);
  const parsed = parseForm(new TextEncoder().encode(result.xml));
  const model = find(doc, 'model');
  const body = find(doc, 'h:body');
  const primary = model && childrenNamed(model, 'instance').find((i) => attr(i, 'id') === undefined);
  const data = primary?.children[0];
  if (!model || !body || !data) throw new Error(`not an XForm: ${result.xml.slice(0, 300)}`);
  return { ...result, doc, model, body, data, parsed };
}

/** The XlsFormError the conversion throws (fails the test when it converts or throws anything else). */
function conversionError(sheets: Sheets): XlsFormError {
  try {
    convertXlsForm(workbook(sheets), { formIdFallback: 'feat' });
  } catch (e) {
    if (e instanceof XlsFormError) return e;
    throw e;
  }
  throw new Error('the conversion succeeded; an XlsFormError was expected');
}

const must = <T>(v: T | undefined, what: string): T => {
  if (v === undefined) throw new Error(`missing: ${what}`);
  return v;
};

/** The model's `<bind nodeset=…>`. */
const bind = (f: Form, nodeset: string) => must(find(f.model, 'bind', { nodeset }), `<bind nodeset="${nodeset}">`);
const hasBind = (f: Form, nodeset: string) => find(f.model, 'bind', { nodeset }) !== undefined;
/** The body element whose `ref` is `ref`. */
const control = (f: Form, ref: string) => must(descendants(f.body).find((e) => attr(e, 'ref') === ref), `control ref="${ref}"`);
/** A secondary instance `<instance id=…>` of the model. */
const instance = (f: Form, id: string) => childrenNamed(f.model, 'instance').find((i) => attr(i, 'id') === id);
/** The primary instance element at a slash path below the root (first match at each step). */
function node(f: Form, path: string): XEl | undefined {
  let at: XEl | undefined = f.data;
  for (const step of path.split('/')) at = at?.children.find((c) => c.local === step);
  return at;
}
const childNames = (el: XEl) => el.children.map((c) => c.local);
/** The `<itemset>` of a select-like control. */
const itemset = (f: Form, ref: string) => must(childrenNamed(control(f, ref), 'itemset')[0], `itemset of ${ref}`);
/** `[value ref, label ref]` of an itemset. */
const itemsetRefs = (set: XEl) => [attr(must(childrenNamed(set, 'value')[0], 'value'), 'ref'), attr(must(childrenNamed(set, 'label')[0], 'label'), 'ref')];
/** The `<item>`s of a secondary instance as objects (child name → text). */
const items = (inst: XEl) => findAll(inst, 'item').map((it) => Object.fromEntries(it.children.map((c) => [c.local, c.text])));
/** The itext values of text `id` in translation `lang` (form → text, '' for the plain value). */
function itext(f: Form, id: string, lang = 'default'): Record<string, string> {
  const tr = must(findAll(f.model, 'translation').find((t) => attr(t, 'lang') === lang), `translation ${lang}`);
  const text = must(childrenNamed(tr, 'text').find((t) => attr(t, 'id') === id), `itext ${id}`);
  return Object.fromEntries(childrenNamed(text, 'value').map((v) => [attr(v, 'form') ?? '', v.text]));
}
const attachmentNames = (f: Form) => f.parsed.attachments.map((a) => a.name);
/** Model-level `<setvalue>`s (not those in the body). */
const modelSetvalues = (f: Form) => childrenNamed(f.model, 'setvalue');

const S = ['type', 'name', 'label'];
const CHOICES = ['list_name', 'name', 'label'];
const toppings: Rows = [CHOICES, ['toppings', 'cheese', 'Cheese'], ['toppings', 'ham', 'Ham']];

describe('workbook formats', () => {
  test('.xls (BIFF8) converts to the same XForm as the same sheets in .xlsx', () => {
    const sheets: Sheets = {
      survey: [S, ['text', 'name', 'Name'], ['select_one toppings', 'top', 'Topping'], ['integer', 'age', 'Age']],
      choices: toppings,
      settings: [['form_title', 'form_id'], ['Legacy workbook', 'legacy']],
    };
    const xls = convert(sheets, 'xls');
    const xlsx = convert(sheets, 'xlsx');
    expect(xls.xml).toBe(xlsx.xml);
    expect(attr(xls.data, 'id')).toBe('legacy');
    expect(textContent(must(find(xls.doc, 'h:title'), 'title'))).toBe('Legacy workbook');
    expect(childNames(xls.data)).toEqual(['name', 'top', 'age', 'meta']);
    expect(attr(bind(xls, '/data/age'), 'type')).toBe('int');
  });
});

describe('question types', () => {
  test('rank: <odk:rank> with an itemset, bind type odk:rank', () => {
    const f = convert({ survey: [S, ['rank toppings', 'r', 'Order the toppings']], choices: toppings });
    const rank = control(f, '/data/r');
    expect(is(rank, 'odk:rank')).toBe(true);
    expect(textContent(must(childrenNamed(rank, 'label')[0], 'label'))).toBe('Order the toppings');
    expect(attr(itemset(f, '/data/r'), 'nodeset')).toBe("instance('toppings')/root/item");
    expect(itemsetRefs(itemset(f, '/data/r'))).toEqual(['name', 'label']);
    expect(attr(bind(f, '/data/r'), 'type')).toBe('odk:rank');
    expect(items(must(instance(f, 'toppings'), 'toppings instance'))).toEqual([
      { name: 'cheese', label: 'Cheese' },
      { name: 'ham', label: 'Ham' },
    ]);
  });

  test("select_one ${q}: choices are the answers to q in its repeat; rows without one are left out", () => {
    const f = convert({
      survey: [S, ['begin_repeat', 'people', 'People'], ['text', 'pname', 'Name'], ['end_repeat', null, null], ['select_one ${pname}', 'leader', 'Leader']],
    });
    expect(attr(itemset(f, '/data/leader'), 'nodeset')).toBe("/data/people[./pname != '']");
    expect(itemsetRefs(itemset(f, '/data/leader'))).toEqual(['pname', 'pname']);
    expect(attr(bind(f, '/data/leader'), 'type')).toBe('string');
  });

  test("search() appearance: the choices are written inline as <item>s (Collect's search reads them), the CSV is an attachment", () => {
    const f = convert({
      survey: [[...S, 'appearance'], ['select_one toppings', 'pick', 'Pick', "search('toppings_db')"]],
      choices: toppings,
    });
    const select = control(f, '/data/pick');
    expect(childrenNamed(select, 'itemset')).toEqual([]);
    expect(childrenNamed(select, 'item').map((it) => [textContent(must(childrenNamed(it, 'label')[0], 'label')), textContent(must(childrenNamed(it, 'value')[0], 'value'))])).toEqual([
      ['Cheese', 'cheese'],
      ['Ham', 'ham'],
    ]);
    expect(attachmentNames(f)).toContain('toppings_db.csv');
  });

  test('randomize=true wraps the itemset nodeset in randomize(), with a literal or ${} seed', () => {
    const f = convert({
      survey: [
        [...S, 'parameters', 'calculation'],
        ['calculate', 'sd', null, null, 'once(decimal-date-time(now()))'],
        ['select_one toppings', 'a', 'A', 'randomize=true, seed=${sd}', null],
        ['select_multiple toppings', 'b', 'B', 'randomize=true', null],
        ['select_one toppings', 'c', 'C', 'randomize=true seed=42', null],
      ],
      choices: toppings,
    });
    expect(attr(itemset(f, '/data/a'), 'nodeset')).toBe("randomize(instance('toppings')/root/item, /data/sd)");
    expect(attr(itemset(f, '/data/b'), 'nodeset')).toBe("randomize(instance('toppings')/root/item)");
    expect(attr(itemset(f, '/data/c'), 'nodeset')).toBe("randomize(instance('toppings')/root/item, 42)");
    expect(is(control(f, '/data/b'), 'select')).toBe(true);
  });

  test('or_other: an `other` choice and a <name>_other text question relevant on it', () => {
    const f = convert({
      survey: [S, ['select_one colors or_other', 'c', 'Colour']],
      choices: [CHOICES, ['colors', 'red', 'Red'], ['colors', 'blue', 'Blue']],
    });
    expect(items(must(instance(f, 'colors'), 'colors instance')).at(-1)).toEqual({ name: 'other', label: 'Other' });
    expect(childNames(f.data)).toEqual(['c', 'c_other', 'meta']);
    expect(attr(bind(f, '/data/c_other'), 'relevant')).toBe("selected(../c, 'other')");
    expect(textContent(must(childrenNamed(control(f, '/data/c_other'), 'label')[0], 'label'))).toBe('Specify other.');
  });

  test('select_one_from_file / select_multiple_from_file: csv (jr://file-csv), xml and geojson (jr://file) instances', () => {
    const f = convert({
      survey: [
        S,
        ['select_one_from_file fruits.csv', 'fruit', 'Fruit'],
        ['select_multiple_from_file crops.xml', 'crops', 'Crops'],
        ['select_one_from_file sites.geojson', 'site', 'Site'],
      ],
    });
    expect(attr(must(instance(f, 'fruits'), 'fruits'), 'src')).toBe('jr://file-csv/fruits.csv');
    expect(attr(must(instance(f, 'crops'), 'crops'), 'src')).toBe('jr://file/crops.xml');
    expect(attr(must(instance(f, 'sites'), 'sites'), 'src')).toBe('jr://file/sites.geojson');
    for (const id of ['fruits', 'crops', 'sites']) expect(must(instance(f, id), id).children).toEqual([]);
    expect(attr(itemset(f, '/data/fruit'), 'nodeset')).toBe("instance('fruits')/root/item");
    expect(itemsetRefs(itemset(f, '/data/fruit'))).toEqual(['name', 'label']);
    expect(is(control(f, '/data/crops'), 'select')).toBe(true);
    expect(attr(itemset(f, '/data/crops'), 'nodeset')).toBe("instance('crops')/root/item");
    expect(itemsetRefs(itemset(f, '/data/site'))).toEqual(['id', 'title']);
    expect(childNames(f.data)).toEqual(['fruit', 'crops', 'site', 'meta']);
    expect(attachmentNames(f)).toEqual(expect.arrayContaining(['fruits.csv', 'crops.xml', 'sites.geojson']));
  });

  test('select_one_external: <input query=…> and the itemsets CSV, no secondary instance', () => {
    const f = convert({
      survey: [
        [...S, 'choice_filter'],
        ['select_one states', 'state', 'State', null],
        ['select_one_external lgas', 'lga', 'LGA', 'state=${state}'],
        ['select_one_external lgas', 'any_lga', 'Any LGA', null],
      ],
      choices: [CHOICES, ['states', 'kano', 'Kano'], ['states', 'lagos', 'Lagos']],
      external_choices: [[...CHOICES, 'state'], ['lgas', 'ikeja', 'Ikeja', 'lagos'], ['lgas', 'nassarawa', 'Nassarawa', 'kano']],
    });
    const lga = control(f, '/data/lga');
    expect(is(lga, 'input')).toBe(true);
    expect(attr(lga, 'query')).toBe("instance('lgas')/root/item[state= /data/state ]");
    expect(attr(control(f, '/data/any_lga'), 'query')).toBe("instance('lgas')/root/item");
    expect(instance(f, 'lgas')).toBeUndefined();
    expect(attr(bind(f, '/data/lga'), 'type')).toBe('string');
    const lines = must(f.itemsets ?? undefined, 'itemsets').split(/\r?\n/).filter((l) => l !== '');
    expect(lines[0]).toBe('"list_name","name","label","state"');
    expect(lines.slice(1)).toEqual(['"lgas","ikeja","Ikeja","lagos"', '"lgas","nassarawa","Nassarawa","kano"']);
  });

  test('xml-external and csv-external: a src-only secondary instance, no primary-instance node or bind', () => {
    const f = convert({
      survey: [
        [...S, 'calculation'],
        ['xml-external', 'houses', null, null],
        ['csv-external', 'people', null, null],
        ['integer', 'rooms', 'Rooms', null],
        ['calculate', 'n', null, "count(instance('houses')/house[rooms = current()/../rooms ])"],
        ['calculate', 'who', null, "instance('people')/root/item[id=${rooms}]/name"],
      ],
    });
    expect(attr(must(instance(f, 'houses'), 'houses'), 'src')).toBe('jr://file/houses.xml');
    expect(attr(must(instance(f, 'people'), 'people'), 'src')).toBe('jr://file-csv/people.csv');
    expect(childNames(f.data)).toEqual(['rooms', 'n', 'who', 'meta']);
    expect(hasBind(f, '/data/houses') || hasBind(f, '/data/people')).toBe(false);
    expect(attr(bind(f, '/data/n'), 'calculate')).toBe("count(instance('houses')/house[rooms = current()/../rooms ])");
    expect(attr(bind(f, '/data/who'), 'calculate')).toBe("instance('people')/root/item[id= /data/rooms ]/name");
    expect(attachmentNames(f)).toEqual(expect.arrayContaining(['houses.xml', 'people.csv']));
  });

  test('pulldata() adds a jr://file-csv secondary instance for its file', () => {
    const f = convert({
      survey: [[...S, 'calculation'], ['text', 'k', 'Key', null], ['calculate', 'fruit', null, "pulldata('fruits', 'name', 'name_key', ${k})"]],
    });
    expect(attr(must(instance(f, 'fruits'), 'fruits instance'), 'src')).toBe('jr://file-csv/fruits.csv');
    expect(attr(bind(f, '/data/fruit'), 'calculate')).toBe("pulldata('fruits', 'name', 'name_key',  /data/k )");
    expect(attachmentNames(f)).toContain('fruits.csv');
  });

  test('metadata types: start/end/today/deviceid/phonenumber/username/email preloads, audit in meta, start-geopoint, background-audio', () => {
    const meta = ['start', 'end', 'today', 'deviceid', 'phonenumber', 'username', 'email'];
    const f = convert({
      survey: [
        S,
        ...meta.map((t) => [t, t, null]),
        ['audit', 'audit', null],
        ['start-geopoint', 'loc', null],
        ['background-audio', 'bg', null],
        ['text', 'q', 'Q'],
      ],
    });
    const preload = (n: string) => {
      const b = bind(f, `/data/${n}`);
      return [attr(b, 'jr:preload'), attr(b, 'jr:preloadParams'), attr(b, 'type')];
    };
    expect(preload('start')).toEqual(['timestamp', 'start', 'dateTime']);
    expect(preload('end')).toEqual(['timestamp', 'end', 'dateTime']);
    expect(preload('today')).toEqual(['date', 'today', 'date']);
    for (const p of ['deviceid', 'phonenumber', 'username', 'email']) expect(preload(p)).toEqual(['property', p, 'string']);
    // audit moves into meta, before instanceID; the others stay where declared.
    expect(childNames(f.data)).toEqual([...meta, 'loc', 'bg', 'q', 'meta']);
    expect(childNames(must(node(f, 'meta'), 'meta'))).toEqual(['audit', 'instanceID']);
    expect(attr(bind(f, '/data/meta/audit'), 'type')).toBe('binary');
    expect(attr(bind(f, '/data/loc'), 'type')).toBe('geopoint');
    const setgeo = childrenNamed(f.model, 'odk:setgeopoint');
    expect(setgeo.map((s) => [attr(s, 'ref'), attr(s, 'event')])).toEqual([['/data/loc', 'odk-instance-first-load']]);
    expect(attr(bind(f, '/data/bg'), 'type')).toBe('binary');
    const rec = childrenNamed(f.model, 'odk:recordaudio');
    expect(rec.map((s) => [attr(s, 'ref'), attr(s, 'event')])).toEqual([['/data/bg', 'odk-instance-load']]);
    // Only the text question has a control.
    expect(f.body.children.map((c) => attr(c, 'ref'))).toEqual(['/data/q']);
  });
});

describe('references', () => {
  test('${last-saved#q}: instance(\'__last-saved\')/data/q and the jr://instance/last-saved instance', () => {
    const f = convert({
      survey: [[...S, 'calculation'], ['text', 'foo', 'Foo', null], ['calculate', 'last_foo', null, 'concat("Foo: ", ${last-saved#foo})']],
    });
    const ls = must(instance(f, '__last-saved'), '__last-saved instance');
    expect(attr(ls, 'src')).toBe('jr://instance/last-saved');
    expect(ls.children).toEqual([]);
    expect(attr(bind(f, '/data/last_foo'), 'calculate')).toBe('concat("Foo: ",  instance(\'__last-saved\')/data/foo )');
  });

  test('indexed-repeat(${q}, ${rep}, 1) keeps absolute paths, inside and outside the repeat', () => {
    const f = convert({
      survey: [
        [...S, 'calculation'],
        ['begin repeat', 'rep', 'Rep', null],
        ['begin repeat', 'rep2', 'Rep2', null],
        ['text', 'a', 'A', null],
        ['end repeat', null, null, null],
        ['calculate', 'c1', null, 'indexed-repeat(${a}, ${rep2}, 1)'],
        ['end repeat', null, null, null],
        ['calculate', 'c2', null, 'indexed-repeat(${a}, ${rep2}, 1)'],
      ],
    });
    expect(attr(bind(f, '/data/rep/c1'), 'calculate')).toBe('indexed-repeat( /data/rep/rep2/a ,  /data/rep/rep2 , 1)');
    expect(attr(bind(f, '/data/c2'), 'calculate')).toBe('indexed-repeat( /data/rep/rep2/a ,  /data/rep/rep2 , 1)');
  });

  test('${} inside a repeat to a node of the same repeat is relative (../), from outside it is absolute', () => {
    const f = convert({
      survey: [
        [...S, 'calculation', 'relevant'],
        ['begin repeat', 'rep', 'Rep', null, null],
        ['integer', 'a', 'A', null, null],
        ['calculate', 'b', null, '${a} + 1', null],
        ['begin group', 'g', 'G', null, null],
        ['text', 'c', 'Value ${a}', null, '${a} > 0'],
        ['end group', null, null, null, null],
        ['end repeat', null, null, null, null],
        ['calculate', 'total', null, 'sum(${a})', null],
      ],
    });
    expect(attr(bind(f, '/data/rep/b'), 'calculate')).toBe(' ../a  + 1');
    expect(attr(bind(f, '/data/rep/g/c'), 'relevant')).toBe(' ../../a  > 0');
    const label = must(childrenNamed(control(f, '/data/rep/g/c'), 'label')[0], 'label of c');
    expect(findAll(label, 'output').map((o) => attr(o, 'value'))).toEqual([' ../../a ']);
    expect(attr(bind(f, '/data/total'), 'calculate')).toBe('sum( /data/rep/a )');
  });

  test('choice_filter inside a repeat: current()/../x for a sibling, absolute for a node outside', () => {
    const f = convert({
      survey: [
        [...S, 'choice_filter'],
        ['text', 'top', 'Top', null],
        ['begin repeat', 'rep', 'Rep', null],
        ['text', 'x', 'X', null],
        ['select_one l', 'y', 'Y', 'cf=${x}'],
        ['select_one l', 'z', 'Z', 'cf=${top}'],
        ['end repeat', null, null, null],
      ],
      choices: [[...CHOICES, 'cf'], ['l', 'a', 'A', 1], ['l', 'b', 'B', 2]],
    });
    expect(attr(itemset(f, '/data/rep/y'), 'nodeset')).toBe("instance('l')/root/item[cf= current()/../x ]");
    expect(attr(itemset(f, '/data/rep/z'), 'nodeset')).toBe("instance('l')/root/item[cf= /data/top ]");
    expect(items(must(instance(f, 'l'), 'l instance'))).toEqual([
      { name: 'a', label: 'A', cf: '1' },
      { name: 'b', label: 'B', cf: '2' },
    ]);
  });
});

describe('groups and repeats', () => {
  test('nested repeats: jr:template copies nest, body group/repeat pairs nest', () => {
    const f = convert({
      survey: [
        S,
        ['begin repeat', 'outer', 'Outer'],
        ['text', 'x', 'X'],
        ['begin repeat', 'inner', 'Inner'],
        ['text', 'y', 'Y'],
        ['end repeat', null, null],
        ['end repeat', null, null],
      ],
    });
    // pyxform (section.py generate_repeating_template / xml_instance): the outer template holds
    // only the inner template; the outer instance copy holds one plain inner copy.
    const copies = (el: XEl, name: string) => el.children.filter((c) => c.local === name).map((c) => [attr(c, 'jr:template'), childNames(c)]);
    expect(copies(f.data, 'outer')).toEqual([
      ['', ['x', 'inner']],
      [undefined, ['x', 'inner']],
    ]);
    const [outerTemplate, outerCopy] = f.data.children.filter((c) => c.local === 'outer') as [XEl, XEl];
    expect(copies(outerTemplate, 'inner')).toEqual([['', ['y']]]);
    expect(copies(outerCopy, 'inner')).toEqual([[undefined, ['y']]]);
    const og = control(f, '/data/outer');
    expect(is(og, 'group')).toBe(true);
    expect(textContent(must(childrenNamed(og, 'label')[0], 'outer label'))).toBe('Outer');
    const orep = must(childrenNamed(og, 'repeat')[0], 'outer repeat');
    expect(attr(orep, 'nodeset')).toBe('/data/outer');
    const ig = must(childrenNamed(orep, 'group').find((g) => attr(g, 'ref') === '/data/outer/inner'), 'inner group');
    const irep = must(childrenNamed(ig, 'repeat')[0], 'inner repeat');
    expect(attr(irep, 'nodeset')).toBe('/data/outer/inner');
    expect(childrenNamed(irep, 'input').map((i) => attr(i, 'ref'))).toEqual(['/data/outer/inner/y']);
    expect(attr(bind(f, '/data/outer/inner/y'), 'type')).toBe('string');
    const types = Object.fromEntries(f.parsed.fields.map((x) => [x.path, x.type]));
    expect(types).toMatchObject({ '/outer': 'repeat', '/outer/x': 'string', '/outer/inner': 'repeat', '/outer/inner/y': 'string' });
  });

  test('repeat_count: a number gets a generated <repeat>_count calculate, ${n} is referenced directly', () => {
    const f = convert({
      survey: [
        [...S, 'repeat_count'],
        ['integer', 'n', 'N', null],
        ['begin repeat', 'fixed', 'Fixed', 3],
        ['text', 'a', 'A', null],
        ['end repeat', null, null, null],
        ['begin repeat', 'dyn', 'Dyn', '${n}'],
        ['text', 'b', 'B', null],
        ['end repeat', null, null, null],
      ],
    });
    expect(node(f, 'fixed_count')).toBeDefined();
    const count = bind(f, '/data/fixed_count');
    expect([attr(count, 'calculate'), attr(count, 'readonly'), attr(count, 'type')]).toEqual(['3', 'true()', 'string']);
    expect(attr(must(find(f.body, 'repeat', { nodeset: '/data/fixed' }), 'fixed repeat'), 'jr:count')).toBe(' /data/fixed_count ');
    expect(attr(must(find(f.body, 'repeat', { nodeset: '/data/dyn' }), 'dyn repeat'), 'jr:count')).toBe(' /data/n ');
    expect(node(f, 'dyn_count')).toBeUndefined();
    expect(hasBind(f, '/data/dyn_count')).toBe(false);
  });

  test('field-list group and appearance on controls', () => {
    const f = convert({
      survey: [
        [...S, 'appearance'],
        ['begin group', 'g', 'Page', 'field-list'],
        ['text', 'a', 'A', 'multiline'],
        ['select_one toppings', 'b', 'B', 'minimal'],
        ['end group', null, null, null],
      ],
      choices: toppings,
    });
    const g = control(f, '/data/g');
    expect(is(g, 'group')).toBe(true);
    expect(attr(g, 'appearance')).toBe('field-list');
    expect(textContent(must(childrenNamed(g, 'label')[0], 'group label'))).toBe('Page');
    expect(g.children.filter((c) => !is(c, 'label')).map((c) => attr(c, 'ref'))).toEqual(['/data/g/a', '/data/g/b']);
    expect(attr(control(f, '/data/g/a'), 'appearance')).toBe('multiline');
    expect(attr(control(f, '/data/g/b'), 'appearance')).toBe('minimal');
    expect(childNames(must(node(f, 'g'), 'g'))).toEqual(['a', 'b']);
  });
});

describe('columns', () => {
  test('default: static values go in the instance, today() becomes an odk-instance-first-load setvalue', () => {
    const f = convert({
      survey: [[...S, 'default'], ['integer', 'n', 'N', 5], ['text', 't', 'T', 'abc'], ['date', 'd', 'D', 'today()']],
    });
    expect(must(node(f, 'n'), 'n').text).toBe('5');
    expect(must(node(f, 't'), 't').text).toBe('abc');
    expect(must(node(f, 'd'), 'd').text).toBe('');
    expect(modelSetvalues(f).map((s) => [attr(s, 'ref'), attr(s, 'event'), attr(s, 'value')])).toEqual([['/data/d', 'odk-instance-first-load', 'today()']]);
    expect(attr(bind(f, '/data/d'), 'calculate')).toBeUndefined();
  });

  test('trigger: an xforms-value-changed setvalue inside the source control, no calculate', () => {
    const f = convert({
      survey: [[...S, 'calculation', 'trigger'], ['integer', 'temp', 'Temp', null, null], ['dateTime', 'ts', null, 'now()', '${temp}']],
    });
    const sv = childrenNamed(control(f, '/data/temp'), 'setvalue');
    expect(sv.map((s) => [attr(s, 'ref'), attr(s, 'event'), attr(s, 'value')])).toEqual([['/data/ts', 'xforms-value-changed', 'now()']]);
    expect(attr(bind(f, '/data/ts'), 'calculate')).toBeUndefined();
    expect(attr(bind(f, '/data/ts'), 'type')).toBe('dateTime');
    expect(f.body.children.map((c) => attr(c, 'ref'))).toEqual(['/data/temp']);
  });

  test('calculation on a typed question with no label or hint: a bind only, no control', () => {
    const f = convert({ survey: [[...S, 'calculation'], ['date', 'day', null, 'today()'], ['text', 'q', 'Q', null]] });
    expect([attr(bind(f, '/data/day'), 'type'), attr(bind(f, '/data/day'), 'calculate')]).toEqual(['date', 'today()']);
    expect(f.body.children.map((c) => attr(c, 'ref'))).toEqual(['/data/q']);
  });

  test('read_only, required with required_message, constraint with constraint_message', () => {
    const f = convert({
      survey: [
        [...S, 'read_only', 'required', 'required_message', 'constraint', 'constraint_message'],
        ['integer', 'age', 'Age', null, 'yes', 'Age is required', '. >= 0 and . <= 120', 'Age must be 0-120'],
        ['text', 'ro', 'Read only', 'yes', null, null, null, null],
      ],
    });
    const age = bind(f, '/data/age');
    expect(attr(age, 'required')).toBe('true()');
    expect(attr(age, 'jr:requiredMsg')).toBe('Age is required');
    expect(attr(age, 'constraint')).toBe('. >= 0 and . <= 120');
    expect(attr(age, 'jr:constraintMsg')).toBe('Age must be 0-120');
    expect(attr(age, 'readonly')).toBeUndefined();
    expect(attr(bind(f, '/data/ro'), 'readonly')).toBe('true()');
    expect(attr(bind(f, '/data/ro'), 'required')).toBeUndefined();
  });

  test('hint is inline text; guidance_hint goes through itext (form="guidance")', () => {
    const f = convert({
      survey: [
        [...S, 'hint', 'guidance_hint'],
        ['text', 'a', 'A', 'Plain hint', null],
        ['text', 'b', 'B', 'Visible hint', 'Only for training'],
        ['text', 'c', 'C', null, 'Guidance only'],
      ],
    });
    const hintOf = (ref: string) => must(childrenNamed(control(f, ref), 'hint')[0], `hint of ${ref}`);
    expect(textContent(hintOf('/data/a'))).toBe('Plain hint');
    expect(attr(hintOf('/data/a'), 'ref')).toBeUndefined();
    expect(attr(hintOf('/data/b'), 'ref')).toBe("jr:itext('/data/b:hint')");
    expect(itext(f, '/data/b:hint')).toEqual({ '': 'Visible hint', guidance: 'Only for training' });
    expect(attr(hintOf('/data/c'), 'ref')).toBe("jr:itext('/data/c:hint')");
    expect(itext(f, '/data/c:hint')).toEqual({ guidance: 'Guidance only' });
    const tr = must(find(f.model, 'translation', { lang: 'default' }), 'default translation');
    expect(attr(tr, 'default')).toBe('true()');
    // Labels without media or translations stay inline.
    expect(textContent(must(childrenNamed(control(f, '/data/b'), 'label')[0], 'label'))).toBe('B');
  });

  test('media columns (image, audio, video, big-image) on a question and on choices become itext forms', () => {
    const f = convert({
      survey: [[...S, 'image', 'audio', 'video', 'big-image'], ['select_one animals', 'a', 'Animal', 'q.png', 'q.mp3', 'q.mp4', 'q-big.png']],
      choices: [
        [...CHOICES, 'image', 'audio', 'big-image'],
        ['animals', 'cat', 'Cat', 'cat.png', 'meow.mp3', 'cat-big.png'],
        ['animals', 'dog', 'Dog', 'dog.png', null, null],
      ],
    });
    expect(attr(must(childrenNamed(control(f, '/data/a'), 'label')[0], 'label'), 'ref')).toBe("jr:itext('/data/a:label')");
    expect(itext(f, '/data/a:label')).toEqual({
      '': 'Animal',
      image: 'jr://images/q.png',
      audio: 'jr://audio/q.mp3',
      video: 'jr://video/q.mp4',
      'big-image': 'jr://images/q-big.png',
    });
    expect(items(must(instance(f, 'animals'), 'animals instance'))).toEqual([
      { itextId: 'animals-0', name: 'cat' },
      { itextId: 'animals-1', name: 'dog' },
    ]);
    expect(itemsetRefs(itemset(f, '/data/a'))).toEqual(['name', 'jr:itext(itextId)']);
    expect(itext(f, 'animals-0')).toEqual({ '': 'Cat', image: 'jr://images/cat.png', audio: 'jr://audio/meow.mp3', 'big-image': 'jr://images/cat-big.png' });
    expect(itext(f, 'animals-1')).toEqual({ '': 'Dog', image: 'jr://images/dog.png' });
    expect(attachmentNames(f)).toEqual(expect.arrayContaining(['q.png', 'q.mp3', 'q.mp4', 'q-big.png', 'cat.png', 'meow.mp3', 'cat-big.png', 'dog.png']));
  });
});

describe('settings', () => {
  test('form_title, form_id, version, instance_name, style, public_key and submission_url', () => {
    const f = convert({
      survey: [S, ['text', 'name', 'Name'], ['integer', 'age', 'Age']],
      settings: [
        ['form_title', 'form_id', 'version', 'instance_name', 'style', 'public_key', 'submission_url'],
        ['Settings form', 'settings_form', 2024010101, "concat(${name}, '-', ${age})", 'pages', 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA', 'https://example.org/submission'],
      ],
    });
    expect(textContent(must(find(f.doc, 'h:title'), 'title'))).toBe('Settings form');
    expect([attr(f.data, 'id'), attr(f.data, 'version')]).toEqual(['settings_form', '2024010101']);
    expect(childNames(must(node(f, 'meta'), 'meta'))).toEqual(['instanceID', 'instanceName']);
    const iname = bind(f, '/data/meta/instanceName');
    expect([attr(iname, 'calculate'), attr(iname, 'type')]).toEqual(["concat( /data/name , '-',  /data/age )", 'string']);
    expect(attr(f.body, 'class')).toBe('pages');
    const subs = childrenNamed(f.model, 'submission');
    expect(subs).toHaveLength(1);
    expect(Object.fromEntries(subs[0]!.attrs)).toEqual({
      action: 'https://example.org/submission',
      base64RsaPublicKey: 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA',
      method: 'post',
    });
    expect(f.parsed).toMatchObject({
      xmlFormId: 'settings_form',
      version: '2024010101',
      name: 'Settings form',
      base64RsaPublicKey: 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA',
      submissionUrl: 'https://example.org/submission',
    });
  });

  test('namespaces adds xmlns:esri to the root, usable in bind:: columns', () => {
    const f = convert({
      survey: [[...S, 'bind::esri:fieldLength'], ['text', 'desc', 'Describe', 50]],
      settings: [['form_title', 'namespaces'], ['NS', 'esri="http://esri.com/xforms"']],
    });
    expect(f.doc.decls.get('esri')).toBe('http://esri.com/xforms');
    expect(attr(bind(f, '/data/desc'), 'esri:fieldLength')).toBe('50');
  });

  test('allow_choice_duplicates: duplicate choice names fail without it and convert with it', () => {
    const sheets: Sheets = {
      survey: [S, ['select_one l', 'q', 'Q']],
      choices: [CHOICES, ['l', 'a', 'A'], ['l', 'a', 'A again'], ['l', 'b', 'B']],
    };
    expect(conversionError(sheets).message).toBe(
      "[row : 3] On the 'choices' sheet, the 'name' value is invalid. Choice names must be unique for each choice list. " +
        "If this is intentional, use the setting 'allow_choice_duplicates'. Learn more: https://xlsform.org/#choice-names.",
    );
    const f = convert({ ...sheets, settings: [['allow_choice_duplicates'], ['yes']] });
    expect(items(must(instance(f, 'l'), 'l instance')).map((i) => i.name)).toEqual(['a', 'a', 'b']);
  });

  test("names: 'meta' is reserved; a repeat's name is unique in the survey and differs from the root's", () => {
    expect(conversionError({ survey: [S, ['text', 'meta', 'M']] }).message).toBe(
      "[row : 2] On the 'survey' sheet, the 'name' value 'meta' is invalid. The name 'meta' is reserved for form metadata.",
    );
    expect(conversionError({ survey: [S, ['begin_repeat', 'data', 'R'], ['text', 'a', 'A'], ['end_repeat', null, null]] }).message).toBe(
      "[row : 2] On the 'survey' sheet, the 'name' value 'data' is invalid. Repeat names must not be the same as the survey root (which defaults to 'data').",
    );
    const twice: Rows = [
      S,
      ['begin_group', 'g1', 'G1'], ['begin_repeat', 'r', 'R'], ['text', 'a', 'A'], ['end_repeat', null, null], ['end_group', null, null],
      ['begin_group', 'g2', 'G2'], ['begin_repeat', 'r', 'R'], ['text', 'b', 'B'], ['end_repeat', null, null], ['end_group', null, null],
    ];
    expect(conversionError({ survey: twice }).message).toBe(
      "[row : 8] On the 'survey' sheet, the 'name' value 'r' is invalid. Repeat names must unique anywhere in the survey, at all levels of group or repeat nesting.",
    );
  });

  test('a missing survey sheet names the sheets that look like misspellings of it', () => {
    expect(conversionError({ surveys: [S, ['text', 'a', 'A']], choices: toppings }).message).toBe(
      "You must have a sheet named 'survey'. When looking for a sheet named 'survey', the following sheets with similar names were found: 'surveys'.",
    );
  });

  test('select_one_from_file: an unsupported file extension, and a value= parameter that is not a name', () => {
    expect(conversionError({ survey: [S, ['select_one_from_file towns.txt', 't', 'Town']] }).message).toBe(
      "[row : 2] File name for 'select_one_from_file towns.txt' should end with one of the supported file extensions: '.xml', '.csv', '.geojson'",
    );
    expect(conversionError({ survey: [[...S, 'parameters'], ['select_one_from_file towns.csv', 't', 'Town', 'value=code*']] }).message).toBe(
      "[row : 2] On the 'survey' sheet, the 'parameters (value)' value is invalid. Names must begin with a letter or underscore. After the first character, names may contain letters, digits, underscores, hyphens, or periods.",
    );
  });

  test('every duplicate choice name is reported at once, one line each, as pyxform does', () => {
    const sheets: Sheets = {
      survey: [S, ['select_one l', 'q', 'Q'], ['select_one m', 'r', 'R']],
      choices: [CHOICES, ['l', 'a', 'A'], ['l', 'a', 'A again'], ['m', 'x', 'X'], ['m', 'x', 'X again']],
    };
    expect(conversionError(sheets).message.split('\n').map((line) => line.slice(0, 12))).toEqual(['[row : 3] On', '[row : 5] On']);
  });

  test('default_language marks its translation default="true()"', () => {
    const f = convert({
      survey: [['type', 'name', 'label::English (en)', 'label::French (fr)'], ['text', 'q', 'Name?', 'Nom ?']],
      settings: [['default_language'], ['French (fr)']],
    });
    const langs = findAll(f.model, 'translation').map((t) => [attr(t, 'lang'), attr(t, 'default')]);
    expect(langs).toEqual(expect.arrayContaining([['French (fr)', 'true()'], ['English (en)', undefined]]));
    expect(langs).toHaveLength(2);
    expect(itext(f, '/data/q:label', 'French (fr)')).toEqual({ '': 'Nom ?' });
    expect(itext(f, '/data/q:label', 'English (en)')).toEqual({ '': 'Name?' });
    expect(attr(must(childrenNamed(control(f, '/data/q'), 'label')[0], 'label'), 'ref')).toBe("jr:itext('/data/q:label')");
  });
});

describe('entities', () => {
  const ENTITIES = 'http://www.opendatakit.org/xforms/entities';

  test('create with create_if and save_to', () => {
    const f = convert({
      survey: [[...S, 'save_to'], ['text', 'name', 'Name', 'full_name'], ['integer', 'age', 'Age', 'age']],
      entities: [['list_name', 'label', 'create_if'], ['people', '${name}', '${age} >= 18']],
    });
    expect(f.doc.decls.get('entities')).toBe(ENTITIES);
    expect(attr(f.model, 'entities:entities-version')).toBe('2024.1.0');
    const entity = must(node(f, 'meta/entity'), 'meta/entity');
    expect(Object.fromEntries(entity.attrs)).toEqual({ dataset: 'people', create: '1', id: '' });
    expect(childNames(entity)).toEqual(['label']);
    const create = bind(f, '/data/meta/entity/@create');
    expect([attr(create, 'calculate'), attr(create, 'readonly'), attr(create, 'type')]).toEqual([' /data/age  >= 18', 'true()', 'string']);
    expect(attr(bind(f, '/data/meta/entity/@id'), 'readonly')).toBe('true()');
    expect(modelSetvalues(f).map((s) => [attr(s, 'ref'), attr(s, 'event'), attr(s, 'value')])).toEqual([
      ['/data/meta/entity/@id', 'odk-instance-first-load', 'uuid()'],
    ]);
    expect(attr(bind(f, '/data/meta/entity/label'), 'calculate')).toBe(' /data/name ');
    expect(attr(bind(f, '/data/name'), 'entities:saveto')).toBe('full_name');
    expect(attr(bind(f, '/data/age'), 'entities:saveto')).toBe('age');
    expect(f.parsed.datasets).toEqual([
      {
        name: 'people',
        entityPath: '/meta/entity',
        actions: ['create'],
        properties: expect.arrayContaining([
          { name: 'full_name', path: '/name' },
          { name: 'age', path: '/age' },
        ]),
      },
    ]);
  });

  test('update with entity_id and update_if: update="1", baseVersion/trunkVersion/branchId binds', () => {
    const f = convert({
      survey: [
        [...S, 'save_to'],
        ['select_one_from_file trees.csv', 'tree', 'Tree', null],
        ['integer', 'circ', 'Circumference', 'circumference_cm'],
        ['select_one yn', 'ok', 'Update?', null],
      ],
      choices: [CHOICES, ['yn', 'yes', 'Yes'], ['yn', 'no', 'No']],
      entities: [['list_name', 'entity_id', 'update_if'], ['trees', '${tree}', "${ok} = 'yes'"]],
    });
    expect(attr(f.model, 'entities:entities-version')).toBe('2024.1.0');
    const entity = must(node(f, 'meta/entity'), 'meta/entity');
    expect(Object.fromEntries(entity.attrs)).toEqual({ dataset: 'trees', update: '1', baseVersion: '', trunkVersion: '', branchId: '', id: '' });
    expect(entity.children).toEqual([]);
    const calc = (n: string) => attr(bind(f, `/data/meta/entity/${n}`), 'calculate');
    expect(calc('@update')).toBe(" /data/ok  = 'yes'");
    expect(attr(bind(f, '/data/meta/entity/@update'), 'readonly')).toBe('true()');
    expect(calc('@id')).toBe(' /data/tree ');
    expect(calc('@baseVersion')).toBe("instance('trees')/root/item[name= /data/tree ]/__version");
    expect(calc('@trunkVersion')).toBe("instance('trees')/root/item[name= /data/tree ]/__trunkVersion");
    expect(calc('@branchId')).toBe("instance('trees')/root/item[name= /data/tree ]/__branchId");
    expect(hasBind(f, '/data/meta/entity/@create')).toBe(false);
    expect(modelSetvalues(f).filter((s) => attr(s, 'ref') === '/data/meta/entity/@id')).toEqual([]);
    expect(attr(bind(f, '/data/circ'), 'entities:saveto')).toBe('circumference_cm');
    expect(f.parsed.datasets).toMatchObject([{ name: 'trees', actions: ['update'], properties: [{ name: 'circumference_cm', path: '/circ' }] }]);
  });

  test('an entity in a repeat: entities-version 2025.1.0, meta/entity inside the repeat, relative label', () => {
    const f = convert({
      survey: [[...S, 'save_to'], ['begin repeat', 'tree', 'Tree', null], ['text', 'species', 'Species', 'species'], ['end repeat', null, null, null]],
      entities: [['list_name', 'label'], ['trees', '${species}']],
    });
    expect(attr(f.model, 'entities:entities-version')).toBe('2025.1.0');
    const entity = must(node(f, 'tree/meta/entity'), 'tree/meta/entity');
    expect(Object.fromEntries(entity.attrs)).toEqual({ dataset: 'trees', create: '1', id: '' });
    expect(childNames(must(node(f, 'meta'), 'meta'))).toEqual(['instanceID']);
    expect(attr(bind(f, '/data/tree/meta/entity/label'), 'calculate')).toBe(' ../../../species ');
    expect(attr(bind(f, '/data/tree/species'), 'entities:saveto')).toBe('species');
    expect(modelSetvalues(f).map((s) => [attr(s, 'ref'), attr(s, 'event'), attr(s, 'value')])).toEqual([
      ['/data/tree/meta/entity/@id', 'odk-instance-first-load', 'uuid()'],
    ]);
    const rep = must(find(f.body, 'repeat', { nodeset: '/data/tree' }), 'tree repeat');
    expect(childrenNamed(rep, 'setvalue').map((s) => [attr(s, 'ref'), attr(s, 'event'), attr(s, 'value')])).toEqual([
      ['/data/tree/meta/entity/@id', 'odk-new-repeat', 'uuid()'],
    ]);
    expect(f.parsed.datasets).toMatchObject([{ name: 'trees', entityPath: '/tree/meta/entity', actions: ['create'] }]);
  });

  test('an entity list name starting with __ fails', () => {
    const e = conversionError({ survey: [S, ['text', 'name', 'Name']], entities: [['list_name', 'label'], ['__trees', '${name}']] });
    expect(e.message).toBe("[row : 2] On the 'entities' sheet, the 'dataset' value is invalid. Names used here must not begin with two underscores.");
  });
});

describe('errors', () => {
  test('an unknown ${name} names the sheet, column, row and name', () => {
    const e = conversionError({ survey: [[...S, 'relevant'], ['text', 'a', 'A', null], ['text', 'b', 'B', '${nope} = 1']] });
    expect(e.message).toBe(
      "[row : 3] On the 'survey' sheet, the 'relevant' value is invalid. Reference variables must contain a name from the 'survey' sheet. Could not find the name 'nope'.",
    );
  });

  test('a ${name} that names two questions (in different groups) fails; the same names unreferenced convert', () => {
    const rows: Rows = [
      S,
      ['begin group', 'g1', 'G1'],
      ['text', 'x', 'X1'],
      ['end group', null, null],
      ['begin group', 'g2', 'G2'],
      ['text', 'x', 'X2'],
      ['end group', null, null],
    ];
    expect(convert({ survey: rows }).parsed.fields.map((x) => x.path)).toEqual(expect.arrayContaining(['/g1/x', '/g2/x']));
    const e = conversionError({ survey: [...rows, ['text', 'y', 'Copy of ${x}']] });
    expect(e.message).toContain("[row : 8] On the 'survey' sheet, the 'label' value is invalid.");
    expect(e.message).toContain("'x'");
    // pyxform 4.5's PYREF_004 (pyxform/errors.py):
    expect(e.message).toBe(
      "[row : 8] On the 'survey' sheet, the 'label' value is invalid. Reference variables names must be unique anywhere in the 'survey'. The name 'x' appears more than once.",
    );
  });

  test('two sibling questions with the same name fail', () => {
    const e = conversionError({ survey: [S, ['text', 'a', 'A'], ['integer', 'a', 'A again']] });
    expect(e.message).toBe(
      "[row : 3] On the 'survey' sheet, the 'name' value 'a' is invalid. Questions, groups, and repeats must be unique within their nearest parent group or repeat, or the survey if not inside a group or repeat.",
    );
  });

  test('an end_group with no begin_group fails', () => {
    const e = conversionError({ survey: [S, ['text', 'a', 'A'], ['end group', null, null]] });
    expect(e.message).toBe("[row : 3] Unmatched 'end_group'. No matching 'begin_group' was found for the name 'unknown'.");
  });

  test('a select list missing from the choices sheet fails, naming the row and list', () => {
    const e = conversionError({ survey: [S, ['select_one nope', 'q', 'Q']], choices: toppings });
    expect(e.message).toMatch(/^\[row : 2\] /);
    expect(e.message).toContain('List name not in choices sheet');
    expect(e.message).toContain('nope');
  });

  test('a row with a name and label but no type fails: Question with no type', () => {
    const e = conversionError({ survey: [S, ['text', 'a', 'A'], [null, 'b', 'B']] });
    expect(e.message.startsWith('[row : 3] Question with no type.')).toBe(true);
  });
});
