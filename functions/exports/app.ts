/** Exports group: streaming CSV and ZIP exports of submissions, the OData feeds and submissions' GeoJSON. */
import { groupApp } from '../../lib/http/app';
import { csvRoutes } from './csv';
import { geojsonRoutes } from './geojson';
import { odataRoutes } from './odata';

const app = groupApp().route('/', csvRoutes).route('/', odataRoutes).route('/', geojsonRoutes);

export default app;
