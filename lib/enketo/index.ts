/**
 * Enketo client: asks an Enketo server (ENKETO_URL, ENKETO_API_KEY) for a form's ids, as Central
 * does (spec: Forms, "enketoId"). Enketo's API v2: `POST {url}/api/v2/survey/all` with a
 * form-encoded `server_url` (the OpenRosa root Enketo pulls the form from) and `form_id`, Basic
 * auth with the API key as user name and no password, and the session Enketo should use for that
 * pull in a `__Host-session` cookie. It answers `{ enketo_id, single_once_url }`; the once id is
 * the last path segment of that URL. `POST {url}/api/v2/instance` makes an edit URL for a
 * submission. Runs on Node and Workers (fetch only).
 */
import type { Config } from '../config';
import { Problem } from '../problem';

/** The ids Enketo gives a form: `enketoId` (the survey) and `enketoOnceId` (its single-submission link). */
export interface EnketoIds {
  enketoId: string;
  enketoOnceId: string;
}

/** Enketo answered something this client cannot use (Central's 500.4 enketoUnexpectedResponse). */
export const enketoUnexpectedResponse = (reason: string) =>
  new Problem(500.4, `The Enketo service returned an unexpected response: ${reason}.`, reason);
/** Enketo is configured but could not be reached (Central's 502.3 enketoNotAvailable). */
export const enketoNotAvailable = (error: string) =>
  new Problem(502.3, 'The Enketo service could not be reached. Please try again later.', { error: { message: error } });
/** An Enketo action while none is configured (Central's 501.8 enketoNotConfigured). */
export const enketoNotConfigured = () =>
  new Problem(501.8, 'This server has no Enketo service configured, so that action is not available.');
/** Enketo refused a second edit of the same record within its lock time (Central's 409.13). */
export const enketoEditRateLimit = () =>
  new Problem(409.13, 'Enketo is already editing this submission. Please wait a minute and try again.');

/** Whether an Enketo server is configured (both ENKETO_URL and ENKETO_API_KEY). Pure. */
export const enketoConfigured = (config: Pick<Config, 'ENKETO_URL' | 'ENKETO_API_KEY'>): boolean =>
  config.ENKETO_URL != null && config.ENKETO_API_KEY != null;

/** Base64 of a string's UTF-8 bytes (btoa is Latin-1 only). Pure. */
function base64(text: string): string {
  let bin = '';
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return btoa(bin);
}

/**
 * One POST to Enketo's API.
 * @param apiPath below ENKETO_URL, e.g. `/api/v2/survey/all`. @param token the session Enketo uses
 *   to pull the form (sent as `__Host-session`; Central sends the literal `undefined` when none).
 * @param timeoutMs the request is abandoned after this long (the answer, if any, is ignored).
 * @returns the JSON body of a 200/201 answer.
 * @throws 501.8 not configured; 502.3 unreachable or timed out; 409.13 Enketo's edit lock (405 with
 *   its "already being edited" message); 500.4 any other status or a body that is not JSON.
 */
async function enketoPost(
  config: Pick<Config, 'ENKETO_URL' | 'ENKETO_API_KEY'>, apiPath: string, token: string | undefined,
  form: Record<string, string>, timeoutMs: number,
): Promise<Record<string, unknown>> {
  if (!enketoConfigured(config)) throw enketoNotConfigured();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let res: Response;
  try {
    res = await fetch(`${config.ENKETO_URL}${apiPath}`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Authorization: `Basic ${base64(`${config.ENKETO_API_KEY}:`)}`,
        Cookie: `__Host-session=${token}`,
      },
      body: new URLSearchParams(form).toString(),
      signal: controller.signal,
    });
  } catch (err) {
    clearTimeout(timer);
    throw enketoNotAvailable(controller.signal.aborted ? `no answer within ${timeoutMs} ms` : String((err as Error)?.message ?? err));
  }
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    throw enketoNotAvailable(String((err as Error)?.message ?? err));
  } finally {
    clearTimeout(timer);
  }
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw enketoUnexpectedResponse('invalid JSON');
  }
  if (res.status === 405 && body?.message === 'Not allowed. Record is already being edited') throw enketoEditRateLimit();
  if (res.status !== 200 && res.status !== 201) throw enketoUnexpectedResponse('wrong status code');
  return body ?? {};
}

