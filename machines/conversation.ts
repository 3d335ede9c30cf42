// The conversation on one connected call (issue 8): who has the floor, when the agent
// replies, when the caller's speech interrupts it and when the call should end. Pure:
// every effect is a named action the voice engine provides with `machine.provide()`
// (actors/agent-engine.ts), and time is XState's own delays, so tests drive it with a
// simulated clock. Its context holds only what changes a few times a turn (the
// transcript lines, the caller's final words not yet answered); per-frame state
// (voice activity probabilities, interim words, audio queues, model tokens) stays in
// the engine, which tells the machine only what it must decide on.
//
// Turn taking, after voice-anchors.md:
// - End of turn: the caller's words are final and the caller is not speaking, then
//   `response_eagerness` ms of quiet (0 replies at once).
// - Barge-in: caller speech over the agent for `interruptMs` (from
//   interruption_sensitivity) pauses the agent (nothing dropped yet); real words then
//   interrupt it (the reply is cut, the carrier's buffer cleared); a backchannel
//   ("uh-huh", "okay") or no words within `resumeAfterMs` resumes where it paused.
// - A reply that is still being prepared when the caller goes on talking is stale: it
//   is cancelled and the caller's new words join the turn.
import { assign, enqueueActions, setup, type EventObject, type SnapshotFrom } from 'xstate';

export const CONVERSATION_MACHINE_VERSION = 1;

/** What the agent is asked to say next; the engine turns each into text. */
export type ReplyKind =
  /** The opening line: the welcome message, or a model-made greeting with dynamic_greeting. */
  | 'greeting'
  /** The model's answer to the conversation so far. */
  | 'answer'
  /** `fallback_message`: the caller spoke but no words were recognised. */
  | 'fallback'
  /** A short apology after a provider failure the engine could not retry away. */
  | 'apology';

/** Why the conversation asks the call to end. */
export type ConversationEndReason = 'agent_hangup' | 'silence_timeout' | 'provider_error';

export interface ConversationInput {
  aiSpeaksFirst: boolean;
  /** When the agent does not speak first: how long it waits for the caller before greeting. */
  pickupDelayMs: number;
  /** response_eagerness. */
  eagernessMs: number;
  /** Overlapping caller speech that pauses the agent. */
  interruptMs: number;
  /** Caller silence (while the agent is not speaking) that ends the call. */
  silenceHangupMs: number;
  /** A pause with no words within this resumes the agent (a false interruption). */
  resumeAfterMs: number;
}

/** What a reply is made from. */
export interface ReplyRequest {
  kind: ReplyKind;
  /** The conversation so far, the caller's last words included. */
  lines: readonly TranscriptLine[];
  /** The greeting has been played (a caller who spoke first is greeted in the answer). */
  greeted: boolean;
}

export interface TranscriptLine {
  speaker: 'agent' | 'caller';
  text: string;
}

export interface ConversationContext extends ConversationInput {
  lines: TranscriptLine[];
  /** The caller's final words of the turn being heard, not answered yet. */
  callerText: string;
  /** The caller was heard speaking (voice activity) during the current turn. */
  heardSpeech: boolean;
  /**
   * Voice activity says the caller is speaking now (SPEECH.START not yet followed by
   * SPEECH.END), whichever state the events came in: a state entered later (a reply
   * that ends while the caller talks) must neither run the silence timer nor wait for
   * a SPEECH.END that already came.
   */
  callerSpeaking: boolean;
  /** Real words (not a backchannel) arrived while the caller spoke over the agent. */
  overlapWords: boolean;
  greeted: boolean;
  replyKind: ReplyKind;
  /** Provider failures in a row (a reply that plays resets it). */
  failures: number;
  /** Set by the end-call tool or a give-up: the call ends once the current reply has played. */
  endAfterReply: ConversationEndReason | null;
  endReason: ConversationEndReason | null;
}

