/**
 * XLSForm upload wiring (POST P/forms, POST F/draft with a spreadsheet; F.xlsx / F.xls,
 * F/draft.xlsx, F/versions/{v}.xlsx; itemsets.csv; 400.15 / 400.16), with the converter replaced
 * by a stand-in, as Central's own tests replace pyxform-http with a mock: what is tested here is
 * what the forms code does with a conversion's result, whatever state lib/xlsform is in. The
 * "spreadsheet" bytes are JSON telling the stand-in what to answer. xlsform.test.ts does the same
 * with the real converter and real spreadsheets.
 */
import { count, eq } from 'drizzle-orm';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { blobs, formAttachments, formDefs, forms } from '../../../drizzle/schema';
import { systemCtx } from '../../../lib/context';
import { purgeForms } from '../../../lib/forms';
import { harness, json, type Harness } from '../../helpers/harness';
import { createForm, expectProblem, extended, F, fixtureText, formXml, md5, P, publish, xmlHeaders, type Json } from './form-fixtures';

interface Fake {
  /** The XForm to answer; `{{id}}` is replaced by the fallback (a missing fallback is then an error). */
  xml?: string;
  warnings?: string[];
  itemsets?: string | null;
  /** Fail with this pyxform message instead. */
  error?: string;
  nonce?: string;
}

vi.mock('../../../lib/xlsform', async () => {
  const { XlsFormError } = await import('../../../lib/xlsform/types');
  return {
    XlsFormError,
    convertXlsForm: (bytes: Uint8Array, opts: { formIdFallback?: string | null } = {}) => {
      const fake = JSON.parse(new TextDecoder().decode(bytes)) as Fake;
      if (fake.error != null) throw new XlsFormError(fake.error, fake.warnings ?? []);
      let xml = fake.xml!;
      if (xml.includes('{{id}}')) {
        if (opts.formIdFallback == null) throw new XlsFormError('The form has no form_id and no fallback was given.');
        xml = xml.replaceAll('{{id}}', opts.formIdFallback.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;'));
      }
      return { xml, warnings: fake.warnings ?? [], itemsets: fake.itemsets ?? null };
    },
  };
});

const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const XLS = 'application/vnd.ms-excel';
const sheet = (fake: Fake) => new TextEncoder().encode(JSON.stringify(fake));
/** What pyxform makes of central-misc/simple.xlsx, with the form id left to the fallback. */
const simpleXml = () => fixtureText('central-misc/simple.xlsx.pyxform.xml').replace('<data id="simple">', '<data id="{{id}}">');
const simpleSheet = (extra: Fake = {}) => sheet({ xml: simpleXml(), ...extra });
const itemsetsXml = () => fixtureText('xlsform-generated/authored/external_choices_itemsets.xml');
const itemsetsCsv = () => fixtureText('xlsform-generated/authored/external_choices_itemsets.itemsets.csv');

function post(h: Harness, path: string, bytes: Uint8Array, opts: { type?: string; fallback?: string; as?: 'alice' | 'bob' | 'chelsea' } = {}) {
  return h.post(path, {
    as: opts.as ?? 'alice',
    body: bytes,
    headers: { 'Content-Type': opts.type ?? XLSX, ...(opts.fallback == null ? {} : { 'X-XlsForm-FormId-Fallback': opts.fallback }) },
  });
}

async function upload(h: Harness, bytes: Uint8Array, opts: { type?: string; fallback?: string; query?: string } = {}): Promise<Json> {
  const res = await post(h, `${P(h)}/forms${opts.query ?? ''}`, bytes, opts);
  expect(res.status, await res.clone().text()).toBe(200);
  return json(res);
}

const blobCount = async (h: Harness) => (await h.db.select({ n: count() }).from(blobs))[0]!.n;
const defOf = async (h: Harness, id: number) => (await h.db.select().from(formDefs).where(eq(formDefs.id, id)))[0]!;
const formRow = async (h: Harness, xmlFormId: string) => (await h.db.select().from(forms).where(eq(forms.xmlFormId, xmlFormId)))[0]!;
const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer());

afterEach(() => {
  vi.restoreAllMocks();
});

