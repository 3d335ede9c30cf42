// The conversation machine as a caller would notice it: when the agent greets, when it
// answers, when it stops for the caller and when it carries on, when the call ends and
// what the transcript says. The machine runs as a real actor on XState's simulated
// clock; its effects are recorded by test/model/conversation-driver.ts (an injected
// implementation of the engine's actions), and the engine's side (the reply's first
// audio, its end, its failures) is played by hand as actors/agent/agent-engine.ts would send it.
import { describe, expect, it } from 'vitest';
import { isBackchannel, type ConversationInput } from './conversation.ts';
import { BACKCHANNEL_CLAIM_MS } from './barge-in.ts';
import { ConversationDriver, DEFAULT_INPUT } from '../test/model/conversation-driver.ts';

const GREETING = 'Hello, this is Acme. How can I help?';
const ANSWER = 'Sure, I can book a table for you. For how many people?';
const { eagernessMs, interruptMs, silenceHangupMs, resumeAfterMs } = DEFAULT_INPUT;

const caller = (text: string) => ({ speaker: 'caller' as const, text });
const agent = (text: string) => ({ speaker: 'agent' as const, text });

/** The agent greeted at once and the greeting played to the end: the caller has the floor. */
function listening(over: Partial<ConversationInput> = {}): ConversationDriver {
  const d = ConversationDriver.start({ aiSpeaksFirst: true, ...over });
  expect(d.replies()).toEqual(['greeting']);
  d.advance(300).send({ type: 'REPLY.AUDIO' }).advance(3_000).send({ type: 'REPLY.ENDED', heard: GREETING, complete: true });
  expect(d.value).toEqual({ listening: 'idle' });
  return d;
}

/** Listening, then the caller said `text` and the answer is being prepared. */
function thinking(text = 'I would like to book a table', over: Partial<ConversationInput> = {}): ConversationDriver {
  const d = listening(over);
  d.say(text).advance(d.input.eagernessMs);
  expect(d.replies().at(-1)).toBe('answer');
  expect(d.value).toEqual({ thinking: 'quiet' });
  return d;
}

/** The answer's first audio went out: the agent speaks. */
function speaking(over: Partial<ConversationInput> = {}): ConversationDriver {
  const d = thinking(undefined, over);
  d.advance(400).send({ type: 'REPLY.AUDIO' });
  expect(d.value).toEqual({ speaking: 'playing' });
  return d;
}

/** The caller has talked over the agent past the threshold: playback is paused. */
function paused(): ConversationDriver {
  const d = speaking();
  d.send({ type: 'SPEECH.START' }).advance(interruptMs);
  expect(d.value).toEqual({ speaking: 'paused' });
  return d;
}

/** Whether the playout is paused now, from the pause/resume effects so far. */
const playbackPaused = (d: ConversationDriver) => d.of('pausePlayback', 'resumePlayback').at(-1)?.type === 'pausePlayback';

describe('greeting', () => {
  it('with ai_speaks_first the agent greets the moment the line opens', () => {
    const d = ConversationDriver.start({ aiSpeaksFirst: true });
    expect(d.of('startReply')).toEqual([{ type: 'startReply', at: 0, request: { kind: 'greeting', lines: [], greeted: false, toolRounds: [] } }]);
  });

  it('otherwise it greets after pickup_delay', () => {
    const d = ConversationDriver.start({ aiSpeaksFirst: false, pickupDelayMs: 5_000 });
    d.advance(4_999);
    expect(d.replies()).toEqual([]);
    d.advance(1);
    expect(d.of('startReply').map((e) => [e.request.kind, e.at])).toEqual([['greeting', 5_000]]);
  });

  it('a caller who speaks before pickup_delay is answered (greeted in the answer), never greeted on its own', () => {
    const d = ConversationDriver.start({ aiSpeaksFirst: false, pickupDelayMs: 5_000 });
    d.advance(1_000).say('hello, is anyone there?');
    const wordsAt = d.now;
    d.advance(eagernessMs);
    expect(d.of('startReply').map((e) => [e.request.kind, e.at, e.request.greeted])).toEqual([['answer', wordsAt + eagernessMs, false]]);
    d.advance(400).send({ type: 'REPLY.AUDIO' }).advance(2_000).send({ type: 'REPLY.ENDED', heard: 'Hi, this is Acme. How can I help?', complete: true });
    d.advance(20_000);
    expect(d.replies()).toEqual(['answer']);
    expect(d.recorded()).toEqual([caller('hello, is anyone there?'), agent('Hi, this is Acme. How can I help?')]);
  });
});

