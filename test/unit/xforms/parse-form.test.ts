import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { odataFields, parseForm, sanitizeOdataIdentifier } from '../../../lib/xforms/parse-form';
import type { FormField } from '../../../lib/xforms/types';
import { problemOf } from '../../helpers/problems';

const SHARED = fileURLToPath(new URL('../../../../shared/fixtures/', import.meta.url));
const FORMS = join(SHARED, 'forms');
const OUTPUTS = join(SHARED, 'central-outputs');

const read = (path: string) => readFileSync(path);
const readText = (path: string) => readFileSync(path, 'utf8');
const hex = (algo: string, bytes: Uint8Array) => createHash(algo).update(bytes).digest('hex');

/** Every .xml under forms/, recursively, except media/ folders (secondary-instance data files). */
function allFormFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) {
      if (entry !== 'media') out.push(...allFormFiles(full));
    } else if (entry.endsWith('.xml')) out.push(full);
  }
  return out;
}

/** Fixtures that are submissions, not forms: Central answers 400.2 formId for those. */
const NOT_FORMS = new Set(['central-e2e/soak/250q-submission.template.xml', 'central-e2e/standard/submission.xml']);

/** The fixture form of each central-outputs folder (see central-outputs/README.md). */
const OUTPUT_FORMS: Record<string, string> = {
  'soak-250q': join(FORMS, 'central-e2e/soak/250q-form.xml'),
  deletedFields: join(OUTPUTS, 'deletedFields/inputs/form-v2.xml'),
};
const outputFolders = readdirSync(OUTPUTS).filter((d) => !d.startsWith('_') && statSync(join(OUTPUTS, d)).isDirectory());
const formOf = (folder: string) => OUTPUT_FORMS[folder] ?? join(FORMS, `${folder}.xml`);


const xform = (instance: string, rest = '', body = '', head = '') => `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml">
  <h:head>${head}
    <model>
      <instance>
        ${instance}
      </instance>${rest}
    </model>
  </h:head>
  <h:body>${body}</h:body>
</h:html>`;

describe('every fixture form', () => {
  const files = allFormFiles(FORMS);

  test('the fixture tree is where we expect it', () => {
    expect(files.length).toBeGreaterThan(60);
  });

  for (const file of files) {
    const rel = relative(FORMS, file);
    if (NOT_FORMS.has(rel)) {
      test(`${rel}: a submission, not a form → 400.2 formId`, () => {
        const p = problemOf(() => parseForm(read(file)), 400.2);
        expect(p.details).toEqual({ field: 'formId' });
      });
      continue;
    }
    test(`${rel} parses sensibly`, () => {
      const bytes = read(file);
      const text = bytes.toString('utf8');
      const form = parseForm(bytes);

      // Identity, compared with a crude look at the raw text.
      const rawId = /<instance>\s*<[\w:.-]+[^>]*?\sid="([^"]*)"/.exec(text)?.[1];
      expect(form.xmlFormId).toBe(rawId);
      expect(typeof form.version).toBe('string');
      if (form.version !== '') expect(text).toContain(`version="${form.version}"`);
      if (form.name !== null) expect(text).toMatch(/<(h:)?title>/);
      else expect(text).not.toMatch(/<(h:)?title>[^<]/);

      // Hashes are of the exact bytes; the string form gives the same result.
      expect(form.hash).toBe(hex('md5', bytes));
      expect(form.sha).toBe(hex('sha1', bytes));
      expect(form.sha256).toBe(hex('sha256', bytes));
      expect(parseForm(text)).toEqual(form);

      // Fields: non-empty, unique paths, each below an existing group or repeat, Central key order.
      expect(form.fields.length).toBeGreaterThan(0);
      const byPath = new Map<string, FormField>();
      for (const f of form.fields) {
        expect(Object.keys(f)).toEqual(['path', 'name', 'type', 'binary', 'selectMultiple']);
        expect(f.path).toMatch(/^(\/[^/:]+)+$/);
        expect(f.path.endsWith(`/${f.name}`)).toBe(true);
        expect(byPath.has(f.path)).toBe(false);
        const parent = f.path.slice(0, f.path.lastIndexOf('/'));
        if (parent !== '') expect(['structure', 'repeat']).toContain(byPath.get(parent)?.type);
        expect(f.type).toMatch(/^[\w-]+$/);
        expect(f.binary).toBe(f.type === 'binary' || f.path === '/meta/audit' ? true : null);
        expect([true, null]).toContain(f.selectMultiple);
        byPath.set(f.path, f);
      }
      expect(form.hasMeta).toBe(byPath.get('/meta')?.type === 'structure');

      // Attachments: unique names, known types.
      const names = form.attachments.map((a) => a.name);
      expect(new Set(names).size).toBe(names.length);
      for (const a of form.attachments) {
        expect(['image', 'audio', 'video', 'file']).toContain(a.type);
        expect(a.name).not.toContain('/');
        expect(text.includes(a.name.replace(/\.csv$/, '')) || (a.name === 'itemsets.csv' && text.includes('query='))).toBe(true);
      }

      // Entities only where the form has an entity block.
      expect(form.datasets.length > 0).toBe(/<(\w+:)?entity\s[^>]*dataset=/.test(text));
    });
  }
});

