/**
 * Loads zxcvbn, Central's password strength estimator (lib/users/password-rules.ts), on first use.
 *
 * On Node and Lambda it is the package as published: its frequency lists (the dictionaries, ~390 kB
 * gzipped) live in its code. A Worker cannot carry them within its 400 kB gzipped budget, so the
 * Workers build (wrangler.toml `[alias]`) replaces zxcvbn's `./frequency_lists` module with
 * infra/workers/zxcvbn-frequency-lists.cjs, which hands zxcvbn `frequencyListSlot`
 * (lib/users/zxcvbn-lists.ts); and the users Worker serves zxcvbn's own `frequency_lists.js` as a
 * static asset (`[env.users] assets`, outside the script's size). `setFrequencyListSource`
 * (lib/runtime/workers.ts) says where to fetch it; the first password check then fetches and
 * parses it, fills the slot, and only then evaluates zxcvbn, which builds its dictionaries from
 * the slot. The same lists, so the same verdicts.
 */
import type zxcvbnFn from 'zxcvbn';
import { frequencyListSlot, frequencyListSource } from './zxcvbn-lists';

type Zxcvbn = typeof zxcvbnFn;

let loading: Promise<Zxcvbn> | null = null;

/**
 * Parses the text of zxcvbn's `lib/frequency_lists.js` (`name: "w1,w2,…".split(",")` per list)
 * without evaluating it (Workers have no eval). Pure.
 * @returns the lists by name, in file order.
 * @throws Error when the text holds no `passwords` list (not that file).
 */
export function parseFrequencyLists(text: string): Record<string, string[]> {
  const lists: Record<string, string[]> = {};
  // A JavaScript string literal: `\'` and the like stand for the character escaped; \xNN, \uNNNN.
  const unescape = (lit: string) => lit.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)/g, (_, e: string) =>
    e.length > 1 ? String.fromCharCode(parseInt(e.slice(1), 16)) : ({ n: '\n', t: '\t', r: '\r', 0: '\0' } as Record<string, string>)[e] ?? e);
  for (const m of text.matchAll(/^\s*([A-Za-z_]+):\s*"((?:[^"\\]|\\.)*)"\.split\(","\)/gm)) lists[m[1]!] = unescape(m[2]!).split(',');
  if (!lists.passwords?.length) throw new Error('not zxcvbn\'s frequency_lists.js: no passwords list in it');
  return lists;
}

/**
 * zxcvbn, loaded once: on a Workers build with a frequency-list source, the lists are fetched and
 * put in the slot first. A failed load is retried on the next call.
 * @returns the zxcvbn function.
 * @throws Error when the lists cannot be fetched or parsed.
 */
export function loadZxcvbn(): Promise<Zxcvbn> {
  loading ??= (async () => {
    const source = frequencyListSource();
    if (source && Object.keys(frequencyListSlot).length === 0) {
      Object.assign(frequencyListSlot, parseFrequencyLists(await source()));
    }
    const m = await import('zxcvbn');
    // A bundler that resolves the CommonJS package hands it over as `default`.
    return (typeof m === 'function' ? m : m.default) as Zxcvbn;
  })();
  return loading.catch((err: unknown) => {
    loading = null;
    throw err;
  });
}
