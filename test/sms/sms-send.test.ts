// Single SMS end to end (issue 21, acceptance 1): the real server over real HTTP with
// both carriers' messaging simulators. Covered, on carrier A and carrier B alike:
//   1. POST /v1/sms answers 201 {message:{message_id msg_…, from, to, body, status
//      queued, direction outbound, created_at}}; GET /v1/sms/{id} answers {message} and
//      follows the carrier to `sent` then `delivered`, or to `undelivered` / `failed`
//      with the carrier's error_code when the carrier reports so; 1600 characters go.
//   2. Every refusal with its HTTP status, type and code, and nothing stored or sent:
//      missing_field (to, body, from_number; `to_number` instead of `to` is
//      missing_field naming `to`), invalid_phone_format (to, from_number), message_too_long
//      (1601), from_number_not_owned (another account's number, an unknown one),
//      agent_not_found 400 (a foreign or unknown agent_id), recipient_unsubscribed (the
//      recipient texted STOP). The carrier's refusals while the request waits change
//      nothing either (no message kept, nothing sent): sms_not_supported_in_region (an
//      unregistered US sender, 400) and carrier_unreachable (502 provider_error: the
//      carrier's port closed, so the request provably never left).
//   3. Exactly once: Idempotency-Key replays one message (the carrier took one); a lost
//      answer (the carrier took it, the connection dropped) is reconciled with the
//      carrier's list, answered 201 and ends sent/delivered with the carrier's id, never
//      sent again; a reset before the carrier processed it is sent once more, once. The
//      carrier's delivery report of such a text still counts: undelivered, not `sent`.
//   4. A send answered 201 while it waited for its turn, whose carrier is then
//      unreachable, is tried again, not failed at once.
//   5. Another account's message id and an unknown one: 404 message_not_found.
//   6. GET /v1/sms: newest first, {messages, count, limit, offset}, filters phone_number,
//      direction, since (inclusive) / until (exclusive), pagination, limit clamped to 100.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, importNumber, newCustomer, startCallStack, type CallStack, type Customer, type Provider } from '../helpers/calls.ts';
import {
  enc,
  expectApiError,
  getSms,
  listSms,
  phoneSequence,
  sendDelivered,
  sendSms,
  simSent,
  smsReaches,
  smsSim,
  SMS_ENV,
  type SmsSim,
} from '../helpers/sms.ts';

const TEST_MS = 45_000;
const phone = phoneSequence(1);
const MSG_ID = /^msg_[A-Za-z0-9]+$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let stack: CallStack;
beforeAll(async () => {
  stack = await startCallStack(SMS_ENV);
}, 30_000);
afterAll(async () => stack?.close());

