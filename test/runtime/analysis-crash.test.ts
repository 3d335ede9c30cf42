// Post-call analysis across crashes: the service runs as a child process with the
// conversation engine (carrier, provider simulators and an HTTPS receiver in this
// process, its CA trusted through NODE_EXTRA_CA_CERTS). A call ends; the model holds
// the analysis request and the process is SIGKILLed while it waits.
//   1. Started again, the job committed with the call's end runs again: the analysis is
//      recorded once and call.completed is delivered once, with it.
//   2. A call whose every attempt is cut short by a crash does not hold call.completed
//      back for ever: each attempt was counted before it left, so once they are used up
//      the analysis is recorded failed and call.completed goes out with the fields null.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newCustomer, startSims, type Customer } from '../helpers/calls.ts';
import { agentSpeaks, KEYS, recordWhere, ringAgent, type ConversationStack } from '../helpers/conversation.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import type { CarrierSims } from '../helpers/fixtures.ts';
import { startLlmSim, type LlmSim } from '../sim/llm-sim.ts';
import { startDeepgramSim, type DeepgramSim } from '../sim/deepgram-sim.ts';
import { startOpenAiTtsSim, type OpenAiTtsSim } from '../sim/openai-tts-sim.ts';
import { makeTestCa, startWebhookReceiver, type TestCa, type WebhookReceiver } from '../sim/webhook-receiver.ts';
import { serviceRig, sleep, type ServiceRig } from './support.ts';

const ANSWER = { summary: 'The caller booked a table for two.', sentiment: 'happy', successful: true, open_item: null };
const FAST_MS = 40;
/** Longer than the test waits: the request is still open when the process is killed. */
const HELD_MS = 120_000;

let sims: CarrierSims;
let llm: LlmSim;
let stt: DeepgramSim;
let tts: OpenAiTtsSim;
let ca: TestCa;
let receiver: WebhookReceiver;
let rig: ServiceRig;
let stack: ConversationStack;

beforeAll(async () => {
  sims = await startSims(60);
  llm = await startLlmSim({ apiKey: KEYS.llm, firstTokenMs: FAST_MS, tokenMs: 4 });
  stt = await startDeepgramSim({ apiKey: KEYS.stt, finalLatencyMs: 30 });
  tts = await startOpenAiTtsSim({ apiKey: KEYS.tts, firstAudioMs: 30 });
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
  rig = await serviceRig(sims, {
    MEDIA_ENGINE: 'agent',
    LLM_BASE_URL: llm.baseUrl,
    LLM_API_KEY: KEYS.llm,
    DEEPGRAM_BASE_URL: stt.url,
    DEEPGRAM_API_KEY: KEYS.stt,
    TTS_BASE_URL: tts.baseUrl,
    TTS_API_KEY: KEYS.tts,
    SCHEDULER_INTERVAL_MS: '250',
    ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
    NODE_EXTRA_CA_CERTS: ca.caFile,
    WEBHOOK_RETRY_SCHEDULE_MS: '200,200,200,200,200',
  });
  const server = await rig.start();
  stack = { sims, server, llm, stt, tts, cartesia: null as never, close: async () => {} } as ConversationStack;
}, 60_000);

afterAll(async () => {
  await rig?.close();
  await Promise.all([sims?.close(), llm?.close(), stt?.close(), tts?.close(), receiver?.close()]);
  ca?.dispose();
});

const analysisRequests = (): number => llm.structuredRequests.length;
const completedTo = (path: string): any[] =>
  receiver
    .to(path)
    .map((r) => JSON.parse(r.body))
    .filter((b) => b.event === 'call.completed');

