// The voicemail screen at the start of an outbound call placed without carrier AMD
// (issue 9): human or answering machine, decided within SCREEN_MS of the answer, and on
// a machine when to speak the message. Pure: effects are named actions the engine
// provides (actors/agent/engine-voicemail.ts), time is XState delays.
//
// Evidence, after voice-anchors.md (LiveKit, Jambonz):
// - a beep (voice/audio/beep.ts) → machine;
// - final words with a voicemail phrase ("leave a message", "not available", "after the
//   tone"…) in a greeting of at least PHRASE_MIN_WORDS words (a person's short "he's not
//   available" is not taken for a machine) → machine;
// - the first final words go to the model for one short classification; its
//   `voicemail` or `human` decides unless something decided first;
// - a short greeting (under LONG_WORDS words and LONG_SPEECH_MS of speech) followed by
//   HUMAN_PAUSE_MS of quiet → human ("Hello?" and a wait);
// - nobody speaks for NO_SPEECH_MS → human (the agent greets; a silent machine meets the
//   conversation's silence timeout);
// - nothing decided by SCREEN_MS → human.
// On a machine with a message to leave, the message starts after the beep, or once the
// greeting has ended (GREETING_END_MS of quiet), or at the latest MAX_WAIT_MS after the
// verdict; without one the call is hung up at once.
import { assign, setup } from 'xstate';

export const SCREEN_MS = 20_000;
export const NO_SPEECH_MS = 3000;
export const HUMAN_PAUSE_MS = 800;
export const LONG_SPEECH_MS = 2500;
export const LONG_WORDS = 9;
export const PHRASE_MIN_WORDS = 6;
export const GREETING_END_MS = 1500;
export const MAX_WAIT_MS = 15_000;

const VOICEMAIL_PHRASES = [
  'leave a message', 'leave your message', 'leave me a message', 'leave your name', 'not available', 'unavailable',
  'after the tone', 'after the beep', 'at the tone', 'voicemail', 'voice mail', 'can\'t take your call', 'cannot take your call',
  'can\'t come to the phone', 'record your message', 'mailbox',
];

export type ScreenVerdict = 'human' | 'voicemail' | 'unsure';

