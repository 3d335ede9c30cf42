// Bookings through the number's CRM calendar, end to end on both carriers: the service
// runs as a child process with CRM_BASE_URL pointing at the CRM simulator
// (test/sim/crm-sim.ts, the HighLevel v2 shape and rules), the model, recogniser and
// voice are simulators. The tests check what each side saw: the tools the model was
// offered, the CRM's appointments and contacts, the read-back the caller heard (said by
// the engine, not the model), what the model was told, and the call record's `bookings`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCustomer, startSims, PUBLIC_BASE, type CallStack, type Customer } from './helpers/calls.ts';
import { agentSpeaks, recordWhere, ringAgent, KEYS, type ConversationStack, type FarEnd, type Provider } from './helpers/conversation.ts';
import { startServiceProcess, type ServiceProcess } from './helpers/process.ts';
import { remote } from './helpers/remote.ts';
import { startLlmSim, type ChatCompletionBody, type LlmSim, type LlmSimReply } from './sim/llm-sim.ts';
import { startDeepgramSim, type DeepgramSim } from './sim/deepgram-sim.ts';
import { startOpenAiTtsSim, type OpenAiTtsSim } from './sim/openai-tts-sim.ts';
import { startCrmSim, type CrmSim } from './sim/crm-sim.ts';
import { makeTestCa, type TestCa } from './sim/webhook-receiver.ts';
import type { LlmMessage } from '../voice/providers/llm.ts';

let sims: CallStack['sims'];
let llm: LlmSim;
let stt: DeepgramSim;
let tts: OpenAiTtsSim;
let crm: CrmSim;
let ca: TestCa;
let service: ServiceProcess;
let stack: ConversationStack;
let dataDir: string;

const ZONE = 'America/New_York';
// Tuesday 2 March 2027, before the clocks change: 9 am New York is 14:00 UTC.
const DAY = '2027-03-02';
const NINE = '2027-03-02T09:00:00-05:00';
const TEN = '2027-03-02T10:00:00-05:00';

beforeAll(async () => {
  sims = await startSims();
  llm = await startLlmSim({ apiKey: KEYS.llm, firstTokenMs: 40, tokenMs: 4, respond: (body) => brain(body) });
  stt = await startDeepgramSim({ apiKey: KEYS.stt, finalLatencyMs: 30 });
  tts = await startOpenAiTtsSim({ apiKey: KEYS.tts, firstAudioMs: 30 });
  // The CRM speaks HTTPS with a throwaway CA's certificate, trusted by the service through NODE_EXTRA_CA_CERTS.
  ca = makeTestCa();
  crm = await startCrmSim({ tokens: (crmTokens = {}), tls: { cert: ca.certPem, key: ca.keyPem } });
  dataDir = mkdtempSync(join(tmpdir(), 'switchboard-bookings-'));
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
    CRM_BASE_URL: crm.baseUrl,
    NODE_EXTRA_CA_CERTS: ca.caFile,
    KEY_CREATION_PER_HOUR_PER_IP: '100000',
  });
  sims.twilio.route(PUBLIC_BASE, service.url);
  sims.telnyx.redirect(PUBLIC_BASE, service.url);
  stack = { sims, server: remote(service.url), llm, stt, tts, cartesia: null as never, close: async () => {} };
}, 40_000);

