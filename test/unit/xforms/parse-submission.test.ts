import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { parseForm } from '../../../lib/xforms/parse-form';
import { parseSubmission } from '../../../lib/xforms/parse-submission';
import type { FormField, ParsedSubmission } from '../../../lib/xforms/types';
import { MAX_XML_DEPTH } from '../../../lib/xforms/xml-tree';
import { problemOf } from '../../helpers/problems';

const SHARED = fileURLToPath(new URL('../../../../shared/fixtures/', import.meta.url));
const SUBMISSIONS = join(SHARED, 'submissions');
const FORMS = join(SHARED, 'forms');
const OUTPUTS = join(SHARED, 'central-outputs');

const read = (path: string) => readFileSync(path);
const readText = (path: string) => readFileSync(path, 'utf8');
const hex = (algo: string, bytes: Uint8Array) => createHash(algo).update(bytes).digest('hex');
const fieldsOf = (form: string): FormField[] => parseForm(read(join(FORMS, form))).fields;
const sub = (name: string, fields?: FormField[]) => parseSubmission(read(join(SUBMISSIONS, name)), fields);

/** Every .xml under a folder, recursively (the .jpg attachments next to real-world instances are not XML). */
function allXml(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) out.push(...allXml(full));
    else if (entry.endsWith('.xml')) out.push(full);
  }
  return out;
}


