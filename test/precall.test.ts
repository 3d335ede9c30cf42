// The pre-call gate end to end, on both carriers: a caller rings a number with a pre-call
// URL on a local HTTPS receiver (a throwaway CA, trusted by the service through
// NODE_EXTRA_CA_CERTS: the service runs as a child process), the receiver answers allow,
// reject, transfer, allow with a custom prompt and variables, or nothing for 5 s; the
// tests check what the carrier saw (TwiML, commands), what the receiver got (signed with
// the account's secret, checked by the `standardwebhooks` package), what the model was
// told, and the call record's `precall`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { eventually, newCustomer, startSims, PUBLIC_BASE, type Customer } from './helpers/calls.ts';
import { nextNumber } from './helpers/fixtures.ts';
import { agentSpeaks, recordWhere, ringAgent, KEYS, type ConversationStack, type FarEnd, type Provider } from './helpers/conversation.ts';
import { startServiceProcess, type ServiceProcess } from './helpers/process.ts';
import { remote } from './helpers/remote.ts';
import { startLlmSim } from './sim/llm-sim.ts';
import { startDeepgramSim } from './sim/deepgram-sim.ts';
import { startOpenAiTtsSim } from './sim/openai-tts-sim.ts';
import { makeTestCa, startWebhookReceiver, type ReceivedWebhook, type ScriptedAnswer, type TestCa, type WebhookReceiver } from './sim/webhook-receiver.ts';
import { readTwiml } from './sim/twiml-reader.ts';

let stack: ConversationStack;
let service: ServiceProcess;
let ca: TestCa;
let receiver: WebhookReceiver;
let dataDir: string;

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
  const sims = await startSims();
  const llm = await startLlmSim({ apiKey: KEYS.llm, firstTokenMs: 40, tokenMs: 4 });
  const stt = await startDeepgramSim({ apiKey: KEYS.stt, finalLatencyMs: 30 });
  const tts = await startOpenAiTtsSim({ apiKey: KEYS.tts, firstAudioMs: 30 });
  dataDir = mkdtempSync(join(tmpdir(), 'switchboard-precall-'));
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
    ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
    KEY_CREATION_PER_HOUR_PER_IP: '100000',
    NODE_EXTRA_CA_CERTS: ca.caFile,
  });
  sims.twilio.route(PUBLIC_BASE, service.url);
  sims.telnyx.redirect(PUBLIC_BASE, service.url);
  const server = remote(service.url);
  stack = {
    sims,
    server,
    llm,
    stt,
    tts,
    // Not used: the service speaks through the OpenAI-compatible TTS simulator.
    cartesia: null as never,
    async close() {
      await sims.close();
      service.child.kill('SIGTERM');
      await service.exited;
      await Promise.all([llm.close(), stt.close(), tts.close()]);
    },
  };
}, 40_000);

afterAll(async () => {
  await stack?.close();
  await receiver?.close();
  ca?.dispose();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

let paths = 0;
const newPath = (what: string) => `/precall/${what}-${++paths}`;
const json = (body: unknown, delayMs?: number): ScriptedAnswer => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
  ...(delayMs === undefined ? {} : { delayMs }),
});

/** A customer whose number's pre-call URL is `path` on the receiver, answering `answer`. */
async function gated(provider: Provider, path: string, answer: ScriptedAnswer, agent: Record<string, unknown> = {}): Promise<Customer> {
  const c = await newCustomer(stack, provider, { welcome_message: 'Hello.', ...agent });
  const res = await stack.server.request('PUT', `/v1/integrations/precall/number/${encodeURIComponent(c.number)}`, { key: c.key, body: { url: receiver.url(path) } });
  expect(res.status, res.text).toBeLessThan(300);
  receiver.script(path, answer);
  return c;
}

async function secretOf(key: string): Promise<string> {
  const res = await stack.server.request('GET', '/v1/webhooks/secret', { key });
  expect(res.status, res.text).toBe(200);
  return res.body.secret as string;
}

/** The standardwebhooks package's verdict on the request, with the account's secret. */
function verified(secret: string, r: ReceivedWebhook): unknown {
  return new Webhook(secret).verify(r.body, r.headers);
}

/** The TwiML verbs carrier A was answered with for the incoming call. */
const twimlOf = (xml: string | null) => readTwiml(xml ?? '') ?? [];

