// Keypad input end to end, on both carriers: with dtmf_enabled on (the number's setting
// first, null inheriting the agent's) the caller's key presses reach the model as one
// user message per entry, whether the carrier reports them on the media stream (carrier
// A), as call events and on the stream at once (carrier B: one press, one digit), or
// only as tones in the caller's audio (the Goertzel detector); with the setting off they
// are ignored. Checked from the outside: what the model was sent, what the far end heard,
// and the call record's transcript.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newCustomer, type Customer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack, type FarEnd, type Provider } from './helpers/conversation.ts';
import { mulawDtmf } from './sim/twilio-media-client.ts';
import type { LlmMessage } from '../voice/providers/llm.ts';

let stack: ConversationStack;
beforeAll(async () => {
  stack = await startConversationStack();
});
afterAll(async () => {
  await stack?.close();
});

/** The model requests of conversation turns (streamed), not post-call analysis. */
const turns = () => stack.llm.requests.filter((r) => r.body.stream === true);

const pressed = (digits: string) => `The caller pressed ${[...digits].join(' ')} on the keypad.`;

async function setNumberKeypad(c: Customer, value: boolean | null): Promise<void> {
  const res = await stack.server.request('PATCH', `/v1/phone-numbers/${encodeURIComponent(c.number)}`, { key: c.key, body: { dtmf_enabled: value } });
  expect(res.status, res.text).toBe(200);
}

/**
 * The far end presses keys the carrier's own way: carrier A on the media stream, carrier B
 * as call events and on the stream (or only as call events: `eventsOnly`).
 */
/** Presses `digits` `gapMs` apart; resolves `gapMs` after the last, with the time (performance.now()) the last press was sent. */
async function press(c: Customer, far: FarEnd, digits: string, gapMs = 150, eventsOnly = false): Promise<number> {
  let lastSentAt = performance.now();
  for (const d of digits) {
    if (c.provider === 'twilio') stack.sims.twilio.calls.get(far.id)!.stream!.sendDtmf(d);
    else await stack.sims.telnyx.call(far.id).pressKey(d, eventsOnly ? 'event' : 'both');
    lastSentAt = performance.now();
    await new Promise((r) => setTimeout(r, gapMs));
  }
  return lastSentAt;
}

/** Every user message the model was sent from request `from` on. */
const userMessagesSince = (from: number): string[] =>
  turns().slice(from).flatMap((r) => r.body.messages.filter((m: LlmMessage) => m.role === 'user').map((m: LlmMessage) => m.content as string));

const customer = (provider: Provider, agent: Record<string, unknown> = {}): Promise<Customer> =>
  newCustomer(stack, provider, { welcome_message: 'Hello, this is the pharmacy.', response_eagerness: 100, ...agent });

describe.each<Provider>(['twilio', 'telnyx'])('keypad on carrier %s', (provider) => {
  it('with the number’s dtmf_enabled on, an entry ending in # reaches the model at once as one user message', async () => {
    const c = await customer(provider, { dtmf_enabled: false });
    await setNumberKeypad(c, true);
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const before = turns().length;
    stack.llm.reply({ text: 'Thank you, I found your prescription.' });
    await press(c, far, '4417#');
    const doneAt = performance.now();
    const reply = await agentSpeaks(far, far.heardBytes());
    // `#` ends the entry: no inter-digit wait (only response_eagerness and the providers).
    expect(reply.startedAt - doneAt).toBeLessThan(1200);
    const req = turns()[before]!.body;
    expect(req.messages.at(-1)).toEqual({ role: 'user', content: pressed('4417#') });
    expect(req.messages[0]!.content).toContain('The caller can type on their phone keypad');
    // One message, each digit once (carrier B reported every press twice).
    expect(userMessagesSince(before).filter((m) => m.includes('pressed'))).toEqual([pressed('4417#')]);
    await far.hangup();
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(done.transcript.split('\n')).toContain(`Caller: ${pressed('4417#')}`);
  }, 40_000);

  it('digits without # are grouped until the caller pauses (about 1.5 s); carrier B’s call events alone carry them', async () => {
    const c = await customer(provider, { dtmf_enabled: true });
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const before = turns().length;
    stack.llm.reply({ text: 'Got it.' });
    // Timed from the last press itself (not from after the gap that follows it, which a
    // loaded machine stretches): the entry waits for the caller's pause of about 1.5 s.
    const lastAt = await press(c, far, '12', 400, true);
    await eventually(() => (turns().length > before ? true : undefined), 8000, 'the entry to reach the model');
    expect(performance.now() - lastAt).toBeGreaterThanOrEqual(1200);
    expect(turns()[before]!.body.messages.at(-1)).toEqual({ role: 'user', content: pressed('12') });
    await far.hangup();
  }, 40_000);

  it('tones in the caller’s audio (no carrier event) reach the model too', async () => {
    const c = await customer(provider, { dtmf_enabled: true });
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const before = turns().length;
    stack.llm.reply({ text: 'Thanks.' });
    const silence = new Uint8Array(8 * 80).fill(0xff);
    for (const d of '90#') {
      await far.voice.say(mulawDtmf(d, 90));
      await far.voice.say(silence);
    }
    await eventually(() => (turns().length > before ? true : undefined), 8000, 'the tones to reach the model');
    expect(turns()[before]!.body.messages.at(-1)).toEqual({ role: 'user', content: pressed('90#') });
    await far.hangup();
  }, 40_000);

  it('with the number’s dtmf_enabled off (the agent’s on), key presses are ignored', async () => {
    const c = await customer(provider, { dtmf_enabled: true });
    await setNumberKeypad(c, false);
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const before = turns().length;
    const heard = far.heardBytes();
    await press(c, far, '55#');
    await far.voice.say(mulawDtmf('7', 90));
    await new Promise((r) => setTimeout(r, 2500));
    expect(turns().length).toBe(before);
    expect(far.heardBytes()).toBe(heard);
    // The conversation goes on as usual.
    stack.llm.reply({ text: 'Sure, we are open until six.' });
    await far.say('saturday-hours');
    await agentSpeaks(far, far.heardBytes());
    expect(userMessagesSince(before).some((m) => m.includes('pressed'))).toBe(false);
    await far.hangup();
  }, 40_000);

  it('null on the number inherits the agent: an agent without the setting ignores keys', async () => {
    const c = await customer(provider);
    await setNumberKeypad(c, null);
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    const before = turns().length;
    await press(c, far, '8#');
    await new Promise((r) => setTimeout(r, 1500));
    expect(turns().length).toBe(before);
    await far.hangup();
  }, 30_000);
});
