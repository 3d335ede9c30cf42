// Barge-in while the agent speaks: when the caller's speech over a reply pauses it, when
// the reply goes on, when words interrupt it. The children of the conversation
// machine's `speaking` state (machines/conversation.ts) and the guards they decide by,
// kept here so the order of the decision reads in one place.
//
// Voice activity (SPEECH.START / SPEECH.END) and the recogniser's words (WORDS) arrive in
// either order. Voice activity reports a start about 60 ms into the speech when its
// model keeps up, later under load (one thread for every call's windows, batched), and
// an end 550 ms after the last sound; a backchannel's final words come the recogniser's
// endpointing (300 ms) after it. So a 0.4 s "uh-huh" keeps voice activity on for about
// 0.9 s, past the 650 ms threshold, and its final lands a few tens of ms either side of
// that threshold: the pause must not depend on which comes first (issue 24: a final
// that came first was dropped, and the pause it should have cancelled lasted until the
// 2 s resume timer). The order, whatever the events' order:
// 1. Speech over the agent pauses it only once it has lasted `interruptMs`
//    (interruption_sensitivity), and
// 2. only if no final backchannel has come for it: one that comes at any point of the
//    speech, or shortly before voice activity reports its start, settles the speech as
//    a backchannel (`acknowledged`), which then never pauses the agent however long
//    voice activity stays on;
// 3. at the threshold, words heard so far that are only a backchannel ("yeah, okay", as
//    interim words) hold the pause back until more words say otherwise (LiveKit, too,
//    reads the live transcript before it pauses: min_interruption_words);
// 4. paused: real words interrupt (the reply is cut, the carrier cleared); a final
//    backchannel resumes at once; no words within `resumeAfterMs` resume it.
// Real words after a backchannel are speech of their own: they must last the threshold.
import type { ConversationContext, ConversationEvent } from './conversation-context.ts';

/**
 * How long a final backchannel heard while voice activity reports no speech claims the
 * speech start that follows (voice activity behind the recogniser). The recogniser's
 * final comes at least its endpointing (300 ms) after the words, voice activity ~60 ms
 * into them when it keeps up, so its start can only follow the final when it runs more
 * than the whole backchannel behind; 1 s covers that with room, and a new utterance
 * within it is only taken for a backchannel until its first real words.
 */
export const BACKCHANNEL_CLAIM_MS = 1000;

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

export const hasWords = (text: string): boolean => /[\p{L}\p{N}]/u.test(text);

/** What was heard of the caller's speech over the agent: nothing yet, only a backchannel, or real words (which stay). */
export type OverlapHeard = 'nothing' | 'backchannel' | 'words';

/** The heard-so-far after `text` (interim or final words of the same speech). */
export function heardAfter(heard: OverlapHeard, text: string): OverlapHeard {
  if (heard === 'words' || !hasWords(text)) return heard;
  return isBackchannel(text) ? 'backchannel' : 'words';
}

type GuardArgs = { context: ConversationContext; event: ConversationEvent };

export const bargeInGuards = {
  realWords: ({ event }: GuardArgs) => event.type === 'WORDS' && hasWords(event.text) && !isBackchannel(event.text),
  backchannelFinal: ({ event }: GuardArgs) => event.type === 'WORDS' && event.final && isBackchannel(event.text),
  backchannelFinalWhileSpeaking: ({ context, event }: GuardArgs) => context.callerSpeaking && bargeInGuards.backchannelFinal({ context, event }),
  heardWords: ({ context }: GuardArgs) => context.overlapHeard === 'words',
  /** Past the threshold the agent pauses unless all that was heard of the speech is a backchannel. */
  mayPause: ({ context }: GuardArgs) => context.overlapHeard !== 'backchannel',
};

const INTERRUPT = ['interruptReply', 'keepCallOpen', 'markSpeech'] as const;
const SETTLED = [{ guard: 'backchannelFinal', target: '#conversation.speaking.acknowledged' }] as const;

/** The `speaking` state's children (its own events, the reply's end and failures, stay in conversation.ts). */
export const speakingStates = {
  playing: {
    on: {
      'SPEECH.START': { target: 'overlap', actions: ['callerStarts', 'clearOverlap'] },
      WORDS: [
        // Speech still going on here: a pause that resumed after `resumeAfterMs` without words.
        { guard: 'backchannelFinalWhileSpeaking', target: 'acknowledged' },
        { guard: 'backchannelFinal', target: 'acknowledgedAhead' },
      ],
    },
  },
  // The caller speaks over the agent; short of the threshold it is ignored.
  overlap: {
    initial: 'short',
    on: {
      'SPEECH.END': { target: 'playing', actions: 'callerStops' },
      WORDS: [...SETTLED, { actions: 'noteOverlapWords' }],
    },
    states: {
      short: { after: { interrupt: 'lasted' } },
      // Past the threshold: pause, unless the words so far are only a backchannel (then the next words decide).
      lasted: { always: { guard: 'mayPause', target: '#conversation.speaking.paused' } },
    },
  },
  // Paused, nothing dropped: words decide between an interruption and resuming.
  // Left any way (the reply may also end while paused), playback is un-paused.
  paused: {
    entry: 'pausePlayback',
    exit: 'resumePlayback',
    always: { guard: 'heardWords', target: '#conversation.listening.hearing', actions: INTERRUPT },
    on: {
      WORDS: [{ guard: 'realWords', target: '#conversation.listening.hearing', actions: [...INTERRUPT, 'takeWords'] }, ...SETTLED],
    },
    after: { resume: 'playing' },
  },
  // The caller's speech is a backchannel (its words are final): the agent goes on, whatever voice activity says, until it ends.
  acknowledged: {
    always: { guard: 'callerQuiet', target: 'playing' },
    on: { WORDS: { guard: 'realWords', target: 'overlap', actions: 'noteOverlapWords' } },
  },
  // A final backchannel before voice activity reported any speech (it runs behind the recogniser): the speech start that follows is its.
  acknowledgedAhead: {
    on: {
      'SPEECH.START': { target: 'acknowledged', actions: 'callerStarts' },
      // Another final backchannel claims anew; real words void the claim.
      WORDS: [
        { guard: 'backchannelFinal', target: 'acknowledgedAhead', reenter: true },
        { guard: 'realWords', target: 'playing' },
      ],
    },
    after: { backchannelClaim: 'playing' },
  },
} as const;
