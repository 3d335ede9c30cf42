// Custom functions and the in-call webhook as model tools, end to end on both carriers.
// The service runs as a child process trusting a throwaway CA through
// NODE_EXTRA_CA_CERTS; the customer's tool endpoints are a local HTTPS receiver with a
// certificate of that CA (test/sim/webhook-receiver.ts). A caller asks, the model
// (scripted in the simulator) calls a tool, and the tests check what each side saw: the
// tools the model was offered, the signed `{call_id, agent_id, name, arguments}` the
// endpoint received, the answer (or the error) in the model's next request, what the
// caller heard (the answer spoken; fillers while a slow tool runs, never a long
// silence), the transcript. Last, the service restarts without
// ALLOW_PRIVATE_NETWORK_TARGETS and a tool on a loopback address is refused at connect.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { eventually, newCustomer, startSims, PUBLIC_BASE, type CallStack, type Customer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, KEYS, type ConversationStack, type FarEnd, type Provider } from './helpers/conversation.ts';
import { startServiceProcess, type ServiceProcess } from './helpers/process.ts';
import { remote } from './helpers/remote.ts';
import { startLlmSim, type LlmSim } from './sim/llm-sim.ts';
import { startDeepgramSim, type DeepgramSim } from './sim/deepgram-sim.ts';
import { startOpenAiTtsSim, type OpenAiTtsSim } from './sim/openai-tts-sim.ts';
import { makeTestCa, startWebhookReceiver, type ScriptedAnswer, type TestCa, type WebhookReceiver } from './sim/webhook-receiver.ts';
import type { LlmMessage } from '../voice/providers/llm.ts';

let sims: CallStack['sims'];
let llm: LlmSim;
let stt: DeepgramSim;
let tts: OpenAiTtsSim;
let service: ServiceProcess;
let stack: ConversationStack;
let ca: TestCa;
let receiver: WebhookReceiver;
let dataDir: string;

async function startService(allowPrivate: boolean): Promise<void> {
  service = await startServiceProcess({
    ...sims.env,
    DATA_DIR: dataDir,
    MEDIA_ENGINE: 'agent',
    LLM_BASE_URL: llm.baseUrl,
    LLM_API_KEY: KEYS.llm,
    DEEPGRAM_BASE_URL: stt.url,
    DEEPGRAM_API_KEY: KEYS.stt,
    TTS_BASE_URL: tts.baseUrl,
    TTS_API_KEY: KEYS.tts,
    ALLOW_PRIVATE_NETWORK_TARGETS: String(allowPrivate),
    KEY_CREATION_PER_HOUR_PER_IP: '100000',
    NODE_EXTRA_CA_CERTS: ca.caFile,
  });
  sims.twilio.route(PUBLIC_BASE, service.url);
  sims.telnyx.redirect(PUBLIC_BASE, service.url);
  stack = { sims, server: remote(service.url), llm, stt, tts, cartesia: null as never, close: async () => {} };
}

async function stopService(): Promise<void> {
  service.child.kill('SIGTERM');
  await service.exited;
}

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
  sims = await startSims();
  llm = await startLlmSim({ apiKey: KEYS.llm, firstTokenMs: 40, tokenMs: 4 });
  stt = await startDeepgramSim({ apiKey: KEYS.stt, finalLatencyMs: 30 });
  tts = await startOpenAiTtsSim({ apiKey: KEYS.tts, firstAudioMs: 30 });
  dataDir = mkdtempSync(join(tmpdir(), 'switchboard-tools-'));
  await startService(true);
}, 40_000);

afterAll(async () => {
  if (service) await stopService();
  await sims?.close();
  await Promise.all([llm?.close(), stt?.close(), tts?.close()]);
  await receiver?.close();
  ca?.dispose();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** The model requests of conversation turns (streamed), not post-call analysis. */
const turns = () => llm.requests.filter((r) => r.body.stream === true);

let paths = 0;
const newPath = (what: string) => `/tools/${what}-${++paths}`;
const json = (body: unknown, extra: Partial<Extract<ScriptedAnswer, object>> = {}): ScriptedAnswer => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
  ...extra,
});

const ORDER_SCHEMA = { type: 'object', properties: { order_id: { type: 'string', description: 'The order number' } }, required: ['order_id'] };

