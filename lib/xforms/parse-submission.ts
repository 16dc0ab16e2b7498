/**
 * Submission XML parser: reads what Fieldbase needs out of one submission instance (the
 * `ParsedSubmission` contract in ./types.ts). Pure (no I/O, no `node:` imports): runs on Node and
 * Cloudflare Workers.
 *
 * Sources: ODK XForms spec (shared/reference/odk-xforms-spec.md: the `meta` block: instanceID,
 * deprecatedID, instanceName), the encryption spec (odk-xforms-spec-encryption.md: the submission
 * manifest and its file order), the Entities spec (odk-xforms-spec-entities.md: `meta/entity`), the
 * OpenRosa Form Submission API (odk-docs/openrosa-form-submission.rst), and central-backend
 * (`Submission.fromXml` in lib/model/frames/submission.js; `_extractAttachments` /
 * `_extractEncryptedAttachments` in lib/model/query/submission-attachments.js; lib/util/xml.js).
 *
 * The XML handling mirrors ./parse-form.ts (saxes with `xmlns: false`, prefixes handled by hand so
 * undeclared `orx:` / `entities:` prefixes are fine, bare `&` taken as text, no DTD so no entity
 * expansion, anything after the root's end tag ignored): ./xml-tree.ts, shared with parse-form.ts.
 */
import { md5 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { problems } from '../problem';
import type { FormField, ParsedSubmission, SubmissionEncryption, SubmissionEntity, SubmissionValue } from './types';
import { attr, readXml, type El } from './xml-tree';

// ─────────────────────────────────────────────────────────────────────────────
// Tree helpers local to submissions (the shared XML reading is ./xml-tree.ts).

const childrenNamed = (el: El, local: string): El[] => el.children.filter((c) => c.local === local);

// ─────────────────────────────────────────────────────────────────────────────
// Pieces.

/**
 * Central's `findOne(root(), node(a), node(b))(text())`: the first `b` child of an `a` child of the
 * root whose text is not empty (an empty element never yields a value, so the search goes on).
 * Text is kept as written (Central does not trim these).
 */
function firstText(root: El, ...steps: string[]): string | null {
  let level: El[] = [root];
  for (const step of steps) level = level.flatMap((el) => childrenNamed(el, step));
  for (const el of level) if (el.text !== '') return el.text;
  return null;
}

/** Paths (below the root) that occur more than once under one parent instance. */
function repeatedPaths(root: El): Set<string> {
  const out = new Set<string>();
  const stack: Array<{ el: El; path: string }> = [{ el: root, path: '' }];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const seen = new Set<string>();
    for (const c of top.el.children) {
      const p = `${top.path}/${c.local}`;
      if (seen.has(c.local)) out.add(p);
      else seen.add(c.local);
      stack.push({ el: c, path: p });
    }
  }
  return out;
}

function envelope(root: El): SubmissionEncryption | null {
  const key = firstText(root, 'base64EncryptedKey');
  if (key === null && attr(root, 'encrypted') !== 'yes') return null;
  const xmlFile = firstText(root, 'encryptedXmlFile')?.trim();
  const mediaFiles: string[] = [];
  for (const media of childrenNamed(root, 'media'))
    for (const file of childrenNamed(media, 'file')) {
      const name = file.text.trim();
      if (name !== '') mediaFiles.push(name);
    }
  return {
    base64EncryptedKey: key,
    encryptedXmlFile: xmlFile === undefined || xmlFile === '' ? null : xmlFile,
    mediaFiles,
    signature: firstText(root, 'base64EncryptedElementSignature'),
  };
}

// ─────────────────────────────────────────────────────────────────────────────
// Entry point.

/** A submission read into its element tree, with the form reference every ingestion needs first. */
export interface SubmissionDocument {
  root: El;
  bytes: Uint8Array;
  xmlFormId: string;
  version: string;
}

const isDocument = (x: unknown): x is SubmissionDocument => typeof x === 'object' && x !== null && 'root' in x;

