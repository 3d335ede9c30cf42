// A pure driver of the call machine that stands in for the supervisor (actors/runtime/supervisor.ts)
// without a database: it keeps one snapshot, applies XState's pure `transition()` /
// `initialTransition()`, and does with the returned actions what the supervisor commits:
// - effect intents (`dial`, `findDial`, `checkCall`, `hangup`, and the transfer's
//   `placeTransfer`, `checkTransfer`, `whisperTransfer`, `bridgeTransfer`, `releaseMedia`,
//   `dropTransferLeg`) join a pending list that
//   survives a restart; a test settles one by sending its outcome event (`settle`);
// - `scheduleDeadline` / `cancelDeadline` keep a table name → {dueAt, event}, one per name
//   (setting it again moves it); `fire` delivers an armed deadline at or after its dueAt
//   and removes it first, like the scheduler's `takeIfDue`;
// - `releaseSlot` / `requestSlot` go through the call kind's own after-commit hooks
//   (actors/calls/call-kind.ts) into a slot ledger of this one call;
// - a finished actor (`done`) loses its deadlines and intents, and takes no more events.
// `restart` persists `{version, value, context}` as JSON, brings it back the way the
// supervisor's boot does (migrate when of another version, `resolveState`, a state this
// machine lacks placed by the kind, the kind's `adopt` re-deriving the slot) and delivers
// the kind's restore events (RESTORED). Nothing here reads a clock: every time is an `at`.
import { initialTransition, transition } from 'xstate';
import type { Storage } from '../../storage/index.ts';
import type { PersistedActor } from '../../actors/runtime/actor-kind.ts';
import { callKind } from '../../actors/calls/call-kind.ts';
import { callEventSchema, type CallEvent, type CallInput } from '../../machines/call-events.ts';
import { CALL_MACHINE_VERSION, callMachine, isFinished, type CallContext, type CallSnapshot, type DeadlineParams } from '../../machines/call.ts';

export const T0 = 1_700_000_000_000;

export const EFFECTS = ['dial', 'findDial', 'checkCall', 'hangup', 'placeTransfer', 'checkTransfer', 'whisperTransfer', 'bridgeTransfer', 'releaseMedia', 'dropTransferLeg'] as const;
export type Effect = (typeof EFFECTS)[number];

/** The events that may record each effect's outcome (actors/calls/call-effects.ts). */
export const OUTCOMES: Record<Effect, readonly CallEvent['type'][]> = {
  dial: ['DIAL.ACCEPTED', 'DIAL.REJECTED', 'DIAL.UNKNOWN'],
  findDial: ['DIAL.FOUND', 'DIAL.NOT_FOUND', 'CARRIER.UNREACHABLE'],
  checkCall: ['RECONCILED', 'CARRIER.UNREACHABLE'],
  hangup: ['HANGUP.DONE', 'CARRIER.UNREACHABLE'],
  // actors/calls/transfer-effects.ts
  placeTransfer: ['TRANSFER.PLACED', 'TRANSFER.FAILED', 'TRANSFER.UNKNOWN'],
  checkTransfer: ['TRANSFER.PLACED', 'TRANSFER.ANSWERED', 'TRANSFER.CONNECTED', 'TRANSFER.FAILED', 'RECONCILED', 'CARRIER.UNREACHABLE'],
  whisperTransfer: ['TRANSFER.SENT', 'TRANSFER.FAILED'],
  bridgeTransfer: ['TRANSFER.SENT', 'TRANSFER.FAILED'],
  releaseMedia: ['TRANSFER.SENT'],
  dropTransferLeg: ['TRANSFER.SENT'],
};

export interface PendingIntent {
  seq: number;
  effect: Effect;
  /** The context of the snapshot that asked for it (what the effect runs with). */
  context: CallContext;
}

export interface ArmedDeadline {
  dueAt: number;
  event: CallEvent;
}

/** The account's concurrency pool as far as this call is concerned. */
export interface SlotLedger {
  held: boolean;
  queued: boolean;
  /** `releaseSlot` actions over the whole run (restarts included). */
  releases: number;
  /** `releaseSlot` actions that found the call neither holding a slot nor queued. */
  strayReleases: number;
  /** `requestSlot` actions (a queued call asking the pool again). */
  requests: number;
}

export interface Action {
  type: string;
  params?: unknown;
}

export interface Step {
  event: CallEvent | null;
  before: CallSnapshot | null;
  after: CallSnapshot;
  actions: Action[];
  /** False when the machine ignored the event: same snapshot, no action. */
  taken: boolean;
}

export interface DeadlineLogEntry {
  op: 'set' | 'cancel';
  name: string;
  dueAt?: number;
}

const BUILTIN = /^xstate\./;

