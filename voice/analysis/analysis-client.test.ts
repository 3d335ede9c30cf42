// The analysis request over the wire, against the model simulator: what is sent, what
// comes back, and how a failure surfaces. Also the simulator's promise to the other
// suites: analysis requests are kept apart from the conversation's (their own list,
// their own script, no queued reply or fault taken from a conversation test).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlmSim, type LlmSim } from '../../test/sim/llm-sim.ts';
import { ProviderError } from '../providers/errors.ts';
import { createOpenAiLlm } from '../providers/openai-llm.ts';
import { createAnalysisModel } from './analysis-client.ts';
import { analysisResponseFormat, parseAnalysisAnswer } from './analysis-schema.ts';

const KEY = 'sk-analysis-test';
const messages = [{ role: 'system' as const, content: 'Analyse.' }, { role: 'user' as const, content: 'Transcript:\nCaller: Hi.' }];
const FIELDS = [{ name: 'party_size', type: 'integer' as const, description: 'How many' }];

let sim: LlmSim;
beforeAll(async () => {
  sim = await startLlmSim({ apiKey: KEY, firstTokenMs: 5, tokenMs: 1 });
});
afterAll(async () => {
  await sim?.close();
});

describe('the analysis request', () => {
  it('is one non-streamed completion asking for the schema, answered with the message text', async () => {
    const model = createAnalysisModel({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'gpt-test' });
    const answer = JSON.stringify({ summary: 'Hi.', sentiment: 'neutral', successful: true, open_item: null, extracted: { party_size: 2 } });
    sim.replyStructured({ text: answer });
    const before = sim.structuredRequests.length;
    const text = await model.complete({ messages, responseFormat: analysisResponseFormat(FIELDS) });
    expect(text).toBe(answer);
    const req = sim.structuredRequests[before]!;
    expect(req.authorization).toBe(`Bearer ${KEY}`);
    expect(req.body).toMatchObject({ model: 'gpt-test', messages, stream: false, temperature: 0, response_format: analysisResponseFormat(FIELDS) });
  });

  it('without a script, the simulator answers the simplest JSON the schema allows, which the schema accepts', async () => {
    const model = createAnalysisModel({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'gpt-test' });
    const text = await model.complete({ messages, responseFormat: analysisResponseFormat(FIELDS) });
    expect(JSON.parse(text)).toEqual({ summary: 'simulated', sentiment: 'happy', successful: true, open_item: null, extracted: { party_size: null } });
    expect(parseAnalysisAnswer(text, FIELDS).ok).toBe(true);
  });

  it('never takes a reply or a fault queued for the conversation, and is not listed with its requests', async () => {
    const model = createAnalysisModel({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'gpt-test' });
    const turns = sim.requests.length;
    sim.reply({ text: 'For the next turn.' });
    sim.fail({ kind: 'status', status: 500 });
    await model.complete({ messages, responseFormat: analysisResponseFormat([]) });
    expect(sim.requests.length).toBe(turns);
    // The next turn gets both, in order.
    const llm = createOpenAiLlm({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'gpt-test' });
    const turn = async () => {
      let out = '';
      for await (const c of llm.stream({ messages, temperature: 0.3, maxTokens: 50 })) if (c.type === 'text') out += c.text;
      return out;
    };
    await expect(turn()).rejects.toMatchObject({ kind: 'unavailable', status: 500 });
    expect(await turn()).toBe('For the next turn.');
  });

  it('fails as a ProviderError on an error status and on its deadline', async () => {
    const lost = createAnalysisModel({ baseUrl: `${sim.baseUrl}/nowhere`, apiKey: KEY, model: 'gpt-test' });
    await expect(lost.complete({ messages, responseFormat: {} })).rejects.toMatchObject({ name: 'ProviderError', kind: 'bad_request', status: 404 });
    const slow = createAnalysisModel({ baseUrl: sim.baseUrl, apiKey: KEY, model: 'gpt-test', timeoutMs: 150 });
    sim.setLatency({ firstTokenMs: 2000 });
    try {
      const err = await slow.complete({ messages, responseFormat: analysisResponseFormat([]) }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProviderError);
      expect(err).toMatchObject({ kind: 'timeout', message: expect.stringContaining('no answer within 150 ms') });
    } finally {
      sim.setLatency({ firstTokenMs: 5 });
    }
  });
});
