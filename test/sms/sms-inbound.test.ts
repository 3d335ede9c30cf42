// Texts to the service's numbers end to end (issue 21, acceptance 1): each carrier's
// simulator sends its signed incoming-SMS webhook to the real server. Covered, on
// carrier A and carrier B alike:
//   1. A text is stored once: direction inbound, status received, readable by id and
//      listed; the same carrier webhook delivered again stores nothing more.
//   2. Opt-out (contract.md 8): STOP, STOPALL, UNSUBSCRIBE, CANCEL, END and QUIT, in any
//      case and with surrounding spaces or punctuation, each unsubscribe the sender from
//      that number and are confirmed by text through the carrier (OPT_OUT_CONFIRMATION);
//      a repeated STOP webhook confirms once; a sentence merely containing "stop" does not. START and UNSTOP resubscribe, are
//      confirmed (OPT_IN_CONFIRMATION), and sends work again. The opt-out is per sending
//      number: another number of the account can still text them.
//   3. A forged webhook (the text changed after signing, or no signature at all) is 403
//      invalid_signature and nothing is stored.
//   4. GET /v1/usage counts sms_sent (accepted by the carrier, confirmations included)
//      and sms_received.
//   5. DELETE /v1/calls answers sms_deleted = the account's messages, which are gone;
//      another account's stay; the opt-outs survive (a send is still refused); usage
//      still counts them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importNumber, newCustomer, startCallStack, type CallStack, type Customer, type Provider } from '../helpers/calls.ts';
import { OPT_IN_CONFIRMATION, OPT_OUT_CONFIRMATION } from '../../actors/sms/opt-out.ts';
import {
  enc,
  expectApiError,
  getSms,
  listSms,
  phoneSequence,
  postWebhook,
  sendDelivered,
  sendSms,
  simSent,
  sleep,
  smsReaches,
  smsSim,
  SMS_ENV,
  type SmsSim,
} from '../helpers/sms.ts';

const TEST_MS = 45_000;
const phone = phoneSequence(2);

let stack: CallStack;
beforeAll(async () => {
  stack = await startCallStack(SMS_ENV);
}, 30_000);
afterAll(async () => stack?.close());

const inboundOf = async (key: string, from: string) =>
  (await listSms(stack, key, `?direction=inbound&phone_number=${enc(from)}`)).body.messages as any[];

