/**
 * readSubmission takes what Central's lenient parser takes: a comma between root attributes, an end
 * tag that differs from its start tag only in its prefix.
 */
import { describe, expect, test } from 'vitest';
import { parseSubmission, readSubmission } from '../../../lib/xforms/parse-submission';
import { Problem } from '../../../lib/problem';

describe('readSubmission leniency', () => {
  test('the envelope of Central\'s crypto-odk (a comma after encrypted="yes") parses; the stored bytes are not touched', () => {
    const xml = `<?xml version="1.0"?>
<data xmlns="http://opendatakit.org/submissions" id="simple" encrypted="yes", version="[encrypted:AAAAAAAA]">
<base64EncryptedKey>AAAA</base64EncryptedKey>
<encryptedXmlFile>submission.xml.enc</encryptedXmlFile>
<media><file>alpha</file></media>
<meta xmlns="http://openrosa.org/xforms"><instanceID>one</instanceID></meta>
</data>`;
    const doc = readSubmission(xml);
    expect(doc).toMatchObject({ xmlFormId: 'simple', version: '[encrypted:AAAAAAAA]' });
    expect(new TextDecoder().decode(doc.bytes)).toBe(xml);
    const parsed = parseSubmission(doc);
    expect(parsed.instanceId).toBe('one');
    expect(parsed.encryption).toMatchObject({ encryptedXmlFile: 'submission.xml.enc', mediaFiles: ['alpha'] });
    expect(parsed.attachments).toEqual(['alpha', 'submission.xml.enc']);
  });

  test('other malformed XML still fails with its own 400.1', () => {
    const err = (() => { try { readSubmission('<data id="x" version="1"><a></b></data>'); } catch (e) { return e; } })();
    expect(err).toBeInstanceOf(Problem);
    expect((err as Problem).code).toBe(400.1);
  });

  test('an end tag differing only in its prefix closes its element (Central\'s <meta>…</orx:meta>); other mismatches fail', () => {
    const xml = '<data id="simple"><meta><instanceID>one</instanceID><orx:instanceName>custom name</orx:instanceName></orx:meta><name>Alice</name><age>30</age></data>';
    const parsed = parseSubmission(readSubmission(xml));
    expect(parsed).toMatchObject({ instanceId: 'one', instanceName: 'custom name' });
    expect(parsed.values.map((v) => v.path)).toEqual(['/meta/instanceID', '/meta/instanceName', '/name', '/age']);
    for (const bad of ['<data id="x"><meta><a>1</a></orx:metadata></data>', '<data id="x"><a:b>1</c:d></data>']) {
      const err = (() => { try { readSubmission(bad); } catch (e) { return e; } })();
      expect((err as Problem).code, bad).toBe(400.1);
    }
  });
});
