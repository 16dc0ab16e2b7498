/** Entities group: Datasets (P/datasets…) and their Entities (D/entities…). */
import { groupApp } from '../../lib/http/app';
import { datasetsRoutes } from './datasets';
import { entitiesRoutes } from './entities';

// Order matters: entities.csv and the D/entities routes before the plain D routes.
const app = groupApp().route('/', entitiesRoutes).route('/', datasetsRoutes);

export default app;
