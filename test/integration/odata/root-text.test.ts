/**
 * Submissions pages of a form without repeats read each version's stored root_text (lib/odata
 * index.ts rootTextReader) instead of its root_values: the rows must be the same as from the
 * values, across form versions — a version whose definition lacks a field of the current one
 * shows null for it, unless its XML holds the element anyway (then its value, as Central reads
 * the XML) — and the same as each row read alone (`Submissions('id')`, which reads root_values).
 */
import { describe, expect, test } from 'vitest';
import { harness, type Harness } from '../../helpers/harness';
import { feed, publishForm } from './helpers';

const form = (version: string, withAge: boolean) => `<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa">
  <h:head><h:title>Versioned</h:title><model>
    <instance><data id="versioned" version="${version}"><meta><instanceID/></meta><name/>${withAge ? '<age/>' : ''}<note/></data></instance>
    <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" calculate="concat('uuid:', uuid())"/>
    <bind nodeset="/data/name" type="string"/>${withAge ? '\n    <bind nodeset="/data/age" type="int"/>' : ''}
    <bind nodeset="/data/note" type="string"/>
  </model></h:head>
  <h:body><input ref="/data/name"/>${withAge ? '<input ref="/data/age"/>' : ''}<input ref="/data/note"/></h:body>
</h:html>`;

const F = (h: Harness) => `/v1/projects/${h.projectId}/forms/versioned`;

async function submit(h: Harness, xml: string): Promise<void> {
  const res = await h.post(`${F(h)}/submissions`, { as: 'bob', body: xml, headers: { 'Content-Type': 'text/xml' } });
  expect(res.status, await res.clone().text()).toBe(200);
}

describe('Submissions rows from root_text', () => {
  test('across versions: a field the version lacks is null unless its XML holds it; rows equal Submissions(\'id\')', async () => {
    const h = await harness();
    await publishForm(h, form('1', false));
    await submit(h, '<data id="versioned" version="1"><meta><instanceID>one</instanceID></meta><name>Alice</name><note></note></data>');
    // An element version 1 does not declare: stored in root_values, not in version 1's root_text.
    await submit(h, '<data id="versioned" version="1"><meta><instanceID>extra</instanceID></meta><name>Bob</name><age>7</age><note>x, "y"</note></data>');
    expect((await h.post(`${F(h)}/draft`, { as: 'bob', body: form('2', true), headers: { 'Content-Type': 'application/xml' } })).status).toBe(200);
    expect((await h.post(`${F(h)}/draft/publish`, { as: 'bob' })).status).toBe(200);
    await submit(h, '<data id="versioned" version="2"><meta><instanceID>two</instanceID></meta><name>Carol</name><age>30</age><note>n</note></data>');
    await submit(h, '<data id="versioned" version="2"><meta><instanceID>three</instanceID></meta><name></name><age></age></data>');

    const svc = `${F(h)}.svc`;
    const page = await feed<Record<string, unknown>>(h, `${svc}/Submissions`);
    const fields = page.value.map(({ __id, name, age, note }) => ({ __id, name, age, note }));
    expect(fields).toEqual([
      { __id: 'three', name: null, age: null, note: null },
      { __id: 'two', name: 'Carol', age: 30, note: 'n' },
      { __id: 'extra', name: 'Bob', age: 7, note: 'x, "y"' },
      { __id: 'one', name: 'Alice', age: null, note: null },
    ]);
    for (const row of page.value) {
      const alone = await feed<Record<string, unknown>>(h, `${svc}/Submissions('${String(row.__id)}')`);
      expect(alone.value).toEqual([row]);
    }
    // Paged ($top=1 + nextLink) and with $select: the same rows.
    const first = await feed<Record<string, unknown>>(h, `${svc}/Submissions?$top=1&$select=__id,age`);
    expect(first.value).toEqual([{ __id: 'three', age: null }]);
    const next = new URL(String((first as { '@odata.nextLink'?: string })['@odata.nextLink']));
    const second = await feed<Record<string, unknown>>(h, `${next.pathname}${next.search}`);
    expect(second.value).toEqual([{ __id: 'two', age: 30 }]);
  });

  test('a form of string fields only (rows copied from root_text as bytes): values with quotes, backslashes, non-ASCII and empty ones; rows equal Submissions(\'id\')', async () => {
    const h = await harness();
    const strings = form('1', false).replace('id="versioned"', 'id="strings"');
    await publishForm(h, strings);
    const S = `/v1/projects/${h.projectId}/forms/strings`;
    const texts: Array<[string, string]> = [['plain', 'n'], ['Ünïcode ✓ 😀', ''], ['x "quoted" \\ back', 'tab\tafter'], ['', '']];
    for (const [i, [name, note]] of texts.entries()) {
      const xml = `<data id="strings" version="1"><meta><instanceID>s${i}</instanceID></meta><name>${name.replace('&', '&amp;')}</name><note>${note}</note></data>`;
      const res = await h.post(`${S}/submissions`, { as: 'bob', body: xml, headers: { 'Content-Type': 'text/xml' } });
      expect(res.status, await res.clone().text()).toBe(200);
    }
    const page = await feed<Record<string, unknown>>(h, `${S}.svc/Submissions`);
    expect(page.value.map(({ __id, name, note }) => ({ __id, name, note }))).toEqual(texts.map(([name, note], i) => ({ __id: `s${i}`, name: name === '' ? null : name, note: note === '' ? null : note })).reverse());
    for (const row of page.value) {
      const alone = await feed<Record<string, unknown>>(h, `${S}.svc/Submissions('${String(row.__id)}')`);
      expect(alone.value).toEqual([row]);
    }
  });
});
