/**
 * XLSForm upload wiring (POST P/forms, POST F/draft with a spreadsheet; F.xlsx / F.xls,
 * F/draft.xlsx, F/versions/{v}.xls; itemsets.csv; 400.6 / 400.8 / 400.15 / 400.16; rollback of a
 * stored spreadsheet; purge), with the real converter (lib/xlsform) and real spreadsheets built in
 * memory (test/helpers/xlsform-sheets.ts), so each case names exactly the sheet it needs. What is
 * expected of the conversion itself is computed by convertXlsForm on the same bytes.
 * xlsform.test.ts covers the fixture spreadsheets from /work/shared (conversion results, 400.15
 * for each invalid fixture, 409.3, the .xls fixture, who may download); this file covers what the
 * forms code does with a conversion's result.
 */
import { createHash } from 'node:crypto';
import { count, eq } from 'drizzle-orm';
import { describe, expect, test } from 'vitest';
import { blobs, formAttachments, formDefs, forms } from '../../../drizzle/schema';
import { systemCtx } from '../../../lib/context';
import { purgeForms } from '../../../lib/forms';
import { convertXlsForm, XlsFormError } from '../../../lib/xlsform';
import { harness, json, type Harness } from '../../helpers/harness';
import { workbook, type Rows, type Sheets } from '../../helpers/xlsform-sheets';
import {
  createForm, expectProblem, extended, F, formXml, md5, P, postSpreadsheet, publish, sha256, uploadSpreadsheet, XLS, XLSX, xmlHeaders, type Json,
} from './form-fixtures';

const MAX_PIXELS = /^\[row : \d+\] Use the max-pixels parameter to speed up submission sending and save storage space\./;

interface TextForm {
  /** settings form_id; none (the default) leaves the id to X-XlsForm-FormId-Fallback. */
  formId?: string;
  /** settings version; none gives the blank version. */
  version?: string;
  /** settings form_title. */
  title?: string;
  /** The text question's label: vary it for other bytes with the same shape. */
  label?: string;
  /** Adds an integer question `age`. */
  age?: boolean;
  /** Adds an image question without max-pixels (a pyxform warning). */
  image?: boolean;
  /** An image file for the text question's label (an expected attachment). */
  media?: string;
  book?: 'xlsx' | 'xls';
}

/** A survey with one text question `name` (and what `o` adds), with a settings sheet when asked. */
function textForm(o: TextForm = {}): Uint8Array {
  const survey: Rows = o.media == null
    ? [['type', 'name', 'label'], ['text', 'name', o.label ?? 'Your name']]
    : [['type', 'name', 'label', 'image'], ['text', 'name', o.label ?? 'Your name', o.media]];
  if (o.age) survey.push(['integer', 'age', 'Your age']);
  if (o.image) survey.push(['image', 'photo', 'A photo']);
  const settings: Array<[string, string]> = [];
  if (o.formId != null) settings.push(['form_id', o.formId]);
  if (o.version != null) settings.push(['version', o.version]);
  if (o.title != null) settings.push(['form_title', o.title]);
  const sheets: Sheets = { survey };
  if (settings.length > 0) sheets.settings = [settings.map((s) => s[0]), settings.map((s) => s[1])];
  return workbook(sheets, o.book ?? 'xlsx');
}

/** select_one state, then select_one_external lga filtered by it; `lgas` are the external_choices rows [name, label, state]. */
function externalForm(lgas: Array<[string, string, string]>): Uint8Array {
  return workbook({
    survey: [['type', 'name', 'label', 'choice_filter'], ['select_one state', 'state', 'State', null], ['select_one_external lga', 'lga', 'LGA', 'state=${state}']],
    choices: [['list_name', 'name', 'label'], ['state', 'kano', 'Kano'], ['state', 'lagos', 'Lagos']],
    external_choices: [['list_name', 'name', 'label', 'state'], ...lgas.map(([name, label, state]) => ['lga', name, label, state])],
    settings: [['form_id', 'form_title'], ['ext_wiring', 'External choices']],
  });
}

/** What the converter makes of `bytes` (it must convert). */
const converted = (bytes: Uint8Array, formIdFallback: string | null = null) => convertXlsForm(bytes, { formIdFallback });

/** The `{ error, warnings }` the converter fails `bytes` with (it must fail). */
function conversionError(bytes: Uint8Array, formIdFallback: string | null = null): { error: string; warnings: string[] } {
  try {
    convertXlsForm(bytes, { formIdFallback });
  } catch (err) {
    if (err instanceof XlsFormError) return { error: err.message, warnings: err.warnings };
    throw err;
  }
  throw new Error('the spreadsheet converted');
}

