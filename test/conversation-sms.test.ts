// Texts during a call (issue 21), end to end: a real server in this process with both
// carrier simulators (their messaging records what was sent), the model, recogniser and
// voice simulators, and the CRM simulator for bookings. The model (scripted) calls
// send_sms or books an appointment; with the agent's incall_sms_enabled the text goes
// out through the carrier from the call's number to the person on the call (the tool's
// answer tells the model the message id; a booking is confirmed by text), and without it
// the tool is not offered and nothing is ever texted, even when the model asks anyway.
// A person who texted STOP to the number is not texted, and the model is told why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextNumber } from './helpers/fixtures.ts';
import { eventually, newCustomer, type Customer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack, type FarEnd, type Provider } from './helpers/conversation.ts';
import { simplestJson, type ChatCompletionBody, type LlmSimReply } from './sim/llm-sim.ts';
import { startCrmSim, type CrmSim } from './sim/crm-sim.ts';
import type { LlmMessage } from '../voice/providers/llm.ts';

const ZONE = 'America/New_York';
const NINE = '2027-03-02T09:00:00-05:00';
const ADDRESS = 'Acme Dental, 1 Main St, Springfield. Open 9 to 5.';
const crmTokens: Record<string, string> = {};

let stack: ConversationStack;
let crm: CrmSim;

/** The model, as each test scripts it: the reply to the last message the first matching rule names. */
let rules: [RegExp, LlmSimReply][] = [];
function brain(body: ChatCompletionBody): LlmSimReply {
  // Post-call analysis of the calls here: the simplest answer its schema allows.
  const format = body.response_format as { json_schema?: { schema?: unknown } } | undefined;
  if (format) return { text: JSON.stringify(simplestJson(format.json_schema?.schema)) };
  const last = body.messages.filter((m) => m.role !== 'system').at(-1);
  const text = typeof last?.content === 'string' ? last.content : '';
  return rules.find(([re]) => re.test(text))?.[1] ?? { text: 'Okay.' };
}

beforeAll(async () => {
  crm = await startCrmSim({ tokens: crmTokens });
  stack = await startConversationStack({ CRM_BASE_URL: crm.baseUrl, SMS_SEND_INTERVAL_MS: '50' }, {}, {}, { llmRespond: brain });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await crm?.close();
});

const messagesOf = (provider: Provider) => (provider === 'twilio' ? stack.sims.twilio.messages : stack.sims.telnyx.messages);
const toolMessages = (messages: LlmMessage[]) => messages.filter((m): m is Extract<LlmMessage, { role: 'tool' }> => m.role === 'tool');
/** The model request (since `from`) whose last message matches. */
function requestAfter(from: number, probe: (m: LlmMessage) => boolean): ChatCompletionBody {
  const req = stack.llm.requests.slice(from).find((r) => r.body.stream === true && probe(r.body.messages.at(-1)!));
  if (!req) throw new Error('no such model request');
  return req.body;
}
/** The SMS rows of a call, as the service stored them. */
const textsOfCall = (callId: string) =>
  stack.server.storage.db.prepare('SELECT origin, from_number, to_number, body, call_id FROM sms_messages WHERE call_id = ? ORDER BY created_at').all(callId);

async function turn(far: FarEnd, words: string): Promise<void> {
  const before = far.heardBytes();
  await far.say('book-table', words);
  await agentSpeaks(far, before);
}

async function customer(provider: Provider, incall: boolean): Promise<Customer> {
  return newCustomer(stack, provider, { welcome_message: 'Hello, this is Acme dental.', response_eagerness: 100, incall_sms_enabled: incall, timezone: ZONE });
}

describe.each<Provider>(['twilio', 'telnyx'])('send_sms on carrier %s', (provider) => {
  it('with incall_sms_enabled the model texts the caller from the call’s number, and hears the message id', async () => {
    const c = await customer(provider, true);
    const caller = nextNumber();
    const llmBefore = stack.llm.requests.length;
    rules = [
      [/text me your address/, { toolCalls: [{ name: 'send_sms', arguments: { body: ADDRESS } }] }],
      [/"status":"queued"/, { text: 'I have texted you our address.' }],
    ];
    const far = await ringAgent(stack, c, caller);
    await agentSpeaks(far);
    await turn(far, 'Could you text me your address?');

    const asked = requestAfter(llmBefore, (m) => m.role === 'user' && /text me your address/.test(m.content));
    expect(asked.tools?.map((t) => t.function.name)).toContain('send_sms');
    const [sent] = await eventually(() => (messagesOf(provider).sent(caller).length > 0 ? messagesOf(provider).sent(caller) : undefined), 8000, 'the text at the carrier');
    expect(sent).toMatchObject({ from: c.number, to: caller, body: ADDRESS });
    const told = JSON.parse(toolMessages(requestAfter(llmBefore, (m) => m.role === 'tool').messages).at(-1)!.content) as { status: string; message_id: string };
    expect(told).toEqual({ status: 'queued', message_id: expect.stringMatching(/^msg_/) });
    expect(stack.server.storage.sms.byId(told.message_id)).toMatchObject({ origin: 'call', call_id: far.id, from_number: c.number, to_number: caller, body: ADDRESS });
    await far.hangup();
    await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(messagesOf(provider).sent(caller)).toHaveLength(1);
  }, 60_000);
});

