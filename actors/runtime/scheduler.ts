// Durable deadlines: "send this event to that actor at that time", stored as rows so
// they survive a restart (XState does not persist pending delays). One timer is armed
// for the earliest deadline; at boot `start()` re-arms whatever is stored. Delivery is
// at least once: a due row is handed to the supervisor, which removes it in the same
// transaction as the state change it causes; if that commit fails the row stays and
// fires again. Rows are routed by actor kind and id. The timer's callback never throws:
// an error is logged and the tick retried shortly.
import type { Logger } from 'pino';
import type { DeadlineRow, DeadlinesRepo } from '../../storage/deadlines.ts';
import type { StepResult } from './supervisor.ts';
import { wakeTimer } from './wake-timer.ts';

// Deadlines are wall-clock times, timers run on a monotonic clock: after a clock step or
// a suspended host a long timer would fire far off, so the timer never sleeps longer
// than this before looking at the clock again (SCHEDULER_INTERVAL_MS; the spec's "checked
// every minute" is its upper bound).
export const DEFAULT_MAX_SLEEP_MS = 1000;
/** After a failed tick (the database), look again this soon. */
const RETRY_MS = 500;

export interface SchedulerDeps {
  deadlines: DeadlinesRepo;
  clock: () => number;
  log: Logger;
  /** Hands a due deadline to its actor; the row is removed with the change it causes. */
  deliver: (row: DeadlineRow, now: number) => StepResult;
  /** True when the actor's snapshot is finished or gone: its deadlines are dropped. */
  isGone: (actorId: string) => boolean;
  /** The longest the timer sleeps before looking at the clock again (default DEFAULT_MAX_SLEEP_MS). */
  maxSleepMs?: number | undefined;
}

export interface Scheduler {
  /** Arms the timer for what is stored; called once at boot, after actors are restored. */
  start(): void;
  /** Something changed the earliest deadline: look again now. */
  poke(): void;
  stop(): void;
}

export function createScheduler({ deadlines, clock, log, deliver, isGone, maxSleepMs }: SchedulerDeps): Scheduler {
  const MAX_DELAY_MS = maxSleepMs ?? DEFAULT_MAX_SLEEP_MS;
  const timer = wakeTimer(() => tick(), MAX_DELAY_MS);
  let running = false;

  function armIn(ms: number): void {
    if (running) timer.in(ms);
  }

  function arm(): void {
    const next = deadlines.earliestDue();
    // Nothing stored: deadlines set later are found at the next poke or the next look.
    armIn(next === null ? MAX_DELAY_MS : next - clock());
  }

  function tick(): void {
    if (!running) return;
    try {
      const now = clock();
      let stuck = false;
      for (const row of deadlines.due(now)) {
        const result = deliver(row, now);
        if (result === 'commit_failed') stuck = true;
        else if (result === 'not_live' || result === 'invalid') {
          // An actor that is gone takes its deadlines with it; one not live but
          // unfinished (being restored) keeps them for a later tick.
          if (result === 'invalid' || isGone(row.actor_id)) deadlines.takeIfDue(row);
          else stuck = true;
        }
      }
      if (stuck) armIn(RETRY_MS);
      else arm();
    } catch (err) {
      log.error({ err }, 'scheduler tick failed; retrying');
      armIn(RETRY_MS);
    }
  }

  return {
    start() {
      running = true;
      tick();
    },
    poke() {
      if (running) armIn(0);
    },
    stop() {
      running = false;
      timer.clear();
    },
  };
}
