/**
 * Every Lambda bundle, as deployed: built by infra/aws/build.ts into a temporary folder, imported,
 * and driven with API Gateway HTTP API and Function URL events (test/serverless/events.ts) against
 * real PostgreSQL (a database of its own, migrated by the migrate function's bundle) and an S3
 * server (s3rver). Events reach the group bundles through the router bundle's dispatcher, as the
 * AWS routing does, and every event and buffered result is checked against Lambda's 6 MB cap.
 */
import { unzipSync } from 'fflate';
import { randomBytes, createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildLambdaBundles, type BuiltBundle } from '../../infra/aws/build';
import { synthesize } from '../../infra/aws/cdk/stack';
import { lambdaFunctions } from '../../infra/aws/functions';
import { groupForEvent } from '../../infra/aws/router';
import { matchHttpApiRoute, samplePathFor } from '../../infra/aws/routes';
import { groupFor, routeTable } from '../../lib/http/route-table';
import { routingPath } from '../../lib/http/routing';
import { SCHEDULE } from '../../lib/jobs/scheduled';
import { localApp } from '../../infra/local/app';
import type { GroupName } from '../../lib/http/route-table';
import { systemCtx } from '../../lib/context';
import { withDeps } from '../../lib/runtime/entry';
import { loadConfig } from '../../lib/runtime/env';
import { createNodeDeps } from '../../lib/runtime/node';
import { ensureFirstAdmin } from '../../lib/users/admin-tasks';
import { jpeg, multipart, OR, PHOTOS_FORM, PHOTOS_FORM_ID, photosSubmission } from '../helpers/collect';
import { startS3, type RunningS3 } from '../helpers/s3rver';
import {
  httpEvent, installStreamingRuntime, INVOKE_PAYLOAD_MAX, invokeStreaming, resultBytes, resultHeader,
  type EventKind, type HttpRequestSpec, type LambdaHttpEvent, type LambdaHttpResult,
} from './events';

type Handler = (event: LambdaHttpEvent, context?: unknown) => Promise<LambdaHttpResult>;
type StreamHandler = Parameters<typeof invokeStreaming>[0];

const ADMIN = { email: 'admin@example.org', password: 'correct horse battery staple' };
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

let s3: RunningS3;
let outDir: string;
let bundles: BuiltBundle[];
let adminUrl: string;
let dbName: string;
let closeLocal: () => Promise<void>;
let localFetch: (r: Request) => Promise<Response>;
const handlers = {} as Record<GroupName, Handler>;
let exportsStream: StreamHandler;
let route: Handler;
/** Every event the router handed to a group, with its size and target. */
const invocations: Array<{ group: GroupName; eventBytes: number; resultBytes: number }> = [];

beforeAll(async () => {
  s3 = await startS3('fieldbase-lambda');
  adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  dbName = `fb_serverless_${randomBytes(5).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE "${dbName}"`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  // What the CDK stack gives every function (infra/aws/cdk/stack.ts), pointed at the local servers.
  Object.assign(process.env, {
    DATABASE_URL: url.toString(),
    S3_BUCKET: s3.bucket, S3_ENDPOINT: s3.endpoint, S3_REGION: 'us-east-1', S3_FORCE_PATH_STYLE: 'true',
    S3_ACCESS_KEY_ID: 'S3RVER', S3_SECRET_ACCESS_KEY: 'S3RVER',
    BCRYPT_COST: '4', LOG_LEVEL: process.env.FB_TEST_LOG ?? 'silent', SESSION_CACHE_SECONDS: '0', ADMIN_EMAIL: '', ADMIN_PASSWORD: '',
  });
  outDir = mkdtempSync(join(tmpdir(), 'fieldbase-lambda-'));
  bundles = await buildLambdaBundles({ outDir });
  const load = async (name: string) => import(pathToFileURL(bundles.find((b) => b.spec.name === name)!.entryFile).href);
  // The migration step, as the deploy runs it.
  const migrated = await (await load('migrate')).handler({ RequestType: 'Create' });
  expect(migrated.PhysicalResourceId).toBe('fieldbase-migrations');
  installStreamingRuntime();
  for (const b of bundles) if (b.spec.group) handlers[b.spec.group as GroupName] = (await load(b.spec.name)).handler;
  exportsStream = (await load('exports')).streamHandler;
  const { createRouter } = await load('router');
  route = createRouter(async (group: GroupName, event: LambdaHttpEvent) => {
    const eventBytes = Buffer.byteLength(JSON.stringify(event));
    expect(eventBytes, `event for ${group} ${event.rawPath}`).toBeLessThanOrEqual(INVOKE_PAYLOAD_MAX);
    const result = await handlers[group](event, {});
    const size = Buffer.byteLength(JSON.stringify(result));
    expect(size, `result of ${group} ${event.rawPath}`).toBeLessThanOrEqual(INVOKE_PAYLOAD_MAX);
    invocations.push({ group, eventBytes, resultBytes: size });
    return result;
  });
  // The first administrator, and a Node server on the same database and bucket for bulk data.
  const deps = await createNodeDeps(loadConfig(process.env, { ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password }), { mailOutbox: false });
  await ensureFirstAdmin(systemCtx(deps));
  const app = withDeps(localApp(), () => ({ deps }));
  localFetch = (r) => app.fetch(r);
  closeLocal = () => deps.database.close();
}, 180_000);

