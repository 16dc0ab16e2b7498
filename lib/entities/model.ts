/**
 * Entity JSON and the pure rules of Entities: validation of API bodies (Central's
 * lib/data/entity.js behaviour: uuid, label, data), property diffs and conflict details for
 * version listings. Spec: interface.md (Entity, Entity Version, Entity property diff, States: Entity).
 */
import type { ActorRow, EntityDefRow, EntityRow } from '../../drizzle/schema';
import { actorJson, iso } from '../actors';
import { Problem, problems } from '../problem';

export const invalidEntity = (reason: string) => new Problem(400.28, `The entity is invalid. ${reason}`, { reason });
export const unexpectedAttributes = (d: { expected: string[]; actual: string[] }) =>
  new Problem(400.31, `Expected parameters: (${d.expected.join(', ')}). Got (${d.actual.join(', ')}).`, d);
export const noConflictEntity = () => new Problem(400.32, "The Entity doesn't have any conflict");
export const entityVersionConflict = (d: { current: number; provided: number | string }) =>
  new Problem(409.15, `Current version of the Entity is '${d.current}' and you provided '${d.provided}'. Please correct the version number or pass '?force=true' in the URL to forcefully update the Entity.`, d);
export const entityUniquenessViolationWithDeleted = (d: { entityUuids: string[] }) =>
  new Problem(409.19, `The following UUID(s) cannot be used because they are associated with deleted Entities: (${d.entityUuids.join(', ')}).`, d);
export const datasetNotFoundInSubmission = (d: { datasetName: string }) =>
  new Problem(404.7, `The dataset (${d.datasetName}) specified in the submission does not exist.`, d);
export const entityNotFound = (d: { entityUuid: string; datasetName: string }) =>
  new Problem(404.8, `The entity with UUID (${d.entityUuid}) specified in the submission does not exist in the dataset (${d.datasetName}).`, d);
export const entityVersionNotFound = (d: { baseVersion: number | string; entityUuid: string; datasetName: string }) =>
  new Problem(404.9, `Base version (${d.baseVersion}) does not exist for entity UUID (${d.entityUuid}) in dataset (${d.datasetName}).`, d);
export const entityDeleted = (d: { entityUuid: string }) => new Problem(404.11, `The entity with UUID (${d.entityUuid}) has been deleted.`, d);
export const entityActionNotPermitted = (d: { action: string; permitted: string[] }) =>
  new Problem(403.2, `The submission attempts an entity ${d.action}, but the form does not permit that action. The form permits the following actions: ${d.permitted.join(', ')}.`, d);

const UUID = /^(uuid:)?([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})$/i;

/**
 * A v4 UUID, optionally `uuid:`-prefixed, lower-cased without the prefix.
 * @throws 400.2 blank; 400.11 not a v4 UUID. Pure.
 */
export function normalizeUuid(id: string | null | undefined, field = 'uuid'): string {
  if (id == null || id.trim() === '') throw problems.user.missingParameter({ field });
  const m = UUID.exec(id);
  if (!m) throw problems.user.invalidDataTypeOfParameter({ field, expected: 'valid version 4 UUID' });
  return m[2]!.toLowerCase();
}

/** A new v4 UUID. */
export const newUuid = (): string => crypto.randomUUID();

export interface EntityInput {
  uuid: string;
  label: string | null;
  data: Record<string, string>;
  dataReceived: Record<string, string>;
}

/** The keys an entity body may have (checked once per entity of a bulk upload). */
const ENTITY_KEYS = new Set(['label', 'uuid', 'data']);

/**
 * Reads one entity of an API body (`{ uuid?, label, data? }`), or a PATCH body (`existing`: label
 * optional, no uuid). Values must be strings and properties must exist.
 * @throws 400.31 other keys; 400.11 wrong types; 400.2 no label (create); 400.8 blank label;
 *   400.28 nothing given, or an unknown property. Pure.
 */