const wordsOf = (text: string): number => (text.match(/[\p{L}\p{N}']+/gu) ?? []).length;

/** A greeting long enough to be a recording that says what recordings say. */
export function soundsLikeVoicemail(text: string): boolean {
  const t = text.toLowerCase().replace(/[’]/g, "'");
  return wordsOf(t) >= PHRASE_MIN_WORDS && VOICEMAIL_PHRASES.some((p) => t.includes(p));
}

/** The model's one-word answer: `voicemail`/`machine` or `human`, anything else unsure. */
export function verdictOf(answer: string): ScreenVerdict {
  const first = answer.trim().toLowerCase().match(/^[a-z_]+/)?.[0] ?? '';
  if (first === 'voicemail' || first === 'machine' || first === 'answering_machine') return 'voicemail';
  if (first === 'human') return 'human';
  return 'unsure';
}

export interface ScreenInput {
  /** The number's voicemail_leave_enabled is true (and it has a message). */
  leaveMessage: boolean;
}

export interface ScreenContext extends ScreenInput {
  /** The callee's final words so far. */
  text: string;
  speaking: boolean;
  /** Speech has lasted LONG_SPEECH_MS in one stretch. */
  longSpeech: boolean;
  classifying: boolean;
  beep: boolean;
}

export type ScreenEvent =
  | { type: 'SPEECH.START' }
  | { type: 'SPEECH.END' }
  | { type: 'WORDS'; text: string; final: boolean }
  | { type: 'BEEP' }
  | { type: 'CLASSIFIED'; verdict: ScreenVerdict }
  | { type: 'HANGUP' };

export const voicemailScreenMachine = setup({
  types: { context: {} as ScreenContext, events: {} as ScreenEvent, input: {} as ScreenInput },
  actions: {
    /** Ask the model once: human or voicemail, from these words; answered with CLASSIFIED. */
    classify: (_, _params: { text: string }) => {},
    /** A person answered: the conversation starts. */
    human: () => {},
    /** Speak the voicemail message now, then hang up (voicemail_detected). */
    leaveMessage: () => {},
    /** Hang up at once, saying nothing (voicemail_detected). */
    hangUpSilently: () => {},
    takeWords: assign(({ context, event }) =>
      event.type === 'WORDS' && event.final && event.text.trim() !== '' ? { text: context.text === '' ? event.text.trim() : `${context.text} ${event.text.trim()}` } : {},
    ),
    startClassifying: assign({ classifying: true }),
    speechStarts: assign({ speaking: true }),
    speechEnds: assign({ speaking: false }),
    markLong: assign({ longSpeech: true }),
    markBeep: assign({ beep: true }),
  },
  guards: {
    phrase: ({ context }) => soundsLikeVoicemail(context.text),
    firstWords: ({ context, event }) => !context.classifying && event.type === 'WORDS' && event.final && event.text.trim() !== '',
    saysVoicemail: ({ event }) => event.type === 'CLASSIFIED' && event.verdict === 'voicemail',
    saysHuman: ({ event }) => event.type === 'CLASSIFIED' && event.verdict === 'human',
    shortGreeting: ({ context }) => !context.longSpeech && wordsOf(context.text) < LONG_WORDS,
    leave: ({ context }) => context.leaveMessage,
    beepHeard: ({ context }) => context.beep,
    speaking: ({ context }) => context.speaking,
  },
  delays: { screen: SCREEN_MS, noSpeech: NO_SPEECH_MS, humanPause: HUMAN_PAUSE_MS, longSpeech: LONG_SPEECH_MS, greetingEnd: GREETING_END_MS, maxWait: MAX_WAIT_MS },
}).createMachine({
  id: 'voicemailScreen',
  context: ({ input }) => ({ ...input, text: '', speaking: false, longSpeech: false, classifying: false, beep: false }),
  initial: 'screening',
  on: { HANGUP: '.closed' },
  states: {
    screening: {
      after: { screen: 'human' },
      on: {
        BEEP: { target: 'voicemail', actions: 'markBeep' },
        WORDS: [
          { guard: 'firstWords', actions: ['takeWords', 'startClassifying', { type: 'classify', params: ({ event }) => ({ text: event.type === 'WORDS' ? event.text.trim() : '' }) }] },
          { actions: 'takeWords' },
        ],
        CLASSIFIED: [
          { guard: 'saysVoicemail', target: 'voicemail' },
          { guard: 'saysHuman', target: 'human' },
        ],
      },
      // Words just taken may already say "voicemail".
      always: { guard: 'phrase', target: 'voicemail' },
      initial: 'waiting',
      states: {
        waiting: {
          after: { noSpeech: '#voicemailScreen.human' },
          on: { 'SPEECH.START': { target: 'talking', actions: 'speechStarts' } },
        },
        talking: {
          after: { longSpeech: { actions: 'markLong' } },
          on: { 'SPEECH.END': { target: 'paused', actions: 'speechEnds' } },
        },
        paused: {
          after: { humanPause: { guard: 'shortGreeting', target: '#voicemailScreen.human' } },
          on: { 'SPEECH.START': { target: 'talking', actions: 'speechStarts' } },
        },
      },
    },

    voicemail: {
      always: [{ guard: 'leave', target: 'awaitingTone' }, { target: 'hungUp' }],
    },
    // A message to leave: after the beep, or once the greeting has ended.
    awaitingTone: {
      always: { guard: 'beepHeard', target: 'leaving' },
      after: { maxWait: 'leaving' },
      on: {
        BEEP: 'leaving',
        'SPEECH.START': { actions: 'speechStarts' },
        'SPEECH.END': { actions: 'speechEnds' },
      },
      initial: 'check',
      states: {
        check: { always: [{ guard: 'speaking', target: 'greeting' }, { target: 'quiet' }] },
        greeting: { on: { 'SPEECH.END': { target: 'quiet', actions: 'speechEnds' } } },
        quiet: {
          after: { greetingEnd: '#voicemailScreen.leaving' },
          on: { 'SPEECH.START': { target: 'greeting', actions: 'speechStarts' } },
        },
      },
    },
    leaving: { entry: 'leaveMessage', type: 'final' },
    hungUp: { entry: 'hangUpSilently', type: 'final' },
    human: { entry: 'human', type: 'final' },
    closed: { type: 'final' },
  },
});
