/**
 * Recreates, submission by submission, what real ODK Central was given before its exports were
 * captured (shared/fixtures/central-outputs/README.md, "Layout"): each form published, an App User
 * `Tablet <form>` assigned to it, the same submissions in the same order over OpenRosa with
 * `?deviceID=collect:<form>-device`, then the same reviews and edits.
 */
import { expect } from 'vitest';
import type { Harness } from '../../helpers/harness';
import { appUserFor, BROWSER_UA, fixture, fixtureBytes, publishForm, submitOpenRosa, type MultipartFile } from './helpers';

export interface Scenario {
  /** The central-outputs folder (the fixture key). */
  folder: string;
  xmlFormId: string;
  /** Replays the captured history; returns the App User's actor id (the SubmitterID of every row). */
  setup(h: Harness): Promise<number>;
}

const CO = 'central-outputs';

/** Publishes `formXml`, then submits each XML as the form's App User, in order. */
async function replay(h: Harness, folder: string, xmlFormId: string, formXml: string, subs: Array<{ xml: string; files?: MultipartFile[] }>) {
  await publishForm(h, formXml);
  const au = await appUserFor(h, xmlFormId, `Tablet ${folder}`);
  for (const s of subs) await submitOpenRosa(h, { key: au.token }, s.xml, { deviceId: `collect:${folder}-device`, files: s.files });
  return au;
}

async function review(h: Harness, xmlFormId: string, instanceId: string, reviewState: string) {
  const res = await h.patch(`/v1/projects/${h.projectId}/forms/${xmlFormId}/submissions/${instanceId}`, { as: 'bob', body: { reviewState } });
  expect(res.status, await res.clone().text()).toBe(200);
}

const sub = (key: string) => ({ xml: fixture(`submissions/${key}.xml`) });
const own = (folder: string, name: string) => ({ xml: fixture(`${CO}/${folder}/inputs/submissions/${name}.xml`) });

const MIME: Record<string, string> = { jpg: 'image/jpeg', mp4: 'video/mp4', enc: 'application/octet-stream' };
const media = (dir: string, names: string[]): MultipartFile[] =>
  names.map((name) => ({ name, bytes: fixtureBytes(`${dir}/${name}`), type: MIME[name.slice(name.lastIndexOf('.') + 1)] ?? 'application/octet-stream' }));

export const scenarios: Scenario[] = [
  {
    folder: 'simple',
    xmlFormId: 'simple',
    async setup(h) {
      const au = await replay(h, 'simple', 'simple', fixture('forms/simple.xml'), ['one', 'two', 'three'].map((k) => sub(`simple.${k}`)));
      await review(h, 'simple', 'two', 'hasIssues');
      await review(h, 'simple', 'three', 'rejected');
      return au.id;
    },
  },
  {
    folder: 'withrepeat',
    xmlFormId: 'withrepeat',
    async setup(h) {
      const au = await replay(h, 'withrepeat', 'withrepeat', fixture('forms/withrepeat.xml'), ['one', 'two', 'three'].map((k) => sub(`withrepeat.${k}`)));
      await review(h, 'withrepeat', 'rone', 'approved');
      // The edit of rtwo, POSTed by a web user with a browser User-Agent, as an Enketo edit arrives.
      await submitOpenRosa(h, 'alice', fixture(`${CO}/withrepeat/api/submission-current.xml`), { userAgent: BROWSER_UA });
      return au.id;
    },
  },
  {
    folder: 'doubleRepeat',
    xmlFormId: 'doubleRepeat',
    async setup(h) {
      return (await replay(h, 'doubleRepeat', 'doubleRepeat', fixture('forms/doubleRepeat.xml'), [sub('doubleRepeat.double')])).id;
    },
  },
  {
    folder: 'selectMultiple',
    xmlFormId: 'selectMultiple',
    async setup(h) {
      const au = await replay(h, 'selectMultiple', 'selectMultiple', fixture('forms/selectMultiple.xml'), ['one', 'two', 'three'].map((k) => sub(`selectMultiple.${k}`)));
      await review(h, 'selectMultiple', 'one', 'approved');
      return au.id;
    },
  },
  {
    folder: 'geoTypes',
    xmlFormId: 'geotest',
    async setup(h) {
      return (await replay(h, 'geoTypes', 'geotest', fixture('forms/geoTypes.xml'), ['own-1', 'own-2', 'own-3'].map((n) => own('geoTypes', n)))).id;
    },
  },
  {
    folder: 'groupRepeat',
    xmlFormId: 'groupRepeat',
    async setup(h) {
      return (await replay(h, 'groupRepeat', 'groupRepeat', fixture('forms/groupRepeat.xml'), [sub('groupRepeat.one'), own('groupRepeat', 'own-1')])).id;
    },
  },
  {
    folder: 'nestedGroup',
    xmlFormId: 'nestedGroup',
    async setup(h) {
      return (await replay(h, 'nestedGroup', 'nestedGroup', fixture('forms/nestedGroup.xml'), [sub('nestedGroup.one'), own('nestedGroup', 'own-1')])).id;
    },
  },
  {
    folder: 'binaryType',
    xmlFormId: 'binaryType',
    async setup(h) {
      const dir = `${CO}/binaryType/inputs/submission-media`;
      return (await replay(h, 'binaryType', 'binaryType', fixture('forms/binaryType.xml'), [
        { ...sub('binaryType.both'), files: media(`${dir}/binaryType.both`, ['my_file1.mp4', 'here_is_file2.jpg']) },
        { ...sub('binaryType.one'), files: media(`${dir}/binaryType.one`, ['my_file1.mp4']) },
        { ...sub('binaryType.two'), files: media(`${dir}/binaryType.two`, ['here_is_file2.jpg']) },
      ])).id;
    },
  },
  {
    folder: 'encrypted',
    xmlFormId: 'encrypted',
    async setup(h) {
      // Only two's encrypted XML was sent; neither's .jpg.enc (README, Layout).
      return (await replay(h, 'encrypted', 'encrypted', fixture('forms/encrypted.xml'), [
        sub('encrypted.one'),
        { ...sub('encrypted.two'), files: media(`${CO}/encrypted/inputs/submission-media/encrypted.two`, ['submission.xml.enc']) },
      ])).id;
    },
  },
  {
    folder: 'deletedFields',
    xmlFormId: 'deletedFields',
    async setup(h) {
      const dir = `${CO}/deletedFields/inputs`;
      const au = await replay(h, 'deletedFields', 'deletedFields', fixture(`${dir}/form-v1.xml`), [own('deletedFields', 'v1-1'), own('deletedFields', 'v1-2')]);
      const F = `/v1/projects/${h.projectId}/forms/deletedFields`;
      const draft = await h.post(`${F}/draft?ignoreWarnings=true`, { as: 'bob', body: fixture(`${dir}/form-v2.xml`), headers: { 'Content-Type': 'application/xml' } });
      expect(draft.status, await draft.clone().text()).toBe(200);
      const published = await h.post(`${F}/draft/publish`, { as: 'bob' });
      expect(published.status, await published.clone().text()).toBe(200);
      await submitOpenRosa(h, { key: au.token }, fixture(`${dir}/submissions/v2-1.xml`), { deviceId: 'collect:deletedFields-device' });
      return au.id;
    },
  },
];
