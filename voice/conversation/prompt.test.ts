// What the model is told: every source of the prompt in its place, the standing
// instructions following the agent's settings, and the model-made greeting by name (the
// static one: greeting.test.ts).
import { describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS } from '../../storage/agents.ts';
import { assemblePrompt, greetingInstruction, RESPONSE_LENGTH } from './prompt.ts';

const NOW = Date.UTC(2026, 10, 23, 18, 30);
const base = { agent: AGENT_DEFAULTS, numberPrompt: null, callPrompt: null, caller: null, direction: 'inbound' as const, now: NOW };

describe('assemblePrompt', () => {
  it('puts the agent prompt first, then the number’s, the call’s, the recipient’s and the caller’s, then the standing instructions', () => {
    const text = assemblePrompt({
      ...base,
      agent: { ...AGENT_DEFAULTS, system_prompt: 'You are Luigi’s host.' },
      numberPrompt: 'This line is the Soho branch.',
      callPrompt: 'Remind Ana of her booking.',
      recipientVars: { company: 'Acme', empty: ' ' },
      caller: { name: 'Ana', email: null, open_item: 'send the menu' },
      direction: 'outbound',
    });
    const order = ['You are Luigi’s host.', 'Soho branch', 'You placed this call. Remind Ana', '- company: Acme', '- Name: Ana', '- Still open from before: send the menu', '## How to talk'];
    const at = order.map((s) => text.indexOf(s));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(text).not.toContain('empty');
    expect(text).not.toContain('Email');
  });

  it('follows the settings: length, language, texting, ending the call, transfers only when asked, the date in the agent’s zone', () => {
    const off = assemblePrompt({ ...base, agent: { ...AGENT_DEFAULTS, response_length: 'long', language: 'de', incall_sms_enabled: false, func_end_call: false, timezone: 'Europe/Berlin' } });
    expect(off).toContain(RESPONSE_LENGTH.long.instruction);
    expect(off).toContain('Speak German.');
    expect(off).toContain('never promise a text');
    expect(off).toContain('Never end the call yourself');
    expect(off).toContain('unless the instructions above ask for transfers');
    expect(off).toContain('7:30 PM (Europe/Berlin)');
    const on = assemblePrompt({ ...base, agent: { ...AGENT_DEFAULTS, language: 'multi', incall_sms_enabled: true, func_end_call: true, timezone: 'Not/AZone' } });
    expect(on).toContain('Reply in the language the caller speaks.');
    expect(on).toContain('You may offer to send the caller a text message');
    expect(on).toContain('call the end_call tool');
    expect(on).toContain('(UTC)');
  });
});

describe('greetings', () => {
  it('asks the model for a greeting that fits the direction and the name', () => {
    expect(greetingInstruction('inbound', true, 'Maria')).toMatch(/connected.*Greet them by name \(Maria\)/);
    expect(greetingInstruction('outbound', false, 'Maria')).toMatch(/answered.*why you are calling\.$/);
  });
});
