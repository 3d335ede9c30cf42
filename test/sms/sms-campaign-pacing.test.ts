// SMS campaigns while they run (issue 21, acceptance 1), on a server pacing one text per
// 300 ms per number so a campaign is caught midway. On carrier A and carrier B alike:
//   1. DELETE of a running campaign answers {campaign_id, deleted:true, cancelled_count}
//      with cancelled_count = the recipients never texted; after the answer no further
//      text reaches the carrier (at most the one already out), the carrier's record
//      holds exactly total - cancelled_count texts, each recipient at most once, and the
//      record ends `cancelled` with counts that add up at every read.
//   2. PATCH after launch: context_prompt is accepted (200, the campaign keeps running);
//      name, body, recipients, scheduled_at, reply_window_hours (alone or beside
//      context_prompt) are campaign_not_editable, and nothing changes; context_prompt still changes once it is cancelled.
//   3. A recipient who texts STOP while the campaign runs is not texted when their turn
//      comes: failed with recipient_unsubscribed.
//   4. Fairness: a single send on a number whose campaign is running goes out within a
//      couple of turns (at most 2 campaign texts after it was asked for), not behind
//      the whole campaign.
//   5. DELETE /v1/calls while a campaign runs: its text still on its way is not erased, and
//      the campaign still ends with nothing pending, every recipient texted once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newCustomer, startCallStack, type CallStack, type Customer, type Provider } from '../helpers/calls.ts';
import { OPT_OUT_CONFIRMATION } from '../../actors/sms/opt-out.ts';
import {
  campaignDone,
  campaignMessages,
  campaignWhere,
  cancelCampaign,
  createCampaign,
  expectApiError,
  getCampaign,
  patchCampaign,
  phoneSequence,
  POLL_MS,
  sendSms,
  simSent,
  sleep,
  smsReaches,
  smsSim,
  SMS_ENV,
  type SmsSim,
} from '../helpers/sms.ts';

const INTERVAL_MS = 300;
const TEST_MS = 50_000;
const phone = phoneSequence(4);
const phones = (n: number) => Array.from({ length: n }, () => phone());

let stack: CallStack;
beforeAll(async () => {
  stack = await startCallStack({ ...SMS_ENV, SMS_SEND_INTERVAL_MS: String(INTERVAL_MS) });
}, 30_000);
afterAll(async () => stack?.close());

/** How many of `recipients` the carrier has taken a text for. */
const texted = (sim: SmsSim, recipients: readonly string[]) => recipients.reduce((n, p) => n + sim.sentTo(p), 0);

