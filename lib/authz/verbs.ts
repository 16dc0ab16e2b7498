/**
 * System roles and their verbs, as Central seeds them (central-api.yaml, Roles; the verb names are
 * Central's). Synced into the `roles` table by lib/db/migrate.ts, in this order, so ids are stable:
 * admin 1, app-user 2, pwreset 3, manager 4, viewer 5, formview 6, formfill 7, pub-link 8.
 * Later issues add verbs here (one place); the sync rewrites the rows.
 */
const managerVerbs = [
  'project.read', 'project.update', 'project.delete',
  'form.create', 'form.delete', 'form.list', 'form.read', 'form.update', 'form.restore',
  'submission.create', 'submission.read', 'submission.list', 'submission.update',
  'submission.delete', 'submission.restore',
  'field_key.create', 'field_key.delete', 'field_key.list',
  'assignment.list', 'assignment.create', 'assignment.delete',
  'public_link.create', 'public_link.list', 'public_link.read', 'public_link.update', 'public_link.delete',
  'session.end',
  'dataset.list', 'dataset.read', 'dataset.create', 'dataset.update',
  'entity.list', 'entity.read', 'entity.create', 'entity.update', 'entity.delete', 'entity.restore',
  // Central migration 20260119-01 (deleting Datasets).
  'dataset.delete',
  // Central migration 20260521-01 appends these to admin and manager (viewer gets actor_property.list).
  'actor_property.list', 'actor_property.update', 'field_key.update',
] as const;

const adminOnlyVerbs = [
  'project.create',
  'config.read', 'config.set',
  'user.create', 'user.list', 'user.read', 'user.update', 'user.delete', 'user.password.invalidate',
  'role.create', 'role.update', 'role.delete',
  'audit.read', 'backup.run', 'analytics.read',
] as const;

export const systemRoles = [
  { system: 'admin', name: 'Administrator', verbs: [...adminOnlyVerbs, ...managerVerbs] },
  { system: 'app-user', name: 'App User', verbs: ['open_form.read', 'submission.create'] },
  { system: 'pwreset', name: 'Password Reset Token', verbs: ['user.password.reset'] },
  { system: 'manager', name: 'Project Manager', verbs: [...managerVerbs] },
  {
    system: 'viewer',
    name: 'Project Viewer',
    verbs: ['project.read', 'form.list', 'form.read', 'submission.read', 'submission.list',
      'dataset.list', 'dataset.read', 'entity.list', 'entity.read', 'actor_property.list'],
  },
  { system: 'formview', name: 'Form Viewer (system internal)', verbs: ['open_form.read'] },
  {
    system: 'formfill',
    name: 'Data Collector',
    verbs: ['project.read', 'open_form.list', 'open_form.read', 'submission.create'],
  },
  { system: 'pub-link', name: 'Public Link', verbs: ['open_form.read', 'submission.create'] },
] as const satisfies ReadonlyArray<{ system: string; name: string; verbs: readonly string[] }>;

export type SystemRoleName = (typeof systemRoles)[number]['system'];

/**
 * Verbs that imply others (Central: holding form.list lets you list open forms too), used when
 * checking whether an actor may grant a role.
 */
export const impliedVerbs: Record<string, string[]> = {
  'form.list': ['open_form.list'],
  'form.read': ['open_form.read'],
};

/** Species actee ids: an assignment on one of these reaches every thing of that kind. */
export const species = {
  all: '*',
  user: 'user',
  fieldKey: 'field_key',
  project: 'project',
  form: 'form',
  role: 'role',
  assignment: 'assignment',
  audit: 'audit',
  config: 'config',
  system: 'system',
} as const;