describe.each(['twilio', 'telnyx'] as const)('texts received on %s', (provider: Provider) => {
  let c: Customer;
  let sim: SmsSim;
  beforeAll(async () => {
    sim = smsSim(stack, provider);
    c = await newCustomer(stack, provider);
  }, 20_000);

  it('stores a text once as inbound received, even when the carrier repeats its webhook', async () => {
    const from = phone();
    const got = await sim.receive({ from, to: c.number, body: 'Do you open on Sundays?' });
    expect(got.status).toBe(200);
    const [m, ...more] = await inboundOf(c.key, from);
    expect(more).toHaveLength(0);
    expect(m).toMatchObject({ direction: 'inbound', status: 'received', from, to: c.number, body: 'Do you open on Sundays?', agent_id: c.agentId, campaign_id: null });
    expect(m.message_id).toMatch(/^msg_/);
    expect((await getSms(stack, c.key, m.message_id)).body.message).toEqual(m);

    const again = await postWebhook(stack, sim.inboundWebhook(got.sid));
    expect(again.status, again.text).toBe(200);
    expect(await inboundOf(c.key, from)).toHaveLength(1);
    // Nobody answered it (no auto-reply on the number).
    expect(sim.sentTo(from)).toBe(0);
  }, TEST_MS);

  it('each STOP keyword unsubscribes and is confirmed; a sentence with "stop" is not a keyword', async () => {
    const variants = ['STOP', 'stopall', 'Unsubscribe', 'cancel.', 'End!', '  quit  ', 'Stop.', 'STOP!!'];
    const senders = variants.map(() => phone());
    const stopSids: string[] = [];
    for (const [i, body] of variants.entries()) {
      const got = await sim.receive({ from: senders[i]!, to: c.number, body });
      expect(got.status, body).toBe(200);
      stopSids.push(got.sid);
    }
    for (const [i, body] of variants.entries()) {
      const to = senders[i]!;
      await simSent(sim, to, OPT_OUT_CONFIRMATION);
      expect(sim.sent(to).map((m) => m.body), body).toEqual([OPT_OUT_CONFIRMATION]);
      expectApiError(await sendSms(stack, c, to), 400, 'invalid_request', 'recipient_unsubscribed');
      const confirmation = (await listSms(stack, c.key, `?direction=outbound&phone_number=${enc(to)}`)).body.messages;
      expect(confirmation).toHaveLength(1);
      expect(confirmation[0]).toMatchObject({ body: OPT_OUT_CONFIRMATION, from: c.number, origin: 'opt_out' });
    }

    // The carrier repeating a STOP webhook confirms once.
    const repeated = await postWebhook(stack, sim.inboundWebhook(stopSids[0]!));
    expect(repeated.status, repeated.text).toBe(200);
    await sleep(300);
    expect(sim.sent(senders[0]!).map((m) => m.body)).toEqual([OPT_OUT_CONFIRMATION]);

    const chatty = phone();
    expect((await sim.receive({ from: chatty, to: c.number, body: "please don't stop texting me" })).status).toBe(200);
    const m = await sendDelivered(stack, c, chatty, 'We won’t.');
    expect(m.to).toBe(chatty);
    expect(sim.sent(chatty).map((x) => x.body)).toEqual(['We won’t.']);
  }, TEST_MS);

  it.each(['START', 'unstop'])('%s resubscribes, is confirmed, and sends work again', async (keyword) => {
    const to = phone();
    await sim.receive({ from: to, to: c.number, body: 'STOP' });
    await simSent(sim, to, OPT_OUT_CONFIRMATION);
    expectApiError(await sendSms(stack, c, to), 400, 'invalid_request', 'recipient_unsubscribed');

    expect((await sim.receive({ from: to, to: c.number, body: keyword })).status).toBe(200);
    await simSent(sim, to, OPT_IN_CONFIRMATION);
    await sendDelivered(stack, c, to, 'Welcome back');
    expect(sim.sent(to).map((m) => m.body)).toEqual([OPT_OUT_CONFIRMATION, OPT_IN_CONFIRMATION, 'Welcome back']);
  }, TEST_MS);

  it('an opt-out is per sending number: another number of the account still texts them', async () => {
    const second = await importNumber(stack, c.key, c.agentId, provider);
    const to = phone();
    await sim.receive({ from: to, to: c.number, body: 'STOP' });
    await simSent(sim, to, OPT_OUT_CONFIRMATION);
    expectApiError(await sendSms(stack, c, to), 400, 'invalid_request', 'recipient_unsubscribed');
    const m = await sendDelivered(stack, { key: c.key, number: second.number }, to, 'From our other line');
    expect(m.from).toBe(second.number);
    expect(sim.sent(to).filter((x) => x.body === 'From our other line').map((x) => x.from)).toEqual([second.number]);
  }, TEST_MS);

  it('a forged or unsigned webhook is 403 invalid_signature and stores nothing', async () => {
    const from = phone();
    const got = await sim.receive({ from, to: c.number, body: 'hello' });
    expect(got.status).toBe(200);
    const before = (await listSms(stack, c.key)).body.count;

    // The text changed after signing: a different message under the old signature.
    const forged = sim.forged(got.sid, 'STOP');
    let res = await postWebhook(stack, forged);
    expectApiError(res, 403, 'permission_error', 'invalid_signature');
    // No signature at all.
    const unsigned = { ...forged, headers: Object.fromEntries(Object.entries(forged.headers).filter(([k]) => !/signature/i.test(k))) };
    res = await postWebhook(stack, unsigned);
    expectApiError(res, 403, 'permission_error', 'invalid_signature');

    expect((await listSms(stack, c.key)).body.count).toBe(before);
    // The forged STOP did not unsubscribe them.
    await sendDelivered(stack, c, from, 'Still subscribed');
    expect(sim.sent(from).map((m) => m.body)).toEqual(['Still subscribed']);
  }, TEST_MS);
});

