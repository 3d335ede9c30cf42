// What the SMS agent is told: the agent's prompt, the number's sms_prompt, the campaign
// the person replies to only while its reply window lasts, the person's record as a call
// shows it, the SMS style rules, and the conversation in order ending with the new text.
import { describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS } from '../../storage/agents.ts';
import { replyWindowCovers, smsMessages, smsReplyText, smsSystemPrompt, SMS_MAX_CHARS, SMS_THREAD_LIMIT, type SmsPromptInput } from './sms-prompt.ts';

const NOW = Date.UTC(2026, 10, 23, 18, 30);
const HOUR = 3_600_000;
const text = { id: 'msg_new', direction: 'inbound' as const, body: 'Is Friday still free?' };
const base: SmsPromptInput = {
  agent: { ...AGENT_DEFAULTS, system_prompt: 'You are the front desk of Luigi’s.' },
  smsPrompt: null,
  caller: null,
  campaign: null,
  thread: [text],
  text,
  now: NOW,
};

describe('smsSystemPrompt', () => {
  it('puts the agent’s prompt first, then the number’s sms_prompt, the campaign, the person’s record, then the SMS rules', () => {
    const prompt = smsSystemPrompt({
      ...base,
      smsPrompt: 'Answer questions about table bookings.',
      campaign: { contextPrompt: 'We invited them to the wine tasting on Friday.' },
      caller: { name: 'Ana', email: null, open_item: 'send the menu' },
    });
    const order = [
      'You are the front desk of Luigi’s.',
      'Answer questions about table bookings.',
      'replying to a text message our campaign sent them',
      'wine tasting on Friday',
      '- Name: Ana',
      '- Still open from before: send the menu',
      '## How to text',
      'no markdown',
      `never more than ${SMS_MAX_CHARS} characters`,
      'Never promise to call',
      '(UTC)',
    ];
    const at = order.map((s) => prompt.indexOf(s));
    expect(at.every((i) => i >= 0), JSON.stringify(at)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(prompt).not.toContain('Email');
  });

  it('says nothing of a campaign, a record or an sms_prompt the reply does not have', () => {
    const prompt = smsSystemPrompt({ ...base, smsPrompt: '  ' });
    expect(prompt).not.toContain('campaign');
    expect(prompt).not.toContain('## What we know');
    expect(prompt).not.toContain('## Texting on this number');
  });

  it('a campaign without a context_prompt still tells the model the person is replying to it', () => {
    expect(smsSystemPrompt({ ...base, campaign: { contextPrompt: null } })).toContain('replying to a text message our campaign sent them.');
  });
});

describe('replyWindowCovers', () => {
  it('covers a reply within the campaign’s own window and not after it; 72 hours when it has none', () => {
    const sentAt = NOW - 10 * HOUR;
    expect(replyWindowCovers(sentAt, 24, NOW)).toBe(true);
    expect(replyWindowCovers(sentAt, 10, NOW)).toBe(true);
    expect(replyWindowCovers(sentAt, 9, NOW)).toBe(false);
    expect(replyWindowCovers(NOW - 72 * HOUR, null, NOW)).toBe(true);
    expect(replyWindowCovers(NOW - 73 * HOUR, null, NOW)).toBe(false);
  });

  it('the campaign context is in the prompt inside the window and gone after it', () => {
    const sentAt = NOW - 2 * HOUR;
    const promptAt = (now: number) =>
      smsSystemPrompt({ ...base, now, campaign: replyWindowCovers(sentAt, 3, now) ? { contextPrompt: 'We invited them to the wine tasting.' } : null });
    expect(promptAt(NOW)).toContain('wine tasting');
    expect(promptAt(sentAt + 3 * HOUR + 1)).not.toContain('wine tasting');
  });
});

describe('smsMessages', () => {
  it('is the system prompt, then the thread oldest first (theirs as user, ours as assistant), ending with the new text', () => {
    const thread = [
      { id: 'm1', direction: 'outbound' as const, body: 'Join our wine tasting on Friday!' },
      { id: 'm2', direction: 'inbound' as const, body: 'What time?' },
      { id: 'm3', direction: 'outbound' as const, body: 'From 7 pm.' },
      text,
    ];
    const messages = smsMessages({ ...base, thread });
    expect(messages[0]!.role).toBe('system');
    expect(messages.slice(1)).toEqual([
      { role: 'assistant', content: 'Join our wine tasting on Friday!' },
      { role: 'user', content: 'What time?' },
      { role: 'assistant', content: 'From 7 pm.' },
      { role: 'user', content: 'Is Friday still free?' },
    ]);
  });

  it('ends with the new text even when the thread does not hold it or holds it elsewhere, and keeps only the latest messages', () => {
    const later = { id: 'm9', direction: 'outbound' as const, body: 'Anything else?' };
    expect(smsMessages({ ...base, thread: [text, later] }).slice(1)).toEqual([
      { role: 'assistant', content: 'Anything else?' },
      { role: 'user', content: 'Is Friday still free?' },
    ]);
    const long = Array.from({ length: 50 }, (_, i) => ({ id: `m${i}`, direction: 'inbound' as const, body: `text ${i}` }));
    const messages = smsMessages({ ...base, thread: long });
    expect(messages).toHaveLength(1 + SMS_THREAD_LIMIT);
    expect(messages.at(-2)).toEqual({ role: 'user', content: 'text 49' });
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'Is Friday still free?' });
  });
});

describe('smsReplyText', () => {
  it('trims, cuts to one SMS request, and has nothing to send for a blank answer', () => {
    expect(smsReplyText('  See you Friday!\n')).toBe('See you Friday!');
    expect(smsReplyText('x'.repeat(2000))).toHaveLength(SMS_MAX_CHARS);
    expect(smsReplyText(' \n ')).toBeNull();
  });
});
