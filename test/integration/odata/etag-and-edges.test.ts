/**
 * OData feed behaviours matched to Central's test/integration/api/odata.js (issue 17): the ETag of
 * table pages and rows (a hash of the selection that changes when a submission in it changes, a
 * body hash on `$top=0` pages, none on a repeat table's `$top=0&$count=true`), 304 on
 * `If-None-Match`, `Submissions('id')` with `$select=*` and a repeat in `$select`, repeat tables of
 * an encrypted submission answering empty, repeat names that are not OData names (`q1.8-test` →
 * `q1_8_test` in links and entity sets), and `__system/…` without `$root/Submissions/` refused on
 * repeat tables (501.5).
 */
import { describe, expect, test } from 'vitest';
import { harness, json, type Harness } from '../../helpers/harness';
import { feed, fixture, problem, publishForm } from './helpers';

const svc = (h: Harness, form: string) => `/v1/projects/${h.projectId}/forms/${form}.svc`;

/** POSTs a submission's XML to a form as bob (the REST way, as Central's tests do). */
async function submit(h: Harness, form: string, xml: string): Promise<void> {
  const res = await h.post(`/v1/projects/${h.projectId}/forms/${form}/submissions`, { as: 'bob', body: xml, headers: { 'Content-Type': 'text/xml' } });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** withrepeat with rone, rtwo, rthree, and simple beside it. */
async function withrepeat(): Promise<Harness> {
  const h = await harness();
  await publishForm(h, fixture('forms/withrepeat.xml'));
  await publishForm(h, fixture('forms/simple.xml'));
  for (const k of ['one', 'two', 'three']) await submit(h, 'withrepeat', fixture(`submissions/withrepeat.${k}.xml`));
  return h;
}

const etagOf = async (h: Harness, path: string, headers: Record<string, string> = {}) => {
  const res = await h.get(path, { as: 'bob', headers });
  return { status: res.status, etag: res.headers.get('etag'), text: await res.text() };
};

describe('ETag', () => {
  test('Submissions: an eventhash ETag that changes with a new submission, a review or a deletion, not with another form', async () => {
    const h = await withrepeat();
    const url = `${svc(h, 'withrepeat')}/Submissions`;
    const first = await etagOf(h, url);
    expect(first.status).toBe(200);
    expect(first.etag).toMatch(/^W\/"eventhash:[0-9a-f]{32}"$/);
    expect((await etagOf(h, url)).etag, 'stable while nothing changes').toBe(first.etag);

    await submit(h, 'simple', fixture('submissions/simple.one.xml'));
    expect((await etagOf(h, url)).etag, 'a submission to another form').toBe(first.etag);

    await submit(h, 'withrepeat', fixture('submissions/withrepeat.three.xml').replaceAll('rthree', 'rfour'));
    const second = (await etagOf(h, url)).etag;
    expect(second).not.toBe(first.etag);

    expect((await h.patch(`/v1/projects/${h.projectId}/forms/withrepeat/submissions/rone`, { as: 'bob', body: { reviewState: 'approved' } })).status).toBe(200);
    const third = (await etagOf(h, url)).etag;
    expect(third).not.toBe(second);

    expect((await h.delete(`/v1/projects/${h.projectId}/forms/withrepeat/submissions/rtwo`, { as: 'bob' })).status).toBe(200);
    expect((await etagOf(h, url)).etag).not.toBe(third);
  });

  test('If-None-Match naming the ETag (strong or weak): 304 with the ETag and no body; a stale one: 200', async () => {
    const h = await withrepeat();
    for (const path of ['Submissions', 'Submissions?$top=1&$count=true', 'Submissions.children.child', "Submissions('rtwo')", "Submissions('rtwo')/children/child"]) {
      const url = `${svc(h, 'withrepeat')}/${path}`;
      const { etag } = await etagOf(h, url);
      expect(etag, path).toMatch(/^W\/"eventhash:/);
      const weak = await h.get(url, { as: 'bob', headers: { 'If-None-Match': etag! } });
      expect([weak.status, weak.headers.get('etag'), await weak.text()], path).toEqual([304, etag, '']);
      const strong = await h.get(url, { as: 'bob', headers: { 'If-None-Match': etag!.replace(/^W\//, '') } });
      expect(strong.status, path).toBe(304);
      expect((await etagOf(h, url, { 'If-None-Match': 'W/"eventhash:stale"' })).status, path).toBe(200);
    }
  });

  test("a repeat table's and one row's ETag change when their submission changes", async () => {
    const h = await withrepeat();
    const table = `${svc(h, 'withrepeat')}/Submissions.children.child`;
    const row = `${svc(h, 'withrepeat')}/Submissions('rthree')`;
    const before = [(await etagOf(h, table)).etag, (await etagOf(h, row)).etag];
    expect((await h.patch(`/v1/projects/${h.projectId}/forms/withrepeat/submissions/rthree`, { as: 'bob', body: { reviewState: 'hasIssues' } })).status).toBe(200);
    const after = [(await etagOf(h, table)).etag, (await etagOf(h, row)).etag];
    expect(after[0]).not.toBe(before[0]);
    expect(after[1]).not.toBe(before[1]);
  });

  test("a repeat table's bounded page: rows as the whole table's, ETag from the submissions read for it, 304, changed by a new or edited submission", async () => {
    const h = await withrepeat();
    const F = svc(h, 'withrepeat');
    const whole = JSON.parse((await etagOf(h, `${F}/Submissions.children.child`)).text) as { value: Array<Record<string, unknown>> };
    expect(whole.value.length).toBeGreaterThan(2);
    const first = await etagOf(h, `${F}/Submissions.children.child?$top=1`);
    const page = JSON.parse(first.text) as { value: Array<Record<string, unknown>>; '@odata.nextLink'?: string };
    expect(page.value).toEqual(whole.value.slice(0, 1));
    expect(page['@odata.nextLink']).toContain('%24skiptoken=');
    expect(first.etag).toMatch(/^W\/"eventhash:/);
    // The next page through its nextLink: the table's second row.
    const second = JSON.parse((await etagOf(h, page['@odata.nextLink']!.replace(/^https?:\/\/[^/]+/, ''))).text) as { value: Array<Record<string, unknown>> };
    expect(second.value).toEqual(whole.value.slice(1, 2));
    expect((await h.get(`${F}/Submissions.children.child?$top=1`, { as: 'bob', headers: { 'If-None-Match': first.etag! } })).status).toBe(304);
    // A page that reads every row (more asked than there are): no nextLink, and its ETag too.
    const all = await etagOf(h, `${F}/Submissions.children.child?$top=100`);
    expect((JSON.parse(all.text) as { value: unknown[] }).value).toEqual(whole.value);
    expect(all.text).not.toContain('nextLink');
    // A review of the submission the page comes from changes the ETag.
    expect((await h.patch(`/v1/projects/${h.projectId}/forms/withrepeat/submissions/rthree`, { as: 'bob', body: { reviewState: 'hasIssues' } })).status).toBe(200);
    const reviewed = await etagOf(h, `${F}/Submissions.children.child?$top=1`);
    expect(reviewed.etag).not.toBe(first.etag);
    // A new submission comes first in the feed's order: the page and its ETag change.
    await submit(h, 'withrepeat', fixture('submissions/withrepeat.three.xml').replaceAll('rthree', 'rfour'));
    const grown = await etagOf(h, `${F}/Submissions.children.child?$top=1`);
    expect(grown.etag).not.toBe(reviewed.etag);
    expect((JSON.parse(grown.text) as { value: Array<Record<string, unknown>> }).value[0]!['__Submissions-id']).toBe('rfour');
    expect((await etagOf(h, `${F}/Submissions.children.child?$top=100`)).etag).not.toBe(all.etag);
  });

  test('$top=0: a body ETag (not an eventhash) on Submissions, with and without $count', async () => {
    const h = await withrepeat();
    const F = svc(h, 'withrepeat');
    const counted = await etagOf(h, `${F}/Submissions?$top=0&$count=true`);
    expect(counted.etag).toMatch(/^W\/"/);
    expect(counted.etag).not.toMatch(/^W\/"eventhash/);
    const body = JSON.parse(counted.text) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['value', '@odata.context', '@odata.count']);
    expect([body.value, body['@odata.count']]).toEqual([[], 3]);
    expect(body['@odata.context']).toMatch(/\/forms\/withrepeat\.svc\/\$metadata#Submissions$/);
    const bare = await etagOf(h, `${F}/Submissions?$top=0`);
    expect(bare.etag).not.toMatch(/^W\/"eventhash/);
    expect(bare.etag).not.toBe(counted.etag);
    expect(Object.keys(JSON.parse(bare.text))).toEqual(['value', '@odata.context']);
    // The count is in the body, so in its ETag.
    await submit(h, 'withrepeat', fixture('submissions/withrepeat.three.xml').replaceAll('rthree', 'rfour'));
    expect((await etagOf(h, `${F}/Submissions?$top=0&$count=true`)).etag).not.toBe(counted.etag);
    const again = await h.get(`${F}/Submissions?$top=0`, { as: 'bob', headers: { 'If-None-Match': bare.etag! } });
    expect(again.status).toBe(304);
  });

  test("a repeat table's $top=0&$count=true: no ETag, and a nextLink with { repeatId: null } that starts at the first row", async () => {
    const h = await withrepeat();
    const F = svc(h, 'withrepeat');
    const res = await h.get(`${F}/Submissions.children.child?$top=0&$count=true`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBeNull();
    const body = await json<{ value: unknown[]; '@odata.count': number; '@odata.nextLink': string }>(res);
    expect(body.value).toEqual([]);
    expect(body['@odata.count']).toBe(3);
    expect(body['@odata.nextLink']).toMatch(/\/Submissions\.children\.child\?%24top=0&%24count=true&%24skiptoken=01eyJyZXBlYXRJZCI6bnVsbH0%3D$/);
    // The token is the start: with a $top that reads rows, the first ones.
    const all = await feed<{ __id: string }>(h, `${F}/Submissions.children.child`);
    const next = await feed<{ __id: string }>(h, `${F}/Submissions.children.child?$top=2&$skiptoken=01eyJyZXBlYXRJZCI6bnVsbH0%3D`);
    expect(next.value.map((r) => r.__id)).toEqual(all.value.slice(0, 2).map((r) => r.__id));
    // Without $count: nothing read, a body ETag, no nextLink.
    const bare = await h.get(`${F}/Submissions.children.child?$top=0`, { as: 'bob' });
    expect(bare.headers.get('etag')).not.toMatch(/^W\/"eventhash/);
    expect(Object.keys(await json<object>(bare))).toEqual(['value', '@odata.context']);
  });
});

describe("Submissions('id')", () => {
  test('$select=* is every property, as no $select', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/doubleRepeat.xml'));
    await submit(h, 'doubleRepeat', fixture('submissions/doubleRepeat.double.xml'));
    const url = `${svc(h, 'doubleRepeat')}/Submissions('double')`;
    const star = await feed<Record<string, unknown>>(h, `${url}?$select=*`);
    expect(star).toEqual(await feed(h, url));
    expect(Object.keys(star.value[0]!)).toEqual(['meta', 'name', 'children', '__id', '__system']);
  });

  test('a repeat in $select keeps its navigation link', async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/doubleRepeat.xml'));
    await submit(h, 'doubleRepeat', fixture('submissions/doubleRepeat.double.xml'));
    const one = await feed<Record<string, unknown>>(h, `${svc(h, 'doubleRepeat')}/Submissions('double')?$select=__id,__system/status,name,meta/instanceID,children/child`);
    expect(one.value).toEqual([{
      meta: { instanceID: 'double' }, name: 'Vick',
      children: { 'child@odata.navigationLink': "Submissions('double')/children/child" },
      __id: 'double', __system: { status: null },
    }]);
  });

  test("an encrypted submission's repeat rows: an empty table, not an error (its own and the whole table)", async () => {
    const h = await harness();
    await publishForm(h, fixture('forms/doubleRepeat.xml'));
    await submit(h, 'doubleRepeat', fixture('submissions/doubleRepeat.double.xml')
      .replace('</data>', '<encryptedXmlFile>x</encryptedXmlFile><base64EncryptedKey>y</base64EncryptedKey></data>'));
    const F = svc(h, 'doubleRepeat');
    for (const path of ["Submissions('double')/children/child", 'Submissions.children.child', 'Submissions.children.child.toys.toy']) {
      const page = await feed<unknown>(h, `${F}/${path}?$count=true`);
      expect(page.value, path).toEqual([]);
      expect(page['@odata.count'], path).toBe(0);
      expect(page['@odata.context'], path).toMatch(/\$metadata#Submissions\.children\.child/);
    }
    expect((await h.get(`${F}/Submissions('nosuch')/children/child`, { as: 'bob' })).status).toBe(404);
  });
});

const SANITIZE_FORM = `<?xml version="1.0"?>
<h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa" xmlns:odk="http://www.opendatakit.org/xforms">
  <h:head>
    <h:title>odata_sanitize_repeat_name</h:title>
    <model odk:xforms-version="1.0.0">
      <instance>
        <data id="odata_sanitize_repeat_name">
          <q1.8-test jr:template=""><one/><in.ner jr:template=""><two/></in.ner></q1.8-test>
          <meta><instanceID/></meta>
        </data>
      </instance>
      <bind nodeset="/data/q1.8-test/one" type="int"/>
      <bind nodeset="/data/q1.8-test/in.ner/two" type="string"/>
      <bind jr:preload="uid" nodeset="/data/meta/instanceID" readonly="true()" type="string"/>
    </model>
  </h:head>
  <h:body>
    <group ref="/data/q1.8-test"><label>Some repeat</label>
      <repeat nodeset="/data/q1.8-test">
        <input ref="/data/q1.8-test/one"><label>Some int</label></input>
        <group ref="/data/q1.8-test/in.ner"><repeat nodeset="/data/q1.8-test/in.ner"><input ref="/data/q1.8-test/in.ner/two"><label>t</label></input></repeat></group>
      </repeat>
    </group>
  </h:body>
</h:html>`;

describe('repeat names that are not OData names', () => {
  test('q1.8-test is q1_8_test in entity sets, $metadata, navigation links and the paths they name', async () => {
    const h = await harness();
    await publishForm(h, SANITIZE_FORM);
    await submit(h, 'odata_sanitize_repeat_name', `<data id="odata_sanitize_repeat_name">
      <q1.8-test><one>1</one><in.ner><two>x</two></in.ner></q1.8-test>
      <meta><instanceID>uuid:bf17f620-c56a-4533-8f89-da3f5c9bf37a</instanceID></meta>
    </data>`);
    const F = svc(h, 'odata_sanitize_repeat_name');
    const doc = await json<{ value: Array<{ name: string; url: string }> }>(await h.get(F, { as: 'bob' }));
    expect(doc.value.map((v) => [v.name, v.url])).toEqual([
      ['Submissions', 'Submissions'], ['Submissions.q1_8_test', 'Submissions.q1_8_test'], ['Submissions.q1_8_test.in_ner', 'Submissions.q1_8_test.in_ner'],
    ]);
    const metadata = await (await h.get(`${F}/$metadata`, { as: 'bob' })).text();
    expect(metadata).toContain('<NavigationProperty Name="q1_8_test"');
    expect(metadata).not.toContain('q1.8-test');

    const root = await feed<Record<string, string>>(h, `${F}/Submissions`);
    const link = root.value[0]!['q1_8_test@odata.navigationLink']!;
    expect(link).toBe("Submissions('uuid%3Abf17f620-c56a-4533-8f89-da3f5c9bf37a')/q1_8_test");
    const rows = await feed<Record<string, unknown>>(h, `${F}/${link}`);
    expect(rows.value).toEqual([{
      one: 1, __id: '13867da427f098fe217fc6f8f199b8ab07265043', '__Submissions-id': 'uuid:bf17f620-c56a-4533-8f89-da3f5c9bf37a',
      'in_ner@odata.navigationLink': `${link}('13867da427f098fe217fc6f8f199b8ab07265043')/in_ner`,
    }]);
    expect((await feed(h, `${F}/Submissions.q1_8_test`)).value).toEqual(rows.value);
    const inner = await feed<Record<string, unknown>>(h, `${F}/${rows.value[0]!['in_ner@odata.navigationLink'] as string}`);
    expect(inner.value.map((r) => r.two)).toEqual(['x']);
    expect(inner['@odata.context']).toMatch(/#Submissions\.q1_8_test\.in_ner$/);
    expect((await feed(h, `${F}/Submissions.q1_8_test.in_ner`)).value).toEqual(inner.value);
  });
});

describe('$filter on repeat tables', () => {
  test('__system/… without $root/Submissions/ is 501.5 (as Central); with it, and $root/Submissions/__id, the submission', async () => {
    const h = await withrepeat();
    const F = svc(h, 'withrepeat');
    const bad = await problem(await h.get(`${F}/Submissions.children.child?$filter=${encodeURIComponent("__system/reviewState eq 'rejected'")}`, { as: 'bob' }));
    expect(bad).toEqual({
      status: 501, code: 501.5,
      message: 'The given OData filter expression references fields not supported by this server: __system/reviewState at 0',
      details: { at: 0, text: '__system/reviewState' },
    });
    const alsoBad = await problem(await h.get(`${F}/Submissions.children.child?$filter=${encodeURIComponent('$root/Submissions/name eq 1')}`, { as: 'bob' }));
    expect(alsoBad.code).toBe(501.5);
    expect((await h.patch(`/v1/projects/${h.projectId}/forms/withrepeat/submissions/rthree`, { as: 'bob', body: { reviewState: 'rejected' } })).status).toBe(200);
    const rejected = await feed<{ name: string; '__Submissions-id': string }>(h, `${F}/Submissions.children.child?$filter=${encodeURIComponent("$root/Submissions/__system/reviewState eq 'rejected'")}`);
    expect(rejected.value.map((r) => [r['__Submissions-id'], r.name])).toEqual([['rthree', 'Candace']]);
    const byRoot = await feed<{ name: string; '__Submissions-id': string }>(h, `${F}/Submissions.children.child?$filter=${encodeURIComponent("$root/Submissions/__id eq 'rtwo'")}`);
    expect(byRoot.value.map((r) => [r['__Submissions-id'], r.name])).toEqual([['rtwo', 'Billy'], ['rtwo', 'Blaine']]);
    // A row's own __id (beyond Central) still names the repeat row.
    const own = rejected.value[0] as unknown as { __id: string };
    const mine = await feed<{ __id: string }>(h, `${F}/Submissions.children.child?$filter=${encodeURIComponent(`__id eq '${own.__id}'`)}`);
    expect(mine.value.map((r) => r.__id)).toEqual([own.__id]);
  });
});
