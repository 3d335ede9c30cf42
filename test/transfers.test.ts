// Transfers end to end on both carriers: a caller rings the agent, asks for a person, and
// the model (the llm simulator, scripted) calls its transfer_call tool. Checked from the
// outside, at the carrier simulators and the call record: where the caller was handed to,
// what the caller heard while holding (our chime, then the carrier's ringback on carrier A),
// what the person who answered heard (the whisper, and the caller never did), the bridge,
// charged_minutes stopping at the handoff, a busy / unanswered target bringing the caller
// back to the agent who says so, and the tool not offered when the prompt does not ask.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newCustomer, type Customer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack, type FarEnd, type Provider } from './helpers/conversation.ts';
import { chargedMinutes } from '../machines/call-outcome.ts';
import { decodeMulaw } from '../voice/audio/mulaw.ts';
import type { TwilioSimCall, TwilioSimDial } from './sim/twilio-calls.ts';
import type { SimCall } from './sim/telnyx-calls.ts';
import type { LlmSimRequest } from './sim/llm-sim.ts';

let stack: ConversationStack;
beforeAll(async () => {
  stack = await startConversationStack();
});
afterAll(async () => {
  await stack?.close();
});

const DESK = '+12125550188';
const BILLING = '+12125550177';
const PROMPT = `You are the front desk of Acme Plumbing. When a caller asks for a person, transfer the call. Billing questions go to ${BILLING}.`;
const ASK = 'I would like to talk to a person about my order please.';

/** The caller's view at the carrier: the sim's own records of the call. */
interface CarrierSide {
  /** The number the caller was handed to, once the carrier placed the target's leg. */
  target(): string | null;
  /** When the caller and the target were connected (sim clock, epoch ms). */
  bridgedAt(): number | null;
  /** What the person who answered heard before the bridge. */
  whisper(): string[];
  /** What the caller heard from us on every media stream of the call, in order. */
  callerAudio(): Uint8Array;
  /** The target's leg hangs up (the transferee ends the call). */
  hangupTarget(): Promise<unknown>;
}

function carrierSide(provider: Provider, far: FarEnd): CarrierSide {
  if (provider === 'twilio') {
    const call = stack.sims.twilio.calls.get(far.id) as TwilioSimCall;
    const dial = (): TwilioSimDial | undefined => call.dials.at(-1);
    return {
      target: () => dial()?.to ?? null,
      bridgedAt: () => dial()?.bridgedAt ?? null,
      whisper: () => dial()?.whisper ?? [],
      callerAudio: () => concat(call.streams.map((s) => s.receivedAudio())),
      hangupTarget: () => stack.sims.twilio.hangup(dial()!.childSid),
    };
  }
  const calls = stack.sims.telnyx.calls;
  const call = calls.calls.get(far.id) as SimCall;
  // The target's leg: placed from our number (the caller id the target sees) during this call.
  const leg = (): SimCall | undefined => [...calls.calls.values()].find((c) => c.direction === 'outgoing' && c.from === call.to && c.startedAt >= call.startedAt);
  return {
    target: () => leg()?.to ?? null,
    bridgedAt: () => call.bridgedAt,
    whisper: () => leg()?.spoken ?? [],
    callerAudio: () => concat(call.media?.audio ?? []),
    hangupTarget: () => stack.sims.telnyx.hangup(leg()!.callControlId),
  };
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Root mean square of μ-law audio, as a share of full scale. */
function rms(mulaw: Uint8Array): number {
  if (mulaw.length === 0) return 0;
  const pcm = decodeMulaw(mulaw);
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / pcm.length) / 32768;
}

const ms = (iso: string): number => Date.parse(iso);

/**
 * The conversation's first model request at or after `from` (its turns are streamed;
 * the post-call analysis of an earlier call, not streamed, may arrive in between).
 */
function turnRequest(from: number): LlmSimRequest['body'] {
  const found = stack.llm.requests.slice(from).find((r) => r.body.stream === true);
  if (!found) throw new Error(`no streamed model request since #${from}`);
  return found.body;
}

