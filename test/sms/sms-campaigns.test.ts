// SMS campaigns end to end (issue 21, acceptance 1): the real server over real HTTP with
// both carriers' messaging simulators, one text per SMS_SEND_INTERVAL_MS (50 ms here).
// Every read of a campaign checks delivered + failed + pending = total (contract.md 11).
// Covered:
//   1. On carrier A and carrier B: schedule_type now answers 201 with the whole record
//      (campaign_id smscamp_…, agent_id, name, status running, the counts, source api,
//      created_at, from_number, message_template, scheduled_at, context_prompt,
//      reply_window_hours 72 by default) and becomes done when nothing is pending; each
//      recipient is texted exactly once (the carrier's record), `{{variable}}`
//      placeholders filled and missing ones empty, a repeated number texted once. A
//      recipient who texted STOP counts as failed (recipient_unsubscribed) and gets no
//      text; a delivery failure reported after the carrier accepted a text moves its row
//      from delivered to failed. A lost answer (reconciled) and a reset (sent again) in
//      the middle of a campaign still text each recipient exactly once. schedule: `scheduled`, nothing sent, then `running` at
//      scheduled_at. draft: nothing sent until launch; launch answers 200 {campaign_id,
//      status running, total_count, pending_count, delivered_count, failed_count}.
//   2. The state table's refusals: launch running → campaign_already_running; launch,
//      DELETE, PATCH of done or cancelled → campaign_already_done / campaign_not_editable;
//      launch with no recipients (a draft created with none, or PATCHed to none) →
//      campaign_no_recipients; a `now` campaign of none is done at once. DELETE of a
//      scheduled campaign → cancelled, cancelled_count = all, nothing sent, even after its
//      date. A launched scheduled campaign does not run again at its date.
//   3. PATCH of a draft and of a scheduled campaign: name, body / message_template,
//      recipients (replaces the list and total), context_prompt, scheduled_at (re-arms the
//      date), reply_window_hours; what is then sent follows the edit.
//   4. Create refusals, each with status, type and code, storing and sending nothing:
//      agent_not_owned (foreign, unknown), from_number_not_owned (foreign, unknown,
//      malformed), too_many_recipients (10,001; 10,000 accepted as a draft),
//      invalid_schedule (schedule without scheduled_at, a bad date), invalid_phone_format
//      naming `Row n:`, message_too_long (the template, or once filled in), missing_field;
//      `body` is message_template's other name (the response carries message_template).
//   5. Another account's campaign id: 404 campaign_not_found on GET, launch, DELETE and
//      PATCH. GET /v1/sms/campaigns: {campaigns, count, limit, offset}, newest first.
//      Idempotency-Key: a repeated create makes one campaign.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCustomer, startCallStack, type CallStack, type Customer, type Provider } from '../helpers/calls.ts';
import { OPT_OUT_CONFIRMATION } from '../../actors/sms/opt-out.ts';
import {
  campaignDone,
  campaignMessages,
  campaignWhere,
  cancelCampaign,
  createCampaign,
  createCampaignRaw,
  expectApiError,
  expectCountsAddUp,
  getCampaign,
  launchCampaign,
  listCampaigns,
  patchCampaign,
  phoneSequence,
  simSent,
  sleep,
  smsSim,
  SMS_ENV,
  type SmsSim,
} from '../helpers/sms.ts';

const TEST_MS = 50_000;
const phone = phoneSequence(3);
const phones = (n: number) => Array.from({ length: n }, () => phone());
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const FAR = '2099-01-01T09:00:00.000Z';

let stack: CallStack;
beforeAll(async () => {
  stack = await startCallStack(SMS_ENV);
}, 30_000);
afterAll(async () => stack?.close());

/** Texts the carrier took to `to` that are not STOP/START confirmations. */
const campaignTexts = (sim: SmsSim, to: string) => sim.sent(to).filter((m) => m.body !== OPT_OUT_CONFIRMATION);