describe.each(['twilio', 'telnyx'] as const)('single SMS on %s', (provider: Provider) => {
  let c: Customer;
  let other: Customer;
  let sim: SmsSim;
  beforeAll(async () => {
    sim = smsSim(stack, provider);
    c = await newCustomer(stack, provider);
    other = await newCustomer(stack, provider);
  }, 20_000);

  it('answers 201 queued, then the message is sent and delivered', async () => {
    const to = phone();
    const res = await sendSms(stack, c, to, 'Your table for two is booked for 7pm.');
    expect(res.status, res.text).toBe(201);
    const m = res.body.message;
    expect(m).toMatchObject({ from: c.number, to, body: 'Your table for two is booked for 7pm.', status: 'queued', direction: 'outbound' });
    expect(m.message_id).toMatch(MSG_ID);
    expect(m.created_at).toMatch(ISO_MS);

    const seen = new Set<string>();
    const delivered = await eventually(async () => {
      const r = await getSms(stack, c.key, m.message_id);
      expect(r.status, r.text).toBe(200);
      seen.add(r.body.message.status);
      return r.body.message.status === 'delivered' ? r.body.message : undefined;
    }, 20_000, 'delivered', 20);
    expect(delivered).toMatchObject({ message_id: m.message_id, from: c.number, to, direction: 'outbound', error_code: null, created_at: m.created_at });
    // Never backwards: only forward states were ever read.
    for (const s of seen) expect(['queued', 'sending', 'sent', 'delivered']).toContain(s);
    const atCarrier = sim.sent(to);
    expect(atCarrier).toHaveLength(1);
    expect(atCarrier[0]).toMatchObject({ from: c.number, to, body: 'Your table for two is booked for 7pm.' });
  }, TEST_MS);

  it.each(['undelivered', 'failed'] as const)('follows the carrier to %s with its error code', async (fate) => {
    const to = phone();
    sim.outcome(to, fate);
    const res = await sendSms(stack, c, to);
    expect(res.status, res.text).toBe(201);
    const m = await smsReaches(stack, c.key, res.body.message.message_id, fate);
    expect(m.error_code).toBe(sim.errorCodeOf(fate));
    expect(sim.sentTo(to)).toBe(1);
  }, TEST_MS);

  it('sends 1600 characters; refuses every bad request with its code, storing and sending nothing', async () => {
    const to = phone();
    const before = (await listSms(stack, c.key)).body.count;
    const base = { from_number: c.number, to, body: 'Hello' };
    const post = (body: Record<string, unknown>) => stack.server.request('POST', '/v1/sms', { key: c.key, body });
    const without = (k: string) => Object.fromEntries(Object.entries(base).filter(([f]) => f !== k));

    for (const field of ['to', 'body', 'from_number']) {
      const e = expectApiError(await post(without(field)), 400, 'invalid_request', 'missing_field');
      expect(e.details.field).toBe(field);
    }
    let e = expectApiError(await post({ from_number: c.number, to_number: to, body: 'Hello' }), 400, 'invalid_request', 'missing_field');
    expect(e.details.field).toBe('to');
    e = expectApiError(await post({ ...base, body: '' }), 400, 'invalid_request', 'missing_field');
    expect(e.details.field).toBe('body');

    for (const bad of ['6285550100', '+1 628 555 0100', 'not-a-number', '+0628555010']) {
      e = expectApiError(await post({ ...base, to: bad }), 400, 'invalid_request', 'invalid_phone_format');
      expect(e.details.field).toBe('to');
      e = expectApiError(await post({ ...base, from_number: bad }), 400, 'invalid_request', 'invalid_phone_format');
      expect(e.details.field).toBe('from_number');
    }
    e = expectApiError(await post({ ...base, body: 'x'.repeat(1601) }), 400, 'invalid_request', 'message_too_long');
    expect(e.details.field).toBe('body');

    // Another account's number, and a number nobody imported.
    e = expectApiError(await post({ ...base, from_number: other.number }), 400, 'invalid_request', 'from_number_not_owned');
    expect(e.details.field).toBe('from_number');
    expectApiError(await post({ ...base, from_number: '+16285559876' }), 400, 'invalid_request', 'from_number_not_owned');
    // A foreign or unknown agent referenced from the body: 400, not 404.
    e = expectApiError(await post({ ...base, agent_id: other.agentId }), 400, 'invalid_request', 'agent_not_found');
    expect(e.details.field).toBe('agent_id');
    expectApiError(await post({ ...base, agent_id: 'agent_doesnotexist' }), 400, 'invalid_request', 'agent_not_found');

    // Nothing of it was stored or reached the carrier.
    expect((await listSms(stack, c.key)).body.count).toBe(before);
    expect(sim.requests(to)).toHaveLength(0);
    expect((await listSms(stack, other.key)).body.count).toBe(0);

    // The limit itself is fine, and an agent of the account may be named.
    const long = 'y'.repeat(1600);
    const ok = await sendSms(stack, c, to, long, { agent_id: c.agentId });
    expect(ok.status, ok.text).toBe(201);
    await smsReaches(stack, c.key, ok.body.message.message_id, 'delivered');
    expect(sim.sent(to).map((m) => m.body)).toEqual([long]);
    expect((await listSms(stack, c.key)).body.count).toBe(before + 1);
  }, TEST_MS);

  it('refuses a recipient who texted STOP with recipient_unsubscribed, storing nothing', async () => {
    const to = phone();
    const stop = await sim.receive({ from: to, to: c.number, body: 'STOP' });
    expect(stop.status).toBe(200);
    await simSent(sim, to); // the confirmation
    const byPhone = async () => (await listSms(stack, c.key, `?phone_number=${enc(to)}`)).body;
    const before = await byPhone();
    expect(before.count).toBe(2); // the STOP and its confirmation
    const requestsBefore = sim.requests(to).length;

    const e = expectApiError(await sendSms(stack, c, to), 400, 'invalid_request', 'recipient_unsubscribed');
    expect(e.details.field).toBe('to');
    expect((await byPhone()).count).toBe(2);
    expect(sim.requests(to)).toHaveLength(requestsBefore);
    expect(sim.sentTo(to)).toBe(1);
  }, TEST_MS);

  it('answers sms_not_supported_in_region for an unregistered US sender and keeps nothing', async () => {
    const to = phone();
    sim.unregistered(c.number);
    try {
      const res = await sendSms(stack, c, to, 'Unregistered hello');
      const e = expectApiError(res, 400, 'invalid_request', 'sms_not_supported_in_region');
      expect(e.message).toContain(c.number);
      const listed = await listSms(stack, c.key, `?phone_number=${enc(to)}`);
      expect(listed.body.messages).toEqual([]);
      expect(sim.sentTo(to)).toBe(0);
      expect(sim.requests(to)).toHaveLength(1);
    } finally {
      sim.unregistered(c.number, false);
    }
  }, TEST_MS);

  it('Idempotency-Key: the same POST twice sends one message', async () => {
    const to = phone();
    const headers = { 'Idempotency-Key': `sms-${provider}-${to}` };
    const first = await sendSms(stack, c, to, 'Once only', {}, headers);
    expect(first.status, first.text).toBe(201);
    const second = await sendSms(stack, c, to, 'Once only', {}, headers);
    expect(second.status, second.text).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    await smsReaches(stack, c.key, first.body.message.message_id, 'delivered');
    expect(sim.sentTo(to)).toBe(1);
    expect((await listSms(stack, c.key, `?phone_number=${enc(to)}`)).body.count).toBe(1);
    // The same key with another body is refused.
    expectApiError(await sendSms(stack, c, to, 'Another text', {}, headers), 400, 'invalid_request', 'idempotency_key_reused');
  }, TEST_MS);

  it('a lost answer is reconciled with the carrier: 201, sent with the carrier’s id, never sent again', async () => {
    const to = phone();
    sim.failSendTo(to, { drop: true });
    const res = await sendSms(stack, c, to, 'Answer lost');
    expect(res.status, res.text).toBe(201);
    expect(res.body.message.status).toBe('queued');
    const id = res.body.message.message_id;
    const m = await smsReaches(stack, c.key, id, ['sent', 'delivered']);
    expect(m.error_code).toBeNull();
    const atCarrier = sim.sent(to);
    const why = JSON.stringify({ requests: sim.requests(to).map((r: any) => r.fault ?? 'ok'), row: stack.server.storage.sms.byId(id), atCarrier: atCarrier.map((x) => [x.sid, x.at]) });
    expect(atCarrier, why).toHaveLength(1);
    expect(stack.server.storage.sms.byId(id)?.carrier_message_id).toBe(atCarrier[0]!.sid);
    // One send request only: the second look was a read of the carrier's list.
    expect(sim.requests(to)).toHaveLength(1);
  }, TEST_MS);

  // The carrier's delivery reports came while the answer was lost (the message's carrier
  // id unknown yet); what the carrier knows about the message must still reach it.
  it('a lost answer whose text the carrier then could not deliver ends undelivered, not sent', async () => {
    const to = phone();
    sim.outcome(to, 'undelivered');
    sim.failSendTo(to, { drop: true });
    const res = await sendSms(stack, c, to, 'Answer lost, then undeliverable');
    expect(res.status, res.text).toBe(201);
    const id = res.body.message.message_id;
    await smsReaches(stack, c.key, id, ['sent', 'undelivered']);
    const m = await smsReaches(stack, c.key, id, 'undelivered', 5000);
    expect(m.error_code).toBe(sim.errorCodeOf('undelivered'));
    expect(sim.sentTo(to)).toBe(1);
  }, TEST_MS);

  it('a request reset before the carrier processed it is sent once more, once', async () => {
    const to = phone();
    sim.failSendTo(to, { reset: true });
    const res = await sendSms(stack, c, to, 'Reset first');
    expect(res.status, res.text).toBe(201);
    const id = res.body.message.message_id;
    await smsReaches(stack, c.key, id, 'delivered');
    expect(sim.sentTo(to)).toBe(1);
    expect(sim.requests(to)).toHaveLength(2);
    expect(stack.server.storage.sms.byId(id)?.carrier_message_id).toBe(sim.sent(to)[0]!.sid);
  }, TEST_MS);

  it('another account’s message id and an unknown one are 404 message_not_found', async () => {
    const m = await sendDelivered(stack, c, phone());
    expectApiError(await getSms(stack, other.key, m.message_id), 404, 'not_found', 'message_not_found');
    expectApiError(await getSms(stack, c.key, 'msg_doesnotexist'), 404, 'not_found', 'message_not_found');
    expect((await getSms(stack, c.key, m.message_id)).status).toBe(200);
  }, TEST_MS);
});

