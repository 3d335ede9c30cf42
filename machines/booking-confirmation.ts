// The read-back before a calendar change (require_booking_confirmation, issue 9): when
// the model asks to book, move or cancel an appointment, the engine does not call the
// calendar; it reads the appointment back ("Just to confirm: … Shall I book it?") and
// acts only on a clear yes in the caller's next turn. A no, or anything that is not a
// clear yes or no, changes nothing and the model is told so. Pure: the classification
// of the caller's answer and the pending proposal as a reducer (state, event) → (state,
// decision); the engine (actors/agent/engine-bookings.ts) speaks and calls the calendar.

/** The calendar change the model asked for; `readBack` is the sentence the engine says. */
export interface BookingProposal<A = unknown> {
  action: A;
  readBack: string;
}

export type ConfirmationAnswer = 'yes' | 'no' | 'unclear';

export interface ConfirmationState<A = unknown> {
  /** The change waiting for the caller's yes; null when none. */
  pending: BookingProposal<A> | null;
  /** The read-back has not been said yet (the engine says it as its next reply). */
  readBackDue: boolean;
}

export type ConfirmationEvent<A = unknown> =
  /** The model asked for a change (a newer one replaces one still pending). */
  | { type: 'PROPOSED'; proposal: BookingProposal<A> }
  /** The engine said the read-back to the caller. */
  | { type: 'READ_BACK' }
  /** The caller's turn ended with these words. */
  | { type: 'CALLER'; text: string };

export type ConfirmationDecision<A = unknown> =
  /** A clear yes to the read-back: make the change now. */
  | { kind: 'perform'; action: A }
  /** Not a clear yes (or the caller spoke before hearing the read-back): nothing changes; the model is told. */
  | { kind: 'not_confirmed'; answer: ConfirmationAnswer; action: A }
  | { kind: 'none' };

export const NO_CONFIRMATION: ConfirmationState<never> = { pending: null, readBackDue: false };

export function confirmationStep<A>(state: ConfirmationState<A>, event: ConfirmationEvent<A>): { state: ConfirmationState<A>; decision: ConfirmationDecision<A> } {
  switch (event.type) {
    case 'PROPOSED':
      return { state: { pending: event.proposal, readBackDue: true }, decision: { kind: 'none' } };
    case 'READ_BACK':
      return { state: state.pending ? { pending: state.pending, readBackDue: false } : state, decision: { kind: 'none' } };
    case 'CALLER': {
      if (!state.pending) return { state, decision: { kind: 'none' } };
      const cleared = { pending: null, readBackDue: false };
      // The caller spoke before hearing the read-back: whatever they said is not an answer to it.
      if (state.readBackDue) return { state: cleared, decision: { kind: 'not_confirmed', answer: 'unclear', action: state.pending.action } };
      const answer = classifyConfirmation(event.text);
      return {
        state: cleared,
        decision: answer === 'yes' ? { kind: 'perform', action: state.pending.action } : { kind: 'not_confirmed', answer, action: state.pending.action },
      };
    }
  }
}

/** Words and phrases that say yes to "Shall I book it?". */
const YES = new Set([
  'yes', 'yeah', 'yep', 'yup', 'yea', 'sure', 'correct', 'right', 'ok', 'okay', 'absolutely', 'definitely', 'perfect', 'confirm', 'confirmed',
  'please', 'great', 'fine', 'exactly', 'affirmative', 'indeed', 'certainly', 'alright',
]);
const YES_PHRASES = ['go ahead', 'book it', 'do it', 'sounds good', 'that works', 'works for me', 'please do', 'that is right', "that's right", 'all right', 'of course'];
/** Words that say no, or that the caller wants something else. */
const NO = new Set(['no', 'nope', 'nah', 'not', "don't", 'dont', "didn't", 'never', 'wrong', 'cancel', 'stop', 'wait', 'hold', 'actually', 'instead', 'different', 'another', 'change', 'but', 'rather']);
const NO_PHRASES = ['no thanks', 'no thank you', 'not that', 'hang on', 'hold on', 'never mind', 'changed my mind'];
/** Doubt: neither yes nor no. */
const DOUBT = new Set(['maybe', 'perhaps', 'possibly', 'think', 'guess', 'unsure', 'hmm', 'um', 'uh', 'what', 'which', 'when', 'how', 'sorry', 'pardon']);

/**
 * The caller's answer to a read-back. Only a clear yes is `yes`: affirmative words and
 * nothing that says no, doubts or asks ("yes, but on Wednesday" is not a yes, it is a
 * change); only a clear refusal is `no`; everything else is `unclear`. Keypad 1 is yes
 * and 2 is no, as prompts often offer ("press 1 to confirm").
 */
export function classifyConfirmation(text: string): ConfirmationAnswer {
  let t = ` ${text.toLowerCase().replace(/[’]/g, "'").replace(/[^\p{L}\p{N}' ]+/gu, ' ').replace(/\s+/g, ' ').trim()} `;
  if (t.trim() === '') return 'unclear';
  // A negated yes ("don't book it", "that's not right") is a no, not a mixed answer.
  t = t.replace(/ (?:don't|dont|do not|not|no need to) (?:book it|do it|go ahead|right|correct|okay|ok)(?= )/g, ' no');
  if (/the caller pressed 1 on the keypad/.test(t)) return 'yes';
  if (/the caller pressed 2 on the keypad/.test(t)) return 'no';
  const words = t.trim().split(' ');
  const hasNo = words.some((w) => NO.has(w)) || NO_PHRASES.some((p) => t.includes(` ${p} `));
  const hasDoubt = words.some((w) => DOUBT.has(w)) || text.includes('?');
  const hasYes = words.some((w) => YES.has(w)) || YES_PHRASES.some((p) => t.includes(` ${p} `));
  if (hasYes && !hasNo && !hasDoubt) {
    // A long turn is more than an answer ("yes and also I need to tell you about my dog…"): only short ones count.
    return words.length <= 8 ? 'yes' : 'unclear';
  }
  if (hasNo && !hasYes && !hasDoubt) return 'no';
  return 'unclear';
}