describe('usage and erasure', () => {
  it('GET /v1/usage counts sms_sent and sms_received', async () => {
    for (const provider of ['twilio', 'telnyx'] as const) {
      const c = await newCustomer(stack, provider);
      const sim = smsSim(stack, provider);
      const since = new Date(Date.now() - 60_000).toISOString();
      const usage = async () => (await stack.server.request('GET', `/v1/usage?since=${enc(since)}`, { key: c.key })).body;
      expect(await usage()).toMatchObject({ sms_sent: 0, sms_received: 0 });

      const [a, b, d] = [phone(), phone(), phone()];
      await sendDelivered(stack, c, a);
      await sendDelivered(stack, c, b);
      await sim.receive({ from: d, to: c.number, body: 'Hi' });
      await sim.receive({ from: d, to: c.number, body: 'STOP' });
      const confirmation = (await listSms(stack, c.key, `?direction=outbound&phone_number=${enc(d)}`)).body.messages[0];
      await smsReaches(stack, c.key, confirmation.message_id, 'delivered');
      // A refused send (the unsubscribed recipient) counts nothing.
      expectApiError(await sendSms(stack, c, d), 400, 'invalid_request', 'recipient_unsubscribed');
      const u = await usage();
      expect(u, provider).toMatchObject({ sms_sent: 3, sms_received: 2, calls: 0 });
    }
  }, TEST_MS);

  it('DELETE /v1/calls erases the account’s messages and only them; opt-outs survive', async () => {
    const c = await newCustomer(stack, 'twilio');
    const other = await newCustomer(stack, 'telnyx');
    const sim = smsSim(stack, 'twilio');
    const [a, stopper] = [phone(), phone()];
    await sendDelivered(stack, c, a);
    await sim.receive({ from: stopper, to: c.number, body: 'STOP' });
    await simSent(sim, stopper, OPT_OUT_CONFIRMATION);
    const confirmation = (await listSms(stack, c.key, `?direction=outbound&phone_number=${enc(stopper)}`)).body.messages[0];
    await smsReaches(stack, c.key, confirmation.message_id, 'delivered');
    const kept = await sendDelivered(stack, other, phone());

    const mine = (await listSms(stack, c.key)).body.count;
    expect(mine).toBe(3);
    const res = await stack.server.request('DELETE', '/v1/calls', { key: c.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ deleted: true, calls_deleted: 0, recordings_deleted: 0, sms_deleted: mine });

    expect((await listSms(stack, c.key)).body).toMatchObject({ count: 0, messages: [] });
    expectApiError(await getSms(stack, c.key, confirmation.message_id), 404, 'not_found', 'message_not_found');
    expect((await getSms(stack, other.key, kept.message_id)).status).toBe(200);
    expect((await listSms(stack, other.key)).body.count).toBe(1);
    // The STOP is the recipient's choice, not history: still unsubscribed.
    expectApiError(await sendSms(stack, c, stopper), 400, 'invalid_request', 'recipient_unsubscribed');
    // Erasing again finds nothing.
    expect((await stack.server.request('DELETE', '/v1/calls', { key: c.key })).body.sms_deleted).toBe(0);
  }, TEST_MS);

  // api.md: DELETE /v1/calls leaves "billing records" untouched, and the route's own
  // description says usage is untouched; GET /v1/usage counts from the erased rows.
  it('GET /v1/usage still counts the texts after DELETE /v1/calls erased them', async () => {
    const c = await newCustomer(stack, 'telnyx');
    const sim = smsSim(stack, 'telnyx');
    const since = new Date(Date.now() - 60_000).toISOString();
    const usage = async () => (await stack.server.request('GET', `/v1/usage?since=${enc(since)}`, { key: c.key })).body;
    await sendDelivered(stack, c, phone());
    expect((await sim.receive({ from: phone(), to: c.number, body: 'Hi' })).status).toBe(200);
    expect(await usage()).toMatchObject({ sms_sent: 1, sms_received: 1 });
    expect((await stack.server.request('DELETE', '/v1/calls', { key: c.key })).body.sms_deleted).toBe(2);
    expect(await usage()).toMatchObject({ sms_sent: 1, sms_received: 1 });
  }, TEST_MS);
});