describe("Central's captured /fields output", () => {
  for (const folder of outputFolders) {
    test(`${folder}: fields.json and fields-odata.json, exactly`, () => {
      const form = parseForm(read(formOf(folder)));
      expect(JSON.stringify(form.fields)).toBe(readText(join(OUTPUTS, folder, 'api/fields.json')));
      expect(JSON.stringify(odataFields(form.fields))).toBe(readText(join(OUTPUTS, folder, 'api/fields-odata.json')));
    });

    test(`${folder}: xmlFormId, version, name and hashes as in form.json`, () => {
      const form = parseForm(read(formOf(folder)));
      const central = JSON.parse(readText(join(OUTPUTS, folder, 'api/form.json'))) as Record<string, unknown>;
      expect({ xmlFormId: form.xmlFormId, version: form.version, name: form.name, hash: form.hash, sha: form.sha, sha256: form.sha256 }).toEqual({
        xmlFormId: central.xmlFormId,
        version: central.version,
        name: central.name,
        hash: central.hash,
        sha: central.sha,
        sha256: central.sha256,
      });
    });
  }

  test('deletedFields v1 has the fields v2 removes, and not the one it adds', () => {
    const paths = parseForm(read(join(OUTPUTS, 'deletedFields/inputs/form-v1.xml'))).fields.map((f) => f.path);
    expect(paths).toEqual(expect.arrayContaining(['/age', '/details/colour', '/children/child/age']));
    expect(paths).not.toContain('/hometown');
  });

  test('withAttachments: the expected attachments are the ones Central lists', () => {
    const form = parseForm(read(join(FORMS, 'withAttachments.xml')));
    const central = JSON.parse(readText(join(OUTPUTS, 'withAttachments/api/form-attachments.json'))) as Array<{ name: string; type: string }>;
    expect(form.attachments).toEqual(central.map(({ name, type }) => ({ name, type })));
    // badnoroot.xls (no jr://), jr://files/… (wrong scheme) and jr://file/path/to/… (nested) are not expected.
    expect(form.attachments.map((a) => a.name)).toEqual(['goodone.csv', 'goodtwo.mp3']);
  });
});