export function callInput(over: Partial<CallInput> = {}): CallInput {
  return {
    id: 'call_0123456789abcdefghijklmn',
    accountId: 'acct_1',
    agentId: 'agent_1',
    direction: 'outbound',
    provider: 'twilio',
    phoneNumber: '+15550000001',
    from: '+15550000001',
    to: '+15550000002',
    carrierCallId: null,
    amdEnabled: false,
    maxDurationSec: 600,
    campaignId: null,
    queued: false,
    createdAt: T0,
    ...over,
  };
}

export const inboundInput = (over: Partial<CallInput> = {}): CallInput =>
  callInput({ direction: 'inbound', carrierCallId: 'CA_in', from: '+15550000009', to: '+15550000001', ...over });

export class CallDriver {
  snapshot: CallSnapshot;
  /** The scheduler's rows for this call: one per name. */
  readonly deadlines = new Map<string, ArmedDeadline>();
  /** Every deadline set and cancelled, in order. */
  readonly deadlineLog: DeadlineLogEntry[] = [];
  /** Committed intents whose outcome has not come back yet. */
  intents: PendingIntent[] = [];
  /** Intents ever asked for, per effect (restarts included). */
  readonly issued: Record<Effect, number> = { dial: 0, findDial: 0, checkCall: 0, hangup: 0, placeTransfer: 0, checkTransfer: 0, whisperTransfer: 0, bridgeTransfer: 0, releaseMedia: 0, dropTransferLeg: 0 };
  readonly slot: SlotLedger = { held: false, queued: false, releases: 0, strayReleases: 0, requests: 0 };
  readonly steps: Step[] = [];
  restarts = 0;
  private seq = 0;
  private readonly kind = callKind({
    storage: {} as Storage,
    effects: {},
    takeMediaToken: () => null,
    releaseSlot: () => {
      if (!this.slot.held && !this.slot.queued) this.slot.strayReleases += 1;
      this.slot.releases += 1;
      this.slot.held = false;
      this.slot.queued = false;
    },
    requestSlot: () => {
      this.slot.requests += 1;
      this.slot.queued = true;
    },
    holdSlot: () => {
      this.slot.held = true;
    },
    enqueue: () => {
      this.slot.queued = true;
    },
    crashed: () => {
      throw new Error('the call kind reported a crash');
    },
  });

  private constructor(snapshot: CallSnapshot) {
    this.snapshot = snapshot;
  }

  /** A new call, as the outbound route or inbound routing start it: the pool answered first. */
  static start(input: CallInput): CallDriver {
    const [snap, actions] = initialTransition(callMachine, input);
    const d = new CallDriver(snap);
    // The creator took a slot (tryAcquire) or queued the call before starting it.
    if (input.direction === 'outbound' && input.queued) d.slot.queued = true;
    else d.slot.held = true;
    d.apply(null, null, snap, actions as Action[]);
    return d;
  }

  /**
   * A call whose stored snapshot (of any version) is brought back at boot with no other
   * durable row: the kind adopts it (slot); RESTORED is not delivered yet (`restored(at)`).
   */
  static fromPersisted(p: PersistedActor): CallDriver {
    const d = new CallDriver(null as unknown as CallSnapshot);
    d.snapshot = d.resolve(p);
    d.kind.adopt?.(d.snapshot);
    return d;
  }

  // ---- reading ----

  get value(): CallSnapshot['value'] {
    return this.snapshot.value;
  }
  get ctx(): CallContext {
    return this.snapshot.context;
  }
  get finished(): boolean {
    return isFinished(this.snapshot);
  }
  hasTag(tag: string): boolean {
    return this.snapshot.hasTag(tag);
  }
  tags(): string[] {
    return [...this.snapshot.tags].sort();
  }
  /** Armed deadlines as name → dueAt. */
  armed(): Record<string, number> {
    return Object.fromEntries([...this.deadlines].sort(([a], [b]) => a.localeCompare(b)).map(([n, d]) => [n, d.dueAt]));
  }
  pending(effect?: Effect): PendingIntent[] {
    return effect === undefined ? this.intents : this.intents.filter((i) => i.effect === effect);
  }
  /** Every action type returned so far, in order (builtins left out). */
  actionTypes(): string[] {
    return this.steps.flatMap((s) => s.actions.map((a) => a.type));
  }
  /** Deadlines cancelled so far (names, in order). */
  cancelled(): string[] {
    return this.deadlineLog.filter((e) => e.op === 'cancel').map((e) => e.name);
  }
  last(): Step {
    return this.steps[this.steps.length - 1]!;
  }

  // ---- driving ----

  /** Delivers one event (parsed like the supervisor does). A done actor is not live: it takes nothing. */
  send(raw: CallEvent): Step {
    const event = callEventSchema.parse(raw);
    const before = this.snapshot;
    if (before.status !== 'active') return { event, before, after: before, actions: [], taken: false };
    const [after, actions] = transition(callMachine, before, event);
    return this.apply(event, before, after, actions as Action[]);
  }

