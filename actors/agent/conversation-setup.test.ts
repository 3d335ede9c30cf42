// The greeting a call's conversation is set up with, in every combination of
// welcome_message (or dynamic_greeting), greet_by_name and the caller's record (a name,
// none, no record): the name on file is used exactly when greet_by_name is on (issue 24;
// how the static line is worded: voice/conversation/greeting.test.ts).
import { describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS } from '../../storage/agents.ts';
import { buildSetup } from './conversation-setup.ts';

const WELCOME = 'Hello and thanks for calling Luigi’s.';
const CALLERS = [
  ['a name on file', { name: 'Marisol Quintero', preference: 'window table' }],
  ['a record without a name', { name: null, preference: 'window table' }],
  ['no record', null],
] as const;

function greetingOf(over: Partial<typeof AGENT_DEFAULTS>, caller: (typeof CALLERS)[number][1], direction: 'inbound' | 'outbound' = 'inbound') {
  return buildSetup({
    agent: { ...AGENT_DEFAULTS, welcome_message: WELCOME, ...over },
    number: null,
    caller: caller ? { ...caller } : null,
    callPrompt: null,
    direction,
    ttsProvider: 'openai',
    now: Date.UTC(2026, 10, 23, 18, 30),
  }).greeting;
}

describe('the greeting a conversation starts with', () => {
  describe.each(CALLERS)('a caller with %s', (_label, caller) => {
    const named = caller?.name != null;
    it.each([true, false])('static, greet_by_name %s', (greetByName) => {
      expect(greetingOf({ greet_by_name: greetByName, dynamic_greeting: false }, caller)).toEqual({
        mode: 'static',
        text: greetByName && named ? 'Hello Marisol Quintero, and thanks for calling Luigi’s.' : WELCOME,
      });
    });
    it.each([true, false])('made by the model, greet_by_name %s', (greetByName) => {
      for (const direction of ['inbound', 'outbound'] as const) {
        const g = greetingOf({ greet_by_name: greetByName, dynamic_greeting: true }, caller, direction);
        expect(g.mode).toBe('dynamic');
        const instruction = g.mode === 'dynamic' ? g.instruction : '';
        expect(instruction.includes('Greet them by name (Marisol Quintero).')).toBe(greetByName && named);
        expect(instruction).not.toContain(WELCOME);
      }
    });
  });
});
