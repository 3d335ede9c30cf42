// The HTTP tools as the model is offered them, and the conversation with tool rounds as
// the model reads it back (the OpenAI chat format: every tool call answered, right
// after the message that made it).
import { describe, expect, it } from 'vitest';
import { AUTOMATION_TOOL, fillerText, httpTools } from './tools.ts';
import { conversationMessages, type HistoryRound as ToolRound } from './tool-history.ts';

const caller = (text: string) => ({ speaker: 'caller' as const, text });
const agent = (text: string) => ({ speaker: 'agent' as const, text });
const call = (id: string, name = 'lookup_order') => ({ id, name, arguments: '{"order_id":"42"}' });

describe('httpTools', () => {
  it('offers custom functions as given, oldest first, then the in-call webhook', () => {
    const schema = { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] };
    const tools = httpTools(
      [
        { name: 'lookup_order', url: 'https://a.example/o', description: 'Look up an order by id.', parameters: schema },
        { name: 'ping', url: 'https://a.example/p', description: null, parameters: null },
      ],
      'https://hooks.example/in-call',
    );
    expect(tools.map((t) => [t.name, t.url])).toEqual([
      ['lookup_order', 'https://a.example/o'],
      ['ping', 'https://a.example/p'],
      [AUTOMATION_TOOL, 'https://hooks.example/in-call'],
    ]);
    expect(tools[0]!.definition).toEqual({ type: 'function', function: { name: 'lookup_order', description: 'Look up an order by id.', parameters: schema } });
    expect(tools[1]!.definition.function.parameters).toEqual({ type: 'object', properties: {}, additionalProperties: false });
    expect(tools[1]!.definition.function.description).toContain('ping');
    expect(tools[2]!.definition.function.parameters).toMatchObject({ type: 'object', required: ['request'] });
  });

  it('leaves out a function named like an engine tool, and offers no in-call tool without its URL', () => {
    const tools = httpTools([{ name: 'end_call', url: 'https://a.example/x', description: null, parameters: null }], null);
    expect(tools).toEqual([]);
  });

  it('fillers: a first one, then the others in turn', () => {
    expect(fillerText(0)).toBe('One moment while I check that.');
    expect(fillerText(1)).not.toBe(fillerText(0));
    expect(fillerText(3)).toBe(fillerText(1));
  });
});

describe('conversationMessages', () => {
  it('without rounds: the lines as user and assistant messages', () => {
    expect(conversationMessages([agent('Hi'), caller('Hello')], [])).toEqual([
      { role: 'assistant', content: 'Hi' },
      { role: 'user', content: 'Hello' },
    ]);
  });

  it('a reply that said words and called a tool: one assistant message with both, then the answer', () => {
    const round: ToolRound = { at: 2, calls: [call('c1')], results: ['{"status":"shipped"}'], words: true };
    const msgs = conversationMessages([agent('Hi'), caller('Where is order 42?'), agent('Let me look.'), agent('It has shipped.')], [round]);
    expect(msgs.slice(2)).toEqual([
      { role: 'assistant', content: 'Let me look.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup_order', arguments: '{"order_id":"42"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: '{"status":"shipped"}' },
      { role: 'assistant', content: 'It has shipped.' },
    ]);
  });

  it('a reply that only called tools: the call message has no content; the continuation follows the answers', () => {
    const round: ToolRound = { at: 1, calls: [call('c1'), call('c2', 'automation_webhook')], results: ['{"a":1}', null], words: false };
    const msgs = conversationMessages([caller('Where is order 42?'), agent('It has shipped.')], [round]);
    expect(msgs.map((m) => [m.role, 'content' in m ? m.content : null])).toEqual([
      ['user', 'Where is order 42?'],
      ['assistant', null],
      ['tool', '{"a":1}'],
      ['tool', '{"error":"the tool gave no answer"}'],
      ['assistant', 'It has shipped.'],
    ]);
  });

  it('chained rounds at the same place, and a round at the very end', () => {
    const r1: ToolRound = { at: 1, calls: [call('c1')], results: ['{}'], words: false };
    const r2: ToolRound = { at: 1, calls: [call('c2')], results: ['{}'], words: false };
    const msgs = conversationMessages([caller('Q')], [r1, r2]);
    expect(msgs.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool']);
  });
});