/** The caller rings, hears the greeting, and asks for a person; the model answers with `reply` (and its tool calls). */
async function askForAPerson(c: Customer, reply: { text?: string; toolCalls?: { name: string; arguments: unknown }[] }): Promise<{ far: FarEnd; llmIndex: number }> {
  const far = await ringAgent(stack, c);
  await agentSpeaks(far);
  const llmIndex = stack.llm.requests.length;
  stack.llm.reply(reply);
  await far.say('maria-order', ASK);
  await eventually(() => stack.llm.requests.slice(llmIndex).find((r) => r.body.stream === true), 10_000, 'the model to be asked');
  return { far, llmIndex };
}

describe.each<Provider>(['twilio', 'telnyx'])('transfers on carrier %s', (provider) => {
  it('cold: the caller is handed to transfer_number, the AI leg ends, the meter stops at the handoff', async () => {
    const c = await newCustomer(stack, provider, { system_prompt: PROMPT, transfer_type: 'cold', transfer_number: DESK });
    const ttsBefore = stack.tts.requests.length;
    const { far, llmIndex } = await askForAPerson(c, { text: 'Of course, I am transferring you now.', toolCalls: [{ name: 'transfer_call', arguments: {} }] });
    const side = carrierSide(provider, far);

    // The model was offered the tool, because the prompt asks for transfers.
    const tools = turnRequest(llmIndex).tools?.map((t) => t.function.name);
    expect(tools).toEqual(['end_call', 'transfer_call']);

    const bridgedAt = await eventually(() => side.bridgedAt() ?? undefined, 15_000, 'the bridge');
    expect(side.target()).toBe(DESK);
    expect(side.whisper()).toEqual([]);
    const record = await recordWhere(stack, c, far.id, (r) => r.ended_reason === 'transferred', 10_000, 'the call to end transferred');
    expect(record.call_status).toBe('completed');
    // The agent's last words were played and kept before the handoff.
    expect(record.transcript.split('\n').slice(-2)).toEqual([`Caller: ${ASK}`, 'Agent: Of course, I am transferring you now.']);
    expect(stack.tts.requests.slice(ttsBefore).map((r) => r.body.input)).toContain('Of course, I am transferring you now.');

    // The meter stopped at the handoff: the caller and the desk talk on, unbilled.
    const handoff = ms(record.ended_at);
    expect(Math.abs(handoff - bridgedAt)).toBeLessThan(1_500);
    expect(record.duration_ms).toBe(handoff - ms(record.started_at));
    expect(record.charged_minutes).toBe(chargedMinutes(record.duration_ms));
    await new Promise((r) => setTimeout(r, 2_500));
    await far.hangup();
    const after = await recordWhere(stack, c, far.id, () => true);
    expect([after.ended_at, after.duration_ms, after.charged_minutes, after.ended_reason]).toEqual([record.ended_at, record.duration_ms, record.charged_minutes, 'transferred']);
  }, 60_000);

  it('warm: the caller holds (hold audio, not silence), the target hears transfer_whisper first, then the two are bridged', async () => {
    const whisper = 'Maria is calling about order 1042, which arrived damaged.';
    const c = await newCustomer(stack, provider, { system_prompt: PROMPT, transfer_type: 'warm', transfer_number: DESK, transfer_whisper: whisper });
    const ttsBefore = stack.tts.requests.length;
    const { far } = await askForAPerson(c, { text: 'Let me get someone for you, one moment.', toolCalls: [{ name: 'transfer_call', arguments: {} }] });
    const side = carrierSide(provider, far);
    // From the moment the agent's last words end, the caller holds.
    const replyEnd = await eventually(() => (side.target() !== null ? side.callerAudio().length : undefined), 15_000, 'the target to be dialed');
    const bridgedAt = await eventually(() => side.bridgedAt() ?? undefined, 15_000, 'the bridge');
    expect(side.target()).toBe(DESK);
    // Heard by the transferee, never by the caller: our speech provider never spoke it.
    expect(side.whisper()).toEqual([whisper]);
    expect(stack.tts.requests.slice(ttsBefore).map((r) => r.body.input)).not.toContain(whisper);
    if (provider === 'telnyx') {
      // The caller stays on our stream until the bridge, hearing the hold chime: sound, not silence.
      const held = side.callerAudio().subarray(replyEnd);
      expect(held.length).toBeGreaterThan(8 * 300);
      expect(rms(held)).toBeGreaterThan(0.05);
      // At the handoff our stream is let go: the two talk without us.
      await stack.sims.telnyx.calls.handle(far.id).webhook('streaming.stopped', 10_000);
    } else {
      // Our stream played the hold chime after the agent's last words until carrier A took
      // the call: its last 50 ms are sound, not silence …
      const first = stack.sims.twilio.calls.get(far.id)!.streams[0]!.receivedAudio();
      expect(rms(first.subarray(first.length - 400))).toBeGreaterThan(0.05);
      // … and carrier A plays its ringback to the caller from the <Dial> until the bridge.
      const dial = stack.sims.twilio.calls.get(far.id)!.dials[0]!;
      expect(dial.answeredAt).not.toBeNull();
      expect(dial.bridgedAt!).toBeGreaterThanOrEqual(dial.answeredAt!);
    }
    const record = await recordWhere(stack, c, far.id, (r) => r.ended_reason === 'transferred', 10_000, 'the call to end transferred');
    expect(Math.abs(ms(record.ended_at) - bridgedAt)).toBeLessThan(provider === 'twilio' ? 3_500 : 1_500);
    expect(record.charged_minutes).toBe(chargedMinutes(record.duration_ms));
    await side.hangupTarget();
    await far.hangup();
  }, 60_000);

  it('warm without transfer_whisper: the target hears the briefing the model wrote with its tool call', async () => {
    const briefing = 'Maria wants to change the delivery date of her order.';
    const c = await newCustomer(stack, provider, { system_prompt: PROMPT, transfer_type: 'warm', transfer_number: DESK });
    const { far, llmIndex } = await askForAPerson(c, { text: 'One moment, I will connect you.', toolCalls: [{ name: 'transfer_call', arguments: { briefing } }] });
    const side = carrierSide(provider, far);
    // Offered with a briefing to write, since the agent has no whisper of its own.
    const tool = turnRequest(llmIndex).tools!.find((t) => t.function.name === 'transfer_call')!;
    expect(Object.keys((tool.function.parameters as { properties: object }).properties)).toEqual(['number', 'briefing']);
    await eventually(() => side.bridgedAt() ?? undefined, 15_000, 'the bridge');
    expect(side.whisper()).toEqual([briefing]);
    await recordWhere(stack, c, far.id, (r) => r.ended_reason === 'transferred', 10_000, 'the call to end transferred');
    await far.hangup();
  }, 60_000);

  it('warm, and the model gave no briefing: it is asked for one, and the target hears that', async () => {
    const written = 'Maria has a question about a missing part.';
    const c = await newCustomer(stack, provider, { system_prompt: PROMPT, transfer_type: 'warm', transfer_number: DESK });
    const { far } = await askForAPerson(c, { text: 'One moment please.', toolCalls: [{ name: 'transfer_call', arguments: {} }] });
    const llmBefore = stack.llm.requests.length;
    stack.llm.reply({ text: written });
    const side = carrierSide(provider, far);
    await eventually(() => side.bridgedAt() ?? undefined, 15_000, 'the bridge');
    expect(side.whisper()).toEqual([written]);
    // Written from the conversation: the model saw what the caller asked.
    const asked = turnRequest(llmBefore);
    expect(asked.messages.at(-1)!.content).toContain('Write the one or two sentences the colleague hears');
    expect(asked.messages.some((m) => m.role === 'user' && m.content === ASK)).toBe(true);
    expect(asked.tools).toBeUndefined();
    await recordWhere(stack, c, far.id, (r) => r.ended_reason === 'transferred', 10_000, 'the call to end transferred');
    await far.hangup();
  }, 60_000);

  it('a busy target brings the caller back to the agent, who says so; the call goes on', async () => {
    stack.sims.twilio.scenario(BILLING, 'busy');
    stack.sims.telnyx.setScenario(BILLING, 'busy');
    const c = await newCustomer(stack, provider, { system_prompt: PROMPT, transfer_type: 'cold', transfer_number: DESK });
    const sorry = 'I am sorry, billing is busy right now. Can I help you with anything else?';
    // The model names a number its prompt gives: allowed.
    const { far } = await askForAPerson(c, { text: 'I will put you through to billing.', toolCalls: [{ name: 'transfer_call', arguments: { number: BILLING } }] });
    const side = carrierSide(provider, far);
    await eventually(() => side.target() ?? undefined, 15_000, 'the transfer');
    expect(side.target()).toBe(BILLING);
    const llmBefore = stack.llm.requests.length;
    stack.llm.reply({ text: sorry });
    const heard = side.callerAudio().length;
    const record = await recordWhere(stack, c, far.id, (r) => (r.transcript ?? '').includes(sorry), 20_000, 'the agent to say the transfer failed');
    expect(record.call_status).toBe('in-progress');
    expect(record.ended_reason).toBeNull();
    // The model was told why, with the conversation so far.
    const messages = turnRequest(llmBefore).messages;
    expect(messages.map((m) => m.content).join('\n')).toContain('The transfer did not go through: the line was busy');
    expect(messages.some((m) => m.role === 'user' && m.content === ASK)).toBe(true);
    // And the caller heard it (carrier A: on a new media stream).
    expect(side.callerAudio().length).toBeGreaterThan(heard + 8 * 500);
    if (provider === 'twilio') expect(stack.sims.twilio.calls.get(far.id)!.streams).toHaveLength(2);
    expect(side.bridgedAt()).toBeNull();
    await far.hangup();
    const ended = await recordWhere(stack, c, far.id, (r) => r.ended_reason !== null, 10_000, 'the caller to hang up');
    expect(ended.ended_reason).toBe('caller_hangup');
  }, 60_000);

  it('a warm transfer nobody answers also comes back to the agent', async () => {
    const nobody = '+12125550166';
    stack.sims.twilio.scenario(nobody, 'no-answer');
    stack.sims.telnyx.setScenario(nobody, 'no-answer');
    const c = await newCustomer(stack, provider, { system_prompt: `${PROMPT} Managers are at ${nobody}.`, transfer_type: 'warm', transfer_number: DESK, transfer_whisper: 'A caller for the manager.' });
    const { far } = await askForAPerson(c, { text: 'Let me try the manager.', toolCalls: [{ name: 'transfer_call', arguments: { number: nobody } }] });
    const llmBefore = stack.llm.requests.length;
    stack.llm.reply({ text: 'Nobody is picking up, sorry. Is there anything else?' });
    const record = await recordWhere(stack, c, far.id, (r) => (r.transcript ?? '').includes('Nobody is picking up'), 20_000, 'the agent to say so');
    expect(record.call_status).toBe('in-progress');
    expect(turnRequest(llmBefore).messages.map((m) => m.content).join('\n')).toContain('nobody answered');
    await far.hangup();
  }, 60_000);
});

