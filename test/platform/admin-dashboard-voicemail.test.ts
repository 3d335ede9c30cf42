// A number an operator added with `npm run admin -- add-number` is a `dashboard` number,
// and the agent's voicemail settings apply to it (contract.md 5), end to end: the
// command imports it against the carrier simulator, an outbound call on it reaches an
// answering machine (a real spoken greeting, then a beep), and the agent's
// voicemail_message is spoken word for word after the beep; the number has no voicemail
// setting of its own, which on an API-imported number would hang up silently
// (test/conversation-voicemail.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../helpers/admin.ts';
import { createAgent, nextNumber } from '../helpers/fixtures.ts';
import { callReaches, dial, eventually, type Customer, type Provider } from '../helpers/calls.ts';
import { agentSpeaks, recordWhere, startConversationStack, type ConversationStack } from '../helpers/conversation.ts';
import { FarEndVoice } from '../sim/far-end-playback.ts';
import { twilioSid } from '../sim/twilio-sim.ts';
import { loadVoicemailGreeting, VOICEMAIL_GREETING_TEXT, voicemailBeep } from '../fixtures/voicemail/voicemail.ts';
import { concatMulaw, silenceMulaw } from '../fixtures/speech/noise.ts';

let stack: ConversationStack;
beforeAll(async () => {
  stack = await startConversationStack();
}, 30_000);
afterAll(async () => {
  await stack?.close();
});

const AGENT_MESSAGE = 'Hi, this is Luigi’s about your booking tonight; please call us back. Thank you.';

/** A customer whose number the operator added: carrier credentials made in the simulator, passed as the command's flags. */
async function dashboardCustomer(provider: Provider): Promise<Customer> {
  const { key, accountId } = await stack.server.newAccount();
  const agentId = await createAgent(stack.server, key, { voicemail_leave_enabled: true, voicemail_message: AGENT_MESSAGE });
  const number = nextNumber();
  let flags: string[];
  let carrierAccount: string;
  let carrierSecret: string;
  if (provider === 'twilio') {
    carrierAccount = twilioSid('AC');
    carrierSecret = twilioSid('').slice(0, 32);
    stack.sims.twilio.addAccount(carrierAccount, carrierSecret);
    stack.sims.twilio.addNumber(carrierAccount, number);
    flags = ['--twilio-account-sid', carrierAccount, '--twilio-auth-token', carrierSecret];
  } else {
    carrierAccount = `KEY${twilioSid('').slice(0, 32).toUpperCase()}`;
    stack.sims.telnyx.addApiKey(carrierAccount);
    const connectionId = stack.sims.telnyx.addConnection(carrierAccount);
    stack.sims.telnyx.addNumber(carrierAccount, number);
    carrierSecret = stack.sims.telnyx.publicKeyOf(carrierAccount);
    flags = ['--telnyx-api-key', carrierAccount, '--telnyx-connection-id', connectionId, '--telnyx-public-key', carrierSecret];
  }
  const run = await runAdmin(stack.server.dataDir, ['add-number', accountId, agentId, number, '--provider', provider, ...flags], stack.sims.env);
  expect(run.code, run.stderr).toBe(0);
  const res = await stack.server.request('GET', `/v1/phone-numbers/${encodeURIComponent(number)}`, { key });
  expect(res.body.phone_number).toMatchObject({ source: 'dashboard', voicemail_leave_enabled: null, voicemail_message: null });
  return { key, accountId, agentId, number, provider, carrierAccount, carrierSecret };
}

/** Places an outbound call answered by `voice`; returns its id and what the far end has heard so far. */
async function callOut(c: Customer, voice: FarEndVoice): Promise<{ id: string; heard: () => number }> {
  const to = nextNumber();
  if (c.provider === 'twilio') stack.sims.twilio.scenario(to, { name: 'answer', audio: voice });
  else stack.sims.telnyx.voiceFor(to, voice);
  const id = (await dial(stack.server, c, to)).call_id as string;
  await callReaches(stack.server, c.key, id, 'in-progress', 10_000);
  if (c.provider === 'twilio') {
    const call = await eventually(() => [...stack.sims.twilio.calls.values()].find((x) => x.to === to && x.stream) ?? undefined, 10_000, 'the media stream');
    return { id, heard: () => call.stream?.receivedAudio().length ?? 0 };
  }
  const call = await eventually(() => [...stack.sims.telnyx.calls.calls.values()].find((x) => x.to === to && x.media) ?? undefined, 10_000, 'the media stream');
  return { id, heard: () => (call.media?.audio ?? []).reduce((n, a) => n + a.length, 0) };
}

describe.each<Provider>(['twilio', 'telnyx'])('a dashboard number on %s', (provider) => {
  it('leaves the agent’s voicemail_message word for word after the beep, then ends voicemail_detected', async () => {
    const c = await dashboardCustomer(provider);
    const voice = new FarEndVoice();
    const ttsBefore = stack.tts.requests.length;
    const { id, heard } = await callOut(c, voice);
    stack.stt.say(VOICEMAIL_GREETING_TEXT);
    await voice.say(concatMulaw(loadVoicemailGreeting(), silenceMulaw(400), voicemailBeep()));
    const atBeepEnd = heard();
    expect(atBeepEnd).toBe(0);
    const message = await agentSpeaks({ heardBytes: heard } as never, atBeepEnd, 10_000);
    expect(message.bytes).toBeGreaterThan(8 * 2000);
    const done = await recordWhere(stack, c, id, (r) => r.call_status === 'completed', 20_000, 'the hang-up after the message');
    expect(done).toMatchObject({ ended_reason: 'voicemail_detected', voicemail_detected: true });
    const spoken = stack.tts.requests.slice(ttsBefore).map((r) => r.body.input).join(' ');
    expect(spoken).toBe(AGENT_MESSAGE);
    expect(done.transcript).toBe(`Agent: ${AGENT_MESSAGE}`);
  }, 60_000);
});
