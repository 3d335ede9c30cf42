// The batch campaign API end to end (issue 20, acceptance 1): the real server over real
// HTTP with both carriers' simulators and a real HTTPS webhook receiver. Covered:
//   1. Every error of the batch endpoints (api.md "POST /v1/calls/batch", contract.md 4,
//      7 and 11), each with its HTTP status, envelope `type` and `code`: the required
//      fields in their order (missing_field, campaign_creation_failed for a from_number
//      missing, malformed, not on the account, on another agent or not outbound, with a
//      message saying which), invalid_timezone, the recipient rows (invalid_phone_format
//      with details {field, total, valid_count, invalid_count, invalid, hint} and each
//      reason: missing, invalid_format, invalid_number, duplicate; skip_invalid true calls
//      only the valid rows and lists the others), 404 campaign_not_found for an unknown id
//      and for another account's (GET, launch, DELETE), campaign_already_running and
//      campaign_already_done; a rejected request changes nothing (the list, the
//      simulator's dial record). Idempotency-Key: one campaign for a repeated request.
//   2. A launch that cannot place a call: the from_number, and with it its carrier
//      credentials, deleted while the campaign was scheduled (the API's one way to take
//      a number's credentials away): the campaign ends `failed` with failure_reason
//      `campaign_launch_failed: …` naming the number, and nothing is dialed.
//   3. Cancellation while running: the answer counts the recipients never called, no new
//      dial reaches the carrier afterwards (not even once the connected calls end and free
//      their slots), the connected calls finish normally when the callee hangs up, and the
//      record's counts add up.
//   4. GET /v1/calls/batch newest first and paginated; GET /v1/calls?campaign_id= filters;
//      call.started and call.completed of a campaign's call carry its campaign_id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, type TestResponse } from './helpers/server.ts';
import { createAgent } from './helpers/fixtures.ts';
import { API_POLL_MS, callReaches, dial, eventually, importNumber, newCustomer, type CallStack, type Customer, type Provider } from './helpers/calls.ts';
import { dialsTo } from './helpers/campaigns.ts';
import { startWebhookCallStack } from './helpers/webhooks.ts';
import type { WebhookReceiver } from './sim/webhook-receiver.ts';

const CALL_STARTED_DELAY_MS = 200;
/** Generous: another test suite may be running beside this one on two cores. */
const SETTLE_MS = 30_000;
const TEST_MS = 90_000;

let receiver: WebhookReceiver;
let stack: CallStack;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ stack, receiver, close: stop } = await startWebhookCallStack({
    CALL_STARTED_DELAY_MS: String(CALL_STARTED_DELAY_MS),
    WEBHOOK_RETRY_SCHEDULE_MS: '150,150,150,150',
    WEBHOOK_TIMEOUT_MS: '5000',
  }));
}, 30_000);
afterAll(async () => {
  await stop?.();
});

const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let seq = 0;
/** A real US number (San Francisco's 628 area) by libphonenumber-js's full metadata, unique in this file. */
const recipientNumber = (): string => `+1628${3_000_000 + ++seq}`;

const PROMPT = 'Remind {first_name} of tomorrow’s appointment.';

