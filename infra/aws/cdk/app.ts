/**
 * The CDK app for the aws-cdk CLI: `npm run deploy:aws` runs
 * `npx aws-cdk@2 deploy --app "npx tsx infra/aws/cdk/app.ts"`, which needs network and AWS
 * credentials. It builds the bundles into dist/lambda (or uses `-c bundleDir=…`) and defines the
 * stack; the CLI gives the output folder (CDK_OUTDIR). Settings come from CDK context:
 * secretName, secretKeys (comma-separated), env (a JSON object of plain settings), subnetIds,
 * securityGroupIds, vpcId (comma-separated ids).
 */
import { App } from 'aws-cdk-lib';
import { resolve } from 'node:path';
import { buildLambdaBundles } from '../build';
import { FieldbaseStack, type FieldbaseSettings } from './stack';

const app = new App();
const ctx = (k: string): string | undefined => app.node.tryGetContext(k) ?? undefined;
const list = (k: string) => ctx(k)?.split(',').map((s) => s.trim()).filter(Boolean);
let bundleDir = ctx('bundleDir');
if (!bundleDir) {
  bundleDir = resolve('dist/lambda');
  await buildLambdaBundles({ outDir: bundleDir });
}
const environment: Record<string, string> = {};
// `-c env='{"PUBLIC_URL":"https://…"}'` arrives as a JSON string; cdk.json context as an object.
const rawEnv = app.node.tryGetContext('env') as string | Record<string, unknown> | undefined;
const envObject = typeof rawEnv === 'string' ? (JSON.parse(rawEnv) as Record<string, unknown>) : rawEnv ?? {};
for (const [k, v] of Object.entries(envObject)) environment[k] = String(v);
const settings: FieldbaseSettings = {
  bundleDir,
  ...(ctx('secretName') ? { secretName: ctx('secretName')! } : {}),
  ...(list('secretKeys') ? { secretKeys: list('secretKeys')! } : {}),
  ...(list('subnetIds') ? { subnetIds: list('subnetIds')! } : {}),
  ...(list('securityGroupIds') ? { securityGroupIds: list('securityGroupIds')! } : {}),
  ...(ctx('vpcId') ? { vpcId: ctx('vpcId')! } : {}),
  environment,
};
new FieldbaseStack(app, ctx('stackName') ?? 'Fieldbase', settings);
app.synth();