/** A short conversation; the model holds every later request (the analysis) before the caller hangs up. */
async function converseThenHold(c: Customer): Promise<string> {
  const far = await ringAgent(stack, c, nextNumber());
  await agentSpeaks(far);
  const before = far.heardBytes();
  await far.say('book-table');
  await agentSpeaks(far, before);
  llm.setLatency({ firstTokenMs: HELD_MS });
  // Every attempt of the analysis is answered well, when it is answered at all.
  llm.replyStructured(...Array.from({ length: 3 }, () => ({ text: JSON.stringify(ANSWER) })));
  await far.hangup();
  return far.id;
}

/** Waits for the model to have the `n`th analysis request, checks the analysis is still pending, and kills the process. */
async function killDuringAttempt(c: Customer, id: string, n: number): Promise<void> {
  await eventually(() => (analysisRequests() >= n ? true : undefined), 20_000, `analysis request ${n}`);
  const record = await recordWhere(stack, c, id, () => true);
  expect(record.analysis_status).toBe('pending');
  await rig.kill();
}

async function setWebhook(c: Customer, path: string): Promise<void> {
  const res = await stack.server.request('PUT', `/v1/integrations/webhook/number/${encodeURIComponent(c.number)}`, { key: c.key, body: { url: receiver.url(path) } });
  expect(res.status, res.text).toBe(200);
}

describe('post-call analysis and SIGKILL', () => {
  it('an analysis cut short by a crash runs again after the restart: recorded once, call.completed delivered once', { timeout: 90_000 }, async () => {
    const c = await newCustomer(stack, 'twilio');
    await setWebhook(c, '/resumed');
    const before = analysisRequests();
    const id = await converseThenHold(c);
    await killDuringAttempt(c, id, before + 1);
    expect(completedTo('/resumed')).toHaveLength(0);

    llm.setLatency({ firstTokenMs: FAST_MS });
    stack.server = await rig.start();
    const record = await recordWhere(stack, c, id, (r) => r.analysis_status !== 'pending', 20_000, 'the analysis after the restart');
    expect(record).toMatchObject({ analysis_status: 'done', summary: ANSWER.summary, sentiment: 'happy', successful: true });
    expect(analysisRequests()).toBe(before + 2);

    await eventually(() => (completedTo('/resumed').length > 0 ? true : undefined), 15_000, 'call.completed');
    await sleep(1500);
    const sent = completedTo('/resumed');
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ call_id: id, summary: ANSWER.summary, sentiment: 'happy', successful: true });
    const listed = await stack.server.request('GET', `/v1/webhooks/deliveries?call_id=${encodeURIComponent(id)}`, { key: c.key });
    expect(listed.body.deliveries.filter((d: any) => d.event === 'call.completed')).toHaveLength(1);
  });

  it('attempts used up by crashes end in failed, and call.completed still goes out with the fields null', { timeout: 120_000 }, async () => {
    // Two attempts in all.
    const env = { ANALYSIS_RETRY_SCHEDULE_MS: '100' };
    const c = await newCustomer(stack, 'twilio');
    await setWebhook(c, '/crashed');
    const before = analysisRequests();
    const id = await converseThenHold(c);
    await killDuringAttempt(c, id, before + 1);
    stack.server = await rig.start(env);
    await killDuringAttempt(c, id, before + 2);

    llm.setLatency({ firstTokenMs: FAST_MS });
    stack.server = await rig.start(env);
    const record = await recordWhere(stack, c, id, (r) => r.analysis_status !== 'pending', 20_000, 'the analysis to give up');
    expect(record.analysis_status).toBe('failed');
    for (const k of ['summary', 'sentiment', 'successful', 'extracted']) expect(record[k], k).toBeNull();
    // No third request: both attempts were counted before they left.
    expect(analysisRequests()).toBe(before + 2);

    await eventually(() => (completedTo('/crashed').length > 0 ? true : undefined), 15_000, 'call.completed');
    await sleep(1000);
    expect(completedTo('/crashed')).toHaveLength(1);
    expect(completedTo('/crashed')[0]).toMatchObject({ call_id: id, summary: null, sentiment: null, successful: null, extracted: null });
  });
});
