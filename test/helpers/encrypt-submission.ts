/**
 * Builds an encrypted submission the way ODK Collect does (odk-xforms-spec-encryption.md), with
 * Node's OpenSSL: an independent implementation from lib/encryption, so a round trip through the
 * server checks both sides. Test-only.
 */
import { constants, createCipheriv, createHash, createPublicKey, publicEncrypt, randomBytes } from 'node:crypto';

export interface PlainFile {
  /** The original file name (the envelope lists `<name>.enc`). */
  name: string;
  bytes: Uint8Array;
}

export interface EncryptedSubmission {
  /** The envelope XML (the `xml_submission_file` part). */
  envelope: string;
  /** The `.enc` media files in envelope order, then `submission.xml.enc`. */
  files: Array<{ name: string; bytes: Uint8Array; type: string }>;
  /** The AES key (to check the server's unwrap). */
  aesKey: Buffer;
}

const rsa = (publicKey: string, data: Buffer) => publicEncrypt({
  key: createPublicKey({ key: Buffer.from(publicKey, 'base64'), format: 'der', type: 'spki' }),
  padding: constants.RSA_PKCS1_OAEP_PADDING,
  oaepHash: 'sha256',
}, data);

/** AES-256-CFB over PKCS#7-padded bytes. */
function cfb(key: Buffer, iv: Buffer, plain: Uint8Array): Buffer {
  const pad = 16 - (plain.length % 16);
  const c = createCipheriv('aes-256-cfb', key, iv).setAutoPadding(false);
  return Buffer.concat([c.update(Buffer.concat([plain, Buffer.alloc(pad, pad)])), c.final()]);
}

/**
 * Encrypts a submission for a form's public key.
 * @param o `publicKey` (the form's base64RsaPublicKey), `xmlFormId`, `version` (the form version,
 *   `[encrypted:…]` included), `instanceId`, the plaintext `xml`, the `media` files in order.
 */
export function encryptSubmission(o: { publicKey: string; xmlFormId: string; version: string; instanceId: string; xml: string; media?: PlainFile[] }): EncryptedSubmission {
  const aesKey = randomBytes(32);
  const seed = createHash('md5').update(o.instanceId, 'utf8').update(aesKey).digest();
  let index = 0;
  const nextIv = () => {
    seed[index % 16] = (seed[index % 16]! + 1) & 0xff;
    index += 1;
    return Buffer.from(seed);
  };
  const base64Key = rsa(o.publicKey, aesKey).toString('base64');
  const files: EncryptedSubmission['files'] = [];
  const signatureLines = [o.xmlFormId, ...(o.version ? [o.version] : []), base64Key, o.instanceId];
  for (const m of o.media ?? []) {
    files.push({ name: `${m.name}.enc`, bytes: cfb(aesKey, nextIv(), m.bytes), type: 'application/octet-stream' });
    signatureLines.push(`${m.name}::${createHash('md5').update(m.bytes).digest('hex')}`);
  }
  const xmlBytes = Buffer.from(o.xml, 'utf8');
  files.push({ name: 'submission.xml.enc', bytes: cfb(aesKey, nextIv(), xmlBytes), type: 'application/octet-stream' });
  signatureLines.push(`submission.xml::${createHash('md5').update(xmlBytes).digest('hex')}`);
  const signature = rsa(o.publicKey, createHash('md5').update(`${signatureLines.join('\n')}\n`, 'utf8').digest()).toString('base64');
  const media = (o.media ?? []).map((m) => `<media><file>${m.name}.enc</file></media>`).join('');
  const envelope = `<data id="${o.xmlFormId}" version="${o.version}" encrypted="yes" xmlns="http://www.opendatakit.org/xforms/encrypted">`
    + `<base64EncryptedKey>${base64Key}</base64EncryptedKey>`
    + `<orx:meta xmlns:orx="http://openrosa.org/xforms"><orx:instanceID>${o.instanceId}</orx:instanceID></orx:meta>`
    + `${media}<encryptedXmlFile>submission.xml.enc</encryptedXmlFile>`
    + `<base64EncryptedElementSignature>${signature}</base64EncryptedElementSignature></data>`;
  return { envelope, files, aesKey };
}

/** The `base64RsaPublicKey` and version of an XForm. */
export function formKeyAndVersion(xml: string): { publicKey: string; version: string } {
  const publicKey = /base64RsaPublicKey="([^"]+)"/.exec(xml)?.[1];
  if (!publicKey) throw new Error('the form has no public key');
  const version = /<instance>\s*<[^\s>]+[^>]*?\s(?:[\w]+:)?version="([^"]*)"/.exec(xml)?.[1] ?? '';
  return { publicKey, version };
}
