/**
 * User preferences keep their JSON type on the way back: a string that looks like a number (the
 * UI's whatsNewDismissed version, '2026.2') stays a string in the extended /v1/users/current, as
 * Central returns it. Real HTTP over a loopback socket, Bearer session.
 */
import { expect, test } from 'vitest';
import { fixtureUsers } from '../../fixtures/users';
import { harness } from '../../helpers/harness';

test('PUT site and project preferences of every JSON type, read back unchanged', async () => {
  const h = await harness();
  const base = await h.listen();
  const headers = { Authorization: `Bearer ${fixtureUsers.bob.token}`, 'Content-Type': 'application/json' };
  const values: Record<string, unknown> = { whatsNewDismissed: '2026.2', digits: '42', word: 'true', flag: false, n: 3.5, list: ['1', 2], obj: { a: '1' }, nothing: null };
  for (const [name, propertyValue] of Object.entries(values)) {
    const res = await fetch(`${base}/v1/user-preferences/site/${name}`, { method: 'PUT', headers, body: JSON.stringify({ propertyValue }) });
    expect(res.status).toBe(200);
  }
  const put = await fetch(`${base}/v1/user-preferences/project/${h.projectId}/formSortMode`, { method: 'PUT', headers, body: JSON.stringify({ propertyValue: 'alphabetical' }) });
  expect(put.status).toBe(200);
  const me = await fetch(`${base}/v1/users/current`, { headers: { ...headers, 'X-Extended-Metadata': 'true' } });
  const { preferences } = (await me.json()) as { preferences: unknown };
  expect(preferences).toEqual({ site: values, projects: { [String(h.projectId)]: { formSortMode: 'alphabetical' } } });
});
