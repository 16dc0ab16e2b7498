import { withDeps } from '../../lib/runtime/entry';
import { createWorkerDeps } from '../../lib/runtime/workers';
import app from './app';

/** Cloudflare Workers entry: a Hono app is a Workers module; deps come from the bindings. */
export default withDeps(app, createWorkerDeps);