describe('odataFields', () => {
  test("sanitises names and every path step like Central's sanitizeOdataIdentifier", () => {
    expect(sanitizeOdataIdentifier('my-field.x')).toBe('my_field_x');
    expect(sanitizeOdataIdentifier('1st')).toBe('_1st');
    expect(sanitizeOdataIdentifier('-a--b')).toBe('__a_b'); // `_` put in front, then the `-` becomes `_` too
    expect(sanitizeOdataIdentifier('_ok_9')).toBe('_ok_9');
    expect(sanitizeOdataIdentifier('état')).toBe('__tat'); // ASCII only, as Central
    expect(sanitizeOdataIdentifier('')).toBe('');
    const fields: FormField[] = [
      { path: '/g-1', name: 'g-1', type: 'structure', binary: null, selectMultiple: null },
      { path: '/g-1/2nd.q', name: '2nd.q', type: 'string', binary: null, selectMultiple: true },
    ];
    expect(odataFields(fields)).toEqual([
      { path: '/g_1', name: 'g_1', type: 'structure', binary: null, selectMultiple: null },
      { path: '/g_1/_2nd_q', name: '_2nd_q', type: 'string', binary: null, selectMultiple: true },
    ]);
    expect(fields[0]?.name).toBe('g-1'); // input untouched
  });

  test('forms with dashes and dots in names', () => {
    const form = parseForm(
      xform('<data id="odata-names"><my-group><q.1/></my-group><meta><instanceID/></meta></data>', '<bind nodeset="/data/my-group/q.1" type="int"/>'),
    );
    expect(form.fields.map((f) => f.path)).toEqual(['/my-group', '/my-group/q.1', '/meta', '/meta/instanceID']);
    expect(odataFields(form.fields).map((f) => [f.path, f.name])).toEqual([
      ['/my_group', 'my_group'],
      ['/my_group/q_1', 'q_1'],
      ['/meta', 'meta'],
      ['/meta/instanceID', 'instanceID'],
    ]);
  });
});

