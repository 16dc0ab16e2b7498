/**
 * Session, App User and CSRF tokens as Central makes them: 48 random bytes in base64 with '/' → '!'
 * and '+' → '$', so exactly 64 URL-safe characters. Web Crypto only: runs on Node and Workers.
 */
export function generateToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(48));
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\//g, '!').replace(/\+/g, '$');
}

/** Whether a string has the shape of a token (a malformed /key/ token is 401.2, an unknown one 403.1). */
export const isValidToken = (token: string): boolean => /^[A-Za-z0-9!$]{64}$/.test(token);
