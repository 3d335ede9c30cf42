// The agent's conversation settings, end to end through the carrier and provider
// simulators: pickup_delay when the agent does not speak first, the static greeting by
// name (its wording in every combination: voice/conversation/greeting.test.ts), the
// model-made greeting, silence hang-up, an outbound conversation with the call's own
// prompt, and speech through the Cartesia websocket instead of the OpenAI-compatible
// endpoint.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextNumber } from './helpers/fixtures.ts';
import { callReaches, eventually, newCustomer, PUBLIC_BASE } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack } from './helpers/conversation.ts';
import { FarEndVoice } from './sim/far-end-playback.ts';
import { loadSpeechFixture } from './fixtures/speech/speech.ts';

let stack: ConversationStack;
beforeAll(async () => {
  stack = await startConversationStack();
});
afterAll(async () => {
  await stack?.close();
});

describe('greetings', () => {
  it('without ai_speaks_first the agent waits pickup_delay for the caller, then greets', async () => {
    const c = await newCustomer(stack, 'twilio', { ai_speaks_first: false, pickup_delay: 5 });
    const far = await ringAgent(stack, c);
    const answeredAt = performance.now();
    const greeting = await agentSpeaks(far, 0, 12_000);
    expect(greeting.startedAt - answeredAt).toBeGreaterThanOrEqual(4900);
    expect(greeting.startedAt - answeredAt).toBeLessThan(7000);
    await far.hangup();
  }, 30_000);

  it('greets a returning caller by the name on file, in a sentence, and the model hears what is on file', async () => {
    // A greeting word running on into the sentence once read "Hello Maria! and thanks…" (issue 24).
    const c = await newCustomer(stack, 'telnyx', { welcome_message: 'Hello and thanks for calling Luigi’s.', greet_by_name: true });
    const from = nextNumber();
    const put = await stack.server.request('PUT', `/v1/phone-numbers/${encodeURIComponent(c.number)}/callers/${encodeURIComponent(from)}`, {
      key: c.key,
      body: { name: 'Marisol Quintero', preference: 'window table' },
    });
    expect(put.status, put.text).toBeLessThan(300);
    const ttsBefore = stack.tts.requests.length;
    const far = await ringAgent(stack, c, from);
    await agentSpeaks(far);
    expect(stack.tts.requests[ttsBefore]!.body.input).toBe('Hello Marisol Quintero, and thanks for calling Luigi’s.');
    const llmBefore = stack.llm.requests.length;
    stack.llm.reply({ text: 'Your window table is noted.' });
    await far.say('book-table');
    await agentSpeaks(far, far.heardBytes());
    const system = stack.llm.requests[llmBefore]!.body.messages[0]!.content as string;
    expect(system).toContain('- Name: Marisol Quintero');
    expect(system).toContain('- Preference: window table');
    await far.hangup();
  }, 40_000);

  it('with dynamic_greeting the model writes the greeting, asked to use the name on file', async () => {
    const c = await newCustomer(stack, 'twilio', { dynamic_greeting: true, greet_by_name: true });
    const from = nextNumber();
    await stack.server.request('PUT', `/v1/phone-numbers/${encodeURIComponent(c.number)}/callers/${encodeURIComponent(from)}`, { key: c.key, body: { name: 'Maria' } });
    const llmBefore = stack.llm.requests.length;
    const ttsBefore = stack.tts.requests.length;
    stack.llm.reply({ text: 'Good evening Maria, lovely to hear from you again!' });
    const far = await ringAgent(stack, c, from);
    await agentSpeaks(far);
    const messages = stack.llm.requests[llmBefore]!.body.messages;
    expect(messages.at(-1)!.content).toContain('Greet them by name (Maria)');
    expect(stack.tts.requests[ttsBefore]!.body.input).toBe('Good evening Maria, lovely to hear from you again!');
    const done = await (async () => {
      await far.hangup();
      return recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    })();
    expect(done.transcript).toBe('Agent: Good evening Maria, lovely to hear from you again!');
  }, 30_000);
});

describe('model and recogniser settings', () => {
  it('language, boosted keywords, temperature and response_length reach the providers', async () => {
    const c = await newCustomer(stack, 'twilio', {
      language: 'es',
      boosted_keywords: 'Luigi, tiramisu',
      temperature: 0.7,
      response_length: 'long',
      welcome_message: 'Hola!',
    });
    const sttBefore = stack.stt.connections.length;
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const query = stack.stt.connections[sttBefore]!.query;
    expect(query.get('language')).toBe('es');
    expect(query.getAll('keyterm')).toEqual(['Luigi', 'tiramisu']);
    expect(query.get('encoding')).toBe('mulaw');
    expect(query.get('sample_rate')).toBe('8000');
    expect(stack.stt.connections[sttBefore]!.headers['authorization']).toBe('Token dg-test');
    const llmBefore = stack.llm.requests.length;
    stack.llm.reply({ text: 'Claro.' });
    await far.say('book-table');
    await agentSpeaks(far, far.heardBytes());
    const body = stack.llm.requests[llmBefore]!.body;
    expect(body.temperature).toBe(0.7);
    expect(body.max_tokens).toBe(600);
    expect(body.messages[0]!.content).toContain('Speak Spanish.');
    await far.hangup();
  }, 30_000);
});

