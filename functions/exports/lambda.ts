import { handle, streamHandle } from 'hono/aws-lambda';
import { lambdaApp } from '../../lib/runtime/lambda';
import app from './app';

/**
 * AWS Lambda entries of the exports group, one asset for two functions (infra/aws/cdk):
 * - `handler`: API Gateway (buffered); an export over RESPONSE_MAX_BYTES answers 307 to a
 *   presigned S3 URL of a temporary copy.
 * - `streamHandler`: a Function URL in RESPONSE_STREAM mode; exports leave as they are produced,
 *   whatever their size. Defined where the Lambda runtime provides `awslambda` (streamifyResponse).
 */
export const handler = handle(lambdaApp(app, 'buffered'));

export const streamHandler = (globalThis as { awslambda?: unknown }).awslambda
  ? streamHandle(lambdaApp(app, 'streaming'))
  : undefined;
