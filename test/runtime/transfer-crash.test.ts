// A crash in the middle of a transfer: the service runs as a child process with the
// conversation engine (the carrier and provider simulators in this process); the model
// asks for a cold transfer, and the process is SIGKILLed the moment the carrier has the
// transfer request, before or after its answer was recorded. Started again on the same
// data folder, the call is reconciled with the carrier, never transferred twice: carrier
// A is asked about the call's `<Dial>` leg (one TwiML update ever), carrier B's request
// is resent inside its command_id window and the carrier drops the repeat (one leg
// ever). The target answers after the restart and the call ends `transferred`, its caller
// still on the line with the target.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newCustomer, startSims, type Provider } from '../helpers/calls.ts';
import { agentSpeaks, KEYS, recordWhere, ringAgent, type ConversationStack } from '../helpers/conversation.ts';
import { startLlmSim, type LlmSim } from '../sim/llm-sim.ts';
import { startDeepgramSim, type DeepgramSim } from '../sim/deepgram-sim.ts';
import { startOpenAiTtsSim, type OpenAiTtsSim } from '../sim/openai-tts-sim.ts';
import type { CarrierSims } from '../helpers/fixtures.ts';
import { serviceRig, type ServiceRig } from './support.ts';

const DESK = '+12125550188';
let sims: CarrierSims;
let llm: LlmSim;
let stt: DeepgramSim;
let tts: OpenAiTtsSim;
let rig: ServiceRig;
let stack: ConversationStack;

beforeAll(async () => {
  sims = await startSims(60);
  llm = await startLlmSim({ apiKey: KEYS.llm, firstTokenMs: 40, tokenMs: 4 });
  stt = await startDeepgramSim({ apiKey: KEYS.stt, finalLatencyMs: 30 });
  tts = await startOpenAiTtsSim({ apiKey: KEYS.tts, firstAudioMs: 30 });
  rig = await serviceRig(sims, {
    MEDIA_ENGINE: 'agent',
    LLM_BASE_URL: llm.baseUrl,
    LLM_API_KEY: KEYS.llm,
    DEEPGRAM_BASE_URL: stt.url,
    DEEPGRAM_API_KEY: KEYS.stt,
    TTS_BASE_URL: tts.baseUrl,
    TTS_API_KEY: KEYS.tts,
    SCHEDULER_INTERVAL_MS: '250',
  });
  const server = await rig.start();
  // What the conversation helpers need: the simulators, and the server (replaced on restart).
  stack = { sims, server, llm, stt, tts, cartesia: null as never, close: async () => {} } as ConversationStack;
}, 60_000);

afterAll(async () => {
  await rig?.close();
  await Promise.all([sims?.close(), llm?.close(), stt?.close(), tts?.close()]);
});

/** The transfer requests the carrier received for a caller's leg. */
function transferRequests(provider: Provider, callId: string): number {
  if (provider === 'twilio') {
    return sims.twilio.requests.filter((r) => r.method === 'POST' && r.path.endsWith(`/Calls/${callId}.json`) && r.body['Twiml'] !== undefined).length;
  }
  return sims.telnyx.requests.filter((r) => r.method === 'POST' && r.path === `/v2/calls/${encodeURIComponent(callId)}/actions/transfer`).length;
}

describe.each<Provider>(['twilio', 'telnyx'])('carrier %s', (provider) => {
  it('SIGKILL as the transfer leaves: reconciled after the restart, transferred once', { timeout: 90_000 }, async () => {
    // The desk rings long enough to answer only after the restart.
    const ringMs = 6_000;
    if (provider === 'twilio') sims.twilio.scenario(DESK, { name: 'answer', ringMs });
    else sims.telnyx.calls.setRingMs(DESK, ringMs);
    const c = await newCustomer(stack, provider, {
      system_prompt: 'You are the front desk. When a caller asks for a person, transfer the call.',
      transfer_type: 'cold',
      transfer_number: DESK,
    });
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    llm.reply({ text: 'Transferring you now.', toolCalls: [{ name: 'transfer_call', arguments: {} }] });
    await far.say('maria-order', 'Can I talk to a person please?');

    // The carrier has the request: the process dies at once.
    await eventually(() => (transferRequests(provider, far.id) > 0 ? true : undefined), 20_000, 'the transfer request');
    await rig.kill();
    stack.server = await rig.start();

    const record = await recordWhere(stack, c, far.id, (r) => r.ended_reason !== null, 40_000, 'the call to be reconciled');
    expect(record.ended_reason).toBe('transferred');
    expect(record.call_status).toBe('completed');
    if (provider === 'twilio') {
      // One TwiML update, one <Dial> leg; the caller is with the desk, not hung up.
      expect(transferRequests('twilio', far.id)).toBe(1);
      const call = sims.twilio.calls.get(far.id)!;
      expect(call.dials).toHaveLength(1);
      expect(call.dials[0]!.bridgedAt).not.toBeNull();
      expect(call.status).toBe('in-progress');
    } else {
      // Resent inside the command_id window at most, and the repeat placed nothing.
      const calls = sims.telnyx.calls;
      const legs = [...calls.calls.values()].filter((x) => x.direction === 'outgoing' && x.to === DESK && x.from === c.number);
      expect(legs).toHaveLength(1);
      const caller = calls.calls.get(far.id)!;
      expect(caller.bridgedWith).toBe(legs[0]!.callControlId);
      expect(caller.status).toBe('answered');
    }
    await far.hangup();
  });
});