describe('speech to text pacing', () => {
  it('a quiet caller’s audio reaches the recogniser 200 ms at a time, a speaking caller’s 40 ms at a time', async () => {
    const c = await newCustomer(stack, 'twilio', { welcome_message: 'Hi.' });
    const sttBefore = stack.stt.connections.length;
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const conn = stack.stt.connections[sttBefore]!;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    /** Mean audio message size over the next `ms`. */
    const meanMessage = async (ms: number) => {
      const [bytes, messages] = [conn.bytes, conn.audioMessages];
      await sleep(ms);
      return (conn.bytes - bytes) / Math.max(1, conn.audioMessages - messages);
    };
    // The caller has said nothing since the call began (the engine waits 1.5 s past the last voiced audio).
    await eventually(async () => ((await meanMessage(1000)) > 1200 ? true : undefined), 8000, '200 ms messages from a quiet caller');
    stack.llm.reply({ text: 'Sure.' });
    const speaking = far.say('book-table');
    await sleep(400); // the detector hears the speech begin
    expect(await meanMessage(600)).toBeLessThanOrEqual(400);
    await speaking;
    await agentSpeaks(far, far.heardBytes());
    await far.hangup();
  }, 40_000);
});

describe('endings', () => {
  it('hangs up with silence_timeout when the caller says nothing for silence_hangup_seconds', async () => {
    const c = await newCustomer(stack, 'twilio', { silence_hangup_seconds: 5, welcome_message: 'Hi!' });
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const quietFrom = performance.now();
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed', 15_000, 'the silence hang-up');
    expect(done.ended_reason).toBe('silence_timeout');
    expect(performance.now() - quietFrom).toBeGreaterThanOrEqual(4500);
  }, 30_000);
});

describe('outbound', () => {
  it('the called person hears the agent; the model gets the call’s prompt with {name} filled in', async () => {
    const c = await newCustomer(stack, 'twilio', { welcome_message: 'Hello, this is Luigi’s calling.' });
    const to = nextNumber();
    const voice = new FarEndVoice();
    stack.sims.twilio.scenario(to, { name: 'answer', audio: voice });
    const llmBefore = stack.llm.requests.length;
    const res = await stack.server.request('POST', '/v1/calls/outbound', {
      key: c.key,
      body: { agent_id: c.agentId, to_number: to, prompt: 'Remind {name} of the table booked for tonight.', dynamic_vars: { name: 'Ana' } },
    });
    expect(res.status, res.text).toBe(201);
    const id = res.body.call_id as string;
    await callReaches(stack.server, c.key, id, 'in-progress', 10_000);
    const call = await eventually(() => [...stack.sims.twilio.calls.values()].find((x) => x.to === to && x.stream) ?? undefined, 10_000, 'the media stream');
    const heard = () => call.stream?.receivedAudio().length ?? 0;
    // The greeting plays to its end (audio stops growing) before the called person answers.
    await eventually(() => (heard() > 8 * 500 ? true : undefined), 10_000, 'the greeting');
    let last = -1;
    await eventually(async () => {
      const now = heard();
      const quiet = now === last;
      last = now;
      await new Promise((r) => setTimeout(r, 300));
      return quiet ? true : undefined;
    }, 10_000, 'the greeting to end');
    stack.llm.reply({ text: 'Great, see you tonight!', toolCalls: [{ name: 'end_call', arguments: {} }] });
    stack.stt.say('Yes, I will be there.');
    await voice.say(loadSpeechFixture('book-table'));
    const done = await recordWhere(stack, c, id, (r) => r.call_status === 'completed', 20_000, 'the agent to hang up');
    expect(done.ended_reason).toBe('agent_hangup');
    expect(done.transcript).toBe('Agent: Hello, this is Luigi’s calling.\nCaller: Yes, I will be there.\nAgent: Great, see you tonight!');
    const system = stack.llm.requests[llmBefore]!.body.messages[0]!.content as string;
    expect(system).toContain('Remind Ana of the table booked for tonight.');
  }, 40_000);
});

describe('Cartesia', () => {
  it('speaks through the Cartesia websocket when TTS_PROVIDER=cartesia, with the voice’s Cartesia id and the speed', async () => {
    const other = await startConversationStack({ TTS_PROVIDER: 'cartesia' });
    try {
      const c = await newCustomer(other, 'telnyx', { welcome_message: 'Hello from Cartesia.', voice_id: 'Ashley', speaking_rate: 1.2 });
      const far = await ringAgent(other, c);
      const greeting = await agentSpeaks(far);
      expect(greeting.bytes).toBeGreaterThan(8 * 500);
      const req = other.cartesia.requests.find((r) => r.transcript === 'Hello from Cartesia.');
      expect(req).toBeDefined();
      expect(req!.output_format).toMatchObject({ container: 'raw', encoding: 'pcm_mulaw', sample_rate: 8000 });
      expect(req!.voice?.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(JSON.stringify(req)).toContain('1.2');
      expect(other.tts.requests.length).toBe(0);
      await far.hangup();
    } finally {
      await other.close();
    }
  }, 30_000);
});

void PUBLIC_BASE;
