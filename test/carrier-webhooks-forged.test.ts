// Carrier webhooks that do not come from the carrier: a bad signature, none, one made
// with another account's secret, a wrong Ed25519 key, a stale or future timestamp, an
// unknown events token, any event of a carrier B number stored without a public key. Each is 403 invalid_signature, adds or changes no row in any
// table, moves no call on, and leaves no log line but the request's route and status.
// A correctly signed request on the same paths is accepted, so the checks can fail.
import { generateTelnyxKeyPair, signTelnyx } from '../voice/carriers/telnyx-signature.ts';
import { signTwilio } from '../voice/carriers/twilio-signature.ts';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, type TestResponse } from './helpers/server.ts';
import { createAgent, nextNumber } from './helpers/fixtures.ts';
import { callReaches, dial, newCustomer, PUBLIC_BASE, rowCounts, startCallStack, type CallStack, type Customer } from './helpers/calls.ts';
import { twilioSid } from './sim/twilio-sim.ts';

const logLines: string[] = [];
let stack: CallStack;
beforeAll(async () => {
  // The service logs into this list: what a forged request leaves behind is visible.
  // One entry per log line: a single write may carry more than one (split on the newline pino ends each with).
  const log = pino({ level: 'debug', base: null }, { write: (chunk: string) => void logLines.push(...chunk.split('\n').filter((l) => l !== '')) });
  stack = await startCallStack({}, undefined, { log });
});
afterAll(async () => {
  await stack.close();
});

/**
 * Sends `send`, expects 403 invalid_signature, that no table changed, and that the
 * request left one log line holding only its route and status (other lines written
 * meanwhile, by calls going on, hold none of the request's data either).
 */
async function expectForged(send: () => Promise<TestResponse>, secrets: string[]): Promise<void> {
  const before = rowCounts(stack.server);
  const linesBefore = logLines.length;
  const res = await send();
  expectError(res, 403, 'permission_error', 'invalid_signature');
  expect(rowCounts(stack.server)).toEqual(before);
  stack.server.log.flush();
  const lines = logLines.slice(linesBefore).map((l) => JSON.parse(l) as Record<string, unknown>);
  const refused = lines.filter((l) => l['msg'] === 'request' && l['status'] === 403);
  expect(refused).toHaveLength(1);
  expect(Object.keys(refused[0]!).sort()).toEqual(['duration_ms', 'level', 'method', 'msg', 'request_id', 'route', 'status', 'time']);
  expect(String(refused[0]!['route'])).toMatch(/^\/carrier\/(twilio\/(voice|status|amd)|telnyx\/events\/\{token\})$/);
  for (const line of lines) for (const s of secrets) expect(JSON.stringify(line)).not.toContain(s);
}