describe.each(['twilio', 'telnyx'] as const)('SMS campaigns on %s', (provider: Provider) => {
  let c: Customer;
  let sim: SmsSim;
  beforeAll(async () => {
    sim = smsSim(stack, provider);
    c = await newCustomer(stack, provider);
  }, 20_000);

  it('now: 201 running with every field, then done; each recipient texted once, placeholders filled', async () => {
    const [ada, bo, cy, dee] = phones(4);
    const recipients = [
      { phone: ada, variables: { name: 'Ada', day: 'Monday' } },
      { phone: bo, variables: { name: 'Bo' } },
      { phone: cy },
      { phone: ada, variables: { name: 'Ada again' } },
      { phone: dee, variables: { name: 7, day: true } },
    ];
    const res = await createCampaign(stack, c, { name: 'Spring', message_template: 'Hi {{name}}, see you {{ day }}!', recipients });
    expect(res.status, res.text).toBe(201);
    const camp = res.body;
    expect(camp.campaign_id).toMatch(/^smscamp_[A-Za-z0-9]+$/);
    expect(camp).toMatchObject({
      agent_id: c.agentId,
      name: 'Spring',
      status: 'running',
      total_count: 4,
      delivered_count: 0,
      failed_count: 0,
      pending_count: 4,
      source: 'api',
      from_number: c.number,
      message_template: 'Hi {{name}}, see you {{ day }}!',
      scheduled_at: null,
      context_prompt: null,
      reply_window_hours: 72,
    });
    expect(camp.created_at).toMatch(ISO_MS);
    expectCountsAddUp(camp);

    const done = await campaignDone(stack, c.key, camp.campaign_id);
    expect(done).toMatchObject({ status: 'done', total_count: 4, delivered_count: 4, failed_count: 0, pending_count: 0 });
    expect(done.finished_at).toMatch(ISO_MS);
    const bodies = Object.fromEntries([ada, bo, cy, dee].map((p) => [p, sim.sent(p).map((m) => m.body)]));
    expect(bodies).toEqual({
      [ada!]: ['Hi Ada, see you Monday!'],
      [bo!]: ['Hi Bo, see you !'],
      [cy!]: ['Hi , see you !'],
      [dee!]: ['Hi 7, see you true!'],
    });
    for (const p of [ada!, bo!, cy!, dee!]) expect(sim.sent(p)[0]!.from).toBe(c.number);
    const messages = await campaignMessages(stack, c.key, camp.campaign_id);
    expect(messages).toHaveLength(4);
    for (const m of messages) expect(m).toMatchObject({ origin: 'campaign', direction: 'outbound', from: c.number, agent_id: c.agentId });
    expect((await getCampaign(stack, c.key, camp.campaign_id)).body).toEqual(done);
  }, TEST_MS);

  it('an unsubscribed recipient and a delivery failure count as failed; the rest delivered', async () => {
    const [stopper, lost, fine] = phones(3);
    await sim.receive({ from: stopper!, to: c.number, body: 'STOP' });
    await simSent(sim, stopper!, OPT_OUT_CONFIRMATION);
    sim.outcome(lost!, 'undelivered');
    // Slow steps at the carrier, so the accepted-then-failed text is seen as delivered first.
    const step = sim.stepMs;
    sim.stepMs = 1500;
    try {
      const res = await createCampaign(stack, c, { recipients: [{ phone: stopper }, { phone: lost }, { phone: fine }] });
      expect(res.status, res.text).toBe(201);
      const id = res.body.campaign_id;
      const seen: any[] = [];
      await campaignWhere(stack, c.key, id, (x) => x.delivered_count === 2 && x.failed_count === 1, 'two accepted, one unsubscribed', 20_000, seen);
      const done = await campaignWhere(stack, c.key, id, (x) => x.status === 'done' && x.failed_count === 2, 'the failed delivery counted', 20_000, seen);
      expect(done).toMatchObject({ total_count: 3, delivered_count: 1, failed_count: 2, pending_count: 0 });
      // delivered_count went down only by the one failure.
      expect(Math.max(...seen.map((x) => x.delivered_count))).toBe(2);

      const messages = await campaignMessages(stack, c.key, id);
      const byTo = Object.fromEntries(messages.map((m) => [m.to, m]));
      expect(byTo[stopper!]).toMatchObject({ status: 'failed', error_code: 'recipient_unsubscribed' });
      expect(byTo[lost!]).toMatchObject({ status: 'undelivered', error_code: sim.errorCodeOf('undelivered') });
      expect(['sent', 'delivered']).toContain(byTo[fine!].status);
      expect(campaignTexts(sim, stopper!)).toHaveLength(0);
      expect(sim.sentTo(lost!)).toBe(1);
      expect(sim.sentTo(fine!)).toBe(1);
    } finally {
      sim.stepMs = step;
    }
  }, TEST_MS);

  it('a lost answer and a reset mid-campaign: each recipient is still texted exactly once', async () => {
    const recipients = phones(4);
    sim.failSendTo(recipients[1]!, { drop: true });
    sim.failSendTo(recipients[2]!, { reset: true });
    const res = await createCampaign(stack, c, { message_template: 'Once each', recipients: recipients.map((p) => ({ phone: p })) });
    expect(res.status, res.text).toBe(201);
    const done = await campaignDone(stack, c.key, res.body.campaign_id);
    expect(done).toMatchObject({ total_count: 4, delivered_count: 4, failed_count: 0, pending_count: 0 });
    expect(recipients.map((p) => sim.sentTo(p))).toEqual([1, 1, 1, 1]);
    expect(recipients.map((p) => sim.requests(p).length)).toEqual([1, 1, 2, 1]);
    const messages = await campaignMessages(stack, c.key, res.body.campaign_id);
    for (const m of messages) expect(stack.server.storage.sms.byId(m.message_id)?.carrier_message_id).toBe(sim.sent(m.to)[0]!.sid);
  }, TEST_MS);

  it('schedule: scheduled and silent until scheduled_at, then running and done', async () => {
    const [a, b] = phones(2);
    const at = Date.now() + 2000;
    const res = await createCampaign(stack, c, { schedule_type: 'schedule', scheduled_at: new Date(at).toISOString(), recipients: [{ phone: a }, { phone: b }] });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ status: 'scheduled', scheduled_at: new Date(at).toISOString(), total_count: 2, pending_count: 2, delivered_count: 0, failed_count: 0 });
    const id = res.body.campaign_id;
    expect((await getCampaign(stack, c.key, id)).body.status).toBe('scheduled');
    // Until shortly before its date: scheduled, nothing sent.
    while (Date.now() < at - 300) {
      const r = (await getCampaign(stack, c.key, id)).body;
      expect(r).toMatchObject({ status: 'scheduled', pending_count: 2 });
      expect(sim.sentTo(a!) + sim.sentTo(b!)).toBe(0);
      await sleep(100);
    }
    await campaignWhere(stack, c.key, id, (x) => x.status !== 'scheduled', 'running', 20_000);
    const done = await campaignDone(stack, c.key, id);
    expect(done).toMatchObject({ delivered_count: 2, pending_count: 0 });
    for (const p of [a!, b!]) {
      expect(sim.sentTo(p)).toBe(1);
      expect(sim.sent(p)[0]!.at).toBeGreaterThanOrEqual(at);
    }
    expect(Date.parse(done.started_at)).toBeGreaterThanOrEqual(at);
  }, TEST_MS);

  it('draft: nothing sent until launch; launch answers 200 running with the counts', async () => {
    const recipients = phones(3).map((p) => ({ phone: p }));
    const res = await createCampaign(stack, c, { schedule_type: 'draft', recipients });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ status: 'draft', total_count: 3, pending_count: 3 });
    const id = res.body.campaign_id;
    await sleep(500); // ten send intervals
    expect((await getCampaign(stack, c.key, id)).body.status).toBe('draft');
    for (const r of recipients) expect(sim.sentTo(r.phone)).toBe(0);

    const launched = await launchCampaign(stack, c.key, id);
    expect(launched.status, launched.text).toBe(200);
    expect(launched.body).toEqual({ campaign_id: id, status: 'running', total_count: 3, pending_count: 3, delivered_count: 0, failed_count: 0 });
    await campaignDone(stack, c.key, id);
    for (const r of recipients) expect(sim.sentTo(r.phone)).toBe(1);
    expectApiError(await launchCampaign(stack, c.key, id), 400, 'invalid_request', 'campaign_already_done');
  }, TEST_MS);
});