describe('GET /v1/sms', () => {
  it('lists newest first with filters and pagination', async () => {
    const c = await newCustomer(stack, 'twilio');
    const sim = smsSim(stack, 'twilio');
    const [a, b, d, sender] = [phone(), phone(), phone(), phone()];
    const sent = [];
    for (const to of [a, b, d]) sent.push(await sendDelivered(stack, c, to, `to ${to}`));
    const inbound = await sim.receive({ from: sender, to: c.number, body: 'Hi there' });
    expect(inbound.status).toBe(200);
    const ids = (r: any) => r.body.messages.map((m: any) => m.message_id);

    const all = await listSms(stack, c.key);
    expect(all.status, all.text).toBe(200);
    expect(all.body).toMatchObject({ count: 4, limit: 25, offset: 0 });
    const [newest, ...rest] = all.body.messages;
    expect(newest).toMatchObject({ direction: 'inbound', status: 'received', from: sender, to: c.number, body: 'Hi there' });
    expect(rest.map((m: any) => m.message_id)).toEqual(sent.map((m) => m.message_id).reverse());
    const times = all.body.messages.map((m: any) => Date.parse(m.created_at));
    expect([...times].sort((x, y) => y - x)).toEqual(times);

    expect(ids(await listSms(stack, c.key, '?direction=inbound'))).toEqual([newest.message_id]);
    expect(ids(await listSms(stack, c.key, '?direction=outbound'))).toEqual(sent.map((m) => m.message_id).reverse());
    expect(ids(await listSms(stack, c.key, `?phone_number=${enc(b)}`))).toEqual([sent[1].message_id]);
    expect((await listSms(stack, c.key, `?phone_number=${enc(c.number)}`)).body.count).toBe(4);
    // since is inclusive, until exclusive (created_at).
    expect(ids(await listSms(stack, c.key, `?direction=outbound&since=${enc(sent[1].created_at)}`))).toEqual([sent[2].message_id, sent[1].message_id]);
    expect(ids(await listSms(stack, c.key, `?until=${enc(sent[1].created_at)}`))).toEqual([sent[0].message_id]);
    const page = await listSms(stack, c.key, '?limit=2&offset=1');
    expect(page.body).toMatchObject({ count: 4, limit: 2, offset: 1 });
    expect(ids(page)).toEqual([sent[2].message_id, sent[1].message_id]);
    expect((await listSms(stack, c.key, '?limit=500')).body.limit).toBe(100);
    expectApiError(await listSms(stack, c.key, '?limit=0'), 400, 'invalid_request', 'invalid_request');
    expectApiError(await listSms(stack, c.key, '?direction=sideways'), 400, 'invalid_request', 'invalid_request');
  }, TEST_MS);
});