describe('carrier A (twilio)', () => {
  let c: Customer;
  let other: Customer;
  beforeAll(async () => {
    c = await newCustomer(stack, 'twilio');
    other = await newCustomer(stack, 'twilio');
  });

  const post = (path: string, form: Record<string, string>, signature?: string) =>
    stack.server.request('POST', path, {
      rawBody: new URLSearchParams(form).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(signature === undefined ? {} : { 'x-twilio-signature': signature }) },
    });
  const incoming = (callSid: string, from: string): Record<string, string> => ({
    CallSid: callSid,
    AccountSid: c.carrierAccount,
    From: from,
    To: c.number,
    CallStatus: 'ringing',
    Direction: 'inbound',
    ApiVersion: '2010-04-01',
  });

  it('refuses an incoming call that is unsigned, badly signed, signed with another account’s token or for another URL', async () => {
    const sid = twilioSid('CA');
    const from = nextNumber();
    const form = incoming(sid, from);
    const url = `${PUBLIC_BASE}/carrier/twilio/voice`;
    const secrets = [sid, from, c.number];
    await expectForged(() => post('/carrier/twilio/voice', form), secrets);
    await expectForged(() => post('/carrier/twilio/voice', form, 'bm90IGEgc2lnbmF0dXJlIGF0IGFsbCE='), secrets);
    await expectForged(() => post('/carrier/twilio/voice', form, signTwilio(other.carrierSecret, url, form)), secrets);
    await expectForged(() => post('/carrier/twilio/voice', form, signTwilio(c.carrierSecret, `${PUBLIC_BASE}/carrier/twilio/status`, form)), secrets);
    await expectForged(() => post('/carrier/twilio/voice', { ...form, From: nextNumber() }, signTwilio(c.carrierSecret, url, form)), secrets);
    // A number that is not ours has no token to check against.
    const stranger = { ...form, To: nextNumber() };
    await expectForged(() => post('/carrier/twilio/voice', stranger, signTwilio(c.carrierSecret, url, stranger)), secrets);
    // The same request signed right is answered.
    const ok = await post('/carrier/twilio/voice', form, signTwilio(c.carrierSecret, url, form));
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('<Connect><Stream');
    await callReaches(stack.server, c.key, sid, 'in-progress');
  });

  it('refuses a status callback of a live call signed with another account’s token; the call goes on', async () => {
    const created = await dial(stack.server, c, nextNumber());
    await callReaches(stack.server, c.key, created.call_id, 'in-progress');
    const cid = new URLSearchParams(String(stack.sims.twilio.calls.get(created.call_id)!.params['StatusCallback']).split('?')[1]).get('cid')!;
    const path = `/carrier/twilio/status?cid=${cid}`;
    const form = { CallSid: created.call_id, AccountSid: c.carrierAccount, CallStatus: 'completed', CallDuration: '3', From: c.number, To: nextNumber() };
    await expectForged(() => post(path, form, signTwilio(other.carrierSecret, `${PUBLIC_BASE}${path}`, form)), [created.call_id]);
    await expectForged(() => post(path, form), [created.call_id]);
    await expectForged(() => post(`/carrier/twilio/amd?cid=${cid}`, { CallSid: created.call_id, AnsweredBy: 'machine_start' }), [created.call_id]);
    expect((await stack.server.request('GET', `/v1/calls/${created.call_id}`, { key: c.key })).body.call_status).toBe('in-progress');
    await stack.sims.twilio.hangup(created.call_id);
    await callReaches(stack.server, c.key, created.call_id, 'completed');
  });

  it('acknowledges a signed callback of a call it does not know, and records nothing', async () => {
    const form = { CallSid: twilioSid('CA'), AccountSid: c.carrierAccount, CallStatus: 'completed', From: nextNumber(), To: c.number };
    const before = rowCounts(stack.server);
    const res = await post('/carrier/twilio/status', form, signTwilio(c.carrierSecret, `${PUBLIC_BASE}/carrier/twilio/status`, form));
    expect(res.status).toBe(200);
    expect(rowCounts(stack.server)).toEqual(before);
  });
});

