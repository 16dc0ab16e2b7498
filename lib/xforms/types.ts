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
  /** The entity list (Dataset) name. */
  name: string;
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
