// A crash in the middle of a transfer: the service runs as a child process with the
// conversation engine (the carrier and provider simulators in this process); the model
// asks for a cold transfer, and the process is SIGKILLed the moment the carrier has the
// transfer request, before or after its answer was recorded. Started again on the same
// data folder, the call is reconciled with the carrier, never transferred twice: carrier
// A is asked about the call's `<Dial>` leg (one TwiML update ever), carrier B's request
// is resent inside its command_id window and the carrier drops the repeat (one leg
// ever). The target answers after the restart and the call ends `transferred`, its caller
// still on the line with the target.
// The second case is a slow restart: the target answers (and is connected) while the
// service is down, so every webhook saying so is lost; killed before or after the
// request's answer was recorded. After the restart the service asks the carrier instead
// of waiting (carrier A: the `<Dial>` leg is in progress; carrier B: its log of the
// caller's leg has the bridge, and when) and the call ends `transferred` at once.
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newCustomer, startSims, type Provider } from '../helpers/calls.ts';
import { agentSpeaks, KEYS, recordWhere, ringAgent, type ConversationStack } from '../helpers/conversation.ts';
import { startLlmSim, type LlmSim } from '../sim/llm-sim.ts';
import { startDeepgramSim, type DeepgramSim } from '../sim/deepgram-sim.ts';
import { startOpenAiTtsSim, type OpenAiTtsSim } from '../sim/openai-tts-sim.ts';
import type { CarrierSims } from '../helpers/fixtures.ts';
import { serviceRig, sleep, type ServiceRig } from './support.ts';

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

/** Whether the carrier's request for this transfer matches (the one request a test delays). */
function isTransferRequest(provider: Provider, callId: string, r: { method: string; path: string; body: unknown }): boolean {
  if (provider === 'twilio') return r.method === 'POST' && r.path.endsWith(`/Calls/${callId}.json`) && (r.body as Record<string, unknown>)['Twiml'] !== undefined;
  return r.method === 'POST' && r.path === `/v2/calls/${encodeURIComponent(callId)}/actions/transfer`;
}

/** The call's transfer requests committed as sent whose answer is not recorded yet (by the carrier's id of the call). */
function unansweredRequests(callId: string): number {
  const db = new Database(rig.dbFile, { readonly: true });
  try {
    const sql = `SELECT COUNT(*) AS n FROM effect_intents i JOIN calls c ON c.internal_id = i.actor_id
                 WHERE c.carrier_call_id = ? AND i.effect = 'placeTransfer' AND i.sent_at IS NOT NULL`;
    return (db.prepare(sql).get(callId) as { n: number }).n;
  } finally {
    db.close();
  }
}

/**
 * The desk answered and the caller was connected to it at the carrier, and every webhook
 * saying so failed (nothing listened): when the handoff happened there, or undefined.
 */
function handoffLostAtCarrier(provider: Provider, callId: string): number | undefined {
  if (provider === 'twilio') {
    const dial = sims.twilio.calls.get(callId)?.dials[0];
    if (!dial || dial.bridgedAt === null || dial.answeredAt === null) return undefined;
    const told = sims.twilio.webhooks.filter((w) => w.callSid === dial.childSid && w.url.includes('/carrier/twilio/transfer-status'));
    return told.length > 0 && told.every((w) => w.status === null) ? dial.answeredAt : undefined;
  }
  const caller = sims.telnyx.calls.calls.get(callId);
  if (!caller || caller.bridgedAt === null) return undefined;
  const told = caller.webhooks.filter((w) => w.eventType === 'call.bridged');
  return told.length > 0 && told.every((w) => w.status === null) ? caller.bridgedAt : undefined;
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

  it.each(['before', 'after'] as const)(
    'the desk answers while the service is down (killed %s the request’s answer was recorded): asked after the restart, transferred once',
    { timeout: 120_000 },
    async (killed) => {
      // A short ring: the kill comes first, the answer before the (slow) restart.
      const ringMs = 1_500;
      if (provider === 'twilio') sims.twilio.scenario(DESK, { name: 'answer', ringMs });
      else sims.telnyx.calls.setRingMs(DESK, ringMs);
      const c = await newCustomer(stack, provider, {
        system_prompt: 'You are the front desk. When a caller asks for a person, transfer the call.',
        transfer_type: 'cold',
        transfer_number: DESK,
      });
      const far = await ringAgent(stack, c);
      await agentSpeaks(far);
      // `before`: the carrier acts on the request at once and answers it late; the process dies meanwhile.
      if (killed === 'before') {
        const fault = { match: (r: { method: string; path: string; body: unknown }) => isTransferRequest(provider, far.id, r), delayMs: 8_000 };
        if (provider === 'twilio') sims.twilio.fail(fault);
        else sims.telnyx.fail(fault);
      }
      llm.reply({ text: 'Transferring you now.', toolCalls: [{ name: 'transfer_call', arguments: {} }] });
      await far.say('maria-order', 'Can I talk to a person please?');

      await eventually(() => (transferRequests(provider, far.id) > 0 ? true : undefined), 20_000, 'the transfer request');
      if (killed === 'after') await eventually(() => (unansweredRequests(far.id) === 0 ? true : undefined), 10_000, 'the request’s answer to be recorded');
      else expect(unansweredRequests(far.id)).toBe(1);
      await rig.kill();
      // The desk answers and is connected to the caller; the carrier's webhooks saying so find nobody.
      const handoffAt = await eventually(() => handoffLostAtCarrier(provider, far.id), 30_000, 'the desk to answer while the service is down');
      await sleep(1_000);
      stack.server = await rig.start();

      const record = await recordWhere(stack, c, far.id, (r) => r.ended_reason !== null, 40_000, 'the call to be reconciled');
      expect(record.ended_reason).toBe('transferred');
      expect(record.call_status).toBe('completed');
      if (provider === 'twilio') {
        // Never sent again: the one TwiML update, one <Dial> leg, the caller with the desk.
        expect(transferRequests('twilio', far.id)).toBe(1);
        const call = sims.twilio.calls.get(far.id)!;
        expect(call.dials).toHaveLength(1);
        expect(call.dials[0]!.bridgedAt).not.toBeNull();
        expect(call.status).toBe('in-progress');
      } else {
        // At most resent inside the command_id window and dropped there: one leg ever.
        const calls = sims.telnyx.calls;
        const legs = [...calls.calls.values()].filter((x) => x.direction === 'outgoing' && x.to === DESK && x.from === c.number);
        expect(legs).toHaveLength(1);
        const caller = calls.calls.get(far.id)!;
        expect(caller.bridgedWith).toBe(legs[0]!.callControlId);
        expect(caller.status).toBe('answered');
        // The handoff is when the carrier connected them (its log says), not when we learnt it.
        expect(Math.abs(Date.parse(record.ended_at) - handoffAt)).toBeLessThan(1_000);
      }
      await far.hangup();
    },
  );
});
