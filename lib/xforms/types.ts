/**
 * What Fieldbase reads out of an XForm definition (lib/xforms/parse-form.ts). Pure data: no
 * database, HTTP or clock. Field JSON follows Central's `GET F/fields` (key order path, name, type,
 * binary, selectMultiple; see shared/fixtures/central-outputs/<form>/api/fields.json).
 */
export interface FormField {
  /** Slash path below the instance root, e.g. `/meta/instanceID`, `/children/child/age`. */
  path: string;
  /** The element's local name. */
  name: string;
  /** The bind's type without prefix (`int`, `string`, `binary`, `geopoint`…), `structure` for groups, `repeat`. */
  type: string;
  /** true for binary (media) fields, else null. */
  binary: true | null;
  /** true for `<select>` (select multiple) controls, else null. */
  selectMultiple: true | null;
}

/** A file the form expects to be uploaded as a form attachment. */
export interface ExpectedAttachment {
  name: string;
  type: 'image' | 'audio' | 'video' | 'file';
}

/** An Entities declaration (meta/entity) of the form, for the entities issue. */
export interface DatasetDeclaration {
  /** The entity list (Dataset) name ('' with `nameMissing`). */
  name: string;
  /** The `entity` element has no `dataset` attribute (Central refuses the form: 400.25). */
  nameMissing?: boolean;
  /** Slash path of the `entity` element, e.g. `/meta/entity` or `/plots/plot/meta/entity`. */
  entityPath: string;
  actions: Array<'create' | 'update'>;
  /** Fields saved to entity properties (`entities:saveto`). */
  properties: Array<{ name: string; path: string }>;
}

export interface ParsedForm {
  /** The primary instance root's `id` attribute. */
  xmlFormId: string;
  /** The root's `version` attribute, '' when absent. */
  version: string;
  /** `h:title` text, or null when there is none. */
  name: string | null;
  /** MD5 (hex) of the exact bytes, as OpenRosa lists it. */
  hash: string;
  /** SHA-1 and SHA-256 (hex) of the exact bytes (Central's form JSON carries both). */
  sha: string;
  sha256: string;
  /** `base64RsaPublicKey` of the submission element, when the form is encrypted. */
  base64RsaPublicKey: string | null;
  /** The submission element's `action` (a custom submission URL), when given. */
  submissionUrl: string | null;
  /** Whether the primary instance has a `meta` group (Central rejects new forms without: 400.27). */
  hasMeta: boolean;
  /** Depth-first in instance order (Central's order). */
  fields: FormField[];
  /** Expected attachments in first-seen order, each name once. */
  attachments: ExpectedAttachment[];
  datasets: DatasetDeclaration[];
  /** `entities:entities-version` on the model, when present. */
  entitiesVersion: string | null;
}

/** The encryption envelope (submission manifest) of an encrypted submission. */
export interface SubmissionEncryption {
  /** `base64EncryptedKey` text (the RSA-wrapped AES key), null when the element is missing or empty. */
  base64EncryptedKey: string | null;
  /** `encryptedXmlFile` text, trimmed (e.g. `submission.xml.enc`), null when missing or blank. */
  encryptedXmlFile: string | null;
  /** `media/file` texts, trimmed, blanks left out, in document order (the encryption order). */
  mediaFiles: string[];
  /** `base64EncryptedElementSignature` text, null when missing or empty. */
  signature: string | null;
}

/** One `meta/entity` element of a submission (any depth, any prefixes). */
export interface SubmissionEntity {
  /** Slash path of the `entity` element below the root, prefixes stripped, e.g. `/meta/entity`. */
  path: string;
  /** 1-based indexes of each enclosing repeat instance ([] outside repeats). */
  repeatIndex: number[];
  /** Attribute values as written (matched by local name); null when the attribute is absent. */
  dataset: string | null;
  id: string | null;
  create: string | null;
  update: string | null;
  baseVersion: string | null;
  trunkVersion: string | null;
  branchId: string | null;
  /** Text of the `label` child, as written; null when there is no `label` child. */
  label: string | null;
}

/** One leaf element of a submission, flattened (for exports / OData). */
export interface SubmissionValue {
  /** Slash path below the root, prefixes stripped, e.g. `/age`, `/children/child/name`. */
  path: string;
  /** 1-based indexes of each enclosing repeat instance, outermost first ([] outside repeats). */
  repeatIndex: number[];
  /** The element's text as written (entities decoded, not trimmed); '' for an empty element. */
  value: string;
}

/** What Fieldbase reads out of a submission's XML (lib/xforms/parse-submission.ts). */
export interface ParsedSubmission {
  /** The root's `id` attribute (matched by local name, as Central). */
  xmlFormId: string;
  /** The root's `version` attribute (any prefix, e.g. Collect's `orx:version`), '' when absent. */
  version: string;
  /** The root element's local name (`data`). */
  rootName: string;
  /** `/root/meta/instanceID` text, else `/root/instanceID` text, else null (the caller generates one). */
  instanceId: string | null;
  /** `/root/meta/deprecatedID` text, or null. */
  deprecatedId: string | null;
  /** `/root/meta/instanceName` text, or null. */
  instanceName: string | null;
  /** The envelope of an encrypted submission, else null. */
  encryption: SubmissionEncryption | null;
  entities: SubmissionEntity[];
  /** File names the XML expects to be uploaded with it, each once, trimmed. */
  attachments: string[];
  values: SubmissionValue[];
  /** Hex digests of the exact bytes (strings are UTF-8 encoded). */
  hash: { md5: string; sha256: string };
}