describe('the SMS campaign state table', () => {
  let c: Customer;
  let other: Customer;
  let sim: SmsSim;
  beforeAll(async () => {
    sim = smsSim(stack, 'twilio');
    c = await newCustomer(stack, 'twilio');
    other = await newCustomer(stack, 'twilio');
  }, 20_000);

  it('launch of a scheduled campaign runs it now (once); launch while running is campaign_already_running; done refuses launch, DELETE and PATCH', async () => {
    const recipients = phones(30).map((p) => ({ phone: p }));
    const at = Date.now() + 3000;
    const res = await createCampaign(stack, c, { schedule_type: 'schedule', scheduled_at: new Date(at).toISOString(), recipients });
    expect(res.body.status).toBe('scheduled');
    const id = res.body.campaign_id;
    const launched = await launchCampaign(stack, c.key, id);
    expect(launched.status, launched.text).toBe(200);
    expect(launched.body).toMatchObject({ campaign_id: id, status: 'running', total_count: 30 });
    expectCountsAddUp(launched.body);
    // 30 texts at one per 50 ms: still running.
    expectApiError(await launchCampaign(stack, c.key, id), 400, 'invalid_request', 'campaign_already_running');
    const done = await campaignDone(stack, c.key, id);
    expect(done).toMatchObject({ delivered_count: 30, pending_count: 0 });
    expect(Date.parse(done.finished_at)).toBeLessThan(at + 1000);

    expectApiError(await launchCampaign(stack, c.key, id), 400, 'invalid_request', 'campaign_already_done');
    expectApiError(await cancelCampaign(stack, c.key, id), 400, 'invalid_request', 'campaign_already_done');
    expectApiError(await patchCampaign(stack, c.key, id, { name: 'Late' }), 400, 'invalid_request', 'campaign_not_editable');
    // Past its date: the date does not send it again.
    await eventuallyPast(at + 500);
    for (const r of recipients) expect(sim.sentTo(r.phone)).toBe(1);
  }, TEST_MS);

  it('no recipients: a draft of none, or PATCHed to none, cannot launch; now with none is done at once', async () => {
    const empty = await createCampaign(stack, c, { schedule_type: 'draft', recipients: [] });
    expect(empty.status, empty.text).toBe(201);
    expect(empty.body).toMatchObject({ status: 'draft', total_count: 0, pending_count: 0 });
    expectApiError(await launchCampaign(stack, c.key, empty.body.campaign_id), 400, 'invalid_request', 'campaign_no_recipients');

    const emptied = await createCampaign(stack, c, { schedule_type: 'draft', recipients: [{ phone: phone() }] });
    const patched = await patchCampaign(stack, c.key, emptied.body.campaign_id, { recipients: [] });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ total_count: 0, pending_count: 0 });
    expectApiError(await launchCampaign(stack, c.key, emptied.body.campaign_id), 400, 'invalid_request', 'campaign_no_recipients');

    const scheduledEmpty = await createCampaign(stack, c, { schedule_type: 'schedule', scheduled_at: FAR, recipients: [] });
    expectApiError(await launchCampaign(stack, c.key, scheduledEmpty.body.campaign_id), 400, 'invalid_request', 'campaign_no_recipients');

    const now = await createCampaign(stack, c, { recipients: [] });
    expect(now.status, now.text).toBe(201);
    expect(now.body).toMatchObject({ status: 'done', total_count: 0, delivered_count: 0, failed_count: 0, pending_count: 0 });
  }, TEST_MS);

  it('DELETE of a scheduled campaign cancels every recipient; nothing is sent, even at its date', async () => {
    const recipients = phones(3).map((p) => ({ phone: p }));
    const at = Date.now() + 1500;
    const res = await createCampaign(stack, c, { schedule_type: 'schedule', scheduled_at: new Date(at).toISOString(), recipients });
    const id = res.body.campaign_id;
    const cancelled = await cancelCampaign(stack, c.key, id);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toEqual({ campaign_id: id, deleted: true, cancelled_count: 3 });
    const after = (await getCampaign(stack, c.key, id)).body;
    expect(after).toMatchObject({ status: 'cancelled', total_count: 3, pending_count: 3, delivered_count: 0, failed_count: 0, cancelled_count: 3 });
    expectCountsAddUp(after);

    expectApiError(await cancelCampaign(stack, c.key, id), 400, 'invalid_request', 'campaign_already_done');
    expectApiError(await launchCampaign(stack, c.key, id), 400, 'invalid_request', 'campaign_already_done');
    expectApiError(await patchCampaign(stack, c.key, id, { name: 'x' }), 400, 'invalid_request', 'campaign_not_editable');
    await eventuallyPast(at + 1000);
    expect((await getCampaign(stack, c.key, id)).body.status).toBe('cancelled');
    for (const r of recipients) expect(sim.sentTo(r.phone)).toBe(0);
    expect(await campaignMessages(stack, c.key, id)).toHaveLength(0);

    // A draft can be cancelled too.
    const draft = await createCampaign(stack, c, { schedule_type: 'draft', recipients: [{ phone: phone() }] });
    expect((await cancelCampaign(stack, c.key, draft.body.campaign_id)).body).toMatchObject({ deleted: true, cancelled_count: 1 });
  }, TEST_MS);

  it('PATCH of a draft changes every editable field, and the launch sends what it says', async () => {
    const old = phones(2);
    const res = await createCampaign(stack, c, { schedule_type: 'draft', name: 'Before', message_template: 'Old {{x}}', recipients: old.map((p) => ({ phone: p })) });
    const id = res.body.campaign_id;
    const fresh = phones(3);
    const patched = await patchCampaign(stack, c.key, id, {
      name: 'After',
      body: 'New for {{who}}',
      recipients: fresh.map((p, i) => ({ phone: p, variables: { who: `R${i + 1}` } })),
      context_prompt: 'They may ask about parking.',
      scheduled_at: FAR,
      reply_window_hours: 24,
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({
      campaign_id: id,
      status: 'draft',
      name: 'After',
      message_template: 'New for {{who}}',
      total_count: 3,
      pending_count: 3,
      context_prompt: 'They may ask about parking.',
      scheduled_at: FAR,
      reply_window_hours: 24,
    });
    expect(patched.body.body).toBeUndefined();
    // message_template is accepted too; a cleared context_prompt reads back null.
    const again = await patchCampaign(stack, c.key, id, { message_template: 'Newest for {{who}}', context_prompt: '' });
    expect(again.body).toMatchObject({ message_template: 'Newest for {{who}}', context_prompt: null, name: 'After' });
    expect((await getCampaign(stack, c.key, id)).body).toEqual(again.body);

    expect((await launchCampaign(stack, c.key, id)).status).toBe(200);
    await campaignDone(stack, c.key, id);
    for (const p of old) expect(sim.sentTo(p)).toBe(0);
    expect(fresh.map((p) => sim.sent(p).map((m) => m.body))).toEqual([['Newest for R1'], ['Newest for R2'], ['Newest for R3']]);
  }, TEST_MS);

  it('PATCH of a scheduled campaign: a new scheduled_at re-arms its date, new recipients replace the old', async () => {
    const old = phone();
    const res = await createCampaign(stack, c, { schedule_type: 'schedule', scheduled_at: FAR, message_template: 'Soon', recipients: [{ phone: old }] });
    const id = res.body.campaign_id;
    const fresh = phones(2);
    const at = Date.now() + 1500;
    const patched = await patchCampaign(stack, c.key, id, {
      scheduled_at: new Date(at).toISOString(),
      recipients: fresh.map((p) => ({ phone: p })),
      name: 'Moved up',
      message_template: 'Sooner',
      reply_window_hours: 1,
      context_prompt: 'Be brief.',
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ status: 'scheduled', scheduled_at: new Date(at).toISOString(), total_count: 2, name: 'Moved up', reply_window_hours: 1, context_prompt: 'Be brief.' });
    const done = await campaignDone(stack, c.key, id);
    expect(done).toMatchObject({ delivered_count: 2, total_count: 2 });
    expect(sim.sentTo(old)).toBe(0);
    for (const p of fresh) {
      expect(sim.sent(p).map((m) => m.body)).toEqual(['Sooner']);
      expect(sim.sent(p)[0]!.at).toBeGreaterThanOrEqual(at);
    }
  }, TEST_MS);

  it('PATCH refusals: bad values with their codes; a template that no longer fits a stored recipient', async () => {
    const res = await createCampaign(stack, c, { schedule_type: 'draft', message_template: 'Hi {{name}}', recipients: [{ phone: phone(), variables: { name: 'x'.repeat(600) } }] });
    const id = res.body.campaign_id;
    let e = expectApiError(await patchCampaign(stack, c.key, id, { body: `${'y'.repeat(1001)}{{name}}` }), 400, 'invalid_request', 'message_too_long');
    expect(e.message).toMatch(/^Row 1:/);
    expectApiError(await patchCampaign(stack, c.key, id, { scheduled_at: 'next week' }), 400, 'invalid_request', 'invalid_schedule');
    e = expectApiError(await patchCampaign(stack, c.key, id, { recipients: [{ phone: phone() }, { phone: '+1628' }] }), 400, 'invalid_request', 'invalid_phone_format');
    expect(e.message).toMatch(/^Row 2:/);
    expectApiError(await patchCampaign(stack, c.key, id, { from_number: c.number }), 400, 'invalid_request', 'invalid_request');
    expect((await getCampaign(stack, c.key, id)).body).toMatchObject({ message_template: 'Hi {{name}}', total_count: 1, status: 'draft' });
    // Exactly 1600 once filled in is fine.
    const fits = await patchCampaign(stack, c.key, id, { body: `${'y'.repeat(1000)}{{name}}` });
    expect(fits.status, fits.text.slice(0, 200)).toBe(200);
  }, TEST_MS);

  it('create refusals store nothing and send nothing', async () => {
    const foreign = await newCustomer(stack, 'telnyx');
    const ok = phone();
    const base = { agent_id: c.agentId, from_number: c.number, name: 'N', message_template: 'Hi', recipients: [{ phone: ok }], schedule_type: 'now' };
    const post = (patch: Record<string, unknown>, drop: string[] = []) => {
      const body: Record<string, unknown> = { ...base, ...patch };
      for (const k of drop) delete body[k];
      return createCampaignRaw(stack, c.key, body);
    };
    const before = (await listCampaigns(stack, c.key)).body.count;

    expectApiError(await post({ agent_id: foreign.agentId }), 400, 'invalid_request', 'agent_not_owned');
    expectApiError(await post({ agent_id: 'agent_nope' }), 400, 'invalid_request', 'agent_not_owned');
    expectApiError(await post({ from_number: foreign.number }), 400, 'invalid_request', 'from_number_not_owned');
    expectApiError(await post({ from_number: '+16285559876' }), 400, 'invalid_request', 'from_number_not_owned');
    expectApiError(await post({ from_number: '12345' }), 400, 'invalid_request', 'from_number_not_owned');

    const tooMany = Array.from({ length: 10_001 }, (_, i) => ({ phone: `+1628${3_000_000 + i}` }));
    expectApiError(await post({ recipients: tooMany }), 400, 'invalid_request', 'too_many_recipients');

    let e = expectApiError(await post({ schedule_type: 'schedule' }), 400, 'invalid_request', 'invalid_schedule');
    expect(e.details.field).toBe('scheduled_at');
    for (const bad of ['tomorrow', '2026-13-45T25:00:00Z', '12/01/2026', 42]) {
      expectApiError(await post({ schedule_type: 'schedule', scheduled_at: bad }), 400, 'invalid_request', 'invalid_schedule');
    }

    e = expectApiError(await post({ recipients: [{ phone: ok }, { phone: '+1628555' }] }), 400, 'invalid_request', 'invalid_phone_format');
    expect(e.message).toMatch(/^Row 2:/);
    e = expectApiError(await post({ recipients: [{ phone: ok }, { phone: ok }, { phone: '+16280000000' }] }), 400, 'invalid_request', 'invalid_phone_format');
    expect(e.message).toMatch(/^Row 3:/);
    e = expectApiError(await post({ recipients: [{ phone: '6285550100' }] }), 400, 'invalid_request', 'invalid_phone_format');
    expect(e.message).toMatch(/^Row 1:/);

    expectApiError(await post({ message_template: 'z'.repeat(1601) }), 400, 'invalid_request', 'message_too_long');
    expectApiError(await post({ body: 'z'.repeat(1601) }, ['message_template']), 400, 'invalid_request', 'message_too_long');
    e = expectApiError(
      await post({ message_template: `${'z'.repeat(1590)}{{v}}`, recipients: [{ phone: ok, variables: { v: 'short' } }, { phone: phone(), variables: { v: 'much too long now' } }] }),
      400,
      'invalid_request',
      'message_too_long',
    );
    expect(e.message).toMatch(/^Row 2:/);

    for (const field of ['agent_id', 'from_number', 'name', 'message_template', 'recipients', 'schedule_type']) {
      e = expectApiError(await post({}, [field]), 400, 'invalid_request', 'missing_field');
      expect(e.details.field, field).toBe(field);
    }
    expectApiError(await post({ name: 'x', surprise: true }), 400, 'invalid_request', 'invalid_request');

    expect((await listCampaigns(stack, c.key)).body.count).toBe(before);
    expect(sim.requests(ok)).toHaveLength(0);

    // 10,000 is the limit itself (a draft: nothing is sent).
    const max = Array.from({ length: 10_000 }, (_, i) => ({ phone: `+1628${3_000_000 + i}` }));
    const big = await post({ recipients: max, schedule_type: 'draft' });
    expect(big.status, big.text.slice(0, 300)).toBe(201);
    expect(big.body).toMatchObject({ total_count: 10_000, pending_count: 10_000, status: 'draft' });
    expect((await cancelCampaign(stack, c.key, big.body.campaign_id)).body.cancelled_count).toBe(10_000);
  }, TEST_MS);

  it('body is message_template’s other name; the response carries message_template', async () => {
    const to = phone();
    const res = await createCampaignRaw(stack, c.key, { agent_id: c.agentId, from_number: c.number, name: 'B', body: 'Via body', recipients: [{ phone: to }], schedule_type: 'now', context_prompt: 'ctx', reply_window_hours: 12 });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ message_template: 'Via body', context_prompt: 'ctx', reply_window_hours: 12 });
    expect(res.body.body).toBeUndefined();
    await campaignDone(stack, c.key, res.body.campaign_id);
    expect(sim.sent(to).map((m) => m.body)).toEqual(['Via body']);
    // Both names at once: fine when they agree, refused when they do not.
    const both = { agent_id: c.agentId, from_number: c.number, name: 'B', recipients: [{ phone: phone() }], schedule_type: 'draft' };
    expect((await createCampaignRaw(stack, c.key, { ...both, body: 'Same', message_template: 'Same' })).status).toBe(201);
    expectApiError(await createCampaignRaw(stack, c.key, { ...both, body: 'One', message_template: 'Other' }), 400, 'invalid_request', 'invalid_request');
  }, TEST_MS);

  it('another account’s campaign is 404 campaign_not_found everywhere; the list is newest first', async () => {
    const ids: string[] = [];
    for (const name of ['first', 'second', 'third']) {
      const res = await createCampaign(stack, other, { name, schedule_type: 'draft', recipients: [{ phone: phone() }] });
      ids.push(res.body.campaign_id);
    }
    for (const id of [ids[0]!, 'smscamp_doesnotexist']) {
      expectApiError(await getCampaign(stack, c.key, id), 404, 'not_found', 'campaign_not_found');
      expectApiError(await launchCampaign(stack, c.key, id), 404, 'not_found', 'campaign_not_found');
      expectApiError(await cancelCampaign(stack, c.key, id), 404, 'not_found', 'campaign_not_found');
      expectApiError(await patchCampaign(stack, c.key, id, { name: 'mine now' }), 404, 'not_found', 'campaign_not_found');
    }
    const theirs = (await getCampaign(stack, other.key, ids[0]!)).body;
    expect(theirs).toMatchObject({ status: 'draft', name: 'first' });

    const list = await listCampaigns(stack, other.key);
    expect(list.status, list.text).toBe(200);
    expect(list.body).toMatchObject({ count: 3, limit: 25, offset: 0 });
    expect(list.body.campaigns.map((x: any) => x.campaign_id)).toEqual([...ids].reverse());
    for (const x of list.body.campaigns) expectCountsAddUp(x);
    const page = await listCampaigns(stack, other.key, '?limit=1&offset=1');
    expect(page.body).toMatchObject({ count: 3, limit: 1, offset: 1 });
    expect(page.body.campaigns.map((x: any) => x.campaign_id)).toEqual([ids[1]]);
    expect((await listCampaigns(stack, c.key)).body.campaigns.map((x: any) => x.campaign_id)).not.toContain(ids[0]);
  }, TEST_MS);

  it('Idempotency-Key: a repeated create makes one campaign and texts once', async () => {
    const to = phone();
    const headers = { 'Idempotency-Key': `camp-${to}` };
    const first = await createCampaign(stack, c, { recipients: [{ phone: to }] }, headers);
    expect(first.status, first.text).toBe(201);
    const second = await createCampaign(stack, c, { recipients: [{ phone: to }] }, headers);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.campaign_id).toBe(first.body.campaign_id);
    await campaignDone(stack, c.key, first.body.campaign_id);
    expect(sim.sentTo(to)).toBe(1);
  }, TEST_MS);
});

/** Waits until the wall clock is past `t` (a date the test set). */
async function eventuallyPast(t: number): Promise<void> {
  const wait = t - Date.now();
  if (wait > 0) await sleep(wait);
}
