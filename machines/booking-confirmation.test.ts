// The read-back before a calendar change: only a clear yes, said after the caller heard
// the read-back, lets the change happen, and then exactly once; a no, doubt, a change of
// mind or words said before the read-back change nothing.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyConfirmation, confirmationStep, NO_CONFIRMATION, type ConfirmationEvent, type ConfirmationState } from './booking-confirmation.ts';

describe('classifyConfirmation', () => {
  it.each(['Yes.', 'yes please', 'Yeah, go ahead.', 'Sure, book it', "That's right", 'Okay!', 'Perfect, thanks', 'The caller pressed 1 on the keypad.'])('"%s" is a yes', (t) => {
    expect(classifyConfirmation(t)).toBe('yes');
  });
  it.each(['No.', 'no thanks', 'Nope', "Don't book it", 'Cancel that', 'The caller pressed 2 on the keypad.'])('"%s" is a no', (t) => {
    expect(classifyConfirmation(t)).toBe('no');
  });
  it.each([
    'Maybe',
    'Yes, but on Wednesday instead',
    'Yes no wait',
    'What time was that?',
    'I like turtles',
    '',
    'Yes and also I wanted to ask you about the parking situation there',
    'Um, I think so?',
  ])('"%s" is unclear', (t) => {
    expect(classifyConfirmation(t)).toBe('unclear');
  });
});

describe('confirmationStep', () => {
  const proposal = { action: 'book Tue 10:00', readBack: 'Just to confirm: Tuesday at 10 am. Shall I book it?' };

  it('performs after the read-back and a yes, once', () => {
    let s: ConfirmationState<string> = NO_CONFIRMATION;
    s = confirmationStep(s, { type: 'PROPOSED', proposal }).state;
    expect(s.readBackDue).toBe(true);
    s = confirmationStep(s, { type: 'READ_BACK' }).state;
    const yes = confirmationStep(s, { type: 'CALLER', text: 'Yes please' });
    expect(yes.decision).toEqual({ kind: 'perform', action: 'book Tue 10:00' });
    expect(confirmationStep(yes.state, { type: 'CALLER', text: 'yes' }).decision).toEqual({ kind: 'none' });
  });

  it('a no or an unclear answer changes nothing; words before the read-back are no answer', () => {
    const heard = confirmationStep(confirmationStep(NO_CONFIRMATION as ConfirmationState<string>, { type: 'PROPOSED', proposal }).state, { type: 'READ_BACK' }).state;
    expect(confirmationStep(heard, { type: 'CALLER', text: 'no' }).decision).toMatchObject({ kind: 'not_confirmed', answer: 'no' });
    expect(confirmationStep(heard, { type: 'CALLER', text: 'hmm maybe' }).decision).toMatchObject({ kind: 'not_confirmed', answer: 'unclear' });
    const unheard = confirmationStep(NO_CONFIRMATION as ConfirmationState<string>, { type: 'PROPOSED', proposal }).state;
    expect(confirmationStep(unheard, { type: 'CALLER', text: 'yes' }).decision).toMatchObject({ kind: 'not_confirmed', answer: 'unclear' });
  });

  // The model of the rule: an action is performed only when the caller's words are a
  // clear yes, the latest proposal's read-back was said and no caller turn came between;
  // each proposal is performed at most once, and nothing is performed without one.
  it('property: performs exactly the proposals confirmed by a yes right after their read-back', () => {
    const event: fc.Arbitrary<ConfirmationEvent<number>> = fc.oneof(
      fc.nat(1000).map((n) => ({ type: 'PROPOSED' as const, proposal: { action: n, readBack: `read ${n}` } })),
      fc.constant({ type: 'READ_BACK' as const }),
      fc.constantFrom('yes', 'Yes please', 'no', 'nope', 'maybe', 'yes but not Tuesday', 'what?', '').map((text) => ({ type: 'CALLER' as const, text })),
    );
    fc.assert(
      fc.property(fc.array(event, { maxLength: 40 }), (events) => {
        let state: ConfirmationState<number> = NO_CONFIRMATION;
        // The reference model, kept independently.
        let latest: number | null = null;
        let heard = false;
        const performed: number[] = [];
        const expected: number[] = [];
        for (const e of events) {
          const out = confirmationStep(state, e);
          state = out.state;
          if (out.decision.kind === 'perform') performed.push(out.decision.action);
          if (e.type === 'PROPOSED') {
            latest = e.proposal.action;
            heard = false;
          } else if (e.type === 'READ_BACK') {
            if (latest !== null) heard = true;
          } else {
            if (latest !== null && heard && classifyConfirmation(e.text) === 'yes') expected.push(latest);
            latest = null;
            heard = false;
          }
        }
        expect(performed).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });
});
