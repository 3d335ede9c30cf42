// Tools on the conversation machine (machines/conversation.ts): while the tools a reply
// named run and nothing plays, the agent says a short filler after FILLER_AFTER_MS, then
// again every FILLER_AGAIN_MS, so the line is never silent; the caller is heard meanwhile.
// Once every answer is in, the caller's turn goes on, their words are answered, or the
// model continues from the answers.
import type { ConversationContext } from './conversation-context.ts';

/** Quiet while a tool runs before the agent says a filler. */
export const FILLER_AFTER_MS = 1000;
/** Quiet after a filler, the tool still running, before the next one. */
export const FILLER_AGAIN_MS = 3000;

/** A call of the last round has no answer yet. */
export function toolsRunning(context: ConversationContext): boolean {
  return context.toolRounds.at(-1)?.results.includes(null) ?? false;
}

/** The state `waitingForTool` of the conversation machine. */
export const toolStates = {
  // Tools run and nothing plays. The caller is heard meanwhile (their words kept);
  // once every answer is in, the caller's turn goes on, their words are answered, or
  // the model continues from the answers.
  waitingForTool: {
    always: [
      { guard: 'toolsAnsweredCallerSpeaking', target: 'listening.hearing' },
      { guard: 'toolsAnsweredWithWords', target: 'listening.endOfTurn' },
      { guard: 'toolsAnswered', target: 'thinking', actions: 'continueAfterTools' },
    ],
    after: { filler: { guard: 'callerQuiet', target: 'thinking', actions: 'sayFiller' } },
    on: {
      'SPEECH.START': { actions: ['callerStarts', 'markSpeech'] },
      // The wait for a filler restarts once the caller stops.
      'SPEECH.END': { target: 'waitingForTool', reenter: true, actions: 'callerStops' },
      WORDS: { actions: 'takeWords' },
      KEYPAD: { actions: 'takeKeys' },
      'STT.FAILED': { target: 'thinking', actions: [{ type: 'prepare', params: 'apology' }, { type: 'endAfter', params: 'provider_error' }] },
    },
  },
} as const;
