import { hash } from 'bcryptjs';
import type { Ctx } from '../context';
import { problems } from '../problem';
import { loadZxcvbn } from './zxcvbn';

/**
 * Central's password rules (lib/util/crypto.js hashPassword), in its order: a string (400.11), at
 * least 10 characters (400.21), at most 72 bytes, bcrypt's limit (400.38), and not guessable:
 * zxcvbn scores it above 2 (400.44 with zxcvbn's warning and suggestions). zxcvbn is the same
 * release Central uses, so the same passwords pass. Kept apart from passwords.ts so that only the
 * users group loads zxcvbn, not every Worker that authenticates; and loaded on first use
 * (lib/users/zxcvbn.ts; on Workers its dictionaries are a static asset, fetched then), so a cold
 * start (a login) does not parse them.
 * @throws Problem 400.11 / 400.21 / 400.38 / 400.44. Pure.
 */
export async function checkPassword(password: unknown): Promise<string> {
  if (typeof password !== 'string') throw problems.user.invalidDataTypeOfParameter({ value: password, expected: 'string' });
  if (password.length < 10) throw problems.user.passwordTooShort();
  if (new TextEncoder().encode(password).byteLength > 72) throw problems.user.passwordTooLong();
  const zxcvbn = await loadZxcvbn();
  const { score, feedback } = zxcvbn(password);
  if (score <= 2) throw problems.user.passwordTooWeak({ warning: feedback.warning, suggestions: feedback.suggestions });
  return password;
}

/**
 * @returns the bcrypt hash of a password that passes checkPassword, at the configured cost.
 * @throws as checkPassword.
 */
export async function hashPassword(ctx: Ctx, password: unknown): Promise<string> {
  return hash(await checkPassword(password), ctx.config.BCRYPT_COST);
}
