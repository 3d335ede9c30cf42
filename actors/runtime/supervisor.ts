// The generic actor runtime: every actor of every registered kind (actor-kind.ts) is a
// snapshot driven by XState's pure `transition()`. For each event:
//   1. the next snapshot and the actions it asks for are computed (nothing runs);
//   2. ONE SQLite transaction commits the snapshot, the kind's domain rows, the durable
//      deadlines it sets or cancels, the effect intents it asks for, and removes the
//      intent or deadline whose outcome this event records;
//   3. only then is the actor advanced, and the effects carried out, each outcome coming
//      back as an event through step 1.
// A failed commit changes nothing: the actor stays where it was, no effect starts, and
// the event's source (a carrier webhook answered 500, an intent outcome, a deadline)
// delivers it again. State names are never matched here: kinds speak through tags.
import { initialTransition, transition, type AnyMachineSnapshot, type AnyStateMachine } from 'xstate';
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import type { IntentRow } from '../../storage/intents.ts';
import type { ActorKind, Intent, PersistedActor } from './actor-kind.ts';
import type { ActorView, InspectionEvent, RedactedEvent } from './inspection.ts';

/** Where the live machine view hears about transitions (actors/runtime/inspection-hub.ts). */
export interface InspectionSink {
  publish(accountId: string, e: InspectionEvent): void;
  track(accountId: string, view: ActorView): void;
  drop(accountId: string, actorId: string): void;
}

export interface SupervisorDeps {
  storage: Storage;
  clock: () => number;
  log: Logger;
  inspection?: InspectionSink;
  /** A transition set a deadline: the scheduler looks again now (it would within a second anyway). */
  onDeadlinesChanged?: () => void;
  /** Redacts an event of a kind for the live view. */
  redact?: (kind: string, event: { type: string }) => RedactedEvent;
}

interface Live {
  kind: ActorKind;
  id: string;
  accountId: string;
  snapshot: AnyMachineSnapshot;
  lastEvent: { type: string } | null;
  updatedAt: number;
  /** Intents of this actor being carried out now (in this process). */
  running: Set<string>;
}

/** Why an event was not taken. */
export type StepResult = 'taken' | 'not_live' | 'invalid' | 'commit_failed' | 'crashed';

const EFFECT_RETRY_MS = [250, 1000, 5000, 15_000, 30_000];