/** What a file says, read independently with simple regexes (not with the parser under test). */
function expectedOf(xml: string) {
  const body = xml.replace(/^\uFEFF?<\?xml[^>]*\?>/, '');
  const rootTag = /<([A-Za-z_][\w.:-]*)([^>]*)>/.exec(body);
  if (!rootTag) throw new Error('no root tag');
  const attrs = rootTag[2] ?? '';
  const attrOf = (re: RegExp) => re.exec(attrs)?.[2];
  const metaText = (name: string) => {
    const m = new RegExp(`<(?:\\w+:)?${name}>([^<]+)</(?:\\w+:)?${name}>`).exec(body);
    return m ? (m[1] as string) : null;
  };
  return {
    rootName: (rootTag[1] as string).replace(/^[^:]*:/, ''),
    xmlFormId: attrOf(/\sid=(["'])(.*?)\1/),
    version: attrOf(/\s(?:\w+:)?version=(["'])(.*?)\1/) ?? '',
    instanceId: metaText('instanceID'),
    deprecatedId: metaText('deprecatedID'),
    instanceName: metaText('instanceName'),
  };
}

describe('every fixture submission', () => {
  const files = [...allXml(SUBMISSIONS), ...allXml(OUTPUTS).filter((f) => f.includes('/inputs/submissions/'))];

  test('the fixture tree is where we expect it', () => {
    expect(allXml(SUBMISSIONS).length).toBe(59);
    expect(files.some((f) => f.includes('/real-world/kobocat/'))).toBe(true);
    expect(files.some((f) => f.includes('/real-world/collect/'))).toBe(true);
  });

  for (const file of files) {
    const rel = relative(SHARED, file);
    test(`${rel}: parses; ids, version, meta and hashes match the file`, () => {
      const bytes = read(file);
      const parsed = parseSubmission(bytes);
      const expected = expectedOf(readText(file));
      expect({
        rootName: parsed.rootName,
        xmlFormId: parsed.xmlFormId,
        version: parsed.version,
        instanceId: parsed.instanceId,
        deprecatedId: parsed.deprecatedId,
        instanceName: parsed.instanceName,
      }).toEqual(expected);
      expect(parsed.hash).toEqual({ md5: hex('md5', bytes), sha256: hex('sha256', bytes) });
      // The same text as a string gives the same answer.
      expect(parseSubmission(readText(file))).toEqual(parsed);
      // Every leaf is listed; paths are below the root and prefix-free.
      for (const v of parsed.values) expect(v.path).toMatch(/^(\/[^/:]+)+$/);
    });
  }
});

describe('meta', () => {
  test('a few by eye', () => {
    expect(sub('simple.one.xml')).toMatchObject({ xmlFormId: 'simple', version: '', rootName: 'data', instanceId: 'one', deprecatedId: null, instanceName: null, encryption: null, entities: [], attachments: [] });
    expect(sub('simple2.two.xml')).toMatchObject({ xmlFormId: 'simple2', version: '2.1', instanceId: 's2two' });
    expect(sub('multiEntityFarm.one.xml')).toMatchObject({ version: '2', instanceId: 'uuid:fccb4433-27cc-487c-9d4c-98786a20c5b6', instanceName: 'Farm 123-Barb' });
    // Collect writes `orx:version` on the root; Central matches attributes by local name.
    expect(sub('real-world/collect/one-question/one-question-google_2023-08-08_14-51-00.xml')).toMatchObject({
      xmlFormId: 'one_question_google',
      version: '1',
      instanceId: null,
      values: [{ path: '/age', repeatIndex: [], value: '' }],
    });
  });

  test('edits: deprecatedID, before or after instanceID', () => {
    expect(sub('real-world/kobocat/transportation/transport_2011-07-25_19-05-36-edited.xml')).toMatchObject({
      xmlFormId: 'transportation_2011_07_25',
      instanceId: 'uuid:6b15caf0eaed408b88b7037e78004f08',
      deprecatedId: 'uuid:7a9ba167019a4152a31e46049587d672',
    });
    expect(sub('real-world/kobocat/transportation/transport_with_attachment_edit.xml')).toMatchObject({
      rootName: 'transportation_with_attachment',
      instanceId: 'uuid:30362a89-73f2-4b64-8838-867c2bd3ea35',
      deprecatedId: 'uuid:5b2cc313-fc09-437e-8149-fcd32f695d41',
    });
  });

  test('no meta at all (KoBoCAT-era instances): instanceId null, the caller generates one', () => {
    const p = sub('real-world/kobocat/WaterSimple/WaterSimple_2011-01-23_17-41-53.xml');
    expect(p).toMatchObject({ xmlFormId: 'build_WaterSimple_1295821382', version: '', instanceId: null, deprecatedId: null });
    expect(p.values.map((v) => v.path)).toEqual(['/name', '/users_per_month', '/geopoint', '/device_id', '/start', '/end']);
  });

  test('a top-level instanceID is the fallback (Central), meta/instanceID wins', () => {
    expect(parseSubmission('<data id="x"><instanceID>top</instanceID></data>').instanceId).toBe('top');
    expect(parseSubmission('<data id="x"><instanceID>top</instanceID><meta><instanceID>meta</instanceID></meta></data>').instanceId).toBe('meta');
    // An empty meta/instanceID does not count.
    expect(parseSubmission('<data id="x"><meta><instanceID/></meta><instanceID>top</instanceID></data>').instanceId).toBe('top');
    // Only a meta directly under the root counts (Central: findOne(root(), node('meta'), node('instanceID'))).
    expect(parseSubmission('<data id="x"><g><meta><instanceID>deep</instanceID></meta></g></data>').instanceId).toBeNull();
  });

  test('the xml with a default namespace reads the same as without', () => {
    const plain = sub('real-world/kobocat/transportation/transport_2011-07-25_19-05-36.xml');
    const ns = sub('real-world/kobocat/transportation/transport_2011-07-25_19-05-36_with_xmlns.xml');
    expect({ ...ns, hash: null }).toEqual({ ...plain, hash: null });
  });
});

describe('repeats', () => {
  test('withrepeat with the form fields: repeat indexes', () => {
    const fields = fieldsOf('withrepeat.xml');
    expect(sub('withrepeat.two.xml', fields).values).toEqual([
      { path: '/meta/instanceID', repeatIndex: [], value: 'rtwo' },
      { path: '/name', repeatIndex: [], value: 'Bob' },
      { path: '/age', repeatIndex: [], value: '34' },
      { path: '/children/child/name', repeatIndex: [1], value: 'Billy' },
      { path: '/children/child/age', repeatIndex: [1], value: '4' },
      { path: '/children/child/name', repeatIndex: [2], value: 'Blaine' },
      { path: '/children/child/age', repeatIndex: [2], value: '6' },
    ]);
    expect(sub('withrepeat.three.xml', fields).values.slice(3)).toEqual([
      { path: '/children/child/name', repeatIndex: [1], value: 'Candace' },
      { path: '/children/child/age', repeatIndex: [1], value: '2' },
    ]);
    expect(sub('withrepeat.one.xml', fields).values.every((v) => v.repeatIndex.length === 0)).toBe(true);
  });

  test('withrepeat without fields: repeated siblings are repeats, a lone instance is not', () => {
    expect(sub('withrepeat.two.xml').values.slice(3).map((v) => v.repeatIndex)).toEqual([[1], [1], [2], [2]]);
    expect(sub('withrepeat.three.xml').values.slice(3).map((v) => v.repeatIndex)).toEqual([[], []]);
  });

  test('doubleRepeat: nested indexes, with and without fields', () => {
    const expected = [
      ['/meta/instanceID', [], 'double'],
      ['/name', [], 'Vick'],
      ['/children/child/name', [1], 'Alice'],
      ['/children/child/name', [2], 'Bob'],
      ['/children/child/toys/toy/name', [2, 1], 'Twilight Sparkle'],
      ['/children/child/toys/toy/name', [2, 2], 'Pinkie Pie'],
      ['/children/child/toys/toy/name', [2, 3], 'Applejack'],
      ['/children/child/toys/toy/name', [2, 4], 'Spike'],
      ['/children/child/name', [3], 'Chelsea'],
      ['/children/child/toys/toy/name', [3, 1], 'Rainbow Dash'],
      ['/children/child/toys/toy/name', [3, 2], 'Rarity'],
      ['/children/child/toys/toy/name', [3, 3], 'Fluttershy'],
      ['/children/child/toys/toy/name', [3, 4], 'Princess Luna'],
    ];
    const asTuples = (p: ParsedSubmission) => p.values.map((v) => [v.path, v.repeatIndex, v.value]);
    expect(asTuples(sub('doubleRepeat.double.xml', fieldsOf('doubleRepeat.xml')))).toEqual(expected);
    expect(asTuples(sub('doubleRepeat.double.xml'))).toEqual(expected);
  });

  test('groupRepeat: a single repeat instance is recognised from the fields', () => {
    const file = join(OUTPUTS, 'groupRepeat/inputs/submissions/own-1.xml');
    const withFields = parseSubmission(read(file), fieldsOf('groupRepeat.xml'));
    expect(withFields.values.find((v) => v.path === '/child_repeat/address/city')).toEqual({ path: '/child_repeat/address/city', repeatIndex: [1], value: 'Nairobi' });
    expect(parseSubmission(read(file)).values.find((v) => v.path === '/child_repeat/address/city')?.repeatIndex).toEqual([]);
  });

  test('leaves keep their text as written; empty elements give ""', () => {
    const p = sub('real-world/kobocat/transportation/transport_with_attachment.xml');
    expect(p.values[0]).toEqual({ path: '/transport/available_transportation_types_to_referral_facility', repeatIndex: [], value: 'none\n        ' });
    expect(p.values.find((v) => v.path === '/transport/loop_over_transport_types_frequency/taxi')).toEqual({
      path: '/transport/loop_over_transport_types_frequency/taxi',
      repeatIndex: [],
      value: '',
    });
    expect(parseSubmission('<data id="x"><a>1 &lt; 2 &amp; <![CDATA[<b>]]></a></data>').values).toEqual([{ path: '/a', repeatIndex: [], value: '1 < 2 & <b>' }]);
  });
});

describe('attachments', () => {
  const fields = fieldsOf('binaryType.xml');

  test('binaryType: the binary fields, given the form fields', () => {
    expect(fields.filter((f) => f.binary).map((f) => f.path)).toEqual(['/file1', '/file2']);
    expect(sub('binaryType.both.xml', fields).attachments).toEqual(['my_file1.mp4', 'here_is_file2.jpg']);
    expect(sub('binaryType.one.xml', fields).attachments).toEqual(['my_file1.mp4']);
    expect(sub('binaryType.two.xml', fields).attachments).toEqual(['here_is_file2.jpg']);
    // Names exactly as written: no Unicode normalisation (the fixture's `fîlé2` is decomposed, NFD).
    const unicode = readText(join(SUBMISSIONS, 'binaryType.unicode.xml'));
    const written = [/<file1>([^<]+)</.exec(unicode)?.[1], /<file2>([^<]+)</.exec(unicode)?.[1]];
    expect(written[0]).not.toBe(written[0]?.normalize('NFC'));
    expect(sub('binaryType.unicode.xml', fields).attachments).toEqual(written);
  });

  test('central-outputs agrees (as a set: its listing is sorted by name)', () => {
    const listed = JSON.parse(readText(join(OUTPUTS, 'binaryType/api/submission-attachments.json'))) as Array<{ name: string }>;
    expect(sub('binaryType.both.xml', fields).attachments.sort()).toEqual(listed.map((a) => a.name).sort());
  });

  test('without fields there is nothing to go on', () => {
    expect(sub('binaryType.both.xml').attachments).toEqual([]);
  });

  test('client audits (meta/audit is binary), names trimmed, blanks left out, each once, any repeat index', () => {
    expect(sub('clientAudits.one.xml', fieldsOf('clientAudits.xml')).attachments).toEqual(['audit.csv']);
    const repeatFields: FormField[] = [
      { path: '/photo', name: 'photo', type: 'binary', binary: true, selectMultiple: null },
      { path: '/r', name: 'r', type: 'repeat', binary: null, selectMultiple: null },
      { path: '/r/pic', name: 'pic', type: 'binary', binary: true, selectMultiple: null },
    ];
    const p = parseSubmission('<data id="x"><photo> a.jpg </photo><r><pic>b.jpg</pic></r><r><pic/></r><r><pic>a.jpg</pic></r><r><pic>c.jpg</pic></r></data>', repeatFields);
    expect(p.attachments).toEqual(['a.jpg', 'b.jpg', 'c.jpg']);
  });
});

describe('encrypted submissions', () => {
  test('the envelope of both fixtures', () => {
    for (const [file, media, id] of [
      ['encrypted.one.xml', '1561432508817.jpg.enc', 'uuid:dcf4a151-5088-453f-99e6-369d67828f7a'],
      ['encrypted.two.xml', '1561432532482.jpg.enc', 'uuid:99b303d9-6494-477b-a30d-d8aae8867335'],
    ] as const) {
      const xml = readText(join(SUBMISSIONS, file));
      const p = sub(file);
      expect(p).toMatchObject({ xmlFormId: 'encrypted', version: 'working3', instanceId: id });
      expect(p.encryption).toEqual({
        base64EncryptedKey: /<base64EncryptedKey>([^<]+)</.exec(xml)?.[1],
        encryptedXmlFile: 'submission.xml.enc',
        mediaFiles: [media],
        signature: /<base64EncryptedElementSignature>([^<]+)</.exec(xml)?.[1],
      });
      // Media files, then the encrypted XML (Central's order, which is the encryption order).
      expect(p.attachments).toEqual([media, 'submission.xml.enc']);
      expect(sub(file, fieldsOf('encrypted.xml')).attachments).toEqual([media, 'submission.xml.enc']);
    }
  });

  test('central-outputs lists the same attachments for encrypted.two', () => {
    const listed = JSON.parse(readText(join(OUTPUTS, 'encrypted/api/submission-attachments.json'))) as Array<{ name: string }>;
    expect(sub('encrypted.two.xml').attachments.sort()).toEqual(listed.map((a) => a.name).sort());
  });

  test('the spec example: several media elements, encryptedXmlFile first in the document', () => {
    const p = parseSubmission(`<data xmlns="http://opendatakit.org/submissions" id="mysurvey" encrypted="yes" version="2014083101">
      <base64EncryptedKey>k</base64EncryptedKey><encryptedXmlFile> submission.xml.enc </encryptedXmlFile>
      <media><file>myimage.jpg.enc</file></media><media><file>myaudio.mp3.enc</file></media>
      <meta xmlns="http://openrosa.org/xforms"><instanceID>uuid:5b9</instanceID></meta></data>`);
    expect(p.encryption).toEqual({ base64EncryptedKey: 'k', encryptedXmlFile: 'submission.xml.enc', mediaFiles: ['myimage.jpg.enc', 'myaudio.mp3.enc'], signature: null });
    expect(p.attachments).toEqual(['myimage.jpg.enc', 'myaudio.mp3.enc', 'submission.xml.enc']);
  });

  test('an encrypted envelope without instanceID → 400.2 (Central)', () => {
    const p = problemOf(() => parseSubmission('<data id="e" encrypted="yes"><base64EncryptedKey>k</base64EncryptedKey><encryptedXmlFile>submission.xml.enc</encryptedXmlFile></data>'), 400.2);
    expect(p.details).toEqual({ field: 'instanceId (required for encrypted submissions)' });
  });

  test('plain submissions have no envelope', () => {
    expect(sub('simple.one.xml').encryption).toBeNull();
  });
});

describe('entities', () => {
  const none = { create: null, update: null, baseVersion: null, trunkVersion: null, branchId: null };

  test('simpleEntity: prefixed entities:entity / entities:label, undeclared orx:instanceName', () => {
    const p = sub('simpleEntity.one.xml');
    expect(p.instanceName).toBe('one');
    expect(p.entities).toEqual([
      { path: '/meta/entity', repeatIndex: [], ...none, dataset: 'people', id: 'uuid:12345678-1234-4123-8234-123456789abc', create: '1', label: 'Alice (88)' },
    ]);
    for (const [file, label] of [['simpleEntity.two.xml', 'Jane (30)'], ['simpleEntity.three.xml', 'John (40)'], ['simpleEntity.four.xml', 'Robert (18)']])
      expect(sub(file as string).entities).toMatchObject([{ dataset: 'people', create: '1', update: null, label }]);
  });

  test('updateEntity: baseVersion, update, with and without label', () => {
    expect(sub('updateEntity.one.xml').entities).toEqual([
      { path: '/meta/entity', repeatIndex: [], ...none, dataset: 'people', id: '12345678-1234-4123-8234-123456789abc', update: '1', baseVersion: '1', label: 'Alicia (85)' },
    ]);
    expect(sub('updateEntity.two.xml').entities[0]?.label).toBe('Alicia - 85');
    expect(sub('updateEntity.three.xml').entities).toEqual([
      { path: '/meta/entity', repeatIndex: [], ...none, dataset: 'people', id: '12345678-1234-4123-8234-123456789abc', update: '1', baseVersion: '1', label: null },
    ]);
  });

  test('offlineEntity: trunkVersion and branchId, empty values kept as ""', () => {
    expect(sub('offlineEntity.one.xml').entities).toEqual([
      { path: '/meta/entity', repeatIndex: [], dataset: 'people', id: '12345678-1234-4123-8234-123456789abc', create: null, update: '1', baseVersion: '1', trunkVersion: '1', branchId: '', label: null },
    ]);
    expect(sub('offlineEntity.two.xml').entities).toEqual([
      { path: '/meta/entity', repeatIndex: [], dataset: 'people', id: '12345678-1234-4123-8234-123456789ddd', create: '1', update: null, baseVersion: '', trunkVersion: '', branchId: '', label: 'Megan (20)' },
    ]);
  });

  test('entities in repeats and groups: paths and repeat indexes, in document order', () => {
    const nested = sub('repeatEntityNested.one.xml', fieldsOf('repeatEntityNested.xml'));
    expect(nested.entities.map((e) => [e.path, e.repeatIndex, e.dataset, e.label])).toEqual([
      ['/plot/tree/meta/entity', [1, 1], 'trees', 'Tree bing'],
      ['/plot/tree/meta/entity', [1, 2], 'trees', 'Tree rainier'],
      ['/plot/meta/entity', [1], 'plots', 'Plot 123: cherries'],
      ['/plot/tree/meta/entity', [2, 1], 'trees', 'Tree gala'],
      ['/plot/tree/meta/entity', [2, 2], 'trees', 'Tree pink lady'],
      ['/plot/meta/entity', [2], 'plots', 'Plot 333: apples'],
    ]);
    expect(sub('repeatEntityNested.one.xml').entities).toEqual(nested.entities);

    expect(sub('multiEntityFarm.one.xml').entities.map((e) => [e.path, e.dataset, e.id])).toEqual([
      ['/farm/farmer/meta/entity', 'farmers', 'fcdb2759-69ef-4b47-b7fd-75170d326c80'],
      ['/farm/meta/entity', 'farms', '94ca23e4-6050-4699-97cc-2588ca6c1a0e'],
    ]);
    expect(sub('repeatEntityHousehold.one.xml').entities.map((e) => [e.path, e.repeatIndex, e.label])).toEqual([
      ['/members/person/meta/entity', [1], 'parent1'],
      ['/members/person/meta/entity', [2], 'parent2'],
      ['/members/person/meta/entity', [3], 'child1'],
      ['/meta/entity', [], 'Household:1'],
    ]);
    expect(sub('repeatEntityTrees.two.xml').entities).toMatchObject([
      { path: '/tree/meta/entity', repeatIndex: [1], update: '1', baseVersion: '1', trunkVersion: '', branchId: '', label: 'Pine - Updated' },
      { path: '/tree/meta/entity', repeatIndex: [2], create: '1', baseVersion: null, label: 'Chestnut' },
    ]);
    expect(sub('repeatEntityGroup.one.xml').entities.map((e) => [e.path, e.repeatIndex])).toEqual([
      ['/tree/tree_details/meta/entity', [1]],
      ['/tree/tree_details/meta/entity', [2]],
    ]);
  });

  test('an `entity` outside a meta is an ordinary field', () => {
    expect(parseSubmission('<data id="x"><entity dataset="d">v</entity></data>').entities).toEqual([]);
  });
});

describe('templates from central-e2e', () => {
  test('standard/submission.xml after substituting its placeholders', () => {
    const xml = readText(join(FORMS, 'central-e2e/standard/submission.xml'))
      .replaceAll('{{formId}}', 'test_form')
      .replaceAll('{{formVersion}}', 'v1')
      .replaceAll('{{submissionId}}', 'uuid:7f4b2b6e-0b55-4bc5-a0a4-6cd7b3a5d1c9');
    expect(parseSubmission(xml)).toMatchObject({ xmlFormId: 'test_form', version: 'v1', instanceId: 'uuid:7f4b2b6e-0b55-4bc5-a0a4-6cd7b3a5d1c9' });
  });

  test('soak/250q-submission.template.xml after substituting, with the 250q form fields', () => {
    let n = 0;
    const xml = readText(join(FORMS, 'central-e2e/soak/250q-submission.template.xml'))
      .replaceAll('{{uuid}}', '0c1f7d52-3e84-4d3b-8d5c-5b9a2e8f1c02')
      .replaceAll('{{randInt}}', () => String((n += 1)));
    const p = parseSubmission(xml, fieldsOf('central-e2e/soak/250q-form.xml'));
    expect(p).toMatchObject({ xmlFormId: '250_questions', version: '', instanceId: 'uuid:0c1f7d52-3e84-4d3b-8d5c-5b9a2e8f1c02' });
    expect(p.values).toHaveLength(251);
    expect(p.values[250]).toEqual({ path: '/q250', repeatIndex: [], value: '250' });
  });
});

describe('leniency', () => {
  test('undeclared prefixes are accepted (doubleRepeat, simpleEntity, updateEntity, offlineEntity)', () => {
    for (const file of ['doubleRepeat.double.xml', 'simpleEntity.one.xml', 'updateEntity.one.xml', 'offlineEntity.one.xml'])
      expect(() => sub(file)).not.toThrow();
    expect(parseSubmission('<x:data x:id="a" y:version="2"><z:meta><z:instanceID>i</z:instanceID></z:meta></x:data>')).toMatchObject({
      xmlFormId: 'a',
      version: '2',
      rootName: 'data',
      instanceId: 'i',
      values: [{ path: '/meta/instanceID', repeatIndex: [], value: 'i' }],
    });
  });

  test('bare & is text; anything after the root is ignored; a BOM is fine', () => {
    expect(parseSubmission('<data id="x"><a>Fish & Chips &nbsp;</a></data>').values[0]?.value).toBe('Fish & Chips &nbsp;');
    expect(parseSubmission('<data id="x"><a>1</a></data>\n<trailing garbage').xmlFormId).toBe('x');
    const bom = parseSubmission('\uFEFF<?xml version="1.0"?><data id="x"/>');
    expect(bom.xmlFormId).toBe('x');
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('<data id="y"/>')]);
    expect(parseSubmission(bytes)).toMatchObject({ xmlFormId: 'y', hash: { md5: hex('md5', bytes) } });
  });

  test('deep nesting does not overflow the stack (deeper than MAX_XML_DEPTH: 400.1)', () => {
    const depth = MAX_XML_DEPTH - 1;
    const xml = `<data id="x">${'<g>'.repeat(depth)}v${'</g>'.repeat(depth)}</data>`;
    const p = parseSubmission(xml);
    expect(p.values).toHaveLength(1);
    expect(p.values[0]?.value).toBe('v');
    problemOf(() => parseSubmission(`<data id="x">${'<g>'.repeat(20_000)}v${'</g>'.repeat(20_000)}</data>`), 400.1);
  });
});

describe('problems', () => {
  test('no id on the root → 400.2 (Central\'s submission wording)', () => {
    const p = problemOf(() => parseSubmission('<data><meta><instanceID>x</instanceID></meta></data>'), 400.2);
    expect(p.details).toEqual({ field: 'form ID xml attribute' });
    expect(p.message).toBe('Required parameter form ID xml attribute missing.');
    const captured = JSON.parse(readText(join(OUTPUTS, '_errors/400.2-submission-no-form-id.json'))) as { body: string };
    expect(captured.body).toContain(p.message);
    problemOf(() => parseSubmission('<data id="  "/>'), 400.2);
  });

  test('not XML at all → 400.2 (no form id can be found)', () => {
    for (const junk of ['', 'hello', '{"json": true}'])
      expect(problemOf(() => parseSubmission(junk), 400.2).details).toEqual({ field: 'form ID xml attribute' });
  });

  test('truncated → 400.1 with line and column', () => {
    const xml = readText(join(SUBMISSIONS, 'groupRepeat.one.xml'));
    const cut = xml.slice(0, xml.indexOf('<city>Toronto') + 8);
    const p = problemOf(() => parseSubmission(cut), 400.1);
    expect(p.details).toMatchObject({ format: 'submission xml', rawLength: cut.length });
    const d = p.details as { line: number; column: number };
    expect(d.line).toBeGreaterThan(1);
    expect(d.column).toBeGreaterThan(0);
    problemOf(() => parseSubmission(read(join(SUBMISSIONS, 'simple.one.xml')).subarray(0, 40)), 400.1);
  });

  test('mismatched tags → 400.1 at the right line', () => {
    const p = problemOf(() => parseSubmission('<data id="x">\n  <a>1</b>\n</data>'), 400.1);
    expect(p.details).toMatchObject({ line: 2 });
  });

  test('DOCTYPE → 400.1, and billion laughs is never expanded', () => {
    problemOf(() => parseSubmission('<!DOCTYPE data><data id="x"/>'), 400.1);
    const lol = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<data id="lolz"><meta><instanceID>&lol9;</instanceID></meta></data>`;
    const p = problemOf(() => parseSubmission(lol), 400.1);
    expect(p.details).toMatchObject({ line: 2, column: 1, reason: 'DOCTYPE declarations are not allowed' });
  });
});
