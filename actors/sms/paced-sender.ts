// One paced queue per sending number (api.md Limits: 1 message per second per number,
// set by the carrier): every text that leaves a number (single sends, campaign rows,
// auto-replies, in-call texts) takes its turn here. A turn starts no sooner than the
// interval after the previous turn on that number started, and never while it is still
// out, so a number has at most one request at the carrier at a time (which is also what
// lets a lost answer be matched to its send: sms.ts). Lanes take turns round robin, so a
// 10,000-row campaign does not hold a single send behind it, nor one campaign another.
// Time is a parameter (`now`, `sleep`): the pacing test runs on a manual clock.

export interface PacerDeps {
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  /** Shortest time between two sends' starts on one number (SMS_SEND_INTERVAL_MS). */
  intervalMs: number;
}

interface Waiting {
  run: () => Promise<void>;
}

interface NumberQueue {
  lanes: Map<string, Waiting[]>;
  /** Lanes in turn order; the next turn goes to `order[next % order.length]`. */
  order: string[];
  next: number;
  lastStart: number | null;
  draining: boolean;
}

export interface Pacer {
  /** Runs `job` in its lane's turn on `number`; resolves or rejects with the job. */
  turn<T>(number: string, lane: string, job: () => Promise<T>): Promise<T>;
  /** Jobs waiting (not started) on `number`, or on every number. */
  waiting(number?: string): number;
}

export function createPacer(deps: PacerDeps): Pacer {
  const numbers = new Map<string, NumberQueue>();

  function take(q: NumberQueue): Waiting | null {
    while (q.order.length > 0) {
      const i = q.next % q.order.length;
      const lane = q.order[i]!;
      const jobs = q.lanes.get(lane)!;
      const job = jobs.shift();
      if (jobs.length === 0) {
        q.lanes.delete(lane);
        q.order.splice(i, 1);
        // The lane after the removed one now sits at `i` (the first one when it was the last).
        q.next = q.order.length === 0 ? 0 : i % q.order.length;
      } else {
        q.next = i + 1;
      }
      if (job) return job;
    }
    return null;
  }

  async function drain(number: string, q: NumberQueue): Promise<void> {
    q.draining = true;
    try {
      for (;;) {
        if (q.lastStart !== null) {
          const wait = q.lastStart + deps.intervalMs - deps.now();
          if (wait > 0) await deps.sleep(wait);
        }
        const job = take(q);
        if (!job) break;
        q.lastStart = deps.now();
        await job.run();
      }
    } finally {
      // The queue stays (with its last start) so the next text still waits its interval.
      q.draining = false;
      if (q.order.length > 0) void drain(number, q);
    }
  }

  return {
    turn<T>(number: string, lane: string, job: () => Promise<T>): Promise<T> {
      let q = numbers.get(number);
      if (!q) numbers.set(number, (q = { lanes: new Map(), order: [], next: 0, lastStart: null, draining: false }));
      return new Promise<T>((resolve, reject) => {
        const waiting: Waiting = {
          run: () => job().then(resolve, reject),
        };
        let jobs = q.lanes.get(lane);
        if (!jobs) {
          q.lanes.set(lane, (jobs = []));
          // A lane (new, or back after it emptied) goes last in the current round: just before
          // the lane whose turn is next. Appended at the end instead, a lane that keeps emptying
          // and coming back could take the next turn every time, ahead of lanes waiting all along.
          const at = q.order.length === 0 ? 0 : q.next % q.order.length;
          q.order.splice(at, 0, lane);
          q.next = q.order.length === 1 ? 0 : at + 1;
        }
        jobs.push(waiting);
        if (!q.draining) void drain(number, q);
      });
    },
    waiting(number) {
      let n = 0;
      for (const [key, q] of numbers) if (number === undefined || key === number) for (const jobs of q.lanes.values()) n += jobs.length;
      return n;
    },
  };
}
