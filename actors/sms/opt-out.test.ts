// The opt-out keywords of contract.md 8: the whole text, any case, spaces and punctuation around it ignored.
import { describe, expect, it } from 'vitest';
import { keywordOf } from './opt-out.ts';
import { renderTemplate } from './message-template.ts';

describe('keywordOf', () => {
  it.each(['STOP', 'stop', ' Stop. ', 'STOPALL', 'unsubscribe', 'Cancel!', 'END', 'quit'])('%j opts out', (t) => expect(keywordOf(t)).toBe('stop'));
  it.each(['START', 'start', 'Unstop', ' START! '])('%j opts in', (t) => expect(keywordOf(t)).toBe('start'));
  it.each(['please stop texting me', 'stopp', "don't stop", 'STOP NOW', 'HELP', '', 'end of story'])('%j is a text like any other', (t) => expect(keywordOf(t)).toBeNull());
});

describe('renderTemplate', () => {
  it('fills {{variables}}, missing ones empty, values that are not text as JSON', () => {
    expect(renderTemplate('Hi {{ first_name }}, {{missing}}you owe {{balance}} ({{vip}})', { first_name: 'Ada', balance: 42.5, vip: true })).toBe('Hi Ada, you owe 42.5 (true)');
    expect(renderTemplate('No placeholders {single} {{}}', null)).toBe('No placeholders {single} {{}}');
  });
});