  /** Sends several events in order; returns the last step. */
  sendAll(...events: CallEvent[]): Step {
    let step: Step | undefined;
    for (const e of events) step = this.send(e);
    return step!;
  }

  /** The oldest pending intent of `effect` finishes with `outcome` (its intent is removed with it). */
  settle(effect: Effect, outcome: CallEvent): Step {
    if (!OUTCOMES[effect].includes(outcome.type)) throw new Error(`${outcome.type} is not an outcome of ${effect}`);
    const i = this.intents.findIndex((x) => x.effect === effect);
    if (i < 0) throw new Error(`no pending ${effect} intent (pending: ${this.intents.map((x) => x.effect).join(', ') || 'none'})`);
    this.intents.splice(i, 1);
    return this.send(outcome);
  }

  /** The scheduler delivers the armed deadline `name` at `at` (default: its dueAt). */
  fire(name: string, at?: number): Step {
    const armed = this.deadlines.get(name);
    if (!armed) throw new Error(`no deadline ${name} armed (armed: ${Object.keys(this.armed()).join(', ') || 'none'})`);
    const when = at ?? armed.dueAt;
    if (when < armed.dueAt) throw new Error(`deadline ${name} is due at ${armed.dueAt}, not ${when}`);
    this.deadlines.delete(name);
    return this.send({ ...armed.event, at: when });
  }

  /** The pool grants the queued call a slot (counted held first), then tells the call. */
  grant(at: number): Step {
    if (!this.slot.queued) throw new Error('the pool only grants a queued call');
    this.slot.queued = false;
    this.slot.held = true;
    return this.send({ type: 'SLOT.GRANTED', at });
  }

  /** What the supervisor stores for this call. */
  persisted(): PersistedActor {
    return { version: CALL_MACHINE_VERSION, value: this.snapshot.value, context: this.snapshot.context };
  }

  /**
   * A restart: the process dies (the pool and the live actor with it), the stored
   * snapshot comes back through JSON, durable deadlines and pending intents stay, the
   * kind re-derives the slot, and its restore events (RESTORED at `at`) are delivered.
   */
  restart(at: number): Step {
    const stored = JSON.parse(JSON.stringify(this.persisted())) as PersistedActor;
    this.snapshot = this.resolve(stored);
    this.slot.held = false;
    this.slot.queued = false;
    this.restarts += 1;
    this.kind.adopt?.(this.snapshot);
    return this.restored(at);
  }

  /** Delivers the kind's restore events (RESTORED) to a call brought back. */
  restored(at: number): Step {
    let step: Step | undefined;
    for (const e of this.kind.onRestore?.(this.snapshot, at) ?? []) step = this.send(e as CallEvent);
    return step!;
  }

  /** The supervisor's boot: migrate another version, resolve, and place a state this machine lacks. */
  private resolve(p: PersistedActor): CallSnapshot {
    let q: PersistedActor | null = p;
    if (q.version !== CALL_MACHINE_VERSION) q = this.kind.migrate(q);
    if (q === null) throw new Error('no migration');
    try {
      return callMachine.resolveState({ value: q.value as never, context: q.context as CallContext });
    } catch {
      const again = this.kind.migrate({ ...q, version: -1 });
      if (again === null) throw new Error('snapshot names a state this machine lacks');
      return callMachine.resolveState({ value: again.value as never, context: again.context as CallContext });
    }
  }

  private apply(event: CallEvent | null, before: CallSnapshot | null, after: CallSnapshot, raw: Action[]): Step {
    const actions = raw.filter((a) => !BUILTIN.test(a.type)).map((a) => ({ type: a.type, params: a.params }));
    // The supervisor commits first, then runs the after-commit hooks against the new snapshot.
    for (const a of actions) {
      if (a.type === 'scheduleDeadline') {
        const p = a.params as DeadlineParams;
        this.deadlines.set(p.name, { dueAt: p.dueAt, event: callEventSchema.parse(p.event) });
        this.deadlineLog.push({ op: 'set', name: p.name, dueAt: p.dueAt });
      } else if (a.type === 'cancelDeadline') {
        const name = (a.params as { name: string }).name;
        this.deadlines.delete(name);
        this.deadlineLog.push({ op: 'cancel', name });
      } else if ((EFFECTS as readonly string[]).includes(a.type)) {
        const effect = a.type as Effect;
        this.issued[effect] += 1;
        this.intents.push({ seq: ++this.seq, effect, context: after.context });
      } else if (a.type !== 'releaseSlot' && a.type !== 'requestSlot') {
        throw new Error(`the machine asked for an action the runtime does not know: ${a.type}`);
      }
    }
    if (after.status !== 'active') {
      this.deadlines.clear();
      this.intents = [];
    }
    for (const a of actions) this.kind.afterCommit?.[a.type]?.(after, a.params);
    this.snapshot = after;
    const step: Step = { event, before, after, actions, taken: before === null || after !== before || actions.length > 0 };
    this.steps.push(step);
    return step;
  }
}

