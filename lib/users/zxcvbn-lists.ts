/**
 * Where zxcvbn's frequency lists come from when the bundle does not carry them (the Workers build:
 * see lib/users/zxcvbn.ts). Kept apart from the loader, which imports zxcvbn, so that the Workers
 * runtime (lib/runtime/workers.ts, in every group's bundle) can name the source without bundling
 * zxcvbn into every Worker.
 */

/** zxcvbn's frequency lists by name, in its order (Workers build only; empty elsewhere). */
export const frequencyListSlot: Record<string, string[]> = {};

let source: (() => Promise<string>) | null = null;

/**
 * Says where the text of zxcvbn's `lib/frequency_lists.js` comes from (Workers: the users Worker's
 * ASSETS binding). Called per request with the same binding; the lists are fetched once per isolate.
 * @param fetchText returns the file's text; it throws when the file is unavailable.
 */
export function setFrequencyListSource(fetchText: () => Promise<string>): void {
  source = fetchText;
}

/** The source set by setFrequencyListSource, or null (Node, Lambda: the package carries the lists). */
export const frequencyListSource = (): (() => Promise<string>) | null => source;