describe('POST P/forms with a spreadsheet', () => {
  test('.xlsx: converted, the XML goes the XML way; the spreadsheet is kept as a blob on the definition', async () => {
    const h = await harness();
    const bytes = simpleSheet({ nonce: 'a' });
    const body = await upload(h, bytes, { fallback: 'simple', query: '?publish=true' });
    const xml = simpleXml().replace('{{id}}', 'simple');
    expect(body).toMatchObject({ xmlFormId: 'simple', name: 'simple', version: '', hash: md5(xml), draftToken: null });
    expect(body.publishedAt).not.toBeNull();
    const def = await defOf(h, (await formRow(h, 'simple')).currentDefId!);
    expect(def.xml).toBe(xml);
    expect(def.xlsContentType).toBe(XLSX);
    const [blob] = await h.db.select().from(blobs).where(eq(blobs.id, def.xlsBlobId!));
    expect(blob).toMatchObject({ md5: md5(bytes), size: bytes.byteLength });
    expect(await h.deps.blobs.has(blob!.sha)).toBe(true);
    // F.xml is the converted XForm
    const res = await h.get(`${F(h, 'simple')}.xml`, { as: 'alice' });
    expect(await res.text()).toBe(xml);
    expect(await h.auditActions()).toEqual(['form.create']);
  });

  test('F.xlsx: the bytes as uploaded, Content-Type, Content-Disposition, ETag (quoted MD5) and 304; F.xls 404.1', async () => {
    const h = await harness();
    const bytes = simpleSheet({ nonce: 'b' });
    await upload(h, bytes, { fallback: 'simple', query: '?publish=true' });
    const res = await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(XLSX);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="simple.xlsx"; filename*=UTF-8\'\'simple.xlsx');
    expect(res.headers.get('etag')).toBe(`"${md5(bytes)}"`);
    expect(await bytesOf(res)).toEqual(bytes);
    const again = await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice', headers: { 'If-None-Match': `"${md5(bytes)}"` } });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(`"${md5(bytes)}"`);
    expect(await again.text()).toBe('');
    expect((await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice', headers: { 'If-None-Match': '"other"' } })).status).toBe(200);
    // the extension must match the uploaded type (Central's excelMimeTypes check)
    await expectProblem(await h.get(`${F(h, 'simple')}.xls`, { as: 'alice' }), 404.1);
  });

  test('.xls: served as F.xls with application/vnd.ms-excel, not as F.xlsx', async () => {
    const h = await harness();
    const bytes = simpleSheet({ nonce: 'c' });
    await upload(h, bytes, { type: XLS, fallback: 'simple', query: '?publish=true' });
    const res = await h.get(`${F(h, 'simple')}.xls`, { as: 'bob' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(XLS);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="simple.xls"; filename*=UTF-8\'\'simple.xls');
    expect(await bytesOf(res)).toEqual(bytes);
    await expectProblem(await h.get(`${F(h, 'simple')}.xlsx`, { as: 'bob' }), 404.1);
    const ext = await json(await h.get(F(h, 'simple'), { as: 'alice', headers: extended }));
    expect(ext.excelContentType).toBe(XLS);
  });

  test('a Content-Type with parameters still counts as a spreadsheet; the type is stored without them', async () => {
    const h = await harness();
    await upload(h, simpleSheet({ nonce: 'c2' }), { type: `${XLSX}; charset=binary`, fallback: 'simple' });
    const def = await defOf(h, (await formRow(h, 'simple')).draftDefId!);
    expect(def.xlsContentType).toBe(XLSX);
  });

  test('excelContentType in extended metadata (GET F, GET P/forms, versions); null for an XML form', async () => {
    const h = await harness();
    await upload(h, simpleSheet({ nonce: 'd' }), { fallback: 'simple', query: '?publish=true' });
    await createForm(h, formXml('withrepeat'), { publish: true });
    const one = await json(await h.get(F(h, 'simple'), { as: 'alice', headers: extended }));
    expect(one.excelContentType).toBe(XLSX);
    const list = await json<Json[]>(await h.get(`${P(h)}/forms`, { as: 'alice', headers: extended }));
    expect(Object.fromEntries(list.map((f) => [f.xmlFormId, f.excelContentType]))).toEqual({ simple: XLSX, withrepeat: null });
    const versions = await json<Json[]>(await h.get(`${F(h, 'simple')}/versions`, { as: 'alice', headers: extended }));
    expect(versions.map((v) => v.excelContentType)).toEqual([XLSX]);
    // not in the plain shape
    expect(await json(await h.get(F(h, 'simple'), { as: 'alice' }))).not.toHaveProperty('excelContentType');
  });

  test('an XML-created form has no spreadsheet: F.xlsx and F.xls 404.1', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    await expectProblem(await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, 'simple')}.xls`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, 'nope')}.xlsx`, { as: 'alice' }), 404.1);
  });

  test('a draft-only form has no published spreadsheet (F.xlsx 404.1) but F/draft.xlsx', async () => {
    const h = await harness();
    const bytes = simpleSheet({ nonce: 'e' });
    await upload(h, bytes, { fallback: 'simple' });
    await expectProblem(await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice' }), 404.1);
    const res = await h.get(`${F(h, 'simple')}/draft.xlsx`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(XLSX);
    expect(res.headers.get('etag')).toBe(`"${md5(bytes)}"`);
    expect(await bytesOf(res)).toEqual(bytes);
    expect((await h.get(`${F(h, 'simple')}/draft.xlsx`, { as: 'alice', headers: { 'If-None-Match': `"${md5(bytes)}"` } })).status).toBe(304);
    await expectProblem(await h.get(`${F(h, 'simple')}/draft.xls`, { as: 'alice' }), 404.1);
    const draft = await json(await h.get(`${F(h, 'simple')}/draft`, { as: 'alice', headers: extended }));
    expect(draft.excelContentType).toBe(XLSX);
  });
});

