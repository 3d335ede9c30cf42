// The conversation on one connected call (issue 8): who has the floor, when the agent
// replies, when the caller's speech interrupts it and when the call should end. Pure:
// every effect is a named action the voice engine provides with `machine.provide()`
// (actors/agent/agent-engine.ts), and time is XState's own delays, so tests drive it with a
// simulated clock. Its context holds only what changes a few times a turn (the
// transcript lines, the caller's final words not yet answered); per-frame state
// (voice activity probabilities, interim words, audio queues, model tokens) stays in
// the engine, which tells the machine only what it must decide on.
//
// The machine is assembled here from its regions, each in a file of its own: what it holds
// and hears (conversation-context.ts), turn taking (turn-taking.ts), barge-in
// (barge-in.ts) and tools (conversation-tools.ts); its actions, guards and delays are
// named in the one setup below, which checks every region's references to them.
//
// Turn taking, after voice-anchors.md:
// - End of turn (machines/turn-taking.ts): the caller's words are final and the caller is
//   not speaking, then `response_eagerness` ms of quiet (0 replies at once).
// - Barge-in (machines/barge-in.ts, where the order of the decision is written out):
//   caller speech over the agent for `interruptMs` (from interruption_sensitivity)
//   pauses the agent (nothing dropped yet) unless a final backchannel ("uh-huh",
//   "okay") came for it, in whichever order the recogniser and voice activity report
//   them; real words then interrupt it (the reply is cut, the carrier's buffer
//   cleared); a final backchannel, or no words within `resumeAfterMs`, resumes it.
// - A reply that is still being prepared when the caller goes on talking is stale: it
//   is cancelled and the caller's new words join the turn.
//
// Keypad and tools (issue 9):
// - An entry typed on the keypad (grouped by machines/keypad.ts) is a caller turn of its
//   own words ("The caller pressed 1 2 3 on the keypad."): it ends the turn like final
//   words, interrupts a reply that plays and cancels one being prepared.
// - Tools the engine runs over HTTP (custom functions, the in-call webhook;
//   machines/conversation-tools.ts): the model's
//   reply names them (TOOL.CALLS), `runTools` starts them, TOOL.DONE / TOOL.FAILED
//   answer each. Once every answer is in, the model is asked again with them (a
//   continuation: an `answer` reply whose request carries the tool rounds). While a tool
//   runs and nothing plays, the agent says a short filler after FILLER_AFTER_MS, then
//   again every FILLER_AGAIN_MS, so the line is never silent.
// - Barge-in during a tool: the tool is not cancelled and its answer is still used. The
//   caller's words are heard meanwhile; if they spoke, the next reply answers their
//   words with the tool's answer in view, otherwise it continues from the answer.
import { assign, enqueueActions, setup, type EventObject, type SnapshotFrom } from 'xstate';
import { keypadText } from './keypad.ts';
import { BACKCHANNEL_CLAIM_MS, bargeInGuards, hasWords, heardAfter, speakingStates } from './barge-in.ts';
import { turnTakingStates } from './turn-taking.ts';
import { FILLER_AFTER_MS, FILLER_AGAIN_MS, toolsRunning, toolStates } from './conversation-tools.ts';
import type { ConversationContext, ConversationEndReason, ConversationEvent, ConversationInput, ReplyKind, ReplyRequest, ToolCall, TranscriptLine } from './conversation-context.ts';

export type * from './conversation-context.ts';
export { FILLER_AFTER_MS, FILLER_AGAIN_MS } from './conversation-tools.ts';

export { isBackchannel } from './barge-in.ts';

// 2: the barge-in states of issue 24 (speaking.overlap has children, `overlapHeard`).
export const CONVERSATION_MACHINE_VERSION = 2;


const join = (a: string, b: string): string => (a === '' ? b.trim() : b.trim() === '' ? a : `${a} ${b.trim()}`);

type Ev<T extends ConversationEvent['type']> = Extract<ConversationEvent, { type: T }>;

