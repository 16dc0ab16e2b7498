/** Users group: users, sessions and App Users (the sub-route files carry no middleware; this app adds it once). */
import { groupApp } from '../../lib/http/app';
import { appUsersRoutes } from './app-users';
import { sessionsRoutes } from './sessions';
import { usersRoutes } from './users';

const app = groupApp().route('/', usersRoutes).route('/', sessionsRoutes).route('/', appUsersRoutes);

export default app;