describe('end of turn', () => {
  it('the agent answers exactly response_eagerness after the final words, with the conversation so far', () => {
    const d = listening();
    d.say('I would like to book a table');
    const wordsAt = d.now;
    d.advance(eagernessMs - 1);
    expect(d.replies()).toEqual(['greeting']);
    d.advance(1);
    const answer = d.of('startReply').at(-1)!;
    expect(answer.at).toBe(wordsAt + eagernessMs);
    expect(answer.request).toEqual({ kind: 'answer', lines: [agent(GREETING), caller('I would like to book a table')], greeted: true, toolRounds: [] });
  });

  it('with response_eagerness 0 it answers the moment the words are final', () => {
    const d = listening({ eagernessMs: 0 });
    d.say('what time do you open?');
    const wordsAt = d.now;
    d.advance(0);
    expect(d.of('startReply').at(-1)).toMatchObject({ at: wordsAt, request: { kind: 'answer' } });
  });

  it('not if the caller resumes speaking meanwhile: their next words join the turn', () => {
    const d = listening();
    d.say('I would like');
    d.advance(100).send({ type: 'SPEECH.START' }).advance(1_000);
    expect(d.replies()).toEqual(['greeting']);
    d.send({ type: 'SPEECH.END' }).send({ type: 'WORDS', text: 'a table for two', final: true, endOfTurn: true });
    const wordsAt = d.now;
    d.advance(eagernessMs);
    const answer = d.of('startReply').at(-1)!;
    expect([answer.request.kind, answer.at]).toEqual(['answer', wordsAt + eagernessMs]);
    expect(d.recorded()).toEqual([agent(GREETING), caller('I would like a table for two')]);
  });

  it('more final words restart the wait', () => {
    const d = listening();
    d.say('a table');
    d.advance(150).send({ type: 'WORDS', text: 'for two', final: true, endOfTurn: true });
    const lastWordsAt = d.now;
    d.advance(eagernessMs - 1);
    expect(d.replies()).toEqual(['greeting']);
    d.advance(1);
    expect(d.of('startReply').at(-1)!.at).toBe(lastWordsAt + eagernessMs);
    expect(d.context.lines.at(-1)).toEqual(caller('a table for two'));
  });

  it('an empty final or the recogniser’s utterance end does not push the answer back', () => {
    const d = listening();
    d.say('a table for two');
    const wordsAt = d.now;
    d.advance(100).send({ type: 'WORDS', text: '', final: true, endOfTurn: true });
    d.advance(50).send({ type: 'UTTERANCE.END' });
    d.advance(eagernessMs - 150);
    expect(d.of('startReply').at(-1)).toMatchObject({ at: wordsAt + eagernessMs, request: { kind: 'answer' } });
  });

  it('speech that ends before its words waits for them (no answer, no fallback)', () => {
    const d = listening();
    d.send({ type: 'SPEECH.START' }).advance(800).send({ type: 'SPEECH.END' }).advance(1_500);
    expect(d.replies()).toEqual(['greeting']);
    d.send({ type: 'WORDS', text: 'do you have vegan options', final: true, endOfTurn: true });
    d.advance(eagernessMs);
    expect(d.replies()).toEqual(['greeting', 'answer']);
  });

  it('final words while the caller still speaks are answered once they stop', () => {
    const d = listening();
    d.send({ type: 'SPEECH.START' }).advance(500).send({ type: 'WORDS', text: 'hello', final: true, endOfTurn: false });
    d.advance(2_000);
    expect(d.replies()).toEqual(['greeting']);
    d.send({ type: 'SPEECH.END' });
    const endAt = d.now;
    d.advance(eagernessMs);
    expect(d.of('startReply').at(-1)).toMatchObject({ at: endAt + eagernessMs, request: { kind: 'answer' } });
  });

  it('the recogniser’s utterance end closes a turn whose words are final', () => {
    const d = listening();
    d.send({ type: 'SPEECH.START' }).advance(500).send({ type: 'WORDS', text: 'hello', final: true, endOfTurn: false });
    d.advance(1_000).send({ type: 'UTTERANCE.END' });
    const at = d.now;
    d.advance(eagernessMs);
    expect(d.of('startReply').at(-1)).toMatchObject({ at: at + eagernessMs, request: { kind: 'answer' } });
  });

  it('interim words never reach the transcript, the context or the prompt', () => {
    const d = listening();
    d.send({ type: 'SPEECH.START' }).send({ type: 'WORDS', text: 'book a cable', final: false, endOfTurn: false });
    d.advance(600).send({ type: 'SPEECH.END' }).send({ type: 'WORDS', text: 'book a table', final: true, endOfTurn: true });
    expect(JSON.stringify(d.context)).not.toContain('cable');
    d.advance(eagernessMs);
    expect(JSON.stringify(d.effects)).not.toContain('cable');
    expect(d.context.lines.at(-1)).toEqual(caller('book a table'));
  });
});