describe('a carrier that cannot be reached', () => {
  let dead: CallStack;
  const closed: Provider[] = [];
  beforeAll(async () => {
    dead = await startCallStack(SMS_ENV);
  }, 30_000);
  afterAll(async () => {
    if (closed.length < 2) await dead?.sims.close();
    await dead?.server.close();
  });

  it('answers 502 carrier_unreachable, keeps nothing and never sends it', async () => {
    const customers = { twilio: await newCustomer(dead, 'twilio'), telnyx: await newCustomer(dead, 'telnyx') };
    const extra = await importNumber(dead, customers.twilio.key, customers.twilio.agentId, 'twilio');
    // Both carriers' ports closed: every connection is refused, so no request can have left.
    await dead.sims.close();
    closed.push('twilio', 'telnyx');
    for (const provider of ['twilio', 'telnyx'] as const) {
      const c = customers[provider];
      const to = phone();
      const res = await sendSms(dead, c, to, 'Nobody home');
      expectApiError(res, 502, 'provider_error', 'carrier_unreachable');
      expect((await listSms(dead, c.key)).body.count).toBe(0);
    }
    // Another number of the account meets the same refusal; nothing is kept, so nothing is tried again later.
    const res = await sendSms(dead, { key: customers.twilio.key, number: extra.number }, phone());
    expectApiError(res, 502, 'provider_error', 'carrier_unreachable');
    await new Promise((r) => setTimeout(r, 1500));
    expect((await listSms(dead, customers.twilio.key)).body.count).toBe(0);
    expect(dead.server.storage.db.prepare("SELECT COUNT(*) AS n FROM sms_messages WHERE status IN ('queued', 'sending')").get()).toEqual({ n: 0 });
  }, TEST_MS);
});

