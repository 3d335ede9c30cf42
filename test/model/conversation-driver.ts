// Drives the conversation machine (machines/conversation.ts) the way the agent engine
// does (actors/agent-engine.ts), without audio or providers: one actor of the machine
// with every effect provided as a recorder (each call kept in order with the simulated
// time it happened at), XState's SimulatedClock for its delays, and a persist-restore
// that takes the actor's persisted snapshot through JSON and starts a new actor from it
// on the same clock, as a process that stored the conversation would bring it back.
// `onEffect` lets a test play the engine's side at the moment of an effect (the real
// engine sends REPLY.ENDED from inside `interruptReply`).
import { createActor, SimulatedClock, type Actor } from 'xstate';
import {
  conversationMachine,
  type ConversationContext,
  type ConversationEndReason,
  type ConversationEvent,
  type ConversationInput,
  type ConversationSnapshot,
  type ReplyRequest,
  type ToolCall,
  type TranscriptLine,
} from '../../machines/conversation.ts';

type Signal = 'interruptReply' | 'cancelReply' | 'pausePlayback' | 'resumePlayback';

/** One effect the machine asked for, when (simulated ms since the start). */
export type Effect =
  | { type: 'startReply'; at: number; request: ReplyRequest }
  | { [K in Signal]: { type: K; at: number } }[Signal]
  | { type: 'recordLine'; at: number; line: TranscriptLine }
  | { type: 'requestHangup'; at: number; reason: ConversationEndReason }
  | { type: 'runTools'; at: number; calls: ToolCall[] }
  | { type: 'requestTransfer'; at: number; lines: TranscriptLine[] };

export type EffectType = Effect['type'];

/** The agent's numbers as conversation-setup derives them from the API defaults (interruption_sensitivity 50, response_eagerness 200…). */
export const DEFAULT_INPUT: ConversationInput = {
  aiSpeaksFirst: false,
  pickupDelayMs: 10_000,
  eagernessMs: 200,
  interruptMs: 650,
  silenceHangupMs: 30_000,
  resumeAfterMs: 2_000,
};

type Machine = typeof conversationMachine;

/** One of XState's pending delayed events (its system scheduler's record), with when it is due on the simulated clock. */
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

/**
 * XState does not persist pending delays (statelyai/xstate#5331). A durable store keeps
 * them beside the snapshot, as the call runtime keeps its deadlines: this clock notes
 * when each delay the actor's scheduler arms is due, so a persist can store what is left
 * of each and a restore can arm them again on the new actor.
 */
class DelayTrackingClock extends SimulatedClock {
  system: SchedulerView | null = null;
  override setTimeout(fn: (...args: any[]) => void, timeout: number): number {
    const id = super.setTimeout(fn, timeout);
    // The scheduler records the delayed event just before it arms the timer: the one not yet dated.
    for (const e of Object.values(this.system?._snapshot._scheduledEvents ?? {})) e.dueAt ??= this.now() + timeout;
    return id;
  }
}

export class ConversationDriver {
  readonly clock = new DelayTrackingClock();
  readonly effects: Effect[] = [];
  actor: Actor<Machine>;
  restores = 0;
  /** Called synchronously inside each effect, after it is recorded. */
  onEffect: ((e: Effect, d: ConversationDriver) => void) | null = null;
  private readonly machine: Machine;

  constructor(readonly input: ConversationInput = DEFAULT_INPUT) {
    const note = (e: Effect) => {
      this.effects.push(e);
      this.onEffect?.(e, this);
    };
    const at = () => this.clock.now();
    this.machine = conversationMachine.provide({
      actions: {
        startReply: (_, request: ReplyRequest) =>
          note({ type: 'startReply', at: at(), request: { ...request, lines: [...request.lines], toolRounds: JSON.parse(JSON.stringify(request.toolRounds)) } }),
        interruptReply: () => note({ type: 'interruptReply', at: at() }),
        cancelReply: () => note({ type: 'cancelReply', at: at() }),
        pausePlayback: () => note({ type: 'pausePlayback', at: at() }),
        resumePlayback: () => note({ type: 'resumePlayback', at: at() }),
        recordLine: (_, line: TranscriptLine) => note({ type: 'recordLine', at: at(), line: { ...line } }),
        requestHangup: (_, p: { reason: ConversationEndReason }) => note({ type: 'requestHangup', at: at(), reason: p.reason }),
        runTools: (_, p: { calls: ToolCall[] }) => note({ type: 'runTools', at: at(), calls: p.calls.map((c) => ({ ...c })) }),
        requestTransfer: (_, p: { lines: readonly TranscriptLine[] }) => note({ type: 'requestTransfer', at: at(), lines: [...p.lines] }),
      },
    }) as Machine;
    this.actor = createActor(this.machine, { input, clock: this.clock });
    this.clock.system = this.actor.system as unknown as SchedulerView;
  }