describe('barge-in', () => {
  it('speech over the agent shorter than the threshold changes nothing', () => {
    const d = speaking();
    const before = d.effects.length;
    d.send({ type: 'SPEECH.START' }).send({ type: 'WORDS', text: 'so', final: false, endOfTurn: false });
    d.advance(interruptMs - 1).send({ type: 'SPEECH.END' }).advance(5_000);
    expect(d.typesSince(before)).toEqual([]);
    expect(d.value).toEqual({ speaking: 'playing' });
    d.send({ type: 'REPLY.ENDED', heard: ANSWER, complete: true });
    expect(d.context.lines.at(-1)).toEqual(agent(ANSWER));
  });

  it('longer speech pauses the agent; real words then interrupt it and the transcript keeps what was heard', () => {
    const d = speaking();
    d.send({ type: 'SPEECH.START' });
    const startAt = d.now;
    d.advance(interruptMs - 1);
    expect(d.of('pausePlayback')).toEqual([]);
    d.advance(1);
    expect(d.of('pausePlayback').map((e) => e.at)).toEqual([startAt + interruptMs]);
    expect(d.of('interruptReply')).toEqual([]);
    d.advance(300).send({ type: 'WORDS', text: 'wait, actually', final: false, endOfTurn: false });
    expect(d.of('interruptReply')).toHaveLength(1);
    expect(d.value).toEqual({ listening: 'hearing' });
    // The engine cuts the reply and reports what the caller heard of it.
    d.send({ type: 'REPLY.ENDED', heard: 'Sure, I can book', complete: false });
    d.advance(700).send({ type: 'SPEECH.END' }).send({ type: 'WORDS', text: 'actually make it three people', final: true, endOfTurn: true });
    d.advance(eagernessMs);
    expect(d.recorded().slice(-3)).toEqual([caller('I would like to book a table'), agent('Sure, I can book'), caller('actually make it three people')]);
    expect(d.of('startReply').at(-1)!.request.lines).toEqual(d.recorded());
  });

  it('real words heard during the overlap interrupt the moment the threshold is reached', () => {
    const d = speaking();
    d.send({ type: 'SPEECH.START' });
    const startAt = d.now;
    d.advance(200).send({ type: 'WORDS', text: 'hold on', final: false, endOfTurn: false });
    d.advance(interruptMs - 201);
    expect(d.of('pausePlayback', 'interruptReply')).toEqual([]);
    d.advance(1);
    expect(d.of('pausePlayback', 'interruptReply').map((e) => [e.type, e.at])).toEqual([
      ['pausePlayback', startAt + interruptMs],
      ['interruptReply', startAt + interruptMs],
    ]);
  });

  it.each(['uh-huh', 'okay', 'yeah'])('a backchannel (%s) resumes the agent where it paused, and is no line of its own', (word) => {
    const d = paused();
    d.advance(300).send({ type: 'WORDS', text: word, final: true, endOfTurn: false });
    // The caller's speech is settled as a backchannel while voice activity still hears it.
    expect(d.value).toEqual({ speaking: 'acknowledged' });
    expect(playbackPaused(d)).toBe(false);
    expect(d.of('interruptReply')).toEqual([]);
    d.send({ type: 'SPEECH.END' });
    expect(d.value).toEqual({ speaking: 'playing' });
    d.advance(2_000).send({ type: 'REPLY.ENDED', heard: ANSWER, complete: true });
    expect(d.recorded().slice(-2)).toEqual([caller('I would like to book a table'), agent(ANSWER)]);
  });

  // Issue 24: voice activity and the recogniser's final come in either order; the pause
  // must not depend on it (machines/barge-in.ts). A 0.4 s "uh-huh" keeps voice activity
  // on for ~0.95 s (its end comes 550 ms after the last sound), past the threshold.
  it('a final backchannel before the threshold cancels the pause, however long voice activity stays on', () => {
    const d = speaking();
    d.send({ type: 'SPEECH.START' }).advance(interruptMs - 50);
    d.send({ type: 'WORDS', text: 'Uh-huh.', final: true, endOfTurn: true });
    expect(d.value).toEqual({ speaking: 'acknowledged' });
    d.advance(resumeAfterMs + interruptMs);
    expect(d.of('pausePlayback', 'interruptReply', 'cancelReply')).toEqual([]);
    d.send({ type: 'SPEECH.END' });
    expect(d.value).toEqual({ speaking: 'playing' });
    // The next speech is judged afresh.
    d.send({ type: 'SPEECH.START' }).advance(interruptMs);
    expect(playbackPaused(d)).toBe(true);
  });

  it('a final backchannel before voice activity reports the speech (it runs behind) settles the speech that follows', () => {
    const d = speaking();
    d.send({ type: 'WORDS', text: 'Uh-huh.', final: true, endOfTurn: true });
    expect(d.value).toEqual({ speaking: 'acknowledgedAhead' });
    d.advance(BACKCHANNEL_CLAIM_MS - 1).send({ type: 'SPEECH.START' }).advance(interruptMs + 500);
    expect(d.of('pausePlayback')).toEqual([]);
    d.send({ type: 'SPEECH.END' });
    expect(d.value).toEqual({ speaking: 'playing' });
  });

  it('a final backchannel claims no speech that starts BACKCHANNEL_CLAIM_MS or more after it', () => {
    const d = speaking();
    d.send({ type: 'WORDS', text: 'Okay.', final: true, endOfTurn: true }).advance(BACKCHANNEL_CLAIM_MS);
    expect(d.value).toEqual({ speaking: 'playing' });
    d.send({ type: 'SPEECH.START' }).advance(interruptMs);
    expect(playbackPaused(d)).toBe(true);
  });

  it('interim words that are only a backchannel hold the pause at the threshold; real words then pause and interrupt at once', () => {
    const d = speaking();
    d.send({ type: 'SPEECH.START' }).advance(250).send({ type: 'WORDS', text: 'Yeah,', final: false, endOfTurn: false });
    d.advance(250).send({ type: 'WORDS', text: 'Yeah, okay', final: false, endOfTurn: false });
    d.advance(interruptMs);
    expect(d.of('pausePlayback')).toEqual([]);
    expect(d.value).toEqual({ speaking: { overlap: 'lasted' } });
    d.send({ type: 'WORDS', text: 'Yeah, okay, but what about Sunday', final: false, endOfTurn: false });
    expect(d.of('pausePlayback', 'interruptReply').map((e) => e.type)).toEqual(['pausePlayback', 'interruptReply']);
    expect(d.value).toEqual({ listening: 'hearing' });
  });

  it('held at the threshold, the final backchannel settles the speech', () => {
    const d = speaking();
    d.send({ type: 'SPEECH.START' }).advance(300).send({ type: 'WORDS', text: 'Yeah, okay', final: false, endOfTurn: false });
    d.advance(interruptMs).send({ type: 'WORDS', text: 'Yeah, okay.', final: true, endOfTurn: true });
    expect(d.value).toEqual({ speaking: 'acknowledged' });
    d.advance(resumeAfterMs).send({ type: 'SPEECH.END' });
    expect(d.of('pausePlayback', 'interruptReply')).toEqual([]);
  });

  it('real words after a backchannel are speech of their own: they pause the agent once they have lasted the threshold', () => {
    const d = speaking();
    d.send({ type: 'SPEECH.START' }).advance(400).send({ type: 'WORDS', text: 'Okay.', final: true, endOfTurn: true });
    d.advance(300).send({ type: 'WORDS', text: 'wait, which day', final: false, endOfTurn: false });
    const wordsAt = d.now;
    expect(d.value).toEqual({ speaking: { overlap: 'short' } });
    d.advance(interruptMs);
    expect(d.of('pausePlayback', 'interruptReply').map((e) => [e.type, e.at])).toEqual([
      ['pausePlayback', wordsAt + interruptMs],
      ['interruptReply', wordsAt + interruptMs],
    ]);
  });

  it('real words heard once are not undone by a backchannel after them: the threshold still pauses and interrupts', () => {
    const d = speaking();
    d.send({ type: 'SPEECH.START' }).send({ type: 'WORDS', text: 'Stop, stop', final: false, endOfTurn: false });
    d.advance(200).send({ type: 'WORDS', text: 'okay', final: false, endOfTurn: false });
    d.advance(interruptMs);
    expect(d.of('interruptReply')).toHaveLength(1);
  });

  it('no words within resumeAfterMs: the agent resumes (a false interruption)', () => {
    const d = paused();
    const pausedAt = d.now;
    d.advance(resumeAfterMs - 1);
    expect(playbackPaused(d)).toBe(true);
    d.advance(1);
    expect(d.of('resumePlayback').map((e) => e.at)).toEqual([pausedAt + resumeAfterMs]);
    expect(d.value).toEqual({ speaking: 'playing' });
    expect(d.of('interruptReply')).toEqual([]);
  });

  it('a reply that ends while paused leaves playback un-paused for the next one', () => {
    const d = paused();
    // Its audio had all gone out; the carrier played it to the end.
    d.send({ type: 'REPLY.ENDED', heard: ANSWER, complete: true });
    expect(playbackPaused(d)).toBe(false);
    expect(d.value).toEqual({ listening: 'hearing' });
  });

  it('speech while the reply is still being prepared, past the threshold, cancels it; the caller’s words make the next turn', () => {
    const d = thinking('a table please');
    d.send({ type: 'SPEECH.START' }).advance(interruptMs - 1);
    expect(d.of('cancelReply')).toEqual([]);
    d.advance(1);
    expect(d.of('cancelReply')).toHaveLength(1);
    expect(d.value).toEqual({ listening: 'hearing' });
    d.advance(900).send({ type: 'SPEECH.END' }).send({ type: 'WORDS', text: 'for tomorrow at eight', final: true, endOfTurn: true });
    d.advance(eagernessMs);
    expect(d.replies()).toEqual(['greeting', 'answer', 'answer']);
    expect(d.of('startReply').at(-1)!.request.lines).toEqual([agent(GREETING), caller('a table please'), caller('for tomorrow at eight')]);
  });

  it('shorter speech while the reply is being prepared does not cancel it', () => {
    const d = thinking();
    d.send({ type: 'SPEECH.START' }).advance(interruptMs - 1).send({ type: 'SPEECH.END' }).advance(5_000);
    expect(d.of('cancelReply')).toEqual([]);
    expect(d.value).toEqual({ thinking: 'quiet' });
  });

  it('a caller already talking when the reply’s audio starts is talking over it', () => {
    const d = thinking();
    d.send({ type: 'SPEECH.START' }).advance(300).send({ type: 'REPLY.AUDIO' });
    expect(d.value).toEqual({ speaking: { overlap: 'short' } });
    d.advance(interruptMs);
    expect(playbackPaused(d)).toBe(true);
  });
});

