// Batch campaigns and time (issue 20, acceptance 1), end to end: the real server over
// real HTTP, both carriers' simulators, the whole service (durable scheduler included)
// reading time from a clock the test moves. The simulators run on the same clock, so
// their record of when each call was created and ended is on the service's time line
// and is the judge of every claim below.
//   1. A window closing mid-campaign and reopening: calls up at the close go on, no new
//      dial reaches the carrier while it is closed, the campaign stays `running` (contract.md
//      7: a running campaign whose window closes stops dialing until it reopens); at the
//      opening dialing resumes at once, on the window's durable deadline (nothing polls a
//      paused campaign: no placing or retry is pending while it is paused, so only that
//      deadline can wake it), and the campaign completes with every recipient dialed
//      exactly once.
//      Both carriers with a window closed one minute a day; carrier A also over a
//      weekend (Friday 17:00 → Monday 09:00, window_days mon–fri, America/New_York).
//   2. A scheduled campaign (schedule_type `schedule`, scheduled_date) stays `scheduled`
//      and dials nobody before its date, even inside its window; once the date is due but
//      the window is closed it is still `scheduled` (api.md's batch table) and dials nobody;
//      it launches at its window's opening on its date. POST …/launch starts a scheduled
//      campaign now (then campaign_already_running, campaign_already_done).
//      KNOWN FAILURE while the implementation does otherwise: the campaign turns `running`
//      (with started_at) as soon as its date begins, before its window opens; the test
//      checks that last, after everything else (see the comment there).
//   3. Inbound calls while a campaign runs flat out: on an account whose limit is 3 the
//      campaign (max_concurrent 5) never has more than min(limit - 1, max_concurrent) = 2
//      calls at the carrier, and an inbound call is answered by the agent (media stream),
//      not refused busy; with one inbound call up, a campaign call that ends leaves its
//      slot free, and a second inbound call is answered too.
//   4. max_concurrent is never exceeded in any of these (peak of the simulator's record).
// Carrier B's simulator signs its events with the real time and the service refuses an
// event more than 300 s off its own clock, so on carrier B the service's clock stays
// within a few minutes of real time: the close-and-reopen test uses a window closed for
// one minute a day, and the scheduled test starts the clock a day early and lands its
// window's opening a minute or two after real time. Carrier A has no such limit and also
// runs the weekend case far in the future.
import { describe, expect, it } from 'vitest';
import { nextNumber } from './helpers/fixtures.ts';
import { API_POLL_MS, callReaches, eventually, newCustomer, startCallStack, type CallStack, type Customer, type Provider } from './helpers/calls.ts';
import { campaignLegs, carrierLegs, dialsTo, peakConcurrent } from './helpers/campaigns.ts';

const MINUTE = 60_000;
const DAY = 86_400_000;
/** A resume this long after the window's opening would still be "at once"; a 60 s poll could not explain it. */
const PROMPT_MS = 20_000;
/** Long enough for several scheduler looks (it looks at least every second) and slot retries (1 s). */
const QUIET_MS = 3_000;
const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The service's and the simulators' clock: real time plus an offset the test moves forward. */
class TestClock {
  private offset: number;
  constructor(startAt: number = Date.now()) {
    this.offset = startAt - Date.now();
  }
  readonly now = (): number => Date.now() + this.offset;
  /** Moves the clock forward to `at` (it keeps running from there). */
  set(at: number): void {
    if (at <= this.now()) throw new Error(`the test clock only moves forward: ${new Date(at).toISOString()} is not after ${new Date(this.now()).toISOString()}`);
    this.offset = at - Date.now();
  }
}

/** Simulators and server on one clock (the simulators' clock injected too). */
function startStack(clock: TestClock): Promise<CallStack> {
  // The scheduler's "check every 60 seconds" of api.md: only the durable deadlines can make anything happen sooner.
  return startCallStack({}, 60, { clock: clock.now }, { now: clock.now });
}

async function withStack(clock: TestClock, fn: (stack: CallStack) => Promise<void>): Promise<void> {
  const stack = await startStack(clock);
  try {
    await fn(stack);
  } finally {
    await stack.close();
  }
}

let seq = 0;
/** Real numbers by libphonenumber-js's rules (San Francisco's 555 exchange), unique in this file. */
const recipients = (n: number): string[] => Array.from({ length: n }, () => `+1415555${String(2000 + ++seq)}`);

// ---- local time in a zone, computed here with Intl, independently of machines/calling-window.ts ----

