import { handle } from 'hono/aws-lambda';
import { lambdaApp } from '../../lib/runtime/lambda';
import app from './app';

/** AWS Lambda entry (API Gateway / function URL). */
export const handler = handle(lambdaApp(app));