describe('silence', () => {
  it('silence_hangup_seconds of listening ends the call with silence_timeout', () => {
    const d = listening();
    const quietSince = d.now;
    d.advance(silenceHangupMs - 1);
    expect(d.hangups()).toEqual([]);
    d.advance(1);
    expect(d.of('requestHangup').map((e) => [e.reason, e.at])).toEqual([['silence_timeout', quietSince + silenceHangupMs]]);
    expect(d.value).toBe('ending');
  });

  it('never while the caller speaks: the silence counts from when they stop', () => {
    const d = listening();
    d.send({ type: 'SPEECH.START' }).advance(2 * silenceHangupMs);
    expect(d.hangups()).toEqual([]);
    d.send({ type: 'SPEECH.END' });
    const stoppedAt = d.now;
    d.advance(silenceHangupMs - 1);
    expect(d.hangups()).toEqual([]);
    d.advance(1);
    expect(d.of('requestHangup').map((e) => [e.reason, e.at])).toEqual([['silence_timeout', stoppedAt + silenceHangupMs]]);
  });

  it('never while the agent prepares or plays a reply', () => {
    const d = thinking();
    d.advance(2 * silenceHangupMs).send({ type: 'REPLY.AUDIO' }).advance(2 * silenceHangupMs);
    expect(d.hangups()).toEqual([]);
    d.send({ type: 'REPLY.ENDED', heard: ANSWER, complete: true }).advance(silenceHangupMs);
    expect(d.hangups()).toEqual(['silence_timeout']);
  });

  it('a caller who starts talking as the reply ends has the floor: no silence hang-up while they go on', () => {
    const d = speaking();
    d.send({ type: 'SPEECH.START' }).advance(100).send({ type: 'REPLY.ENDED', heard: ANSWER, complete: true });
    expect(d.value).toEqual({ listening: 'hearing' });
    d.advance(silenceHangupMs + 5_000);
    expect(d.hangups()).toEqual([]);
    d.send({ type: 'SPEECH.END' }).send({ type: 'WORDS', text: 'for four people at seven', final: true, endOfTurn: true }).advance(eagernessMs);
    expect(d.replies().at(-1)).toBe('answer');
    expect(d.context.lines.at(-1)).toEqual(caller('for four people at seven'));
  });

  it('a caller who stopped while the agent was paused is answered without speaking again', () => {
    const d = paused();
    d.advance(200).send({ type: 'SPEECH.END' }).send({ type: 'WORDS', text: 'no, four people', final: true, endOfTurn: true });
    expect(d.of('interruptReply')).toHaveLength(1);
    d.send({ type: 'REPLY.ENDED', heard: 'Sure, I can', complete: false });
    const wordsAt = d.now;
    d.advance(eagernessMs);
    expect(d.of('startReply').at(-1)).toMatchObject({ at: wordsAt + eagernessMs, request: { kind: 'answer' } });
    expect(d.context.lines.slice(-2)).toEqual([agent('Sure, I can'), caller('no, four people')]);
  });
});

