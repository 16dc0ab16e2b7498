/** Submissions group: OpenRosa submission ingestion and the REST read endpoints (the rest of the REST side comes next). */
import { groupApp } from '../../lib/http/app';
// Registers lib/entities' job handlers in this bundle, so entity work runs right after the request's commit.
import '../../lib/entities';
import { submissionOpenRosaRoutes } from './openrosa';
import { submissionRestRoutes } from './rest';

const app = groupApp().route('/', submissionOpenRosaRoutes).route('/', submissionRestRoutes);

export default app;
