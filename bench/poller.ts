// One timer that wakes every waiting far end of the conversation benchmark: hundreds of
// simulated callers each waiting for "the greeting has played" or "the reply started"
// would otherwise each poll on a timer of their own. Only the callers' pacing depends on
// it (a condition is seen up to one interval late); nothing is measured by it — the far
// end stamps audio as it arrives (far-end-ear.ts).

interface Waiter {
  check: () => boolean;
  deadline: number;
  what: string;
  resolve: () => void;
  reject: (err: Error) => void;
}

export interface Poller {
  /** Resolves once `check` returns true; rejects after `timeoutMs` naming `what`. */
  until(check: () => boolean, timeoutMs: number, what: string): Promise<void>;
  stop(): void;
}

export function createPoller(intervalMs = 10): Poller {
  const waiting = new Set<Waiter>();
  let timer: NodeJS.Timeout | null = null;

  const sweep = (): void => {
    const now = performance.now();
    for (const w of waiting) {
      let done = false;
      try {
        done = w.check();
      } catch (err) {
        waiting.delete(w);
        w.reject(err instanceof Error ? err : new Error(String(err)));
        continue;
      }
      if (done) {
        waiting.delete(w);
        w.resolve();
      } else if (now > w.deadline) {
        waiting.delete(w);
        w.reject(new Error(`timed out waiting for ${w.what}`));
      }
    }
    if (waiting.size === 0 && timer) {
      clearInterval(timer);
      timer = null;
    }
  };

  return {
    until(check, timeoutMs, what) {
      if (check()) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        waiting.add({ check, deadline: performance.now() + timeoutMs, what, resolve, reject });
        timer ??= setInterval(sweep, intervalMs);
      });
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = null;
      for (const w of waiting) w.reject(new Error(`stopped while waiting for ${w.what}`));
      waiting.clear();
    },
  };
}