export function createSupervisor(deps: SupervisorDeps) {
  const { storage, clock, log } = deps;
  const kinds = new Map<string, ActorKind>();
  const live = new Map<string, Live>();
  let intentSeq = 0;
  let stopped = false;
  const retryTimers = new Set<NodeJS.Timeout>();
  let inspectSeq = 0;
  // One-shot watchers of an actor's snapshots (e.g. the outbound route awaiting its dial's outcome).
  // Called with null when the actor is gone without a final commit (crashed, forgotten, stopped).
  const watchers = new Map<string, Set<(snap: AnyMachineSnapshot | null) => boolean>>();

  const redact = (kind: string, e: { type: string }): RedactedEvent => (deps.redact ? deps.redact(kind, e) : { type: e.type });

  function persisted(kind: ActorKind, snap: AnyMachineSnapshot): PersistedActor & { status: string } {
    return { version: kind.version, value: snap.value, context: snap.context, status: snap.status };
  }

  function viewOf(entry: Live): ActorView {
    return {
      kind: entry.kind.kind,
      id: entry.id,
      value: entry.snapshot.value,
      tags: [...entry.snapshot.tags].sort(),
      status: entry.snapshot.status,
      lastEvent: entry.lastEvent ? redact(entry.kind.kind, entry.lastEvent) : null,
      counters: entry.kind.counters?.(entry.snapshot) ?? null,
      updatedAt: entry.updatedAt,
    };
  }

  function inspect(entry: Live, event: { type: string } | null): void {
    const sink = deps.inspection;
    if (!sink) return;
    try {
      const at = entry.updatedAt;
      const kind = entry.kind.kind;
      const redacted = event ? redact(kind, event) : null;
      if (redacted) sink.publish(entry.accountId, { type: '@xstate.event', kind, actorId: entry.id, seq: ++inspectSeq, at, event: redacted });
      sink.publish(entry.accountId, {
        type: '@xstate.snapshot',
        kind,
        actorId: entry.id,
        seq: ++inspectSeq,
        at,
        event: redacted,
        snapshot: { value: entry.snapshot.value, tags: [...entry.snapshot.tags].sort(), status: entry.snapshot.status, counters: entry.kind.counters?.(entry.snapshot) ?? null },
      });
      if (entry.snapshot.status === 'active') sink.track(entry.accountId, viewOf(entry));
      else sink.drop(entry.accountId, entry.id);
    } catch (err) {
      log.warn({ err }, 'live view update failed');
    }
  }

  /**
   * Commits one transition. Returns the intents it created (to run after the commit).
   * Throws when the transaction fails: then nothing of it happened.
   */
  function commit(
    entry: { kind: ActorKind; id: string; accountId: string },
    next: AnyMachineSnapshot,
    actions: { type: string; params?: unknown }[],
    opts: { first: boolean; intentDone?: string | undefined; deadline?: { id: number; due_at: number } | undefined; extra?: (() => void) | undefined },
  ): Intent[] {
    const { kind, id, accountId } = entry;
    const now = clock();
    const created: Intent[] = [];
    storage.tx(() => {
      if (opts.intentDone) storage.intents.remove(opts.intentDone);
      if (opts.deadline) storage.deadlines.takeIfDue(opts.deadline);
      kind.write(next, { first: opts.first, now });
      const done = next.status !== 'active';
      storage.snapshots.save({ actorId: id, accountId, kind: kind.kind, snapshot: persisted(kind, next), done, now });
      for (const a of actions) {
        if (a.type === 'scheduleDeadline') {
          const p = a.params as { name: string; event: unknown; dueAt: number };
          storage.deadlines.set({ accountId, kind: kind.kind, actorId: id, name: p.name, event: p.event, dueAt: p.dueAt });
        } else if (a.type === 'cancelDeadline') {
          storage.deadlines.cancel(id, (a.params as { name: string }).name);
        } else if (kind.effects[a.type]) {
          const intent: Intent = {
            id: `${id}:${a.type}:${now.toString(36)}${(++intentSeq).toString(36)}`,
            kind: kind.kind,
            actorId: id,
            accountId,
            effect: a.type,
            params: a.params ?? null,
            createdAt: now,
            sentAt: null,
            attempts: 0,
          };
          storage.intents.add({ id: intent.id, accountId, kind: kind.kind, actorId: id, effect: a.type, params: intent.params, now });
          created.push(intent);
        }
      }
      if (done) {
        storage.deadlines.cancelAll(id);
        storage.intents.removeActor(id);
      }
      opts.extra?.();
    });
    return created;
  }

  function afterCommit(entry: Live, actions: { type: string; params?: unknown }[]): void {
    const hooks = entry.kind.afterCommit;
    if (!hooks) return;
    for (const a of actions) {
      const hook = hooks[a.type];
      if (!hook) continue;
      try {
        hook(entry.snapshot, a.params);
      } catch (err) {
        log.error({ err, actor_id: entry.id, action: a.type }, 'after-commit action failed');
      }
    }
  }

  function notify(id: string, snap: AnyMachineSnapshot | null): void {
    const set = watchers.get(id);
    if (!set) return;
    for (const w of [...set]) {
      let done = true;
      try {
        done = w(snap);
      } catch (err) {
        log.error({ err, actor_id: id }, 'watcher failed');
      }
      if (done) set.delete(w);
    }
    if (set.size === 0) watchers.delete(id);
  }

  function settle(entry: Live, event: { type: string } | null, actions: { type: string; params?: unknown }[], intents: Intent[]): void {
    inspect(entry, event);
    if (deps.onDeadlinesChanged && actions.some((a) => a.type === 'scheduleDeadline')) deps.onDeadlinesChanged();
    afterCommit(entry, actions);
    notify(entry.id, entry.snapshot);
    const active = entry.snapshot.status === 'active';
    if (!active) live.delete(entry.id);
    try {
      entry.kind.settled?.(entry.snapshot, active);
    } catch (err) {
      log.error({ err, actor_id: entry.id }, 'settling an actor failed');
    }
    if (!active) return;
    // After the current synchronous work: a caller that wrapped this commit in a larger
    // transaction has committed it by then (an intent rolled back with it is gone, and
    // markSent refuses it).
    if (intents.length > 0) queueMicrotask(() => {
      for (const intent of intents) void runIntent(entry, intent);
    });
  }

  /** The actor stopped in a defect (its transition threw): it is ended outside and forgotten. */
  function crash(entry: Live, err: unknown): void {
    log.error({ err, actor_id: entry.id, kind: entry.kind.kind }, 'actor transition failed; the actor is stopped');
    live.delete(entry.id);
    notify(entry.id, null);
    try {
      const snap = entry.snapshot;
      deps.inspection?.publish(entry.accountId, {
        type: '@xstate.snapshot',
        kind: entry.kind.kind,
        actorId: entry.id,
        seq: ++inspectSeq,
        at: clock(),
        event: null,
        snapshot: { value: snap.value, tags: [...snap.tags].sort(), status: 'error', counters: null },
      });
      deps.inspection?.drop(entry.accountId, entry.id);
    } catch {
      // the live view is best effort
    }
    try {
      entry.kind.onCrash?.(entry.snapshot, err);
    } catch (e) {
      log.error({ err: e, actor_id: entry.id }, 'tidying up a stopped actor failed');
    }
  }

  function later(fn: () => void, ms: number): void {
    if (stopped) return;
    const t = setTimeout(() => {
      retryTimers.delete(t);
      fn();
    }, ms);
    t.unref();
    retryTimers.add(t);
  }

  /** Carries out one committed intent and delivers its outcome (retried until it is recorded). */
  async function runIntent(entry: Live, intent: Intent, attempt = 0): Promise<void> {
    if (stopped || entry.running.has(intent.id) || live.get(entry.id) !== entry) return;
    const handler = entry.kind.effects[intent.effect];
    if (!handler) return;
    entry.running.add(intent.id);
    let outcome: { type: string } | null = null;
    try {
      outcome = await handler.run({
        intent,
        context: entry.snapshot.context,
        markSent: () => {
          if (!storage.intents.markSent(intent.id, clock())) throw new Error('the intent is gone: its actor moved on');
          intent.sentAt ??= clock();
        },
      });
    } catch (err) {
      log.warn({ err, actor_id: entry.id, effect: intent.effect }, 'effect failed before recording an outcome; it will run again');
    } finally {
      entry.running.delete(intent.id);
    }
    if (outcome === null) {
      later(() => void runIntent(entry, intent, attempt + 1), EFFECT_RETRY_MS[Math.min(attempt, EFFECT_RETRY_MS.length - 1)]!);
      return;
    }
    deliverOutcome(entry, intent, outcome, 0);
  }

  function deliverOutcome(entry: Live, intent: Intent, outcome: { type: string }, attempt: number): void {
    const result = step(entry.id, outcome, { intentDone: intent.id });
    if (result === 'commit_failed') {
      later(() => deliverOutcome(entry, intent, outcome, attempt + 1), EFFECT_RETRY_MS[Math.min(attempt, EFFECT_RETRY_MS.length - 1)]!);
    } else if (result === 'not_live') {
      try {
        storage.intents.remove(intent.id);
      } catch {
        // removed with its actor, or left for the boot sweep
      }
      // The actor was stopped while its effect was out: the kind decides what to undo.
      try {
        entry.kind.orphaned?.(intent, outcome);
      } catch (err) {
        log.error({ err, actor_id: entry.id }, 'handling an orphaned outcome failed');
      }
    }
  }

  /**
   * Takes one event. `intentDone` / `deadline` name what this event records, removed in
   * the same transaction. Never throws.
   */
  function step(
    id: string,
    raw: unknown,
    opts: { intentDone?: string; deadline?: { id: number; due_at: number } } = {},
  ): StepResult {
    const entry = live.get(id);
    if (!entry) return 'not_live';
    const parsed = entry.kind.eventSchema.safeParse(raw);
    if (!parsed.success) {
      log.warn({ actor_id: id, kind: entry.kind.kind, issues: parsed.error.issues.length }, 'dropped an event that does not parse');
      return 'invalid';
    }
    const event = parsed.data;
    let next: AnyMachineSnapshot;
    let actions: { type: string; params?: unknown }[];
    try {
      [next, actions] = transition(entry.kind.machine as AnyStateMachine, entry.snapshot, event as never) as [AnyMachineSnapshot, { type: string; params?: unknown }[]];
    } catch (err) {
      crash(entry, err);
      return 'crashed';
    }
    // An event the machine ignores, recording nothing: nothing to commit.
    if (next === entry.snapshot && actions.length === 0 && !opts.intentDone && !opts.deadline) {
      // Still shown to the live view, as XState's inspector shows every event received.
      if (deps.inspection) {
        try {
          deps.inspection.publish(entry.accountId, { type: '@xstate.event', kind: entry.kind.kind, actorId: id, seq: ++inspectSeq, at: clock(), event: redact(entry.kind.kind, event) });
        } catch (err) {
          log.warn({ err }, 'live view update failed');
        }
      }
      return 'taken';
    }
    let intents: Intent[];
    try {
      intents = commit(entry, next, actions, { first: false, intentDone: opts.intentDone, deadline: opts.deadline });
    } catch (err) {
      log.error({ err, actor_id: id, event: event.type }, 'commit failed; the actor did not move and nothing was done');
      return 'commit_failed';
    }
    entry.snapshot = next;
    entry.lastEvent = event;
    entry.updatedAt = clock();
    settle(entry, event, actions, intents);
    return 'taken';
  }

  /** Delivers an event the runtime itself owes an actor (a restore), retrying a failed commit. */
  function deliverUntilTaken(id: string, event: { type: string }, attempt: number): void {
    if (step(id, event) === 'commit_failed') later(() => deliverUntilTaken(id, event, attempt + 1), EFFECT_RETRY_MS[Math.min(attempt, EFFECT_RETRY_MS.length - 1)]!);
  }

  function resolvePersisted(kind: ActorKind, p: PersistedActor): AnyMachineSnapshot {
    return (kind.machine as AnyStateMachine).resolveState({ value: p.value as never, context: p.context as never });
  }

  async function resumeIntent(row: IntentRow): Promise<void> {
    const entry = live.get(row.actor_id);
    if (!entry) {
      storage.intents.remove(row.id);
      return;
    }
    const handler = entry.kind.effects[row.effect];
    const intent: Intent = {
      id: row.id,
      kind: row.actor_kind,
      actorId: row.actor_id,
      accountId: row.account_id,
      effect: row.effect,
      params: JSON.parse(row.params),
      createdAt: row.created_at,
      sentAt: row.sent_at,
      attempts: row.attempts,
    };
    if (!handler) {
      log.warn({ actor_id: row.actor_id, effect: row.effect }, 'pending intent of an effect this version lacks; dropped');
      storage.intents.remove(row.id);
      return;
    }
    if (row.sent_at !== null && handler.resumeSent) {
      const instead = handler.resumeSent(intent, entry.snapshot.context, clock());
      if (instead !== null) {
        deliverOutcome(entry, intent, instead, 0);
        return;
      }
    }
    await runIntent(entry, intent);
  }

  const supervisor = {
    register<M extends AnyStateMachine>(kind: ActorKind<M>): void {
      if (kinds.has(kind.kind)) throw new Error(`actor kind ${kind.kind} registered twice`);
      kinds.set(kind.kind, kind as unknown as ActorKind);
    },

    /**
     * Creates an actor: its first snapshot, rows, deadlines and intents are committed
     * before anything runs. `extra` joins the same transaction (an idempotent answer,
     * a sealed prompt). Throws when the commit fails: then the actor does not exist.
     */
    start(kindName: string, id: string, input: unknown, extra?: () => void): AnyMachineSnapshot {
      const kind = kinds.get(kindName);
      if (!kind) throw new Error(`unknown actor kind ${kindName}`);
      if (live.has(id)) throw new Error(`actor ${id} exists`);
      const [snap, actions] = initialTransition(kind.machine as AnyStateMachine, input as never) as [AnyMachineSnapshot, { type: string; params?: unknown }[]];
      const accountId = kind.accountOf(snap.context);
      const entry: Live = { kind, id, accountId, snapshot: snap, lastEvent: null, updatedAt: clock(), running: new Set() };
      const intents = commit(entry, snap, actions, { first: true, extra });
      live.set(id, entry);
      settle(entry, null, actions, intents);
      return snap;
    },

    send(id: string, event: unknown): StepResult {
      return step(id, event);
    },

    /** Delivers a due deadline; the row goes in the transaction of the change it causes. */
    deliverDeadline(row: { id: number; actor_id: string; actor_kind: string; event: string; due_at: number }, now: number): StepResult {
      const entry = live.get(row.actor_id);
      if (!entry) return 'not_live';
      // Routed by kind and id: a deadline of another kind is never delivered here.
      if (entry.kind.kind !== row.actor_kind) return 'invalid';
      let event: unknown;
      try {
        event = { ...(JSON.parse(row.event) as object), at: now };
      } catch {
        return 'invalid';
      }
      return step(row.actor_id, event, { deadline: { id: row.id, due_at: row.due_at } });
    },

    /**
     * Calls `fn` with each committed snapshot of the actor until it returns true (also
     * at once with the current one). Returns false when the actor is not live.
     */
    watch(id: string, fn: (snap: AnyMachineSnapshot | null) => boolean): boolean {
      const entry = live.get(id);
      if (!entry) return false;
      if (fn(entry.snapshot)) return true;
      let set = watchers.get(id);
      if (!set) watchers.set(id, (set = new Set()));
      set.add(fn);
      return true;
    },

    snapshotOf(id: string): AnyMachineSnapshot | null {
      return live.get(id)?.snapshot ?? null;
    },
    isLive: (id: string): boolean => live.has(id),
    accountOf: (id: string): string | null => live.get(id)?.accountId ?? null,
    kindOf: (id: string): string | null => live.get(id)?.kind.kind ?? null,

    /** Live actors, optionally of one kind and account. */
    list(filter: { kind?: string; accountId?: string } = {}): { id: string; kind: string; accountId: string; snapshot: AnyMachineSnapshot }[] {
      const out: { id: string; kind: string; accountId: string; snapshot: AnyMachineSnapshot }[] = [];
      for (const e of live.values()) {
        if (filter.kind !== undefined && e.kind.kind !== filter.kind) continue;
        if (filter.accountId !== undefined && e.accountId !== filter.accountId) continue;
        out.push({ id: e.id, kind: e.kind.kind, accountId: e.accountId, snapshot: e.snapshot });
      }
      return out;
    },

    views(accountId: string): ActorView[] {
      const out: ActorView[] = [];
      for (const e of live.values()) if (e.accountId === accountId) out.push(viewOf(e));
      return out;
    },

    /**
     * Boot: every unfinished snapshot of every kind comes back (migrated when it is of
     * another version), then pending intents are resumed, then the kinds' restore
     * events are delivered. Returns counts.
     */
    async restore(): Promise<{ restored: number; migrated: number; abandoned: number; intents: number }> {
      let restored = 0;
      let migrated = 0;
      let abandoned = 0;
      const back: Live[] = [];
      for (const kind of kinds.values()) {
        const rows = storage.snapshots.listUnfinished(kind.kind);
        const loaded: { row: (typeof rows)[number]; snap: AnyMachineSnapshot }[] = [];
        for (const row of rows) {
          let p: PersistedActor | null = null;
          try {
            const raw = JSON.parse(row.snapshot) as Partial<PersistedActor>;
            p = { version: typeof raw.version === 'number' ? raw.version : 1, value: raw.value, context: raw.context };
            if (p.version !== kind.version) {
              p = kind.migrate(p);
              migrated++;
            }
            if (p === null) throw new Error(`no migration from version ${JSON.parse(row.snapshot).version ?? 1}`);
            let snap: AnyMachineSnapshot;
            try {
              snap = resolvePersisted(kind, p);
            } catch {
              // A state this machine lacks: the kind decides where it stands now.
              const again = kind.migrate({ ...p, version: -1 });
              if (again === null) throw new Error('snapshot names a state this machine lacks');
              snap = resolvePersisted(kind, again);
              migrated++;
            }
            loaded.push({ row, snap });
          } catch (err) {
            abandoned++;
            log.error({ err, actor_id: row.actor_id, kind: kind.kind }, 'snapshot cannot be restored; the actor is ended as abandoned');
            try {
              storage.tx(() => {
                if (p) kind.abandon?.(p, row.account_id, row.actor_id, clock());
                storage.snapshots.markDone(row.account_id, row.actor_id, clock());
                storage.deadlines.cancelAll(row.actor_id);
                storage.intents.removeActor(row.actor_id);
              });
            } catch (e) {
              log.error({ err: e, actor_id: row.actor_id }, 'recording an abandoned actor failed');
            }
          }
        }
        for (const { row, snap } of loaded) {
          const entry: Live = { kind, id: row.actor_id, accountId: row.account_id, snapshot: snap, lastEvent: null, updatedAt: clock(), running: new Set() };
          live.set(entry.id, entry);
          back.push(entry);
          restored++;
        }
      }
      back.sort((a, b) => (a.kind.restoreOrder?.(a.snapshot) ?? 0) - (b.kind.restoreOrder?.(b.snapshot) ?? 0));
      for (const entry of back) {
        try {
          entry.kind.adopt?.(entry.snapshot);
        } catch (err) {
          log.error({ err, actor_id: entry.id }, 'adopting a restored actor failed');
        }
        inspect(entry, null);
      }
      // Restore events first (a call whose media died asks the carrier), then the effects
      // that were pending: an unsent dial carried out now must not be taken for a call
      // that was up before the restart.
      const now = clock();
      for (const entry of back) {
        if (live.get(entry.id) !== entry) continue;
        for (const ev of entry.kind.onRestore?.(entry.snapshot, now) ?? []) deliverUntilTaken(entry.id, ev, 0);
      }
      const pending = storage.intents.pending();
      await Promise.all(pending.map((row) => resumeIntent(row).catch((err: unknown) => log.error({ err, intent: row.id }, 'resuming an intent failed'))));
      return { restored, migrated, abandoned, intents: pending.length };
    },

    /**
     * Removes actors without a transition (their account is being deleted): their
     * deadlines and intents go with them. The kind's own tidy-up runs first.
     */
    forget(ids: string[]): void {
      for (const id of ids) {
        const entry = live.get(id);
        if (!entry) continue;
        live.delete(id);
        deps.inspection?.drop(entry.accountId, id);
        notify(id, null);
      }
    },

    /** Stops every retry and forgets live actors (shutdown); persisted state stays as committed. */
    stop(): void {
      stopped = true;
      for (const id of [...watchers.keys()]) notify(id, null);
      for (const t of retryTimers) clearTimeout(t);
      retryTimers.clear();
      live.clear();
    },
  };
  return supervisor;
}

export type Supervisor = ReturnType<typeof createSupervisor>;