describe('when transfers are offered', () => {
  it('not when the prompt does not ask for them: no tool, and a tool call anyway transfers nobody', async () => {
    const c = await newCustomer(stack, 'telnyx', { system_prompt: 'You are the front desk of Acme Plumbing.', transfer_type: 'cold', transfer_number: DESK });
    const { far, llmIndex } = await askForAPerson(c, { text: 'I can help you with that myself.', toolCalls: [{ name: 'transfer_call', arguments: { number: DESK } }] });
    await agentSpeaks(far, 0);
    expect(turnRequest(llmIndex).tools?.map((t) => t.function.name)).toEqual(['end_call']);
    const record = await recordWhere(stack, c, far.id, (r) => (r.transcript ?? '').includes('I can help you with that myself.'), 10_000, 'the reply');
    expect(record.call_status).toBe('in-progress');
    expect(carrierSide('telnyx', far).target()).toBeNull();
    await far.hangup();
  }, 40_000);

  it('a number the prompt does not give is refused: the agent says it cannot transfer there', async () => {
    const c = await newCustomer(stack, 'twilio', { system_prompt: PROMPT, transfer_type: 'cold', transfer_number: DESK });
    const { far } = await askForAPerson(c, { text: 'Sure, connecting you.', toolCalls: [{ name: 'transfer_call', arguments: { number: '+13105550123' } }] });
    const llmBefore = stack.llm.requests.length;
    stack.llm.reply({ text: 'I am sorry, I cannot transfer you to that number.' });
    const record = await recordWhere(stack, c, far.id, (r) => (r.transcript ?? '').includes('cannot transfer you to that number'), 20_000, 'the refusal');
    expect(record.call_status).toBe('in-progress');
    expect(turnRequest(llmBefore).messages.map((m) => m.content).join('\n')).toContain('+13105550123 is not a number you may transfer to');
    expect(stack.sims.twilio.calls.get(far.id)!.dials).toHaveLength(0);
    await far.hangup();
  }, 40_000);
});