/** A customer whose number has the custom function `lookup_order` at `fnPath` and the in-call webhook at `hookPath`. */
async function withTools(provider: Provider, fnPath: string, hookPath: string): Promise<Customer> {
  const c = await newCustomer(stack, provider, { welcome_message: 'Hello, this is Acme orders.', response_eagerness: 100 });
  const fn = await stack.server.request('POST', `/v1/integrations/custom-functions/number/${encodeURIComponent(c.number)}`, {
    key: c.key,
    body: { name: 'lookup_order', url: receiver.url(fnPath), description: 'Look up an order by its number.', parameters: ORDER_SCHEMA },
  });
  expect(fn.status, fn.text).toBe(201);
  const hook = await stack.server.request('PUT', `/v1/integrations/automation/number/${encodeURIComponent(c.number)}`, { key: c.key, body: { in_call_url: receiver.url(hookPath) } });
  expect(hook.status, hook.text).toBe(200);
  return c;
}

async function secretOf(key: string): Promise<string> {
  const res = await stack.server.request('GET', '/v1/webhooks/secret', { key });
  expect(res.status, res.text).toBe(200);
  return res.body.secret as string;
}

/** The tool messages of a model request, by the id of the call they answer. */
const toolMessages = (messages: LlmMessage[]) => messages.filter((m): m is Extract<LlmMessage, { role: 'tool' }> => m.role === 'tool');

/**
 * Follows what the far end hears from now on: the longest stretch with no new agent
 * audio, measured from when it first heard something until `stop()`.
 */
function listenForSilence(far: FarEnd): { firstAudioAt: () => number | null; stop(): number } {
  const start = far.heardBytes();
  let last = start;
  let lastChange: number | null = null;
  let first: number | null = null;
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    const bytes = far.heardBytes();
    if (bytes !== last) {
      if (lastChange !== null) longest = Math.max(longest, now - lastChange);
      first ??= now;
      last = bytes;
      lastChange = now;
    }
  }, 50);
  return {
    firstAudioAt: () => first,
    stop() {
      clearInterval(timer);
      return longest;
    },
  };
}

describe.each<Provider>(['twilio', 'telnyx'])('tools on carrier %s', (provider) => {
  it('the model is offered the tools, calls one, the endpoint gets the signed call, and the agent speaks the answer', async () => {
    const fnPath = newPath(`lookup-${provider}`);
    const hookPath = newPath(`hook-${provider}`);
    const c = await withTools(provider, fnPath, hookPath);
    receiver.script(fnPath, json({ status: 'shipped', eta: 'Friday' }));
    const llmBefore = turns().length;
    const ttsBefore = tts.requests.length;
    llm.reply({ toolCalls: [{ name: 'lookup_order', arguments: { order_id: '4417' } }] }, { text: 'Your order has shipped and arrives on Friday.' });

    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const asked = far.heardBytes();
    await far.say('book-table', 'Where is my order 4417?');
    await agentSpeaks(far, asked);

    // What the model was offered.
    const first = turns()[llmBefore]!.body;
    expect(first.tools?.map((t) => t.function.name)).toEqual(['end_call', 'lookup_order', 'automation_webhook']);
    expect(first.tools![1]).toEqual({ type: 'function', function: { name: 'lookup_order', description: 'Look up an order by its number.', parameters: ORDER_SCHEMA } });
    expect(first.tools![2]!.function.description).toMatch(/business's own systems/);

    // What the endpoint received: the call, signed with the account's secret.
    const [req] = await receiver.waitFor(fnPath);
    expect(JSON.parse(req!.body)).toEqual({ call_id: far.id, agent_id: c.agentId, name: 'lookup_order', arguments: { order_id: '4417' } });
    expect(req!.headers['content-type']).toBe('application/json');
    expect(new Webhook(await secretOf(c.key)).verify(req!.body, req!.headers)).toBeTruthy();
    expect(receiver.to(hookPath)).toEqual([]);

    // The answer reached the model in a second request, right after the call that asked for it.
    const second = turns()[llmBefore + 1]!.body;
    const call = second.messages.at(-2)!;
    expect(call).toMatchObject({ role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'lookup_order', arguments: '{"order_id":"4417"}' } }] });
    const callId = (call as Extract<LlmMessage, { role: 'assistant' }>).tool_calls![0]!.id;
    expect(second.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: callId, content: '{"status":"shipped","eta":"Friday"}' });

    // The agent spoke the answer; the transcript has it.
    expect(tts.requests.slice(ttsBefore).map((r) => r.body.input)).toContain('Your order has shipped and arrives on Friday.');
    await far.hangup();
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(done.transcript.split('\n')).toEqual([
      'Agent: Hello, this is Acme orders.',
      'Caller: Where is my order 4417?',
      'Agent: Your order has shipped and arrives on Friday.',
    ]);
  }, 60_000);

  it('a tool that never answers: fillers keep the line alive, the timeout reaches the model, and the call goes on', async () => {
    const fnPath = newPath(`slow-fn-${provider}`);
    const hookPath = newPath(`slow-hook-${provider}`);
    const c = await withTools(provider, fnPath, hookPath);
    receiver.script(hookPath, json({ late: true }, { delayMs: 20_000 }));
    const llmBefore = turns().length;
    const ttsBefore = tts.requests.length;
    llm.reply(
      { toolCalls: [{ name: 'automation_webhook', arguments: { request: 'status of order 4417' } }] },
      { text: 'I am sorry, I could not check that right now. Can I help with something else?' },
    );

    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    await far.say('book-table', 'Where is my order 4417?');
    const spokeAt = performance.now();
    const ear = listenForSilence(far);
    await eventually(() => (turns().length >= llmBefore + 2 ? true : undefined), 20_000, 'the model to be asked again');
    const askedAgainAt = performance.now();
    await agentSpeaks(far, far.heardBytes(), 15_000);
    const longestSilence = ear.stop();

    // The tool timed out after 10 s; meanwhile the caller heard fillers, never a long silence.
    expect(askedAgainAt - spokeAt).toBeGreaterThanOrEqual(9_500);
    expect(ear.firstAudioAt()! - spokeAt).toBeLessThan(2_500);
    expect(longestSilence).toBeLessThan(3_800);
    const said = tts.requests.slice(ttsBefore + 1).map((r) => r.body.input as string);
    expect(said[0]).toBe('One moment while I check that.');
    expect(said.filter((t) => /moment|waiting|checking/i.test(t)).length).toBeGreaterThanOrEqual(2);
    expect(toolMessages(turns()[llmBefore + 1]!.body.messages).at(-1)!.content).toBe('{"error":"the tool did not answer within 10 seconds"}');
    expect(said.join(' ')).toMatch(/I am sorry, I could not check that right now\. Can I help with something else\?$/);

    // The conversation carries on: the next turn is answered as usual.
    llm.reply({ text: 'We are open until six.' });
    const before = far.heardBytes();
    await far.say('saturday-hours');
    await agentSpeaks(far, before);
    expect(tts.requests.at(-1)!.body.input).toBe('We are open until six.');
    await far.hangup();
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(done.transcript).toContain('Agent: One moment while I check that.');
  }, 90_000);
});