function createBatch(c: Customer, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<TestResponse> {
  return stack.server.request('POST', '/v1/calls/batch', { key: c.key, body: { agent_id: c.agentId, from_number: c.number, prompt: PROMPT, ...body }, headers });
}
/** POST /v1/calls/batch with exactly this body (no defaults filled in). */
const postRaw = (c: Customer, body: Record<string, unknown>): Promise<TestResponse> => stack.server.request('POST', '/v1/calls/batch', { key: c.key, body });
const getBatch = (c: Customer, id: string) => stack.server.request('GET', `/v1/calls/batch/${enc(id)}`, { key: c.key });
const launch = (c: Customer, id: string) => stack.server.request('POST', `/v1/calls/batch/${enc(id)}/launch`, { key: c.key });
const cancel = (c: Customer, id: string) => stack.server.request('DELETE', `/v1/calls/batch/${enc(id)}`, { key: c.key });
const listBatches = (c: Customer, query = '') => stack.server.request('GET', `/v1/calls/batch${query}`, { key: c.key });

/** Asserts api.md's error envelope with this status, type and code; returns the error object. */
function expectApiError(res: TestResponse, status: number, type: string, code: string): any {
  expectError(res, status, type, code);
  return res.body.error;
}

/** Polls the campaign record until `ok` holds; returns the record. */
async function batchWhere(c: Customer, id: string, ok: (r: any) => boolean, what: string, timeoutMs = SETTLE_MS): Promise<any> {
  let last = '';
  try {
    return await eventually(async () => {
      const r = await getBatch(c, id);
      last = r.text;
      return r.status === 200 && ok(r.body) ? r.body : undefined;
    }, timeoutMs, what, API_POLL_MS);
  } catch (err) {
    throw new Error(`${(err as Error).message}; last record: ${last}`);
  }
}

/** The record's counts add up to valid_count (contract.md 7). */
function expectCountsAddUp(r: any): void {
  const sum = r.pending_count + r.in_progress_count + r.completed_count + r.failed_count + r.voicemail_count + r.cancelled_count;
  expect(sum, JSON.stringify(r)).toBe(r.valid_count);
  expect(r.total_count).toBe(r.valid_count + r.invalid_count);
}

function setScenario(provider: Provider, to: string, scenario: 'answer' | 'busy'): void {
  if (provider === 'twilio') stack.sims.twilio.scenario(to, scenario);
  else stack.sims.telnyx.setScenario(to, scenario);
}

/** The far end of the call to `to` hangs up (the callee's side). */
async function calleeHangsUp(provider: Provider, to: string): Promise<void> {
  if (provider === 'twilio') {
    const call = [...stack.sims.twilio.calls.values()].find((x) => x.to === to && x.direction === 'outbound-api');
    if (!call) throw new Error(`no call to ${to} at carrier A`);
    await stack.sims.twilio.hangup(call.sid);
  } else {
    const call = [...stack.sims.telnyx.calls.calls.values()].find((x) => x.to === to && x.direction === 'outgoing');
    if (!call) throw new Error(`no call to ${to} at carrier B`);
    await stack.sims.telnyx.hangup(call.callControlId);
  }
}

/** The campaign's calls as GET /v1/calls?campaign_id= lists them. */
async function campaignCalls(c: Customer, id: string): Promise<any[]> {
  const res = await stack.server.request('GET', `/v1/calls?campaign_id=${enc(id)}&limit=100`, { key: c.key });
  expect(res.status, res.text).toBe(200);
  expect(res.body.count).toBe(res.body.calls.length);
  return res.body.calls;
}

/** A day far ahead: a campaign scheduled for it waits (status `scheduled`) until launched. */
const FAR_DATE = '2099-01-05';

/** A calling window of UTC that is closed now and for the next hour: a campaign created with it runs but dials nobody. */
function closedWindow(): Record<string, unknown> {
  const now = new Date();
  const minute = now.getUTCHours() * 60 + now.getUTCMinutes();
  return { timezone: 'UTC', window_start_minutes: (minute + 120) % 1440, window_end_minutes: (minute + 180) % 1440 };
}

// ---- 1. Errors --------------------------------------------------------------------

describe.each<Provider>(['twilio', 'telnyx'])('creating a campaign on carrier %s: every refusal, and nothing changes', (provider) => {
  it('checks agent_id, prompt, from_number and recipients first and in that order', async () => {
    const c = await newCustomer(stack, provider);
    const phone = recipientNumber();
    const before = await listBatches(c);

    let e = expectApiError(await postRaw(c, {}), 400, 'invalid_request', 'missing_field');
    expect(e.details?.field).toBe('agent_id');
    e = expectApiError(await postRaw(c, { agent_id: c.agentId, from_number: c.number, recipients: [{ phone }] }), 400, 'invalid_request', 'missing_field');
    expect(e.details?.field).toBe('prompt');
    for (const blank of ['', '   \n']) {
      e = expectApiError(await postRaw(c, { agent_id: c.agentId, prompt: blank, from_number: c.number, recipients: [{ phone }] }), 400, 'invalid_request', 'missing_field');
      expect(e.details?.field).toBe('prompt');
    }
    // from_number comes before recipients, and its absence is campaign_creation_failed.
    e = expectApiError(await postRaw(c, { agent_id: c.agentId, prompt: PROMPT }), 400, 'invalid_request', 'campaign_creation_failed');
    expect(e.details?.field).toBe('from_number');
    expect(e.message).toMatch(/from_number/);
    expect(e.message).toMatch(/required|missing/i);
    e = expectApiError(await postRaw(c, { agent_id: c.agentId, prompt: PROMPT, from_number: c.number }), 400, 'invalid_request', 'missing_field');
    expect(e.details?.field).toBe('recipients');

    // An unknown agent is a body reference: 400 agent_not_found.
    expectApiError(await createBatch(c, { agent_id: 'agent_nope', recipients: [{ phone }] }), 400, 'invalid_request', 'agent_not_found');

    expect((await listBatches(c)).body).toEqual(before.body);
    expect(before.body.count).toBe(0);
    expect(dialsTo(stack, provider, [phone])).toBe(0);
  }, TEST_MS);

  it('refuses a from_number that is malformed, not on the account, on another agent or not outbound, saying which', async () => {
    const c = await newCustomer(stack, provider);
    const other = await newCustomer(stack, provider);
    // A second agent of the same account, with a number of its own.
    const secondAgent = await createAgent(stack.server, c.key, { name: 'Second agent' });
    const { number: secondNumber } = await importNumber(stack, c.key, secondAgent, provider);
    const phone = recipientNumber();
    // One campaign exists, so "unchanged" is not the empty list.
    const kept = await createBatch(c, { recipients: [{ phone: recipientNumber() }], schedule_type: 'schedule', scheduled_date: FAR_DATE });
    expect(kept.status, kept.text).toBe(201);
    const before = await listBatches(c);
    expect(before.body.count).toBe(1);

    let e = expectApiError(await createBatch(c, { from_number: '4155550123', recipients: [{ phone }] }), 400, 'invalid_request', 'campaign_creation_failed');
    expect(e.details?.field).toBe('from_number');
    expect(e.message).toMatch(/E\.164/);

    // Another account's number, and one imported nowhere: not on this account.
    for (const foreign of [other.number, '+14155550199']) {
      e = expectApiError(await createBatch(c, { from_number: foreign, recipients: [{ phone }] }), 400, 'invalid_request', 'campaign_creation_failed');
      expect(e.message).toContain(foreign);
      expect(e.message).toMatch(/not a number imported on your account/);
    }

    e = expectApiError(await createBatch(c, { from_number: secondNumber, recipients: [{ phone }] }), 400, 'invalid_request', 'campaign_creation_failed');
    expect(e.message).toContain(`agent ${secondAgent}`);
    expect(e.message).toContain(`not to agent ${c.agentId}`);

    const patched = await stack.server.request('PATCH', `/v1/phone-numbers/${enc(c.number)}`, { key: c.key, body: { outbound_enabled: false } });
    expect(patched.status, patched.text).toBe(200);
    e = expectApiError(await createBatch(c, { recipients: [{ phone }] }), 400, 'invalid_request', 'campaign_creation_failed');
    expect(e.message).toMatch(/outbound/);
    await stack.server.request('PATCH', `/v1/phone-numbers/${enc(c.number)}`, { key: c.key, body: { outbound_enabled: true } });

    expect((await listBatches(c)).body).toEqual(before.body);
    expect(dialsTo(stack, provider, [phone])).toBe(0);
  }, TEST_MS);

  it('refuses a bad timezone with invalid_timezone, and other bad fields with their codes', async () => {
    const c = await newCustomer(stack, provider);
    const phone = recipientNumber();
    const before = await listBatches(c);
    for (const timezone of ['Mars/Olympus_Mons', '+05:30', 'EST5EDT-nope', '']) {
      const e = expectApiError(await createBatch(c, { timezone, recipients: [{ phone }] }), 400, 'invalid_request', 'invalid_timezone');
      expect(e.details?.field).toBe('timezone');
    }
    // scheduled_date is required with schedule_type schedule.
    let e = expectApiError(await createBatch(c, { schedule_type: 'schedule', recipients: [{ phone }] }), 400, 'invalid_request', 'missing_field');
    expect(e.details?.field).toBe('scheduled_date');
    // An empty list, an unknown field in a row, more than 10,000 rows.
    expectApiError(await createBatch(c, { recipients: [] }), 400, 'invalid_request', 'invalid_request');
    e = expectApiError(await createBatch(c, { recipients: [{ phone }, { phone: recipientNumber(), name: 'Dana' }] }), 400, 'invalid_request', 'invalid_request');
    expect(e.details?.field).toBe('recipients.1.name');
    const many = Array.from({ length: 10_001 }, (_, i) => ({ phone: `+1628${4_000_000 + i}` }));
    expectApiError(await createBatch(c, { recipients: many }), 400, 'invalid_request', 'too_many_recipients');

    expect((await listBatches(c)).body).toEqual(before.body);
    expect(before.body.count).toBe(0);
  }, TEST_MS);

  // Rows 0 and 6 can be called; every other row shows one reason.
  const mixedRows = (a: string, b: string) => [
    { phone: a, variables: { first_name: 'Ada' } }, // 0 valid
    { variables: { first_name: 'Nobody' } }, // 1 missing (absent)
    { phone: '   ' }, // 2 missing (only spaces)
    { phone: '4155552671' }, // 3 invalid_format (no + and country code)
    { phone: '+1 415 555 2671' }, // 4 invalid_format (spaces inside)
    { phone: '+10000000000' }, // 5 invalid_number (E.164, but no such US number)
    { phone: b }, // 6 valid
    { phone: ` ${a} ` }, // 7 duplicate of row 0 (surrounding spaces ignored)
    { phone: null }, // 8 missing (null)
  ];
  const mixedInvalid = (a: string) => [
    { phone: null, reason: 'missing', row_index: 1 },
    { phone: '   ', reason: 'missing', row_index: 2 },
    { phone: '4155552671', reason: 'invalid_format', row_index: 3 },
    { phone: '+1 415 555 2671', reason: 'invalid_format', row_index: 4 },
    { phone: '+10000000000', reason: 'invalid_number', row_index: 5 },
    { phone: ` ${a} `, reason: 'duplicate', row_index: 7 },
    { phone: null, reason: 'missing', row_index: 8 },
  ];

  it('skip_invalid false (the default): any invalid row rejects the whole request with invalid_phone_format and every row explained', async () => {
    const c = await newCustomer(stack, provider);
    const [a, b] = [recipientNumber(), recipientNumber()];
    const before = await listBatches(c);
    for (const extra of [{}, { skip_invalid: false }]) {
      const e = expectApiError(await createBatch(c, { recipients: mixedRows(a, b), ...extra }), 400, 'invalid_request', 'invalid_phone_format');
      expect(e.details).toMatchObject({ field: 'recipients', total: 9, valid_count: 2, invalid_count: 7, invalid: mixedInvalid(a) });
      expect(e.details.hint).toMatch(/skip_invalid/);
      // Messages count rows from 1.
      expect(e.message).toContain('Row 2:');
    }
    // Two spellings of one UK number are one number: the later is the duplicate.
    const uk = expectApiError(await createBatch(c, { recipients: [{ phone: '+442079460000' }, { phone: '+4402079460000' }] }), 400, 'invalid_request', 'invalid_phone_format');
    expect(uk.details).toMatchObject({ total: 2, valid_count: 1, invalid_count: 1, invalid: [{ phone: '+4402079460000', reason: 'duplicate', row_index: 1 }] });
    // No valid row at all: rejected even with skip_invalid true.
    const none = expectApiError(await createBatch(c, { skip_invalid: true, recipients: [{ phone: '+10000000000' }, {}] }), 400, 'invalid_request', 'invalid_phone_format');
    expect(none.details).toMatchObject({ total: 2, valid_count: 0, invalid_count: 2 });

    await sleep(500);
    expect((await listBatches(c)).body).toEqual(before.body);
    expect(before.body.count).toBe(0);
    expect(dialsTo(stack, provider, [a, b, '+442079460000'])).toBe(0);
  }, TEST_MS);

  it('skip_invalid true: calls only the valid rows and lists the others', async () => {
    const c = await newCustomer(stack, provider);
    const [a, b] = [recipientNumber(), recipientNumber()];
    for (const n of [a, b]) setScenario(provider, n, 'busy');
    const res = await createBatch(c, { recipients: mixedRows(a, b), skip_invalid: true });
    expect(res.status, res.text).toBe(201);
    expect(res.body, res.text).toEqual({ campaign_id: expect.stringMatching(/^batch_/), status: 'running', valid_count: 2, invalid_count: 7, invalid: mixedInvalid(a) });
    const id = res.body.campaign_id as string;

    const done = await batchWhere(c, id, (r) => r.status === 'completed', 'the campaign to complete');
    expect(done).toMatchObject({ total_count: 9, valid_count: 2, invalid_count: 7, failed_count: 2, pending_count: 0, invalid: mixedInvalid(a) });
    expectCountsAddUp(done);
    // The carrier saw one dial to each valid number and nothing else of this request.
    expect(dialsTo(stack, provider, [a])).toBe(1);
    expect(dialsTo(stack, provider, [b])).toBe(1);
    const calls = await campaignCalls(c, id);
    expect(calls.map((x) => x.to_number).sort()).toEqual([a, b].sort());
  }, TEST_MS);

  it('an Idempotency-Key repeated with the same body answers the same campaign and creates one', async () => {
    const c = await newCustomer(stack, provider);
    const body = { recipients: [{ phone: recipientNumber() }], schedule_type: 'schedule', scheduled_date: FAR_DATE, name: 'Once' };
    const first = await createBatch(c, body, { 'Idempotency-Key': 'create-once' });
    expect(first.status, first.text).toBe(201);
    const again = await createBatch(c, body, { 'Idempotency-Key': 'create-once' });
    expect(again.status, again.text).toBe(201);
    expect(again.body, again.text).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // The same key with another body is refused, and creates nothing either.
    expectApiError(await createBatch(c, { ...body, name: 'Twice' }, { 'Idempotency-Key': 'create-once' }), 400, 'invalid_request', 'idempotency_key_reused');
    const list = await listBatches(c);
    expect(list.body.count).toBe(1);
    expect(list.body.campaigns.map((x: any) => x.campaign_id)).toEqual([first.body.campaign_id]);
  }, TEST_MS);
});

describe('an unknown or foreign campaign id', () => {
  it('is 404 campaign_not_found for GET, launch and DELETE, and the owner’s campaign is untouched', async () => {
    const owner = await newCustomer(stack, 'twilio');
    const stranger = await newCustomer(stack, 'telnyx');
    const res = await createBatch(owner, { recipients: [{ phone: recipientNumber() }], schedule_type: 'schedule', scheduled_date: FAR_DATE });
    expect(res.status, res.text).toBe(201);
    const id = res.body.campaign_id as string;
    const before = await getBatch(owner, id);

    for (const [who, campaign] of [
      [owner, 'batch_doesnotexist000000000'],
      [stranger, id],
    ] as const) {
      expectApiError(await getBatch(who, campaign), 404, 'not_found', 'campaign_not_found');
      expectApiError(await launch(who, campaign), 404, 'not_found', 'campaign_not_found');
      expectApiError(await cancel(who, campaign), 404, 'not_found', 'campaign_not_found');
    }
    expect((await listBatches(stranger)).body.count).toBe(0);
    const after = await getBatch(owner, id);
    expect(after.body).toEqual(before.body);
    expect(after.body.status).toBe('scheduled');
  }, TEST_MS);
});

describe.each<Provider>(['twilio', 'telnyx'])('launching and cancelling on carrier %s', (provider) => {
  it('launch of a running campaign is campaign_already_running; launch or cancel of a finished one is campaign_already_done', async () => {
    const c = await newCustomer(stack, provider);

    // Scheduled, launched once (running: its window is closed, so it dials nobody), then launched again.
    const scheduledRes = await createBatch(c, { recipients: [{ phone: recipientNumber() }], schedule_type: 'schedule', scheduled_date: FAR_DATE, ...closedWindow() });
    expect(scheduledRes.status, scheduledRes.text).toBe(201);
    expect(scheduledRes.body.status).toBe('scheduled');
    const sid = scheduledRes.body.campaign_id as string;
    const launched = await launch(c, sid);
    expect(launched.status, launched.text).toBe(200);
    expect(launched.body, launched.text).toEqual({ campaign_id: sid, status: 'running' });
    const running = await batchWhere(c, sid, (r) => r.status === 'running', 'the launched campaign to run');
    expect(running.started_at).not.toBeNull();
    expectApiError(await launch(c, sid), 400, 'invalid_request', 'campaign_already_running');

    // Created running (schedule_type now).
    const nowRes = await createBatch(c, { recipients: [{ phone: recipientNumber() }], ...closedWindow() });
    expect(nowRes.status, nowRes.text).toBe(201);
    expect(nowRes.body.status).toBe('running');
    expectApiError(await launch(c, nowRes.body.campaign_id), 400, 'invalid_request', 'campaign_already_running');

    // Cancelled: finished.
    const cancelled = await cancel(c, sid);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body, cancelled.text).toEqual({ campaign_id: sid, cancelled: true, cancelled_count: 1 });
    expectApiError(await launch(c, sid), 400, 'invalid_request', 'campaign_already_done');
    expectApiError(await cancel(c, sid), 400, 'invalid_request', 'campaign_already_done');
    const afterCancel = await getBatch(c, sid);
    expect(afterCancel.body, afterCancel.text).toMatchObject({ status: 'cancelled', cancelled_count: 1, pending_count: 0 });

    // Completed: every far end busy.
    const numbers = [recipientNumber(), recipientNumber()];
    for (const n of numbers) setScenario(provider, n, 'busy');
    const doneRes = await createBatch(c, { recipients: numbers.map((phone) => ({ phone })) });
    expect(doneRes.status, doneRes.text).toBe(201);
    const did = doneRes.body.campaign_id as string;
    const completed = await batchWhere(c, did, (r) => r.status === 'completed', 'the campaign to complete');
    expectApiError(await launch(c, did), 400, 'invalid_request', 'campaign_already_done');
    expectApiError(await cancel(c, did), 400, 'invalid_request', 'campaign_already_done');
    // Refused, so nothing changed: not one more dial, the same record.
    await sleep(500);
    expect(dialsTo(stack, provider, numbers)).toBe(2);
    expect((await getBatch(c, did)).body).toEqual(completed);

    await cancel(c, nowRes.body.campaign_id);
  }, TEST_MS);

  // ---- 2. Launch failure --------------------------------------------------------------

  it('a campaign whose from_number lost its carrier credentials before launch fails with campaign_launch_failed and dials nobody', async () => {
    const c = await newCustomer(stack, provider);
    const numbers = [recipientNumber(), recipientNumber(), recipientNumber()];
    const res = await createBatch(c, { recipients: numbers.map((phone) => ({ phone })), schedule_type: 'schedule', scheduled_date: FAR_DATE });
    expect(res.status, res.text).toBe(201);
    expect(res.body.status).toBe('scheduled');
    const id = res.body.campaign_id as string;

    // The number, and with it its carrier credentials, leaves the account while the campaign waits.
    const removed = await stack.server.request('DELETE', `/v1/phone-numbers/${enc(c.number)}`, { key: c.key });
    expect(removed.status, removed.text).toBe(200);

    // It passed validation at creation; it is launched, and cannot place a call.
    const launched = await launch(c, id);
    expect(launched.status, launched.text).toBe(200);
    const failed = await batchWhere(c, id, (r) => r.status === 'failed', 'the campaign to fail');
    expect(failed.failure_reason).toMatch(/^campaign_launch_failed/);
    expect(failed.failure_reason).toContain(c.number);
    expect(failed.completed_at).not.toBeNull();
    expect(failed).toMatchObject({ valid_count: 3, in_progress_count: 0, completed_count: 0, voicemail_count: 0 });
    expectCountsAddUp(failed);

    // Nothing reached the carrier, and nothing will.
    await sleep(1500);
    expect(dialsTo(stack, provider, numbers)).toBe(0);
    expect(await campaignCalls(c, id)).toEqual([]);
    expectApiError(await launch(c, id), 400, 'invalid_request', 'campaign_already_done');
    expectApiError(await cancel(c, id), 400, 'invalid_request', 'campaign_already_done');
    expect((await getBatch(c, id)).body.status).toBe('failed');
  }, TEST_MS);

  // ---- 3. Cancellation while running --------------------------------------------------

  it('a cancel while calls are connected: no new dial, the connected calls finish when the callee hangs up, the counts add up', async () => {
    const c = await newCustomer(stack, provider);
    const numbers = Array.from({ length: 5 }, recipientNumber);
    // Everyone answers and stays on the line until they hang up.
    for (const n of numbers) setScenario(provider, n, 'answer');
    const res = await createBatch(c, { recipients: numbers.map((phone) => ({ phone, variables: { first_name: 'Sam' } })), max_concurrent: 2 });
    expect(res.status, res.text).toBe(201);
    const id = res.body.campaign_id as string;

    // Two calls up (max_concurrent), three recipients waiting.
    const live = await eventually(async () => {
      const calls = await campaignCalls(c, id);
      if (calls.length !== 2) return undefined;
      const records = await Promise.all(calls.map((x) => stack.server.request('GET', `/v1/calls/${enc(x.call_id)}`, { key: c.key })));
      return records.every((r) => r.body.call_status === 'in-progress') ? records.map((r) => r.body) : undefined;
      // Three reads a round: slow enough to stay under the read rate limit however long it takes.
    }, SETTLE_MS, 'two connected calls', 3 * API_POLL_MS);
    const connected = live.map((x) => x.to_number as string);
    const waiting = numbers.filter((n) => !connected.includes(n));
    expect(waiting).toHaveLength(3);
    const running = await getBatch(c, id);
    expect(running.body, running.text).toMatchObject({ status: 'running', in_progress_count: 2, pending_count: 3 });

    const cancelled = await cancel(c, id);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body, cancelled.text).toEqual({ campaign_id: id, cancelled: true, cancelled_count: 3 });
    const afterCancel = await getBatch(c, id);
    expect(afterCancel.body, afterCancel.text).toMatchObject({ status: 'cancelled', cancelled_count: 3, pending_count: 0, in_progress_count: 2 });
    expectCountsAddUp(afterCancel.body);

    // No new dial reaches the carrier…
    await sleep(2000);
    expect(dialsTo(stack, provider, numbers)).toBe(2);
    expect(dialsTo(stack, provider, waiting)).toBe(0);

    // …the connected calls go on, and finish normally when the callee hangs up…
    for (const to of connected) await calleeHangsUp(provider, to);
    for (const call of live) {
      const ended = await callReaches(stack.server, c.key, call.call_id, (s) => s !== 'in-progress', SETTLE_MS);
      expect(ended).toMatchObject({ call_status: 'completed', ended_reason: 'callee_hangup', campaign_id: id });
    }

    // …the slots they freed are not used for the recipients never called…
    await sleep(2000);
    expect(dialsTo(stack, provider, waiting)).toBe(0);
    expect(dialsTo(stack, provider, numbers)).toBe(2);
    expect(await campaignCalls(c, id)).toHaveLength(2);

    // …and the record counts them as they ended.
    const final = await batchWhere(c, id, (r) => r.in_progress_count === 0, 'the connected calls to be counted');
    expect(final).toMatchObject({ status: 'cancelled', valid_count: 5, pending_count: 0, in_progress_count: 0, completed_count: 2, failed_count: 0, cancelled_count: 3 });
    expectCountsAddUp(final);
    expect(final.completed_at).not.toBeNull();
  }, TEST_MS);

  // ---- 4. Its calls: listed by campaign, webhooks with campaign_id ----------------------

  it('GET /v1/calls?campaign_id= lists only the campaign’s calls, and call.started and call.completed carry campaign_id', async () => {
    const c = await newCustomer(stack, provider);
    const hook = `/hooks/${provider}/${c.agentId}`;
    const put = await stack.server.request('PUT', `/v1/integrations/webhook/number/${enc(c.number)}`, { key: c.key, body: { url: receiver.url(hook) } });
    expect(put.status, put.text).toBe(200);

    const [answers, busy, other, single] = [recipientNumber(), recipientNumber(), recipientNumber(), recipientNumber()];
    setScenario(provider, answers, 'answer');
    for (const n of [busy, other, single]) setScenario(provider, n, 'busy');
    const first = await createBatch(c, { recipients: [{ phone: answers, variables: { first_name: 'Ada' } }, { phone: busy }] });
    expect(first.status, first.text).toBe(201);
    const id = first.body.campaign_id as string;
    const second = await createBatch(c, { recipients: [{ phone: other }] });
    expect(second.status, second.text).toBe(201);
    const otherId = second.body.campaign_id as string;
    const plain = await dial(stack.server, c, single);

    // The answered call: connected, then the callee hangs up.
    const connected = await eventually(async () => {
      const calls = await campaignCalls(c, id);
      const call = calls.find((x) => x.to_number === answers);
      if (!call) return undefined;
      const record = await stack.server.request('GET', `/v1/calls/${enc(call.call_id)}`, { key: c.key });
      return record.body.call_status === 'in-progress' ? record.body : undefined;
    }, SETTLE_MS, 'the answered call', 2 * API_POLL_MS);
    await receiver.waitFor(hook, 1, SETTLE_MS);
    await calleeHangsUp(provider, answers);
    await batchWhere(c, id, (r) => r.status === 'completed', 'the campaign to complete');
    await batchWhere(c, otherId, (r) => r.status === 'completed', 'the other campaign to complete');
    await callReaches(stack.server, c.key, plain.call_id, 'busy', SETTLE_MS);

    const calls = await campaignCalls(c, id);
    expect(calls.map((x) => x.to_number).sort()).toEqual([answers, busy].sort());
    expect((await campaignCalls(c, otherId)).map((x) => x.to_number)).toEqual([other]);
    expect(await campaignCalls(c, 'batch_doesnotexist000000000')).toEqual([]);
    const all = await stack.server.request('GET', '/v1/calls?limit=100', { key: c.key });
    expect(all.body.count).toBe(4);
    for (const call of calls) expect((await stack.server.request('GET', `/v1/calls/${enc(call.call_id)}`, { key: c.key })).body.campaign_id).toBe(id);
    expect((await stack.server.request('GET', `/v1/calls/${enc(plain.call_id)}`, { key: c.key })).body.campaign_id).toBeNull();

    // Webhooks: call.started for the call that connected, call.completed for every call.
    const events = await eventually(() => {
      const got = receiver.to(hook).map((r) => JSON.parse(r.body));
      return got.filter((b) => b.event === 'call.completed').length >= 4 ? got : undefined;
    }, SETTLE_MS, 'call.completed of all four calls', API_POLL_MS);
    const campaignOf = (event: string, to: string) => events.filter((b) => b.event === event && b.to === to).map((b) => b.campaign_id);
    expect(campaignOf('call.started', answers)).toEqual([id]);
    expect(campaignOf('call.completed', answers)).toEqual([id]);
    expect(campaignOf('call.completed', busy)).toEqual([id]);
    expect(campaignOf('call.completed', other)).toEqual([otherId]);
    expect(campaignOf('call.completed', single)).toEqual([null]);
    expect(events.find((b) => b.event === 'call.started' && b.to === answers)).toMatchObject({ call_id: connected.call_id, direction: 'outbound', from: c.number });
  }, TEST_MS);
});

