import { describe, expect, test } from 'vitest';
import { xformDifferences } from '../../helpers/xform-equivalence';

/** A small XForm in pyxform's shape; `parts` replace pieces of it. */
const form = (parts: { model?: string; body?: string; item?: string; translation?: string; label?: string } = {}) =>
  `<?xml version="1.0"?><h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa">` +
  `<h:head><h:title>T</h:title><model odk:xforms-version="1.0.0" xmlns:odk="http://www.opendatakit.org/xforms">` +
  (parts.model ??
    `<itext>${parts.translation ?? '<translation lang="en" default="true()"><text id="a"><value>A</value><value form="image">jr://images/a.jpg</value></text><text id="b"><value>B</value></text></translation>'}</itext>` +
      `<instance><data id="f"><age/><colour/><meta><instanceID/></meta></data></instance>` +
      `<instance id="colours"><root>${parts.item ?? '<item><name>red</name><label>Red</label></item>'}<item><name>blue</name><label>Blue</label></item></root></instance>` +
      `<bind nodeset="/data/age" type="int"/><bind nodeset="/data/colour" type="string"/>`) +
  `</model></h:head><h:body>` +
  (parts.body ?? `<input ref="/data/age">${parts.label ?? '<label>Age of <output value=" /data/colour "/> now</label>'}</input><select1 ref="/data/colour"><label>C</label></select1>`) +
  `</h:body></h:html>`;

describe('xformDifferences', () => {
  test('identical documents, and formatting whitespace between elements, are equivalent', () => {
    expect(xformDifferences(form(), form())).toEqual([]);
    const pretty = form().replace(/></g, '>\n  <').replace('Age of\n  <output', 'Age of <output').replace('"/>\n   now', '"/> now');
    expect(xformDifferences(form(), pretty)).toEqual([]);
  });

  test('catches a changed attribute, with its path', () => {
    const diffs = xformDifferences(form(), form().replace('nodeset="/data/age" type="int"', 'nodeset="/data/age" type="string"'));
    expect(diffs).toEqual(['/h:html/h:head/model/bind[@nodeset="/data/age"]: attribute type: expected "int", actual "string"']);
  });

  test('catches a missing and an unexpected attribute, and exact attribute whitespace', () => {
    const diffs = xformDifferences(form(), form().replace('<bind nodeset="/data/age" type="int"/>', '<bind nodeset="/data/age" required="true()"/>'));
    expect(diffs).toContain('/h:html/h:head/model/bind[@nodeset="/data/age"]: missing attribute type="int"');
    expect(diffs).toContain('/h:html/h:head/model/bind[@nodeset="/data/age"]: unexpected attribute required="true()"');
    expect(xformDifferences(form(), form().replace('nodeset="/data/colour" type="string"', 'nodeset="/data/colour" type="string "'))).toHaveLength(1);
  });

  test('catches a missing element', () => {
    const diffs = xformDifferences(form(), form().replace('<meta><instanceID/></meta>', '<meta/>'));
    expect(diffs).toEqual(['/h:html/h:head/model/instance/data[@id="f"]/meta: missing <instanceID/> (expected as child 1)']);
    const noBind = xformDifferences(form(), form().replace('<bind nodeset="/data/colour" type="string"/>', ''));
    expect(noBind).toEqual(['/h:html/h:head/model: missing <bind nodeset="/data/colour" type="string"/>']);
  });

  test('catches an unexpected element', () => {
    const diffs = xformDifferences(form(), form().replace('</h:body>', '<trigger ref="/data/x"/></h:body>'));
    expect(diffs).toHaveLength(1);
    expect(diffs[0]).toMatch(/^\/h:html\/h:body: unexpected <trigger ref="\/data\/x"\/>/);
  });

  test('catches reordered body children', () => {
    const swapped = form({ body: '<select1 ref="/data/colour"><label>C</label></select1><input ref="/data/age"><label>Age of <output value=" /data/colour "/> now</label></input>' });
    const diffs = xformDifferences(form(), swapped);
    expect(diffs.length).toBeGreaterThan(0);
    expect(diffs.join('\n')).toMatch(/^\/h:html\/h:body: .*order differs/m);
  });

  test('catches reordered secondary-instance items (choice order matters)', () => {
    const swapped = form().replace(
      '<item><name>red</name><label>Red</label></item><item><name>blue</name><label>Blue</label></item>',
      '<item><name>blue</name><label>Blue</label></item><item><name>red</name><label>Red</label></item>',
    );
    expect(xformDifferences(form(), swapped).length).toBeGreaterThan(0);
  });

  test('accepts reordered model children, translations texts, text values and item children', () => {
    const reordered = form({
      model:
        `<bind nodeset="/data/colour" type="string"/>` +
        `<instance id="colours"><root><item><label>Red</label><name>red</name></item><item><name>blue</name><label>Blue</label></item></root></instance>` +
        `<bind nodeset="/data/age" type="int"/>` +
        `<instance><data id="f"><age/><colour/><meta><instanceID/></meta></data></instance>` +
        `<itext><translation default="true()" lang="en"><text id="b"><value>B</value></text><text id="a"><value form="image">jr://images/a.jpg</value><value>A</value></text></translation></itext>`,
    });
    expect(xformDifferences(form(), reordered)).toEqual([]);
  });

  test('primary instance children stay ordered', () => {
    const diffs = xformDifferences(form(), form().replace('<age/><colour/>', '<colour/><age/>'));
    expect(diffs.join('\n')).toMatch(/instance\/data\[@id="f"\]: <age\/> is child 2, expected as child 1 \(order differs\)/);
  });

  test('text is exact by default, including in mixed content; trim mode ignores surrounding whitespace', () => {
    const changed = form({ label: '<label>Age of <output value=" /data/colour "/>\n now</label>' });
    expect(xformDifferences(form(), changed)).toEqual(['/h:html/h:body/input[@ref="/data/age"]/label: text: expected " now", actual "\\n now"']);
    expect(xformDifferences(form(), changed, { text: 'trim' })).toEqual([]);
    expect(xformDifferences(form(), form({ label: '<label>Age of <output value=" /data/colour "/> later</label>' }), { text: 'trim' })).toHaveLength(1);
  });

  test('a changed itext value is reported under its text id', () => {
    const diffs = xformDifferences(form(), form({ translation: '<translation lang="en" default="true()"><text id="a"><value>A!</value><value form="image">jr://images/a.jpg</value></text><text id="b"><value>B</value></text></translation>' }));
    expect(diffs).toEqual(['/h:html/h:head/model/itext/translation[@lang="en"]/text[@id="a"]/value: text: expected "A", actual "A!"']);
  });

  test('namespace URIs matter, prefixes do not; declarations are compared', () => {
    const renamed = form().replace(/odk:xforms-version|xmlns:odk/g, (m) => (m === 'xmlns:odk' ? 'xmlns:o' : 'o:xforms-version'));
    expect(xformDifferences(form(), renamed)).toEqual([]);
    const dropped = form().replace(' xmlns:jr="http://openrosa.org/javarosa"', '');
    expect(xformDifferences(form(), dropped)).toEqual(['/h:html: missing namespace declaration xmlns:jr="http://openrosa.org/javarosa"']);
  });

  test('malformed XML and DOCTYPEs are reported, not thrown', () => {
    expect(xformDifferences(form(), '<h:html>')[0]).toMatch(/^actual: not well-formed XML/);
    const dtd = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>';
    expect(xformDifferences(dtd, dtd)[0]).toMatch(/^expected: not well-formed XML: .*DOCTYPE/);
  });
});