describe('X-XlsForm-FormId-Fallback', () => {
  test('plain, percent-encoded (a space, non-ASCII), and unused when the sheet names its form id', async () => {
    const h = await harness();
    expect((await upload(h, simpleSheet(), { fallback: 'plain_id' })).xmlFormId).toBe('plain_id');
    expect((await upload(h, simpleSheet(), { fallback: 'my%20form' })).xmlFormId).toBe('my form');
    expect((await upload(h, simpleSheet(), { fallback: encodeURIComponent('formulário_ñ') })).xmlFormId).toBe('formulário_ñ');
    const own = sheet({ xml: fixtureText('central-misc/simple.xlsx.pyxform.xml').replace('<data id="simple">', '<data id="own_id">') });
    expect((await upload(h, own, { fallback: 'ignored' })).xmlFormId).toBe('own_id');
    const list = await json<Json[]>(await h.get(`${P(h)}/forms`, { as: 'alice' }));
    expect(list.map((f) => f.xmlFormId).sort()).toEqual(['formulário_ñ', 'my form', 'own_id', 'plain_id']);
    const spaced = await h.get(`${P(h)}/forms/${encodeURIComponent('my form')}/draft.xlsx`, { as: 'alice' });
    expect(spaced.status).toBe(200);
    expect(spaced.headers.get('content-disposition')).toBe('attachment; filename="my form.xlsx"; filename*=UTF-8\'\'my%20form.xlsx');
  });

  test('a malformed percent-encoding: 400.6 naming the header; nothing stored', async () => {
    const h = await harness();
    const before = await blobCount(h);
    const body = await expectProblem(await post(h, `${P(h)}/forms`, simpleSheet(), { fallback: 'bad%E0%A4%A' }), 400.6);
    expect(body.details).toEqual({ field: 'X-XlsForm-FormId-Fallback', value: 'bad%E0%A4%A' });
    expect(await blobCount(h)).toBe(before);
    // an XML upload ignores the header
    const xml = await h.post(`${P(h)}/forms`, { as: 'alice', body: formXml('simple'), headers: { ...xmlHeaders, 'X-XlsForm-FormId-Fallback': '%' } });
    expect(xml.status).toBe(200);
  });

  test('no form id in the sheet and no header: the conversion fails, 400.15', async () => {
    const h = await harness();
    const body = await expectProblem(await post(h, `${P(h)}/forms`, simpleSheet()), 400.15);
    expect(body.details.error).toMatch(/form_id|fallback/);
  });

  test('an id ending in .xlsx / .xls / .xml: 400.8 as Central', async () => {
    const h = await harness();
    const body = await expectProblem(await post(h, `${P(h)}/forms`, simpleSheet(), { fallback: 'form.xlsx' }), 400.8);
    expect(body.details).toMatchObject({ field: 'formId', value: 'form.xlsx' });
    expect(body.message).toContain('The Form ID cannot end in .xls, .xlsx, or .xml.');
  });
});

