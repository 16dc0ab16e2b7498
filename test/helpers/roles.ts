/** A web user with a project role, for rights tests. Test-only. */
import { expect } from 'vitest';
import { json, type As, type Harness } from './harness';

/**
 * Creates a web user (as alice), assigns it `role` on the harness's project and logs it in.
 * @returns its Bearer credentials.
 */
export async function userWithRole(h: Harness, role: string, email: string): Promise<As> {
  const password = `${email}-password-1`;
  const user = await json<{ id: number }>(await h.post('/v1/users', { as: 'alice', body: { email, password } }));
  expect((await h.post(`/v1/projects/${h.projectId}/assignments/${role}/${user.id}`, { as: 'alice' })).status).toBe(200);
  const session = await json<{ token: string }>(await h.post('/v1/sessions', { body: { email, password } }));
  return { bearer: session.token };
}
