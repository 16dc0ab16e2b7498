/** Exports group: streaming CSV and ZIP exports of submissions (OData joins it later). */
import { groupApp } from '../../lib/http/app';
import { csvRoutes } from './csv';

const app = groupApp().route('/', csvRoutes);

export default app;
