/**
 * In-process CPU profiles for bench phases (BENCH_PROFILE=1): `profilePhase` starts V8's sampling
 * profiler through node:inspector, and the function it returns stops it and prints the hottest
 * functions by self time (the server and the bench's clients share the process: read them together)
 * and writes the whole profile next to the system's temporary files for Chrome DevTools.
 */
import { Session } from 'node:inspector/promises';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number } };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[] };

/** Starts profiling when BENCH_PROFILE is set; the returned function stops it and prints the top `top` functions. */
export async function profilePhase(label: string, top = 25): Promise<() => Promise<void>> {
  if (!process.env.BENCH_PROFILE) return async () => {};
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return async () => {
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
    session.disconnect();
    const file = join(tmpdir(), `bench-${label}-${process.pid}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const self = new Map<string, number>();
    let total = 0;
    profile.samples.forEach((id, i) => {
      const f = byId.get(id)!.callFrame;
      const where = f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(lib|functions|bench|infra)\//, '$1/');
      const key = `${f.functionName || '(anonymous)'} ${where}:${f.lineNumber + 1}`;
      const dt = profile.timeDeltas[i] ?? 0;
      self.set(key, (self.get(key) ?? 0) + dt);
      total += dt;
    });
    console.log(`profile ${label}: ${(total / 1000).toFixed(0)} ms sampled, top self time (${file}):`);
    for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${((v / total) * 100).toFixed(1).padStart(5)} %  ${k}`);
  };
}

// CPU spent per operation, a figure the other work on a shared box skews far less than a rate:
// this process's main thread (Linux /proc; its task id is the process id) and the PostgreSQL
// backends serving the database (pg_stat_activity, then /proc/<pid>/stat), in ms.
const TICK_MS = 10; // USER_HZ = 100 on Linux
const threadTicks = (path: string): number => {
  try {
    const f = readFileSync(path, 'utf8').split(') ')[1]!.split(' ');
    return Number(f[11]) + Number(f[12]); // utime, stime (fields 14 and 15)
  } catch {
    return 0;
  }
};

/**
 * Starts a CPU meter: `backendPids` lists the database's backend pids (empty on PGlite, whose work
 * is this thread's). The returned function gives the CPU ms since, of the main thread and of those
 * backends (including any that started meanwhile), of this whole process (its worker threads, as
 * the reviewers' client, included) and of the whole box (every core, every process).
 */
export async function cpuMeter(backendPids: () => Promise<number[]>): Promise<() => Promise<{ mainMs: number; pgMs: number; processMs: number; boxMs: number }>> {
  const snap = async () => ({
    main: threadTicks(`/proc/${process.pid}/task/${process.pid}/stat`), process: threadTicks(`/proc/${process.pid}/stat`), box: boxTicks(),
    pg: new Map((await backendPids()).map((p) => [p, threadTicks(`/proc/${p}/stat`)])),
  });
  const before = await snap();
  return async () => {
    const after = await snap();
    let pg = 0;
    for (const [pid, ticks] of after.pg) pg += ticks - (before.pg.get(pid) ?? 0);
    return {
      mainMs: (after.main - before.main) * TICK_MS, pgMs: pg * TICK_MS,
      processMs: (after.process - before.process) * TICK_MS, boxMs: (after.box - before.box) * TICK_MS,
    };
  };
}

/** Busy ticks of the whole box (/proc/stat `cpu`: all but idle and iowait), summed over its cores. */
function boxTicks(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    return f.reduce((a, b) => a + b, 0) - (f[3] ?? 0) - (f[4] ?? 0);
  } catch {
    return 0;
  }
}