function local(at: number, zone: string): { date: string; minute: number; weekday: string } {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', weekday: 'short' }).formatToParts(at);
  const get = (t: string) => parts.find((p) => p.type === t)!.value;
  return { date: `${get('year')}-${get('month')}-${get('day')}`, minute: Number(get('hour')) * 60 + Number(get('minute')), weekday: get('weekday').toLowerCase() };
}
/** The first whole minute at or after `at` (zones' offsets are whole minutes, so it is a local minute's start too). */
const ceilMinute = (at: number): number => Math.ceil(at / MINUTE) * MINUTE;

// ---- what the simulators recorded (helpers/campaigns.ts) ----

/** The far end hangs up. */
async function farEndHangsUp(stack: CallStack, provider: Provider, id: string): Promise<void> {
  if (provider === 'twilio') await stack.sims.twilio.hangup(id);
  else await stack.sims.telnyx.hangup(id);
}

// ---- the API ----

async function createBatch(stack: CallStack, c: Customer, body: Record<string, unknown>): Promise<string> {
  const res = await stack.server.request('POST', '/v1/calls/batch', { key: c.key, body: { agent_id: c.agentId, from_number: c.number, prompt: 'Remind {first_name} of tomorrow’s appointment.', ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body.campaign_id as string;
}
async function getBatch(stack: CallStack, c: Customer, id: string): Promise<any> {
  const res = await stack.server.request('GET', `/v1/calls/batch/${id}`, { key: c.key });
  expect(res.status, res.text).toBe(200);
  return res.body;
}
/** Polls the campaign until `pred` holds; returns the record. */
const batchWhen = (stack: CallStack, c: Customer, id: string, pred: (b: any) => boolean, what: string, timeoutMs = 30_000): Promise<any> =>
  eventually(async () => {
    const b = await getBatch(stack, c, id);
    return pred(b) ? b : undefined;
  }, timeoutMs, what, API_POLL_MS);

/** Hangs up every campaign call as soon as it is answered, until the campaign completes; returns the record. */
const hangUpUntilCompleted = (stack: CallStack, provider: Provider, c: Customer, id: string, numbers: string[], timeoutMs = 90_000): Promise<any> =>
  eventually(async () => {
    for (const leg of campaignLegs(stack, provider, numbers)) if (leg.up) await farEndHangsUp(stack, provider, leg.id);
    const b = await getBatch(stack, c, id);
    return b.status === 'completed' ? b : undefined;
  }, timeoutMs, 'the campaign to complete', API_POLL_MS);

/** The service's own records of the campaign's calls (GET /v1/calls?campaign_id=, then each record). */
async function callRecords(stack: CallStack, c: Customer, id: string): Promise<any[]> {
  const listed = await stack.server.request('GET', `/v1/calls?campaign_id=${id}&limit=100`, { key: c.key });
  expect(listed.status, listed.text).toBe(200);
  const out = [];
  for (const call of listed.body.calls) {
    const r = await stack.server.request('GET', `/v1/calls/${encodeURIComponent(call.call_id)}`, { key: c.key });
    expect(r.status, r.text).toBe(200);
    out.push(r.body);
  }
  return out;
}

/** Every recipient dialed exactly once (by the carrier's record of dial requests and of calls). */
function expectEachDialedOnce(stack: CallStack, provider: Provider, numbers: string[]): void {
  for (const to of numbers) expect(dialsTo(stack, provider, [to]), `dial requests to ${to}`).toBe(1);
  expect(campaignLegs(stack, provider, numbers).map((l) => l.to).sort()).toEqual([...numbers].sort());
}

// ---- 1. a window closing mid-campaign and reopening ----

interface CloseAndReopen {
  /** Where the service's clock starts. */
  startAt: number;
  /** The window, as the request gives it. */
  window: Record<string, unknown>;
  /** The instant the window closes (after the campaign is under way) and the one it opens again. */
  closesAt: number;
  opensAt: number;
  /** Instants visited while closed (each must be closed too): still no dial. */
  visits?: number[];
}

async function closeAndReopen(provider: Provider, plan: CloseAndReopen): Promise<void> {
  const { startAt, window, closesAt, opensAt, visits = [] } = plan;
  const clock = new TestClock(startAt);
  await withStack(clock, async (stack) => {
    const c = await newCustomer(stack, provider);
    const numbers = recipients(6);
    // Every callee answers and stays on the line until the test hangs up for them.
    const id = await createBatch(stack, c, { name: 'window', recipients: numbers.map((phone) => ({ phone, variables: { first_name: 'Dana' } })), max_concurrent: 2, ...window });
    const upNow = () => campaignLegs(stack, provider, numbers).filter((l) => l.up);

    // Open now: two callees on the line, and no third while both are up.
    await eventually(() => (upNow().length >= 2 ? true : undefined), 30_000, 'two campaign calls answered');
    await sleep(1500);
    expect(dialsTo(stack, provider, numbers), 'calls up at once with max_concurrent 2').toBe(2);
    await farEndHangsUp(stack, provider, upNow()[0]!.id);
    await eventually(() => (upNow().length === 2 && campaignLegs(stack, provider, numbers).length === 3 ? true : undefined), 30_000, 'the third call answered');
    expect(dialsTo(stack, provider, numbers)).toBe(3);
    const upAtClose = upNow().map((l) => l.id);

    // The window closes with two calls up.
    if (clock.now() >= closesAt - 1000) throw new Error('the campaign took too long to get under way: the window closed before the test moved the clock');
    clock.set(closesAt + 3000);
    await sleep(QUIET_MS);
    // Calls already up go on; nothing new is dialed; the campaign is still running.
    expect(upNow().map((l) => l.id).sort()).toEqual([...upAtClose].sort());
    expect(dialsTo(stack, provider, numbers)).toBe(3);
    expect(await getBatch(stack, c, id)).toMatchObject({ status: 'running', pending_count: 3, in_progress_count: 2, completed_count: 1 });

    // Both end while it is closed: their slots free, and still no new dial.
    for (const legId of upAtClose) await farEndHangsUp(stack, provider, legId);
    await batchWhen(stack, c, id, (b) => b.completed_count === 3, 'the two calls counted as ended');
    await sleep(QUIET_MS);
    expect(dialsTo(stack, provider, numbers), 'dials while the window is closed').toBe(3);
    expect(await getBatch(stack, c, id)).toMatchObject({ status: 'running', pending_count: 3, in_progress_count: 0, completed_count: 3, completed_at: null });
    for (const at of visits) {
      clock.set(at);
      await sleep(QUIET_MS);
      expect(dialsTo(stack, provider, numbers), `dials at ${new Date(at).toISOString()}`).toBe(3);
      expect((await getBatch(stack, c, id)).status).toBe('running');
    }

    // Two seconds before the opening; at the opening the durable deadline resumes dialing.
    clock.set(opensAt - 2000);
    const resumed = await eventually(() => {
      const later = campaignLegs(stack, provider, numbers).filter((l) => l.createdAt >= closesAt);
      return later.length > 0 ? Math.min(...later.map((l) => l.createdAt)) : undefined;
    }, 40_000, 'dialing to resume');
    expect(resumed).toBeGreaterThanOrEqual(opensAt);
    expect(resumed - opensAt, 'the first dial after the opening came this long after it').toBeLessThan(PROMPT_MS);

    const done = await hangUpUntilCompleted(stack, provider, c, id, numbers);
    expect(done).toMatchObject({ status: 'completed', valid_count: 6, pending_count: 0, in_progress_count: 0, completed_count: 6, failed_count: 0, cancelled_count: 0 });
    expectEachDialedOnce(stack, provider, numbers);
    const all = campaignLegs(stack, provider, numbers);
    // No call reached the carrier while the window was closed, by the carrier's record and the service's.
    expect(all.filter((l) => l.createdAt >= closesAt && l.createdAt < opensAt)).toEqual([]);
    const records = await callRecords(stack, c, id);
    expect(records).toHaveLength(6);
    for (const r of records) {
      const created = Date.parse(r.created_at);
      expect(created < closesAt || created >= opensAt, `call ${r.call_id} created at ${r.created_at}`).toBe(true);
      expect(r).toMatchObject({ campaign_id: id, call_status: 'completed' });
    }
    expect(peakConcurrent(all)).toBeLessThanOrEqual(2);
  });
}

describe.each<Provider>(['twilio', 'telnyx'])('a calling window closing mid-campaign on carrier %s', (provider) => {
  it('stops new dials while closed (calls up go on, status running) and resumes at the opening, each recipient dialed once, never over max_concurrent', async () => {
    await closeAndReopen(provider, (() => {
      const now = Date.now();
      // Closed for one minute a day: [m, m + 1) local, m at least 90 s away (time for the first calls).
      const zone = 'America/New_York';
      const closesAt = ceilMinute(now + 90_000);
      const m = local(closesAt, zone).minute;
      return {
        startAt: now,
        window: { window_start_minutes: (m + 1) % 1440, window_end_minutes: m, window_days: WEEKDAYS, timezone: zone },
        closesAt,
        opensAt: closesAt + MINUTE,
      };
    })());
  }, 180_000);
});

describe('a calling window closing on Friday evening, carrier twilio', () => {
  // Carrier A only: its simulator's webhooks carry no timestamp, so the clock may move by days.
  it('pauses over the weekend (window_days mon–fri) and resumes at 09:00 on Monday', async () => {
    // 2027-06-11 is a Friday; New York is on EDT (UTC-4).
    const friday1700 = Date.parse('2027-06-11T21:00:00Z');
    const monday0900 = Date.parse('2027-06-14T13:00:00Z');
    await closeAndReopen('twilio', {
      startAt: friday1700 - 2 * MINUTE,
      window: { window_start_minutes: 540, window_end_minutes: 1020, window_days: ['mon', 'tue', 'wed', 'thu', 'fri'], timezone: 'America/New_York' },
      closesAt: friday1700,
      opensAt: monday0900,
      visits: [
        Date.parse('2027-06-12T16:00:00Z'), // Saturday 12:00: inside the hours, not a window day
        Date.parse('2027-06-14T12:50:00Z'), // Monday 08:50
      ],
    });
  }, 180_000);
});

// ---- 2. scheduled campaigns ----

describe.each<Provider>(['twilio', 'telnyx'])('a scheduled campaign on carrier %s', (provider) => {
  it('stays scheduled and dials nobody before its window opens on its date, then launches at the opening', async () => {
    // The window opens a couple of minutes from now (real time), on today's date in a zone
    // where that is between 04:00 and 22:00 (room for a due-but-closed stretch before it).
    const opensAt = ceilMinute(Date.now() + 2 * MINUTE);
    const zone = ['America/New_York', 'Asia/Tokyo'].find((z) => local(opensAt, z).minute >= 240 && local(opensAt, z).minute <= 1320)!;
    const { date, minute } = local(opensAt, zone);
    // The clock starts a day early, just after yesterday's opening: the window is open, the date not due.
    const clock = new TestClock(opensAt - DAY + 30_000);
    await withStack(clock, async (stack) => {
      const c = await newCustomer(stack, provider);
      const numbers = recipients(4);
      // Every far end is busy: each call ends at once, so the campaign completes by itself.
      for (const n of numbers) provider === 'twilio' ? stack.sims.twilio.scenario(n, 'busy') : stack.sims.telnyx.setScenario(n, 'busy');
      const res = await stack.server.request('POST', '/v1/calls/batch', {
        key: c.key,
        body: {
          agent_id: c.agentId,
          from_number: c.number,
          prompt: 'Remind them of tomorrow’s appointment.',
          recipients: numbers.map((phone) => ({ phone })),
          schedule_type: 'schedule',
          scheduled_date: date,
          window_start_minutes: minute,
          window_end_minutes: Math.min(minute + 60, 1440),
          timezone: zone,
          max_concurrent: 2,
        },
      });
      expect(res.status, res.text).toBe(201);
      expect(res.body).toMatchObject({ status: 'scheduled', valid_count: 4, invalid_count: 0 });
      const id = res.body.campaign_id as string;

      await sleep(QUIET_MS);
      expect(dialsTo(stack, provider, numbers)).toBe(0);
      expect(await getBatch(stack, c, id)).toMatchObject({ status: 'scheduled', schedule_type: 'schedule', scheduled_date: date, started_at: null, pending_count: 4, timezone: zone });

      // The date has begun (about 01:30 local), the window is still closed: nobody is dialed.
      clock.set(opensAt - (minute - 90) * MINUTE);
      await sleep(QUIET_MS);
      expect(dialsTo(stack, provider, numbers)).toBe(0);
      const dueButClosed = await getBatch(stack, c, id);
      expect(dueButClosed).toMatchObject({ pending_count: 4, in_progress_count: 0 });

      // At the window's opening it launches, at once.
      clock.set(opensAt - 2000);
      const first = await eventually(() => {
        const made = campaignLegs(stack, provider, numbers);
        return made.length > 0 ? Math.min(...made.map((l) => l.createdAt)) : undefined;
      }, 40_000, 'the first dial');
      expect(first).toBeGreaterThanOrEqual(opensAt);
      expect(first - opensAt, 'the first dial came this long after the opening').toBeLessThan(PROMPT_MS);
      const done = await batchWhen(stack, c, id, (b) => b.status === 'completed', 'the campaign to complete', 60_000);
      expect(done).toMatchObject({ pending_count: 0, in_progress_count: 0, failed_count: 4, completed_count: 0 });
      expectEachDialedOnce(stack, provider, numbers);
      expect(peakConcurrent(campaignLegs(stack, provider, numbers))).toBeLessThanOrEqual(2);

      // api.md, "Batch campaign status": `scheduled` --scheduler check, due but outside the
      // window--> `scheduled`; it is launched (and runs) only once the date is due and the
      // window open. Checked last so that everything above is checked whatever happens here.
      // KNOWN FAILURE (reported with this file): machines/batch-campaign.ts takes `DUE` straight
      // to `running` (paused outside the window), so between the date's midnight and the
      // window's opening the API says `running` with started_at at the midnight.
      expect(dueButClosed.status, 'status once scheduled_date is due but before the window opens').toBe('scheduled');
      expect(dueButClosed.started_at, 'started_at once scheduled_date is due but before the window opens').toBeNull();
      expect(Date.parse(done.started_at), 'started_at: the window opening that launched it').toBeGreaterThanOrEqual(opensAt - 1000);
    });
  }, 180_000);

  it('POST …/launch starts a scheduled campaign now; then campaign_already_running, and campaign_already_done once it completed', async () => {
    const clock = new TestClock();
    await withStack(clock, async (stack) => {
      const c = await newCustomer(stack, provider);
      const numbers = recipients(3);
      const later = local(Date.now() + 60 * DAY, 'Europe/London').date;
      const id = await createBatch(stack, c, { recipients: numbers.map((phone) => ({ phone, variables: { first_name: 'Sam' } })), schedule_type: 'schedule', scheduled_date: later, timezone: 'Europe/London', max_concurrent: 2 });
      await sleep(QUIET_MS);
      expect(dialsTo(stack, provider, numbers)).toBe(0);
      expect(await getBatch(stack, c, id)).toMatchObject({ status: 'scheduled', scheduled_date: later, started_at: null });

      const launchedAt = clock.now();
      const launched = await stack.server.request('POST', `/v1/calls/batch/${id}/launch`, { key: c.key });
      expect(launched.status, launched.text).toBe(200);
      expect(launched.body).toEqual({ campaign_id: id, status: 'running' });
      await eventually(() => (campaignLegs(stack, provider, numbers).filter((l) => l.up).length >= 2 ? true : undefined), 30_000, 'two calls answered');
      await sleep(1500);
      expect(dialsTo(stack, provider, numbers), 'calls up at once with max_concurrent 2').toBe(2);
      expect(Math.min(...campaignLegs(stack, provider, numbers).map((l) => l.createdAt)) - launchedAt).toBeLessThan(PROMPT_MS);
      const running = await getBatch(stack, c, id);
      expect(running).toMatchObject({ status: 'running', in_progress_count: 2, pending_count: 1 });
      expect(Date.parse(running.started_at)).toBeGreaterThanOrEqual(launchedAt - 1000);

      const again = await stack.server.request('POST', `/v1/calls/batch/${id}/launch`, { key: c.key });
      expect(again.status, again.text).toBe(400);
      expect(again.body.error.code).toBe('campaign_already_running');

      const done = await hangUpUntilCompleted(stack, provider, c, id, numbers);
      expect(done).toMatchObject({ completed_count: 3, pending_count: 0, in_progress_count: 0 });
      expectEachDialedOnce(stack, provider, numbers);
      expect(peakConcurrent(campaignLegs(stack, provider, numbers))).toBeLessThanOrEqual(2);
      const after = await stack.server.request('POST', `/v1/calls/batch/${id}/launch`, { key: c.key });
      expect(after.status, after.text).toBe(400);
      expect(after.body.error.code).toBe('campaign_already_done');
    });
  }, 120_000);
});

// ---- 3. inbound calls while a campaign runs ----

/** A call from the far end to the customer's number, seen from the far end. */
async function ring(stack: CallStack, c: Customer): Promise<{ id: string; answer: () => string; hangup: () => Promise<unknown> }> {
  if (c.provider === 'twilio') {
    const call = await stack.sims.twilio.placeInboundCall({ from: nextNumber(), to: c.number });
    return { id: call.callSid, answer: () => call.twiml ?? '', hangup: () => call.hangup() };
  }
  const handle = await stack.sims.telnyx.placeInboundCall({ from: nextNumber(), to: c.number, apiKey: c.carrierAccount });
  return {
    id: handle.id,
    answer: () => handle.call.commands.map((cmd) => `${cmd.action}${cmd.body['cause'] ? `:${cmd.body['cause']}` : ''}`).join(','),
    hangup: () => handle.hangup(),
  };
}

/** The inbound call was answered by the agent: a media stream, not a busy refusal. */
async function expectAnswered(stack: CallStack, c: Customer, call: { id: string; answer: () => string }): Promise<void> {
  if (c.provider === 'twilio') {
    expect(call.answer()).toContain('<Connect><Stream');
    expect(call.answer()).not.toContain('<Reject');
  } else {
    await eventually(() => (call.answer().startsWith('answer') ? true : undefined), 10_000, `answer command (got ${call.answer()})`);
  }
  const record = await callReaches(stack.server, c.key, call.id, 'in-progress', 15_000);
  expect(record).toMatchObject({ direction: 'inbound', to_number: c.number, ended_reason: null });
}

describe.each<Provider>(['twilio', 'telnyx'])('inbound calls while a campaign runs on carrier %s', (provider) => {
  it('are answered: the campaign keeps one slot free (at most min(limit - 1, max_concurrent) calls), also when one of its calls ends', async () => {
    await withStack(new TestClock(), async (stack) => {
      const c = await newCustomer(stack, provider);
      // The operator's plan change (the admin command's repository call): a concurrency limit of 3.
      stack.server.storage.accounts.setPlan(c.accountId, 'enterprise', 3);
      expect((await stack.server.request('GET', '/v1/account', { key: c.key })).body).toMatchObject({ concurrency_limit: 3 });
      const numbers = recipients(6);
      const id = await createBatch(stack, c, { recipients: numbers.map((phone) => ({ phone, variables: { first_name: 'Ari' } })), max_concurrent: 5 });
      const upNow = () => campaignLegs(stack, provider, numbers).filter((l) => l.up);

      // Flat out: two calls (limit 3 less the slot kept for inbound), not three, not five.
      await eventually(() => (upNow().length >= 2 ? true : undefined), 30_000, 'two campaign calls answered');
      await sleep(QUIET_MS);
      expect(dialsTo(stack, provider, numbers), 'calls the campaign placed, flat out, on a limit of 3').toBe(2);
      expect(await getBatch(stack, c, id)).toMatchObject({ status: 'running', in_progress_count: 2, pending_count: 4 });

      const first = await ring(stack, c);
      await expectAnswered(stack, c, first);

      // One campaign call ends while the inbound call is up: the freed slot is the account's
      // last one, so the campaign leaves it, and a second inbound call is answered too.
      await farEndHangsUp(stack, provider, upNow()[0]!.id);
      await batchWhen(stack, c, id, (b) => b.completed_count === 1, 'the ended call counted');
      await sleep(QUIET_MS);
      expect(dialsTo(stack, provider, numbers), 'calls the campaign placed with an inbound call up').toBe(2);
      expect(await getBatch(stack, c, id)).toMatchObject({ in_progress_count: 1, pending_count: 4 });
      const second = await ring(stack, c);
      await expectAnswered(stack, c, second);

      // The callers hang up: the campaign fills its two slots again and runs to its end.
      for (const call of [first, second]) {
        await call.hangup();
        expect(await callReaches(stack.server, c.key, call.id, 'completed', 15_000)).toMatchObject({ ended_reason: 'caller_hangup' });
      }
      await eventually(() => (upNow().length === 2 ? true : undefined), 30_000, 'the campaign back at two calls');
      const done = await hangUpUntilCompleted(stack, provider, c, id, numbers);
      expect(done).toMatchObject({ completed_count: 6, pending_count: 0, in_progress_count: 0, failed_count: 0 });
      expectEachDialedOnce(stack, provider, numbers);

      const all = carrierLegs(stack, provider);
      expect(all.filter((l) => l.direction === 'inbound')).toHaveLength(2);
      expect(peakConcurrent(campaignLegs(stack, provider, numbers))).toBe(2);
      expect(peakConcurrent(all)).toBeLessThanOrEqual(3);
      // Nobody was refused busy: no call of the account ended for the concurrency limit.
      const listed = await stack.server.request('GET', '/v1/calls?limit=100', { key: c.key });
      expect(listed.body.calls.filter((x: any) => x.ended_reason === 'concurrency_limit')).toEqual([]);
    });
  }, 180_000);
});
