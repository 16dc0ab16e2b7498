/**
 * The Problems of encryption, in Central's codes and words (lib/util/problem.js). Kept beside the
 * domain rather than in lib/problem.ts only to stay out of others' concurrent edits; they are
 * ordinary `Problem`s and render like every other.
 */
import { Problem } from '../problem';

export const encryptionProblems = {
  /** 400.12: a wrong passphrase, or data that does not decrypt. */
  undecryptable: () => new Problem(400.12, 'Could not perform decryption. Double check your passphrase and your data and try again.'),
  /** 409.4: POST P/key on a project whose managed encryption is already on. */
  alreadyActive: (d: { feature: string }) =>
    new Problem(409.4, `Could not activate feature (${d.feature}) as it was already activated`, d),
};
