import { streamHandle } from 'hono/aws-lambda';
import { lambdaApp } from '../../lib/runtime/lambda';
import app from './app';

/** AWS Lambda entry with response streaming: exports leave as they are produced. */
export const handler = streamHandle(lambdaApp(app));