describe('ending the call', () => {
  it('END_CALL during a reply ends the call only once the goodbye has played (agent_hangup)', () => {
    const d = speaking();
    d.send({ type: 'END_CALL' }).advance(5_000);
    expect(d.hangups()).toEqual([]);
    const before = d.effects.length;
    d.send({ type: 'REPLY.ENDED', heard: 'Thanks for calling, goodbye!', complete: true });
    expect(d.typesSince(before)).toEqual(['recordLine', 'requestHangup']);
    expect(d.hangups()).toEqual(['agent_hangup']);
    expect(d.context.lines.at(-1)).toEqual(agent('Thanks for calling, goodbye!'));
  });

  it('END_CALL while the reply is still being prepared waits for it too', () => {
    const d = thinking('that is all, thanks');
    d.send({ type: 'END_CALL' }).send({ type: 'REPLY.AUDIO' }).advance(2_000);
    expect(d.hangups()).toEqual([]);
    d.send({ type: 'REPLY.ENDED', heard: 'Goodbye!', complete: true });
    expect(d.hangups()).toEqual(['agent_hangup']);
  });

  it('a caller who interrupts the goodbye keeps the call open: the next answer does not hang up', () => {
    const d = speaking();
    d.send({ type: 'END_CALL' }).send({ type: 'SPEECH.START' }).advance(interruptMs + 100);
    d.send({ type: 'WORDS', text: 'wait, one more thing', final: false, endOfTurn: false });
    expect(d.of('interruptReply')).toHaveLength(1);
    d.send({ type: 'REPLY.ENDED', heard: 'Thanks for', complete: false });
    d.advance(500).send({ type: 'SPEECH.END' }).send({ type: 'WORDS', text: 'wait, one more thing', final: true, endOfTurn: true });
    d.advance(eagernessMs).send({ type: 'REPLY.AUDIO' }).send({ type: 'REPLY.ENDED', heard: 'Of course, go ahead.', complete: true });
    expect(d.hangups()).toEqual([]);
    expect(d.value).toEqual({ listening: 'idle' });
  });

  it('HANGUP stops the conversation: nothing more happens', () => {
    const d = thinking();
    d.send({ type: 'HANGUP' });
    expect(d.snapshot.status).toBe('done');
    const before = d.effects.length;
    d.advance(10 * silenceHangupMs);
    expect(d.effects.length).toBe(before);
    expect(d.hangups()).toEqual([]);
  });
});

