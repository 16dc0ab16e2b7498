/**
 * Validation of a form's entity declarations (pure): the entities-spec version, Dataset and
 * property names, actions, and repeats. Sources: odk-xforms-spec-entities.md and Central's
 * lib/data/dataset.js behaviour (names, the 400.25 reasons, the `oldEntityVersion` warning).
 */
import { Problem } from '../problem';
import type { DatasetDeclaration, FormField, ParsedForm } from '../xforms/types';

/** Central's 400.25. */
export const invalidEntityForm = (reason: string) =>
  new Problem(400.25, `The entity definition within the form is invalid. ${reason}`, { reason });

/**
 * A Dataset name: an XML name without `.`, not starting with `__`. Pure.
 */
export const validDatasetName = (name: string): boolean => /^(?!__)[\p{L}:_][\p{L}:\d_-]*$/u.test(name);

/**
 * A property name: letters, digits, `_ - .`, not starting with a digit, `-`, `.` or `__`, and
 * not `name` or `label` in any case. Pure.
 */
export const validPropertyName = (name: string): boolean => /^(?!__)(?!name$)(?!label$)[\p{L}_][\p{L}\d._-]*$/u.test(name.toLowerCase());

/** `YYYY.M.P` → comparable numbers, or null. */
function versionParts(v: string): [number, number, number] | null {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?$/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : null;
}

const atLeast = (v: [number, number, number], y: number, m: number) => v[0] > y || (v[0] === y && v[1] >= m);

export interface EntityFormCheck {
  /** Central's workflow warnings (400.16 unless ignored): `oldEntityVersion` before 2024.1. */
  warnings: Array<{ type: string; details: unknown; reason: string }>;
}

/**
 * Checks the entity declarations of a parsed form the way Central does at upload, before
 * anything is stored. Forms without declarations, and encrypted forms (Central reads no datasets
 * from them), pass with no warnings.
 * @throws Problem 400.25 (missing or unsupported spec version, missing or invalid dataset name, no
 *   action, invalid or duplicate property name, a property in a repeat its entity is outside of,
 *   repeats or several lists before 2025.1).
 */
export function checkEntityDeclarations(p: Pick<ParsedForm, 'datasets' | 'entitiesVersion' | 'fields' | 'base64RsaPublicKey'>): EntityFormCheck {
  if (p.datasets.length === 0 || p.base64RsaPublicKey) return { warnings: [] };
  if (p.entitiesVersion == null) throw invalidEntityForm('Entities specification version is missing.');
  const version = p.entitiesVersion.trim();
  const parts = versionParts(version);
  if (!parts || !atLeast(parts, 2022, 1) || atLeast(parts, 2025, 2)) {
    throw invalidEntityForm(`Entities specification version [${version}] is not supported.`);
  }
  for (const d of p.datasets) {
    if (d.nameMissing) throw invalidEntityForm('Dataset name is missing.');
    if (!validDatasetName(d.name)) throw invalidEntityForm('Invalid dataset name.');
    if (d.actions.length === 0) {
      throw invalidEntityForm('The form must specify at least one entity action, for example, create or update.');
    }
  }
  const props = p.datasets.flatMap((d) => d.properties);
  if (props.some((x) => !validPropertyName(x.name))) throw invalidEntityForm('Invalid entity property name.');
  // A property belongs to the nearest entity around it; a repeat between the two would give one
  // entity many values (Central refuses it).
  const repeats = p.fields.filter((f) => f.type === 'repeat').map((f) => f.path);
  for (const d of p.datasets) {
    const container = d.entityPath.replace(/\/meta\/entity$/, '');
    for (const x of d.properties) {
      if (repeats.some((r) => r.length > container.length && x.path.startsWith(`${r}/`))) {
        throw invalidEntityForm('Cannot save properties from a repeat on an entity outside of a repeat.');
      }
    }
  }
  for (const d of p.datasets) {
    const lower = d.properties.map((x) => x.name.toLowerCase());
    if (new Set(lower).size !== lower.length) throw invalidEntityForm('Multiple Form Fields cannot be saved to a single property.');
  }
  if ((p.datasets.length > 1 || p.datasets.some((d) => isRepeatDeclaration(d, p.fields))) && !atLeast(parts, 2025, 1)) {
    throw invalidEntityForm(`Entities specification version [${version}] is not compatible with entities from repeats or multiple entity lists.  Please use version 2025.1.0 or later.`);
  }
  const warnings = atLeast(parts, 2024, 1)
    ? []
    : [{ type: 'oldEntityVersion', details: { version }, reason: `Entities specification version [${version}] is not compatible with Offline Entities. Please use version 2024.1.0 or later.` }];
  return { warnings };
}

/** Whether the entity of a declaration lives in a repeat (its container is a repeat field). Pure. */
export function isRepeatDeclaration(d: DatasetDeclaration, fields: FormField[]): boolean {
  const container = d.entityPath.replace(/\/meta\/entity$/, '');
  return container !== '' && fields.some((f) => f.path === container && f.type === 'repeat');
}