// A send that waited its turn longer than the route waits (SEND_WAIT_MS, 5 s) is answered
// 201; from then on nobody is told 502, so a carrier that cannot be reached at its turn
// must be tried again like any text (sms-sender.ts: "a request that never left is tried
// again a few times"), not failed at once as an unanswered API send is.
describe('a send answered 201 before its turn, whose carrier is then unreachable', () => {
  const INTERVAL_MS = 8000;
  let slow: CallStack;
  let simsOpen = true;
  beforeAll(async () => {
    slow = await startCallStack({ ...SMS_ENV, SMS_SEND_INTERVAL_MS: String(INTERVAL_MS) });
  }, 30_000);
  afterAll(async () => {
    if (simsOpen) await slow?.sims.close();
    await slow?.server.close();
  });

  it('is tried again, not failed at once', async () => {
    const c = await newCustomer(slow, 'twilio');
    const first = await sendSms(slow, c, phone(), 'takes the turn');
    expect(first.status, first.text).toBe(201);
    await smsReaches(slow, c.key, first.body.message.message_id, ['sent', 'delivered']);
    const asked = Date.now();
    const second = await sendSms(slow, c, phone(), 'waits its turn');
    // Answered before its turn came (the number's next turn is INTERVAL_MS after the first).
    expect(second.status, second.text).toBe(201);
    expect(Date.now() - asked).toBeLessThan(INTERVAL_MS);
    const id = second.body.message.message_id;
    expect(slow.server.storage.sms.byId(id)?.attempts).toBe(0);
    await slow.sims.close();
    simsOpen = false;
    // Its turn: the connection is refused.
    const row = await eventually(() => {
      const r = slow.server.storage.sms.byId(id);
      return r && r.status !== 'sending' && (r.attempts >= 1 || r.status === 'failed') ? r : undefined;
    }, 20_000, 'the attempt at its turn', 50);
    expect({ status: row.status, error_code: row.error_code }).toEqual({ status: 'queued', error_code: null });
  }, 45_000);
});
