// The conversation machine's keypad entries and tool rounds (issue 9) as a caller would
// notice them: typed digits answered like words, a tool's answer reaching the model
// in a second request, a filler while a slow tool runs (never dead air), a failure
// told to the model, and the caller heard (not cut off) while a tool runs. Driven like
// machines/conversation.test.ts: a real actor on XState's simulated clock, effects
// recorded by test/model/conversation-driver.ts, the engine's side played by hand.
import { describe, expect, it } from 'vitest';
import { FILLER_AFTER_MS, FILLER_AGAIN_MS, type ToolCall } from './conversation.ts';
import { ConversationDriver, DEFAULT_INPUT } from '../test/model/conversation-driver.ts';

const GREETING = 'Hello, this is Acme. How can I help?';
const { eagernessMs, interruptMs } = DEFAULT_INPUT;
const caller = (text: string) => ({ speaker: 'caller' as const, text });
const agent = (text: string) => ({ speaker: 'agent' as const, text });
const LOOKUP: ToolCall = { id: 'call_1', name: 'lookup_order', arguments: '{"order_id":"42"}' };

function listening(): ConversationDriver {
  const d = ConversationDriver.start({ aiSpeaksFirst: true });
  d.advance(300).send({ type: 'REPLY.AUDIO' }).advance(2_000).send({ type: 'REPLY.ENDED', heard: GREETING, complete: true });
  expect(d.value).toEqual({ listening: 'idle' });
  return d;
}

/** The caller asked; the model's answer is being prepared. */
function asked(question = 'Where is my order 42?'): ConversationDriver {
  const d = listening();
  d.say(question).advance(eagernessMs);
  expect(d.value).toEqual({ thinking: 'quiet' });
  return d;
}

/** The model named a tool and said nothing: the tool runs, nothing plays. */
function toolRunning(calls: ToolCall[] = [LOOKUP]): ConversationDriver {
  const d = asked();
  d.send({ type: 'TOOL.CALLS', calls }).send({ type: 'REPLY.ENDED', heard: '', complete: true });
  expect(d.value).toBe('waitingForTool');
  return d;
}

describe('keypad entries', () => {
  it('an entry while the caller has the floor is their turn, answered after response_eagerness', () => {
    const d = listening();
    d.send({ type: 'KEYPAD', digits: '1234#' });
    d.advance(eagernessMs - 1);
    expect(d.replies()).toEqual(['greeting']);
    d.advance(1);
    const answer = d.of('startReply').at(-1)!.request;
    expect(answer.kind).toBe('answer');
    expect(answer.lines.at(-1)).toEqual(caller('The caller pressed 1 2 3 4 # on the keypad.'));
  });

  it('an entry typed before the greeting is answered (the caller is greeted in the answer)', () => {
    const d = ConversationDriver.start({ aiSpeaksFirst: false, pickupDelayMs: 5_000 });
    d.advance(1_000).send({ type: 'KEYPAD', digits: '0' }).advance(eagernessMs);
    expect(d.of('startReply').map((e) => [e.request.kind, e.request.greeted])).toEqual([['answer', false]]);
  });

  it('joins the words of a turn still being spoken', () => {
    const d = listening();
    d.send({ type: 'SPEECH.START' }).send({ type: 'WORDS', text: 'My account number is', final: true, endOfTurn: false });
    d.send({ type: 'KEYPAD', digits: '987' });
    expect(d.replies()).toEqual(['greeting']);
    d.send({ type: 'SPEECH.END' }).advance(eagernessMs);
    expect(d.of('startReply').at(-1)!.request.lines.at(-1)).toEqual(caller('My account number is The caller pressed 9 8 7 on the keypad.'));
  });

  it('a key press over the agent interrupts it; the transcript keeps what was heard, then the entry', () => {
    const d = asked('What are my options?');
    d.advance(300).send({ type: 'REPLY.AUDIO' });
    d.onEffect = (e, drv) => {
      if (e.type === 'interruptReply') drv.actor.send({ type: 'REPLY.ENDED', heard: 'Press one for', complete: false });
    };
    d.advance(1_000).send({ type: 'KEYPAD', digits: '1' });
    expect(d.of('interruptReply')).toHaveLength(1);
    d.advance(eagernessMs);
    expect(d.recorded().slice(-3)).toEqual([caller('What are my options?'), agent('Press one for'), caller('The caller pressed 1 on the keypad.')]);
    expect(d.replies().at(-1)).toBe('answer');
  });

  it('an entry while the reply is being prepared cancels it: the next reply answers the entry too', () => {
    const d = asked();
    d.send({ type: 'KEYPAD', digits: '55' });
    expect(d.of('cancelReply')).toHaveLength(1);
    d.advance(eagernessMs);
    expect(d.of('startReply').at(-1)!.request.lines.slice(-2)).toEqual([caller('Where is my order 42?'), caller('The caller pressed 5 5 on the keypad.')]);
  });
});

