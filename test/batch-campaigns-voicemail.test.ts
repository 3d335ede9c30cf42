// Voicemail on a batch campaign's calls (issue 20), end to end through real HTTP, both
// carrier simulators and the provider simulators (model, speech to text, text to speech):
// "voicemail detection runs per call; on a machine the agent leaves a short message built
// from the campaign's prompt and ends with voicemail_detected (counted in voicemail_count)".
// A two-recipient campaign is answered once by an answering machine (a real spoken greeting,
// then a beep) and once by a person who says "Hello?". On a number without a voicemail
// message of its own, the machine gets a message the model wrote from the campaign's prompt
// (with the recipient's variables filled in), spoken after the beep; the person gets the
// agent's greeting; the campaign completes with voicemail_count 1 and counts that add up.
// With the number's own voicemail_message, a campaign call leaves that word for word and
// the model is not asked to write one.
//
// The far ends speak one at a time (max_concurrent 1): the speech recogniser simulator has
// one queue of words for every call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newCustomer, API_POLL_MS, type Customer, type Provider } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, startConversationStack, type ConversationStack } from './helpers/conversation.ts';
import { FarEndVoice } from './sim/far-end-playback.ts';
import { defaultLlmReply, type ChatCompletionBody, type LlmSimRequest } from './sim/llm-sim.ts';
import { loadSpeechFixture } from './fixtures/speech/speech.ts';
import { loadVoicemailGreeting, VOICEMAIL_GREETING_TEXT, voicemailBeep } from './fixtures/voicemail/voicemail.ts';
import { concatMulaw, silenceMulaw } from './fixtures/speech/noise.ts';

const WELCOME = 'Hi, this is Bright Smile Dental calling about your appointment.';
/** The campaign's prompt: `{first_name}` is filled from each recipient's variables. */
const PROMPT = 'Remind {first_name} of tomorrow’s dental check-up at Bright Smile Dental.';
/** What the model simulator answers when asked to write the voicemail (two sentences). */
const COMPOSED = 'Hi Dana, this is Bright Smile Dental reminding you of your dental check-up tomorrow. Please call us back if you need to change it.';
/** The number's own message (the second case). */
const OWN_MESSAGE = 'Hello, this is Bright Smile Dental with a reminder about your visit tomorrow. Call us back on the usual number.';

/**
 * The model's request to write a voicemail: its own system instruction (a voicemail, short,
 * nothing invented) and the call's purpose as the only user message, with no tools. Told
 * apart from the conversation's turns by its instruction, not by its order.
 */
const isCompose = (body: ChatCompletionBody): boolean => {
  const system = body.messages[0];
  return body.messages.length === 2 && system?.role === 'system' && /voicemail/i.test(String(system.content)) && /purpose of the call/i.test(String(system.content));
};

let stack: ConversationStack;
beforeAll(async () => {
  stack = await startConversationStack({}, {}, {}, { llmRespond: (body) => (isCompose(body) ? { text: COMPOSED } : defaultLlmReply(body)) });
}, 30_000);
afterAll(async () => {
  await stack?.close();
});

let seq = 0;
/** A number libphonenumber-js takes for real (the 555 exchange of San Francisco), unique in this process. */
const recipientNumber = (): string => `+1415555${String(2000 + (++seq % 7000)).padStart(4, '0')}`;

/** Generous: other suites share this 2-core machine. */
const CALL_MS = 30_000;

const composeRequests = (from: number): LlmSimRequest[] => stack.llm.requests.slice(from).filter((r) => isCompose(r.body));

/** The text the speech provider was asked to say since `from` requests, joined. */
const spokenSince = (from: number): string =>
  stack.tts.requests
    .slice(from)
    .map((r) => r.body.input)
    .join(' ');

