// The one timer a table-driven worker keeps (the scheduler, the webhook outbox, the
// post-call analysis): armed for the next due row, never sleeping longer than `maxSleepMs`
// before looking at the clock again (rows are wall-clock times, timers are monotonic, and
// rows may be added by another process), re-armed rather than stacked, and unref'd so it
// never holds the process open.
export interface WakeTimer {
  /** Fires `wake` in `ms` (clamped to 0 … maxSleepMs), replacing any pending wake. */
  in(ms: number): void;
  /** Cancels the pending wake, if any. */
  clear(): void;
}

export function wakeTimer(wake: () => void, maxSleepMs: number): WakeTimer {
  let timer: NodeJS.Timeout | null = null;
  const clear = (): void => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  return {
    in(ms) {
      clear();
      timer = setTimeout(() => {
        timer = null;
        wake();
      }, Math.min(maxSleepMs, Math.max(0, ms)));
      timer.unref();
    },
    clear,
  };
}
