/**
 * The administrator every bench seeds with: a new user promoted to administrator, signed in
 * through POST /v1/sessions on the in-process app, and a `call` that sends requests as them.
 */
import type { Ctx } from '../lib/context';
import { createUserTask, promoteUserTask } from '../lib/users/admin-tasks';

const PASSWORD = 'bench password 123';

export interface BenchAdmin {
  /** One request through the app as the administrator; anything but 200 throws with the body. */
  call: (method: string, path: string, body?: BodyInit, headers?: Record<string, string>) => Promise<Response>;
  /** `{ Authorization: Bearer … }`, for clients that talk to the server directly. */
  auth: Record<string, string>;
}

/** @param label names the bench in the email (`bench-<label>-<time>@example.org`). */
export async function benchAdmin(ctx: Ctx, app: { fetch(request: Request): Promise<Response> }, label: string): Promise<BenchAdmin> {
  const email = `bench-${label}-${Date.now()}@example.org`;
  await createUserTask(ctx, email, PASSWORD);
  await promoteUserTask(ctx, email);
  const auth: Record<string, string> = {};
  const call = async (method: string, path: string, body?: BodyInit, headers: Record<string, string> = {}) => {
    const res = await app.fetch(new Request(`http://127.0.0.1${path}`, { method, body, headers: { ...auth, ...headers } }));
    if (res.status !== 200) throw new Error(`${method} ${path} → ${res.status}: ${await res.text()}`);
    return res;
  };
  const session = (await (await call('POST', '/v1/sessions', JSON.stringify({ email, password: PASSWORD }), {
    'Content-Type': 'application/json',
  })).json()) as { token: string };
  auth.Authorization = `Bearer ${session.token}`;
  return { call, auth };
}