describe('unsafe or broken XML', () => {
  const simple = readText(join(FORMS, 'simple.xml'));

  test('a DOCTYPE is refused with 400.1', () => {
    const xml = simple.replace('<h:html', '<!DOCTYPE html>\n<h:html');
    const p = problemOf(() => parseForm(xml), 400.1);
    expect(p.details).toMatchObject({ format: 'xforms xml', rawLength: xml.length, line: 1, column: 1, reason: 'DOCTYPE declarations are not allowed' });
  });

  test('billion laughs: refused with 400.1, fast, nothing expanded', () => {
    const entities = ['<!ENTITY lol0 "lol">'];
    for (let i = 1; i <= 9; i += 1) entities.push(`<!ENTITY lol${i} "${`&lol${i - 1};`.repeat(10)}">`);
    const xml = `<?xml version="1.0"?>\n<!DOCTYPE lolz [\n${entities.join('\n')}\n]>\n${simple.replace('<h:title>Simple</h:title>', '<h:title>&lol9;</h:title>')}`;
    const started = performance.now();
    const p = problemOf(() => parseForm(xml), 400.1);
    expect(performance.now() - started).toBeLessThan(500);
    expect(p.message).toMatch(/^Could not parse the given data \(\d+ chars\) as xforms xml: DOCTYPE declarations are not allowed \(line 2, column 1\)\.$/);
    expect(JSON.stringify(p)).not.toContain('lollol');
  });

  test('an external entity (XXE) is refused too', () => {
    const xml = `<!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n${simple.replace('Simple</h:title>', '&xxe;</h:title>')}`;
    problemOf(() => parseForm(xml), 400.1);
  });

  test('truncated in the middle of <instance>: 400.1 pointing at the last line', () => {
    const xml = simple.slice(0, simple.indexOf('<instanceID/>') + 5);
    const p = problemOf(() => parseForm(xml), 400.1);
    const lines = xml.split('\n');
    expect(p.details).toEqual({
      format: 'xforms xml',
      rawLength: xml.length,
      line: lines.length,
      column: (lines.at(-1) ?? '').length + 1,
      reason: expect.any(String) as string,
    });
    expect(p.message).toBe(
      `Could not parse the given data (${xml.length} chars) as xforms xml: ${(p.details as { reason: string }).reason} (line ${lines.length}, column ${(lines.at(-1) ?? '').length + 1}).`,
    );
  });

  test('truncated larger forms (withrepeat, the soak form) fail the same way', () => {
    for (const file of [join(FORMS, 'withrepeat.xml'), join(FORMS, 'central-e2e/soak/250q-form.xml')]) {
      const text = readText(file);
      const xml = text.slice(0, Math.floor((text.indexOf('<instance>') + text.indexOf('</instance>')) / 2));
      const p = problemOf(() => parseForm(xml), 400.1);
      expect((p.details as { line: number }).line).toBe(xml.split('\n').length);
    }
  });

  test('mismatched tags: 400.1 on the right line, columns unaffected by escaped bare ampersands', () => {
    const xml = simple.replace('</meta>', '& & </metax>');
    const p = problemOf(() => parseForm(xml), 400.1);
    const lineNo = xml.split('\n').findIndex((l) => l.includes('</metax>')) + 1;
    const line = xml.split('\n')[lineNo - 1] ?? '';
    expect(p.details).toMatchObject({ line: lineNo, column: line.indexOf('</metax>') + '</metax>'.length + 1 });
  });

  test('garbage inside the document: 400.1', () => {
    problemOf(() => parseForm(simple.replace('<name/>', '<name/><<>>')), 400.1);
    problemOf(() => parseForm(simple.replace('<name/>', '<name a="1" a="2"/>')), 400.1);
  });

  test('not XML at all: 400.2 formId, like Central', () => {
    for (const body of ['this is not xml', '{"xmlFormId":"x"}', '', '   \n', 'PK\u0003\u0004\u0000binary']) {
      const p = problemOf(() => parseForm(body), 400.2);
      expect(p.message).toBe('Required parameter formId missing.');
      expect(p.details).toEqual({ field: 'formId' });
    }
    const central = JSON.parse(readText(join(OUTPUTS, '_errors/400.2-form-upload-not-xml.json'))) as { body: string };
    expect(JSON.stringify(problemOf(() => parseForm('not xml'), 400.2))).toBe(central.body);
  });

  test('XML that is not an XForm, or whose primary instance root has no id: 400.2 formId', () => {
    problemOf(() => parseForm('<foo><bar/></foo>'), 400.2);
    problemOf(() => parseForm(simple.replace(' id="simple"', '')), 400.2);
    problemOf(() => parseForm(simple.replace('id="simple"', 'id="  "')), 400.2);
    problemOf(() => parseForm(xform('')), 400.2);
  });

  test('anything after the root element is ignored (Central accepts it)', () => {
    expect(parseForm(`${simple}\n<<garbage & more`).xmlFormId).toBe('simple');
  });
});

describe('lenient where real clients need it', () => {
  test('a bare & is a literal &; the hash is of the original bytes', () => {
    const bytes = read(join(FORMS, 'consumeDatasets.xml'));
    const form = parseForm(bytes);
    expect(form.name).toBe('Consume Datasets: People & Trees');
    expect(form.hash).toBe(hex('md5', bytes));
  });

  test('bare &, undeclared entities, real references and CDATA side by side', () => {
    const form = parseForm(xform('<data id="amp"><q/></data>', '', '', '<h:title>A & B &nbsp; &amp; &#65;&#x42; <![CDATA[& <x>]]></h:title>'));
    expect(form.name).toBe('A & B &nbsp; & AB & <x>');
  });

  test('undeclared orx:, entities:, odk: and h: prefixes are accepted', () => {
    const xml = `<h:html><h:head><h:title>No declarations</h:title>
      <model odk:xforms-version="1.0.0" entities:entities-version="2024.1.0">
        <instance><data id="undeclared" orx:version="3"><name/>
          <orx:meta><orx:instanceID/><entity dataset="people" create="1" id=""><label/></entity></orx:meta></data></instance>
        <bind nodeset="/data/name" type="xsd:string" entities:saveto="full_name"/>
        <bind nodeset="/data/orx:meta/orx:instanceID" type="string" jr:preload="uid"/>
      </model></h:head><h:body><input ref="/data/name"/></h:body></h:html>`;
    const form = parseForm(xml);
    expect(form).toMatchObject({ xmlFormId: 'undeclared', version: '3', name: 'No declarations', hasMeta: true, entitiesVersion: '2024.1.0' });
    expect(form.fields.map((f) => [f.path, f.type])).toEqual([
      ['/name', 'string'],
      ['/meta', 'structure'],
      ['/meta/instanceID', 'string'],
      ['/meta/entity', 'structure'],
      ['/meta/entity/label', 'string'],
    ]);
    expect(form.datasets).toEqual([
      { name: 'people', entityPath: '/meta/entity', actions: ['create'], properties: [{ name: 'full_name', path: '/name' }] },
    ]);
  });

  test('bytes with a UTF-8 BOM parse like the string', () => {
    const simple = read(join(FORMS, 'simple.xml'));
    const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...simple]);
    const form = parseForm(withBom);
    expect(form.fields).toEqual(parseForm(simple).fields);
    expect(form.hash).toBe(hex('md5', withBom));
  });
});

