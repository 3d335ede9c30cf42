// Drives the conversation machine (machines/conversation.ts) the way the agent engine
// does (actors/agent/agent-engine.ts), without audio or providers: one actor of the machine
// with every effect provided as a recorder (each call kept in order with the simulated
// time it happened at), XState's SimulatedClock for its delays, and a persist-restore
// that takes the actor's persisted snapshot through JSON, with its pending delays, and
// starts a new actor from it on the same clock (test/model/restorable.ts), as a process
// that stored the conversation would bring it back.
// `onEffect` lets a test play the engine's side at the moment of an effect (the real
// engine sends REPLY.ENDED from inside `interruptReply`).
import type { Actor } from 'xstate';
import { DelayTrackingClock } from './restorable.ts';
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
    this.actor = this.clock.actorOf(this.machine, input);
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

  /**
   * The process keeps the snapshot and the pending delays (test/model/restorable.ts), the
   * actor stops, a new one starts from the stored form with those delays armed again.
   */
  restore(): unknown {
    const { actor, stored } = this.clock.restore(this.machine, this.actor, this.input);
    this.actor = actor;
    this.restores += 1;
    return stored;
  }
}
