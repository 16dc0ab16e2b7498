/**
 * XLSForm upload with the real converter (lib/xlsform) and real spreadsheets from
 * /work/shared/fixtures: POST P/forms and POST F/draft with .xlsx / .xls bodies,
 * X-XlsForm-FormId-Fallback, 400.15 / 400.16 as Central answers them, F.xlsx / F.xls /
 * F/draft.xlsx / F/versions/{v}.xlsx downloads (bytes, ETag, 304) and who may make them,
 * excelContentType, and itemsets.csv (shared/spec/interface.md, Forms and Draft Forms rows;
 * central-api.yaml createForm, retrieveFormXls, retrieveDraftFormXls, retrieveFormVersionXls).
 * xlsform-wiring.test.ts covers the rest of the wiring (fallback decoding, combined warnings, drafts and
 * versions keeping their spreadsheet, itemsets, rollback and purge) with spreadsheets built in memory.
 */
import { count } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { blobs, forms } from '../../../drizzle/schema';
import { harness, json, type As, type Harness } from '../../helpers/harness';
import { appUserFor } from '../../helpers/submitting';
import {
  createForm, expectProblem, extended, F, fixtureBytes, fixtureText, formXml, md5, P, postSpreadsheet, publish, sha256,
  uploadSpreadsheet, XLS, XLSX, type Json,
} from './form-fixtures';
import { userWithRole } from '../../helpers/roles';

const AUTHORED = 'xlsform-generated/authored';

const simpleXlsx = () => fixtureBytes('central-misc/simple.xlsx');
const widgetsXls = () => fixtureBytes('xlsform/widgets.xls');
const lines = (path: string) => fixtureText(path).split('\n').filter((l) => l.trim() !== '');



const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer());
const blobCount = async (h: Harness) => (await h.db.select({ n: count() }).from(blobs))[0]!.n;

