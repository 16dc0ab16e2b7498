/** Submissions group: OpenRosa submission ingestion (REST submission endpoints come next). */
import { groupApp } from '../../lib/http/app';
import { submissionOpenRosaRoutes } from './openrosa';

const app = groupApp().route('/', submissionOpenRosaRoutes);

export default app;
