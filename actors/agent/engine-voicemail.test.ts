// Which calls the voicemail screen runs on and with what message (the number's own
// setting, or for a batch campaign's call one the model writes from its prompt), and how
// the model's structured answer is read.
import { describe, expect, it } from 'vitest';
import { classifiedVerdict, voicemailSetupOf } from './engine-voicemail.ts';

const number = (leave: boolean | null, message: string | null) => ({ voicemail_leave_enabled: leave, voicemail_message: message });
const outbound = { direction: 'outbound' as const, amdEnabled: false, resumed: false };

describe('voicemailSetupOf', () => {
  it('screens outbound calls without AMD, with the number’s message when its setting is true', () => {
    expect(voicemailSetupOf({ ...outbound, number: number(true, 'Call us back.') })).toEqual({ message: 'Call us back.' });
  });

  it.each([
    ['false', number(false, 'Call us back.')],
    ['null', number(null, 'Call us back.')],
    ['true with a blank message', number(true, '  ')],
    ['true without a message', number(true, null)],
    ['no number row', null],
  ])('hangs up silently when the number’s setting is %s', (_, n) => {
    expect(voicemailSetupOf({ ...outbound, number: n })).toEqual({ message: null });
  });

  it('leaves a batch campaign’s call a message the model writes from the call’s prompt, unless the number has its own or says false', () => {
    const campaignPrompt = 'Remind them of tomorrow’s dental appointment.';
    expect(voicemailSetupOf({ ...outbound, number: number(null, null), campaignPrompt })).toEqual({ message: null, compose: campaignPrompt });
    expect(voicemailSetupOf({ ...outbound, number: null, campaignPrompt })).toEqual({ message: null, compose: campaignPrompt });
    // Set to false on purpose: silent, campaign or not.
    expect(voicemailSetupOf({ ...outbound, number: number(false, null), campaignPrompt })).toEqual({ message: null });
    // The number's own message wins; a blank prompt leaves nothing to compose from.
    expect(voicemailSetupOf({ ...outbound, number: number(true, 'Call us back.'), campaignPrompt })).toEqual({ message: 'Call us back.' });
    expect(voicemailSetupOf({ ...outbound, number: number(null, null), campaignPrompt: '  ' })).toEqual({ message: null });
    // Carrier AMD decides by itself: no screen, no message.
    expect(voicemailSetupOf({ ...outbound, amdEnabled: true, number: null, campaignPrompt })).toBeNull();
  });

  it('does not screen inbound calls, calls dialed with carrier AMD, or a conversation back from a failed transfer', () => {
    expect(voicemailSetupOf({ ...outbound, direction: 'inbound', number: number(true, 'x') })).toBeNull();
    expect(voicemailSetupOf({ ...outbound, amdEnabled: true, number: number(true, 'x') })).toBeNull();
    expect(voicemailSetupOf({ ...outbound, resumed: true, number: number(true, 'x') })).toBeNull();
  });
});

describe('classifiedVerdict', () => {
  it.each([
    ['{"verdict":"voicemail"}', 'voicemail'],
    ['{"verdict":"human"}', 'human'],
    ['{"verdict":"unsure"}', 'unsure'],
    ['{"verdict":42}', 'unsure'],
    ['{}', 'unsure'],
    ['voicemail', 'unsure'],
  ])('%s → %s', (answer, expected) => expect(classifiedVerdict(answer)).toBe(expected));
});
