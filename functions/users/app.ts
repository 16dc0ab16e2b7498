/** Users group: users, sessions, App Users, user preferences, configuration, the analytics preview and /v1/backup (the sub-route files carry no middleware; this app adds it once). */
import { groupApp } from '../../lib/http/app';
import { actorPropertiesRoutes } from './actor-properties';
import { analyticsRoutes } from './analytics';
import { appUsersRoutes } from './app-users';
import { sessionsRoutes } from './sessions';
import { preferencesRoutes } from './preferences';
import { usersRoutes } from './users';

const app = groupApp().route('/', usersRoutes).route('/', sessionsRoutes).route('/', appUsersRoutes).route('/', actorPropertiesRoutes).route('/', preferencesRoutes)
  .route('/', analyticsRoutes);

export default app;
