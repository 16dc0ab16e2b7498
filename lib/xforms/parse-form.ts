/**
 * XForm definition parser: reads what Fieldbase needs out of an ODK XForm (the `ParsedForm` contract
 * in ./types.ts). Pure (no I/O, no `node:` imports): runs on Node and Cloudflare Workers.
 *
 * Sources: ODK XForms spec (shared/reference/odk-xforms-spec.md: primary instance, bindings, body,
 * itext media, secondary instances), the Entities spec (odk-xforms-spec-entities.md, plus the
 * 2024.1/2025.1 notes in shared/reference/README.md), and Central's captured outputs
 * (shared/fixtures/central-outputs/<form>/api/fields*.json, withAttachments/api/form-attachments.json).
 * Field typing, repeat de-duplication, `meta/audit` binarity, expected attachments and OData name
 * sanitising follow the rules of central-backend 4f5943d1 (`getFormFields`, `expectedFormAttachments`,
 * `sanitizeOdataIdentifier`), with the deviations documented on each function.
 */
import { md5, sha1 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { problems } from '../problem';
import type { DatasetDeclaration, ExpectedAttachment, FormField, ParsedForm } from './types';
import { attr, localName, readXml, type El } from './xml-tree';

// ─────────────────────────────────────────────────────────────────────────────
// Tree helpers local to definitions (the shared XML reading is ./xml-tree.ts).

/** Strips the prefix of every step of a slash path (`/data/orx:meta/x:id` → `/data/meta/id`). */
const stripPrefixes = (path: string): string => path.replace(/(^|\/)[^:/]+:([^/]+)/g, '$1$2');

const child = (el: El | undefined, local: string): El | undefined => el?.children.find((c) => c.local === local);

// ─────────────────────────────────────────────────────────────────────────────
// Paths.

/** Resolves an XPath `ref`/`nodeset` against a context path; namespace prefixes are stripped. */
function resolvePath(ref: string, context: string): string {
  const r = ref.trim();
  const steps = r.startsWith('/') ? [] : context.split('/').filter(Boolean);
  for (const step of r.split('/')) {
    if (step === '' || step === '.') continue;
    if (step === '..') steps.pop();
    else steps.push(step);
  }
  return stripPrefixes(`/${steps.join('/')}`);
}

// ─────────────────────────────────────────────────────────────────────────────
// Fields.

interface Bind {
  type?: string;
  saveto?: string;
}

/**
 * Central's `getFormFields` walk: depth-first over the primary instance; each path is listed once
 * (the first copy of a repeat wins); a path in `repeats` is a repeat; otherwise the first typed `<bind>`
 * gives the type; otherwise an element with children (or an empty `meta/entity`) is a `structure`.
 * Deviations, as specified for Fieldbase: a leaf with no typed bind is `string` (Central: `unknown`),
 * and bind types lose their prefix (`xsd:int` → `int`; Central keeps it).
 */
function walkFields(
  el: El,
  rootPath: string,
  basePath: string,
  binds: Map<string, Bind>,
  repeats: Set<string>,
  selects: Set<string>,
  out: FormField[],
  seen: Set<string> = new Set(),
): void {
  for (const c of el.children) {
    const path = `${basePath}/${c.local}`;
    const absolute = rootPath + path;
    // A repeat's copies (jr:template + instances) share one path: list it once, from the first
    // copy (Central). Fieldbase applies this to every element, so hand-written instances with
    // repeated leaves do not yield duplicate paths (Central would list those twice).
    if (seen.has(path)) continue;
    seen.add(path);
    let type: string;
    if (repeats.has(absolute)) {
      type = 'repeat';
    } else {
      const bindType = binds.get(absolute)?.type;
      if (bindType !== undefined) type = localName(bindType);
      else if (c.children.length > 0) type = 'structure';
      else if (c.local === 'entity' && path.includes('/meta/entity')) type = 'structure';
      else type = 'string';
    }
    out.push({
      path,
      name: c.local,
      type,
      binary: type === 'binary' || path === '/meta/audit' ? true : null,
      selectMultiple: selects.has(absolute) ? true : null,
    });
    if ((type === 'repeat' || type === 'structure') && c.children.length > 0)
      walkFields(c, rootPath, path, binds, repeats, selects, out, seen);
  }
}

/** Repeat `nodeset`s and `select` refs of the body, resolved against enclosing group/repeat refs. */
function bodyPaths(body: El | undefined): { repeats: Set<string>; selects: Set<string>; hasQueryInput: boolean; searches: El[] } {
  const repeats = new Set<string>();
  const selects = new Set<string>();
  const searches: El[] = [];
  let hasQueryInput = false;
  const visit = (el: El, context: string) => {
    for (const c of el.children) {
      const ref = attr(c, 'nodeset') ?? attr(c, 'ref');
      const here = ref !== undefined ? resolvePath(ref, context) : context;
      if (c.local === 'repeat') {
        const nodeset = attr(c, 'nodeset');
        if (nodeset !== undefined) repeats.add(resolvePath(nodeset, context));
      } else if (c.local === 'select') {
        if (ref !== undefined) selects.add(here);
      } else if (c.local === 'input' && attr(c, 'query') !== undefined) {
        hasQueryInput = true;
      }
      if ((c.local === 'select' || c.local === 'select1') && (attr(c, 'appearance') ?? '').includes('search')) searches.push(c);
      visit(c, c.local === 'group' || c.local === 'repeat' ? here : context);
    }
  };
  if (body) visit(body, '');
  return { repeats, selects, hasQueryInput, searches };
}

// ─────────────────────────────────────────────────────────────────────────────
// Attachments.

const JR_PATH = /^jr:\/\/(?:images|audio|video|file|file-csv)\/([^/]+)$/;
const jrPathName = (x: string): string | null => JR_PATH.exec(x.trim())?.[1] ?? null;
const MEDIA_FORMS: Record<string, ExpectedAttachment['type']> = { image: 'image', audio: 'audio', video: 'video', 'big-image': 'image' };

/**
 * The first argument of a `search('name', …)` appearance, as Central reads it: `name.csv` (`.csv`
 * added unless present); null when there is none or it has leading/trailing spaces.
 */
function searchAppearanceFile(appearance: string): string | null {
  const m = /^\s*(?:\w*\s+)?search\s*\(\s*("|')(.+)\)\s*$/.exec(appearance);
  if (!m) return null;
  const quote = m[1] as string;
  const rest = m[2] as string;
  // First CSV field of quote + rest, with `quote` as the quote character ("" escapes it).
  let name = '';
  let i = 0;
  for (;;) {
    const q = rest.indexOf(quote, i);
    if (q < 0)
      throw problems.user.unexpectedValue({ field: 'search() appearance', value: appearance, reason: 'broken syntax, maybe unmatched quotes?' });
    name += rest.slice(i, q);
    if (rest[q + 1] === quote) {
      name += quote;
      i = q + 2;
      continue;
    }
    const after = rest.slice(q + 1).trimStart();
    if (after !== '' && !after.startsWith(','))
      throw problems.user.unexpectedValue({ field: 'search() appearance', value: appearance, reason: 'broken syntax, maybe unmatched quotes?' });
    break;
  }
  if (/^\s|\s$/.test(name) || name === '') return null;
  return name.endsWith('.csv') ? name : `${name}.csv`;
}

/**
 * Central's `expectedFormAttachments`, in its order: secondary `<instance src="jr://file/…">`
 * (file), itext `<value form="image|audio|video|big-image">jr://…/x</value>`, `jr://images/…`
 * default values of instance children (image), `<input query>` (itemsets.csv), then the
 * `search('name')` appearance of selects (name.csv). Only `jr://(images|audio|video|file|file-csv)/`
 * with a bare file name counts. Each name is listed once (first wins; Central keys on name and type).
 * Central has no `pulldata()` rule: a pulldata CSV must be declared as a secondary instance.
 */
function expectedAttachments(model: El | undefined, body: { hasQueryInput: boolean; searches: El[] }): ExpectedAttachment[] {
  const found: ExpectedAttachment[] = [];
  const instances = model ? model.children.filter((c) => c.local === 'instance') : [];
  for (const inst of instances) {
    const src = attr(inst, 'src');
    const name = src === undefined ? null : jrPathName(src);
    if (name !== null) found.push({ name, type: 'file' });
  }
  for (const itext of model ? model.children.filter((c) => c.local === 'itext') : [])
    for (const tr of itext.children)
      if (tr.local === 'translation')
        for (const t of tr.children)
          if (t.local === 'text')
            for (const v of t.children) {
              const form = v.local === 'value' ? attr(v, 'form') : undefined;
              if (form === undefined) continue;
              const type = Object.hasOwn(MEDIA_FORMS, form) ? MEDIA_FORMS[form] : undefined;
              const name = jrPathName(v.text);
              if (type !== undefined && name !== null) found.push({ name, type });
            }
  for (const inst of instances)
    for (const item of inst.children[0]?.children ?? [])
      if (/^jr:\/\/images\/./.test(item.text)) {
        const name = jrPathName(item.text);
        if (name !== null) found.push({ name, type: 'image' });
      }
  if (body.hasQueryInput) found.push({ name: 'itemsets.csv', type: 'file' });
  for (const s of body.searches) {
    const name = searchAppearanceFile(attr(s, 'appearance') ?? '');
    if (name !== null) found.push({ name, type: 'file' });
  }
  const seen = new Set<string>();
  return found.filter((a) => (seen.has(a.name) ? false : (seen.add(a.name), true)));
}

// ─────────────────────────────────────────────────────────────────────────────
// Entities.

/**
 * Every `meta/entity` (any depth, any prefixes) of the primary instance: its `dataset` name
 * (trimmed; `nameMissing` without one), path, actions (`create` / `update` attribute present,
 * whatever its value, as Central), and the fields saved to it (`…:saveto` on their bind), each
 * given to the entity whose container (the parent of its `meta`) is the nearest ancestor of the
 * field (entities 2025.1: one per repeat or group); groups and repeats save nothing. Validation
 * (spec version, names, missing actions) is left to the caller.
 */
function datasetDeclarations(root: El, fields: FormField[], binds: Map<string, Bind>, rootPath: string): DatasetDeclaration[] {
  const out: Array<DatasetDeclaration & { container: string }> = [];
  const visit = (el: El, path: string) => {
    for (const c of el.children) {
      const p = `${path}/${c.local}`;
      if (el.local === 'meta' && c.local === 'entity') {
        const dataset = attr(c, 'dataset');
        // A repeat's copies (jr:template and instances) declare the same entity: list it once.
        if (!out.some((d) => d.entityPath === p)) {
          const actions: DatasetDeclaration['actions'] = [];
          if (attr(c, 'create') !== undefined) actions.push('create');
          if (attr(c, 'update') !== undefined) actions.push('update');
          out.push({
            name: dataset?.trim() ?? '', ...(dataset === undefined ? { nameMissing: true } : {}), entityPath: p, actions, properties: [],
            container: path.slice(0, path.lastIndexOf('/')),
          });
        }
      }
      visit(c, p);
    }
  };
  visit(root, '');
  if (out.length === 0) return [];
  for (const f of fields) {
    const saveto = binds.get(rootPath + f.path)?.saveto;
    // A saveto on a group or repeat's bind saves nothing (Central ignores it).
    if (saveto === undefined || f.type === 'structure' || f.type === 'repeat') continue;
    let owner: (typeof out)[number] | undefined;
    for (const d of out)
      if (f.path.startsWith(`${d.container}/`) && (!owner || d.container.length > owner.container.length)) owner = d;
    owner?.properties.push({ name: saveto, path: f.path });
  }
  return out.map(({ container: _container, ...d }) => d);
}

// ─────────────────────────────────────────────────────────────────────────────
// Entry points.

const formIdMissing = () => problems.user.missingParameter({ field: 'formId' });

/**
 * Parses an XForm definition.
 *
 * Input: the form XML as a string or its raw bytes (UTF-8). Output: a `ParsedForm` (./types.ts):
 * xmlFormId/version from the primary instance root (first `<instance>` without `id` in
 * `html/head/model`), title, MD5/SHA-1/SHA-256 of the exact bytes (strings are UTF-8 encoded),
 * the submission element's key and action, `hasMeta`, fields in Central's `GET F/fields` shape and
 * order, expected form attachments, and entity-list declarations.
 *
 * Lenient where Central is: undeclared prefixes (`orx:`, `entities:`), bare `&` (literal text),
 * anything after the root element's end tag. Strict otherwise: no DTD (so no entity expansion).
 *
 * Throws (Problem):
 * - 400.2 `{ field: 'formId' }` when no element can be found at all (not XML), when there is no
 *   html/head/model/instance root, or when its `id` is missing or blank (Central's answer).
 * - 400.1 (`problems.user.unparseableXml`, details format, rawLength, line, column, reason) for
 *   malformed XML once an element was seen (truncated, mismatched tags, a DOCTYPE, bad characters).
 * - 400.8 for a `search()` appearance with unmatched quotes (Central's wording).
 *
 * Spec: ODK XForms (shared/reference/odk-xforms-spec.md), Entities (odk-xforms-spec-entities.md);
 * Central behaviour from shared/fixtures/central-outputs.
 */
export function parseForm(input: string | Uint8Array): ParsedForm {
  const bytes = typeof input === 'string' ? new TextEncoder().encode(input) : input;
  const xml = typeof input === 'string' ? input : new TextDecoder('utf-8').decode(input);

  // Central reads a form whose XML declaration comes after leading whitespace (a template
  // literal's indentation); an XML parser does not: the declaration is blanked, same length, so
  // error positions still point at the original text.
  const text = xml.replace(/^(\s+)(<\?xml[^>]*\?>)/, (_m, ws: string, decl: string) => ws + ' '.repeat(decl.length));
  const root = readXml(text, 'xforms xml', formIdMissing);

  const head = root.local === 'html' ? child(root, 'head') : undefined;
  const model = child(head, 'model');
  const instances = model ? model.children.filter((c) => c.local === 'instance') : [];
  const primary = instances.find((i) => attr(i, 'id') === undefined) ?? instances[0];
  const dataRoot = primary?.children[0];
  const xmlFormId = dataRoot ? attr(dataRoot, 'id') : undefined;
  if (!dataRoot || xmlFormId === undefined || xmlFormId.trim() === '') throw formIdMissing();

  const rootPath = `/${dataRoot.local}`;
  const binds = new Map<string, Bind>();
  for (const b of model?.children ?? []) {
    if (b.local !== 'bind') continue;
    const nodeset = attr(b, 'nodeset');
    if (nodeset === undefined) continue;
    const path = resolvePath(nodeset, rootPath);
    const entry = binds.get(path) ?? {};
    const type = attr(b, 'type');
    if (entry.type === undefined && type !== undefined) entry.type = type;
    const saveto = attr(b, 'saveto');
    if (entry.saveto === undefined && saveto !== undefined) entry.saveto = saveto;
    binds.set(path, entry);
  }

  const body = bodyPaths(child(root, 'body'));
  const fields: FormField[] = [];
  walkFields(dataRoot, rootPath, '', binds, body.repeats, body.selects, fields);

  const title = child(head, 'title');
  const submission = child(model, 'submission');
  const entitiesVersion = model ? attr(model, 'entities-version') : undefined;

  return {
    xmlFormId,
    version: attr(dataRoot, 'version') ?? '',
    name: title && title.text !== '' ? title.text : null,
    hash: bytesToHex(md5(bytes)),
    sha: bytesToHex(sha1(bytes)),
    sha256: bytesToHex(sha256(bytes)),
    base64RsaPublicKey: (submission && attr(submission, 'base64RsaPublicKey')) ?? null,
    submissionUrl: (submission && attr(submission, 'action')) ?? null,
    hasMeta: dataRoot.children.some((c) => c.local === 'meta'),
    fields,
    attachments: expectedAttachments(model, body),
    datasets: datasetDeclarations(dataRoot, fields, binds, rootPath),
    entitiesVersion: entitiesVersion ?? null,
  };
}

/**
 * Central's `GET F/fields?odata=true`: the same fields with `name` and every `path` step made a
 * valid OData identifier (`sanitizeOdataIdentifier`): a `_` is put in front of a name that starts with
 * something other than an ASCII letter or `_`, then each run of characters other than ASCII letters,
 * digits and `_` becomes one `_` (`my-field.x` → `my_field_x`, `1st` → `_1st`). Pure; throws nothing.
 * Source: central-backend lib/util/util.js + schema.js `sanitizeFieldsForOdata`; the captured
 * fields-odata.json files equal fields.json because their names are already valid.
 */
export function odataFields(fields: FormField[]): FormField[] {
  return fields.map((f) => ({
    path: f.path.split('/').map(sanitizeOdataIdentifier).join('/'),
    name: sanitizeOdataIdentifier(f.name),
    type: f.type,
    binary: f.binary,
    selectMultiple: f.selectMultiple,
  }));
}

/**
 * One name as an OData identifier (see `odataFields`). Input: any string; output: the sanitised one
 * ('' stays ''). Throws nothing.
 */
export function sanitizeOdataIdentifier(name: string): string {
  return name.replace(/^([^a-z_])/i, '_$1').replace(/([^a-z0-9_]+)/gi, '_');
}
