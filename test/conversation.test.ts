// The conversation end to end, on both carriers: a caller rings the agent, hears the
// greeting, speaks real speech (espeak-ng fixtures), hears replies, interrupts one,
// acknowledges another with "uh-huh", and says goodbye; the agent ends the call with
// its end-call tool. Checked from the outside: the audio the far end heard, the
// carrier's `clear`, what the model and the speech provider were sent, and the call
// record's transcript and latency.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCustomer, eventually } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack, type Provider } from './helpers/conversation.ts';

let stack: ConversationStack;
beforeAll(async () => {
  stack = await startConversationStack();
});
afterAll(async () => {
  await stack?.close();
});

const LONG_REPLY =
  'We are open from nine in the morning until ten at night on Saturdays, and the kitchen closes one hour earlier, so please arrive before nine if you would like a full dinner with dessert.';

describe.each<Provider>(['twilio', 'telnyx'])('a conversation on carrier %s', (provider) => {
  it('greets, answers turn by turn, is interrupted, ignores a backchannel and ends with the end-call tool', async () => {
    const c = await newCustomer(stack, provider, {
      system_prompt: 'You are the booking assistant of Luigi’s trattoria.',
      welcome_message: 'Hello! Luigi’s trattoria, how can I help?',
      voice_id: 'Brian',
      speaking_rate: 1.4,
      response_eagerness: 300,
    });
    const llmBefore = stack.llm.requests.length;
    const ttsBefore = stack.tts.requests.length;
    const far = await ringAgent(stack, c);

    // The static greeting, spoken with the agent's voice and speed.
    const greeting = await agentSpeaks(far);
    expect(greeting.bytes).toBeGreaterThan(8 * 1000);
    const greetingTts = stack.tts.requests.slice(ttsBefore).map((r) => r.body);
    expect(greetingTts[0]).toMatchObject({ input: 'Hello! Luigi’s trattoria, how can I help?', voice: 'onyx', speed: 1.4, response_format: 'pcm' });

    // Turn 1: the caller asks; the reply comes response_eagerness after the words are final.
    stack.llm.reply({ text: 'Of course. For what time tomorrow?' });
    const before1 = far.heardBytes();
    await far.say('book-table');
    const spokeAt = performance.now();
    const reply1 = await agentSpeaks(far, before1);
    expect(reply1.startedAt - spokeAt).toBeGreaterThanOrEqual(300);
    const req1 = stack.llm.requests[llmBefore]!.body;
    expect(req1.messages[0]).toMatchObject({ role: 'system' });
    expect(req1.messages[0]!.content).toContain('You are the booking assistant of Luigi’s trattoria.');
    expect(req1.messages.at(-1)).toEqual({ role: 'user', content: 'Hi, I would like to book a table for two tomorrow evening.' });
    expect(req1.tools?.map((t) => t.function.name)).toEqual(['end_call']);
    expect(req1.stream).toBe(true);
    // The agent's defaults: temperature 0.3, response_length short (150 tokens, and said so).
    expect(req1.temperature).toBe(0.3);
    expect(req1.max_tokens).toBe(150);
    expect(req1.messages[0]!.content).toContain('Keep every reply to one or two short sentences.');

    // Turn 2: a long reply, interrupted by the caller: the carrier is told to clear.
    stack.llm.reply({ text: LONG_REPLY }, { text: 'Sure: nine in the morning until ten at night.' });
    const before2 = far.heardBytes();
    await far.say('saturday-hours');
    await eventually(() => (far.heardBytes() > before2 + 8 * 1500 ? true : undefined), 10_000, 'the long reply to play for a while');
    const clearsBefore = far.clears();
    await far.say('repeat-please');
    await eventually(() => (far.clears() > clearsBefore ? true : undefined), 10_000, 'clear sent on barge-in');
    await agentSpeaks(far, far.heardBytes());

    // Turn 3: a backchannel over the agent does not interrupt it.
    const CONFIRMATION = 'Perfect. I have noted a table for two tomorrow at eight in the evening under your name, and we look forward to seeing you.';
    stack.llm.reply({ text: CONFIRMATION });
    const before3 = far.heardBytes();
    await far.say('book-table');
    await eventually(() => (far.heardBytes() > before3 + 8 * 800 ? true : undefined), 10_000, 'the confirmation to start');
    const clears3 = far.clears();
    const llmCount = stack.llm.requests.length;
    await far.say('uh-huh');
    // The whole confirmation reaches the live transcript once it has played (a cut one would
    // be a prefix): waiting for it, not for a pause in the audio, keeps a stalled test
    // process from saying goodbye over the agent.
    await recordWhere(stack, c, far.id, (r) => typeof r.transcript === 'string' && r.transcript.endsWith(`Agent: ${CONFIRMATION}`), 20_000, 'the confirmation played whole');
    expect(far.clears()).toBe(clears3);
    expect(stack.llm.requests.length).toBe(llmCount);

    // Goodbye: the model says goodbye and calls end_call; the call ends after it played.
    stack.llm.reply({ text: 'Goodbye, see you tomorrow!', toolCalls: [{ name: 'end_call', arguments: {} }] });
    await far.say('thank-you-goodbye');
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed', 20_000, 'the agent to hang up');
    expect(done.ended_reason).toBe('agent_hangup');
    const lines: string[] = done.transcript.split('\n');
    expect(lines[0]).toBe('Agent: Hello! Luigi’s trattoria, how can I help?');
    expect(lines[1]).toBe('Caller: Hi, I would like to book a table for two tomorrow evening.');
    expect(lines[2]).toBe('Agent: Of course. For what time tomorrow?');
    expect(lines[3]).toBe('Caller: What time do you open on Saturday?');
    // The interrupted reply keeps only what was heard: a cut prefix of it.
    expect(lines[4]).toMatch(/^Agent: We are open/);
    expect(lines[4]!.length).toBeLessThan(`Agent: ${LONG_REPLY}`.length);
    expect(LONG_REPLY.startsWith(lines[4]!.slice('Agent: '.length))).toBe(true);
    expect(lines[5]).toBe('Caller: Actually, wait, can you repeat that please?');
    expect(lines[6]).toBe('Agent: Sure: nine in the morning until ten at night.');
    expect(lines.slice(7)).toEqual([
      'Caller: Hi, I would like to book a table for two tomorrow evening.',
      'Agent: Perfect. I have noted a table for two tomorrow at eight in the evening under your name, and we look forward to seeing you.',
      'Caller: Thank you, goodbye.',
      'Agent: Goodbye, see you tomorrow!',
    ]);
    expect(done.avg_latency_ms).toBeGreaterThan(0);
    expect(done.avg_latency_ms).toBeLessThan(3000);
  }, 90_000);
});