/** A deterministic string of `n` base64url characters that PostgreSQL cannot compress. */
function incompressible(n: number): string {
  let s = '';
  for (let i = 0; s.length < n; i += 1) s += createHash('sha256').update(`fieldbase-${i}`).digest('base64url');
  return s.slice(0, n);
}



const blobCount = async (h: Harness) => (await h.db.select({ n: count() }).from(blobs))[0]!.n;
const defCount = async (h: Harness) => (await h.db.select({ n: count() }).from(formDefs))[0]!.n;
const blobRows = (h: Harness, sha: string) => h.db.select().from(blobs).where(eq(blobs.sha, sha));
const defOf = async (h: Harness, id: number) => (await h.db.select().from(formDefs).where(eq(formDefs.id, id)))[0]!;
const formRow = async (h: Harness, xmlFormId: string) => (await h.db.select().from(forms).where(eq(forms.xmlFormId, xmlFormId)))[0];
const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer());

describe('POST P/forms with a spreadsheet', () => {
  test('.xlsx: converted, the XML goes the XML way; the spreadsheet is kept as a blob on the definition', async () => {
    const h = await harness();
    const bytes = textForm({ formId: 'wiring', version: '1', title: 'Wiring' });
    const body = await uploadSpreadsheet(h, bytes, { fallback: 'ignored', query: '?publish=true' });
    const { xml } = converted(bytes);
    expect(body).toMatchObject({ xmlFormId: 'wiring', name: 'Wiring', version: '1', hash: md5(xml), draftToken: null });
    expect(body.publishedAt).not.toBeNull();
    const def = await defOf(h, (await formRow(h, 'wiring'))!.currentDefId!);
    expect(def.xml).toBe(xml);
    expect(def.xlsContentType).toBe(XLSX);
    const [blob] = await h.db.select().from(blobs).where(eq(blobs.id, def.xlsBlobId!));
    expect(blob).toMatchObject({ sha: sha256(bytes), md5: md5(bytes), size: bytes.byteLength });
    expect(await h.deps.blobs.has(blob!.sha)).toBe(true);
    // F.xml is the converted XForm
    expect(await (await h.get(`${F(h, 'wiring')}.xml`, { as: 'alice' })).text()).toBe(xml);
    // F.xlsx: the upload; a 304 keeps the ETag; another ETag gets the file
    const res = await h.get(`${F(h, 'wiring')}.xlsx`, { as: 'alice' });
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="wiring.xlsx"; filename*=UTF-8\'\'wiring.xlsx');
    expect(await bytesOf(res)).toEqual(bytes);
    const again = await h.get(`${F(h, 'wiring')}.xlsx`, { as: 'alice', headers: { 'If-None-Match': `"${md5(bytes)}"` } });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(`"${md5(bytes)}"`);
    expect((await h.get(`${F(h, 'wiring')}.xlsx`, { as: 'alice', headers: { 'If-None-Match': '"other"' } })).status).toBe(200);
    expect(await h.auditActions()).toEqual(['form.create', 'form.update.publish']);
  });

  test('a Content-Type with parameters still counts as a spreadsheet; the type is stored without them', async () => {
    const h = await harness();
    await uploadSpreadsheet(h, textForm(), { type: `${XLSX}; charset=binary`, fallback: 'wiring' });
    const def = await defOf(h, (await formRow(h, 'wiring'))!.draftDefId!);
    expect(def.xlsContentType).toBe(XLSX);
    // a draft-only .xlsx form: F/draft.xlsx, but neither F.xlsx nor F/draft.xls
    expect((await h.get(`${F(h, 'wiring')}/draft.xlsx`, { as: 'alice' })).status).toBe(200);
    await expectProblem(await h.get(`${F(h, 'wiring')}.xlsx`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, 'wiring')}/draft.xls`, { as: 'alice' }), 404.1);
  });

  test('excelContentType in extended metadata (GET F, GET P/forms, versions); null for an XML form; not in the plain shape', async () => {
    const h = await harness();
    await uploadSpreadsheet(h, textForm({ formId: 'wiring' }), { query: '?publish=true' });
    await createForm(h, formXml('withrepeat'), { publish: true });
    expect((await json(await h.get(F(h, 'wiring'), { as: 'alice', headers: extended }))).excelContentType).toBe(XLSX);
    const list = await json<Json[]>(await h.get(`${P(h)}/forms`, { as: 'alice', headers: extended }));
    expect(Object.fromEntries(list.map((f) => [f.xmlFormId, f.excelContentType]))).toEqual({ wiring: XLSX, withrepeat: null });
    const versions = await json<Json[]>(await h.get(`${F(h, 'wiring')}/versions`, { as: 'alice', headers: extended }));
    expect(versions.map((v) => v.excelContentType)).toEqual([XLSX]);
    expect(await json(await h.get(F(h, 'wiring'), { as: 'alice' }))).not.toHaveProperty('excelContentType');
  });
});

describe('X-XlsForm-FormId-Fallback', () => {
  test('percent-encoded with a space: the form id, and the download\'s file name', async () => {
    const h = await harness();
    expect((await uploadSpreadsheet(h, textForm(), { fallback: 'my%20form' })).xmlFormId).toBe('my form');
    const res = await h.get(`${P(h)}/forms/${encodeURIComponent('my form')}/draft.xlsx`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="my form.xlsx"; filename*=UTF-8\'\'my%20form.xlsx');
  });

  test('a malformed percent-encoding: 400.6 naming the header; nothing stored; an XML upload ignores the header', async () => {
    const h = await harness();
    const before = await blobCount(h);
    const body = await expectProblem(await postSpreadsheet(h, `${P(h)}/forms`, textForm(), { fallback: 'bad%E0%A4%A' }), 400.6);
    expect(body.details).toEqual({ field: 'X-XlsForm-FormId-Fallback', value: 'bad%E0%A4%A' });
    expect(await blobCount(h)).toBe(before);
    const xml = await h.post(`${P(h)}/forms`, { as: 'alice', body: formXml('simple'), headers: { ...xmlHeaders, 'X-XlsForm-FormId-Fallback': '%' } });
    expect(xml.status).toBe(200);
  });

  test('no form_id in the sheet and no header: 400.15 with the converter\'s message', async () => {
    const h = await harness();
    const bytes = textForm();
    const body = await expectProblem(await postSpreadsheet(h, `${P(h)}/forms`, bytes), 400.15);
    expect(body.details).toEqual(conversionError(bytes));
    expect(body.details.error).toMatch(/form_id/);
  });

  test('an id ending in .xlsx: 400.8 as Central', async () => {
    const h = await harness();
    const body = await expectProblem(await postSpreadsheet(h, `${P(h)}/forms`, textForm(), { fallback: 'form.xlsx' }), 400.8);
    expect(body.details).toMatchObject({ field: 'formId', value: 'form.xlsx' });
    expect(body.message).toContain('The Form ID cannot end in .xls, .xlsx, or .xml.');
  });
});

describe('conversion errors and warnings', () => {
  test('an unknown question type: 400.15 with Central\'s message and { error, warnings }, byte for byte; nothing stored', async () => {
    const h = await harness();
    const before = await blobCount(h);
    const bytes = workbook({ survey: [['type', 'name', 'label'], ['x', 'name', 'Your name']] });
    const res = await postSpreadsheet(h, `${P(h)}/forms`, bytes, { fallback: 'x' });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).toBe(JSON.stringify({
      message: 'The given XLSForm file was not valid. Please see the error details for more information.',
      code: 400.15,
      details: { error: "Unknown question type 'x'.", warnings: [] },
    }));
    expect(await blobCount(h)).toBe(before);
    expect(await h.db.select().from(forms)).toEqual([]);
  });

  test('conversion and workflow warnings together: one warnings object, xlsFormWarnings first (deletedFormExists)', async () => {
    const h = await harness();
    await createForm(h, formXml('simple'));
    expect((await h.delete(F(h, 'simple'), { as: 'alice' })).status).toBe(200);
    const bytes = textForm({ image: true });
    const { warnings } = converted(bytes, 'simple');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(MAX_PIXELS);
    const body = await expectProblem(await postSpreadsheet(h, `${P(h)}/forms`, bytes, { fallback: 'simple' }), 400.16);
    expect(body.message).toBe('The Form is valid, but with warnings. Please check the warnings and if they are acceptable resubmit with ?ignoreWarnings=true');
    expect(body.details).toEqual({
      warnings: { xlsFormWarnings: warnings, workflowWarnings: [{ type: 'deletedFormExists', details: { xmlFormId: 'simple' } }] },
    });
    expect(Object.keys(body.details.warnings)).toEqual(['xlsFormWarnings', 'workflowWarnings']);
    await uploadSpreadsheet(h, bytes, { fallback: 'simple', query: '?ignoreWarnings=true' });
  });

  test('a draft: conversion warnings and a Structure Change together; warnings alone fail too; ignoreWarnings sets the draft', async () => {
    const h = await harness();
    await uploadSpreadsheet(h, textForm({ formId: 'wiring', age: true }), { query: '?publish=true' });
    const noAge = textForm({ formId: 'wiring', image: true });
    const { warnings } = converted(noAge);
    expect(warnings).toEqual([expect.stringMatching(MAX_PIXELS)]);
    const body = await expectProblem(await postSpreadsheet(h, `${F(h, 'wiring')}/draft`, noAge), 400.16);
    expect(body.details).toEqual({ warnings: { xlsFormWarnings: warnings, workflowWarnings: [{ type: 'structureChanged', details: ['age'] }] } });
    const withAge = textForm({ formId: 'wiring', age: true, image: true });
    const alone = await expectProblem(await postSpreadsheet(h, `${F(h, 'wiring')}/draft`, withAge), 400.16);
    expect(alone.details).toEqual({ warnings: { xlsFormWarnings: converted(withAge).warnings } });
    expect((await formRow(h, 'wiring'))!.draftDefId).toBeNull();
    const ok = await postSpreadsheet(h, `${F(h, 'wiring')}/draft?ignoreWarnings=true`, noAge);
    expect(ok.status).toBe(200);
    expect(await json(ok)).toEqual({ success: true });
    expect(await bytesOf(await h.get(`${F(h, 'wiring')}/draft.xlsx`, { as: 'alice' }))).toEqual(noAge);
  });
});

describe('drafts and versions keep their spreadsheet', () => {
  test('POST F/draft with another spreadsheet: draft.xlsx is the new file, F.xlsx still the published one; another form id 400.8', async () => {
    const h = await harness();
    const first = textForm({ formId: 'wiring', label: 'First label' });
    const second = textForm({ formId: 'wiring', label: 'Second label' });
    await uploadSpreadsheet(h, first, { query: '?publish=true' });
    expect((await postSpreadsheet(h, `${F(h, 'wiring')}/draft`, second)).status).toBe(200);
    expect(await bytesOf(await h.get(`${F(h, 'wiring')}/draft.xlsx`, { as: 'alice' }))).toEqual(second);
    expect(await bytesOf(await h.get(`${F(h, 'wiring')}.xlsx`, { as: 'alice' }))).toEqual(first);
    await expectProblem(await postSpreadsheet(h, `${F(h, 'wiring')}/draft`, textForm({ formId: 'other' })), 400.8);
  });

  test('the fallback header works for drafts too (percent-encoded)', async () => {
    const h = await harness();
    const id = encodeURIComponent('ñandú');
    await uploadSpreadsheet(h, textForm(), { fallback: id, query: '?publish=true' });
    const again = textForm({ label: 'Another label' });
    const res = await postSpreadsheet(h, `${P(h)}/forms/${id}/draft`, again, { fallback: id });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await bytesOf(await h.get(`${P(h)}/forms/${id}/draft.xlsx`, { as: 'alice' }))).toEqual(again);
  });

  test('.xls: copying the published definition (empty body) keeps its spreadsheet; so does publishing with ?version; one blob', async () => {
    const h = await harness();
    const bytes = textForm({ formId: 'wiring', book: 'xls' });
    await uploadSpreadsheet(h, bytes, { type: XLS, query: '?publish=true' });
    const served = await h.get(`${F(h, 'wiring')}.xls`, { as: 'bob' });
    expect(served.headers.get('content-type')).toBe(XLS);
    expect(served.headers.get('content-disposition')).toBe('attachment; filename="wiring.xls"; filename*=UTF-8\'\'wiring.xls');
    expect(await bytesOf(served)).toEqual(bytes);
    expect((await h.post(`${F(h, 'wiring')}/draft`, { as: 'alice' })).status).toBe(200);
    const draft = await h.get(`${F(h, 'wiring')}/draft.xls`, { as: 'alice' });
    expect(draft.status).toBe(200);
    expect(draft.headers.get('content-type')).toBe(XLS);
    expect(await bytesOf(draft)).toEqual(bytes);
    await publish(h, 'wiring', '?version=new');
    expect(await bytesOf(await h.get(`${F(h, 'wiring')}.xls`, { as: 'alice' }))).toEqual(bytes);
    // both versions serve it (F/versions/{v}.xls; the blank version is ___)
    expect(await bytesOf(await h.get(`${F(h, 'wiring')}/versions/new.xls`, { as: 'alice' }))).toEqual(bytes);
    expect(await bytesOf(await h.get(`${F(h, 'wiring')}/versions/___.xls`, { as: 'alice' }))).toEqual(bytes);
    await expectProblem(await h.get(`${F(h, 'wiring')}/versions/new.xlsx`, { as: 'alice' }), 404.1);
    await expectProblem(await h.get(`${F(h, 'wiring')}/versions/nope.xls`, { as: 'alice' }), 404.1);
    const defs = await h.db.select().from(formDefs).where(eq(formDefs.formId, (await formRow(h, 'wiring'))!.id));
    expect(defs).toHaveLength(2);
    expect(new Set(defs.map((d) => d.xlsBlobId)).size).toBe(1);
  });

  test('a draft from XML has no spreadsheet: draft.xlsx 404.1 while F.xlsx stays', async () => {
    const h = await harness();
    await uploadSpreadsheet(h, textForm({ formId: 'simple' }), { query: '?publish=true' });
    const res = await h.post(`${F(h, 'simple')}/draft`, { as: 'alice', body: formXml('simple'), headers: xmlHeaders });
    expect(res.status, await res.clone().text()).toBe(200);
    await expectProblem(await h.get(`${F(h, 'simple')}/draft.xlsx`, { as: 'alice' }), 404.1);
    expect((await h.get(`${F(h, 'simple')}.xlsx`, { as: 'alice' })).status).toBe(200);
    const ext = await json(await h.get(`${F(h, 'simple')}/draft`, { as: 'alice', headers: extended }));
    expect(ext.excelContentType).toBeNull();
  });
});

describe('itemsets.csv', () => {
  const id = 'ext_wiring';

  test('select_one_external: the converter\'s CSV becomes the itemsets.csv attachment, already there (text/csv)', async () => {
    const h = await harness();
    const bytes = externalForm([['kano_municipal', 'Kano Municipal', 'kano'], ['ikeja', 'Ikeja', 'lagos']]);
    const { itemsets } = converted(bytes);
    expect(itemsets).toContain('"ikeja","Ikeja","lagos"');
    await uploadSpreadsheet(h, bytes, { query: '?publish=true' });
    const csv = new TextEncoder().encode(itemsets!);
    const list = await json<Json[]>(await h.get(`${F(h, id)}/attachments`, { as: 'alice' }));
    expect(list).toEqual([{
      name: 'itemsets.csv', type: 'file', hash: md5(csv), exists: true, blobExists: true, datasetExists: false, size: csv.byteLength,
    }]);
    const res = await h.get(`${F(h, id)}/attachments/itemsets.csv`, { as: 'alice' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(await res.text()).toBe(itemsets);
  });

  test('an external_choices sheet with no select_one_external: no itemsets.csv attachment', async () => {
    const h = await harness();
    const bytes = workbook({
      survey: [['type', 'name', 'label'], ['text', 'name', 'Your name']],
      external_choices: [['list_name', 'name', 'label'], ['lga', 'ikeja', 'Ikeja']],
    });
    await uploadSpreadsheet(h, bytes, { fallback: 'wiring' });
    expect(await json(await h.get(`${F(h, 'wiring')}/draft/attachments`, { as: 'alice' }))).toEqual([]);
    expect(await h.db.select().from(formAttachments)).toEqual([]);
  });

  test('a new draft\'s own itemsets win over the carried ones; a copy of the published one carries the draft\'s', async () => {
    const h = await harness();
    const old = externalForm([['kano_municipal', 'Kano Municipal', 'kano']]);
    const fresh = externalForm([['ikeja', 'Ikeja', 'lagos']]);
    const [oldCsv, freshCsv] = [converted(old).itemsets!, converted(fresh).itemsets!];
    expect(oldCsv).not.toBe(freshCsv);
    await uploadSpreadsheet(h, old, { query: '?publish=true' });
    expect((await postSpreadsheet(h, `${F(h, id)}/draft`, fresh)).status).toBe(200);
    expect(await (await h.get(`${F(h, id)}/draft/attachments/itemsets.csv`, { as: 'alice' })).text()).toBe(freshCsv);
    expect(await (await h.get(`${F(h, id)}/attachments/itemsets.csv`, { as: 'alice' })).text()).toBe(oldCsv);
    expect((await h.post(`${F(h, id)}/draft`, { as: 'alice' })).status).toBe(200); // a copy of the published one replaces the draft
    expect(await (await h.get(`${F(h, id)}/draft/attachments/itemsets.csv`, { as: 'alice' })).text()).toBe(freshCsv);
  });
});

describe('rollback and purge', () => {
  // insertDef stores the spreadsheet, then inserts form_defs, then form_attachments. An expected
  // media file named with over 2704 bytes PostgreSQL cannot compress is too large for the
  // form_attachments primary key (a btree), so that insert fails after the spreadsheet was written:
  // a real failure late in the transaction. Nothing maps it to a Problem, so it is a 500.
  const tooLong = () => `${incompressible(4000)}.png`;

  test('a failure after the spreadsheet was stored (POST P/forms): no forms, form_defs or blob row, no stored object', async () => {
    const h = await harness();
    const bytes = textForm({ formId: 'too_long', media: tooLong() });
    const sha = sha256(bytes);
    expect(converted(bytes).xml).toContain('.png</value>');
    const before = { blobs: await blobCount(h), defs: await defCount(h) };
    expect(await h.deps.blobs.has(sha)).toBe(false);
    const res = await postSpreadsheet(h, `${P(h)}/forms`, bytes);
    expect(res.status, await res.clone().text()).toBe(500);
    expect(await blobRows(h, sha)).toEqual([]);
    expect(await h.deps.blobs.has(sha)).toBe(false);
    expect(await blobCount(h)).toBe(before.blobs);
    expect(await defCount(h)).toBe(before.defs);
    expect(await formRow(h, 'too_long')).toBeUndefined();
    expect(await h.auditActions()).toEqual([]);
  });

  test('a failure after the spreadsheet was stored (POST F/draft): the form keeps its state; no new blob or form_defs row', async () => {
    const h = await harness();
    const published = textForm({ formId: 'too_long', label: 'Published label' });
    await uploadSpreadsheet(h, published, { query: '?publish=true' });
    const bytes = textForm({ formId: 'too_long', label: 'Draft label', media: tooLong() });
    const sha = sha256(bytes);
    const before = { blobs: await blobCount(h), defs: await defCount(h), form: await formRow(h, 'too_long') };
    const res = await postSpreadsheet(h, `${F(h, 'too_long')}/draft`, bytes);
    expect(res.status, await res.clone().text()).toBe(500);
    expect(await blobRows(h, sha)).toEqual([]);
    expect(await h.deps.blobs.has(sha)).toBe(false);
    expect(await blobCount(h)).toBe(before.blobs);
    expect(await defCount(h)).toBe(before.defs);
    expect(await formRow(h, 'too_long')).toEqual(before.form);
    expect(before.form!.draftDefId).toBeNull();
    expect(await bytesOf(await h.get(`${F(h, 'too_long')}.xlsx`, { as: 'alice' }))).toEqual(published);
  });

  test('purge: a purged form\'s spreadsheet blob goes; one still referenced by another form stays', async () => {
    const h = await harness();
    const shared = textForm({ label: 'Shared by two forms' });
    const own = textForm({ label: 'Only the doomed form' });
    await uploadSpreadsheet(h, shared, { fallback: 'keep', query: '?publish=true' });
    await uploadSpreadsheet(h, shared, { fallback: 'doomed_a', query: '?publish=true' });
    await uploadSpreadsheet(h, own, { fallback: 'doomed_b', query: '?publish=true' });
    expect(await blobRows(h, sha256(shared))).toHaveLength(1);
    expect(await h.deps.blobs.has(sha256(own))).toBe(true);
    for (const doomed of ['doomed_a', 'doomed_b']) expect((await h.delete(F(h, doomed), { as: 'alice' })).status).toBe(200);
    expect(await purgeForms(systemCtx(h.deps), { force: true })).toHaveLength(2);
    expect(await blobRows(h, sha256(own))).toEqual([]);
    expect(await h.deps.blobs.has(sha256(own))).toBe(false);
    expect(await blobRows(h, sha256(shared))).toHaveLength(1);
    expect(await h.deps.blobs.has(sha256(shared))).toBe(true);
    expect(await bytesOf(await h.get(`${F(h, 'keep')}.xlsx`, { as: 'alice' }))).toEqual(shared);
  });
});