describe('conversion errors and warnings', () => {
  test('an error: 400.15 with Central\'s message and { error, warnings }; nothing stored', async () => {
    const h = await harness();
    const before = await blobCount(h);
    const res = await post(h, `${P(h)}/forms`, sheet({ error: "Unknown question type 'frobnicate'.", warnings: ['w1'] }), { fallback: 'x' });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({
      message: 'The given XLSForm file was not valid. Please see the error details for more information.',
      code: 400.15,
      details: { error: "Unknown question type 'frobnicate'.", warnings: ['w1'] },
    });
    expect(text).toBe(JSON.stringify(JSON.parse(text))); // key order message, code, details{error, warnings}
    expect(await blobCount(h)).toBe(before);
    expect(await h.db.select().from(forms)).toEqual([]);
  });

  test('warnings: 400.16 { warnings: { xlsFormWarnings } } unless ignoreWarnings=true', async () => {
    const h = await harness();
    const bytes = simpleSheet({ warnings: ['[row : 2] a warning', '[row : 3] another'] });
    const body = await expectProblem(await post(h, `${P(h)}/forms`, bytes, { fallback: 'simple' }), 400.16);
    expect(body).toEqual({
      message: 'The Form is valid, but with warnings. Please check the warnings and if they are acceptable resubmit with ?ignoreWarnings=true',
      code: 400.16,
      details: { warnings: { xlsFormWarnings: ['[row : 2] a warning', '[row : 3] another'] } },
    });
    expect(await h.db.select().from(forms)).toEqual([]);
    const created = await upload(h, bytes, { fallback: 'simple', query: '?ignoreWarnings=true' });
    expect(created.xmlFormId).toBe('simple');
  });

  test('conversion and workflow warnings together: one warnings object (deletedFormExists)', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    expect((await h.delete(F(h, 'simple'), { as: 'alice' })).status).toBe(200);
    const body = await expectProblem(await post(h, `${P(h)}/forms`, simpleSheet({ warnings: ['w'] }), { fallback: 'simple' }), 400.16);
    expect(body.details).toEqual({
      warnings: { xlsFormWarnings: ['w'], workflowWarnings: [{ type: 'deletedFormExists', details: { xmlFormId: 'simple' } }] },
    });
    expect(Object.keys(body.details.warnings)).toEqual(['xlsFormWarnings', 'workflowWarnings']);
    await upload(h, simpleSheet({ warnings: ['w'] }), { fallback: 'simple', query: '?ignoreWarnings=true' });
  });

  test('a draft: conversion warnings and a Structure Change together; ignoreWarnings sets the draft', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'), { publish: true });
    const noAge = simpleXml().replace('<age/>', '').replace(/<bind nodeset="\/data\/age"[^>]*\/>/, '').replace(/<input ref="\/data\/age">.*?<\/input>/, '');
    const bytes = sheet({ xml: noAge, warnings: ['w'] });
    const body = await expectProblem(await post(h, `${F(h, 'simple')}/draft`, bytes, { fallback: 'simple' }), 400.16);
    expect(body.details).toEqual({ warnings: { xlsFormWarnings: ['w'], workflowWarnings: [{ type: 'structureChanged', details: ['age'] }] } });
    // warnings alone also fail a draft
    await expectProblem(await post(h, `${F(h, 'simple')}/draft`, simpleSheet({ warnings: ['w'] }), { fallback: 'simple' }), 400.16);
    const ok = await post(h, `${F(h, 'simple')}/draft?ignoreWarnings=true`, bytes, { fallback: 'simple' });
    expect(ok.status).toBe(200);
    expect(await json(ok)).toEqual({ success: true });
  });
});