/** The number's voicemail settings, as PATCH /v1/phone-numbers/{n} takes them. */
async function numberSettings(c: Customer, body: Record<string, unknown>): Promise<void> {
  const res = await stack.server.request('PATCH', `/v1/phone-numbers/${encodeURIComponent(c.number)}`, { key: c.key, body });
  expect(res.status, res.text).toBe(200);
}

/** Whoever answers calls to `to` speaks with `voice`. */
function answersWith(provider: Provider, to: string, voice: FarEndVoice): void {
  if (provider === 'twilio') stack.sims.twilio.scenario(to, { name: 'answer', audio: voice });
  else stack.sims.telnyx.voiceFor(to, voice);
}

/** The carrier's outbound call to `to` once its media stream is up: what its far end has heard so far, and its hang-up. */
async function farEndOf(provider: Provider, to: string): Promise<{ heard: () => number; hangup: () => Promise<unknown> }> {
  if (provider === 'twilio') {
    const call = await eventually(() => [...stack.sims.twilio.calls.values()].find((x) => x.to === to && x.direction === 'outbound-api' && x.stream) ?? undefined, CALL_MS, `the media stream to ${to}`);
    return { heard: () => call.stream?.receivedAudio().length ?? 0, hangup: () => stack.sims.twilio.hangup(call.sid) };
  }
  const call = await eventually(() => [...stack.sims.telnyx.calls.calls.values()].find((x) => x.to === to && x.direction === 'outgoing' && x.media) ?? undefined, CALL_MS, `the media stream to ${to}`);
  return { heard: () => (call.media?.audio ?? []).reduce((n, a) => n + a.length, 0), hangup: () => stack.sims.telnyx.hangup(call.callControlId) };
}

/** How many calls the carrier was asked to place to `to` (the simulator's record). */
function dialsTo(provider: Provider, to: string): number {
  return (provider === 'twilio' ? stack.sims.twilio : stack.sims.telnyx).dialRequests(to).length;
}

/** The public id of the campaign's call to `to`, once it was answered. */
async function campaignCallTo(c: Customer, campaignId: string, to: string): Promise<string> {
  const id = await eventually(async () => {
    const res = await stack.server.request('GET', `/v1/calls?campaign_id=${encodeURIComponent(campaignId)}&limit=100`, { key: c.key });
    return res.status === 200 ? ((res.body.calls as any[]).find((x) => x.to_number === to)?.call_id as string | undefined) : undefined;
  }, CALL_MS, `the campaign's call to ${to}`, API_POLL_MS);
  await recordWhere(stack, c, id, (r) => r.call_status === 'in-progress' || r.call_status === 'completed', CALL_MS, `call ${id} answered`);
  return id;
}

/** The machine answers: its greeting (the recogniser is told its words), a pause, the beep. Resolves at the beep's end. */
async function machineAnswers(voice: FarEndVoice): Promise<void> {
  stack.stt.say(VOICEMAIL_GREETING_TEXT);
  await voice.say(concatMulaw(loadVoicemailGreeting(), silenceMulaw(400), voicemailBeep()));
}

/**
 * Waits for the machine's beep to have played and returns what the far end had heard by
 * then (taken the moment it played); fails at once, rather than at the test's timeout (a
 * closed stream never plays the rest), when the call ended before it.
 */
async function untilBeepEnd(answering: Promise<void>, heard: () => number, c: Customer, callId: string): Promise<number> {
  let atBeepEnd: number | null = null;
  void answering.then(() => (atBeepEnd = heard()));
  const ended = await eventually(async () => {
    if (atBeepEnd !== null) return false;
    const r = await stack.server.request('GET', `/v1/calls/${encodeURIComponent(callId)}`, { key: c.key });
    return r.status === 200 && r.body.call_status !== 'in-progress' ? r.body : undefined;
  }, CALL_MS, 'the beep to play', API_POLL_MS);
  expect(ended, 'the call ended before the machine’s beep').toBe(false);
  return atBeepEnd!;
}