afterAll(async () => {
  if (service) {
    service.child.kill('SIGTERM');
    await service.exited;
  }
  await sims?.close();
  await Promise.all([llm?.close(), stt?.close(), tts?.close(), crm?.close()]);
  ca?.dispose();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

let calendars = 0;
/**
 * The model, as each test scripts it: a reply decided from the conversation alone (the
 * caller's last words, the last tool answer), so a reply asked for twice (a stale one
 * cancelled when the caller goes on talking) is the same reply.
 */
let brain: (body: ChatCompletionBody) => LlmSimReply = () => ({ text: 'Okay.' });
type Rule = [RegExp, LlmSimReply];
/** The reply to the last message (a caller's words or a tool's answer) that the first matching rule names. */
function script(...rules: Rule[]): void {
  brain = (body) => {
    const last = body.messages.filter((m) => m.role !== 'system').at(-1);
    const text = typeof last?.content === 'string' ? last.content : '';
    return rules.find(([re]) => re.test(text))?.[1] ?? { text: 'Okay.' };
  };
}
/** The first model request since `from` whose last message matches. */
function requestAfter(from: number, probe: (m: LlmMessage) => boolean): ChatCompletionBody {
  const req = llm.requests.slice(from).find((r) => probe(r.body.messages.at(-1)!));
  if (!req) throw new Error('no such model request');
  return req.body;
}
const lastToolSays = (re: RegExp) => (m: LlmMessage) => m.role === 'tool' && re.test(m.content);
// The simulator reads its token table on every request, so each test adds its own location's token.
let crmTokens: Record<string, string>;

/**
 * A customer whose number's CRM integration has a calendar of its own (9 to 5 New York,
 * 30-minute slots). `confirm`: the agent's require_booking_confirmation, or 'number' for
 * the agent's off and the number's override on.
 */
async function withCalendar(provider: Provider, confirm: boolean | 'number'): Promise<Customer & { calendarId: string }> {
  const n = ++calendars;
  const c = await newCustomer(stack, provider, { welcome_message: 'Hello, this is Acme dental.', response_eagerness: 100, timezone: ZONE, require_booking_confirmation: confirm === true });
  if (confirm === 'number') {
    const res = await stack.server.request('PATCH', `/v1/phone-numbers/${encodeURIComponent(c.number)}`, { key: c.key, body: { require_booking_confirmation: true } });
    expect(res.status, res.text).toBe(200);
  }
  const calendarId = `cal-${n}`;
  const token = `pit-${n}`;
  crm.addCalendar({ id: calendarId, locationId: `loc-${n}`, timezone: ZONE });
  crmTokens[token] = `loc-${n}`;
  const res = await stack.server.request('PUT', `/v1/integrations/crm/number/${encodeURIComponent(c.number)}`, {
    key: c.key,
    body: { pit: token, location_id: `loc-${n}`, calendar_id: calendarId },
  });
  expect(res.status, res.text).toBe(200);
  return { ...c, calendarId };
}

/** The caller says `words` and the agent answers (and falls quiet). */
async function turn(far: FarEnd, words: string, slug: 'book-table' | 'yeah' | 'okay' = 'book-table'): Promise<void> {
  const before = far.heardBytes();
  await far.say(slug, words);
  await agentSpeaks(far, before);
}

const toolMessages = (messages: LlmMessage[]) => messages.filter((m): m is Extract<LlmMessage, { role: 'tool' }> => m.role === 'tool');
const appointmentsOf = (calendarId: string) => [...crm.appointments.values()].filter((a) => a.calendarId === calendarId);

describe.each<Provider>(['twilio', 'telnyx'])('bookings on carrier %s', (provider) => {
  it('finds free slots, books, reschedules and cancels; each change is a Booking on the call record', async () => {
    const c = await withCalendar(provider, false);
    const llmBefore = llm.requests.length;
    script(
      [/cleaning on Tuesday/, { toolCalls: [{ name: 'find_free_slots', arguments: { from_date: DAY } }] }],
      [/"slots"/, { toolCalls: [{ name: 'book_appointment', arguments: { start: NINE, name: 'Ada Lovelace', email: 'ada@example.com', service: 'Cleaning' } }] }],
      [/"status":"booked"/, { text: 'You are booked for Tuesday at nine.' }],
      [/make it ten/, { toolCalls: [{ name: 'reschedule_appointment', arguments: { start: '2027-03-02T10:00' } }] }],
      [/"status":"rescheduled"/, { text: 'Moved to ten.' }],
      [/cancel it/, { toolCalls: [{ name: 'cancel_appointment', arguments: {} }] }],
      [/"status":"cancelled"/, { text: 'It is cancelled.' }],
    );
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    await turn(far, 'Can I get a cleaning on Tuesday morning?');

    // The model was offered the booking tools, and saw the free slots in the agent's zone.
    // (Post-call analysis of earlier calls asks the model too: this is the request that answered the caller.)
    const first = requestAfter(llmBefore, (m) => m.role === 'user' && /cleaning on Tuesday/.test(m.content ?? ''));
    expect(first.tools?.map((t) => t.function.name)).toEqual(expect.arrayContaining(['find_free_slots', 'book_appointment', 'reschedule_appointment', 'cancel_appointment']));
    const slots = JSON.parse(toolMessages(requestAfter(llmBefore, lastToolSays(/"slots"/)).messages).at(-1)!.content) as { timezone: string; slots: { start: string; spoken: string }[] };
    expect(slots.timezone).toBe(ZONE);
    expect(slots.slots[0]).toEqual({ start: NINE, spoken: 'Tuesday, March 2 at 9 AM' });

    // The CRM has the appointment, under the caller as a contact.
    const [booked] = appointmentsOf(c.calendarId);
    expect(booked).toMatchObject({ startTime: NINE, title: 'Cleaning', appointmentStatus: 'confirmed' });
    const live = await recordWhere(stack, c, far.id, (r) => r.bookings.length === 1);
    expect(crm.contacts.get(booked!.contactId)).toMatchObject({ phone: live.from_number, name: 'Ada Lovelace', email: 'ada@example.com' });
    expect(live.bookings).toEqual([
      { action: 'created', booking_uid: booked!.id, start: NINE, attendee_name: 'Ada Lovelace', attendee_email: 'ada@example.com', service: 'Cleaning', timezone: ZONE },
    ]);

    // Moved to ten, then cancelled: the same booking_uid throughout.
    await turn(far, 'Actually, make it ten please.');
    expect(crm.appointments.get(booked!.id)!.startTime).toBe(TEN);
    await turn(far, 'On second thought, cancel it.');
    expect(crm.appointments.has(booked!.id)).toBe(false);

    await far.hangup();
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed' && r.bookings.length === 3);
    const common = { booking_uid: booked!.id, attendee_name: 'Ada Lovelace', attendee_email: 'ada@example.com', service: 'Cleaning', timezone: ZONE };
    expect(done.bookings).toEqual([
      { action: 'created', start: NINE, ...common },
      { action: 'rescheduled', start: TEN, ...common },
      { action: 'cancelled', ...common },
    ]);
  }, 60_000);

  it('with require_booking_confirmation the engine reads the booking back and books only after a clear yes', async () => {
    const c = await withCalendar(provider, true);
    const llmBefore = llm.requests.length;
    const ttsBefore = tts.requests.length;
    script([/Tuesday at nine/, { toolCalls: [{ name: 'book_appointment', arguments: { start: NINE, name: 'Ada Lovelace' } }] }], [/"status":"booked"/, { text: 'Done, you are booked.' }]);
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    await turn(far, 'Book me Tuesday at nine, name Ada Lovelace.');

    // The engine said the read-back itself (no model request for it); nothing is booked yet.
    const said = tts.requests.slice(ttsBefore).map((r) => r.body.input as string).join(' ');
    expect(said).toContain('Just to confirm: an appointment for Ada Lovelace on Tuesday, March 2 at 9 AM. Shall I book it?');
    expect(llm.requests.slice(llmBefore).every((r) => r.body.messages.at(-1)!.role === 'user')).toBe(true);
    expect(appointmentsOf(c.calendarId)).toEqual([]);

    await turn(far, 'Yes please.', 'yeah');
    const [booked] = appointmentsOf(c.calendarId);
    expect(booked).toMatchObject({ startTime: NINE });
    // The model heard the outcome of the confirmed booking and said so.
    requestAfter(llmBefore, lastToolSays(/"status":"booked"/));
    expect(tts.requests.at(-1)!.body.input).toBe('Done, you are booked.');
    await far.hangup();
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(done.bookings).toEqual([{ action: 'created', booking_uid: booked!.id, start: NINE, attendee_name: 'Ada Lovelace', timezone: ZONE }]);
    expect(done.transcript).toContain('Agent: Just to confirm: an appointment for Ada Lovelace on Tuesday, March 2 at 9 AM. Shall I book it?');
  }, 60_000);
});

describe('what does not book', () => {
  it.each([
    ['twilio', 'No thanks.', /said no/],
    ['telnyx', 'Hmm, what time was that again?', /not a clear yes/],
  ] as const)('on %s the answer "%s" books nothing and the model is told', async (provider, answer, told) => {
    // The number's override (agent off) on one of them.
    const c = await withCalendar(provider, provider === 'telnyx' ? 'number' : true);
    const llmBefore = llm.requests.length;
    const crmBefore = crm.requests.length;
    script([/Tuesday at nine/, { toolCalls: [{ name: 'book_appointment', arguments: { start: NINE } }] }], [/./, { text: 'Alright, I have not booked anything.' }]);
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    await turn(far, 'Book me Tuesday at nine.');
    await turn(far, answer, 'okay');
    const after = llm.requests.slice(llmBefore).map((r) => r.body.messages).filter((ms) => ms.some((m) => m.role === 'user' && m.content === answer));
    expect(after.length).toBeGreaterThan(0);
    for (const ms of after) expect(ms.at(-1)).toMatchObject({ role: 'system', content: expect.stringMatching(told) });
    expect(appointmentsOf(c.calendarId)).toEqual([]);
    await far.hangup();
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(done.bookings).toEqual([]);
    expect(crm.requests.slice(crmBefore).some((r) => r.method === 'POST' && r.path === '/calendars/events/appointments')).toBe(false);
  }, 60_000);

  it('a CRM failure is told to the model, which carries on; nothing is recorded', async () => {
    const c = await withCalendar('twilio', false);
    const llmBefore = llm.requests.length;
    const ttsBefore = tts.requests.length;
    crm.fail({ status: 503, body: { message: 'down' }, match: (r) => r.path === '/calendars/events/appointments' });
    script(
      [/Tuesday at nine/, { toolCalls: [{ name: 'book_appointment', arguments: { start: NINE } }] }],
      [/"error"/, { text: 'Sorry, the calendar is not answering. Can I take a message?' }],
      [/When are you open/, { text: 'We are open until six.' }],
    );
    const far = await ringAgent(stack, c);
    await agentSpeaks(far);
    await turn(far, 'Book me Tuesday at nine.');
    expect(toolMessages(requestAfter(llmBefore, lastToolSays(/"error"/)).messages).at(-1)!.content).toBe(
      JSON.stringify({ error: 'the calendar could not book the appointment: the calendar failed (HTTP 503) (trying once more in a moment may work)' }),
    );
    expect(tts.requests.slice(ttsBefore).map((r) => r.body.input).join(' ')).toMatch(/Sorry, the calendar is not answering\. Can I take a message\?$/);
    await turn(far, 'When are you open?', 'okay');
    expect(tts.requests.at(-1)!.body.input).toBe('We are open until six.');
    await far.hangup();
    const done = await recordWhere(stack, c, far.id, (r) => r.call_status === 'completed');
    expect(done.bookings).toEqual([]);
    expect(appointmentsOf(c.calendarId)).toEqual([]);
  }, 60_000);
});