const LINE_FROM_REPLY = ['agentLine', 'settleRoundWords'] as const;

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
    /** Run these tools; each is answered with TOOL.DONE or TOOL.FAILED. */
    runTools: (_, _params: { calls: ToolCall[] }) => {},

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
    noteOverlapWords: assign(({ context, event }) => (event.type === 'WORDS' ? { overlapHeard: heardAfter(context.overlapHeard, event.text) } : {})),
    clearOverlap: assign({ overlapHeard: 'nothing' as const }),
    prepare: assign((_, kind: ReplyKind) => ({ replyKind: kind })),
    fallbackTurn: assign({ replyKind: 'fallback' as const, callerText: '', heardSpeech: false }),
    countFailure: assign(({ context }) => ({ failures: context.failures + 1 })),
    played: assign(({ context }) => ({ failures: 0, greeted: context.greeted || context.replyKind === 'greeting' })),
    /** The caller interrupted the goodbye: they have more to say, so the call goes on. */
    keepCallOpen: assign(({ context }) => ({
      endAfterReply: context.endAfterReply === 'agent_hangup' ? null : context.endAfterReply,
      // Likewise the transfer the interrupted reply announced: the model hears them out first.
      transferAfterReply: false,
    })),
    /** Transfer the caller once this reply has played (the engine: hold audio, the call's transfer). */
    requestTransfer: (_, _params: { lines: readonly TranscriptLine[] }) => {},
    transferAfter: assign({ transferAfterReply: true }),
    /** A greeting cut short still greeted the caller if they heard some of it. */
    noteGreeting: assign(({ context, event }) => ({
      greeted: context.greeted || (context.replyKind === 'greeting' && event.type === 'REPLY.ENDED' && event.heard.trim() !== ''),
    })),
    endAfter: assign((_, reason: ConversationEndReason) => ({ endAfterReply: reason })),
    takeKeys: assign(({ context, event }) => (event.type === 'KEYPAD' ? { callerText: join(context.callerText, keypadText(event.digits)) } : {})),
    openToolRound: assign(({ context, event }) => {
      const calls = event.type === 'TOOL.CALLS' ? event.calls : [];
      return {
        toolRounds: [...context.toolRounds, { at: context.lines.length, calls, results: calls.map(() => null), words: null }],
        toolReplyDue: true,
        fillers: 0,
      };
    }),
    /** An answer to a call of the last round still running; anything else (a late or unknown id) is dropped. */
    takeToolAnswer: assign(({ context, event }) => {
      if (event.type !== 'TOOL.DONE' && event.type !== 'TOOL.FAILED') return {};
      const last = context.toolRounds.at(-1);
      const i = last ? last.calls.findIndex((c, j) => c.id === event.id && last.results[j] === null) : -1;
      if (!last || i < 0) return {};
      const content = event.type === 'TOOL.DONE' ? event.result : JSON.stringify({ error: event.error });
      const round = { ...last, results: last.results.map((r, j) => (j === i ? content : r)) };
      return { toolRounds: [...context.toolRounds.slice(0, -1), round] };
    }),
    /** The first reply to end after a round opened is the one that named its tools: were its words heard? */
    settleRoundWords: assign(({ context, event }) => {
      const last = context.toolRounds.at(-1);
      if (!last || last.words !== null || event.type !== 'REPLY.ENDED') return {};
      return { toolRounds: [...context.toolRounds.slice(0, -1), { ...last, words: event.heard.trim() !== '' }] };
    }),
    /** The next model reply answers the last round (a continuation, or the caller's words with it). */
    settleTools: assign({ toolReplyDue: false, fillers: 0 }),
    continueAfterTools: assign({ toolReplyDue: false, fillers: 0, replyKind: 'answer' as const }),
    sayFiller: assign(({ context }) => ({ fillers: context.fillers + 1, replyKind: 'filler' as const })),
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
    heardSpeech: ({ context }) => context.heardSpeech,
    callerQuietWithWords: ({ context }) => !context.callerSpeaking && hasWords(context.callerText),
    noWords: ({ event }) => event.type === 'WORDS' && !hasWords(event.text),
    ...bargeInGuards,
    greetFirst: ({ context }) => context.aiSpeaksFirst,
    mayRetry: ({ context, event }) => (event as Ev<'REPLY.FAILED'>).retryable && context.failures < 1,
    /** Speech synthesis failed after a failure just before (its retry, or a failed model reply): nothing more can be said. */
    cannotSpeak: ({ context, event }) => (event as Ev<'REPLY.FAILED'>).provider === 'tts' && context.failures >= 1,
    /** A third failure in a row, or the apology itself failed: give up honestly (after an apology where one can be made). */
    givingUp: ({ context }) => context.failures >= 2 || context.replyKind === 'apology',
    endPending: ({ context }) => context.endAfterReply !== null,
    toolReplyDue: ({ context }) => context.toolReplyDue,
    toolsRunning: ({ context }) => toolsRunning(context),
    /** Answered while the caller speaks anew (not the tail of the turn already answered: voice activity ends late). */
    toolsAnsweredCallerSpeaking: ({ context }) => !toolsRunning(context) && context.callerSpeaking && context.heardSpeech,
    toolsAnsweredWithWords: ({ context }) => !toolsRunning(context) && hasWords(context.callerText),
    toolsAnswered: ({ context }) => !toolsRunning(context),
    transferPending: ({ context }) => context.transferAfterReply,
  },
  delays: {
    pickupDelay: ({ context }) => context.pickupDelayMs,
    eagerness: ({ context }) => context.eagernessMs,
    interrupt: ({ context }) => context.interruptMs,
    silence: ({ context }) => context.silenceHangupMs,
    resume: ({ context }) => context.resumeAfterMs,
    backchannelClaim: BACKCHANNEL_CLAIM_MS,
    filler: ({ context }) => (context.fillers === 0 ? FILLER_AFTER_MS : FILLER_AGAIN_MS),
  },
}).createMachine({
  id: 'conversation',
  context: ({ input }) => ({
    ...input,
    lines: [],
    callerText: '',
    heardSpeech: false,
    callerSpeaking: false,
    overlapHeard: 'nothing',
    greeted: false,
    replyKind: 'greeting',
    failures: 0,
    endAfterReply: null,
    endReason: null,
    toolRounds: [],
    toolReplyDue: false,
    fillers: 0,
    transferAfterReply: false,
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
    // Only a live reply names tools (the engine drops the events of any other), so a
    // round opens while the agent thinks or speaks; answers are kept in any state.
    'TOOL.CALLS': { actions: ['openToolRound', { type: 'runTools', params: ({ event }) => ({ calls: event.type === 'TOOL.CALLS' ? event.calls : [] }) }] },
    'TOOL.DONE': { actions: 'takeToolAnswer' },
    'TOOL.FAILED': { actions: 'takeToolAnswer' },
  },
  states: {
    ...turnTakingStates,


    // The reply is being prepared (model, then speech); nothing has played yet.
    thinking: {
      // The lines travel with the effect: during the transition the actor's snapshot is still the old one.
      entry: { type: 'startReply', params: ({ context }) => ({ kind: context.replyKind, lines: context.lines, greeted: context.greeted, toolRounds: context.toolRounds }) },
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
          { guard: 'transferPending', target: 'transferring', actions: [...LINE_FROM_REPLY, 'played'] },
          { guard: 'endPending', target: 'ending', actions: [...LINE_FROM_REPLY, 'played'] },
          { guard: 'toolReplyDue', target: 'waitingForTool', actions: [...LINE_FROM_REPLY, 'played'] },
          { target: 'listening', actions: [...LINE_FROM_REPLY, 'played'] },
        ],
        'REPLY.FAILED': [
          { guard: 'cannotSpeak', target: 'ending', actions: { type: 'end', params: 'provider_error' } },
          // The reply that named tools failed after naming them: their answers carry the conversation on (no second run of them).
          { guard: 'toolReplyDue', target: 'waitingForTool', actions: 'countFailure' },
          { guard: 'mayRetry', target: 'thinking', reenter: true, actions: 'countFailure' },
          { guard: 'givingUp', target: 'thinking', reenter: true, actions: ['countFailure', { type: 'prepare', params: 'apology' }, { type: 'endAfter', params: 'provider_error' }] },
          { target: 'thinking', reenter: true, actions: ['countFailure', { type: 'prepare', params: 'apology' }] },
        ],
        END_CALL: { actions: { type: 'endAfter', params: 'agent_hangup' } },
        TRANSFER: { actions: 'transferAfter' },
        WORDS: { actions: 'takeWords' },
        // The caller typed while the reply was prepared: it answers a turn they moved past.
        KEYPAD: { target: 'listening.endOfTurn', actions: ['cancelReply', 'keepCallOpen', 'takeKeys'] },
        'STT.FAILED': { actions: { type: 'endAfter', params: 'provider_error' } },
      },
    },

    // The reply plays; the caller's speech over it is judged in machines/barge-in.ts.
    speaking: {
      initial: 'playing',
      states: speakingStates,
      on: {
        // A key press over the agent is deliberate: it interrupts like real words.
        KEYPAD: { target: 'listening.endOfTurn', actions: ['interruptReply', 'keepCallOpen', 'takeKeys'] },
        'REPLY.ENDED': [
          { guard: 'transferPending', target: 'transferring', actions: [...LINE_FROM_REPLY, 'played'] },
          { guard: 'endPending', target: 'ending', actions: [...LINE_FROM_REPLY, 'played'] },
          { guard: 'toolReplyDue', target: 'waitingForTool', actions: [...LINE_FROM_REPLY, 'played'] },
          { target: 'listening', actions: [...LINE_FROM_REPLY, 'played'] },
        ],
        'REPLY.FAILED': [
          { guard: 'cannotSpeak', target: 'ending', actions: { type: 'end', params: 'provider_error' } },
          // The reply that named tools failed after naming them: their answers carry the conversation on (no second run of them).
          { guard: 'toolReplyDue', target: 'waitingForTool', actions: 'countFailure' },
          { guard: 'givingUp', target: 'thinking', actions: ['countFailure', { type: 'prepare', params: 'apology' }, { type: 'endAfter', params: 'provider_error' }] },
          { target: 'thinking', actions: ['countFailure', { type: 'prepare', params: 'apology' }] },
        ],
        END_CALL: { actions: { type: 'endAfter', params: 'agent_hangup' } },
        TRANSFER: { actions: 'transferAfter' },
        'STT.FAILED': { actions: { type: 'endAfter', params: 'provider_error' } },
      },
    },

    ...toolStates,


    // The call should end (the goodbye, if any, has played).
    ending: {
      entry: [
        assign(({ context }) => ({ endReason: context.endReason ?? context.endAfterReply ?? 'agent_hangup' })),
        { type: 'requestHangup', params: ({ context }) => ({ reason: context.endReason ?? context.endAfterReply ?? 'agent_hangup' }) },
      ],
      on: { 'REPLY.ENDED': { actions: [...LINE_FROM_REPLY] } },
    },

    // The agent's last words have played; the caller holds while the call is transferred.
    // Nobody is answered meanwhile and no silence timer runs. A transfer that does not
    // reach the person brings the conversation back: the agent says so.
    transferring: {
      entry: [{ type: 'requestTransfer', params: ({ context }) => ({ lines: context.lines }) }, assign({ transferAfterReply: false })],
      on: { 'TRANSFER.FAILED': { target: 'thinking', actions: { type: 'prepare', params: 'transfer_failed' } } },
    },

    closed: { type: 'final' },
  },
});

export type ConversationSnapshot = SnapshotFrom<typeof conversationMachine>;
