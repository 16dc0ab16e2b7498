/**
 * The AWS deployment as code (AWS CDK): one Lambda function per endpoint group
 * (infra/aws/functions.ts), an API Gateway HTTP API routing by the route table (direct routes from
 * infra/aws/routes.ts, the rest through the router function), a Function URL in RESPONSE_STREAM
 * mode for exports, the S3 bucket, EventBridge schedules for the jobs (lib/jobs/scheduled.ts
 * SCHEDULE), configuration and secrets, and the migration step (a custom resource).
 *
 * The stack is environment-agnostic and does no lookups, so it synthesizes offline with no AWS
 * credentials (`npm run synth:aws`); code assets are the prebuilt bundles (infra/aws/build.ts).
 * Deploy with `npm run deploy:aws` (README, Deploy on AWS).
 */
import { App, Aws, CfnOutput, CustomResource, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { HttpApi, HttpMethod } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { SecurityGroup, Subnet, Vpc } from 'aws-cdk-lib/aws-ec2';
import { Rule, RuleTargetInput, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Architecture, Code, Function as LambdaFn, FunctionUrlAuthType, InvokeMode, Runtime, type FunctionProps } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, HttpMethods } from 'aws-cdk-lib/aws-s3';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Provider } from 'aws-cdk-lib/custom-resources';
import type { Construct } from 'constructs';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCHEDULE } from '../../../lib/jobs/scheduled';
import { lambdaFunctions } from '../functions';
import { directRoutes } from '../routes';

/** Deployment settings (CDK context `-c key=value`, or the props of synthesize). */
export interface FieldbaseSettings {
  /** Folder of the built bundles (infra/aws/build.ts): <bundleDir>/<name>/index.mjs. */
  bundleDir: string;
  /**
   * Secrets Manager secret (name) holding a JSON object with DATABASE_URL and any of SECRET_KEYS;
   * created by the operator before the first deploy. Default `fieldbase/config`.
   */
  secretName?: string;
  /** Keys of that secret to pass beyond DATABASE_URL (e.g. EMAIL_PASSWORD). */
  secretKeys?: string[];
  /** Plain settings for every function (PUBLIC_URL, EMAIL_HOST, DATABASE_PREPARE=false, ...). */
  environment?: Record<string, string>;
  /** VPC subnets and security groups for a private database (ids; no lookup). */
  subnetIds?: string[];
  securityGroupIds?: string[];
  vpcId?: string;
}

/** Extra variables that may come from the secret (beside DATABASE_URL). */
export const SECRET_KEYS = ['EMAIL_PASSWORD', 'S3_SECRET_ACCESS_KEY', 'ADMIN_PASSWORD'];

/** A short hash of the migrations folder: the migration resource runs again when it changes. */
function migrationsHash(dir: string): string {
  const h = createHash('sha256');
  for (const f of readdirSync(dir, { recursive: true }).map(String).sort()) {
    try {
      h.update(f).update(readFileSync(join(dir, f)));
    } catch {
      // a folder
    }
  }
  return h.digest('hex').slice(0, 16);
}

export class FieldbaseStack extends Stack {
  constructor(scope: Construct, id: string, settings: FieldbaseSettings, props: StackProps = {}) {
    super(scope, id, { description: 'Fieldbase: ODK Central-compatible survey server on Lambda', ...props });
    const bucket = new Bucket(this, 'Blobs', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [
        // Generated exports served through presigned URLs, and media staged while they stream in.
        { id: 'temporary-objects', prefix: 'tmp/', expiration: Duration.days(1), abortIncompleteMultipartUploadAfter: Duration.days(1) },
        { id: 'abandoned-uploads', abortIncompleteMultipartUploadAfter: Duration.days(2) },
      ],
      // Browsers (the web UI) follow a 307 to a presigned URL with a GET from another origin.
      cors: [{ allowedMethods: [HttpMethods.GET, HttpMethods.HEAD], allowedOrigins: ['*'], allowedHeaders: ['*'], maxAge: 3000 }],
    });
    const secret = Secret.fromSecretNameV2(this, 'Config', settings.secretName ?? 'fieldbase/config');
    // CloudFormation resolves the secret at deploy time (a dynamic reference): the value is never
    // in the template. Changing it takes a redeploy (README, Deploy on AWS).
    const fromSecret = (key: string) => secret.secretValueFromJson(key).unsafeUnwrap();
    const environment: Record<string, string> = {
      DATABASE_URL: fromSecret('DATABASE_URL'),
      ...Object.fromEntries((settings.secretKeys ?? []).filter((k) => SECRET_KEYS.includes(k)).map((k) => [k, fromSecret(k)])),
      S3_BUCKET: bucket.bucketName,
      S3_REGION: Aws.REGION,
      NODE_OPTIONS: '--disable-warning=NodeVersionSupportWarning',
      ...settings.environment,
    };
    const vpc = settings.subnetIds?.length
      ? {
        vpc: Vpc.fromVpcAttributes(this, 'Vpc', { vpcId: settings.vpcId ?? 'vpc-unknown', availabilityZones: Stack.of(this).availabilityZones.slice(0, settings.subnetIds.length) }),
        vpcSubnets: { subnets: settings.subnetIds.map((s, i) => Subnet.fromSubnetId(this, `Subnet${i}`, s)) },
        securityGroups: (settings.securityGroupIds ?? []).map((s, i) => SecurityGroup.fromSecurityGroupId(this, `Sg${i}`, s)),
      }
      : {};
    const fn = (id: string, bundle: string, label: string, props: Partial<FunctionProps>) => {
      const f = new LambdaFn(this, id, {
        runtime: Runtime.NODEJS_22_X,
        architecture: Architecture.ARM_64,
        code: Code.fromAsset(join(settings.bundleDir, bundle)),
        handler: 'index.handler',
        memorySize: 512,
        timeout: Duration.seconds(30),
        logGroup: new LogGroup(this, `${id}Logs`, { retention: RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY }),
        ...vpc,
        ...props,
        environment: { ...environment, FIELDBASE_FUNCTION: label, ...props.environment },
      });
      bucket.grantReadWrite(f);
      bucket.grantDelete(f);
      return f;
    };

