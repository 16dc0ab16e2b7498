/**
 * AWS Lambda: one function per endpoint group, built from functions/<group>/lambda.ts by
 * infra/aws/build.ts. An API Gateway HTTP API (or a CloudFront behaviour per pattern) routes to them
 * in the order of lib/http/route-table.ts; `$default` can point at a small function that runs the
 * same dispatcher. Settings below are what the build and the deployment template read.
 */
export interface LambdaFunction {
  group: string;
  entry: string;
  memoryMb: number;
  timeoutSeconds: number;
  /** Response streaming (hono/aws-lambda streamHandle): the exports group. */
  streaming: boolean;
}

export const lambdaFunctions: LambdaFunction[] = [
  { group: 'projects', entry: 'functions/projects/lambda.ts', memoryMb: 512, timeoutSeconds: 15, streaming: false },
  { group: 'assignments', entry: 'functions/assignments/lambda.ts', memoryMb: 512, timeoutSeconds: 15, streaming: false },
  // bcrypt at cost 12 is CPU-bound: more memory buys more CPU on Lambda.
  { group: 'users', entry: 'functions/users/lambda.ts', memoryMb: 1024, timeoutSeconds: 15, streaming: false },
  { group: 'forms', entry: 'functions/forms/lambda.ts', memoryMb: 1024, timeoutSeconds: 30, streaming: false },
  // Submissions carry media up to 100 MB: more memory and time.
  { group: 'submissions', entry: 'functions/submissions/lambda.ts', memoryMb: 2048, timeoutSeconds: 60, streaming: false },
  // Exports stream for as long as the client reads: response streaming, long timeout.
  { group: 'exports', entry: 'functions/exports/lambda.ts', memoryMb: 1024, timeoutSeconds: 900, streaming: true },
  { group: 'audits', entry: 'functions/audits/lambda.ts', memoryMb: 512, timeoutSeconds: 30, streaming: false },
  // Entity lists: bulk creation and the entities.csv download run longer.
  { group: 'entities', entry: 'functions/entities/lambda.ts', memoryMb: 1024, timeoutSeconds: 60, streaming: false },
];
