// When the bench process itself stopped listening. Everything the far ends hear passes
// through this process's event loop, which shares its CPU with the simulators and, on a
// busy machine, with other processes: when it stalls, audio that reached its sockets in
// time is read late and would be scored as a gap the service caused. A heartbeat timer
// every few ms records each interval in which it could not run (a beat more than
// `thresholdMs` late), so such gaps can be told apart (far-end-ear.ts).

export interface StallLog {
  /** The start of the first recorded stall overlapping [from, to], or null. */
  firstStallIn(from: number, to: number): number | null;
  /** Stalls recorded. */
  readonly count: number;
  /** The longest, ms. */
  readonly maxMs: number;
}

export interface StallMonitor extends StallLog {
  stop(): void;
}

/**
 * A log over `intervals`, flat [from, to] pairs in time order (read live, so it sees
 * pairs added later). `from` is the last beat that ran on time, so a stall may have
 * begun up to one heartbeat later: the log errs towards blaming this process.
 */
export function stallLogOf(intervals: readonly number[]): StallLog {
  return {
    firstStallIn(from, to) {
      for (let i = 0; i < intervals.length; i += 2) if (intervals[i + 1]! > from && intervals[i]! < to) return intervals[i]!;
      return null;
    },
    get count() {
      return intervals.length / 2;
    },
    get maxMs() {
      let max = 0;
      for (let i = 0; i < intervals.length; i += 2) max = Math.max(max, intervals[i + 1]! - intervals[i]!);
      return max;
    },
  };
}

export function monitorStalls(intervalMs = 5, thresholdMs = 15): StallMonitor {
  const intervals: number[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    if (now - last > intervalMs + thresholdMs) intervals.push(last, now);
    last = now;
  }, intervalMs);
  const log = stallLogOf(intervals);
  return {
    firstStallIn: (from, to) => log.firstStallIn(from, to),
    get count() {
      return log.count;
    },
    get maxMs() {
      return log.maxMs;
    },
    stop() {
      clearInterval(timer);
    },
  };
}
