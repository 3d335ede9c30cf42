// The live machine view's contract (issue 7): what the supervisor tells about its live
// actors, per account, for `GET /v1/debug/actors` and the debug websocket. The shapes
// follow XState's inspection events (`@xstate.snapshot`, `@xstate.event`) so a
// developer who knows XState's inspector reads them at once. Only structural values
// (event types, times, counts, flags, enumerated words, carrier ids, state names) leave
// the hub; every other field is redacted (actors/runtime/inspection-hub.ts, an allowlist).

/** One live actor as the list shows it. */
export interface ActorView {
  kind: string;
  id: string;
  /** XState state value, e.g. `"ringing"` or `{ "in-progress": "listening" }`. */
  value: unknown;
  tags: string[];
  /** `active`, `done` or `error`, as XState says. */
  status: string;
  /** The last event the actor took, redacted; null for a fresh actor. */
  lastEvent: RedactedEvent | null;
  /** The kind's counts (a campaign's progress); null for kinds that show none. */
  counters: Record<string, number> | null;
  /** Epoch ms of the last transition. */
  updatedAt: number;
}

/** An event with every field that is not on the hub's allowlist of structural values replaced by `"[redacted]"`. */
export type RedactedEvent = { type: string } & Record<string, unknown>;

export type InspectionEvent =
  | {
      type: '@xstate.event';
      kind: string;
      actorId: string;
      /** Monotonic per process: a viewer can tell it missed some. */
      seq: number;
      at: number;
      event: RedactedEvent;
    }
  | {
      type: '@xstate.snapshot';
      kind: string;
      actorId: string;
      seq: number;
      at: number;
      /** The event that led here (redacted); null for an actor's first snapshot. */
      event: RedactedEvent | null;
      snapshot: { value: unknown; tags: string[]; status: string; counters: Record<string, number> | null };
    };

/** What the supervisor offers the debug routes. Everything is scoped to one account. */
export interface LiveActorSource {
  list(accountId: string): ActorView[];
  /** Calls `listener` for each inspection event of the account's actors; returns the unsubscribe. */
  subscribe(accountId: string, listener: (e: InspectionEvent) => void): () => void;
}
