import { describe, expect, test } from 'vitest';
import { mediaEntryName, sanitizeFilename } from '../../../lib/exports/media-name';

describe('media names in export ZIPs (sanitize-filename, as Central)', () => {
  test('path characters and traversal are removed, so no entry leaves media/', () => {
    expect(sanitizeFilename('../../evil.jpg')).toBe('....evil.jpg');
    expect(sanitizeFilename('a/b\\c:d*e?f"g<h>i|j.png')).toBe('abcdefghij.png');
    expect(sanitizeFilename('x\u0000y\u001fz\u0085.jpg')).toBe('xyz.jpg');
    expect(mediaEntryName('../../evil.jpg')).toBe('media/....evil.jpg');
  });

  test('dots-only names, Windows device names and trailing dots or spaces', () => {
    expect(mediaEntryName('..')).toBeNull();
    expect(mediaEntryName('.')).toBeNull();
    expect(sanitizeFilename('CON.jpg')).toBe('');
    expect(sanitizeFilename('lpt1')).toBe('');
    expect(sanitizeFilename('photo.jpg. . ')).toBe('photo.jpg');
  });

  test('ordinary names are unchanged; long ones are cut to 255 UTF-8 bytes on a character boundary', () => {
    for (const name of ['1712345678901.jpg', 'photo front.jpg', 'café.mp3', 'audit.csv']) expect(sanitizeFilename(name)).toBe(name);
    const long = `${'é'.repeat(200)}.jpg`;
    const cut = sanitizeFilename(long);
    expect(new TextEncoder().encode(cut).byteLength).toBeLessThanOrEqual(255);
    expect(cut).toBe('é'.repeat(127));
  });
});
