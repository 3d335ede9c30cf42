// Turn taking on the conversation machine (machines/conversation.ts): the opening of
// the line and the caller's turn. End of turn, after voice-anchors.md: the caller's words
// are final and the caller is not speaking, then `response_eagerness` ms of quiet (0
// replies at once); a missing final never strands the call (the silence timer runs while
// it is awaited). The states are plain config here; their guards and actions are named in
// the machine's setup, which checks them when it builds the machine.
import type { ConversationContext } from './conversation-context.ts';

// Reported before the assign that clears or appends, so the params read the words first.
const ANSWER_TURN = [
  { type: 'recordLine', params: ({ context }: { context: ConversationContext }) => ({ speaker: 'caller' as const, text: context.callerText }) },
  'commitCallerLine',
] as const;

/** The states `opening` and `listening` of the conversation machine. */
export const turnTakingStates = {
  // The line is open. The agent greets at once, or waits for the caller up to pickup_delay.
  opening: {
    always: { guard: 'greetFirst', target: 'thinking', actions: { type: 'prepare', params: 'greeting' } },
    after: { pickupDelay: { target: 'thinking', actions: { type: 'prepare', params: 'greeting' } } },
    on: {
      'SPEECH.START': { target: 'listening.hearing', actions: ['callerStarts', 'markSpeech'] },
      WORDS: [{ guard: 'finalEndOfTurn', target: 'listening.endOfTurn', actions: 'takeWords' }, { actions: 'takeWords' }],
      KEYPAD: { target: 'listening.endOfTurn', actions: 'takeKeys' },
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
      // A keypad entry ends the turn like final words (joining a turn still being spoken).
      KEYPAD: [{ guard: 'callerSpeaking', actions: 'takeKeys' }, { target: '.endOfTurn', actions: 'takeKeys' }],
      'UTTERANCE.END': [
        { guard: 'haveWords', target: '.endOfTurn' },
        { guard: 'heardSpeech', target: '#conversation.thinking', actions: 'fallbackTurn' },
      ],
      'STT.FAILED': { target: '#conversation.thinking', actions: [{ type: 'prepare', params: 'apology' }, { type: 'endAfter', params: 'provider_error' }] },
    },
    states: {
      // Nobody speaks: the silence timer runs. Entered while the caller talks (a reply
      // ended under their speech), it is their turn already.
      idle: {
        always: [
          { guard: 'callerSpeaking', target: 'hearing', actions: 'markSpeech' },
          // A filler cut short by noise, a tool round still to be replied to: back to waiting on it (no silence timer).
          { guard: 'toolReplyDue', target: '#conversation.waitingForTool' },
        ],
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
        after: {
          // Speech over a tool's wait whose words never come (noise): the tool's answer is not left waiting on them.
          resume: { guard: 'toolReplyDue', target: '#conversation.waitingForTool' },
          silence: { target: '#conversation.ending', actions: { type: 'end', params: 'silence_timeout' } },
        },
      },
      // Words final, caller quiet: reply after response_eagerness unless they go on.
      // An empty final or the recogniser's utterance end adds nothing: the wait is not restarted.
      endOfTurn: {
        after: {
          eagerness: [
            // A tool still runs: the caller's words are kept and answered with its answer.
            { guard: 'toolsRunning', target: '#conversation.waitingForTool', actions: [...ANSWER_TURN] },
            { target: '#conversation.thinking', actions: [...ANSWER_TURN, 'settleTools'] },
          ],
        },
        on: { WORDS: { guard: 'noWords' }, 'UTTERANCE.END': {} },
      },
    },
  },
} as const;
