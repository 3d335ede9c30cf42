// The live machine view never shows personal data (issue 18, point 6), end to end: a
// viewer of the account watches the websocket `/v1/debug/actors/ws` and polls
// `GET /v1/debug/actors` while a caller with a stored context record (name, email,
// contact number, location, reference, preference) talks to the agent over the carrier
// and provider simulators and books an appointment through the CRM simulator. Every
// byte the view sent is then searched for each datum of the call: the caller's number
// in any spelling, their context, the booking's attendee and service, the words either
// side said, the agent's prompt, the analysis summary. The view must still tell the
// story: event types, state values, times, the call's ids.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { nextNumber } from './helpers/fixtures.ts';
import { eventually, newCustomer, type Customer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, startConversationStack, type ConversationStack, type Provider } from './helpers/conversation.ts';
import { startCrmSim, type CrmSim } from './sim/crm-sim.ts';
import type { ChatCompletionBody, LlmSimReply } from './sim/llm-sim.ts';

const ZONE = 'America/New_York';
const NINE = '2027-03-02T09:00:00-05:00';
const enc = encodeURIComponent;

// Every datum below is distinctive, so finding it anywhere in the view is a leak.
const CONTEXT = {
  name: 'Dana Reyes',
  email: 'dana.reyes@example.org',
  phone: '+44 20 7946 0018',
  location: 'Wexford Lane clinic',
  reference_id: 'REF-77Q31',
  preference: 'Prefers Thursdays with Dr Okonkwo',
};
const BOOKING = { name: 'Dana Reyes', email: 'dana.reyes@example.org', service: 'Cleaning for Dana Reyes' };
const PROMPT = 'You answer for Brightsmile dental. Speak like a Lighthouse keeper.';
const WELCOME = 'Welcome to Brightsmile Quokka dental.';
const CALLER_SAYS = 'Please book my usual cleaning, the zephyr marmalade slot on Tuesday morning.';
const AGENT_SAYS = 'You are booked, see you at the Kettleworth surgery.';
const SUMMARY = 'Summary-marker: the caller booked a cleaning.';

/** The model: books on the caller's words, confirms on the booking's answer; the analysis gets its JSON. */
function brain(body: ChatCompletionBody): LlmSimReply {
  if (body.response_format !== undefined) return { text: JSON.stringify({ summary: SUMMARY, sentiment: 'happy', successful: true, open_item: null }) };
  const last = body.messages.filter((m) => m.role !== 'system').at(-1);
  const text = typeof last?.content === 'string' ? last.content : '';
  if (/zephyr marmalade/.test(text)) return { toolCalls: [{ name: 'book_appointment', arguments: { start: NINE, ...BOOKING } }] };
  if (/"status":"booked"/.test(text)) return { text: AGENT_SAYS };
  return { text: 'Okay.' };
}

let crm: CrmSim;
let stack: ConversationStack;
const tokens: Record<string, string> = {};

beforeAll(async () => {
  crm = await startCrmSim({ tokens });
  stack = await startConversationStack({ CRM_BASE_URL: crm.baseUrl }, {}, {}, { llmRespond: brain });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await crm?.close();
});

interface Viewer {
  ws: WebSocket;
  raw: string[];
  msgs: any[];
  closed: Promise<void>;
}

async function openViewer(key: string): Promise<Viewer> {
  const ws = new WebSocket(`ws://127.0.0.1:${stack.server.port}/v1/debug/actors/ws`, { headers: { authorization: `Bearer ${key}` } });
  const raw: string[] = [];
  const msgs: any[] = [];
  ws.on('message', (data) => {
    raw.push(data.toString());
    msgs.push(JSON.parse(data.toString()));
  });
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, raw, msgs, closed };
}

/** A customer whose number books through its own CRM calendar. */
async function bookingCustomer(provider: Provider): Promise<Customer> {
  const c = await newCustomer(stack, provider, { system_prompt: PROMPT, welcome_message: WELCOME, response_eagerness: 100, timezone: ZONE });
  const calendarId = `cal-${c.accountId}`;
  const token = `pit-${c.accountId}`;
  crm.addCalendar({ id: calendarId, locationId: `loc-${c.accountId}`, timezone: ZONE });
  tokens[token] = `loc-${c.accountId}`;
  const res = await stack.server.request('PUT', `/v1/integrations/crm/number/${enc(c.number)}`, {
    key: c.key,
    body: { pit: token, location_id: `loc-${c.accountId}`, calendar_id: calendarId },
  });
  expect(res.status, res.text).toBe(200);
  return c;
}

