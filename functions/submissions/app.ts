/** Submissions group: OpenRosa submission ingestion and the REST read endpoints (the rest of the REST side comes next). */
import { groupApp } from '../../lib/http/app';
import { submissionOpenRosaRoutes } from './openrosa';
import { submissionRestRoutes } from './rest';

const app = groupApp().route('/', submissionOpenRosaRoutes).route('/', submissionRestRoutes);

export default app;
