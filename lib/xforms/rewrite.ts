/**
 * Sets the `version` attribute of the primary instance's root element in an XForm, as Central does
 * when a draft is published with `?version=` (the XML, and so its hashes, change). Pure text edit:
 * everything else stays byte for byte.
 * @returns the new XML. @throws Error when no primary instance root can be found (the XML was
 *   parsed at upload, so this means a programming error).
 */
export function setFormVersion(xml: string, version: string): string {
  const escaped = version.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  // The first <instance> start tag without an id attribute, then the first element start tag in it.
  const instanceRe = /<(?:[A-Za-z_][\w.-]*:)?instance(\s[^>]*)?>/g;
  let m: RegExpExecArray | null;
  while ((m = instanceRe.exec(xml)) !== null) {
    if (m[1] && /\sid\s*=/.test(m[1])) continue;
    const rest = xml.slice(m.index + m[0].length);
    const root = /<([A-Za-z_][\w.:-]*)((?:\s+[^\s=>/]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/.exec(rest.replace(/<!--[\s\S]*?-->/g, (c) => ' '.repeat(c.length)));
    if (!root) break;
    const start = m.index + m[0].length + root.index;
    const attrs = root[2] ?? '';
    const newAttrs = /\sversion\s*=\s*("[^"]*"|'[^']*')/.test(attrs)
      ? attrs.replace(/(\sversion\s*=\s*)("[^"]*"|'[^']*')/, `$1"${escaped}"`)
      : `${attrs} version="${escaped}"`;
    const tag = `<${root[1]}${newAttrs}${root[3] ? ' /' : ''}>`;
    return xml.slice(0, start) + tag + xml.slice(start + root[0].length);
  }
  throw new Error('no primary instance root element');
}

/** The primary instance's root start tag: `[start, end)` offsets in `xml` and its text. */
function instanceRootTag(xml: string): { start: number; end: number; tag: string } {
  const instanceRe = /<(?:[A-Za-z_][\w.-]*:)?instance(\s[^>]*)?>/g;
  const blanked = xml.replace(/<!--[\s\S]*?-->/g, (c) => ' '.repeat(c.length));
  let m: RegExpExecArray | null;
  while ((m = instanceRe.exec(blanked)) !== null) {
    if (m[1] && /\sid\s*=/.test(m[1])) continue;
    const from = m.index + m[0].length;
    const root = /<([A-Za-z_][\w.:-]*)((?:\s+[^\s=>/]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/.exec(blanked.slice(from));
    if (!root) break;
    return { start: from + root.index, end: from + root.index + root[0].length, tag: xml.slice(from + root.index, from + root.index + root[0].length) };
  }
  throw new Error('no primary instance root element');
}

/**
 * Appends `suffix` to the `version` attribute (any prefix, e.g. `orx:version`) of the primary
 * instance's root, or adds `version="<suffix>"` when there is none: what Central does to every
 * form it encrypts with a managed key (`[encrypted:XXXXXXXX]`, lib/data/schema.js
 * addVersionSuffix, behaviour only). `suffix` must need no XML escaping. Pure text edit.
 * @throws Error when no primary instance root can be found (a programming error: parsed before).
 */
export function addVersionSuffix(xml: string, suffix: string): string {
  const { start, end, tag } = instanceRootTag(xml);
  const versioned = /(\s(?:[A-Za-z_][\w.-]*:)?version\s*=\s*)("([^"]*)"|'([^']*)')/.exec(tag);
  const next = versioned
    ? tag.slice(0, versioned.index) + versioned[1] + `"${versioned[3] ?? (versioned[4] ?? '').replace(/"/g, '&quot;')}${suffix}"` + tag.slice(versioned.index + versioned[0].length)
    : tag.replace(/\s*(\/?)>$/, ` version="${suffix}"$1>`);
  return xml.slice(0, start) + next + xml.slice(end);
}

/**
 * Sets `base64RsaPublicKey` on the form's `<submission>` element under html/head/model, adding
 * `<submission base64RsaPublicKey="…"/>` just before `</model>` when there is none (Central's
 * injectPublicKey, behaviour only; odk-xforms-spec-encryption.md "Form definition"). The caller
 * makes sure the form has no key yet. Pure text edit: everything else stays byte for byte.
 * @param key base64 DER SubjectPublicKeyInfo (needs no escaping).
 * @throws Error when the XML has no `</model>` (a programming error: parsed before).
 */
export function injectPublicKey(xml: string, key: string): string {
  const blanked = xml.replace(/<!--[\s\S]*?-->|<!\[CDATA\[[\s\S]*?\]\]>/g, (c) => ' '.repeat(c.length));
  const modelOpen = /<(?:[A-Za-z_][\w.-]*:)?model[\s>]/.exec(blanked);
  const modelClose = /<\/(?:[A-Za-z_][\w.-]*:)?model\s*>/.exec(blanked.slice(modelOpen?.index ?? 0));
  if (!modelOpen || !modelClose) throw new Error('no model element');
  const closeAt = modelOpen.index + modelClose.index;
  // A <submission> directly in the model (instances sit in the model too, but their elements
  // are data: an instance named "submission" is inside an <instance>, which we skip).
  const inner = blanked.slice(modelOpen.index, closeAt);
  const depthless = inner.replace(/<(?:[A-Za-z_][\w.-]*:)?instance[\s>][\s\S]*?<\/(?:[A-Za-z_][\w.-]*:)?instance\s*>/g, (c) => ' '.repeat(c.length));
  const sub = /<(?:[A-Za-z_][\w.-]*:)?submission((?:\s+[^\s=>/]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/.exec(depthless);
  if (sub) {
    const at = modelOpen.index + sub.index;
    const tag = xml.slice(at, at + sub[0].length);
    const spliced = tag.replace(/\s*(\/?)>$/, (_m, slash: string) => ` base64RsaPublicKey="${key}"${slash}>`);
    return xml.slice(0, at) + spliced + xml.slice(at + sub[0].length);
  }
  return `${xml.slice(0, closeAt)}<submission base64RsaPublicKey="${key}"/>${xml.slice(closeAt)}`;
}