async function createCampaign(c: Customer, recipients: { phone: string; variables?: Record<string, unknown> }[]): Promise<string> {
  const res = await stack.server.request('POST', '/v1/calls/batch', { key: c.key, body: { agent_id: c.agentId, from_number: c.number, prompt: PROMPT, recipients, max_concurrent: 1 } });
  expect(res.status, res.text).toBe(201);
  expect(res.body).toMatchObject({ status: 'running', valid_count: recipients.length, invalid_count: 0 });
  return res.body.campaign_id as string;
}

/** GET /v1/calls/batch/{id} once the campaign completed; its counts add up (contract.md 7). */
async function completed(c: Customer, id: string): Promise<any> {
  const done = await eventually(async () => {
    const r = await stack.server.request('GET', `/v1/calls/batch/${encodeURIComponent(id)}`, { key: c.key });
    return r.status === 200 && r.body.status === 'completed' ? r.body : undefined;
  }, CALL_MS, 'the campaign to complete', API_POLL_MS);
  const sum = done.pending_count + done.in_progress_count + done.completed_count + done.failed_count + done.voicemail_count + done.cancelled_count;
  expect(sum, JSON.stringify(done)).toBe(done.valid_count);
  expect(done.total_count).toBe(done.valid_count + done.invalid_count);
  return done;
}

