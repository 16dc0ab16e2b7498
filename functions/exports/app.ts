/** Exports group: streaming CSV and ZIP exports of submissions, and the OData feeds. */
import { groupApp } from '../../lib/http/app';
import { csvRoutes } from './csv';
import { odataRoutes } from './odata';

const app = groupApp().route('/', csvRoutes).route('/', odataRoutes);

export default app;