export type ConversationEvent =
  /** Voice activity: the caller started / stopped speaking. */
  | { type: 'SPEECH.START' }
  | { type: 'SPEECH.END' }
  /**
   * Recognised words. `final` words are settled; `endOfTurn` says the recogniser (or
   * voice activity) also judged the utterance finished.
   */
  | { type: 'WORDS'; text: string; final: boolean; endOfTurn: boolean }
  /** The recogniser saw the utterance end by its word timing. */
  | { type: 'UTTERANCE.END' }
  /** Speech recognition is gone for good (reconnection failed). */
  | { type: 'STT.FAILED' }
  /** The first audio frame of the current reply went to the carrier. */
  | { type: 'REPLY.AUDIO' }
  /**
   * The current reply is over: played to the end (`complete`), or cut by an
   * interruption; `heard` is the text the caller actually heard.
   */
  | { type: 'REPLY.ENDED'; heard: string; complete: boolean }
  /** The reply could not be made; `retryable` says whether asking again may help. */
  | { type: 'REPLY.FAILED'; provider: 'llm' | 'tts'; retryable: boolean }
  /** The model called the end-call tool: the call ends once this reply has played. */
  | { type: 'END_CALL' }
  /** The call is over (hang-up, media gone): stop everything. */
  | { type: 'HANGUP' };

/** Words that acknowledge without taking the floor (complaint 1 of voice-anchors.md). */
const BACKCHANNELS = new Set([
  'uh-huh', 'uh huh', 'uhhuh', 'mm-hmm', 'mm hmm', 'mhm', 'mm', 'hmm', 'hm', 'okay', 'ok', 'yeah', 'yes', 'yep', 'yup',
  'right', 'sure', 'alright', 'all right', 'got it', 'i see', 'cool', 'great', 'nice', 'uh', 'um', 'ah', 'oh',
]);

/** True for "uh-huh", "okay", "yeah right"…: at most three words, each a backchannel. */
export function isBackchannel(text: string): boolean {
  const words = text.toLowerCase().replace(/[.,!?;:]/g, ' ').trim();
  if (words === '') return false;
  if (BACKCHANNELS.has(words.replace(/\s+/g, ' '))) return true;
  const parts = words.split(/\s+/);
  return parts.length <= 3 && parts.every((w) => BACKCHANNELS.has(w));
}

const hasWords = (text: string): boolean => /[\p{L}\p{N}]/u.test(text);
const join = (a: string, b: string): string => (a === '' ? b.trim() : b.trim() === '' ? a : `${a} ${b.trim()}`);

type Ev<T extends ConversationEvent['type']> = Extract<ConversationEvent, { type: T }>;

// Reported before the assign that clears or appends, so the params read the words first.
const ANSWER_TURN = [
  { type: 'recordLine', params: ({ context }: { context: ConversationContext }) => ({ speaker: 'caller' as const, text: context.callerText }) },
  'commitCallerLine',
] as const;
const LINE_FROM_REPLY = ['agentLine'] as const;

