/**
 * The name a submission's media file gets inside an export ZIP (`media/<name>`). The name comes
 * from the submission XML, so it may hold `../` or other path characters: Central passes it
 * through sanitize-filename (central-backend lib/data/attachments.js), which this follows, so an
 * archive never writes outside its folder when unpacked (zip slip). Pure; Node and Workers.
 */

const ILLEGAL = /[/?<>\\:*|"]/g;
const CONTROL = /[\u0000-\u001f\u0080-\u009f]/g;
const RESERVED = /^\.+$/;
const WINDOWS_RESERVED = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$/i;
const WINDOWS_TRAILING = /[. ]+$/;

/**
 * sanitize-filename with its defaults: path separators and `?<>\:*|"`, control characters, a name
 * of dots only, Windows device names and trailing dots or spaces are removed; the result is cut to
 * 255 UTF-8 bytes (never inside a character).
 * @returns the safe name; empty when nothing is left (the caller leaves such a file out). Pure.
 */
export function sanitizeFilename(name: string): string {
  const cleaned = name
    .replace(ILLEGAL, '')
    .replace(CONTROL, '')
    .replace(RESERVED, '')
    .replace(WINDOWS_RESERVED, '')
    .replace(WINDOWS_TRAILING, '');
  const bytes = new TextEncoder().encode(cleaned);
  if (bytes.byteLength <= 255) return cleaned;
  let out = '';
  let size = 0;
  for (const ch of cleaned) {
    const n = new TextEncoder().encode(ch).byteLength;
    if (size + n > 255) break;
    out += ch;
    size += n;
  }
  return out;
}

/** `media/<sanitized name>`, or null when the name sanitizes to nothing. Pure. */
export function mediaEntryName(name: string): string | null {
  const safe = sanitizeFilename(name);
  return safe === '' ? null : `media/${safe}`;
}
