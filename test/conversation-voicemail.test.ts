// Voicemail on outbound calls (issue 9), end to end through both carrier simulators and
// the provider simulators: an answering machine (a real spoken greeting, then a beep)
// gets the number's voicemail_message word for word after the beep and is hung up on as
// voicemail_detected; with the number's setting off or null it is hung up on silently; a
// person who says "Hello?" gets the agent's greeting and a normal conversation; with
// amd_enabled the carrier decides and nothing is said.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextNumber } from './helpers/fixtures.ts';
import { callReaches, dial, eventually, newCustomer, type Customer, type Provider } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, startConversationStack, type ConversationStack } from './helpers/conversation.ts';
import { FarEndVoice } from './sim/far-end-playback.ts';
import { simplestJson, type LlmSimRequest } from './sim/llm-sim.ts';
import { loadSpeechFixture } from './fixtures/speech/speech.ts';
import { loadVoicemailGreeting, VOICEMAIL_GREETING_TEXT, voicemailBeep } from './fixtures/voicemail/voicemail.ts';
import { concatMulaw, silenceMulaw } from './fixtures/speech/noise.ts';

let stack: ConversationStack;
beforeAll(async () => {
  stack = await startConversationStack();
}, 30_000);
afterAll(async () => {
  await stack?.close();
});

const MESSAGE = 'Hello Sam, this is Luigi’s confirming your table for two tonight at eight. See you then.';
const WELCOME = 'Hi, this is Luigi’s calling about your booking.';

async function customer(provider: Provider, leave: boolean | null, agent: Record<string, unknown> = {}): Promise<Customer> {
  const c = await newCustomer(stack, provider, { welcome_message: WELCOME, ...agent });
  const body = leave === true ? { voicemail_leave_enabled: true, voicemail_message: MESSAGE } : { voicemail_leave_enabled: leave };
  const res = await stack.server.request('PATCH', `/v1/phone-numbers/${encodeURIComponent(c.number)}`, { key: c.key, body });
  expect(res.status, res.text).toBe(200);
  return c;
}

/** Places an outbound call answered by `voice`; returns its id and what the far end has heard so far. */
async function callOut(c: Customer, voice: FarEndVoice): Promise<{ id: string; heard: () => number }> {
  const to = nextNumber();
  if (c.provider === 'twilio') stack.sims.twilio.scenario(to, { name: 'answer', audio: voice });
  else stack.sims.telnyx.voiceFor(to, voice);
  const created = await dial(stack.server, c, to);
  const id = created.call_id as string;
  await callReaches(stack.server, c.key, id, 'in-progress', 10_000);
  if (c.provider === 'twilio') {
    const call = await eventually(() => [...stack.sims.twilio.calls.values()].find((x) => x.to === to && x.stream) ?? undefined, 10_000, 'the media stream');
    return { id, heard: () => call.stream?.receivedAudio().length ?? 0 };
  }
  const call = await eventually(() => [...stack.sims.telnyx.calls.calls.values()].find((x) => x.to === to && x.media) ?? undefined, 10_000, 'the media stream');
  return { id, heard: () => (call.media?.audio ?? []).reduce((n, a) => n + a.length, 0) };
}

/** What the screen asked the model to classify since `from` requests (non-streamed, structured). */
const classifiedSince = (from: number): string[] =>
  stack.llm.structuredRequests
    .slice(from)
    .filter((r) => r.body.stream !== true && JSON.stringify(r.body).includes('voicemail_screen'))
    .map((r) => String(r.body.messages.at(-1)?.content));

/**
 * The model's answer to the next screen (one only): `verdict`. Structured requests share one
 * queue with the post-call analysis of earlier calls, so every queued copy answers an
 * analysis with the simplest JSON its schema allows, as the simulator would.
 */
function nextScreenSays(verdict: 'human' | 'voicemail'): void {
  let used = false;
  const script = (req: LlmSimRequest) => {
    const format = (req.body as { response_format?: { json_schema?: { name?: string; schema?: unknown } } }).response_format?.json_schema;
    if (format?.name === 'voicemail_screen' && !used) {
      used = true;
      return { text: JSON.stringify({ verdict }) };
    }
    return { text: JSON.stringify(format?.name === 'voicemail_screen' ? { verdict: 'unsure' } : simplestJson(format?.schema)) };
  };
  stack.llm.replyStructured(script, script, script, script);
}

/** The text the speech provider was asked to say since `from` requests, joined. */
const spokenSince = (from: number): string =>
  stack.tts.requests
    .slice(from)
    .map((r) => r.body.input)
    .join(' ');

