// Durable deadlines: "send this event to that actor at that time", stored as rows so
// they survive a restart (XState does not persist pending delays). One timer is armed
// for the earliest deadline; at boot `start()` re-arms whatever is stored. Time comes
// from the injected clock, re-read at least every second while a deadline waits. A
// fired deadline is removed before its event is delivered, so a crash in between loses
// at most that one event, never delivers it twice.
import type { Logger } from 'pino';
import type { DeadlinesRepo } from '../storage/deadlines.ts';
import { callEventSchema, type CallEvent } from '../machines/call-events.ts';

// Deadlines are wall-clock times, timers run on a monotonic clock: after a clock step or
// a suspended host a long timer would fire far off, so the timer never sleeps longer
// than this before looking at the clock again.
const MAX_DELAY_MS = 1000;

export interface SchedulerDeps {
  deadlines: DeadlinesRepo;
  clock: () => number;
  log: Logger;
  /** Delivers a due event; the supervisor drops it when the actor is gone. */
  fire: (actorId: string, event: CallEvent) => void;
}

export interface Scheduler {
  /** Sets (or moves) the deadline `name` of an actor. */
  set(d: { accountId: string; actorId: string; name: string; event: CallEvent; dueAt: number }): void;
  cancel(actorId: string, name: string): void;
  cancelAll(actorId: string): void;
  /** Arms the timer for what is stored; called once at boot, after actors are restored. */
  start(): void;
  /** Fires whatever is due now and re-arms; for a clock that jumped. */
  poke(): void;
  stop(): void;
}

export function createScheduler({ deadlines, clock, log, fire }: SchedulerDeps): Scheduler {
  let timer: NodeJS.Timeout | null = null;
  let armedFor: number | null = null;
  let running = false;

  function arm(): void {
    if (!running) return;
    const next = deadlines.earliestDue();
    if (next === armedFor && timer !== null) return;
    if (timer !== null) clearTimeout(timer);
    timer = null;
    armedFor = next;
    if (next === null) return;
    timer = setTimeout(tick, Math.min(MAX_DELAY_MS, Math.max(0, next - clock())));
    timer.unref();
  }

  function tick(): void {
    timer = null;
    armedFor = null;
    const now = clock();
    for (const row of deadlines.due(now)) {
      if (!deadlines.take(row.id)) continue;
      const parsed = callEventSchema.safeParse({ ...(JSON.parse(row.event) as object), at: now });
      if (!parsed.success) {
        log.error({ actor_id: row.actor_id, deadline: row.name }, 'stored deadline event does not parse; dropped');
        continue;
      }
      try {
        fire(row.actor_id, parsed.data);
      } catch (err) {
        log.error({ err, actor_id: row.actor_id, deadline: row.name }, 'deadline delivery failed');
      }
    }
    arm();
  }

  return {
    set(d) {
      deadlines.set(d);
      arm();
    },
    cancel(actorId, name) {
      deadlines.cancel(actorId, name);
      arm();
    },
    cancelAll(actorId) {
      deadlines.cancelAll(actorId);
      arm();
    },
    start() {
      running = true;
      tick();
    },
    poke() {
      if (running) tick();
    },
    stop() {
      running = false;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      armedFor = null;
    },
  };
}