describe('GET /v1/calls/batch', () => {
  it('lists the account’s campaigns newest first, paginated with limit and offset, with a total count', async () => {
    const c = await newCustomer(stack, 'twilio');
    const ids: string[] = [];
    for (const name of ['first', 'second', 'third', 'fourth']) {
      const res = await createBatch(c, { name, recipients: [{ phone: recipientNumber() }], schedule_type: 'schedule', scheduled_date: FAR_DATE });
      expect(res.status, res.text).toBe(201);
      ids.push(res.body.campaign_id);
    }
    const newestFirst = [...ids].reverse();

    const all = await listBatches(c);
    expect(all.status, all.text).toBe(200);
    expect(all.body).toMatchObject({ count: 4, limit: 25, offset: 0 });
    expect(all.body.campaigns.map((x: any) => x.campaign_id)).toEqual(newestFirst);
    expect(all.body.campaigns.map((x: any) => x.name)).toEqual(['fourth', 'third', 'second', 'first']);
    expect(all.body.campaigns[0]).toMatchObject({ status: 'scheduled', schedule_type: 'schedule', scheduled_date: FAR_DATE, valid_count: 1, pending_count: 1, agent_id: c.agentId, from_number: c.number });

    const page1 = await listBatches(c, '?limit=3');
    expect(page1.body).toMatchObject({ count: 4, limit: 3, offset: 0 });
    expect(page1.body.campaigns.map((x: any) => x.campaign_id)).toEqual(newestFirst.slice(0, 3));
    const page2 = await listBatches(c, '?limit=3&offset=3');
    expect(page2.body).toMatchObject({ count: 4, limit: 3, offset: 3 });
    expect(page2.body.campaigns.map((x: any) => x.campaign_id)).toEqual(newestFirst.slice(3));
    const middle = await listBatches(c, '?limit=2&offset=1');
    expect(middle.body.campaigns.map((x: any) => x.campaign_id)).toEqual(newestFirst.slice(1, 3));
    const past = await listBatches(c, '?offset=10');
    expect(past.body).toMatchObject({ campaigns: [], count: 4 });
    // contract.md 1: above 100 is clamped; below 1, not a number or a negative offset is invalid_request.
    expect((await listBatches(c, '?limit=500')).body.limit).toBe(100);
    for (const q of ['?limit=0', '?limit=abc', '?offset=-1']) expectApiError(await listBatches(c, q), 400, 'invalid_request', 'invalid_request');

    // Another account sees none of them.
    const stranger = await newCustomer(stack, 'telnyx');
    expect((await listBatches(stranger)).body).toMatchObject({ campaigns: [], count: 0 });
    for (const id of ids) await cancel(c, id);
  }, TEST_MS);
});