describe('texts during a call', () => {
  it('without incall_sms_enabled the tool is not offered and nothing is texted, even when the model asks', async () => {
    const c = await customer('twilio', false);
    const caller = nextNumber();
    const llmBefore = stack.llm.requests.length;
    rules = [[/text me your address/, { text: 'Our address is 1 Main Street.', toolCalls: [{ name: 'send_sms', arguments: { body: ADDRESS } }] }]];
    const far = await ringAgent(stack, c, caller);
    await agentSpeaks(far);
    await turn(far, 'Could you text me your address?');

    const asked = requestAfter(llmBefore, (m) => m.role === 'user' && /text me your address/.test(m.content));
    expect(asked.tools?.map((t) => t.function.name) ?? []).not.toContain('send_sms');
    expect(asked.messages[0]!.content).toContain('You cannot send text messages');
    await far.hangup();
    await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(stack.sims.twilio.messages.sent(caller)).toEqual([]);
    expect(textsOfCall(far.id)).toEqual([]);
  }, 60_000);

  it('a caller who texted STOP to the number is not texted; the model is told why', async () => {
    const c = await customer('twilio', true);
    const caller = nextNumber();
    const stop = await stack.sims.twilio.messages.receive({ from: caller, to: c.number, body: 'STOP' });
    expect(stop.status).toBe(200);
    // The opt-out's own confirmation is the one text the caller gets.
    await eventually(() => (stack.sims.twilio.messages.sent(caller).length === 1 ? true : undefined), 8000, 'the STOP confirmation');
    const llmBefore = stack.llm.requests.length;
    rules = [
      [/text me your address/, { toolCalls: [{ name: 'send_sms', arguments: { body: ADDRESS } }] }],
      [/opted out/, { text: 'I cannot text you, so here it is: 1 Main Street.' }],
    ];
    const far = await ringAgent(stack, c, caller);
    await agentSpeaks(far);
    await turn(far, 'Could you text me your address?');
    const told = toolMessages(requestAfter(llmBefore, (m) => m.role === 'tool').messages).at(-1)!.content;
    expect(JSON.parse(told)).toEqual({ error: expect.stringContaining('opted out of texts from this number') });
    await far.hangup();
    await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(stack.sims.twilio.messages.sent(caller).map((m) => m.body)).not.toContain(ADDRESS);
    expect(textsOfCall(far.id)).toEqual([]);
  }, 60_000);

  let calendars = 0;
  async function withCalendar(incall: boolean): Promise<Customer> {
    const c = await customer('twilio', incall);
    const n = ++calendars;
    crm.addCalendar({ id: `cal-sms-${n}`, locationId: `loc-sms-${n}`, timezone: ZONE });
    crmTokens[`pit-sms-${n}`] = `loc-sms-${n}`;
    const res = await stack.server.request('PUT', `/v1/integrations/crm/number/${encodeURIComponent(c.number)}`, {
      key: c.key,
      body: { pit: `pit-sms-${n}`, location_id: `loc-sms-${n}`, calendar_id: `cal-sms-${n}` },
    });
    expect(res.status, res.text).toBe(200);
    return c;
  }

  it.each([true, false])('a booking made on the call is confirmed by text exactly when incall_sms_enabled is %s', async (incall) => {
    const c = await withCalendar(incall);
    const caller = nextNumber();
    rules = [
      [/cleaning on Tuesday/, { toolCalls: [{ name: 'book_appointment', arguments: { start: NINE, service: 'Cleaning' } }] }],
      [/"status":"booked"/, { text: 'You are booked for Tuesday at nine.' }],
    ];
    const far = await ringAgent(stack, c, caller);
    await agentSpeaks(far);
    await turn(far, 'Can I get a cleaning on Tuesday at nine?');
    const live = await recordWhere(stack, c, far.id, (r) => r.bookings.length === 1);
    const uid = live.bookings[0].booking_uid as string;
    await far.hangup();
    await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    if (incall) {
      const [sent] = await eventually(() => (stack.sims.twilio.messages.sent(caller).length > 0 ? stack.sims.twilio.messages.sent(caller) : undefined), 8000, 'the confirmation');
      const body = `Your Cleaning appointment is booked for Tuesday, March 2 at 9:00 AM EST. Reference: ${uid}.`;
      expect(sent).toMatchObject({ from: c.number, body });
      expect(textsOfCall(far.id)).toEqual([{ origin: 'booking', from_number: c.number, to_number: caller, body, call_id: far.id }]);
    } else {
      expect(stack.sims.twilio.messages.sent(caller)).toEqual([]);
      expect(textsOfCall(far.id)).toEqual([]);
    }
  }, 60_000);
});