export function readEntityBody(body: unknown, propertyNames: string[], patch: boolean): EntityInput {
  const b = (body ?? {}) as Record<string, unknown>;
  const keys = Object.keys(b);
  if (keys.some((k) => !ENTITY_KEYS.has(k)) || (patch && keys.includes('uuid'))) {
    throw unexpectedAttributes({ expected: ['label', 'uuid', 'data'], actual: keys });
  }
  let uuid = '';
  if (!patch) {
    if (b.uuid != null && typeof b.uuid !== 'string') throw problems.user.invalidDataTypeOfParameter({ field: 'uuid', expected: 'string' });
    uuid = b.uuid ? normalizeUuid(b.uuid as string) : newUuid();
  }
  let label: string | null = null;
  if (b.label != null) {
    if (typeof b.label !== 'string') throw problems.user.invalidDataTypeOfParameter({ field: 'label', expected: 'string' });
    if (b.label.trim() === '') throw problems.user.unexpectedValue({ field: 'label', value: '(empty string)', reason: 'Label cannot be blank.' });
    label = b.label;
  } else if (!patch) {
    throw problems.user.missingParameter({ field: 'label' });
  }
  if (b.data == null && b.label == null) throw invalidEntity('No entity data or label provided.');
  const data: Record<string, string> = {};
  if (b.data != null) {
    if (typeof b.data !== 'object' || Array.isArray(b.data)) throw problems.user.invalidDataTypeOfParameter({ field: 'data', expected: 'object' });
    for (const [k, v] of Object.entries(b.data as Record<string, unknown>)) {
      if (typeof v !== 'string') throw problems.user.invalidDataTypeOfParameter({ field: k, expected: 'string' });
      if (!propertyNames.includes(k)) throw invalidEntity(`You specified the dataset property [${k}] which does not exist.`);
      data[k] = v;
    }
  }
  const dataReceived: Record<string, string> = { ...data, ...(label != null ? { label } : {}) };
  return { uuid, label, data, dataReceived };
}

/** Entity Version JSON (Central's readable fields, in order); `withData` adds data and dataReceived. Pure. */
export function versionJson(def: EntityDefRow, withData: boolean, creator?: ActorRow | null): Record<string, unknown> {
  return {
    current: def.current,
    label: def.label,
    creatorId: def.creatorId,
    userAgent: def.userAgent,
    ...(withData ? { data: def.data } : {}),
    version: def.version,
    baseVersion: def.baseVersion,
    ...(withData ? { dataReceived: def.dataReceived } : {}),
    conflictingProperties: def.conflictingProperties,
    createdAt: def.createdAt.toISOString(),
    branchId: def.branchId,
    trunkVersion: def.trunkVersion,
    branchBaseVersion: def.branchBaseVersion,
    ...(creator !== undefined ? { creator: creator ? actorJson(creator) : null } : {}),
  };
}

/** Entity JSON with its current version; extended (`creators` given) adds the creators. Pure. */
export function entityJson(
  e: EntityRow, def: EntityDefRow, withData: boolean, creators?: { entity: ActorRow | null; version: ActorRow | null },
): Record<string, unknown> {
  return {
    uuid: e.uuid,
    creatorId: e.creatorId,
    conflict: e.conflict,
    createdAt: e.createdAt.toISOString(),
    updatedAt: iso(e.updatedAt),
    deletedAt: iso(e.deletedAt),
    ...(creators ? { creator: creators.entity ? actorJson(creators.entity) : null } : {}),
    currentVersion: versionJson(def, withData, creators ? creators.version : undefined),
  };
}

/** Keys of `received` whose value differs from (or is missing in) `other` (Central's getDiffProp). Pure. */
export const diffProps = (received: Record<string, string>, other: Record<string, string>): string[] =>
  Object.keys(received).filter((k) => !(k in other) || received[k] !== other[k]);

/** One version's property changes against the version before it: `[{ old, new, propertyName }]`. */
export type VersionDiff = Array<{ old: string | undefined; new: string | undefined; propertyName: string }>;

/**
 * The property diff of a version against its predecessor, label included (Central diffs
 * `{ label, ...data }`: label first, then the properties). Pure.
 */
export function versionDiff(prev: Pick<EntityDefRow, 'label' | 'data'>, cur: Pick<EntityDefRow, 'label' | 'data'>): VersionDiff {
  const before: Record<string, string> = { label: prev.label, ...prev.data };
  const after: Record<string, string> = { label: cur.label, ...cur.data };
  return Object.keys(after).filter((k) => after[k] !== before[k]).map((k) => ({ old: before[k], new: after[k], propertyName: k }));
}