/** Submissions are read as Central reads them: an end tag may differ from its start tag in its prefix. */
const LENIENT = { closeByLocalName: true } as const;

/**
 * Reads a submission's XML once: the tree, the form id and version (enough to find the form),
 * reusable by parseSubmission once the form's fields are known, so ingestion parses the XML once.
 * @throws Problem 400.1 malformed XML or a DOCTYPE; 400.2 `{ field: 'form ID xml attribute' }` no id
 *   (or not XML at all). Pure.
 */
export function readSubmission(input: string | Uint8Array): SubmissionDocument {
  const bytes = typeof input === 'string' ? new TextEncoder().encode(input) : input;
  const decoded = typeof input === 'string' ? input : new TextDecoder('utf-8').decode(input);
  const xml = decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded;
  const noId = () => problems.user.missingParameter({ field: 'form ID xml attribute' });
  let root: El;
  try {
    root = readXml(xml, 'submission xml', noId, LENIENT);
  } catch (err) {
    // Central's lenient parser takes a comma between the root's attributes (its own encrypted
    // envelopes in test/util/crypto-odk.js have `encrypted="yes", version="…"`); retry without.
    const relaxed = relaxRootAttributes(xml);
    if (relaxed === xml) throw err;
    try {
      root = readXml(relaxed, 'submission xml', noId, LENIENT);
    } catch {
      throw err;
    }
  }
  const xmlFormId = attr(root, 'id');
  if (xmlFormId === undefined || xmlFormId.trim() === '') throw noId();
  return { root, bytes, xmlFormId, version: attr(root, 'version') ?? '' };
}

/**
 * The XML with commas between the root start tag's attributes removed (the rest untouched). Pure;
 * linear: the prolog (processing instructions, comments) is skipped by hand, since a regular
 * expression with nested lazy repeats backtracked exponentially on `<?a?>` repeated.
 */