  /** Creates and starts a conversation (the call's media has started). */
  static start(over: Partial<ConversationInput> = {}, onEffect?: ConversationDriver['onEffect']): ConversationDriver {
    const d = new ConversationDriver({ ...DEFAULT_INPUT, ...over });
    if (onEffect) d.onEffect = onEffect;
    d.actor.start();
    return d;
  }

  // ---- reading ----

  get now(): number {
    return this.clock.now();
  }
  get snapshot(): ConversationSnapshot {
    return this.actor.getSnapshot();
  }
  get context(): ConversationContext {
    return this.snapshot.context;
  }
  get value(): ConversationSnapshot['value'] {
    return this.snapshot.value;
  }
  matches(value: Parameters<ConversationSnapshot['matches']>[0]): boolean {
    return this.snapshot.matches(value);
  }
  /** Effects of these types (all when none given), in order. */
  of<T extends EffectType>(...types: T[]): Extract<Effect, { type: T }>[] {
    return this.effects.filter((e): e is Extract<Effect, { type: T }> => types.length === 0 || (types as string[]).includes(e.type));
  }
  /** The kinds of reply asked for so far, in order. */
  replies(): ReplyRequest['kind'][] {
    return this.of('startReply').map((e) => e.request.kind);
  }
  /** The lines reported through recordLine, in order. */
  recorded(): TranscriptLine[] {
    return this.of('recordLine').map((e) => e.line);
  }
  hangups(): ConversationEndReason[] {
    return this.of('requestHangup').map((e) => e.reason);
  }
  /** Effect types recorded from index `from` on (what one step caused). */
  typesSince(from: number): EffectType[] {
    return this.effects.slice(from).map((e) => e.type);
  }

  // ---- driving ----

  send(event: ConversationEvent): this {
    this.actor.send(event);
    return this;
  }
  /** Lets `ms` of simulated time pass (due delays fire). */
  advance(ms: number): this {
    this.clock.increment(ms);
    return this;
  }
  /** The caller says `text`: voice activity, then the recogniser's final words at the end of the turn. */
  say(text: string, speakMs = 800): this {
    this.send({ type: 'SPEECH.START' });
    this.advance(speakMs);
    this.send({ type: 'SPEECH.END' });
    return this.send({ type: 'WORDS', text, final: true, endOfTurn: true });
  }

  /** What a store would keep: the persisted snapshot, through JSON. */
  persisted(): unknown {
    return JSON.parse(JSON.stringify(this.actor.getPersistedSnapshot()));
  }

  /** The pending delays a store would keep beside the snapshot, through JSON. */
  pendingDelays(): StoredDelay[] {
    const events = Object.values((this.actor.system as unknown as SchedulerView)._snapshot._scheduledEvents);
    return JSON.parse(JSON.stringify(events.map((e) => ({ id: e.id, event: e.event, remainingMs: Math.max(0, (e.dueAt ?? this.now) - this.now) }))));
  }

  /**
   * The process keeps the snapshot and the pending delays, the actor stops, a new one
   * starts from the stored form with those delays armed again for what was left of them.
   */
  restore(): unknown {
    const stored = this.persisted();
    const delays = this.pendingDelays();
    this.actor.stop();
    const next = createActor(this.machine, { snapshot: stored as never, input: this.input, clock: this.clock });
    const system = next.system as unknown as SchedulerView;
    this.clock.system = system;
    for (const d of delays) {
      system._snapshot._scheduledEvents[`${next.sessionId}.${d.id}`] = { source: next, target: next, event: d.event, delay: d.remainingMs, id: d.id, startedAt: 0 };
    }
    this.actor = next;
    this.actor.start();
    this.restores += 1;
    return stored;
  }
}
