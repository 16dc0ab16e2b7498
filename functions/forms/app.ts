/** Forms group: forms, drafts, versions, form attachments, trash, public links, and the OpenRosa form list/manifest. */
import { groupApp } from '../../lib/http/app';
import { draftRoutes } from './drafts';
import { formsRoutes } from './forms';
import { openRosaRoutes } from './openrosa';
import { publicLinksRoutes } from './public-links';
import { versionRoutes } from './versions';

// Order matters: suffix routes (draft.xml, versions/x.xml) before the plain :xmlFormId routes.
const app = groupApp().route('/', openRosaRoutes).route('/', draftRoutes).route('/', versionRoutes).route('/', publicLinksRoutes)
  .route('/', formsRoutes);

export default app;
