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