/** How long a background request to Enketo may take (a request inside an API call uses its own, shorter bound). */
export const BACKGROUND_TIMEOUT_MS = 30_000;

/**
 * Asks Enketo for a survey's ids (Central's `enketo.create`).
 * @param openRosaUrl the OpenRosa root for Enketo: `{origin}/v1/projects/{id}` for a published
 *   form, `{origin}/v1/test/{draftToken}/projects/{id}/forms/{xmlFormId}/draft` for a draft.
 * @param token a session for Enketo's pull of a published form (undefined for a draft: its URL
 *   carries the Draft Token). @param timeoutMs abandon after this long (default 30 s).
 * @returns `{ enketoId, enketoOnceId }`.
 * @throws the Problems of enketoPost; 500.4 when `single_once_url` has no id at its end.
 * Effects: one HTTP request to Enketo.
 */
export async function createSurvey(
  config: Pick<Config, 'ENKETO_URL' | 'ENKETO_API_KEY'>, openRosaUrl: string, xmlFormId: string, token: string | undefined,
  timeoutMs = BACKGROUND_TIMEOUT_MS,
): Promise<EnketoIds> {
  const body = await enketoPost(config, '/api/v2/survey/all', token, { server_url: openRosaUrl, form_id: xmlFormId }, timeoutMs);
  const once = /\/([:a-z0-9]+)$/i.exec(String(body.single_once_url ?? ''));
  if (once == null || typeof body.enketo_id !== 'string') {
    throw enketoUnexpectedResponse(`no ids in the answer (single_once_url: ${String(body.single_once_url)})`);
  }
  return { enketoId: body.enketo_id, enketoOnceId: once[1]! };
}

/**
 * Asks Enketo for a URL that edits one submission (Central's `enketo.edit`), for GET S/edit.
 * @param input openRosaUrl (`{origin}/v1/projects/{id}`), the form's xmlFormId, the submission's
 *   current XML and instanceID, its attachments as `{ name, url }` (present files only), the
 *   return URL Enketo sends the user to afterwards, and the session Enketo uses.
 * @param origin the server's public origin: Enketo's edit URL is moved onto it (Enketo is served
 *   under the same host, as in Central's setup).
 * @returns the edit URL. @throws the Problems of enketoPost (409.13 when Enketo holds an edit lock).
 * Effects: one HTTP request to Enketo.
 */
export async function editInstance(
  config: Pick<Config, 'ENKETO_URL' | 'ENKETO_API_KEY'>,
  input: {
    openRosaUrl: string; xmlFormId: string; xml: string; instanceId: string;
    attachments: Array<{ name: string; url: string }>; returnUrl: string; token: string | undefined;
  },
  origin: string, timeoutMs = BACKGROUND_TIMEOUT_MS,
): Promise<string> {
  const form: Record<string, string> = {
    server_url: input.openRosaUrl,
    form_id: input.xmlFormId,
    instance: input.xml,
    instance_id: input.instanceId,
  };
  for (const a of input.attachments) form[`instance_attachments[${encodeURIComponent(a.name)}]`] = a.url;
  form.return_url = input.returnUrl;
  const body = await enketoPost(config, '/api/v2/instance', input.token, form, timeoutMs);
  let url: URL;
  try {
    url = new URL(String(body.edit_url));
  } catch {
    throw enketoUnexpectedResponse('edit_url is not a URL');
  }
  const own = new URL(origin);
  url.protocol = own.protocol;
  url.hostname = own.hostname;
  url.port = own.port;
  return url.href;
}