describe.each<Provider>(['twilio', 'telnyx'])('voicemail on %s', (provider) => {
  it('a machine gets voicemail_message word for word after the beep, then the call ends voicemail_detected', async () => {
    const c = await customer(provider, true);
    const voice = new FarEndVoice();
    const ttsBefore = stack.tts.requests.length;
    const { id, heard } = await callOut(c, voice);
    stack.stt.say(VOICEMAIL_GREETING_TEXT);
    await voice.say(concatMulaw(loadVoicemailGreeting(), silenceMulaw(400), voicemailBeep()));
    // Nothing was said over the greeting or the beep: the agent waited for the tone.
    const atBeepEnd = heard();
    expect(atBeepEnd).toBe(0);
    const message = await agentSpeaks({ heardBytes: heard } as never, atBeepEnd, 10_000);
    expect(message.bytes).toBeGreaterThan(8 * 2000);
    const done = await recordWhere(stack, c, id, (r) => r.call_status === 'completed', 20_000, 'the hang-up after the message');
    expect(done).toMatchObject({ ended_reason: 'voicemail_detected', voicemail_detected: true });
    expect(spokenSince(ttsBefore)).toBe(MESSAGE);
    expect(done.transcript).toBe(`Agent: ${MESSAGE}`);
  }, 60_000);

  it.each([false, null])('with the number’s voicemail_leave_enabled %s a machine is hung up on silently', async (leave) => {
    const c = await customer(provider, leave, { voicemail_leave_enabled: true, voicemail_message: 'The agent’s own message is not used.' });
    const voice = new FarEndVoice();
    const ttsBefore = stack.tts.requests.length;
    const { id, heard } = await callOut(c, voice);
    stack.stt.say(VOICEMAIL_GREETING_TEXT);
    void voice.say(concatMulaw(loadVoicemailGreeting(), silenceMulaw(400), voicemailBeep()));
    const done = await recordWhere(stack, c, id, (r) => r.call_status === 'completed', 20_000, 'the silent hang-up');
    expect(done).toMatchObject({ ended_reason: 'voicemail_detected', voicemail_detected: true });
    expect(heard()).toBe(0);
    expect(spokenSince(ttsBefore)).toBe('');
  }, 60_000);

  it('a person who says "Hello?" gets the greeting and a normal conversation', async () => {
    const c = await customer(provider, true);
    const voice = new FarEndVoice();
    const ttsBefore = stack.tts.requests.length;
    const llmBefore = stack.llm.structuredRequests.length;
    const { id, heard } = await callOut(c, voice);
    stack.stt.say('Hello?');
    await voice.say(loadSpeechFixture('okay'));
    const greeting = await agentSpeaks({ heardBytes: heard } as never, 0, 10_000);
    expect(greeting.bytes).toBeGreaterThan(8 * 500);
    expect(spokenSince(ttsBefore)).toBe(WELCOME);
    // The model was asked once, with the first words heard (the simulator answers "unsure": the pause decided).
    expect(classifiedSince(llmBefore)).toEqual(['Hello?']);
    stack.llm.reply({ text: 'Wonderful, see you tonight!', toolCalls: [{ name: 'end_call', arguments: {} }] });
    stack.stt.say('Yes, I will be there.');
    await voice.say(loadSpeechFixture('book-table'));
    const done = await recordWhere(stack, c, id, (r) => r.call_status === 'completed', 20_000, 'the agent to hang up');
    expect(done).toMatchObject({ ended_reason: 'agent_hangup', voicemail_detected: false });
    expect(done.transcript).toBe(`Agent: ${WELCOME}\nCaller: Yes, I will be there.\nAgent: Wonderful, see you tonight!`);
  }, 60_000);

  it('a greeting with no voicemail words and no beep is a machine when the model says so: silent hang-up', async () => {
    const c = await customer(provider, null);
    const voice = new FarEndVoice();
    const before = stack.llm.structuredRequests.length;
    const { id, heard } = await callOut(c, voice);
    nextScreenSays('voicemail');
    const words = 'This is the Johnson family, we are out in the garden or at the shops today.';
    stack.stt.say(words);
    void voice.say(loadVoicemailGreeting());
    const done = await recordWhere(stack, c, id, (r) => r.call_status === 'completed', 20_000, 'the hang-up on the model’s verdict');
    expect(done).toMatchObject({ ended_reason: 'voicemail_detected', voicemail_detected: true });
    expect(classifiedSince(before)).toEqual([words]);
    expect(heard()).toBe(0);
  }, 60_000);

  it('with amd_enabled the carrier detects the machine: fast hang-up, no message', async () => {
    const c = await customer(provider, true, { amd_enabled: true });
    const to = nextNumber();
    if (provider === 'twilio') stack.sims.twilio.scenario(to, 'machine');
    else stack.sims.telnyx.setScenario(to, 'machine');
    const ttsBefore = stack.tts.requests.length;
    const created = await dial(stack.server, c, to);
    const done = await recordWhere(stack, c, created.call_id, (r) => r.call_status === 'completed', 20_000, 'the AMD hang-up');
    expect(done).toMatchObject({ ended_reason: 'voicemail_detected', voicemail_detected: true });
    expect(spokenSince(ttsBefore)).not.toContain(MESSAGE);
  }, 30_000);
});