describe('fields: the rules', () => {
  test('types from binds (prefix stripped), structure, repeat, select multiple, binary, relative refs', () => {
    const form = parseForm(
      xform(
        `<data id="rules" version="7">
          <age/><photo/><untyped/>
          <grp><colours/><inner><sm/></inner></grp>
          <people jr:template=""><pname/><toys><toy/></toys></people>
          <people><pname/><toys><toy/></toys></people>
          <meta><instanceID/><audit/></meta>
        </data>`,
        `<bind nodeset="/data/age" type="xsd:int"/>
         <bind nodeset="/data/photo" type="binary"/>
         <bind nodeset="/data/untyped" relevant="true()"/>
         <bind nodeset="/data/grp/colours" type="string"/>
         <bind nodeset="/data/meta/audit" type="string"/>`,
        `<group ref="/data/grp"><select ref="colours"/><group ref="inner"><select ref="./sm"/></group></group>
         <group ref="/data/people"><repeat nodeset="/data/people"><input ref="pname"/>
           <group ref="toys"><repeat nodeset="toy"/></group></repeat></group>`,
      ),
    );
    expect(form.version).toBe('7');
    expect(form.fields).toEqual([
      { path: '/age', name: 'age', type: 'int', binary: null, selectMultiple: null },
      { path: '/photo', name: 'photo', type: 'binary', binary: true, selectMultiple: null },
      { path: '/untyped', name: 'untyped', type: 'string', binary: null, selectMultiple: null },
      { path: '/grp', name: 'grp', type: 'structure', binary: null, selectMultiple: null },
      { path: '/grp/colours', name: 'colours', type: 'string', binary: null, selectMultiple: true },
      { path: '/grp/inner', name: 'inner', type: 'structure', binary: null, selectMultiple: null },
      { path: '/grp/inner/sm', name: 'sm', type: 'string', binary: null, selectMultiple: true },
      { path: '/people', name: 'people', type: 'repeat', binary: null, selectMultiple: null },
      { path: '/people/pname', name: 'pname', type: 'string', binary: null, selectMultiple: null },
      { path: '/people/toys', name: 'toys', type: 'structure', binary: null, selectMultiple: null },
      { path: '/people/toys/toy', name: 'toy', type: 'repeat', binary: null, selectMultiple: null },
      { path: '/meta', name: 'meta', type: 'structure', binary: null, selectMultiple: null },
      { path: '/meta/instanceID', name: 'instanceID', type: 'string', binary: null, selectMultiple: null },
      { path: '/meta/audit', name: 'audit', type: 'string', binary: true, selectMultiple: null },
    ]);
  });

  test('the primary instance is the first without an id; secondary instances are not fields', () => {
    const xml = xform('<data id="primary"><q/></data>', '<instance id="list"><root><item><name>a</name></item></root></instance>');
    const form = parseForm(xml);
    expect(form.xmlFormId).toBe('primary');
    expect(form.fields.map((f) => f.path)).toEqual(['/q']);
    expect(form.hasMeta).toBe(false);
  });

  test('repeated leaves in a hand-written instance are listed once (sms_form.xml)', () => {
    const form = parseForm(read(join(FORMS, 'real-world/javarosa/sms_form.xml')));
    expect(form.fields.filter((f) => f.path.startsWith('/children')).map((f) => [f.path, f.type])).toEqual([
      ['/children', 'repeat'],
      ['/children/child_full_name', 'string'],
      ['/children/child_country', 'string'],
    ]);
  });

  test('select multiples of real forms', () => {
    const sm = (file: string) => parseForm(read(join(FORMS, file))).fields.filter((f) => f.selectMultiple).map((f) => f.path);
    expect(sm('selectMultiple.xml')).toEqual(['/q1', '/g1/q2']);
    expect(sm('real-world/javarosa/three-level-cascading-multi-select.xml')).toHaveLength(6);
  });
});