describe('POST P/forms with an XLSForm', () => {
  test('central-misc/simple.xlsx, published: the fields pyxform gives; F.xlsx is the upload byte for byte', async () => {
    const h = await harness();
    const bytes = simpleXlsx();
    const body = await uploadSpreadsheet(h, bytes, { fallback: 'simple', query: '?publish=true' });
    expect(body).toMatchObject({ projectId: h.projectId, xmlFormId: 'simple', version: '', draftToken: null });
    expect(body.publishedAt).not.toBeNull();
    // the same fields as pyxform's own conversion of the file (simple.xlsx.pyxform.xml)
    const expected = fixtureText('central-misc/simple.xlsx.pyxform.xml').replace('<data id="simple">', '<data id="simple_pyxform">');
    await createForm(h, expected, { publish: true });
    const fields = await json(await h.get(`${F(h, 'simple')}/fields`, { as: 'alice' }));
    expect(fields).toEqual(await json(await h.get(`${F(h, 'simple_pyxform')}/fields`, { as: 'alice' })));
    expect(body.name).toBe('simple');

    const res = await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(XLSX);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="simple.xlsx"; filename*=UTF-8\'\'simple.xlsx');
    expect(res.headers.get('etag')).toBe(`"${md5(bytes)}"`);
    expect(await bytesOf(res)).toEqual(bytes);
    const cached = await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice', headers: { 'If-None-Match': `"${md5(bytes)}"` } });
    expect(cached.status).toBe(304);
    expect(await cached.text()).toBe('');
    await expectProblem(await h.get(`${F(h, 'simple')}.xls`, { as: 'alice' }), 404.1);

    // the XForm it became is what F.xml and the formList hash serve
    const xml = await (await h.get(`${F(h, 'simple')}.xml`, { as: 'alice' })).text();
    expect(body.hash).toBe(md5(xml));
    expect(await h.auditActions()).toEqual(['form.create', 'form.update.publish', 'form.create', 'form.update.publish']);
  });

  test('as a draft: F/draft.xlsx (ETag, 304), no F.xlsx until published; then F.xlsx', async () => {
    const h = await harness();
    const bytes = simpleXlsx();
    const body = await uploadSpreadsheet(h, bytes, { fallback: 'simple' });
    expect(body.publishedAt).toBeNull();
    expect(typeof body.draftToken).toBe('string');
    await expectProblem(await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice' }), 404.1);
    const res = await h.get(`${F(h, 'simple')}/draft.xlsx`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(XLSX);
    expect(res.headers.get('etag')).toBe(`"${md5(bytes)}"`);
    expect(await bytesOf(res)).toEqual(bytes);
    expect((await h.get(`${F(h, 'simple')}/draft.xlsx`, { as: 'bob', headers: { 'If-None-Match': `"${md5(bytes)}"` } })).status).toBe(304);
    await publish(h, 'simple');
    expect(await bytesOf(await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice' }))).toEqual(bytes);
    expect(await bytesOf(await h.get(`${F(h, 'simple')}/versions/___.xlsx`, { as: 'alice' }))).toEqual(bytes);
  });

  test('POST F/draft with a spreadsheet; an empty POST F/draft copies the published one with its spreadsheet', async () => {
    const h = await harness();
    await uploadSpreadsheet(h, simpleXlsx(), { fallback: 'simple', query: '?publish=true' });
    const res = await postSpreadsheet(h, `${F(h, 'simple')}/draft`, simpleXlsx(), { fallback: 'simple' });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await json(res)).toEqual({ success: true });
    expect(await bytesOf(await h.get(`${F(h, 'simple')}/draft.xlsx`, { as: 'alice' }))).toEqual(simpleXlsx());
    expect((await h.delete(`${F(h, 'simple')}/draft`, { as: 'alice' })).status).toBe(200);
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'alice' })).status).toBe(200);
    expect(await bytesOf(await h.get(`${F(h, 'simple')}/draft.xlsx`, { as: 'alice' }))).toEqual(simpleXlsx());
  });

  test('.xls (xlsform/widgets.xls): served back as F.xls with application/vnd.ms-excel', async () => {
    const h = await harness();
    const bytes = widgetsXls();
    const body = await uploadSpreadsheet(h, bytes, { type: XLS, fallback: 'widgets', query: '?publish=true&ignoreWarnings=true' });
    expect(body.xmlFormId).toBe('widgets');
    const res = await h.get(`${F(h, 'widgets')}.xls`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(XLS);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="widgets.xls"; filename*=UTF-8\'\'widgets.xls');
    expect(res.headers.get('etag')).toBe(`"${md5(bytes)}"`);
    expect(await bytesOf(res)).toEqual(bytes);
    await expectProblem(await h.get(`${F(h, 'widgets')}.xlsx`, { as: 'alice' }), 404.1);
    const ext = await json(await h.get(F(h, 'widgets'), { as: 'alice', headers: extended }));
    expect(ext.excelContentType).toBe(XLS);
  });

  test('X-XlsForm-FormId-Fallback: plain, percent-encoded (a space, non-ASCII); malformed 400.6; the sheet\'s own form_id wins', async () => {
    const h = await harness();
    expect((await uploadSpreadsheet(h, simpleXlsx(), { fallback: 'plain_id' })).xmlFormId).toBe('plain_id');
    expect((await uploadSpreadsheet(h, simpleXlsx(), { fallback: encodeURIComponent('enquête ménage') })).xmlFormId).toBe('enquête ménage');
    expect((await uploadSpreadsheet(h, simpleXlsx(), { fallback: '%E8%AA%BF%E6%9F%BB' })).xmlFormId).toBe('調査');
    const bad = await expectProblem(await postSpreadsheet(h, `${P(h)}/forms`, simpleXlsx(), { fallback: '%E8%AA' }), 400.6);
    expect(bad.details).toEqual({ field: 'X-XlsForm-FormId-Fallback', value: '%E8%AA' });
    // geo_types.xlsx names form_id geo_types in its settings sheet
    expect((await uploadSpreadsheet(h, fixtureBytes(`${AUTHORED}/geo_types.xlsx`), { fallback: 'unused' })).xmlFormId).toBe('geo_types');
    const list = await json<Json[]>(await h.get(`${P(h)}/forms`, { as: 'alice' }));
    expect(list.map((f) => f.xmlFormId).sort()).toEqual(['enquête ménage', 'geo_types', 'plain_id', '調査'].sort());
  });

  test('no form_id in the sheet and no fallback header: 400.15, nothing stored', async () => {
    const h = await harness();
    const before = await blobCount(h);
    const body = await expectProblem(await postSpreadsheet(h, `${P(h)}/forms`, simpleXlsx()), 400.15);
    expect(typeof body.details.error).toBe('string');
    expect(await blobCount(h)).toBe(before);
  });

  test.each(['invalid_unknown_type', 'invalid_bad_reference', 'invalid_missing_choices', 'invalid_unmatched_group'])(
    '%s.xlsx: 400.15 with Central\'s message and pyxform\'s error; nothing stored',
    async (name) => {
      const h = await harness();
      const before = await blobCount(h);
      const res = await postSpreadsheet(h, `${P(h)}/forms`, fixtureBytes(`${AUTHORED}/${name}.xlsx`), { fallback: name });
      const text = await res.text();
      expect(res.status, text).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = JSON.parse(text);
      expect(body).toEqual({
        message: 'The given XLSForm file was not valid. Please see the error details for more information.',
        code: 400.15,
        details: { error: fixtureText(`${AUTHORED}/${name}.error.txt`).trim().replace(/^PyXFormError: /, ''), warnings: expect.any(Array) },
      });
      expect(Object.keys(body)).toEqual(['message', 'code', 'details']);
      expect(Object.keys(body.details)).toEqual(['error', 'warnings']);
      expect(await blobCount(h)).toBe(before);
      expect(await h.db.select().from(forms)).toEqual([]);
    },
  );

  test('conversion warnings (media_and_audit.xlsx): 400.16 { warnings: { xlsFormWarnings } }; ignoreWarnings=true creates it', async () => {
    const h = await harness();
    const bytes = fixtureBytes(`${AUTHORED}/media_and_audit.xlsx`);
    const res = await postSpreadsheet(h, `${P(h)}/forms`, bytes);
    const text = await res.text();
    expect(res.status, text).toBe(400);
    expect(JSON.parse(text)).toEqual({
      message: 'The Form is valid, but with warnings. Please check the warnings and if they are acceptable resubmit with ?ignoreWarnings=true',
      code: 400.16,
      details: { warnings: { xlsFormWarnings: lines(`${AUTHORED}/media_and_audit.warnings.txt`) } },
    });
    expect(await h.db.select().from(forms)).toEqual([]);
    const body = await uploadSpreadsheet(h, bytes, { query: '?ignoreWarnings=true' });
    expect(body).toMatchObject({ xmlFormId: 'media_audit', version: '5' });
    expect((await h.get(`${F(h, 'media_audit')}/draft.xlsx`, { as: 'alice' })).status).toBe(200);
  });

  test('conversion warnings and a form in the Trash: xlsFormWarnings and workflowWarnings in one object', async () => {
    const h = await harness();
    const bytes = fixtureBytes(`${AUTHORED}/media_and_audit.xlsx`);
    await uploadSpreadsheet(h, bytes, { query: '?ignoreWarnings=true' });
    expect((await h.delete(F(h, 'media_audit'), { as: 'alice' })).status).toBe(200);
    const body = await expectProblem(await postSpreadsheet(h, `${P(h)}/forms`, bytes), 400.16);
    expect(body.details).toEqual({
      warnings: {
        xlsFormWarnings: lines(`${AUTHORED}/media_and_audit.warnings.txt`),
        workflowWarnings: [{ type: 'deletedFormExists', details: { xmlFormId: 'media_audit' } }],
      },
    });
  });

  test('an XML-created form: F.xlsx, F.xls and F/draft.xlsx 404.1; excelContentType null', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await expectProblem(await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, 'simple')}.xls`, { as: 'alice' }), 404.1);
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'alice' })).status).toBe(200);
    await expectProblem(await h.get(`${F(h, 'simple')}/draft.xlsx`, { as: 'alice' }), 404.1);
    const ext = await json(await h.get(F(h, 'simple'), { as: 'alice', headers: extended }));
    expect(ext).toHaveProperty('excelContentType', null);
  });

  test('excelContentType in X-Extended-Metadata form JSON (GET F, GET P/forms, draft, versions)', async () => {
    const h = await harness();
    await uploadSpreadsheet(h, simpleXlsx(), { fallback: 'simple', query: '?publish=true' });
    expect((await json(await h.get(F(h, 'simple'), { as: 'alice', headers: extended }))).excelContentType).toBe(XLSX);
    const list = await json<Json[]>(await h.get(`${P(h)}/forms`, { as: 'alice', headers: extended }));
    expect(list.map((f) => f.excelContentType)).toEqual([XLSX]);
    expect((await h.post(`${F(h, 'simple')}/draft`, { as: 'alice' })).status).toBe(200);
    expect((await json(await h.get(`${F(h, 'simple')}/draft`, { as: 'alice', headers: extended }))).excelContentType).toBe(XLSX);
    const versions = await json<Json[]>(await h.get(`${F(h, 'simple')}/versions`, { as: 'alice', headers: extended }));
    expect(versions.map((v) => v.excelContentType)).toEqual([XLSX]);
  });

  test('select_one_external (external_choices_itemsets.xlsx): itemsets.csv is an attachment already there, downloadable', async () => {
    const h = await harness();
    const id = 'external_choices_itemsets';
    await uploadSpreadsheet(h, fixtureBytes(`${AUTHORED}/${id}.xlsx`), { query: '?publish=true' });
    const csv = fixtureBytes(`${AUTHORED}/${id}.itemsets.csv`);
    const list = await json<Json[]>(await h.get(`${F(h, id)}/attachments`, { as: 'alice' }));
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ name: 'itemsets.csv', type: 'file', exists: true, blobExists: true, datasetExists: false });
    const res = await h.get(`${F(h, id)}/attachments/itemsets.csv`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const got = await bytesOf(res);
    // pyxform's CSV (quoting and line ends may differ only if the converter chose so: compare rows)
    const rows = (t: string) => t.trim().split(/\r?\n/);
    expect(rows(new TextDecoder().decode(got))).toEqual(rows(new TextDecoder().decode(csv)));
    expect(list[0].hash).toBe(md5(got));
    expect(res.headers.get('etag')).toBe(`"${md5(got)}"`);
    // the manifest lists it, so Collect downloads it
    const au = await appUserFor(h, id, 'Itemsets tablet');
    const manifest = await h.get(`${F(h, id)}/manifest`, { as: { key: au.token }, headers: { 'X-OpenRosa-Version': '1.0' } });
    expect(await manifest.text()).toContain('<filename>itemsets.csv</filename>');
  });

  test('a failing upload leaves no blob rows or stored objects (409.3: a live form has that id)', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    const before = await blobCount(h);
    const bytes = simpleXlsx();
    const stored = await h.deps.blobs.has(sha256(bytes));
    await expectProblem(await postSpreadsheet(h, `${P(h)}/forms`, bytes, { fallback: 'simple' }), 409.3);
    expect(await blobCount(h)).toBe(before);
    expect(await h.deps.blobs.has(sha256(bytes))).toBe(stored);
    // and a bad draft upload (another form id) stores nothing either
    await expectProblem(await postSpreadsheet(h, `${F(h, 'simple')}/draft`, bytes, { fallback: 'other' }), 400.8);
    expect(await blobCount(h)).toBe(before);
  });
});

// ---------------------------------------------------------------------------------------------
// Who may download the spreadsheet: as F.xml (form.read, or open_form.read while not closed);
// drafts need form.update; versions as F.xml (Central reads every version resource with canReadForm).

type Caller = 'alice' | 'bob' | 'viewer' | 'collector' | 'appUser' | 'otherAppUser' | 'chelsea' | 'anonymous';


const matrix: Array<[string, string, Record<Caller, number>]> = [
  ['F.xlsx', '.xlsx', { alice: 200, bob: 200, viewer: 200, collector: 200, appUser: 200, otherAppUser: 403, chelsea: 403, anonymous: 401 }],
  ['F/draft.xlsx', '/draft.xlsx', { alice: 200, bob: 200, viewer: 403, collector: 403, appUser: 403, otherAppUser: 403, chelsea: 403, anonymous: 401 }],
  ['F/versions/___.xlsx', '/versions/___.xlsx', { alice: 200, bob: 200, viewer: 200, collector: 200, appUser: 200, otherAppUser: 403, chelsea: 403, anonymous: 401 }],
];

describe('rights on the spreadsheet downloads', () => {
  test.each(matrix)('%s', async (_label, suffix, expectations) => {
    const h = await harness();
    await uploadSpreadsheet(h, simpleXlsx(), { fallback: 'simple', query: '?publish=true' });
    expect((await postSpreadsheet(h, `${F(h, 'simple')}/draft`, simpleXlsx(), { fallback: 'simple' })).status).toBe(200);
    const au = await appUserFor(h, 'simple', 'Matrix tablet');
    const other = await json<{ token: string }>(await h.post(`${P(h)}/app-users`, { as: 'bob', body: { displayName: 'Unassigned' } }));
    const callers: Record<Caller, As> = {
      alice: 'alice',
      bob: 'bob',
      viewer: await userWithRole(h, 'viewer', 'viola@getodk.org'),
      collector: await userWithRole(h, 'formfill', 'dora@getodk.org'),
      appUser: { key: au.token },
      otherAppUser: { key: other.token },
      chelsea: 'chelsea',
      anonymous: 'anonymous',
    };
    for (const [caller, as] of Object.entries(callers) as Array<[Caller, As]>) {
      const res = await h.get(`${F(h, 'simple')}${suffix}`, { as });
      const status = expectations[caller];
      expect(res.status, `${caller}: ${await res.clone().text().catch(() => '')}`).toBe(status);
      if (status === 200) expect(await bytesOf(res)).toEqual(simpleXlsx());
      else expect((await json(res)).code).toBe({ 401: 401.2, 403: 403.1 }[status]);
      // the same answer as the XML of that definition
      const xml = await h.get(`${F(h, 'simple')}${suffix.replace(/\.xlsx$/, '.xml')}`, { as });
      expect(xml.status, `${caller} .xml`).toBe(status);
    }
    // unknown form: 404.1 before any rights check
    await expectProblem(await h.get(`${F(h, 'nope')}${suffix}`, { as: 'chelsea' }), 404.1);
  });

  test('a closed form: App Users and Data Collectors lose F.xlsx, as F.xml', async () => {
    const h = await harness();
    await uploadSpreadsheet(h, simpleXlsx(), { fallback: 'simple', query: '?publish=true' });
    const au = await appUserFor(h, 'simple', 'Closed tablet');
    expect((await h.patch(F(h, 'simple'), { as: 'alice', body: { state: 'closed' } })).status).toBe(200);
    await expectProblem(await h.get(`${F(h, 'simple')}.xlsx`, { as: { key: au.token } }), 403.1);
    expect((await h.get(`${F(h, 'simple')}.xlsx`, { as: 'bob' })).status).toBe(200);
  });
});
