/**
 * Issue 7, "Done when": ODK's official XLSForm template and the fixture spreadsheets, uploaded
 * through POST P/forms?publish=true (ignoreWarnings=true), are forms Collect can use. As an App
 * User, as Collect: GET P/formList lists the form, its downloadUrl gives the XML whose MD5 is
 * listed, and a minimal submission built from the form's primary instance (root element with its
 * id and version, meta/instanceID) is accepted with 201 by POST P/submission.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { COLLECT, md5, multipart, openRosaMessage, parseXml, SUBMISSION_OK, XFORMS_LIST, type El } from '../../helpers/collect';
import { harness, json } from '../../helpers/harness';
import { appUserFor } from '../../helpers/submitting';
import { P } from './form-fixtures';

const SHARED = new URL('../../../../shared/', import.meta.url);
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const XLS = 'application/vnd.ms-excel';
const XFORMS = 'http://www.w3.org/2002/xforms';

/** Every spreadsheet fixture expected to convert: [label, path under shared/]. */
function spreadsheets(): Array<[string, string]> {
  const out: Array<[string, string]> = [
    ['odk-xlsform-template.xlsx', 'reference/xlsform/odk-xlsform-template.xlsx'],
    ['central-misc/simple.xlsx', 'fixtures/central-misc/simple.xlsx'],
  ];
  for (const dir of ['fixtures/xlsform', 'fixtures/xlsform-generated/authored']) {
    for (const name of readdirSync(new URL(dir, SHARED)).sort()) {
      if (!/\.xlsx?$/.test(name)) continue;
      const stem = name.replace(/\.xlsx?$/, '');
      // the must-fail sheets come with <name>.error.txt instead of an XForm
      if (readdirSync(new URL(dir, SHARED)).includes(`${stem}.error.txt`)) continue;
      out.push([`${dir.replace(/^fixtures\//, '')}/${name}`, `${dir}/${name}`]);
    }
  }
  return out;
}

const child = (el: El, local: string) => el.children.find((c) => c.local === local);
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

/** The primary instance's root (the first `instance` of the model without an id). */
function instanceRoot(xml: string): El {
  const html = parseXml(xml);
  const model = child(child(html, 'head')!, 'model')!;
  const primary = model.children.find((c) => c.local === 'instance' && c.uri === XFORMS && c.attrs.id === undefined)!;
  const root = primary.children[0];
  if (!root) throw new Error('no primary instance root');
  return root;
}

/** A minimal submission of a form: its root with id (and version), and meta/instanceID. */
function minimalSubmission(xml: string): { xml: string; instanceId: string } {
  const root = instanceRoot(xml);
  const instanceId = `uuid:${randomUUID()}`;
  const version = root.attrs.version === undefined ? '' : ` version="${esc(root.attrs.version)}"`;
  return {
    instanceId,
    xml: `<?xml version="1.0"?><${root.local} id="${esc(root.attrs.id!)}"${version} xmlns:jr="http://openrosa.org/javarosa" xmlns:orx="http://openrosa.org/xforms">`
      + `<meta><instanceID>${instanceId}</instanceID></meta></${root.local}>`,
  };
}

describe('XLSForm fixtures are forms Collect can use (formList, download, submission)', () => {
  test.each(spreadsheets())('%s', async (_label, path) => {
    const h = await harness();
    const bytes = new Uint8Array(readFileSync(new URL(path, SHARED)));
    const stem = path.slice(path.lastIndexOf('/') + 1).replace(/\.xlsx?$/, '');
    const res = await h.post(`${P(h)}/forms?publish=true&ignoreWarnings=true`, {
      as: 'bob',
      body: bytes,
      headers: { 'Content-Type': path.endsWith('.xls') ? XLS : XLSX, 'X-XlsForm-FormId-Fallback': encodeURIComponent(stem) },
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const form = await json<{ xmlFormId: string; version: string; hash: string }>(res);

    const au = await appUserFor(h, form.xmlFormId, `Tablet ${stem}`);
    const list = await h.get(`${P(h)}/formList`, { as: { key: au.token }, headers: COLLECT });
    expect(list.status).toBe(200);
    const xforms = parseXml(await list.text());
    expect(xforms.uri).toBe(XFORMS_LIST);
    const entries = xforms.children.map((x) => Object.fromEntries(x.children.map((c) => [c.local, c.text])));
    const entry = entries.find((e) => e.formID === form.xmlFormId);
    expect(entry, JSON.stringify(entries)).toBeDefined();
    expect(entry!.version).toBe(form.version);
    expect(entry!.hash).toBe(`md5:${form.hash}`);

    const url = new URL(entry!.downloadUrl!);
    const dl = await h.get(`${url.pathname}${url.search}`, { headers: COLLECT });
    expect(dl.status).toBe(200);
    const xml = await dl.text();
    expect(`md5:${md5(xml)}`).toBe(entry!.hash);
    if (entry!.manifestUrl) {
      const m = new URL(entry!.manifestUrl);
      expect((await h.get(`${m.pathname}${m.search}`, { headers: COLLECT })).status).toBe(200);
    }

    const submission = minimalSubmission(xml);
    const { body, type } = multipart(submission.xml);
    const sent = await h.post(`${P(h)}/submission`, { as: { key: au.token }, body, headers: { ...COLLECT, 'Content-Type': type } });
    const text = await sent.text();
    expect(sent.status, `${text}\n${submission.xml}`).toBe(201);
    expect(openRosaMessage(text)).toEqual({ nature: '', text: SUBMISSION_OK });
    const got = await h.get(`${P(h)}/forms/${encodeURIComponent(form.xmlFormId)}/submissions/${encodeURIComponent(submission.instanceId)}`, { as: 'bob' });
    expect(got.status).toBe(200);
  });
});
