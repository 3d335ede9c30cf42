// The transfer tool's rule and its resolution: offered only when the developer's prompt
// asks for transfers and there is somewhere to send the caller; a number the model
// names must be transfer_number or one the prompt wrote (libphonenumber-js decides what
// a valid number is); the briefing a warm transfer's model writes.
import { describe, expect, it } from 'vitest';
import { asksForTransfers, numbersIn, resolveTransfer, transferFailedNote, transferPolicy, transferTool, MAX_BRIEFING, type TransferSettings } from './transfer-tool.ts';

const cold: TransferSettings = { transfer_type: 'cold', transfer_number: '+12125550188', transfer_whisper: null };

describe('when the tool is offered', () => {
  it('the prompt mentions transferring, in any form of the word', () => {
    for (const p of ['Transfer the caller to sales.', 'Callers may be transferred.', 'You handle transfers.', 'If they insist, try TRANSFERRING them.']) {
      expect(asksForTransfers([p])).toBe(true);
    }
    for (const p of ['Transform their request into a booking.', 'You book tables.', '', null, undefined]) expect(asksForTransfers([p])).toBe(false);
    // Any of the developer's prompts: the agent's, the number's, the call's.
    expect(asksForTransfers(['You book tables.', null, 'Transfer VIPs to the manager.'])).toBe(true);
  });

  it('needs somewhere to send the caller: transfer_number, or a number the prompt writes', () => {
    expect(transferPolicy(cold, ['You book tables.'])).toBeNull();
    expect(transferPolicy({ ...cold, transfer_number: null }, ['Transfer angry callers.'])).toBeNull();
    expect(transferPolicy(cold, ['Transfer angry callers.'])).toEqual({ mode: 'cold', defaultNumber: '+12125550188', allowed: ['+12125550188'], whisper: null });
    // The prompt's only number is the default when there is no transfer_number.
    expect(transferPolicy({ ...cold, transfer_number: null }, ['Transfer billing calls to +1 (212) 555-0177.'])).toMatchObject({ defaultNumber: '+12125550177', allowed: ['+12125550177'] });
    // Several: allowed, no default (the model must name one).
    const two = transferPolicy({ ...cold, transfer_number: null }, ['Transfer sales to +12125550166 and support to +44 20 7183 8750.']);
    expect(two).toMatchObject({ defaultNumber: null, allowed: ['+12125550166', '+442071838750'] });
    // Numbers that are not valid are not destinations.
    expect(numbersIn('Call +15550000001 or +1 212 555 0188.')).toEqual(['+12125550188']);
  });

  it('a warm transfer without transfer_whisper asks the model for a briefing; without a default the number is required', () => {
    const warm = transferPolicy({ ...cold, transfer_type: 'warm' }, ['Transfer when asked.'])!;
    const tool = transferTool(warm);
    expect(tool.function.name).toBe('transfer_call');
    expect(Object.keys(tool.function.parameters['properties'] as object)).toEqual(['number', 'briefing']);
    expect(tool.function.parameters['required']).toBeUndefined();
    const given = transferPolicy({ ...cold, transfer_type: 'warm', transfer_whisper: '  A refund.  ' }, ['Transfer when asked.'])!;
    expect(given.whisper).toBe('A refund.');
    expect(Object.keys(transferTool(given).function.parameters['properties'] as object)).toEqual(['number']);
    const noDefault = transferPolicy({ ...cold, transfer_number: null }, ['Transfer to +12125550166 or +12125550177.'])!;
    expect(transferTool(noDefault).function.parameters['required']).toEqual(['number']);
  });
});

describe('resolving a call of the tool', () => {
  const policy = transferPolicy(cold, ['Transfer billing questions to +1 212-555-0177.'])!;

  it('no number: transfer_number; a number the prompt gave, in any notation, as E.164', () => {
    expect(resolveTransfer(policy, '{}')).toEqual({ ok: true, to: '+12125550188', briefing: null });
    expect(resolveTransfer(policy, '')).toEqual({ ok: true, to: '+12125550188', briefing: null });
    expect(resolveTransfer(policy, JSON.stringify({ number: '+1 (212) 555-0177' }))).toEqual({ ok: true, to: '+12125550177', briefing: null });
  });

  it('refuses a number the prompt does not give, or one that is not a phone number', () => {
    expect(resolveTransfer(policy, JSON.stringify({ number: '+13105550123' }))).toEqual({ ok: false, why: '+13105550123 is not a number you may transfer to' });
    expect(resolveTransfer(policy, JSON.stringify({ number: '911' }))).toEqual({ ok: false, why: '911 is not a valid phone number' });
    const noDefault = transferPolicy({ ...cold, transfer_number: null }, ['Transfer to +12125550166 or +12125550177.'])!;
    expect(resolveTransfer(noDefault, '{}')).toEqual({ ok: false, why: 'no number to transfer to was given' });
  });

  it('unreadable arguments count as none; a briefing is kept, trimmed and bounded', () => {
    expect(resolveTransfer(policy, '{"number": ')).toEqual({ ok: true, to: '+12125550188', briefing: null });
    expect(resolveTransfer(policy, JSON.stringify({ briefing: '  Maria, order 1042.  ' }))).toMatchObject({ briefing: 'Maria, order 1042.' });
    const long = resolveTransfer(policy, JSON.stringify({ briefing: 'x'.repeat(2000) }));
    expect(long.ok && long.briefing!.length).toBe(MAX_BRIEFING);
  });

  it('tells the model why a transfer failed', () => {
    expect(transferFailedNote('busy')).toContain('the line was busy');
    expect(transferFailedNote('no-answer')).toContain('nobody answered');
    expect(transferFailedNote('+13105550123 is not a number you may transfer to')).toContain('+13105550123 is not a number you may transfer to');
  });
});