function relaxRootAttributes(xml: string): string {
  let at = 0;
  for (;;) {
    while (at < xml.length && /\s/.test(xml[at]!)) at += 1;
    const [open, close] = xml.startsWith('<?', at) ? ['<?', '?>'] : xml.startsWith('<!--', at) ? ['<!--', '-->'] : [null, null];
    if (open === null) break;
    const end = xml.indexOf(close, at + open.length);
    if (end < 0) return xml;
    at = end + close.length;
  }
  const m = /<[A-Za-z_][^>]*>/y;
  m.lastIndex = at;
  const found = m.exec(xml);
  if (!found) return xml;
  const tag = found[0].replace(/("[^"]*"|'[^']*')\s*,(?=\s|\/?>)/g, '$1');
  return xml.slice(0, at) + tag + xml.slice(at + found[0].length);
}

/**
 * Parses one submission instance (the XML part of an OpenRosa submission, or the manifest of an
 * encrypted one).
 *
 * Input: the XML as a string or its raw bytes (UTF-8), and optionally the form version's fields
 * (`ParsedForm.fields`, i.e. Central's `GET F/fields`), which tell repeats and binary fields apart.
 * Output: a `ParsedSubmission` (./types.ts):
 * - `xmlFormId` / `version` / `rootName`: the root's `id` and `version` attributes (matched by local
 *   name, so Collect's `orx:version` counts; version '' when absent) and its local name.
 * - `instanceId`: `/root/meta/instanceID` (any prefixes), else a top-level `/root/instanceID`, else
 *   null. Central does exactly this and then generates a bare v4 uuid (no `uuid:` prefix) when both
 *   are missing, as for the pre-2012 KoBoCAT-era instances without `meta`; generating it is the
 *   caller's job (this function has no randomness). `deprecatedId` / `instanceName`:
 *   `/root/meta/deprecatedID` / `/root/meta/instanceName`, or null. An empty element counts as
 *   absent; texts are kept as written (Central does not trim them).
 * - `encryption`: the manifest (`base64EncryptedKey`, trimmed `encryptedXmlFile`, trimmed non-blank
 *   `media/file` names in document order, `base64EncryptedElementSignature`) when the root has a
 *   non-empty `base64EncryptedKey` child (Central's test) or `encrypted="yes"`; else null.
 * - `entities`: every `entity` element whose parent is a `meta` (any depth, any prefixes), in
 *   document order, with its path, repeat indexes, attributes (null when absent) and `label` text.
 * - `attachments`: the file names the submission expects, trimmed, blanks left out, each once.
 *   Encrypted: the media files then `encryptedXmlFile` (Central's order, which is the encryption and
 *   IV order). Otherwise, when `fields` are given, the text of every leaf at a `binary: true` path
 *   (any repeat index; `/meta/audit` included), in document order; without `fields`, none.
 * - `values`: every leaf element, in document order, as `{ path, repeatIndex, value }`. A path is a
 *   repeat when `fields` say so (type `repeat`); without `fields`, when that path occurs more than
 *   once under one parent anywhere in the document (so a repeat with a single instance is not seen
 *   as one). `repeatIndex` holds the 1-based index of each enclosing repeat instance (the leaf's own
 *   index too when the leaf itself repeats).
 * - `hash`: MD5 and SHA-256 (hex) of the exact bytes (strings are UTF-8 encoded).
 *
 * Lenient where Central is: undeclared prefixes, bare `&` (literal text), anything after the root's
 * end tag, a leading BOM, an end tag that differs from its start tag only in its prefix
 * (`<meta>…</orx:meta>`). Strict otherwise: no DTD (so no entity expansion), no truncated or
 * otherwise mismatched markup (Central's htmlparser2 would accept those silently).
 *
 * Throws (Problem):
 * - 400.2 `{ field: 'form ID xml attribute' }` when the root has no `id` or a blank one, or when no
 *   element can be found at all (not XML). This is Central's field name for submissions
 *   (shared/fixtures/central-outputs/_errors/400.2-submission-no-form-id.json); form uploads use
 *   `formId` instead.
 * - 400.2 `{ field: 'instanceId (required for encrypted submissions)' }` for an encrypted manifest
 *   without an instanceID (Central: decryption needs it for the IV).
 * - 400.1 (`problems.user.unparseableXml`, format 'submission xml', with line and column) for
 *   malformed XML once an element was seen: truncated input, mismatched tags, a DOCTYPE (which
 *   covers billion-laughs documents), undefined entity syntax errors.
 */
export function parseSubmission(input: string | Uint8Array | SubmissionDocument, fields?: FormField[]): ParsedSubmission {
  const { root, bytes, xmlFormId } = isDocument(input) ? input : readSubmission(input);

  const instanceId = firstText(root, 'meta', 'instanceID') ?? firstText(root, 'instanceID');
  const encryption = envelope(root);
  if (encryption && instanceId === null)
    throw problems.user.missingParameter({ field: 'instanceId (required for encrypted submissions)' });

  const shape = fields ? fieldShape(fields) : null;
  const repeats = shape ? shape.repeats : repeatedPaths(root);
  const binaries = shape ? shape.binaries : NO_PATHS;

  const values: SubmissionValue[] = [];
  const entities: SubmissionEntity[] = [];
  const attachments: string[] = [];
  const seenAttachments = new Set<string>();
  const addAttachment = (name: string) => {
    const n = name.trim();
    if (n === '' || seenAttachments.has(n)) return;
    seenAttachments.add(n);
    attachments.push(n);
  };

  // Depth-first in document order, iteratively (deep nesting must not overflow the call stack).
  interface Frame {
    el: El;
    parent: El;
    path: string;
    repeatIndex: number[];
  }
  const frames = (parent: El, path: string, repeatIndex: number[]): Frame[] => {
    // Instances are counted only for repeat paths (most forms have none: no map per element).
    let counts: Map<string, number> | null = null;
    const out: Frame[] = new Array(parent.children.length);
    for (let i = 0; i < out.length; i += 1) {
      const el = parent.children[i]!;
      const p = `${path}/${el.local}`;
      let index = repeatIndex;
      if (repeats.size > 0 && repeats.has(p)) {
        counts ??= new Map();
        const n = (counts.get(el.local) ?? 0) + 1;
        counts.set(el.local, n);
        index = [...repeatIndex, n];
      }
      out[i] = { el, parent, path: p, repeatIndex: index };
    }
    return out;
  };
  const stack = frames(root, '', []).reverse();
  for (let f = stack.pop(); f; f = stack.pop()) {
    const { el, parent, path, repeatIndex } = f;
    if (el.local === 'entity' && parent.local === 'meta') {
      const label = el.children.find((c) => c.local === 'label');
      const a = (name: string) => attr(el, name) ?? null;
      entities.push({
        path,
        repeatIndex,
        dataset: a('dataset'),
        id: a('id'),
        create: a('create'),
        update: a('update'),
        baseVersion: a('baseVersion'),
        trunkVersion: a('trunkVersion'),
        branchId: a('branchId'),
        label: label ? label.text : null,
      });
    }
    if (el.children.length === 0) {
      values.push({ path, repeatIndex, value: el.text });
      if (!encryption && binaries.has(path)) addAttachment(el.text);
    } else {
      const next = frames(el, path, repeatIndex);
      for (let i = next.length - 1; i >= 0; i -= 1) stack.push(next[i] as Frame);
    }
  }

  if (encryption) {
    for (const name of encryption.mediaFiles) addAttachment(name);
    if (encryption.encryptedXmlFile !== null) addAttachment(encryption.encryptedXmlFile);
  }

  return {
    xmlFormId,
    version: attr(root, 'version') ?? '',
    rootName: root.local,
    instanceId,
    deprecatedId: firstText(root, 'meta', 'deprecatedID'),
    instanceName: firstText(root, 'meta', 'instanceName'),
    encryption,
    entities,
    attachments,
    values,
    hash: lazyHashes(bytes),
  };
}

/**
 * MD5 and SHA-256 of the bytes, each computed on first read and kept: ingestion stores only the
 * MD5, and hashing a few kB in JavaScript is a visible share of a submission's CPU.
 */
function lazyHashes(bytes: Uint8Array): { md5: string; sha256: string } {
  let m: string | undefined;
  let s: string | undefined;
  return {
    get md5() { return (m ??= bytesToHex(md5(bytes))); },
    get sha256() { return (s ??= bytesToHex(sha256(bytes))); },
  };
}

const NO_PATHS: ReadonlySet<string> = new Set();

/** Repeat and binary paths of a definition's fields, built once per fields array (cached per definition by callers). */
interface FieldShape {
  repeats: Set<string>;
  binaries: Set<string>;
  rootLeaves: string[];
  /** Position of each root leaf path in rootLeaves (the first, should a path be listed twice). */
  rootLeafAt: Map<string, number>;
  /** Each root leaf's JSON key with its colon (`"/q1":`), by position. */
  rootLeafKeys: string[];
  /** For each position in rootLeaves, that path's first position (itself unless listed twice). */
  rootLeafFirst: number[];
}
const shapes = new WeakMap<FormField[], FieldShape>();
function fieldShape(fields: FormField[]): FieldShape {
  let shape = shapes.get(fields);
  if (!shape) {
    const repeatPrefixes = fields.filter((f) => f.type === 'repeat').map((f) => `${f.path}/`);
    const rootLeaves = fields
      .filter((f) => f.type !== 'structure' && f.type !== 'repeat' && !repeatPrefixes.some((r) => f.path.startsWith(r)))
      .map((f) => f.path);
    const rootLeafAt = new Map<string, number>();
    rootLeaves.forEach((path, i) => { if (!rootLeafAt.has(path)) rootLeafAt.set(path, i); });
    shape = {
      repeats: new Set(fields.filter((f) => f.type === 'repeat').map((f) => f.path)),
      binaries: new Set(fields.filter((f) => f.binary === true).map((f) => f.path)),
      rootLeaves,
      rootLeafAt,
      rootLeafKeys: rootLeaves.map((path) => `${JSON.stringify(path)}:`),
      rootLeafFirst: rootLeaves.map((path) => rootLeafAt.get(path)!),
    };
    shapes.set(fields, shape);
  }
  return shape;
}

/**
 * The values outside any repeat as one object, path → text (the first occurrence of a path wins,
 * as every reader of `values` takes it): what SQL filters on form fields read. Pure.
 */
export function rootValuesOf(values: SubmissionValue[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) if (v.repeatIndex.length === 0 && !(v.path in out)) out[v.path] = v.value;
  return out;
}

/** Separates the texts of `rootTextOf`: a control character XML 1.0 text cannot contain. */
export const ROOT_TEXT_SEPARATOR = '\u001f';

/**
 * The leaf fields outside repeats, in the definition's order: the root table's fields, whose texts
 * `rootTextOf` stores. Pure.
 */
export function rootLeafPaths(fields: FormField[]): string[] {
  return [...fieldShape(fields).rootLeaves];
}

/**
 * The texts of the root leaf fields (rootLeafPaths of the version's definition), '' when absent,
 * joined by ROOT_TEXT_SEPARATOR: what a CSV export copies for a row with no parsing at all.
 * @param root rootValuesOf(values) when the caller has it already. Pure.
 */
export function rootTextOf(values: SubmissionValue[], fields: FormField[], root: Record<string, string> = rootValuesOf(values)): string {
  const leaves = fieldShape(fields).rootLeaves;
  let out = '';
  for (let i = 0; i < leaves.length; i += 1) {
    if (i > 0) out += ROOT_TEXT_SEPARATOR;
    out += root[leaves[i]!] ?? '';
  }
  return out;
}

/** Characters JSON.stringify escapes in a string (surrogates: lone ones; paired ones take the slow path too). */
const JSON_ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * Both root columns ingestion stores, in one pass over the values: `json`, the JSON text of
 * rootValuesOf(values) (the very text JSON.stringify gives it), and `text`, rootTextOf(values,
 * fields). Cheaper than the two: no object with hundreds of keys is built and walked again, the
 * definition's keys are escaped once per definition, and a value that needs no escaping is quoted
 * as it is. Pure.
 */
export function rootColumnsOf(values: SubmissionValue[], fields: FormField[]): { json: string; text: string } {
  const { rootLeaves, rootLeafAt, rootLeafKeys, rootLeafFirst } = fieldShape(fields);
  const texts: Array<string | undefined> = new Array(rootLeaves.length);
  // Paths the definition does not list as root leaves (elements it lacks).
  let others: Set<string> | null = null;
  const parts: string[] = [];
  for (let i = 0; i < values.length; i += 1) {
    const v = values[i]!;
    if (v.repeatIndex.length !== 0) continue;
    const at = rootLeafAt.get(v.path);
    let key: string;
    if (at !== undefined) {
      if (texts[at] !== undefined) continue;
      texts[at] = v.value;
      key = rootLeafKeys[at]!;
    } else {
      others ??= new Set();
      if (others.has(v.path)) continue;
      others.add(v.path);
      key = `${JSON.stringify(v.path)}:`;
    }
    parts.push(key + (JSON_ESCAPED.test(v.value) ? JSON.stringify(v.value) : `"${v.value}"`));
  }
  let text = '';
  for (let i = 0; i < rootLeaves.length; i += 1) {
    if (i > 0) text += ROOT_TEXT_SEPARATOR;
    text += texts[rootLeafFirst[i]!] ?? '';
  }
  return { json: `{${parts.join(',')}}`, text };
}