describe.each<Provider>(['twilio', 'telnyx'])('voicemail on a campaign’s calls on %s', (provider) => {
  it('a machine gets a message the model wrote from the campaign’s prompt after the beep, a person the greeting; voicemail_count 1', async () => {
    const c = await newCustomer(stack, provider, { welcome_message: WELCOME });
    // The number has no voicemail message of its own (its defaults: null, null).
    const number = await stack.server.request('GET', `/v1/phone-numbers/${encodeURIComponent(c.number)}`, { key: c.key });
    expect(number.status, number.text).toBe(200);
    expect(number.body.phone_number).toMatchObject({ voicemail_leave_enabled: null, voicemail_message: null });

    const machineNo = recipientNumber();
    const personNo = recipientNumber();
    const machine = new FarEndVoice();
    const person = new FarEndVoice();
    answersWith(provider, machineNo, machine);
    answersWith(provider, personNo, person);
    const llmBefore = stack.llm.requests.length;
    const ttsBefore = stack.tts.requests.length;
    const id = await createCampaign(c, [
      { phone: machineNo, variables: { first_name: 'Dana' } },
      { phone: personNo, variables: { first_name: 'Lee' } },
    ]);

    // The machine (the first recipient): nothing is said over its greeting or its beep, then the message.
    const machineEnd = await farEndOf(provider, machineNo);
    const answering = machineAnswers(machine);
    const machineCall = await campaignCallTo(c, id, machineNo);
    const atBeepEnd = await untilBeepEnd(answering, machineEnd.heard, c, machineCall);
    expect(atBeepEnd).toBe(0);
    const message = await agentSpeaks({ heardBytes: machineEnd.heard } as never, atBeepEnd, CALL_MS);
    expect(message.bytes).toBeGreaterThan(8 * 2000);
    const machineDone = await recordWhere(stack, c, machineCall, (r) => r.call_status === 'completed', CALL_MS, 'the hang-up after the message');
    expect(machineDone).toMatchObject({ ended_reason: 'voicemail_detected', voicemail_detected: true, campaign_id: id });
    expect(machineDone.transcript).toBe(`Agent: ${COMPOSED}`);

    // The model was asked once to write it, from the campaign's prompt with this recipient's name, without tools.
    const asked = composeRequests(llmBefore);
    expect(asked).toHaveLength(1);
    const body = asked[0]!.body;
    expect(body.stream).toBe(true);
    expect(body.tools).toBeUndefined();
    expect(body.messages[1]).toMatchObject({ role: 'user', content: 'Remind Dana of tomorrow’s dental check-up at Bright Smile Dental.' });
    // The speech provider was given the model's message: that is what the machine heard.
    expect(spokenSince(ttsBefore)).toContain(COMPOSED);

    // The person (the second recipient, dialed once the machine's call ended): "Hello?", then the greeting.
    const personEnd = await farEndOf(provider, personNo);
    stack.stt.say('Hello?');
    const hello = person.say(loadSpeechFixture('okay'));
    const personCall = await campaignCallTo(c, id, personNo);
    await hello;
    const greeting = await agentSpeaks({ heardBytes: personEnd.heard } as never, 0, CALL_MS);
    expect(greeting.bytes).toBeGreaterThan(8 * 500);
    expect(spokenSince(ttsBefore)).toContain(WELCOME);
    await personEnd.hangup();
    const personDone = await recordWhere(stack, c, personCall, (r) => r.call_status === 'completed', CALL_MS, 'the person’s hang-up');
    expect(personDone).toMatchObject({ ended_reason: 'callee_hangup', voicemail_detected: false, campaign_id: id });
    expect(personDone.transcript).toBe(`Agent: ${WELCOME}`);

    const done = await completed(c, id);
    expect(done).toMatchObject({ valid_count: 2, voicemail_count: 1, completed_count: 1, failed_count: 0, pending_count: 0, in_progress_count: 0, cancelled_count: 0 });
    // No voicemail was written for the person, and each recipient was dialed once.
    expect(composeRequests(llmBefore)).toHaveLength(1);
    expect(spokenSince(ttsBefore)).not.toContain('Lee');
    expect([dialsTo(provider, machineNo), dialsTo(provider, personNo)]).toEqual([1, 1]);
    const listed = await stack.server.request('GET', `/v1/calls?campaign_id=${encodeURIComponent(id)}&voicemail_detected=true`, { key: c.key });
    expect(listed.status, listed.text).toBe(200);
    expect((listed.body.calls as any[]).map((x) => x.call_id)).toEqual([machineCall]);
  }, 120_000);

  it('with the number’s own voicemail_message a campaign call leaves it word for word; the model writes none', async () => {
    const c = await newCustomer(stack, provider, { welcome_message: WELCOME });
    await numberSettings(c, { voicemail_leave_enabled: true, voicemail_message: OWN_MESSAGE });
    const machineNo = recipientNumber();
    const machine = new FarEndVoice();
    answersWith(provider, machineNo, machine);
    const llmBefore = stack.llm.requests.length;
    const ttsBefore = stack.tts.requests.length;
    const id = await createCampaign(c, [{ phone: machineNo, variables: { first_name: 'Dana' } }]);

    const far = await farEndOf(provider, machineNo);
    const answering = machineAnswers(machine);
    const call = await campaignCallTo(c, id, machineNo);
    const atBeepEnd = await untilBeepEnd(answering, far.heard, c, call);
    expect(atBeepEnd).toBe(0);
    const message = await agentSpeaks({ heardBytes: far.heard } as never, atBeepEnd, CALL_MS);
    expect(message.bytes).toBeGreaterThan(8 * 2000);
    const ended = await recordWhere(stack, c, call, (r) => r.call_status === 'completed', CALL_MS, 'the hang-up after the message');
    expect(ended).toMatchObject({ ended_reason: 'voicemail_detected', voicemail_detected: true, campaign_id: id });
    expect(ended.transcript).toBe(`Agent: ${OWN_MESSAGE}`);
    // (Contains, not equals: the speech provider serves every call of this file's stack.)
    expect(spokenSince(ttsBefore)).toContain(OWN_MESSAGE);
    expect(spokenSince(ttsBefore)).not.toContain(COMPOSED);
    expect(composeRequests(llmBefore)).toEqual([]);

    const done = await completed(c, id);
    expect(done).toMatchObject({ valid_count: 1, voicemail_count: 1, completed_count: 0, failed_count: 0, pending_count: 0, in_progress_count: 0, cancelled_count: 0 });
  }, 90_000);
});
