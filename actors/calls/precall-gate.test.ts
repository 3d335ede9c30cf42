// The pre-call gate's pure parts: the answer schema (what counts as a decision) and the
// call prompt built from custom_prompt and dynamic_vars. The gate itself is tested end to
// end through both carriers in test/precall.test.ts.
import { describe, expect, it } from 'vitest';
import { precallAnswerSchema, precallPrompt } from './precall-gate.ts';

describe('the pre-call answer', () => {
  it.each([
    [{ action: 'allow' }],
    [{ action: 'reject', extra_field: 1 }],
    [{ action: 'transfer', transfer_number: '+14155550123' }],
    [{ action: 'allow', custom_prompt: null, dynamic_vars: null, transfer_number: null }],
    [{ action: 'allow', dynamic_vars: { n: 3, vip: true, name: 'Ann' } }],
  ])('accepts %j', (answer) => {
    expect(precallAnswerSchema.safeParse(answer).success).toBe(true);
  });

  it.each([
    [{}],
    [{ action: 'ALLOW' }],
    [{ action: 'transfer' }],
    [{ action: 'transfer', transfer_number: '4155550123' }],
    [{ action: 'allow', custom_prompt: 42 }],
    [{ action: 'allow', dynamic_vars: { nested: { a: 1 } } }],
    [{ action: 'allow', dynamic_vars: ['a'] }],
    [[{ action: 'allow' }]],
  ])('refuses %j', (answer) => {
    expect(precallAnswerSchema.safeParse(answer).success).toBe(false);
  });

  it('turns variable values into text', () => {
    const parsed = precallAnswerSchema.parse({ action: 'allow', dynamic_vars: { n: 3, vip: true } });
    expect(parsed.dynamic_vars).toEqual({ n: '3', vip: 'true' });
  });
});

describe('the call prompt of a pre-call answer', () => {
  it('fills {name} from dynamic_vars and lists the variables the prompt does not name', () => {
    expect(precallPrompt(' Greet {first} warmly; {unknown} stays. ', { first: 'Ann', tier: 'gold' })).toBe(
      'Greet Ann warmly; {unknown} stays.\n\nDetails about the caller:\n- tier: gold',
    );
  });

  it('variables alone are listed; nothing at all is no prompt', () => {
    expect(precallPrompt(null, { tier: 'gold' })).toBe('Details about the caller:\n- tier: gold');
    expect(precallPrompt('  ', {})).toBeNull();
    expect(precallPrompt(null, {})).toBeNull();
  });
});