describe.each(['twilio', 'telnyx'] as const)('a running SMS campaign on %s', (provider: Provider) => {
  let c: Customer;
  let sim: SmsSim;
  beforeAll(async () => {
    sim = smsSim(stack, provider);
    c = await newCustomer(stack, provider);
  }, 20_000);

  it('PATCH after launch takes context_prompt only; DELETE stops it midway', async () => {
    const recipients = phones(20);
    const res = await createCampaign(stack, c, { recipients: recipients.map((p) => ({ phone: p })), context_prompt: 'Offer ends Friday.' });
    expect(res.status, res.text).toBe(201);
    const id = res.body.campaign_id;
    await eventually(() => (texted(sim, recipients) >= 2 ? true : undefined), 20_000, 'two texts out', POLL_MS);

    const ctx = await patchCampaign(stack, c.key, id, { context_prompt: 'Offer extended to Sunday.' });
    expect(ctx.status, ctx.text).toBe(200);
    expect(ctx.body).toMatchObject({ campaign_id: id, status: 'running', context_prompt: 'Offer extended to Sunday.', name: 'Spring offer', total_count: 20 });
    for (const edit of [
      { name: 'Renamed' },
      { body: 'Other text' },
      { message_template: 'Other text' },
      { recipients: [{ phone: phone() }] },
      { scheduled_at: '2099-01-01T00:00:00Z' },
      { reply_window_hours: 5 },
      { context_prompt: 'Sneaky', name: 'Renamed' },
    ]) {
      expectApiError(await patchCampaign(stack, c.key, id, edit), 400, 'invalid_request', 'campaign_not_editable');
    }
    const unchanged = (await getCampaign(stack, c.key, id)).body;
    expect(unchanged).toMatchObject({ name: 'Spring offer', context_prompt: 'Offer extended to Sunday.', total_count: 20, reply_window_hours: 72, message_template: res.body.message_template });

    const cancelled = await cancelCampaign(stack, c.key, id);
    const atAnswer = texted(sim, recipients);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ campaign_id: id, deleted: true });
    const n = cancelled.body.cancelled_count;
    // Midway: some texted, some never; at most the one at the carrier is neither.
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThanOrEqual(20 - atAnswer);
    expect(n).toBeGreaterThanOrEqual(20 - atAnswer - 1);

    // Several turns later: nothing more went out than the text already at the carrier.
    await sleep(5 * INTERVAL_MS);
    const final = await campaignWhere(stack, c.key, id, (x) => x.status === 'cancelled' && x.delivered_count + x.failed_count === 20 - n, 'settled');
    expect(final).toMatchObject({ status: 'cancelled', cancelled_count: n, total_count: 20, pending_count: n });
    const after = texted(sim, recipients);
    expect(after).toBeLessThanOrEqual(atAnswer + 1);
    expect(after).toBe(20 - n);
    for (const p of recipients) expect(sim.sentTo(p)).toBeLessThanOrEqual(1);
    expectApiError(await cancelCampaign(stack, c.key, id), 400, 'invalid_request', 'campaign_already_done');
    // Once launched only context_prompt changes, even cancelled: it still shapes the answers to replies.
    expectApiError(await patchCampaign(stack, c.key, id, { name: 'too late' }), 400, 'invalid_request', 'campaign_not_editable');
    const edited = await patchCampaign(stack, c.key, id, { context_prompt: 'Replies: apologise for the cancelled offer.' });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body).toMatchObject({ status: 'cancelled', context_prompt: 'Replies: apologise for the cancelled offer.' });
  }, TEST_MS);

  it('a recipient who texts STOP mid-campaign is not texted when their turn comes', async () => {
    const recipients = phones(6);
    const res = await createCampaign(stack, c, { recipients: recipients.map((p) => ({ phone: p })) });
    const id = res.body.campaign_id;
    await eventually(() => (texted(sim, recipients) >= 1 ? true : undefined), 20_000, 'first text out', POLL_MS);
    const last = recipients[5]!;
    expect((await sim.receive({ from: last, to: c.number, body: 'stop' })).status).toBe(200);
    const done = await campaignDone(stack, c.key, id);
    expect(done).toMatchObject({ total_count: 6, delivered_count: 5, failed_count: 1, pending_count: 0 });
    const row = (await campaignMessages(stack, c.key, id)).find((m) => m.to === last);
    expect(row).toMatchObject({ status: 'failed', error_code: 'recipient_unsubscribed' });
    await simSent(sim, last, OPT_OUT_CONFIRMATION);
    expect(sim.sent(last).map((m) => m.body)).toEqual([OPT_OUT_CONFIRMATION]);
  }, TEST_MS);

  it('a single send goes within a couple of turns, not behind the campaign', async () => {
    const recipients = phones(15);
    const res = await createCampaign(stack, c, { recipients: recipients.map((p) => ({ phone: p })) });
    const id = res.body.campaign_id;
    await eventually(() => (texted(sim, recipients) >= 2 ? true : undefined), 20_000, 'two texts out', POLL_MS);
    const before = texted(sim, recipients);
    const to = phone();
    const asked = Date.now();
    const single = await sendSms(stack, c, to, 'Your order shipped');
    expect(single.status, single.text).toBe(201);
    await smsReaches(stack, c.key, single.body.message.message_id, ['sent', 'delivered']);
    const tookMs = sim.sent(to)[0]!.at - asked;

    // The carrier's order of texts from this number: at most 2 campaign texts went between the request and it.
    const fromNumber = sim.sent().filter((m) => m.from === c.number);
    const at = fromNumber.findIndex((m) => m.to === to);
    const campaignBefore = fromNumber.slice(0, at).filter((m) => recipients.includes(m.to)).length;
    expect(campaignBefore - before, `single send waited ${tookMs} ms`).toBeLessThanOrEqual(2);
    const stillToGo = await getCampaign(stack, c.key, id);
    expect(stillToGo.body.status).toBe('running');
    expect((await cancelCampaign(stack, c.key, id)).status).toBe(200);
  }, TEST_MS);
});

describe('erasing the account’s messages while a campaign runs', () => {
  // DELETE /v1/calls erases the campaign's texts already sent, not the one still waiting for
  // its turn (it is not history yet); the campaign must not end `done` with a recipient
  // pending for ever (contract.md 11: done when pending reaches 0), nor text anyone twice.
  it('the campaign still ends with nothing pending, each recipient texted exactly once', async () => {
    const c = await newCustomer(stack, 'twilio');
    const sim = smsSim(stack, 'twilio');
    const recipients = phones(6);
    const res = await createCampaign(stack, c, { recipients: recipients.map((p) => ({ phone: p })) });
    const id = res.body.campaign_id;
    // A campaign text committed and waiting for the number's next turn.
    await eventually(
      async () => {
        if (texted(sim, recipients) < 1) return undefined;
        const listed = (await stack.server.request('GET', '/v1/sms?direction=outbound', { key: c.key })).body.messages as any[];
        return listed.some((m) => m.campaign_id === id && m.status === 'queued') ? true : undefined;
      },
      20_000,
      'a queued campaign text',
      20,
    );
    const erased = await stack.server.request('DELETE', '/v1/calls', { key: c.key });
    expect(erased.status, erased.text).toBe(200);
    expect(erased.body.sms_deleted).toBeGreaterThanOrEqual(1);

    const final = await campaignWhere(stack, c.key, id, (x) => x.status !== 'running', 'finished');
    expect(final.status).toBe('done');
    expect(final.pending_count, JSON.stringify(final)).toBe(0);
    for (const p of recipients) expect(sim.sentTo(p)).toBe(1);
  }, TEST_MS);
});
