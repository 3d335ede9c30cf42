// CPU accounting and placement for the conversation benchmark, from Linux's own books:
// a process's utime + stime from /proc/<pid>/stat (every thread, onnxruntime's and
// libuv's included, which process.cpuUsage of another process cannot see), the whole
// machine's busy and steal time from /proc/stat, and `taskset` to give the server a
// core of its own, so "conversations per core" is measured on exactly one core rather
// than on whatever the scheduler lent it.
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export function clockTicksPerSecond(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** utime + stime of a process (all its threads), in clock ticks: fields 14 and 15 of /proc/<pid>/stat. */
export function processTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** [busy, steal, total] ticks of the whole machine, from the first line of /proc/stat. */
export function machineTicks(): [number, number, number] {
  const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  const steal = f[7] ?? 0;
  return [total - idle - steal, steal, total];
}

/** The CPUs a process may run on, as taskset's hex mask; null when taskset is missing. */
export function affinityOf(pid: number): string | null {
  const r = spawnSync('taskset', ['-p', String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  return /:\s*([0-9a-f,]+)\s*$/i.exec(r.stdout)?.[1] ?? null;
}

/**
 * Binds every thread of `pid` to the CPUs of `mask` (hex, as `taskset -p` prints it);
 * threads started later inherit it from the thread that starts them. False when it
 * could not (no taskset, not permitted).
 */
export function setAffinity(pid: number, mask: string): boolean {
  return spawnSync('taskset', ['-a', '-p', mask, String(pid)], { stdio: 'ignore' }).status === 0;
}

/** The mask of one CPU. */
export const cpuMask = (cpu: number): string => (1n << BigInt(cpu)).toString(16);

/** A thread's niceness (field 19 of /proc/<pid>/task/<tid>/stat), or null once it is gone. */
function threadNice(pid: number, tid: string): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after its ')' are plain.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  } catch {
    return null;
  }
}

/**
 * Gives `pid`'s main thread the niceness `nice` and moves every other thread by the
 * same amount (Linux applies niceness per thread; threads started later inherit it), so
 * a thread the process deliberately runs below its event loop (the VAD's, see
 * voice/vad/silero-worker.ts) stays below it. The bench raises its own two processes
 * (-10) so that other work on a shared machine (builds, test runs) cannot take the
 * server's core in the middle of a measurement; false when not permitted.
 */
export function setNiceness(pid: number, nice: number): boolean {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return false;
  }
  const main = threadNice(pid, String(pid));
  if (main === null) return false;
  const shift = nice - main;
  let ok = true;
  for (const tid of tids) {
    const current = threadNice(pid, tid);
    if (current === null) continue;
    const target = Math.max(-20, Math.min(19, current + shift));
    ok = spawnSync('renice', ['-n', String(target), '-p', tid], { stdio: 'ignore' }).status === 0 && ok;
  }
  return ok;
}
