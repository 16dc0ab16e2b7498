/**
 * The client metadata recorded with a submission version (spec, Submission Version: deviceId,
 * userAgent), read from a request as Central reads it (lib/model/query/submissions.js createNew /
 * createVersion): `?deviceID=` cut to 255 characters, blank → null; the `ODK-Client` header put in
 * front of User-Agent (`"{ODK-Client} {User-Agent}"`, either alone when the other is blank), cut to
 * 255 characters, blank → null.
 */

/** Request headers and query as a submission endpoint sees them. */
export interface ClientSource {
  deviceId: string | undefined;
  userAgent: string | undefined;
  odkClient: string | undefined;
}

const blank = (x: string | undefined | null): x is '' | undefined | null => x == null || x === '';
const cut = (x: string | null) => (x == null || x === '' ? null : x.slice(0, 255));

/** @returns `{ deviceId, userAgent }` to store, as Central would. Pure. */
export function submissionClient(src: ClientSource): { deviceId: string | null; userAgent: string | null } {
  let userAgent: string | null = src.userAgent ?? null;
  if (!blank(src.odkClient)) userAgent = blank(userAgent) ? src.odkClient : `${src.odkClient} ${userAgent}`;
  return { deviceId: cut(src.deviceId ?? null), userAgent: cut(userAgent) };
}