    // The migration step: runs before any group function is created or updated.
    const migrate = fn('Migrate', 'migrate', 'migrate', { timeout: Duration.minutes(10), memorySize: 512 });
    const provider = new Provider(this, 'MigrateProvider', { onEventHandler: migrate });
    const migrations = new CustomResource(this, 'Migrations', {
      serviceToken: provider.serviceToken,
      properties: { migrations: migrationsHash(join(settings.bundleDir, 'migrate', 'migrations')) },
    });

    const groups = new Map<string, LambdaFn>();
    for (const spec of lambdaFunctions) {
      const f = fn(`Group${spec.group[0]!.toUpperCase()}${spec.group.slice(1)}`, spec.group, spec.group, {
        memorySize: spec.memoryMb,
        // API Gateway gives up after 30 s: the buffered functions need no longer.
        timeout: Duration.seconds(Math.min(spec.timeoutSeconds, 30)),
      });
      f.node.addDependency(migrations);
      groups.set(spec.group, f);
    }
    // Exports also stream: the same asset's streamHandler behind a Function URL in RESPONSE_STREAM mode.
    const exportsSpec = lambdaFunctions.find((s) => s.streaming)!;
    const exportsStream = fn('GroupExportsStream', exportsSpec.group, `${exportsSpec.group}-stream`, {
      handler: 'index.streamHandler', memorySize: exportsSpec.memoryMb, timeout: Duration.seconds(exportsSpec.timeoutSeconds),
    });
    exportsStream.node.addDependency(migrations);
    const streamUrl = exportsStream.addFunctionUrl({ authType: FunctionUrlAuthType.NONE, invokeMode: InvokeMode.RESPONSE_STREAM });

    // The router: `$default` of the HTTP API, invoking the group the route table names.
    const router = fn('Router', 'router', 'router', {
      memorySize: 256,
      timeout: Duration.seconds(30),
      environment: Object.fromEntries([...groups].map(([g, f]) => [`FUNCTION_${g.toUpperCase()}`, f.functionName])),
    });
    for (const f of groups.values()) f.grantInvoke(router);

    const integrations = new Map([...groups].map(([g, f]) => [g, new HttpLambdaIntegration(`${g}Integration`, f)]));
    const api = new HttpApi(this, 'Api', {
      description: 'Fieldbase API (routes follow lib/http/route-table.ts)',
      defaultIntegration: new HttpLambdaIntegration('RouterIntegration', router),
    });
    for (const r of directRoutes) api.addRoutes({ path: r.path, methods: [HttpMethod.ANY], integration: integrations.get(r.group)! });

    // The scheduled jobs: one rule per SCHEDULE entry, calling the same job functions as the CLI.
    const scheduled = fn('Scheduled', 'scheduled', 'scheduled', { timeout: Duration.minutes(15), memorySize: 1024 });
    scheduled.node.addDependency(migrations);
    SCHEDULE.forEach((s, i) => {
      new Rule(this, `Schedule${i}`, {
        description: `Fieldbase jobs: ${s.jobs.join(', ')}`,
        schedule: Schedule.expression(s.rate),
        targets: [new LambdaFunction(scheduled, { event: RuleTargetInput.fromObject({ jobs: s.jobs }), retryAttempts: 2 })],
      });
    });

    new CfnOutput(this, 'ApiUrl', { value: api.apiEndpoint, description: 'The server URL (Collect, the web UI, the API)' });
    new CfnOutput(this, 'ExportsStreamUrl', { value: streamUrl.url, description: 'Exports without the 6 MB response cap (same paths)' });
    new CfnOutput(this, 'BucketName', { value: bucket.bucketName });
  }
}

/**
 * Synthesizes the stack into `outdir` (a cloud assembly: template JSON and staged assets) with no
 * network and no credentials.
 * @returns the template object and its path.
 */
export function synthesize(settings: FieldbaseSettings, outdir: string): { template: Record<string, unknown>; templatePath: string } {
  const app = new App({ outdir });
  const stack = new FieldbaseStack(app, 'Fieldbase', settings);
  const assembly = app.synth();
  const artifact = assembly.getStackByName(stack.stackName);
  return { template: artifact.template as Record<string, unknown>, templatePath: join(outdir, artifact.templateFile) };
}
