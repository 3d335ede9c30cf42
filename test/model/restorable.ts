// Persist and restore of an XState actor as a durable store would do it: the persisted
// snapshot through JSON, and beside it the actor's pending delayed events (`after`
// transitions), which XState does not persist (statelyai/xstate#5331). The call runtime
// keeps its deadlines in SQLite for the same reason; the machines the tests restore get
// the same treatment here: a clock that notes when each delay is due, so a persist can
// store what is left of each and a restore arms them again on the new actor.
import { createActor, SimulatedClock, type Actor, type AnyStateMachine, type InputFrom } from 'xstate';

/** One of XState's pending delayed events (its system scheduler's record), with when it is due. */
interface ScheduledDelay {
  source: unknown;
  target: unknown;
  event: { type: string };
  delay: number;
  id: string;
  startedAt: number;
  dueAt?: number;
}

/** What a store keeps of a pending delay: the event, its id and how long it still had to run. */
export interface StoredDelay {
  id: string;
  event: { type: string };
  remainingMs: number;
}

type SchedulerView = { _snapshot: { _scheduledEvents: Record<string, ScheduledDelay> } };

const schedulerOf = (actor: Actor<AnyStateMachine>): SchedulerView => actor.system as unknown as SchedulerView;

/** A simulated clock that dates every delay the actor's scheduler arms. */
export class DelayTrackingClock extends SimulatedClock {
  system: SchedulerView | null = null;
  override setTimeout(fn: (...args: any[]) => void, timeout: number): number {
    const id = super.setTimeout(fn, timeout);
    // The scheduler records the delayed event just before it arms the timer: the one not yet dated.
    for (const e of Object.values(this.system?._snapshot._scheduledEvents ?? {})) e.dueAt ??= this.now() + timeout;
    return id;
  }

  /** An actor of `machine` on this clock (not started). */
  actorOf<M extends AnyStateMachine>(machine: M, input: InputFrom<M>): Actor<M> {
    const actor = createActor(machine, { input, clock: this } as never) as Actor<M>;
    this.system = schedulerOf(actor);
    return actor;
  }

  /** The pending delays a store would keep beside the snapshot, through JSON. */
  pendingDelays(actor: Actor<AnyStateMachine>): StoredDelay[] {
    const events = Object.values(schedulerOf(actor)._snapshot._scheduledEvents);
    return JSON.parse(JSON.stringify(events.map((e) => ({ id: e.id, event: e.event, remainingMs: Math.max(0, (e.dueAt ?? this.now()) - this.now()) }))));
  }

  /**
   * The store keeps the snapshot (through JSON) and the pending delays, the actor stops,
   * and a new one starts from the stored form with those delays armed again for what was
   * left of them. Returns the new actor and the stored snapshot.
   */
  restore<M extends AnyStateMachine>(machine: M, actor: Actor<M>, input: InputFrom<M>): { actor: Actor<M>; stored: unknown } {
    const stored: unknown = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
    const delays = this.pendingDelays(actor);
    actor.stop();
    const next = createActor(machine, { snapshot: stored, input, clock: this } as never) as Actor<M>;
    const system = schedulerOf(next);
    this.system = system;
    for (const d of delays) {
      system._snapshot._scheduledEvents[`${next.sessionId}.${d.id}`] = { source: next, target: next, event: d.event, delay: d.remainingMs, id: d.id, startedAt: 0 };
    }
    next.start();
    return { actor: next, stored };
  }
}