describe('failed transcription and provider failures', () => {
  it('speech with no recognised words: the fallback message, and no caller line', () => {
    const d = listening();
    d.send({ type: 'SPEECH.START' }).advance(700).send({ type: 'SPEECH.END' }).send({ type: 'WORDS', text: '', final: true, endOfTurn: true });
    expect(d.replies()).toEqual(['greeting', 'fallback']);
    expect(d.recorded()).toEqual([agent(GREETING)]);
  });

  it('speech whose utterance ends with no words: the fallback message too', () => {
    const d = listening();
    d.send({ type: 'SPEECH.START' }).advance(700).send({ type: 'SPEECH.END' }).advance(1_000).send({ type: 'UTTERANCE.END' });
    expect(d.replies()).toEqual(['greeting', 'fallback']);
  });

  it('a retryable failure is asked once more, without an apology', () => {
    const d = thinking();
    d.send({ type: 'REPLY.FAILED', provider: 'llm', retryable: true });
    expect(d.replies()).toEqual(['greeting', 'answer', 'answer']);
    d.send({ type: 'REPLY.AUDIO' }).send({ type: 'REPLY.ENDED', heard: ANSWER, complete: true });
    expect(d.value).toEqual({ listening: 'idle' });
    expect(d.hangups()).toEqual([]);
  });

  it.each([
    ['a failure retrying cannot help', [{ provider: 'llm', retryable: false }]],
    ['a failed retry', [{ provider: 'llm', retryable: true }, { provider: 'llm', retryable: true }]],
  ] as const)('%s: an apology, and the conversation goes on', (_, failures) => {
    const d = thinking();
    for (const f of failures) d.send({ type: 'REPLY.FAILED', ...f });
    expect(d.replies().at(-1)).toBe('apology');
    d.send({ type: 'REPLY.AUDIO' }).send({ type: 'REPLY.ENDED', heard: 'Sorry, I had a problem there.', complete: true });
    expect(d.hangups()).toEqual([]);
    d.say('can you book it for tomorrow').advance(eagernessMs);
    expect(d.replies().at(-1)).toBe('answer');
    // The apology played: the count of failures starts again, so this one is retried.
    d.send({ type: 'REPLY.FAILED', provider: 'llm', retryable: true });
    expect(d.replies().at(-1)).toBe('answer');
  });

  it('failing again before anything played: an apology, then the call ends with provider_error', () => {
    const d = thinking();
    d.send({ type: 'REPLY.FAILED', provider: 'llm', retryable: true }).send({ type: 'REPLY.FAILED', provider: 'llm', retryable: true });
    expect(d.replies().at(-1)).toBe('apology');
    // The caller asks again before the apology plays; the model fails once more.
    d.send({ type: 'SPEECH.START' }).advance(interruptMs);
    expect(d.of('cancelReply')).toHaveLength(1);
    d.advance(500).send({ type: 'SPEECH.END' }).send({ type: 'WORDS', text: 'hello? are you there?', final: true, endOfTurn: true }).advance(eagernessMs);
    d.send({ type: 'REPLY.FAILED', provider: 'llm', retryable: false });
    expect(d.replies().at(-1)).toBe('apology');
    expect(d.hangups()).toEqual([]);
    d.send({ type: 'REPLY.AUDIO' }).send({ type: 'REPLY.ENDED', heard: 'Sorry, I cannot help right now. Goodbye.', complete: true });
    expect(d.hangups()).toEqual(['provider_error']);
    expect(d.context.lines.at(-1)).toEqual(agent('Sorry, I cannot help right now. Goodbye.'));
  });

  it('speech synthesis failing twice ends the call at once with provider_error (nothing more can be said)', () => {
    const d = thinking();
    d.send({ type: 'REPLY.FAILED', provider: 'tts', retryable: true });
    expect(d.replies()).toEqual(['greeting', 'answer', 'answer']);
    d.send({ type: 'REPLY.FAILED', provider: 'tts', retryable: true });
    expect(d.hangups()).toEqual(['provider_error']);
    expect(d.replies()).toEqual(['greeting', 'answer', 'answer']);
  });

  it('speech recognition gone while listening: an apology, then provider_error', () => {
    const d = listening();
    d.send({ type: 'STT.FAILED' });
    expect(d.replies().at(-1)).toBe('apology');
    expect(d.hangups()).toEqual([]);
    d.send({ type: 'REPLY.AUDIO' }).send({ type: 'REPLY.ENDED', heard: 'Sorry, I cannot hear you. Please call again.', complete: true });
    expect(d.hangups()).toEqual(['provider_error']);
  });

  it('speech recognition gone during a reply: the reply plays, then provider_error', () => {
    const d = speaking();
    d.send({ type: 'STT.FAILED' }).advance(2_000);
    expect(d.hangups()).toEqual([]);
    d.send({ type: 'REPLY.ENDED', heard: ANSWER, complete: true });
    expect(d.hangups()).toEqual(['provider_error']);
  });

  it('speech recognition gone before the greeting: an apology instead, then provider_error', () => {
    const d = ConversationDriver.start({ aiSpeaksFirst: false });
    d.advance(1_000).send({ type: 'STT.FAILED' });
    expect(d.replies()).toEqual(['apology']);
    d.send({ type: 'REPLY.AUDIO' }).send({ type: 'REPLY.ENDED', heard: 'Sorry, I cannot hear you.', complete: true });
    expect(d.hangups()).toEqual(['provider_error']);
  });
});