describe('tool rounds', () => {
  it('runs the tools the model named and, once answered, asks the model again with the answers', () => {
    const d = toolRunning();
    expect(d.of('runTools')).toEqual([{ type: 'runTools', at: d.now, calls: [LOOKUP] }]);
    d.advance(300).send({ type: 'TOOL.DONE', id: 'call_1', result: '{"status":"shipped"}' });
    const next = d.of('startReply').at(-1)!.request;
    expect(next.kind).toBe('answer');
    expect(next.toolRounds).toEqual([{ at: 2, calls: [LOOKUP], results: ['{"status":"shipped"}'], words: false }]);
    expect(next.lines).toEqual([agent(GREETING), caller('Where is my order 42?')]);
    // The continuation plays like any reply; the round is not replied to twice.
    d.advance(300).send({ type: 'REPLY.AUDIO' }).advance(1_000).send({ type: 'REPLY.ENDED', heard: 'It has shipped.', complete: true });
    expect(d.value).toEqual({ listening: 'idle' });
    expect(d.context.toolReplyDue).toBe(false);
  });

  it('a tool that runs past FILLER_AFTER_MS gets a filler, then one every FILLER_AGAIN_MS of quiet, never a reply over a filler', () => {
    const d = toolRunning();
    d.advance(FILLER_AFTER_MS - 1);
    expect(d.replies().at(-1)).toBe('answer');
    d.advance(1);
    expect(d.replies().at(-1)).toBe('filler');
    d.advance(200).send({ type: 'REPLY.AUDIO' }).advance(1_500).send({ type: 'REPLY.ENDED', heard: 'One moment while I check that.', complete: true });
    expect(d.value).toBe('waitingForTool');
    d.advance(FILLER_AGAIN_MS);
    expect(d.replies().slice(-2)).toEqual(['filler', 'filler']);
    // The answer comes while the second filler plays: the continuation waits for it to end.
    d.advance(200).send({ type: 'REPLY.AUDIO' }).send({ type: 'TOOL.DONE', id: 'call_1', result: '{"eta":"Friday"}' });
    expect(d.replies().at(-1)).toBe('filler');
    d.advance(1_000).send({ type: 'REPLY.ENDED', heard: 'Thanks for waiting.', complete: true });
    expect(d.replies().at(-1)).toBe('answer');
    expect(d.recorded().slice(-2)).toEqual([agent('One moment while I check that.'), agent('Thanks for waiting.')]);
  });

  it('a failed tool is told to the model as an error object, and the conversation goes on', () => {
    const d = toolRunning();
    d.send({ type: 'TOOL.FAILED', id: 'call_1', error: 'timed out after 10 s' });
    expect(d.of('startReply').at(-1)!.request.toolRounds[0]!.results).toEqual(['{"error":"timed out after 10 s"}']);
  });

  it('waits for every call of a round; late or unknown answers change nothing', () => {
    const second: ToolCall = { id: 'call_2', name: 'automation_webhook', arguments: '{}' };
    const d = toolRunning([LOOKUP, second]);
    d.send({ type: 'TOOL.DONE', id: 'call_9', result: '{}' }).send({ type: 'TOOL.DONE', id: 'call_2', result: '{"b":2}' });
    expect(d.value).toBe('waitingForTool');
    d.send({ type: 'TOOL.DONE', id: 'call_1', result: '{"a":1}' });
    expect(d.of('startReply').at(-1)!.request.toolRounds[0]!.results).toEqual(['{"a":1}', '{"b":2}']);
    d.send({ type: 'TOOL.DONE', id: 'call_1', result: '{"a":"late"}' });
    expect(d.context.toolRounds[0]!.results).toEqual(['{"a":1}', '{"b":2}']);
  });

  it('words the model said before its tool call play first; the round sits after them', () => {
    const d = asked();
    d.advance(200).send({ type: 'REPLY.AUDIO' }).send({ type: 'TOOL.CALLS', calls: [LOOKUP] });
    d.advance(100).send({ type: 'TOOL.DONE', id: 'call_1', result: '{"status":"shipped"}' });
    expect(d.replies().at(-1)).toBe('answer');
    expect(d.of('startReply')).toHaveLength(2);
    d.advance(1_000).send({ type: 'REPLY.ENDED', heard: 'Let me look that up.', complete: true });
    const next = d.of('startReply').at(-1)!.request;
    expect(d.of('startReply')).toHaveLength(3);
    expect(next.lines.at(-1)).toEqual(agent('Let me look that up.'));
    expect(next.toolRounds[0]).toMatchObject({ at: 2, words: true });
  });

  it('barge-in while a tool runs: no filler over the caller, their words are answered with the tool’s answer in view', () => {
    const d = toolRunning();
    d.advance(500).send({ type: 'SPEECH.START' }).advance(FILLER_AFTER_MS);
    expect(d.replies().at(-1)).toBe('answer'); // no filler while they speak
    d.send({ type: 'WORDS', text: 'Also, can I change the address?', final: true, endOfTurn: false });
    d.send({ type: 'TOOL.DONE', id: 'call_1', result: '{"status":"packing"}' });
    expect(d.value).toEqual({ listening: 'hearing' });
    d.send({ type: 'SPEECH.END' }).advance(eagernessMs);
    const next = d.of('startReply').at(-1)!.request;
    expect(next.kind).toBe('answer');
    expect(next.lines.at(-1)).toEqual(caller('Also, can I change the address?'));
    expect(next.toolRounds[0]!.results).toEqual(['{"status":"packing"}']);
    expect(d.context.toolReplyDue).toBe(false);
  });

  it('a caller turn that ends while the tool runs is kept, and answered once the tool answers', () => {
    const d = toolRunning();
    d.advance(100).say('Hello?').advance(eagernessMs);
    expect(d.value).toBe('waitingForTool');
    expect(d.replies().at(-1)).toBe('answer');
    d.send({ type: 'TOOL.DONE', id: 'call_1', result: '{}' }).advance(eagernessMs);
    const next = d.of('startReply').at(-1)!.request;
    expect(next.lines.at(-1)).toEqual(caller('Hello?'));
    expect(next.toolRounds[0]!.results).toEqual(['{}']);
  });

  it('a caller whose turn ended while a tool runs hears a filler once they are quiet', () => {
    const d = toolRunning();
    d.advance(100).say('Hello?');
    d.advance(FILLER_AFTER_MS);
    expect(d.replies().at(-1)).toBe('filler');
  });

  it('a filler cut short by the caller still leads back to the tool’s answer', () => {
    const d = toolRunning();
    d.advance(FILLER_AFTER_MS).advance(100).send({ type: 'REPLY.AUDIO' });
    d.onEffect = (e, drv) => {
      if (e.type === 'interruptReply') drv.actor.send({ type: 'REPLY.ENDED', heard: 'One moment', complete: false });
    };
    d.send({ type: 'SPEECH.START' }).advance(interruptMs).send({ type: 'WORDS', text: 'no rush', final: true, endOfTurn: false });
    d.send({ type: 'SPEECH.END' }).advance(eagernessMs);
    expect(d.value).toBe('waitingForTool');
    d.send({ type: 'TOOL.DONE', id: 'call_1', result: '{"ok":true}' });
    const next = d.of('startReply').at(-1)!.request;
    expect(next.lines.slice(-2)).toEqual([agent('One moment'), caller('no rush')]);
  });

  it('noise over a tool’s wait with no words after it: the model continues from the answer once the words are clearly not coming', () => {
    const d = toolRunning();
    d.advance(200).send({ type: 'SPEECH.START' }).send({ type: 'TOOL.DONE', id: 'call_1', result: '{}' });
    expect(d.value).toEqual({ listening: 'hearing' });
    d.advance(300).send({ type: 'SPEECH.END' });
    expect(d.value).toEqual({ listening: 'waitingForWords' });
    d.advance(DEFAULT_INPUT.resumeAfterMs - 1);
    expect(d.replies().at(-1)).toBe('answer');
    expect(d.of('startReply')).toHaveLength(2);
    d.advance(1);
    expect(d.of('startReply')).toHaveLength(3);
    expect(d.of('startReply').at(-1)!.request.lines.at(-1)).toEqual(caller('Where is my order 42?'));
  });

  it('words that come just after the caller stops, the tool already answered, are answered with it', () => {
    const d = toolRunning();
    d.advance(200).send({ type: 'SPEECH.START' }).send({ type: 'TOOL.DONE', id: 'call_1', result: '{}' });
    d.advance(600).send({ type: 'SPEECH.END' }).advance(250).send({ type: 'WORDS', text: 'And the other one?', final: true, endOfTurn: true });
    d.advance(eagernessMs);
    const next = d.of('startReply').at(-1)!.request;
    expect(next.lines.at(-1)).toEqual(caller('And the other one?'));
    expect(next.toolRounds[0]!.results).toEqual(['{}']);
  });

  it('a reply that fails after naming its tools is not asked again: the tools’ answers carry on', () => {
    const d = asked();
    d.send({ type: 'TOOL.CALLS', calls: [LOOKUP] }).send({ type: 'REPLY.FAILED', provider: 'tts', retryable: true });
    expect(d.value).toBe('waitingForTool');
    expect(d.of('startReply')).toHaveLength(2);
    d.send({ type: 'TOOL.DONE', id: 'call_1', result: '{}' });
    expect(d.of('startReply')).toHaveLength(3);
  });

  it('persist and restore while a tool runs keeps the round', () => {
    const d = toolRunning();
    d.restore();
    expect(d.value).toBe('waitingForTool');
    d.send({ type: 'TOOL.DONE', id: 'call_1', result: '{"x":1}' });
    expect(d.of('startReply').at(-1)!.request.toolRounds[0]!.results).toEqual(['{"x":1}']);
  });
});