describe('carrier B (telnyx)', () => {
  let c: Customer;
  let token: string;
  beforeAll(async () => {
    c = await newCustomer(stack, 'telnyx');
    token = stack.server.storage.numbers.get(c.accountId, c.number)!.events_token!;
  });

  const envelope = (eventType: string, payload: Record<string, unknown>) =>
    JSON.stringify({
      data: { record_type: 'event', event_type: eventType, id: crypto.randomUUID(), occurred_at: new Date().toISOString(), payload },
      meta: { attempt: 1, delivered_to: `${PUBLIC_BASE}/carrier/telnyx/events/${token}` },
    });
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    stack.server.request('POST', path, { rawBody: body, headers: { 'content-type': 'application/json', ...headers } });
  const signed = (key: Parameters<typeof signTelnyx>[0], body: string, ts: number) => ({
    'telnyx-signature-ed25519': signTelnyx(key, body, ts),
    'telnyx-timestamp': String(ts),
  });

  it('refuses an incoming call with a wrong key, a stale or future timestamp, a tampered body, no signature, or an unknown token', async () => {
    const ccid = `v3:${twilioSid('')}`;
    const from = nextNumber();
    const body = envelope('call.initiated', { call_control_id: ccid, call_leg_id: crypto.randomUUID(), call_session_id: crypto.randomUUID(), direction: 'incoming', state: 'parked', from, to: c.number, client_state: null });
    const path = `/carrier/telnyx/events/${token}`;
    const now = Math.floor(Date.now() / 1000);
    const own = stack.sims.telnyx.state.keyPairs.get(c.carrierAccount)!.privateKey;
    const secrets = [ccid, from, c.number, token];
    await expectForged(() => post(path, body, signed(generateTelnyxKeyPair().privateKey, body, now)), secrets);
    await expectForged(() => post(path, body, signed(own, body, now - 400)), secrets);
    await expectForged(() => post(path, body, signed(own, body, now + 400)), secrets);
    await expectForged(() => post(path, body.replace(from, nextNumber()), signed(own, body, now)), secrets);
    await expectForged(() => post(path, body), secrets);
    await expectForged(() => post(`/carrier/telnyx/events/${'x'.repeat(32)}`, body, signed(own, body, now)), secrets);
    // Another account's key signs its own events, not this number's.
    const otherCustomer = await newCustomer(stack, 'telnyx');
    const otherKey = stack.sims.telnyx.state.keyPairs.get(otherCustomer.carrierAccount)!.privateKey;
    await expectForged(() => post(path, body, signed(otherKey, body, now)), secrets);
  });

  it('accepts a correctly signed event (an unknown call is acknowledged and ignored)', async () => {
    const body = envelope('call.answered', { call_control_id: `v3:${twilioSid('')}`, client_state: null, from: nextNumber(), to: c.number });
    const own = stack.sims.telnyx.state.keyPairs.get(c.carrierAccount)!.privateKey;
    const before = rowCounts(stack.server);
    const res = await post(`/carrier/telnyx/events/${token}`, body, signed(own, body, Math.floor(Date.now() / 1000)));
    expect(res.status).toBe(200);
    expect(rowCounts(stack.server)).toEqual(before);
  });

  it('refuses every event of a number stored without a public key (imported before the key was required), unsigned or signed', async () => {
    // What an import stored before telnyx_public_key was required: credentials with no key.
    const { key, accountId } = await stack.server.newAccount();
    const agentId = await createAgent(stack.server, key);
    const apiKey = `KEY${twilioSid('').slice(0, 32).toUpperCase()}`;
    stack.sims.telnyx.addApiKey(apiKey);
    const connectionId = stack.sims.telnyx.addConnection(apiKey);
    const number = nextNumber();
    stack.sims.telnyx.addNumber(apiKey, number, { connectionId });
    const legacyToken = `L${twilioSid('').slice(0, 31)}`;
    const stored = stack.server.storage.numbers.import({
      accountId,
      phoneNumber: number,
      agentId,
      credentials: { provider: 'telnyx', api_key: apiKey, connection_id: connectionId, public_key: null },
      source: 'api',
      carrierNumberSid: null,
      carrierNumberId: null,
      eventsToken: legacyToken,
      inboundEnabled: undefined,
      outboundEnabled: undefined,
      now: Date.now(),
    });
    expect(stored.kind).toBe('created');

    const ccid = `v3:${twilioSid('')}`;
    const from = nextNumber();
    const body = envelope('call.initiated', { call_control_id: ccid, call_leg_id: crypto.randomUUID(), call_session_id: crypto.randomUUID(), direction: 'incoming', state: 'parked', from, to: number, client_state: null });
    const path = `/carrier/telnyx/events/${legacyToken}`;
    const carrierKey = stack.sims.telnyx.state.keyPairs.get(apiKey)!.privateKey;
    const secrets = [ccid, from, number, legacyToken];
    await expectForged(() => post(path, body), secrets);
    // Even the carrier's own signature: with no key on file there is nothing to check it with.
    await expectForged(() => post(path, body, signed(carrierKey, body, Math.floor(Date.now() / 1000))), secrets);

    // A real call from the carrier to that number is refused the same way: nothing answered, nothing recorded.
    const app = stack.sims.telnyx.callControlApplications.get(connectionId)!;
    app.webhook_event_url = `${PUBLIC_BASE}${path}`;
    app.webhook_api_version = '2';
    const before = rowCounts(stack.server);
    const handle = await stack.sims.telnyx.placeInboundCall({ from, to: number, apiKey });
    expect(handle.call.webhooks[0]!.status).toBe(403);
    expect(handle.call.commands).toEqual([]);
    expect(rowCounts(stack.server)).toEqual(before);
    expect((await stack.server.request('GET', '/v1/calls', { key })).body.calls).toEqual([]);
  });

  it('refuses a forged hang-up of a live call; the call goes on', async () => {
    const created = await dial(stack.server, c, nextNumber());
    await callReaches(stack.server, c.key, created.call_id, 'in-progress');
    const body = envelope('call.hangup', { call_control_id: created.call_id, client_state: null, hangup_cause: 'normal_clearing', hangup_source: 'callee' });
    const now = Math.floor(Date.now() / 1000);
    await expectForged(() => post(`/carrier/telnyx/events/${token}`, body, signed(generateTelnyxKeyPair().privateKey, body, now)), [created.call_id]);
    expect((await stack.server.request('GET', `/v1/calls/${encodeURIComponent(created.call_id)}`, { key: c.key })).body.call_status).toBe('in-progress');
    await stack.sims.telnyx.hangup(created.call_id);
    await callReaches(stack.server, c.key, created.call_id, 'completed');
  });
});