describe.each<Provider>(['twilio', 'telnyx'])('the pre-call gate on carrier %s', (provider) => {
  it('allow: the agent answers; the request is signed and carries the call and the caller record', async () => {
    const path = newPath(`allow-${provider}`);
    const c = await gated(provider, path, json({ action: 'allow' }));
    const from = nextNumber();
    const put = await stack.server.request('PUT', `/v1/phone-numbers/${encodeURIComponent(c.number)}/callers/${encodeURIComponent(from)}`, {
      key: c.key,
      body: { name: 'Maria Lopez', preference: 'mornings' },
    });
    expect(put.status, put.text).toBe(200);

    const far = await ringAgent(stack, c, from);
    await agentSpeaks(far);

    const [req] = await receiver.waitFor(path);
    expect(verified(await secretOf(c.key), req!)).toBeTruthy();
    expect(JSON.parse(req!.body)).toEqual({
      event: 'call.precall',
      call_id: far.id,
      agent_id: c.agentId,
      from,
      to: c.number,
      direction: 'inbound',
      caller: { name: 'Maria Lopez', preference: 'mornings' },
    });
    const record = await recordWhere(stack, c, far.id, (r) => r.precall !== null);
    expect(record.call_status).toBe('in-progress');
    expect(record.precall).toMatchObject({ source: 'number', action: 'allow', outcome: 'answered', error: null, status_code: 200, transfer_number: null, prompt_applied: false });
    expect(record.precall.latency_ms).toBeLessThan(3000);
    await far.hangup();
  });

  it('reject: the carrier refuses the call unanswered and the agent never speaks', async () => {
    const path = newPath(`reject-${provider}`);
    const c = await gated(provider, path, json({ action: 'reject' }));
    let callId: string;
    if (provider === 'twilio') {
      const call = await stack.sims.twilio.placeInboundCall({ from: nextNumber(), to: c.number });
      callId = call.callSid;
      expect(twimlOf(call.twiml).map((v) => v.name)).toEqual(['Reject']);
      expect(await call.ended).toBe('no-answer');
      expect(call.stream).toBeNull();
    } else {
      const handle = await stack.sims.telnyx.placeInboundCall({ from: nextNumber(), to: c.number, apiKey: c.carrierAccount });
      callId = handle.id;
      const ended = await handle.waitFor('ended');
      expect(handle.call.commands.map((x) => [x.action, x.body.cause])).toEqual([['reject', 'CALL_REJECTED']]);
      expect(ended.hangupCause).toBe('call_rejected');
      expect(ended.answeredAt).toBeNull();
    }
    const record = await recordWhere(stack, c, callId, (r) => r.ended_reason !== null);
    expect(record).toMatchObject({ call_status: 'canceled', ended_reason: 'precall_rejected', charged_minutes: 0, duration_ms: 0, transcript: null });
    expect(record.precall).toMatchObject({ action: 'reject', outcome: 'answered' });
  });

  it('transfer: the carrier hands the call to the number given, without the agent', async () => {
    const path = newPath(`transfer-${provider}`);
    const target = nextNumber();
    const c = await gated(provider, path, json({ action: 'transfer', transfer_number: target }));
    const llmBefore = stack.llm.requests.length;
    const ttsBefore = stack.tts.requests.length;
    let callId: string;
    if (provider === 'twilio') {
      const call = await stack.sims.twilio.placeInboundCall({ from: nextNumber(), to: c.number });
      callId = call.callSid;
      const verbs = twimlOf(call.twiml);
      expect(verbs.map((v) => v.name)).toEqual(['Dial']);
      expect(verbs[0]!.children.map((n) => [n.name, n.text])).toEqual([['Number', target]]);
      expect(call.stream).toBeNull();
      await call.hangup();
    } else {
      const handle = await stack.sims.telnyx.placeInboundCall({ from: nextNumber(), to: c.number, apiKey: c.carrierAccount });
      callId = handle.id;
      expect(handle.call.commands.map((x) => [x.action, x.body.to])).toEqual([['transfer', target]]);
      expect(handle.call.transferredTo).toBe(target);
      expect(handle.call.stream).toBeNull();
      await handle.hangup();
    }
    const record = await recordWhere(stack, c, callId, (r) => r.ended_reason !== null);
    expect(record).toMatchObject({ call_status: 'completed', ended_reason: 'transferred', charged_minutes: 0, duration_ms: 0 });
    expect(record.precall).toMatchObject({ action: 'transfer', outcome: 'answered', transfer_number: target });
    // Nobody spoke to the caller: no model request, no speech made.
    expect(stack.llm.requests.length).toBe(llmBefore);
    expect(stack.tts.requests.length).toBe(ttsBefore);
  });

  it('custom_prompt and dynamic_vars reach this call’s model request, and that call’s only', async () => {
    const path = newPath(`prompt-${provider}`);
    const c = await gated(
      provider,
      path,
      json({ action: 'allow', custom_prompt: 'PRECALL-MARKER: offer {first_name} the spring discount.', dynamic_vars: { first_name: 'Maria', tier: 'gold', visits: 7 } }),
      { system_prompt: 'You are the clinic receptionist.', welcome_message: 'Hello.', response_eagerness: 200 },
    );
    /** The system message of the model request the caller's first words bring. */
    const systemMessageOf = async (far: FarEnd): Promise<string> => {
      await agentSpeaks(far, 0, 15_000, 300);
      const before = stack.llm.requests.length;
      stack.llm.reply({ text: 'Sure.' });
      await far.say('saturday-hours');
      await eventually(() => (stack.llm.requests.length > before ? true : undefined), 10_000, 'the model request');
      const system = stack.llm.requests[before]!.body.messages[0]!;
      expect(system.role).toBe('system');
      return String(system.content);
    };

    const far = await ringAgent(stack, c);
    const system = await systemMessageOf(far);
    expect(system).toContain('You are the clinic receptionist.');
    expect(system).toContain('PRECALL-MARKER: offer Maria the spring discount.');
    expect(system).toContain('- tier: gold');
    expect(system).toContain('- visits: 7');
    const record = await recordWhere(stack, c, far.id, (r) => r.precall !== null);
    expect(record.precall).toMatchObject({ action: 'allow', outcome: 'answered', prompt_applied: true });
    await far.hangup();

    // The next call on the same number, with a plain allow, carries no trace of it.
    receiver.script(path, json({ action: 'allow' }));
    const next = await ringAgent(stack, c);
    const nextSystem = await systemMessageOf(next);
    expect(nextSystem).toContain('You are the clinic receptionist.');
    expect(nextSystem).not.toContain('PRECALL-MARKER');
    expect(nextSystem).not.toContain('gold');
    await next.hangup();
  }, 40_000);

  it('a receiver that waits 5 s: the call goes through after about 3 s', async () => {
    const path = newPath(`slow-${provider}`);
    const c = await gated(provider, path, json({ action: 'reject' }, 5000));
    const started = performance.now();
    const far = await ringAgent(stack, c);
    const answeredAfter = performance.now() - started;
    expect(answeredAfter).toBeGreaterThanOrEqual(2900);
    expect(answeredAfter).toBeLessThan(4800);
    await agentSpeaks(far);
    const record = await recordWhere(stack, c, far.id, (r) => r.precall !== null);
    expect(record.call_status).toBe('in-progress');
    expect(record.precall).toMatchObject({ action: 'allow', outcome: 'timeout', status_code: null });
    expect(record.precall.latency_ms).toBeGreaterThanOrEqual(2900);
    expect(record.precall.latency_ms).toBeLessThan(3900);
    await far.hangup();
  }, 30_000);
});

