// Which calls the voicemail screen runs on and with what message (the number's own
// setting, the agent's for a number an operator added, or for a batch campaign's call one
// the model writes from its prompt), and how
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

  it('a number an operator added takes the agent’s setting while its own is null (contract.md 5); its own wins; an API number never takes it', () => {
    const agent = { voicemail_leave_enabled: true, voicemail_message: 'This is the agent’s message.' };
    const dashboard = (leave: boolean | null, message: string | null) => ({ ...number(leave, message), source: 'dashboard' as const });
    expect(voicemailSetupOf({ ...outbound, number: dashboard(null, null), agent })).toEqual({ message: agent.voicemail_message });
    expect(voicemailSetupOf({ ...outbound, number: dashboard(true, 'Call us back.'), agent })).toEqual({ message: 'Call us back.' });
    expect(voicemailSetupOf({ ...outbound, number: dashboard(false, null), agent })).toEqual({ message: null });
    expect(voicemailSetupOf({ ...outbound, number: { ...number(null, null), source: 'api' }, agent })).toEqual({ message: null });
    // The agent's message wins over one the model would write for a campaign's call.
    expect(voicemailSetupOf({ ...outbound, number: dashboard(null, null), agent, campaignPrompt: 'Remind them.' })).toEqual({ message: agent.voicemail_message });
    // The agent's false (every agent's default) reads as unset: a campaign's call still leaves a message.
    const off = { voicemail_leave_enabled: false, voicemail_message: null };
    expect(voicemailSetupOf({ ...outbound, number: dashboard(null, null), agent: off, campaignPrompt: 'Remind them.' })).toEqual({ message: null, compose: 'Remind them.' });
    expect(voicemailSetupOf({ ...outbound, number: dashboard(null, null), agent: off })).toEqual({ message: null });
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
