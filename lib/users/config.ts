import { canOrReject, speciesActee } from '../authz/can';
import { species } from '../authz/verbs';
import type { Ctx } from '../context';
import { problems } from '../problem';

/**
 * The public server configuration (GET /v1/config/public, central-api.yaml): login appearance,
 * logo and hero image. Fieldbase stores none of them yet, so the object is empty (Central's answer
 * when nothing is configured). Pure; open to anyone.
 */
export function publicConfig(): Record<string, unknown> {
  return {};
}

/**
 * One configuration entry (GET /v1/config/{key}: analytics, login-appearance…). None can be set
 * yet, so a reader with config.read gets 404.1, as Central answers for an unset key (the UI asks
 * for `analytics` after login and expects that 404).
 * @throws 401.2/403.1 without config.read; 404.1 otherwise.
 */
export async function getConfig(ctx: Ctx, _key: string): Promise<never> {
  await canOrReject(ctx, 'config.read', speciesActee(species.config));
  throw problems.user.notFound();
}
