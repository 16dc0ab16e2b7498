/** A minimal structured logger: one JSON line per event on the console (Workers and Lambda collect it). */
export interface Logger {
  debug(msg: string, data?: Record<string, unknown>): void;
  info(msg: string, data?: Record<string, unknown>): void;
  warn(msg: string, data?: Record<string, unknown>): void;
  error(msg: string, data?: Record<string, unknown>): void;
}

const levels = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof levels;

const serialise = (v: unknown): unknown =>
  v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v;

/**
 * @param level the lowest level written; 'silent' writes nothing.
 * @returns a Logger writing `{ level, msg, time, ...data }` lines with console.log / console.error.
 */
export function createLogger(level: LogLevel): Logger {
  const min = levels[level];
  const write = (l: Exclude<LogLevel, 'silent'>) => (msg: string, data?: Record<string, unknown>) => {
    if (levels[l] < min) return;
    const entry: Record<string, unknown> = { level: l, msg, time: new Date().toISOString() };
    for (const [k, v] of Object.entries(data ?? {})) entry[k] = serialise(v);
    (l === 'error' || l === 'warn' ? console.error : console.log)(JSON.stringify(entry));
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}