describe.each<Provider>(['twilio', 'telnyx'])('a booking call watched live on carrier %s', (provider) => {
  let c: Customer;
  let caller: string;
  let viewer: Viewer;
  let callId: string;
  const lists: string[] = [];
  let everything = '';

  beforeAll(async () => {
    c = await bookingCustomer(provider);
    caller = nextNumber();
    const ctx = await stack.server.request('PUT', `/v1/phone-numbers/${enc(c.number)}/callers/${enc(caller)}`, { key: c.key, body: CONTEXT });
    expect(ctx.status, ctx.text).toBe(200);
    viewer = await openViewer(c.key);
    await eventually(() => (viewer.msgs.length > 0 ? true : undefined), 3000, 'the first list');
    const list = async () => lists.push((await stack.server.request('GET', '/v1/debug/actors', { key: c.key })).text);

    const llmBefore = stack.llm.requests.length;
    const far = await ringAgent(stack, c, caller);
    callId = far.id;
    await agentSpeaks(far);
    await list();
    const before = far.heardBytes();
    await far.say('book-table', CALLER_SAYS);
    await agentSpeaks(far, before);
    await recordWhere(stack, c, callId, (r) => r.bookings.length === 1);
    await list();
    // The data really was in flight: the model saw the caller's record, the CRM the booking.
    const system = stack.llm.requests.slice(llmBefore).find((r) => r.body.messages[0]?.role === 'system')!.body.messages[0]!.content ?? '';
    expect(system).toContain(CONTEXT.name);
    expect(system).toContain(CONTEXT.preference);
    expect([...crm.appointments.values()].some((a) => a.title === BOOKING.service)).toBe(true);
    await far.hangup();
    const done = await recordWhere(stack, c, callId, (r) => r.call_status === 'completed' && r.analysis_status !== 'pending', 20_000);
    expect(done.bookings[0]).toMatchObject({ attendee_name: BOOKING.name, service: BOOKING.service });
    expect(done.transcript).toContain('zephyr marmalade');
    await eventually(() => (viewer.msgs.some((m) => m.type === '@xstate.snapshot' && m.snapshot.status === 'done') ? true : undefined), 8000, 'the final snapshot');
    await list();
    viewer.ws.close();
    await viewer.closed;
    everything = [...viewer.raw, ...lists].join('\n');
  }, 60_000);

  it('shows no personal datum anywhere, in the stream or the list', () => {
    const national = caller.slice(2);
    for (const spelling of [caller, caller.slice(1), national, `${national.slice(0, 3)}-${national.slice(3, 6)}-${national.slice(6)}`]) {
      expect(everything).not.toContain(spelling);
    }
    const contactDigits = CONTEXT.phone.replace(/\D/g, '');
    for (const s of [CONTEXT.phone, contactDigits, contactDigits.slice(2)]) expect(everything).not.toContain(s);
    for (const word of ['Dana', 'Reyes', 'dana.reyes', 'Wexford', 'REF-77Q31', 'Okonkwo', 'Thursdays', 'Cleaning', 'cleaning']) {
      expect(everything, word).not.toContain(word);
    }
    // What either side said, the prompt, the greeting, the analysis.
    for (const word of ['zephyr', 'marmalade', 'Kettleworth', 'Lighthouse', 'Brightsmile', 'Quokka', 'Summary-marker']) {
      expect(everything, word).not.toContain(word);
    }
    // The booking's own fields: its start, its zone, its uid.
    const uid = [...crm.appointments.values()].find((a) => a.title === BOOKING.service)!.id;
    for (const s of [NINE, ZONE, uid]) expect(everything, s).not.toContain(s);
  });

  it('still shows the structure: event types, states, times, ids', () => {
    const events = viewer.msgs.filter((m) => m.type === '@xstate.event');
    const actorId = events.find((m) => m.event.type === 'CONVERSATION.BOOKING')?.actorId as string;
    expect(actorId).toMatch(/^call_/);
    const mine = events.filter((m) => m.actorId === actorId).map((m) => m.event);
    expect(mine.map((e) => e.type)).toEqual(expect.arrayContaining(['CONVERSATION.LINE', 'CONVERSATION.BOOKING', 'CARRIER.ENDED']));
    const booking = mine.find((e) => e.type === 'CONVERSATION.BOOKING');
    expect(booking).toEqual({ type: 'CONVERSATION.BOOKING', at: expect.any(Number), booking: '[redacted]' });
    const lines = mine.filter((e) => e.type === 'CONVERSATION.LINE');
    expect(new Set(lines.map((e) => e.speaker))).toEqual(new Set(['agent', 'caller']));
    // Enumerated values stay readable: a timer's name, a status.
    for (const timer of mine.filter((e) => e.type === 'TIMER')) expect(timer.name).toMatch(/^[a-z_]+$/);
    for (const line of lines) expect(line).toMatchObject({ at: expect.any(Number), text: '[redacted]' });
    expect(mine.find((e) => e.type === 'CARRIER.ENDED')).toMatchObject({ status: 'completed', at: expect.any(Number) });
    // The carrier's id of the call (the API's call_id) shows where an event carries it.
    expect(JSON.stringify(mine)).toContain(callId);
    const states = viewer.msgs.filter((m) => m.type === '@xstate.snapshot' && m.actorId === actorId).map((m) => JSON.stringify(m.snapshot.value));
    expect(states.some((s) => s.includes('in-progress'))).toBe(true);
    expect(states.at(-1)).toBe('"done"');
    const listed = JSON.parse(lists[1]!).actors.find((a: any) => a.id === actorId);
    expect(listed).toMatchObject({ kind: 'call', status: 'active', last_event: { type: expect.any(String) } });
  });
});
