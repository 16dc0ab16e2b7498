// Workers build only (wrangler.toml [alias] "./frequency_lists"): what zxcvbn's matching.js gets in
// place of its bundled dictionaries, the lists lib/users/zxcvbn.ts fetched from the users Worker's
// static assets before it first evaluated zxcvbn. Empty lists would make every password look strong,
// so an unfilled slot is an error, never a silent pass.
const { frequencyListSlot } = require('../../lib/users/zxcvbn-lists.ts');

if (Object.keys(frequencyListSlot).length === 0) {
  throw new Error('zxcvbn evaluated before its frequency lists were loaded (lib/users/zxcvbn.ts loadZxcvbn; is the ASSETS binding of [env.users] there?)');
}
module.exports = frequencyListSlot;
