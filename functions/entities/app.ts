/** Entities group: Datasets (P/datasets…), their Entities (D/entities…), OData (D.svc) and GeoJSON. */
import { groupApp } from '../../lib/http/app';
import { datasetsRoutes } from './datasets';
import { entitiesRoutes } from './entities';
import { geojsonRoutes } from './geojson';
import { odataRoutes } from './odata';

// Order matters: D.svc, GeoJSON, entities.csv and the D/entities routes before the plain D routes.
const app = groupApp().route('/', odataRoutes).route('/', geojsonRoutes).route('/', entitiesRoutes).route('/', datasetsRoutes);

export default app;