describe('transcript', () => {
  it('every caller and agent line is reported in order, kept in the context, and given to each reply', () => {
    const d = listening();
    d.say('a table for two').advance(eagernessMs).send({ type: 'REPLY.AUDIO' }).send({ type: 'REPLY.ENDED', heard: 'For what time?', complete: true });
    d.say('eight tonight').advance(eagernessMs).send({ type: 'REPLY.AUDIO' });
    d.send({ type: 'SPEECH.START' }).advance(interruptMs).send({ type: 'WORDS', text: 'sorry, seven', final: false, endOfTurn: false });
    d.send({ type: 'REPLY.ENDED', heard: 'Eight is', complete: false });
    d.send({ type: 'SPEECH.END' }).send({ type: 'WORDS', text: 'sorry, seven', final: true, endOfTurn: true }).advance(eagernessMs);
    const expected = [
      agent(GREETING),
      caller('a table for two'),
      agent('For what time?'),
      caller('eight tonight'),
      agent('Eight is'),
      caller('sorry, seven'),
    ];
    expect(d.recorded()).toEqual(expected);
    expect(d.context.lines).toEqual(expected);
    // Each answer was asked with every line up to the caller's words it answers.
    const asked = d.of('startReply').filter((e) => e.request.kind === 'answer').map((e) => e.request.lines.length);
    expect(asked).toEqual([2, 4, 6]);
  });

  it('a reply nobody heard leaves no line', () => {
    const d = thinking();
    d.send({ type: 'REPLY.ENDED', heard: '  ', complete: true });
    expect(d.recorded().at(-1)).toEqual(caller('I would like to book a table'));
    expect(d.of('recordLine').every((e) => e.line.text.trim() !== '')).toBe(true);
    expect(d.context.lines).toEqual(d.recorded());
  });

  it('a stored conversation comes back in the same state with the same lines', () => {
    const d = speaking();
    const before = { value: d.value, context: d.context };
    d.restore();
    expect(d.value).toEqual(before.value);
    expect(d.context).toEqual(before.context);
    d.send({ type: 'REPLY.ENDED', heard: ANSWER, complete: true });
    expect(d.context.lines.at(-1)).toEqual(agent(ANSWER));
  });
});

describe('isBackchannel', () => {
  it.each(['uh-huh', 'Uh-huh.', 'mm-hmm', 'mhm', 'okay', 'OK!', 'yeah', 'Yeah, right.', 'all right', 'oh okay', 'yes yes yes', 'got it', 'I see'])(
    '%j acknowledges without taking the floor',
    (text) => expect(isBackchannel(text)).toBe(true),
  );
  it.each(['', '   ', '...', 'wait', 'stop', 'no', 'okay but what about tomorrow', 'yeah I want to cancel', 'yes yes yes yes', 'uh-huh, cancel it', 'seven'])(
    '%j is no backchannel',
    (text) => expect(isBackchannel(text)).toBe(false),
  );
});
