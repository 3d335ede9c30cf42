// The engine's memory of a caller's last call: built from an analysis, read back from
// its stored JSON, and told to the model on the next call.
import { describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS } from '../../storage/agents.ts';
import { assemblePrompt } from '../conversation/prompt.ts';
import type { CallerRow } from '../../storage/callers.ts';
import { callerContext } from '../../actors/calls/caller-context.ts';
import { lastCallLine, lastCallOf, parseLastCall } from './caller-memory.ts';

const AT = Date.UTC(2025, 4, 6, 13, 4);

describe('last_call', () => {
  it('says when, what and how it went; unknown when the analysis failed', () => {
    expect(lastCallOf(AT, { summary: 'Booked a table.', successful: true })).toEqual({ at: '2025-05-06T13:04:00.000Z', summary: 'Booked a table.', outcome: 'successful' });
    expect(lastCallOf(AT, { summary: 'Wanted a refund.', successful: false }).outcome).toBe('unsuccessful');
    expect(lastCallOf(AT, null)).toEqual({ at: '2025-05-06T13:04:00.000Z', summary: null, outcome: 'unknown' });
  });

  it('reads back what was stored, and nothing else', () => {
    const stored = JSON.stringify(lastCallOf(AT, { summary: 'Booked.', successful: true }));
    expect(parseLastCall(stored)).toEqual({ at: '2025-05-06T13:04:00.000Z', summary: 'Booked.', outcome: 'successful' });
    for (const bad of [null, '', 'yesterday', '[]', '{"summary":"x"}']) expect(parseLastCall(bad), String(bad)).toBeNull();
  });

  it('is one sentence in the next call’s prompt, its time in the agent’s zone, with the open item', () => {
    const last = JSON.stringify(lastCallOf(AT, { summary: 'Asked for the menu by email.', successful: false }));
    expect(lastCallLine(last, (ms) => new Date(ms).toISOString())).toBe('2025-05-06T13:04:00.000Z: Asked for the menu by email. (it did not achieve its purpose)');
    expect(lastCallLine('an older free text', () => 'never')).toBe('an older free text');

    const prompt = assemblePrompt({
      agent: { ...AGENT_DEFAULTS, timezone: 'Europe/Madrid' },
      numberPrompt: null,
      callPrompt: null,
      caller: { name: 'Ana', last_call: last, open_item: 'Email the menu.' },
      direction: 'inbound',
      now: AT + 86_400_000,
    });
    expect(prompt).toContain('- Last call: Tuesday, May 6, 2025 at 3:04 PM: Asked for the menu by email. (it did not achieve its purpose)');
    expect(prompt).toContain('- Still open from before: Email the menu.');
    expect(prompt).not.toContain('"outcome"');
  });

  it('reaches the pre-call webhook as the callers API shows it: an object', () => {
    const last = lastCallOf(AT, { summary: 'Booked.', successful: true });
    const row = { name: 'Ana', email: null, phone: null, location: null, reference_id: null, preference: null, last_call: JSON.stringify(last), open_item: 'Send the menu.' } as CallerRow;
    expect(callerContext(row)).toEqual({ name: 'Ana', last_call: last, open_item: 'Send the menu.' });
  });
});
