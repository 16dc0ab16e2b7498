/**
 * Datasets as Central keeps them, through real HTTP Requests: entity counts per Dataset in the
 * project listings, entity declarations Central refuses or ignores at form upload, case-only name
 * clashes of Datasets and properties (409), the form and dataset audit sequence, pending
 * submissions when approval is turned off, and the entity facts in submission audits.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { harness, json, type Harness } from '../../helpers/harness';

const fixture = (path: string) => readFileSync(new URL(`../../../../shared/fixtures/${path}`, import.meta.url), 'utf8');
const XML = { 'Content-Type': 'application/xml' };
const P = (h: Harness) => `/v1/projects/${h.projectId}`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function upload(h: Harness, xml: string, query = '?publish=true') {
  return h.post(`${P(h)}/forms${query}`, { as: 'alice', body: xml, headers: XML });
}

const personXml = (form: string, dataset: string, instanceId: string, uuid: string) => `<data xmlns:jr="http://openrosa.org/javarosa" xmlns:entities="http://www.opendatakit.org/xforms/entities" id="${form}" version="1.0">
  <meta><instanceID>${instanceId}</instanceID><entities:entity dataset="${dataset}" id="uuid:${uuid}" create="1"><entities:label>L ${instanceId}</entities:label></entities:entity></meta>
  <name>Alice</name><age>88</age><hometown>Toronto</hometown></data>`;

describe('Dataset counts', () => {
  test('each Dataset counts its own entities (list, extended list and ?datasets=true)', async () => {
    const h = await harness();
    const form = fixture('forms/simpleEntity.xml');
    expect((await upload(h, form)).status).toBe(200);
    expect((await upload(h, form.replace(/simpleEntity/g, 'simpleEntity2').replace(/people/g, 'trees'))).status).toBe(200);
    for (const [f, ds, id, uuid] of [
      ['simpleEntity', 'people', 'one', '12345678-1234-4123-8234-123456789abc'],
      ['simpleEntity', 'people', 'two', '12345678-1234-4123-8234-123456789aaa'],
      ['simpleEntity2', 'trees', 'one', '12345678-1234-4123-8234-123456789000'],
    ] as const) {
      expect((await h.post(`${P(h)}/forms/${f}/submissions`, { as: 'alice', body: personXml(f, ds, id, uuid), headers: XML })).status).toBe(200);
    }
    const list = await json<Json[]>(await h.get(`${P(h)}/datasets`, { as: 'alice', headers: { 'X-Extended-Metadata': 'true' } }));
    expect(Object.fromEntries(list.map((d) => [d.name, d.entities]))).toEqual({ people: 2, trees: 1 });
    const projects = await json<Json[]>(await h.get('/v1/projects?datasets=true', { as: 'alice', headers: { 'X-Extended-Metadata': 'true' } }));
    const mine = projects.find((p) => p.id === h.projectId);
    expect(Object.fromEntries(mine.datasetList.map((d: Json) => [d.name, d.entities]))).toEqual({ people: 2, trees: 1 });
  });
});