describe('drafts and versions keep their spreadsheet', () => {
  test('POST F/draft with a spreadsheet: draft.xlsx is the new file, F.xlsx still the published one', async () => {
    const h = await harness();
    const first = simpleSheet({ nonce: 'v1' });
    const second = simpleSheet({ nonce: 'v2' });
    await upload(h, first, { fallback: 'simple', query: '?publish=true' });
    const res = await post(h, `${F(h, 'simple')}/draft`, second, { fallback: 'simple' });
    expect(res.status).toBe(200);
    expect(await bytesOf(await h.get(`${F(h, 'simple')}/draft.xlsx`, { as: 'alice' }))).toEqual(second);
    expect(await bytesOf(await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice' }))).toEqual(first);
    // a spreadsheet for another form id: 400.8
    await expectProblem(await post(h, `${F(h, 'simple')}/draft`, second, { fallback: 'other' }), 400.8);
  });

  test('the fallback header works for drafts too (percent-encoded)', async () => {
    const h = await harness();
    await upload(h, simpleSheet(), { fallback: encodeURIComponent('ñandú'), query: '?publish=true' });
    const res = await post(h, `/v1/projects/${h.projectId}/forms/${encodeURIComponent('ñandú')}/draft`, simpleSheet({ nonce: 'x' }), { fallback: encodeURIComponent('ñandú') });
    expect(res.status, await res.clone().text()).toBe(200);
  });

  test('copying the published definition (empty body) keeps its spreadsheet; publishing with ?version keeps it too', async () => {
    const h = await harness();
    const bytes = simpleSheet({ nonce: 'copy' });
    await upload(h, bytes, { type: XLS, fallback: 'simple', query: '?publish=true' });
    const copy = await h.post(`${F(h, 'simple')}/draft`, { as: 'alice' });
    expect(copy.status).toBe(200);
    const draft = await h.get(`${F(h, 'simple')}/draft.xls`, { as: 'alice' });
    expect(draft.status).toBe(200);
    expect(draft.headers.get('content-type')).toBe(XLS);
    expect(await bytesOf(draft)).toEqual(bytes);
    await publish(h, 'simple', '?version=new');
    expect(await bytesOf(await h.get(`${F(h, 'simple')}.xls`, { as: 'alice' }))).toEqual(bytes);
    // both versions serve it (F/versions/{v}.xls; the blank version is ___)
    expect(await bytesOf(await h.get(`${F(h, 'simple')}/versions/new.xls`, { as: 'alice' }))).toEqual(bytes);
    expect(await bytesOf(await h.get(`${F(h, 'simple')}/versions/___.xls`, { as: 'alice' }))).toEqual(bytes);
    await expectProblem(await h.get(`${F(h, 'simple')}/versions/new.xlsx`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, 'simple')}/versions/nope.xls`, { as: 'alice' }), 404.1);
    // one blob row for the one file
    const defs = await h.db.select().from(formDefs).where(eq(formDefs.formId, (await formRow(h, 'simple')).id));
    expect(new Set(defs.map((d) => d.xlsBlobId)).size).toBe(1);
  });

  test('a draft from XML has no spreadsheet: draft.xlsx 404.1 while F.xlsx stays', async () => {
    const h = await harness();
    await upload(h, simpleSheet({ nonce: 'xml-draft' }), { fallback: 'simple', query: '?publish=true' });
    const res = await h.post(`${F(h, 'simple')}/draft`, { as: 'alice', body: formXml('simple'), headers: xmlHeaders });
    expect(res.status).toBe(200);
    await expectProblem(await h.get(`${F(h, 'simple')}/draft.xlsx`, { as: 'alice' }), 404.1);
    expect((await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice' })).status).toBe(200);
    const ext = await json(await h.get(`${F(h, 'simple')}/draft`, { as: 'alice', headers: extended }));
    expect(ext.excelContentType).toBeNull();
  });
});

describe('itemsets.csv', () => {
  test('select_one_external: the CSV becomes the itemsets.csv attachment, already there (text/csv)', async () => {
    const h = await harness();
    await upload(h, sheet({ xml: itemsetsXml(), itemsets: itemsetsCsv() }), { query: '?publish=true' });
    const id = 'external_choices_itemsets';
    const list = await json<Json[]>(await h.get(`${F(h, id)}/attachments`, { as: 'alice' }));
    const csv = new TextEncoder().encode(itemsetsCsv());
    expect(list).toEqual([{
      name: 'itemsets.csv', type: 'file', hash: md5(csv), exists: true, blobExists: true, datasetExists: false, updatedAt: null, size: csv.byteLength,
    }]);
    const res = await h.get(`${F(h, id)}/attachments/itemsets.csv`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv');
    expect(await res.text()).toBe(itemsetsCsv());
  });

  test('not expected by the form: ignored, as Central', async () => {
    const h = await harness();
    await upload(h, simpleSheet({ itemsets: 'a,b\n1,2' }), { fallback: 'simple' });
    expect(await json(await h.get(`${F(h, 'simple')}/draft/attachments`, { as: 'alice' }))).toEqual([]);
    expect(await h.db.select().from(formAttachments)).toEqual([]);
  });

  test('a new draft\'s own itemsets win over the carried ones; a copy carries them', async () => {
    const h = await harness();
    const id = 'external_choices_itemsets';
    await upload(h, sheet({ xml: itemsetsXml(), itemsets: 'old\n1' }), { query: '?publish=true' });
    expect((await post(h, `${F(h, id)}/draft`, sheet({ xml: itemsetsXml(), itemsets: 'new\n2' }))).status).toBe(200);
    expect(await (await h.get(`${F(h, id)}/draft/attachments/itemsets.csv`, { as: 'alice' })).text()).toBe('new\n2');
    expect(await (await h.get(`${F(h, id)}/attachments/itemsets.csv`, { as: 'alice' })).text()).toBe('old\n1');
    expect((await h.post(`${F(h, id)}/draft`, { as: 'alice' })).status).toBe(200); // copy of the published one replaces the draft
    expect(await (await h.get(`${F(h, id)}/draft/attachments/itemsets.csv`, { as: 'alice' })).text()).toBe('new\n2');
  });
});

describe('rollback and purge', () => {
  test('409.3 (a live form has that id): no blob row, no stored object', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    const before = await blobCount(h);
    const bytes = simpleSheet({ nonce: `dup-${Math.random()}` });
    await expectProblem(await post(h, `${P(h)}/forms`, bytes, { fallback: 'simple' }), 409.3);
    expect(await blobCount(h)).toBe(before);
    const { sha256 } = await import('./form-fixtures');
    expect(await h.deps.blobs.has(sha256(bytes))).toBe(false);
  });

  test('a failure after the spreadsheet was stored: the transaction and the stored object are rolled back', async () => {
    const h = await harness();
    const before = await blobCount(h);
    const bytes = sheet({ xml: itemsetsXml(), itemsets: `x\n${Math.random()}`, nonce: `${Math.random()}` });
    const put = h.deps.blobs.put.bind(h.deps.blobs);
    let calls = 0;
    vi.spyOn(h.deps.blobs, 'put').mockImplementation(async (key, body, type) => {
      calls += 1;
      if (calls === 2) throw new Error('store down'); // the itemsets.csv write, after the spreadsheet's
      return put(key, body, type);
    });
    const res = await post(h, `${P(h)}/forms`, bytes);
    expect(res.status).toBe(500);
    expect(calls).toBe(2);
    expect(await blobCount(h)).toBe(before);
    const { sha256 } = await import('./form-fixtures');
    expect(await h.deps.blobs.has(sha256(bytes))).toBe(false);
    expect(await h.db.select().from(forms)).toEqual([]);
  });

  test('purge: a purged form\'s spreadsheet blob goes; one still referenced by another form stays', async () => {
    const h = await harness();
    const shared = simpleSheet({ nonce: `shared-${Math.random()}` });
    const own = simpleSheet({ nonce: `own-${Math.random()}` });
    await upload(h, shared, { fallback: 'keep', query: '?publish=true' });
    await upload(h, shared, { fallback: 'doomed_a', query: '?publish=true' });
    await upload(h, own, { fallback: 'doomed_b', query: '?publish=true' });
    const { sha256 } = await import('./form-fixtures');
    for (const id of ['doomed_a', 'doomed_b']) expect((await h.delete(F(h, id), { as: 'alice' })).status).toBe(200);
    expect(await purgeForms(systemCtx(h.deps), { force: true })).toHaveLength(2);
    expect(await h.db.select().from(blobs).where(eq(blobs.sha, sha256(own)))).toEqual([]);
    expect(await h.deps.blobs.has(sha256(own))).toBe(false);
    expect(await h.db.select().from(blobs).where(eq(blobs.sha, sha256(shared)))).toHaveLength(1);
    expect(await bytesOf(await h.get(`${F(h, 'keep')}.xlsx`, { as: 'alice' }))).toEqual(shared);
  });
});