describe('submission element', () => {
  test('encrypted.xml: the public key', () => {
    const text = readText(join(FORMS, 'encrypted.xml'));
    const key = /base64RsaPublicKey="([^"]+)"/.exec(text)?.[1];
    const form = parseForm(text);
    expect(key).toMatch(/^MIIBIjAN/);
    expect(form.base64RsaPublicKey).toBe(key);
    expect(form.submissionUrl).toBeNull();
  });

  test('action is the submission URL; a form without <submission> has neither', () => {
    const form = parseForm(xform('<data id="s"><q/></data>', '<submission action="https://example.org/submit" method="post" base64RsaPublicKey="KEY"/>'));
    expect(form).toMatchObject({ submissionUrl: 'https://example.org/submit', base64RsaPublicKey: 'KEY' });
    expect(parseForm(read(join(FORMS, 'simple.xml')))).toMatchObject({ submissionUrl: null, base64RsaPublicKey: null });
  });
});

describe('expected attachments', () => {
  test("Central's rules: instance src, itext media, image defaults, itemsets, search(); first-seen order, once", () => {
    const form = parseForm(
      xform(
        '<data id="att"><pic>jr://images/default.png</pic><q/><sel/></data>',
        `<instance id="a" src="jr://file/one.xml"/>
         <instance id="b" src="jr://file-csv/two.csv"/>
         <instance id="c" src="jr://files/nope.csv"/>
         <instance id="d" src="jr://file/dir/nested.csv"/>
         <instance id="e" src="plain.csv"/>
         <itext><translation lang="en">
           <text id="t1"><value>plain</value><value form="image">jr://images/cat.jpg</value>
             <value form="big-image">jr://images/cat-big.jpg</value><value form="audio">jr://audio/meow.mp3</value>
             <value form="video">jr://video/cat.mp4</value><value form="guidance">jr://images/no.png</value></text>
           <text id="t2"><value form="image">jr://images/cat.jpg</value><value form="image">jr://file/logo.png</value></text>
         </translation></itext>`,
        `<input ref="/data/q" query="instance('x')/root/item"/>
         <select1 ref="/data/sel" appearance="minimal search('fruits', 'matches', 'name', /data/q)"/>
         <select ref="/data/sel" appearance="search(&quot;veg.csv&quot;)"/>`,
      ),
    );
    expect(form.attachments).toEqual([
      { name: 'one.xml', type: 'file' },
      { name: 'two.csv', type: 'file' },
      { name: 'cat.jpg', type: 'image' },
      { name: 'cat-big.jpg', type: 'image' },
      { name: 'meow.mp3', type: 'audio' },
      { name: 'cat.mp4', type: 'video' },
      { name: 'logo.png', type: 'image' },
      { name: 'default.png', type: 'image' },
      { name: 'itemsets.csv', type: 'file' },
      { name: 'fruits.csv', type: 'file' },
      { name: 'veg.csv', type: 'file' },
    ]);
  });

  test('a search() appearance with unmatched quotes is 400.8, as in Central', () => {
    problemOf(() => parseForm(xform('<data id="s"><sel/></data>', '', `<select1 ref="/data/sel" appearance="search('fruits)"/>`)), 400.8);
  });

  test('pulldata() alone expects nothing: the CSV must be a secondary instance (Central has no pulldata rule)', () => {
    const form = parseForm(xform('<data id="p"><q/></data>', `<bind nodeset="/data/q" type="string" calculate="pulldata('fruits', 'a', 'b', 'c')"/>`));
    expect(form.attachments).toEqual([]);
    expect(parseForm(read(join(FORMS, 'real-world/collect/pull_data.xml'))).attachments).toEqual([{ name: 'fruits.csv', type: 'file' }]);
  });

  test('real forms', () => {
    const att = (file: string) => parseForm(read(join(FORMS, file))).attachments;
    expect(att('consumeDatasets.xml')).toEqual([
      { name: 'people.csv', type: 'file' },
      { name: 'trees.csv', type: 'file' },
    ]);
    expect(att('itemsets.xml')).toEqual([{ name: 'itemsets.csv', type: 'file' }]);
    expect(att('real-world/javarosa/nigeria_wards_external.xml')).toEqual([
      { name: 'lgas.xml', type: 'file' },
      { name: 'wards.xml', type: 'file' },
    ]);
    expect(att('real-world/enketo/widgets_on_pages.xml')).toContainEqual({ name: 'goldeneagle.mp3', type: 'audio' });
    expect(att('simple.xml')).toEqual([]);
  });
});