export const conversationMachine = setup({
  types: {
    context: {} as ConversationContext,
    events: {} as ConversationEvent,
    input: {} as ConversationInput,
  },
  actions: {
    // Effects, provided by the engine. Empty here on purpose.
    /** Make and play a reply of this kind from the conversation so far. */
    startReply: (_, _params: ReplyRequest) => {},
    /** Stop the reply at once: model request cancelled, speech stream cancelled, queued audio dropped, carrier buffer cleared; the engine then sends REPLY.ENDED with what was heard. */
    interruptReply: () => {},
    /** Cancel a reply that has not started playing (no audio was sent); no REPLY.ENDED follows. */
    cancelReply: () => {},
    /** Stop sending the agent's audio without dropping it (a possible interruption). */
    pausePlayback: () => {},
    resumePlayback: () => {},
    /** A transcript line is final (the engine reports it to the call record). */
    recordLine: (_, _params: TranscriptLine) => {},
    /** The conversation wants the call ended. */
    requestHangup: (_, _params: { reason: ConversationEndReason }) => {},

    /** The caller's turn is over: their words become a line and the agent answers them. */
    commitCallerLine: assign(({ context }) => ({
      lines: [...context.lines, { speaker: 'caller' as const, text: context.callerText }],
      callerText: '',
      heardSpeech: false,
      replyKind: 'answer' as const,
    })),
    /**
     * What the caller heard of the agent's reply becomes a line, reported then kept;
     * nothing heard, no line (not even an empty one). Typed by hand: inferred, its own
     * list of actions would be part of its type.
     */
    agentLine: enqueueActions<ConversationContext, ConversationEvent, undefined, ConversationEvent, never, { type: 'recordLine'; params: TranscriptLine }, never, never, EventObject>(({ event, enqueue }) => {
      const heard = event.type === 'REPLY.ENDED' ? event.heard.trim() : '';
      if (heard === '') return;
      const line = { speaker: 'agent' as const, text: heard };
      enqueue({ type: 'recordLine', params: line });
      enqueue.assign(({ context }) => ({ lines: [...context.lines, line] }));
    }),
    takeWords: assign(({ context, event }) => {
      const e = event as Ev<'WORDS'>;
      return e.final ? { callerText: join(context.callerText, e.text) } : {};
    }),
    markSpeech: assign({ heardSpeech: true }),
    callerStarts: assign({ callerSpeaking: true }),
    callerStops: assign({ callerSpeaking: false }),
    noteOverlapWords: assign(({ event }) => ({ overlapWords: event.type === 'WORDS' && hasWords(event.text) && !isBackchannel(event.text) })),
    clearOverlap: assign({ overlapWords: false }),
    prepare: assign((_, kind: ReplyKind) => ({ replyKind: kind })),
    fallbackTurn: assign({ replyKind: 'fallback' as const, callerText: '', heardSpeech: false }),
    countFailure: assign(({ context }) => ({ failures: context.failures + 1 })),
    played: assign(({ context }) => ({ failures: 0, greeted: context.greeted || context.replyKind === 'greeting' })),
    /** The caller interrupted the goodbye: they have more to say, so the call goes on. */
    keepCallOpen: assign(({ context }) => ({ endAfterReply: context.endAfterReply === 'agent_hangup' ? null : context.endAfterReply })),
    /** A greeting cut short still greeted the caller if they heard some of it. */
    noteGreeting: assign(({ context, event }) => ({
      greeted: context.greeted || (context.replyKind === 'greeting' && event.type === 'REPLY.ENDED' && event.heard.trim() !== ''),
    })),
    endAfter: assign((_, reason: ConversationEndReason) => ({ endAfterReply: reason })),
    end: assign(({ context }, reason: ConversationEndReason) => ({ endReason: context.endReason ?? reason })),
  },
  guards: {
    finalEndOfTurn: ({ context, event }) => {
      const e = event as Ev<'WORDS'>;
      return e.final && e.endOfTurn && hasWords(join(context.callerText, e.text));
    },
    /** The caller spoke, the turn ended, and nothing was recognised: a failed transcription. */
    emptyEndOfTurn: ({ context, event }) =>
      event.type === 'WORDS' && event.final && event.endOfTurn && context.heardSpeech && !hasWords(join(context.callerText, event.text)),
    haveWords: ({ context }) => hasWords(context.callerText),
    callerSpeaking: ({ context }) => context.callerSpeaking,
    callerQuiet: ({ context }) => !context.callerSpeaking,
    callerQuietWithWords: ({ context }) => !context.callerSpeaking && hasWords(context.callerText),
    noWords: ({ event }) => event.type === 'WORDS' && !hasWords(event.text),
    overlapWords: ({ context }) => context.overlapWords,
    realWords: ({ event }) => event.type === 'WORDS' && hasWords(event.text) && !isBackchannel(event.text),
    backchannelFinal: ({ event }) => event.type === 'WORDS' && event.final && isBackchannel(event.text),
    greetFirst: ({ context }) => context.aiSpeaksFirst,
    mayRetry: ({ context, event }) => (event as Ev<'REPLY.FAILED'>).retryable && context.failures < 1,
    /** Speech synthesis failed after a failure just before (its retry, or a failed model reply): nothing more can be said. */
    cannotSpeak: ({ context, event }) => (event as Ev<'REPLY.FAILED'>).provider === 'tts' && context.failures >= 1,
    /** A third failure in a row, or the apology itself failed: give up honestly (after an apology where one can be made). */
    givingUp: ({ context }) => context.failures >= 2 || context.replyKind === 'apology',
    endPending: ({ context }) => context.endAfterReply !== null,
  },
  delays: {
    pickupDelay: ({ context }) => context.pickupDelayMs,
    eagerness: ({ context }) => context.eagernessMs,
    interrupt: ({ context }) => context.interruptMs,
    silence: ({ context }) => context.silenceHangupMs,
    resume: ({ context }) => context.resumeAfterMs,
  },
}).createMachine({
  id: 'conversation',
  context: ({ input }) => ({
    ...input,
    lines: [],
    callerText: '',
    heardSpeech: false,
    callerSpeaking: false,
    overlapWords: false,
    greeted: false,
    replyKind: 'greeting',
    failures: 0,
    endAfterReply: null,
    endReason: null,
  }),
  initial: 'opening',
  on: {
    HANGUP: '.closed',
    // Voice activity in a state that does not act on it is still remembered.
    'SPEECH.START': { actions: 'callerStarts' },
    'SPEECH.END': { actions: 'callerStops' },
    // Whatever state the reply ended in (an interruption moves on before the engine
    // reports what was heard), the words the caller heard go into the transcript.
    'REPLY.ENDED': { actions: [...LINE_FROM_REPLY, 'noteGreeting'] },
  },
  states: {
    // The line is open. The agent greets at once, or waits for the caller up to pickup_delay.
    opening: {
      always: { guard: 'greetFirst', target: 'thinking', actions: { type: 'prepare', params: 'greeting' } },
      after: { pickupDelay: { target: 'thinking', actions: { type: 'prepare', params: 'greeting' } } },
      on: {
        'SPEECH.START': { target: 'listening.hearing', actions: ['callerStarts', 'markSpeech'] },
        WORDS: [{ guard: 'finalEndOfTurn', target: 'listening.endOfTurn', actions: 'takeWords' }, { actions: 'takeWords' }],
        // Nobody will be understood: apologise and end rather than greet into a dead line.
        'STT.FAILED': { target: 'thinking', actions: [{ type: 'prepare', params: 'apology' }, { type: 'endAfter', params: 'provider_error' }] },
      },
    },

    listening: {
      initial: 'idle',
      on: {
        'SPEECH.START': { target: '.hearing', actions: ['callerStarts', 'markSpeech'] },
        WORDS: [
          { guard: 'finalEndOfTurn', target: '.endOfTurn', actions: 'takeWords' },
          { guard: 'emptyEndOfTurn', target: '#conversation.thinking', actions: 'fallbackTurn' },
          { actions: 'takeWords' },
        ],
        'UTTERANCE.END': [
          { guard: 'haveWords', target: '.endOfTurn' },
          { guard: ({ context }) => context.heardSpeech, target: '#conversation.thinking', actions: 'fallbackTurn' },
        ],
        'STT.FAILED': { target: '#conversation.thinking', actions: [{ type: 'prepare', params: 'apology' }, { type: 'endAfter', params: 'provider_error' }] },
      },
      states: {
        // Nobody speaks: the silence timer runs. Entered while the caller talks (a reply
        // ended under their speech), it is their turn already.
        idle: {
          always: { guard: 'callerSpeaking', target: 'hearing', actions: 'markSpeech' },
          after: { silence: { target: '#conversation.ending', actions: { type: 'end', params: 'silence_timeout' } } },
        },
        // The caller speaks: no silence timer, no reply. Entered after they stopped (they
        // stopped while the agent was paused), it moves on as their SPEECH.END would have.
        hearing: {
          always: [
            { guard: 'callerQuietWithWords', target: 'endOfTurn' },
            { guard: 'callerQuiet', target: 'waitingForWords' },
          ],
          on: {
            'SPEECH.END': [
              { guard: 'haveWords', target: 'endOfTurn', actions: 'callerStops' },
              { target: 'waitingForWords', actions: 'callerStops' },
            ],
          },
        },
        // Speech ended without final words yet: the recogniser's final is on its way.
        // A missing final must not strand the call, so the silence timer runs here too.
        waitingForWords: {
          after: { silence: { target: '#conversation.ending', actions: { type: 'end', params: 'silence_timeout' } } },
        },
        // Words final, caller quiet: reply after response_eagerness unless they go on.
        // An empty final or the recogniser's utterance end adds nothing: the wait is not restarted.
        endOfTurn: {
          after: { eagerness: { target: '#conversation.thinking', actions: [...ANSWER_TURN] } },
          on: { WORDS: { guard: 'noWords' }, 'UTTERANCE.END': {} },
        },
      },
    },

    // The reply is being prepared (model, then speech); nothing has played yet.
    thinking: {
      // The lines travel with the effect: during the transition the actor's snapshot is still the old one.
      entry: { type: 'startReply', params: ({ context }) => ({ kind: context.replyKind, lines: context.lines, greeted: context.greeted }) },
      initial: 'quiet',
      states: {
        quiet: { on: { 'SPEECH.START': { target: 'overlap', actions: 'callerStarts' } } },
        overlap: {
          on: { 'SPEECH.END': { target: 'quiet', actions: 'callerStops' } },
          // The caller goes on talking: this reply answers words they have moved past.
          after: { interrupt: { target: '#conversation.listening.hearing', actions: ['cancelReply', 'keepCallOpen', 'markSpeech'] } },
        },
      },
      on: {
        // A caller already talking when the audio starts is talking over it.
        'REPLY.AUDIO': [{ guard: 'callerSpeaking', target: 'speaking.overlap', actions: 'clearOverlap' }, { target: 'speaking' }],
        'REPLY.ENDED': [
          { guard: 'endPending', target: 'ending', actions: [...LINE_FROM_REPLY, 'played'] },
          { target: 'listening', actions: [...LINE_FROM_REPLY, 'played'] },
        ],
        'REPLY.FAILED': [
          { guard: 'cannotSpeak', target: 'ending', actions: { type: 'end', params: 'provider_error' } },
          { guard: 'mayRetry', target: 'thinking', reenter: true, actions: 'countFailure' },
          { guard: 'givingUp', target: 'thinking', reenter: true, actions: ['countFailure', { type: 'prepare', params: 'apology' }, { type: 'endAfter', params: 'provider_error' }] },
          { target: 'thinking', reenter: true, actions: ['countFailure', { type: 'prepare', params: 'apology' }] },
        ],
        END_CALL: { actions: { type: 'endAfter', params: 'agent_hangup' } },
        WORDS: { actions: 'takeWords' },
        'STT.FAILED': { actions: { type: 'endAfter', params: 'provider_error' } },
      },
    },

    // The reply plays.
    speaking: {
      initial: 'playing',
      states: {
        playing: {
          on: { 'SPEECH.START': { target: 'overlap', actions: ['callerStarts', 'clearOverlap'] } },
        },
        // The caller speaks over the agent; short of the threshold it is ignored.
        overlap: {
          on: {
            'SPEECH.END': { target: 'playing', actions: 'callerStops' },
            WORDS: { actions: 'noteOverlapWords' },
          },
          after: { interrupt: 'paused' },
        },
        // Paused, nothing dropped: words decide between an interruption and resuming.
        // Left any way (the reply may also end while paused), playback is un-paused.
        paused: {
          entry: 'pausePlayback',
          exit: 'resumePlayback',
          always: { guard: 'overlapWords', target: '#conversation.listening.hearing', actions: ['interruptReply', 'keepCallOpen', 'markSpeech'] },
          on: {
            WORDS: [
              { guard: 'realWords', target: '#conversation.listening.hearing', actions: ['interruptReply', 'keepCallOpen', 'markSpeech', 'takeWords'] },
              { guard: 'backchannelFinal', target: 'playing' },
            ],
          },
          after: { resume: 'playing' },
        },
      },
      on: {
        'REPLY.ENDED': [
          { guard: 'endPending', target: 'ending', actions: [...LINE_FROM_REPLY, 'played'] },
          { target: 'listening', actions: [...LINE_FROM_REPLY, 'played'] },
        ],
        'REPLY.FAILED': [
          { guard: 'cannotSpeak', target: 'ending', actions: { type: 'end', params: 'provider_error' } },
          { guard: 'givingUp', target: 'thinking', actions: ['countFailure', { type: 'prepare', params: 'apology' }, { type: 'endAfter', params: 'provider_error' }] },
          { target: 'thinking', actions: ['countFailure', { type: 'prepare', params: 'apology' }] },
        ],
        END_CALL: { actions: { type: 'endAfter', params: 'agent_hangup' } },
        'STT.FAILED': { actions: { type: 'endAfter', params: 'provider_error' } },
      },
    },

    // The call should end (the goodbye, if any, has played).
    ending: {
      entry: [
        assign(({ context }) => ({ endReason: context.endReason ?? context.endAfterReply ?? 'agent_hangup' })),
        { type: 'requestHangup', params: ({ context }) => ({ reason: context.endReason ?? context.endAfterReply ?? 'agent_hangup' }) },
      ],
      on: { 'REPLY.ENDED': { actions: [...LINE_FROM_REPLY] } },
    },

    closed: { type: 'final' },
  },
});

export type ConversationSnapshot = SnapshotFrom<typeof conversationMachine>;