describe('the pre-call gate, other answers and settings', () => {
  it.each<[string, ScriptedAnswer, Record<string, unknown>]>([
    ['a 500', { status: 500, body: '{"action":"reject"}' }, { outcome: 'error', error: 'HTTP 500', status_code: 500 }],
    ['not JSON', { status: 200, body: 'reject please' }, { outcome: 'error', error: 'the answer is not JSON' }],
    ['an unknown action', json({ action: 'block' }), { outcome: 'error' }],
    ['a transfer without a valid number', json({ action: 'transfer', transfer_number: '555-0100' }), { outcome: 'error' }],
    ['more than 32 KB', json({ action: 'reject', padding: 'x'.repeat(40_000) }), { outcome: 'error' }],
    ['a cut connection', 'destroy', { outcome: 'error', status_code: null }],
  ])('%s lets the call through', async (_what, answer, precall) => {
    const path = newPath('bad');
    const c = await gated('twilio', path, answer);
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const record = await recordWhere(stack, c, far.id, (r) => r.precall !== null);
    expect(record.precall).toMatchObject({ action: 'allow', ...precall });
    await far.hangup();
  });

  it("uses the agent's URL when the number has none, and the number's over the agent's", async () => {
    const agentPath = newPath('agent');
    const c = await newCustomer(stack, 'twilio', { welcome_message: 'Hello there.' });
    const put = await stack.server.request('PUT', `/v1/integrations/precall/agent/${c.agentId}`, { key: c.key, body: { url: receiver.url(agentPath) } });
    expect(put.status, put.text).toBeLessThan(300);
    receiver.script(agentPath, json({ action: 'reject' }));
    const first = await stack.sims.twilio.placeInboundCall({ from: nextNumber(), to: c.number });
    expect(twimlOf(first.twiml).map((v) => v.name)).toEqual(['Reject']);
    expect((await recordWhere(stack, c, first.callSid, (r) => r.precall !== null)).precall).toMatchObject({ source: 'agent', action: 'reject' });

    const numberPath = newPath('number');
    await stack.server.request('PUT', `/v1/integrations/precall/number/${encodeURIComponent(c.number)}`, { key: c.key, body: { url: receiver.url(numberPath) } });
    receiver.script(numberPath, json({ action: 'allow' }));
    const agentAsked = receiver.to(agentPath).length;
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    expect(receiver.to(numberPath)).toHaveLength(1);
    expect(receiver.to(agentPath)).toHaveLength(agentAsked);
    await far.hangup();
  });

  it('no pre-call URL: the call is answered as before and precall is null', async () => {
    const c = await newCustomer(stack, 'telnyx', { welcome_message: 'Hello there.' });
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const record = await recordWhere(stack, c, far.id, (r) => r.call_status === 'in-progress');
    expect(record.precall).toBeNull();
    await far.hangup();
  });
});