describe('tool failures the model is told about', () => {
  it('an error status from the in-call webhook is given to the model, which carries on', async () => {
    const fnPath = newPath('fail-fn');
    const hookPath = newPath('fail-hook');
    const c = await withTools('twilio', fnPath, hookPath);
    receiver.script(hookPath, { status: 500, body: 'boom' });
    const llmBefore = turns().length;
    llm.reply({ toolCalls: [{ name: 'automation_webhook', arguments: { request: 'callback tomorrow' } }] }, { text: 'Sorry, I could not book the callback. Anything else?' });
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const before = far.heardBytes();
    await far.say('book-table', 'Please call me back tomorrow.');
    await agentSpeaks(far, before);
    const [req] = await receiver.waitFor(hookPath);
    expect(JSON.parse(req!.body)).toMatchObject({ name: 'automation_webhook', arguments: { request: 'callback tomorrow' } });
    expect(toolMessages(turns()[llmBefore + 1]!.body.messages).at(-1)!.content).toBe('{"error":"the tool answered with an error (HTTP 500)"}');
    await far.hangup();
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(done.transcript).toContain('Agent: Sorry, I could not book the callback. Anything else?');
  }, 40_000);

  it('without ALLOW_PRIVATE_NETWORK_TARGETS a tool that resolves to 127.0.0.1 is refused at connect; the model is told', async () => {
    // Stored while private targets were allowed; then the service restarts without them.
    const fnPath = newPath('private-fn');
    const c = await newCustomer(stack, 'twilio', { welcome_message: 'Hello.', response_eagerness: 100 });
    const fn = await stack.server.request('POST', `/v1/integrations/custom-functions/number/${encodeURIComponent(c.number)}`, {
      key: c.key,
      body: { name: 'lookup_order', url: receiver.url(fnPath, 'localhost'), parameters: ORDER_SCHEMA },
    });
    expect(fn.status, fn.text).toBe(201);
    await stopService();
    await startService(false);

    const llmBefore = turns().length;
    llm.reply({ toolCalls: [{ name: 'lookup_order', arguments: { order_id: '1' } }] }, { text: 'I cannot look that up right now.' });
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const before = far.heardBytes();
    await far.say('book-table', 'Where is order 1?');
    await agentSpeaks(far, before);
    expect(toolMessages(turns()[llmBefore + 1]!.body.messages).at(-1)!.content).toBe('{"error":"the tool could not be reached (its address is not allowed)"}');
    expect(receiver.to(fnPath)).toEqual([]);
    await far.hangup();
  }, 60_000);
});