afterAll(async () => {
  await closeLocal?.();
  // Let the bundles' pooled connections go before dropping the database.
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => {});
  await admin.end();
  await s3?.stop();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

/** One request through the router, as API Gateway or a Function URL would send it. */
async function call(kind: EventKind, req: HttpRequestSpec): Promise<LambdaHttpResult> {
  return route(httpEvent(kind, req));
}

const json = (r: LambdaHttpResult) => JSON.parse(resultBytes(r).toString('utf8'));
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function login(kind: EventKind): Promise<{ token: string; cookies: string[] }> {
  const res = await call(kind, { method: 'POST', path: '/v1/sessions', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(ADMIN) });
  expect(res.statusCode).toBe(200);
  return { token: json(res).token, cookies: res.cookies ?? [] };
}

/** A project with PHOTOS_FORM published and an App User allowed to submit to it. */
async function setUp(kind: EventKind, token: string, name: string) {
  const project = await call(kind, { method: 'POST', path: '/v1/projects', headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: JSON.stringify({ name }) });
  expect(project.statusCode).toBe(200);
  const projectId = json(project).id as number;
  const form = await call(kind, { method: 'POST', path: `/v1/projects/${projectId}/forms?publish=true`, headers: { ...bearer(token), 'Content-Type': 'application/xml' }, body: PHOTOS_FORM });
  expect(form.statusCode).toBe(200);
  expect(json(form).xmlFormId).toBe(PHOTOS_FORM_ID);
  const au = await call(kind, { method: 'POST', path: `/v1/projects/${projectId}/app-users`, headers: { ...bearer(token), 'Content-Type': 'application/json' }, body: JSON.stringify({ displayName: 'Collector' }) });
  expect(au.statusCode).toBe(200);
  const appUser = json(au) as { id: number; token: string };
  const assigned = await call(kind, { method: 'POST', path: `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}/assignments/app-user/${appUser.id}`, headers: bearer(token) });
  expect(assigned.statusCode).toBe(200);
  return { projectId, appUser };
}

function submit(kind: EventKind, key: string, projectId: number, xml: string, files: Parameters<typeof multipart>[1] = []) {
  const { body, type } = multipart(xml, files);
  return call(kind, { method: 'POST', path: `/v1/key/${key}/projects/${projectId}/submission`, headers: { ...OR, 'Content-Type': type }, body });
}

describe('Lambda bundles', () => {
  test('each group bundle carries its own group only and loads under 400 kB gzipped', () => {
    for (const b of bundles.filter((x) => x.spec.group)) {
      const others = b.inputs.filter((i) => i.startsWith('functions/') && !i.startsWith(`functions/${b.spec.group}/`));
      expect(others, b.spec.name).toEqual([]);
      expect(b.inputs.some((i) => i.startsWith('lib/xlsform/')), b.spec.name).toBe(b.spec.group === 'forms');
      expect(b.initGzipBytes, b.spec.name).toBeLessThanOrEqual(400_000);
      // The AWS SDK and nodemailer are in chunks loaded on first use, not at init.
      const initFiles = new Set(b.files.filter((f) => !f.lazy).map((f) => join(b.dir, f.path)));
      const outputs = b.metafile.outputs;
      for (const [path, o] of Object.entries(outputs)) {
        if (!initFiles.has(join(process.cwd(), path)) && !initFiles.has(path)) continue;
        expect(Object.keys(o.inputs).some((i) => i.includes('@aws-sdk/client-s3') || i.includes('nodemailer')), `${b.spec.name}: ${path}`).toBe(false);
      }
    }
  });

  for (const kind of ['apigw', 'url'] as const) {
    test(`the HTTP flow through ${kind === 'apigw' ? 'API Gateway (HTTP API)' : 'Function URL'} events`, async () => {
      const { token, cookies } = await login(kind);
      expect(cookies.some((c) => /session=/.test(c))).toBe(true);
      // The session cookie comes back in the event's cookies array; repeated headers are joined.
      const me = await call(kind, { method: 'GET', path: '/v1/users/current', headers: { Cookie: cookies.map((c) => c.split(';')[0]!).join('; '), Accept: ['application/json', 'text/plain'] } });
      expect(me.statusCode).toBe(200);
      expect(json(me).email).toBe(ADMIN.email);
      const { projectId, appUser } = await setUp(kind, token, `Lambda ${kind}`);
      const list = await call(kind, { method: 'GET', path: `/v1/key/${appUser.token}/projects/${projectId}/formList`, headers: OR });
      expect(list.statusCode).toBe(200);
      expect(resultBytes(list).toString()).toContain(`<formID>${PHOTOS_FORM_ID}</formID>`);
      const head = await call(kind, { method: 'HEAD', path: `/v1/key/${appUser.token}/projects/${projectId}/submission`, headers: OR });
      expect(head.statusCode).toBe(204);
      expect(resultHeader(head, 'x-openrosa-accept-content-length')).toBe('4400000');
      const front = jpeg(1, 200_000);
      const sent = await submit(kind, appUser.token, projectId, photosSubmission({ instanceId: `uuid:${kind}-1`, site: 'North', front: 'f.jpg' }), [{ name: 'f.jpg', bytes: front, type: 'image/jpeg' }]);
      expect(sent.statusCode).toBe(201);
      const F = `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}`;
      const photo = await call(kind, { method: 'GET', path: `${F}/submissions/uuid:${kind}-1/attachments/f.jpg`, headers: bearer(token) });
      expect(photo.statusCode).toBe(200);
      expect(photo.isBase64Encoded).toBe(true);
      expect(md5(resultBytes(photo))).toBe(md5(front));
      const csv = await call(kind, { method: 'GET', path: `${F}/submissions.csv`, headers: bearer(token) });
      expect(csv.statusCode).toBe(200);
      expect(resultHeader(csv, 'content-type')).toMatch(/^text\/csv/);
      expect(resultBytes(csv).toString()).toContain(`uuid:${kind}-1`);
      const zip = await call(kind, { method: 'GET', path: `${F}/submissions.csv.zip`, headers: bearer(token) });
      expect(zip.statusCode).toBe(200);
      const entries = unzipSync(new Uint8Array(resultBytes(zip)));
      expect(Object.keys(entries).sort()).toEqual(['media/f.jpg', `${PHOTOS_FORM_ID}.csv`]);
      expect(md5(entries['media/f.jpg']!)).toBe(md5(front));
      if (kind === 'url') {
        // The streaming exports function (Function URL, RESPONSE_STREAM) writes the ZIP as it is made.
        const streamed = await invokeStreaming(exportsStream, httpEvent('url', { method: 'GET', path: `${F}/submissions.csv.zip`, headers: bearer(token) }));
        expect(streamed.statusCode).toBe(200);
        expect(streamed.headers['content-type']).toBe('application/zip');
        expect(streamed.writes).toBeGreaterThan(2);
        const streamedEntries = unzipSync(new Uint8Array(streamed.body));
        expect(md5(streamedEntries['media/f.jpg']!)).toBe(md5(front));
      }
      const odata = await call(kind, { method: 'GET', path: `${F}.svc/Submissions`, headers: bearer(token) });
      expect(odata.statusCode).toBe(200);
      expect(json(odata).value.map((s: { __id: string }) => s.__id)).toEqual([`uuid:${kind}-1`]);
      // A path no group owns answers as the local server does.
      const nowhere = await call(kind, { method: 'GET', path: '/v1/nowhere', headers: bearer(token) });
      expect(nowhere.statusCode).toBe(404);
      expect(json(nowhere).code).toBe(404.1);
    });
  }

  test('a submission with over 6 MB of media reaches storage through several events under the cap (Collect splits its POSTs)', async () => {
    const { token } = await login('apigw');
    const { projectId, appUser } = await setUp('apigw', token, 'Split POSTs');
    const head = await call('apigw', { method: 'HEAD', path: `/v1/key/${appUser.token}/projects/${projectId}/submission`, headers: OR });
    const accept = Number(resultHeader(head, 'x-openrosa-accept-content-length'));
    const front = jpeg(11, 3_300_000);
    const back = jpeg(12, 3_300_000);
    expect(front.byteLength + back.byteLength).toBeGreaterThan(6_000_000);
    const xml = photosSubmission({ instanceId: 'uuid:split-1', site: 'South', front: 'front.jpg', back: 'back.jpg' });
    // Collect's rule: media go in POSTs of at most the advertised length, the XML in each.
    const posts = [[{ name: 'front.jpg', bytes: front, type: 'image/jpeg' }], [{ name: 'back.jpg', bytes: back, type: 'image/jpeg' }]];
    const before = invocations.length;
    for (const files of posts) {
      expect(multipart(xml, files).body.byteLength).toBeLessThanOrEqual(accept);
      expect((await submit('apigw', appUser.token, projectId, xml, files)).statusCode).toBe(201);
    }
    const submissionEvents = invocations.slice(before).filter((i) => i.group === 'submissions');
    expect(submissionEvents).toHaveLength(2);
    for (const e of submissionEvents) expect(e.eventBytes).toBeLessThan(INVOKE_PAYLOAD_MAX);
    const F = `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}`;
    const listed = await call('apigw', { method: 'GET', path: `${F}/submissions/uuid:split-1/attachments`, headers: bearer(token) });
    expect(json(listed)).toEqual([{ name: 'back.jpg', exists: true }, { name: 'front.jpg', exists: true }]);
    for (const [name, bytes] of [['front.jpg', front], ['back.jpg', back]] as const) {
      const got = await call('apigw', { method: 'GET', path: `${F}/submissions/uuid:split-1/attachments/${name}`, headers: bearer(token) });
      expect(got.statusCode).toBe(200);
      expect(md5(resultBytes(got))).toBe(md5(bytes));
    }
  });

  test('an attachment over the response cap redirects to a presigned S3 URL', async () => {
    const { token } = await login('apigw');
    const { projectId, appUser } = await setUp('apigw', token, 'Big attachment');
    // A 5 MB photo cannot come through Lambda (one file, over the request cap): the Node server takes it.
    const big = jpeg(21, 5_000_000);
    const xml = photosSubmission({ instanceId: 'uuid:big-1', site: 'East', front: 'big.jpg' });
    const { body, type } = multipart(xml, [{ name: 'big.jpg', bytes: big, type: 'image/jpeg' }]);
    const posted = await localFetch(new Request(`http://127.0.0.1/v1/key/${appUser.token}/projects/${projectId}/submission`, { method: 'POST', headers: { ...OR, 'Content-Type': type }, body }));
    expect(posted.status).toBe(201);
    const res = await call('apigw', { method: 'GET', path: `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}/submissions/uuid:big-1/attachments/big.jpg`, headers: bearer(token) });
    expect(res.statusCode).toBe(307);
    const location = resultHeader(res, 'location')!;
    expect(location).toMatch(/X-Amz-Expires=300/);
    const direct = await fetch(location);
    expect(direct.status).toBe(200);
    expect(direct.headers.get('content-type')).toBe('image/jpeg');
    expect(direct.headers.get('content-disposition')).toContain('big.jpg');
    expect(md5(new Uint8Array(await direct.arrayBuffer()))).toBe(md5(big));
  });

  test('a 50 MB export downloads through a presigned URL on the buffered path', async () => {
    const { token } = await login('apigw');
    const { projectId, appUser } = await setUp('apigw', token, 'Big export');
    const media: Record<string, string> = {};
    for (let i = 0; i < 11; i += 1) {
      const bytes = jpeg(100 + i, 4_700_000);
      const name = `p${i}.jpg`;
      media[`media/${name}`] = md5(bytes);
      const { body, type } = multipart(photosSubmission({ instanceId: `uuid:bulk-${i}`, site: `S${i}`, front: name }), [{ name, bytes, type: 'image/jpeg' }]);
      const posted = await localFetch(new Request(`http://127.0.0.1/v1/key/${appUser.token}/projects/${projectId}/submission`, { method: 'POST', headers: { ...OR, 'Content-Type': type }, body }));
      expect(posted.status).toBe(201);
    }
    const path = `/v1/projects/${projectId}/forms/${PHOTOS_FORM_ID}/submissions.csv.zip`;
    const res = await call('apigw', { method: 'GET', path, headers: bearer(token) });
    expect(res.statusCode).toBe(307);
    const direct = await fetch(resultHeader(res, 'location')!);
    expect(direct.status).toBe(200);
    expect(direct.headers.get('content-type')).toBe('application/zip');
    expect(direct.headers.get('content-disposition')).toContain(`${PHOTOS_FORM_ID}.zip`);
    const zip = new Uint8Array(await direct.arrayBuffer());
    expect(zip.byteLength).toBeGreaterThan(50_000_000);
    const entries = unzipSync(zip);
    expect(Object.keys(entries).filter((k) => k.startsWith('media/')).sort()).toEqual(Object.keys(media).sort());
    for (const [name, sum] of Object.entries(media)) expect(md5(entries[name]!)).toBe(sum);
  }, 120_000);
});

/** Paths of every route table entry (checked below: each entry is hit), and some no group owns. */
const SAMPLE_PATHS = [
  '/v1/projects/1/assignments', '/v1/projects/1/assignments/manager/5', '/v1/projects/1/forms/f/assignments',
  '/v1/projects/1/forms/f/assignments/app-user/3', '/v1/roles', '/v1/roles/admin', '/v1/assignments', '/v1/assignments/admin/1',
  '/v1/projects/1/app-users', '/v1/projects/1/app-users/4', '/v1/projects/1/actor-properties', '/v1/projects/1/actor-properties/x',
  '/v1/users', '/v1/users/current', '/v1/users/3/password', '/v1/sessions', '/v1/sessions/restore', '/v1/sessions/tok',
  '/v1/user-preferences/site/x', '/v1/config', '/v1/config/public/logo', '/v1/audits', '/v1/audits/x',
  '/v1/projects/1/forms/f.svc', '/v1/projects/1/forms/f.svc/Submissions', '/v1/projects/1/forms/f/draft.svc/$metadata',
  '/v1/projects/1/forms/f/submissions.csv', '/v1/projects/1/forms/f/submissions.csv.zip', '/v1/projects/1/forms/f/draft/submissions.csv.zip',
  '/v1/projects/1/forms/f/submissions.geojson', '/v1/projects/1/forms/f/submissions/uuid:1.geojson', '/v1/projects/1/forms/f/submissions/s/versions/v.geojson',
  '/v1/projects/1/submission', '/v1/projects/1/forms/f/draft/submission', '/v1/test/tok/projects/1/forms/f/draft/submission',
  '/v1/test/tok/projects/1/forms/f/draft/submissions', '/v1/projects/1/forms/f/submissions', '/v1/projects/1/forms/f/submissions/uuid:1/attachments/a.jpg',
  '/v1/projects/1/forms/f/draft/submissions/keys', '/v1/projects/1/formList', '/v1/form-links/abc/form', '/v1/projects/1/forms',
  '/v1/projects/1/forms/f', '/v1/projects/1/forms/f.xml', '/v1/projects/1/forms/f/draft/publish', '/v1/test/tok/projects/1/forms/f/draft/formList',
  '/v1/test/tok/projects/1/forms/f/draft/manifest', '/v1/projects/1/datasets', '/v1/projects/1/datasets/people/entities/1',
  '/v1/projects/1/datasets/people.svc/Entities', '/v1/projects/1/trash/datasets/3/entities.csv', '/v1/projects', '/v1/projects/',
  '/v1/projects/1', '/v1/projects/1/key', '/v1/nowhere', '/v2/projects', '/elsewhere', '/v1/projects/1/trash',
];

describe('AWS stack (CDK, synthesized offline)', () => {
  type Resource = { Type: string; Properties: Record<string, any>; DependsOn?: string[] };
  let resources: Record<string, Resource>;
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const label = (id: string) => resources[id]!.Properties.Environment?.Variables?.FIELDBASE_FUNCTION as string;
  const arnTarget = (v: any): string => v?.['Fn::GetAtt']?.[0] ?? v?.Ref;

  beforeAll(() => {
    const { template } = synthesize({ bundleDir: outDir }, join(outDir, 'cdk.out'));
    resources = template.Resources as Record<string, Resource>;
  }, 120_000);

  test('one function per group, each from its own bundle, behind the migration step; secrets by reference', () => {
    const fns = ofType('AWS::Lambda::Function').filter(([id]) => label(id));
    const labels = fns.map(([id]) => label(id)).sort();
    expect(labels).toEqual([...lambdaFunctions.map((f) => f.group), 'exports-stream', 'migrate', 'router', 'scheduled'].sort());
    const [migrationId] = ofType('AWS::CloudFormation::CustomResource')[0]!;
    for (const [id, r] of fns) {
      const env = r.Properties.Environment.Variables;
      expect(JSON.stringify(env.DATABASE_URL)).toContain('{{resolve:secretsmanager:');
      expect(env.S3_BUCKET).toBeDefined();
      // The router touches no database; everything else waits for the migrations.
      if (!['migrate', 'router'].includes(label(id))) expect(r.DependsOn ?? [], label(id)).toContain(migrationId);
    }
  });

  test('exports stream through a Function URL in RESPONSE_STREAM mode', () => {
    const urls = ofType('AWS::Lambda::Url');
    expect(urls).toHaveLength(1);
    const url = urls[0]![1].Properties;
    expect(url.InvokeMode).toBe('RESPONSE_STREAM');
    const target = arnTarget(url.TargetFunctionArn);
    expect(label(target)).toBe('exports-stream');
    expect(resources[target]!.Properties.Handler).toBe('index.streamHandler');
  });

  test('the schedules call the scheduled-jobs function with every job of lib/jobs/scheduled.ts', () => {
    const rules = ofType('AWS::Events::Rule').map(([, r]) => r.Properties);
    expect(rules.map((r) => r.ScheduleExpression).sort()).toEqual(SCHEDULE.map((s) => s.rate).sort());
    for (const rule of rules) {
      const target = rule.Targets[0];
      expect(label(arnTarget(target.Arn))).toBe('scheduled');
      const expected = SCHEDULE.find((s) => s.rate === rule.ScheduleExpression)!;
      expect(JSON.parse(target.Input).jobs).toEqual(expected.jobs);
    }
  });

  test('temporary objects expire: the bucket lifecycle rule for tmp/', () => {
    const [, bucket] = ofType('AWS::S3::Bucket')[0]!;
    const rule = bucket.Properties.LifecycleConfiguration.Rules.find((r: any) => r.Prefix === 'tmp/');
    expect(rule.ExpirationInDays).toBe(1);
  });

  test('the HTTP API routes every route table entry to its group (direct routes or the router)', () => {
    const integrationGroup = new Map(ofType('AWS::ApiGatewayV2::Integration').map(([id, r]) => [id, label(arnTarget(r.Properties.IntegrationUri))]));
    const routes = new Map(ofType('AWS::ApiGatewayV2::Route').map(([, r]) => {
      const integration = (r.Properties.Target['Fn::Join'][1] as any[]).map((p) => p.Ref).find(Boolean);
      return [r.Properties.RouteKey as string, integrationGroup.get(integration)!];
    }));
    expect(routes.get('$default')).toBe('router');
    const paths = [...routes.keys()].filter((k) => k !== '$default').map((k) => k.replace(/^ANY /, ''));
    const hit = new Set<number>();
    // Hand-written samples, plus one derived from each entry (so a new entry is covered too).
    const derived = routeTable.map(([re]) => samplePathFor(re)).filter((p): p is string => p != null);
    const samples = [...SAMPLE_PATHS, ...derived];
    for (const sample of [...samples, ...samples.filter((p) => p.startsWith('/v1/')).map((p) => `/v1/key/T0k3n${p.slice(3)}`)]) {
      const routed = routingPath(new Request(`https://x${sample}`));
      routeTable.forEach(([re], i) => { if (re.test(routed) && routeTable.findIndex(([r]) => r.test(routed)) === i) hit.add(i); });
      const route = matchHttpApiRoute(paths, sample);
      const fn = route == null ? routes.get('$default')! : routes.get(`ANY ${route}`)!;
      const reached = fn === 'router' ? groupForEvent({ rawPath: sample }) : fn;
      expect(reached, sample).toBe(groupFor(routed));
    }
    expect([...hit].sort((a, b) => a - b)).toEqual(routeTable.map((_, i) => i));
  });
});
