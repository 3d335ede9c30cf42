// What the supervisor needs to know of one kind of actor (calls today; batch and SMS
// campaigns next): its pure machine and version, the schema of the events it takes,
// the writer that projects a snapshot onto the kind's domain rows inside the commit,
// the effects its transitions may ask for, and how an actor of an older version or
// one cut off by a restart comes back. Registered once; no kind copies runtime code.
import type { AnyStateMachine, ContextFrom, SnapshotFrom } from 'xstate';
import type { z } from 'zod';

/** A snapshot as stored: the machine version that wrote it, its state value and context. */
export interface PersistedActor {
  version: number;
  value: unknown;
  context: unknown;
}

/** A committed effect intent, as its handler sees it. */
export interface Intent {
  id: string;
  kind: string;
  actorId: string;
  accountId: string;
  effect: string;
  params: unknown;
  createdAt: number;
  /** Set when the request may have left (committed before it did); null: never sent. */
  sentAt: number | null;
  attempts: number;
}

export interface EffectRun<TContext> {
  intent: Intent;
  /** The actor's context when the effect starts. */
  context: TContext;
  /**
   * Commits that the request is about to leave. Call it right before the request; it
   * throws when the commit fails (then do not send: the intent is retried unsent).
   */
  markSent(): void;
}

export interface EffectHandler<TContext> {
  /**
   * Carries the effect out and resolves with the event that records its outcome. It
   * should not reject: a failure is an outcome (an event) too. A rejection is logged
   * and the intent is run again later.
   */
  run(run: EffectRun<TContext>): Promise<{ type: string }>;
  /**
   * After a restart, for an intent whose request may have left: the event to deliver
   * instead of sending again, or null to send again (for effects the far side
   * de-duplicates, or that are safe to repeat).
   */
  resumeSent?(intent: Intent, context: TContext, now: number): { type: string } | null;
}

/** Commit-time hooks a kind may add to the transaction of its transitions. */
export interface WriteContext {
  /** True for the actor's first commit. */
  first: boolean;
  now: number;
}

export interface ActorKind<TMachine extends AnyStateMachine = AnyStateMachine> {
  kind: string;
  machine: TMachine;
  /** Stored with every snapshot; a snapshot of another version goes through `migrate`. */
  version: number;
  eventSchema: z.ZodType<{ type: string }>;
  accountOf(context: ContextFrom<TMachine>): string;
  /** Projects a snapshot onto the kind's domain rows; runs inside the commit's transaction. */
  write(snapshot: SnapshotFrom<TMachine>, w: WriteContext): void;
  /** Machine actions that are effects, carried out after the commit. */
  effects: Record<string, EffectHandler<ContextFrom<TMachine>>>;
  /** Machine actions applied after the commit to in-memory state (slots); never I/O. */
  afterCommit?: Record<string, (snapshot: SnapshotFrom<TMachine>, params: unknown) => void>;
  /**
   * Brings a snapshot of another version (or one naming a state this machine lacks) to
   * this version: never restore into an error. Null means it cannot, and the actor is
   * ended by `abandon` instead.
   */
  migrate(persisted: PersistedActor): PersistedActor | null;
  /** Restored actors are adopted in ascending order of this (e.g. creation time, for fair queues). */
  restoreOrder?(snapshot: SnapshotFrom<TMachine>): number;
  /** Re-derives in-memory state (slots, queues) of a restored actor, in `restoreOrder`. */
  adopt?(snapshot: SnapshotFrom<TMachine>): void;
  /**
   * Counts the live machine view shows beside the state (a campaign's progress): numbers
   * only, under names the code chose; never personal data.
   */
  counters?(snapshot: SnapshotFrom<TMachine>): Record<string, number>;
  /** Events to deliver to a restored actor once every actor is back (e.g. RESTORED). */
  onRestore?(snapshot: SnapshotFrom<TMachine>, now: number): { type: string }[];
  /**
   * After every committed step, whatever delivered the event (an API call, an effect's
   * outcome, a deadline, a restore): in-memory indexes and follow-up work. `live` is
   * false once the actor reached its final state and was forgotten.
   */
  settled?(snapshot: SnapshotFrom<TMachine>, live: boolean): void;
  /** An effect's outcome arrived after its actor was stopped (its account deleted): undo what it did outside. */
  orphaned?(intent: Intent, outcome: { type: string }): void;
  /** The actor stopped without reaching its end (a defect in a transition): tidy up outside. */
  onCrash?(snapshot: SnapshotFrom<TMachine>, error: unknown): void;
  /** An actor that cannot be restored or migrated: record what can be said of it. */
  abandon?(persisted: PersistedActor, accountId: string, actorId: string, now: number): void;
}
