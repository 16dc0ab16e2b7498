/**
 * A module loaded on first use and then kept: for imports that must stay lazy (a dependency cycle
 * between lib folders, or an optional package) but sit on hot paths. A bare `await import()` on
 * every call goes through the module loader each time (under tsx, a message to its loader thread
 * per call: measured at several % of an approval's CPU).
 * @returns a function answering the same promise of the module every time. Pure until first called.
 */
export function lazyModule<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | null = null;
  return () => (loaded ??= load());
}
