import type { Problem } from '../problem';
import { problems } from '../problem';
import { renderOpenRosaMessage } from '../xforms/openrosa-xml';

/**
 * Headers on every OpenRosa response. groupApp (lib/http/app.ts) adds them, together with
 * X-OpenRosa-Accept-Content-Length, which comes from MAX_UPLOAD_BYTES (spec, Submission rule 3).
 */
export const openRosaHeaders = {
  'X-OpenRosa-Version': '1.0',
};

/**
 * Whether a (routing) path is an OpenRosa endpoint: form list, manifest, submission, and the Draft
 * Token paths. Their errors are OpenRosaResponse XML and their responses carry the OpenRosa headers.
 */
export function isOpenRosaPath(path: string): boolean {
  // Under /v1/test/ the REST creation path (…/draft/submissions) answers JSON, as F/submissions does.
  return /\/(formList|manifest|submission)$/.test(path) || isIntegrityPath(path) || (path.startsWith('/v1/test/') && !/\/submissions$/.test(path));
}

/** Paths that must carry `X-OpenRosa-Version: 1.0` (the documents, not file downloads). */
export function requiresOpenRosaHeader(path: string): boolean {
  return /\/(formList|manifest|submission)$/.test(path) || isIntegrityPath(path);
}

/** A Dataset's integrity document (D/integrity), an OpenRosa endpoint in Central. */
const isIntegrityPath = (path: string) => /^\/v1\/projects\/[^/]+\/datasets\/[^/]+\/integrity$/.test(path);

/**
 * Checks the request's X-OpenRosa-Version (exactly 1.0).
 * @throws Problem 400.6 `{ field: 'X-OpenRosa-Version', value }`.
 */
export function checkOpenRosaVersion(value: string | undefined): void {
  if (value?.trim() !== '1.0') throw problems.user.invalidHeader({ field: 'X-OpenRosa-Version', value: value ?? null });
}

/** An OpenRosa XML error for a 4xx Problem (Central: text/xml, no code in the body). */
export function openRosaError(problem: Problem): Response {
  return new Response(renderOpenRosaMessage(problem.message), {
    status: problem.status,
    headers: { 'Content-Type': 'text/xml; charset=utf-8' },
  });
}

/** A 200 OpenRosa XML document with Central's headers (UTF-8 bytes, or a string to encode). */
export function openRosaXml(body: string | Uint8Array<ArrayBuffer>, status = 200): Response {
  return new Response(body, {
    status,
    headers: { 'Content-Type': 'text/xml; charset=utf-8', 'Cache-Control': 'private, no-cache' },
  });
}
