// The one 20 ms clock of a process: every call's playout (playout.ts) is ticked by it,
// so 300 calls cost one timer rather than 300. Each tick is scheduled against absolute
// time (start + k·interval), not "interval after the last one": a timer that fires a
// millisecond late, or a tick that takes a few, does not push every later tick back,
// so the clock keeps real time over a whole call. When the event loop stalls past
// whole slots they are skipped (counted) rather than fired back to back: each playout
// catches up on its own from the time it is given.
//
// The timer runs only while something is registered, so an idle process does not wake
// 50 times a second; while it runs it holds the process open like the calls it serves
// (a call's engine removes its playout when the stream ends, shutdown ends them all).
// `tickOnce(now)` runs one tick at a given time; with `manual: true` it is the only
// way ticks happen, which makes tests deterministic.

/** Anything the ticker drives: called once per tick with the tick's time. */
export interface Tickable {
  tick(nowMs: number): void;
}

export interface PlayoutTickerOptions {
  /** Tick period (default 20: one μ-law frame). */
  intervalMs?: number;
  /** The clock ticks are scheduled on and stamped with (default `performance.now`). */
  now?: () => number;
  /** No timer at all: ticks happen only through `tickOnce` (tests). */
  manual?: boolean;
  /** A tickable threw: it has been removed (so one broken call cannot stall or flood the rest). */
  onError?: (err: unknown, tickable: Tickable) => void;
}

export interface PlayoutTicker {
  add(tickable: Tickable): void;
  remove(tickable: Tickable): void;
  /** How many tickables are registered. */
  readonly size: number;
  /** Ticks every registered tickable at `nowMs`, in the order they were added. */
  tickOnce(nowMs: number): void;
  /** Ticks run so far (by the timer or `tickOnce`). */
  readonly ticks: number;
  /** Slots the timer skipped because the event loop was stalled past them. */
  readonly skipped: number;
  /** Stops the timer for good; later `add`s do not restart it. */
  stop(): void;
}

export function createPlayoutTicker(opts: PlayoutTickerOptions = {}): PlayoutTicker {
  const interval = opts.intervalMs ?? 20;
  if (!(interval > 0)) throw new RangeError(`playout ticker: intervalMs must be positive, got ${interval}`);
  const now = opts.now ?? (() => performance.now());
  const manual = opts.manual ?? false;
  // An array, not a Set: iterating it allocates nothing (the tick runs 50 times a second).
  const list: Tickable[] = [];
  let cursor = -1; // index being ticked, so a removal during a tick does not skip anyone
  let timer: NodeJS.Timeout | null = null;
  let next = 0; // absolute time of the next slot
  let ticks = 0;
  let skipped = 0;
  let stopped = false;

  function tickOnce(t: number): void {
    ticks++;
    for (cursor = 0; cursor < list.length; cursor++) {
      const p = list[cursor]!;
      try {
        p.tick(t);
      } catch (err) {
        remove(p);
        opts.onError?.(err, p);
      }
    }
    cursor = -1;
  }

  function fire(): void {
    timer = null;
    tickOnce(now());
    next += interval;
    const t = now();
    if (next <= t) {
      // Stalled (by the event loop, or by this very tick) past whole slots: resume on the grid, after now.
      const behind = Math.floor((t - next) / interval) + 1;
      skipped += behind;
      next += behind * interval;
    }
    schedule();
  }

  function schedule(): void {
    if (stopped || manual || timer !== null || list.length === 0) return;
    timer = setTimeout(fire, Math.max(0, next - now()));
  }

  function remove(tickable: Tickable): void {
    const i = list.indexOf(tickable);
    if (i < 0) return;
    list.splice(i, 1);
    if (i <= cursor) cursor--;
    if (list.length === 0 && timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
  }

  return {
    add(tickable) {
      if (list.includes(tickable)) return;
      list.push(tickable);
      // Starting from idle: the grid begins one interval from now.
      if (list.length === 1 && timer === null) next = now() + interval;
      schedule();
    },
    remove,
    get size() {
      return list.length;
    },
    tickOnce,
    get ticks() {
      return ticks;
    },
    get skipped() {
      return skipped;
    },
    stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}
