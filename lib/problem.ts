/**
 * One error type for everything a client may see. `code` is Central's decimal code (a JSON number);
 * the HTTP status is its integer part. Messages follow Central's wording
 * (shared/reference/central-problem-codes.md, shared/fixtures/central-outputs/_errors/).
 */
export class Problem extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'Problem';
  }

  /** HTTP status: the integer part of the code. */
  get status(): number {
    return Math.floor(this.code);
  }

  /** Central's key order: message, code, details (left out when there are none). */
  toJSON(): { message: string; code: number; details?: unknown } {
    return this.details === undefined
      ? { message: this.message, code: this.code }
      : { message: this.message, code: this.code, details: this.details };
  }
}

const join = (xs: unknown[]) => xs.map(String).join(',');

/** Problem factories by Central's names. Each returns (never throws) a Problem. */
/** A value as Central's messages print it (Node's util.inspect for scalars: 'text', null, undefined). */
function inspectValue(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return JSON.stringify(v) ?? String(v);
}

export const problems = {
  user: {
    unparseable: (d: { format: string; rawLength: number }) =>
      new Problem(400.1, `Could not parse the given data (${d.rawLength} chars) as ${d.format}.`, d),
    /** 400.1 with the position of the XML error (Fieldbase: Central's own message gives none). */
    unparseableXml: (d: { format: string; rawLength: number; line: number; column: number; reason: string }) =>
      new Problem(
        400.1,
        `Could not parse the given data (${d.rawLength} chars) as ${d.format}: ${d.reason} (line ${d.line}, column ${d.column}).`,
        d,
      ),
    missingParameter: (d: { field: string }) =>
      new Problem(400.2, `Required parameter ${d.field} missing.`, d),
    missingParameters: (d: { expected: string[]; got: Record<string, unknown> }) =>
      new Problem(
        400.3,
        `Required parameters missing. Expected (${d.expected.join(', ')}), got (${d.expected
          .map((k) => `${k}: ${inspectValue(d.got[k])}`)
          .join(', ')}).`,
        d,
      ),
    invalidHeader: (d: { field: string; value: unknown }) =>
      new Problem(400.6, `An expected header field (${d.field}) did not match the expected format.`, d),
    unexpectedValue: (d: { field: string; value: unknown; reason: string }) =>
      new Problem(400.8, `Unexpected ${d.field} value ${String(d.value)}; ${d.reason}`, d),
    invalidDataTypeOfParameter: (d: { field?: string; value?: unknown; expected: string }) =>
      new Problem(400.11, `Invalid input data type: expected ${d.field != null ? `(${d.field})` : `"${String(d.value)}"`} to be (${d.expected})`, d),
    /** Central's answer for a value over its column's varchar(n) (`maxLength` as a string, as Central's). */
    valueTooLong: (d: { maxLength: string }) => new Problem(400.13, 'Length of value too long for a field', d),
    valueOutOfRangeForType: (d: { value: string; type: string }) =>
      new Problem(400.22, `Provided value '${d.value}' is out of range for type '${d.type}'`, d),
    keyDoesNotExist: (d: { field: string; value: unknown; table: string }) =>
      new Problem(400.14, `The given ${d.field} ${String(d.value)} for ${d.table} does not exist.`, d),
    passwordTooShort: () =>
      new Problem(400.21, 'The password or passphrase provided does not meet the required length.'),
    requestTooLarge: () => new Problem(400.36, 'Request body too large.'),
    encodingNotSupported: () => new Problem(400.37, 'Encoding not supported.'),
    passwordTooLong: () =>
      new Problem(400.38, 'The password or passphrase provided exceeds the maximum length.'),
    /** zxcvbn's verdict (score 2 or lower), worded as Central words it: its warning, else its first suggestion. */
    passwordTooWeak: (d: { warning: string; suggestions: string[] }) => {
      const said = d.warning || d.suggestions[0] || '';
      const message = said === '' ? 'The supplied password is too weak.'
        : said.includes('.') ? `The supplied password is too weak. ${said}`
          : `The supplied password is too weak: ${said[0]!.toLowerCase()}${said.slice(1)}`;
      return new Problem(400.44, message, d);
    },
    /** Fieldbase's login throttle (lib/throttle); Central has no such limit. */
    tooManyLoginAttempts: (d: { retryAfter: number }) =>
      new Problem(429.1, `Too many failed login attempts. Please try again in ${d.retryAfter} seconds.`, d),
    authenticationFailed: () => new Problem(401.2, 'Could not authenticate with the provided credentials.'),
    httpsOnly: () => new Problem(401.3, 'This authentication method is only available over HTTPS'),
    insufficientRights: () =>
      new Problem(403.1, 'The authentication you provided does not have rights to perform that action.'),
    notFound: () => new Problem(404.1, 'Could not find the resource you were looking for.'),
    missingApiVersion: () =>
      new Problem(404.2, 'Expected an API version (eg /v1) at the start of the request URL.'),
    unexpectedApiVersion: (d: { got: string }) =>
      new Problem(404.3, `Unexpected an API version (accepts: 1) (got: ${d.got}).`, d),
    uniquenessViolation: (d: { fields: unknown; values: unknown; table?: string }) =>
      new Problem(
        409.3,
        `A resource already exists with ${Array.isArray(d.fields) ? join(d.fields) : String(d.fields)} value(s) of ${
          Array.isArray(d.values) ? join(d.values) : String(d.values)
        }.`,
        d,
      ),
  },
  form: {
    /** pyxform's error, with the warnings it gave before failing (Central's wording, details order). */
    xlsformNotValid: (d: { error: string; warnings: string[] }) =>
      new Problem(400.15, 'The given XLSForm file was not valid. Please see the error details for more information.', { error: d.error, warnings: d.warnings }),
    formWarnings: (warnings: Record<string, unknown>) =>
      new Problem(400.16, 'The Form is valid, but with warnings. Please check the warnings and if they are acceptable resubmit with ?ignoreWarnings=true', { warnings }),
    fieldTypeConflict: (d: { path: string; type: string }) =>
      new Problem(400.17, `The form you have uploaded attempts to change the type of the field at ${d.path}. In a previous version, it had the type "${d.type}". Please either return that field to its previous type, or rename the field so it lives at a new path.`, d),
    missingMeta: () => new Problem(400.27, "The form does not contain a 'meta' group."),
    failedDraftAccess: () =>
      new Problem(404.4, 'You tried to access a draft testing endpoint, but it does not exist anymore or your access is no longer valid. If the form has been published and you would like to submit to it, you should configure your device with an App User token. If there is a new draft, you may have to reconfigure your device from the draft settings.'),
    versionUniquenessViolation: (d: { xmlFormId: string; version: string }) =>
      new Problem(409.6, `You tried to publish the form '${d.xmlFormId}' with version '${d.version}', but a published form has already existed in this project with those identifiers.`, d),
    noPublishedVersion: () =>
      new Problem(409.7, 'Could not delete draft, because the form has not been published. Either delete the whole form, or replace the draft.'),
  },
  submission: {
    missingMultipartField: () => new Problem(400.7, 'Required multipart POST field xml_submission_file missing.', { field: 'xml_submission_file' }),
    multipartParsingFailed: (reason: string) => new Problem(400.39, 'Multipart form content failed to parse.', reason),
    deprecatedIdRequired: () =>
      new Problem(400.19, 'This PUT endpoint expects a deprecatedID metadata tag pointing at the current version instanceID. I cannot find that tag in your request.'),
    deprecatedIdNotFound: (d: { deprecatedId: string }) =>
      new Problem(404.5, `You tried to update an existing submission, but we can't find that submission to update (${d.deprecatedId})`, d),
    formVersionNotFound: (d: { formVersion: string }) =>
      new Problem(404.6, `The form version specified in this submission '${d.formVersion}' does not exist.`, d),
    xmlConflict: () =>
      new Problem(409.1, 'A submission already exists with this ID, but with different XML. Resubmissions to attach additional multimedia must resubmit an identical xml_submission_file.'),
    notAcceptingSubmissions: () =>
      new Problem(409.2, 'This form is not currently accepting submissions. Please talk to your program staff if this is unexpected.'),
    deprecatingOldSubmission: (d: { deprecatedId?: string; instanceId?: string }) =>
      new Problem(409.9, `You tried to update a submission, but the copy you were editing (${d.deprecatedId}) is now out of date. Please get the new version that has been submitted, and make your edits again.`, d),
    duplicateSubmission: () => new Problem(409.18, 'This submission has been deleted. You may not resubmit it.'),
    /** Above X-OpenRosa-Accept-Content-Length: HTTP 413 (Central has no code of its own for it). */
    tooLarge: (d: { limit: number }) => new Problem(413, `The submission is larger than this server accepts (${d.limit} bytes).`, d),
  },
  internal: {
    notImplemented: (d: { feature: string }) =>
      new Problem(501.1, `The requested feature ${d.feature} is not supported by this server.`, d),
    unexpectedFormsList: () =>
      new Problem(501.2, 'This endpoint does not allow creation or deletion of forms. Please check that you have sent the correct full list of forms for this project.'),
    unknown: () => new Problem(500.1, 'An unknown internal problem has occurred. Please try again later.'),
  },
};