/** What a version's conflict state needs of it (Central's getWithConflictDetails; no data). */
export type ConflictFacts = Pick<EntityDefRow, 'id' | 'version' | 'baseVersion' | 'branchId' | 'trunkVersion' | 'conflictingProperties'> & {
  /** A create applied as an update (its source's details.action is 'create'). */
  isCreateAsUpdate: boolean;
};

/**
 * The last version of an offline branch still contiguous with its trunk version (no version from
 * outside the branch in between), grown version by version (Central's Branch). Pure.
 */
class Branch {
  lastContiguousWithTrunk: number;
  constructor(first: ConflictFacts) {
    this.lastContiguousWithTrunk = first.trunkVersion != null
      ? (first.version === first.trunkVersion + 1 ? first.version : 0)
      // Created offline: contiguous unless another update came between the create and this one.
      : (first.version === 2 ? 2 : 1);
  }

  add(def: ConflictFacts) {
    if (def.baseVersion === this.lastContiguousWithTrunk && def.version === def.baseVersion + 1) this.lastContiguousWithTrunk = def.version;
  }
}

/**
 * The conflict state of an Entity's versions, fed one version at a time in version order (Central's
 * getWithConflictDetails, as a walk so a listing streams). A version is in conflict when it is not
 * based on the one before it, when its offline branch is no longer contiguous with its trunk at its
 * base, or when it is a create applied as an update; `hard` when it has conflicting properties.
 * It is resolved when the last `entity.update.resolve` names it or a later version. Holds one
 * number per offline branch seen. Pure.
 */
export class ConflictWalk {
  private readonly branches = new Map<string, Branch>();

  /** @param lastResolvedDefId the entity_defs id the last `entity.update.resolve` names (null: none). */
  constructor(private readonly lastResolvedDefId: number | null) {}

  /** The next version's `{ conflict, resolved }`. */
  next(def: ConflictFacts): { conflict: 'hard' | 'soft' | null; resolved: boolean } {
    if (def.branchId != null) {
      const b = this.branches.get(def.branchId);
      if (b) b.add(def);
      else this.branches.set(def.branchId, new Branch(def));
    }
    if (!(def.version > 1 && def.baseVersion != null)) return { conflict: null, resolved: false };
    const notContiguous = def.branchId != null && this.branches.get(def.branchId)!.lastContiguousWithTrunk < def.baseVersion;
    if (!(def.version !== def.baseVersion + 1 || notContiguous || def.isCreateAsUpdate)) return { conflict: null, resolved: false };
    return {
      conflict: def.conflictingProperties && def.conflictingProperties.length > 0 ? 'hard' : 'soft',
      resolved: this.lastResolvedDefId != null && this.lastResolvedDefId >= def.id,
    };
  }
}

/**
 * An Entity Version's conflict fields (Central's getWithConflictDetails), given what the whole
 * history decides: `lastGood` is the version before the first unresolved conflict (0: none), the
 * last good version when there is none is the last version (`lastVersion`), and a version before
 * `lastGood` is relevant to the conflict when a version from the first unresolved conflict on is
 * based on it (`baseOfLater`). `base` / `prev`: the version's base and the version before it
 * (label and data), for baseDiff and serverDiff. Pure.
 * @returns `{ conflict, resolved, baseDiff, serverDiff, lastGoodVersion, relevantToConflict }`, in that order.
 */
export function conflictFields(
  def: EntityDefRow, state: { conflict: 'hard' | 'soft' | null; resolved: boolean },
  near: { base?: Pick<EntityDefRow, 'label' | 'data'>; prev?: Pick<EntityDefRow, 'label' | 'data'> },
  history: { lastGood: number; lastVersion: number | null; baseOfLater: boolean },
) {
  const later = def.version > 1 && def.baseVersion != null;
  const { base, prev } = near;
  return {
    conflict: state.conflict,
    resolved: state.resolved,
    baseDiff: later && base ? diffProps(def.dataReceived, { ...base.data, label: base.label }) : [],
    serverDiff: later && prev ? diffProps(def.dataReceived, { ...prev.data, label: prev.label }) : [],
    lastGoodVersion: history.lastGood > 0 ? def.version === history.lastGood : def.version === history.lastVersion,
    relevantToConflict: history.lastGood > 0 && (def.version >= history.lastGood || history.baseOfLater),
  };
}