describe('entity declarations', () => {
  const ds = (file: string) => {
    const form = parseForm(read(join(FORMS, file)));
    return { entitiesVersion: form.entitiesVersion, datasets: form.datasets };
  };

  test('simpleEntity (2024.1) and simpleEntity2022', () => {
    const expected = [
      { name: 'people', entityPath: '/meta/entity', actions: ['create'], properties: [{ name: 'first_name', path: '/name' }, { name: 'age', path: '/age' }] },
    ];
    expect(ds('simpleEntity.xml')).toEqual({ entitiesVersion: '2024.1.0', datasets: expected });
    expect(ds('simpleEntity2022.xml')).toEqual({ entitiesVersion: '2022.1.0', datasets: expected });
  });

  test('updateEntity (2024.1) and updateEntity2023', () => {
    const expected = [
      { name: 'people', entityPath: '/meta/entity', actions: ['update'], properties: [{ name: 'first_name', path: '/name' }, { name: 'age', path: '/age' }] },
    ];
    expect(ds('updateEntity.xml')).toEqual({ entitiesVersion: '2024.1.0', datasets: expected });
    expect(ds('updateEntity2023.xml')).toEqual({ entitiesVersion: '2023.1.0', datasets: expected });
  });

  test('offlineEntity: create and update', () => {
    expect(ds('offlineEntity.xml').datasets).toEqual([
      {
        name: 'people',
        entityPath: '/meta/entity',
        actions: ['create', 'update'],
        properties: [
          { name: 'first_name', path: '/name' },
          { name: 'age', path: '/age' },
          { name: 'status', path: '/status' },
        ],
      },
    ]);
  });

  test('multiPropertyEntity: properties in field order', () => {
    expect(ds('multiPropertyEntity.xml').datasets).toEqual([
      {
        name: 'foo',
        entityPath: '/meta/entity',
        actions: ['create'],
        properties: [
          { name: 'b_q1', path: '/q1' },
          { name: 'd_q2', path: '/q2' },
          { name: 'a_q3', path: '/q3' },
          { name: 'c_q4', path: '/q4' },
        ],
      },
    ]);
  });

  test('createUpdateEntity', () => {
    expect(ds('createUpdateEntity.xml')).toEqual({
      entitiesVersion: '2024.1.0',
      datasets: [
        { name: 'people', entityPath: '/meta/entity', actions: ['create', 'update'], properties: [{ name: 'full_name', path: '/full_name' }, { name: 'age', path: '/age' }] },
      ],
    });
  });

  test('repeatEntityTrees: one declaration although the repeat has a template and an instance', () => {
    expect(ds('repeatEntityTrees.xml')).toEqual({
      entitiesVersion: '2025.1.0',
      datasets: [
        {
          name: 'trees',
          entityPath: '/tree/meta/entity',
          actions: ['create', 'update'],
          properties: [
            { name: 'species', path: '/tree/species' },
            { name: 'circumference', path: '/tree/circumference' },
          ],
        },
      ],
    });
  });

  test('repeatEntityGroup: entity in a group in a repeat', () => {
    expect(ds('repeatEntityGroup.xml').datasets).toEqual([
      {
        name: 'trees',
        entityPath: '/tree/tree_details/meta/entity',
        actions: ['create'],
        properties: [
          { name: 'species', path: '/tree/tree_details/species' },
          { name: 'health_status', path: '/tree/tree_details/health_status' },
        ],
      },
    ]);
  });

  test('repeatEntityHousehold: a root entity and one per repeat; each field goes to its nearest entity', () => {
    expect(ds('repeatEntityHousehold.xml').datasets).toEqual([
      {
        name: 'people',
        entityPath: '/members/person/meta/entity',
        actions: ['create'],
        properties: [
          { name: 'full_name', path: '/members/person/name' },
          { name: 'age', path: '/members/person/age' },
        ],
      },
      {
        name: 'households',
        entityPath: '/meta/entity',
        actions: ['create'],
        properties: [
          { name: 'hh_id', path: '/household_id' },
          { name: 'count', path: '/members/num_people' },
        ],
      },
    ]);
  });

  test('repeatEntityNested: nested repeats', () => {
    expect(ds('repeatEntityNested.xml').datasets).toEqual([
      {
        name: 'trees',
        entityPath: '/plot/tree/meta/entity',
        actions: ['create'],
        properties: [
          { name: 'species', path: '/plot/tree/species' },
          { name: 'health_status', path: '/plot/tree/health_status' },
        ],
      },
      {
        name: 'plots',
        entityPath: '/plot/meta/entity',
        actions: ['create'],
        properties: [
          { name: 'plot_id', path: '/plot/plot_id' },
          { name: 'crop', path: '/plot/crop' },
        ],
      },
    ]);
  });

  test('multiEntityFarm: entities in nested groups', () => {
    expect(ds('multiEntityFarm.xml')).toEqual({
      entitiesVersion: '2025.1.0',
      datasets: [
        {
          name: 'farmers',
          entityPath: '/farm/farmer/meta/entity',
          actions: ['create'],
          properties: [
            { name: 'full_name', path: '/farm/farmer/farmer_name' },
            { name: 'age', path: '/farm/farmer/age' },
          ],
        },
        {
          name: 'farms',
          entityPath: '/farm/meta/entity',
          actions: ['create'],
          properties: [
            { name: 'farm_id', path: '/farm/farm_id' },
            { name: 'geometry', path: '/farm/location' },
            { name: 'acres', path: '/farm/acres' },
          ],
        },
      ],
    });
  });

  test('forms without entities', () => {
    expect(ds('simple.xml')).toEqual({ entitiesVersion: null, datasets: [] });
    expect(ds('consumeDatasets.xml')).toEqual({ entitiesVersion: null, datasets: [] });
  });
});

describe('performance', () => {
  for (const file of ['real-world/javarosa/eIMCI-by-D-Tree.xml', 'real-world/enketo/SOAR_facilitysurvey_full_2017May11_Kenya.xml']) {
    test(`${file} parses well under a second`, () => {
      const bytes = read(join(FORMS, file));
      expect(bytes.length).toBeGreaterThan(250_000);
      const started = performance.now();
      const form = parseForm(bytes);
      expect(performance.now() - started).toBeLessThan(1000);
      expect(form.fields.length).toBeGreaterThan(300);
    });
  }
});
