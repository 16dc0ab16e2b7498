/** lib/xforms/rewrite: injectPublicKey and addVersionSuffix (managed encryption's XForm edits). */
import { describe, expect, test } from 'vitest';
import { parseForm } from '../../../lib/xforms/parse-form';
import { addVersionSuffix, injectPublicKey } from '../../../lib/xforms/rewrite';

const form = (instanceRoot: string, model = '') => `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:orx="http://openrosa.org/xforms">
  <h:head><h:title>t</h:title>
    <model>
      <instance>${instanceRoot}<meta><instanceID/></meta><submission/></data></instance>
      <instance id="other"><root version="x"><item/></root></instance>
      <bind nodeset="/data/meta/instanceID" type="string"/>${model}
    </model>
  </h:head><h:body/></h:html>`;
const KEY = 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAyYh7bSui';

describe('injectPublicKey', () => {
  test('adds a submission element just before </model> when there is none (an instance field named submission is data)', () => {
    const xml = form('<data id="f" version="1">');
    const out = injectPublicKey(xml, KEY);
    expect(out).toContain(`<submission base64RsaPublicKey="${KEY}"/></model>`);
    expect(out.replace(`<submission base64RsaPublicKey="${KEY}"/>`, '')).toBe(xml);
    expect(parseForm(out).base64RsaPublicKey).toBe(KEY);
  });

  test('sets the attribute on an existing submission element, self-closing or not, keeping its other attributes', () => {
    for (const sub of ['<submission method="post"/>', '<submission method="post" />', '<submission method="post"></submission>']) {
      const out = injectPublicKey(form('<data id="f">', sub), KEY);
      expect(out).toContain(`method="post" base64RsaPublicKey="${KEY}"`);
      expect(parseForm(out).base64RsaPublicKey).toBe(KEY);
    }
  });
});

describe('addVersionSuffix', () => {
  test('appends to version, to a prefixed orx:version, or adds one', () => {
    expect(addVersionSuffix(form('<data id="f" version="1">'), '[encrypted:AAAAAAAA]')).toContain('<data id="f" version="1[encrypted:AAAAAAAA]">');
    expect(addVersionSuffix(form('<data id="f" orx:version="1.0">'), '[e]')).toContain('<data id="f" orx:version="1.0[e]">');
    const none = addVersionSuffix(form('<data id="f">'), '[e]');
    expect(none).toContain('<data id="f" version="[e]">');
    expect(parseForm(none).version).toBe('[e]');
    // the secondary instance keeps its own version attribute
    expect(none).toContain('<root version="x">');
  });
});
