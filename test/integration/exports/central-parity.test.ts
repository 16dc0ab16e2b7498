/**
 * CSV/ZIP exports against what real ODK Central exported for the same forms and submissions
 * (shared/fixtures/central-outputs). Each scenario replays Central's history (scenarios.ts), then
 * requests every export Central's capture made and compares, cell by cell: zip entry names and
 * order, compression, headers, every value, KEY/PARENT_KEY, media bytes, response headers. Only the
 * columns that depend on the clock and on ids differ by nature: SubmissionDate (checked as
 * ISO-8601 UTC with milliseconds, newest first) and SubmitterID (checked as the App User's id).
 */
import { describe, expect, test } from 'vitest';
import { harness } from '../../helpers/harness';
import { bodyBytes, fixture, fixtureBytes, ISO_MS_UTC, parseCsv, readZip, writeCsv } from './helpers';
import { scenarios } from './scenarios';

interface CapturedRequest {
  file: string | null;
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  entries?: string[];
}

const CO = 'central-outputs';
const decoder = new TextDecoder('utf-8', { ignoreBOM: true, fatal: true });

/** The CSV exports Central's capture requested for a folder, in capture order. */
function capturedExports(folder: string): CapturedRequest[] {
  const { requests } = JSON.parse(fixture(`${CO}/${folder}/requests.json`)) as { requests: CapturedRequest[] };
  return requests.filter((r) => r.method === 'GET' && /\/submissions\.csv(\.zip)?(\?|$)/.test(r.path));
}

/**
 * Compares one of our CSV files with Central's: text conventions, then every cell. In a root file
 * SubmissionDate must be ISO-8601 UTC with ms, in descending order, and SubmitterID the App User.
 */
function expectSameCsv(label: string, oursText: string, theirsText: string, submitterId: number): void {
  expect(oursText.charCodeAt(0), `${label}: no BOM`).not.toBe(0xfeff);
  expect(oursText.endsWith('\n'), `${label}: trailing newline`).toBe(true);
  const ours = parseCsv(oursText);
  const theirs = parseCsv(theirsText);
  // The writer reproduces Central's own bytes, so comparing our text to it checks quoting too.
  expect(writeCsv(theirs), `${label}: Central's text is canonical CSV`).toBe(theirsText);
  expect(ours[0], `${label}: header`).toEqual(theirs[0]);
  expect(ours.length, `${label}: row count`).toBe(theirs.length);
  const header = theirs[0]!;
  const dateCol = header[0] === 'SubmissionDate' ? 0 : -1;
  const submitterCol = dateCol === 0 ? header.indexOf('SubmitterID') : -1;
  const expected = theirs.map((row, i) => {
    if (i === 0 || dateCol < 0) return row;
    const copy = [...row];
    copy[dateCol] = ours[i]?.[dateCol] ?? '';
    copy[submitterCol] = String(submitterId);
    return copy;
  });
  if (dateCol === 0) {
    const dates = ours.slice(1).map((r) => r[0]!);
    for (const d of dates) expect(d, `${label}: SubmissionDate format`).toMatch(ISO_MS_UTC);
    expect(dates, `${label}: newest first`).toEqual([...dates].sort().reverse());
  }
  for (let i = 0; i < expected.length; i += 1) expect(ours[i], `${label}: row ${i}`).toEqual(expected[i]);
  expect(oursText, `${label}: text`).toBe(writeCsv(expected));
}

describe("CSV/ZIP exports equal Central's, for each captured form and flag", () => {
  test.each(scenarios.map((s) => [s.folder, s] as const))('%s', async (_folder, scenario) => {
    const h = await harness();
    const submitterId = await scenario.setup(h);
    const captured = capturedExports(scenario.folder);
    expect(captured.length).toBeGreaterThanOrEqual(6);
    for (const req of captured) {
      const path = req.path.replace('/v1/projects/1/', `/v1/projects/${h.projectId}/`);
      const label = `${scenario.folder} ${req.path.slice(req.path.indexOf('/submissions'))}`;
      const res = await h.get(path, { as: 'bob' });
      expect(res.status, label).toBe(req.status);
      expect(res.headers.get('content-type'), `${label}: Content-Type`).toBe(req.headers['content-type']);
      expect(res.headers.get('content-disposition'), `${label}: Content-Disposition`).toBe(req.headers['content-disposition']);
      expect(res.headers.get('content-length'), `${label}: no Content-Length (streamed)`).toBeNull();
      const body = await bodyBytes(res);
      if (req.file!.endsWith('.csv')) {
        expectSameCsv(label, decoder.decode(body), fixture(`${CO}/${scenario.folder}/${req.file}`), submitterId);
        continue;
      }
      const ours = readZip(body);
      const theirs = readZip(fixtureBytes(`${CO}/${scenario.folder}/${req.file}`));
      expect(theirs.map((e) => e.name), `${label}: Central's zip matches its entry list`).toEqual(req.entries);
      expect(ours.map((e) => e.name), `${label}: entries`).toEqual(req.entries);
      for (let i = 0; i < theirs.length; i += 1) {
        const [o, t] = [ours[i]!, theirs[i]!];
        expect(o.method, `${label}: ${o.name} deflated`).toBe(t.method);
        if (t.name.endsWith('.csv')) expectSameCsv(`${label} ${t.name}`, decoder.decode(o.data), decoder.decode(t.data), submitterId);
        else expect(Buffer.from(o.data).equals(Buffer.from(t.data)), `${label}: ${t.name} (#${i}) bytes`).toBe(true);
      }
    }
  });
});
