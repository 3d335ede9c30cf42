// Acceptance test 4 of issue 20, the campaign crash test: one batch campaign of
// CAMPAIGN_CRASH_RECIPIENTS (1,000) valid recipients, plus a few invalid rows it skips,
// against carrier A's simulator, while the service (a real child process on one port and
// one data folder, as `npm start` runs it) is SIGKILLed CAMPAIGN_CRASH_KILLS times (at
// least 20) at seeded random points and started again each time on the same DATA_DIR.
// The points are random, not quiet ones: a kill lands after a random number of new dials
// (0 to KILL_AFTER_DIALS) have reached the carrier since the restart, then a random
// 0-100 ms more, so it falls among placings, commits and carrier answers; one kill in five
// lands instead at a random moment of the boot itself (restoring the campaign and its
// calls, resuming their intents). Far ends end their calls quickly: busy, failed,
// no-answer after a short ring, refused at the dial, or answered and hung up by the
// callee within half a second, so the campaign's rate, not call length, sets the pace.
// The account's concurrency limit is raised with the admin command; max_concurrent is 20.
// Then the kills stop, the service is started once more and the campaign runs to its end,
// and:
//   (1) every valid recipient was dialed exactly once: the simulator received exactly one
//       dial request for its number (placed, or refused by the `reject` scenario). When
//       the process died after it committed a dial as sent and before the request left,
//       that call is reconciled with the carrier, found never placed and recorded so (not
//       redialed), and its recipient is given back to the campaign and dialed then, for
//       the first time. (The carrier cannot tell that dial from one it refused, so a
//       number it refuses may be asked for twice: refused twice, it rings no one.) No
//       invalid row and no other number was dialed;
//   (2) none skipped: every recipient row has its call (the call's row names the campaign
//       and the recipient's number), in an end state that matches what the carrier did
//       (answered → completed, anything else → failed); any other call of the recipient's
//       is one that never reached the carrier and says so;
//   (3) the campaign is `completed`, its counts add up (pending 0, in progress 0,
//       cancelled 0, completed + failed + voicemail = valid_count, completed = the calls
//       the carrier connected), started_at and completed_at set;
//   (4) never more than max_concurrent calls up at once at the carrier, across the kills;
//   (5) nothing left: no effect intent, no deadline, no unfinished actor snapshot, no slot
//       held or call queued; the service never died on its own.
// The seed fixes the plan (scenarios per number, kill points), not the interleaving with
// the service's own timing. It is printed at the start and with every failure.
//   CAMPAIGN_CRASH_SEED        the seed (default: random)
//   CAMPAIGN_CRASH_KILLS       SIGKILLs (default 20; never fewer than 20)
//   CAMPAIGN_CRASH_RECIPIENTS  valid recipients (default 1000)
//   CAMPAIGN_CRASH_CONCURRENT  the campaign's max_concurrent (default 20)
//   CAMPAIGN_CRASH_LOG         a file to append every service log line to
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { newCustomer, type CallStack, type Customer } from '../helpers/calls.ts';
import { peakConcurrent } from '../helpers/campaigns.ts';
import type { TwilioScenario } from '../sim/twilio-calls.ts';
import { seededStreams, startCrashRig, uniform, type CrashRig } from './crash-harness.ts';
import { remote, sleep } from './support.ts';

const envNumber = (name: string, fallback: number): number => {
  const v = Number(process.env[name] ?? fallback);
  return Number.isFinite(v) && v > 0 ? Math.floor(v) : fallback;
};
const SEED = process.env.CAMPAIGN_CRASH_SEED ? Number(process.env.CAMPAIGN_CRASH_SEED) >>> 0 : (Math.floor(Math.random() * 2 ** 32) >>> 0);
const KILLS = Math.max(20, envNumber('CAMPAIGN_CRASH_KILLS', 20));
const RECIPIENTS = envNumber('CAMPAIGN_CRASH_RECIPIENTS', 1000);
const MAX_CONCURRENT = envNumber('CAMPAIGN_CRASH_CONCURRENT', 20);
/** The account's limit: the campaign's max_concurrent stays the binding one (one slot is kept for inbound calls). */
const ACCOUNT_LIMIT = MAX_CONCURRENT + 30;
/** Rows that are not called (skip_invalid): malformed, unreal and repeated numbers. */
const INVALID_ROWS = 12;
/** A kill lands after 0..KILL_AFTER_DIALS new dials since the restart (a few dozen calls), then 0..KILL_JITTER_MS more. */
const KILL_AFTER_DIALS = 40;
const KILL_JITTER_MS: [number, number] = [0, 100];
/** …unless the dials do not come: then after this long anyway (a campaign waiting is a point too). */
const KILL_WAIT_CAP_MS = 4000;
/** One kill in five lands during the boot instead, uniformly within the first boot's duration. */
const BOOT_KILL_SHARE = 0.2;
/** Carrier A's pause between a call's steps (initiated, ringing, …): a busy call ends two steps after its dial. */
const SIM_STEP_MS = 20;
const SETTLE_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 300_000;
const FIRST_START_LIMIT_MS = 60_000;
const MIN_START_LIMIT_MS = 20_000;
const START_LIMIT_FACTOR = 10;
const LOG_FILE = process.env.CAMPAIGN_CRASH_LOG;
const FINAL = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);

console.log(`[campaign-crash] CAMPAIGN_CRASH_SEED=${SEED} CAMPAIGN_CRASH_KILLS=${KILLS} CAMPAIGN_CRASH_RECIPIENTS=${RECIPIENTS} CAMPAIGN_CRASH_CONCURRENT=${MAX_CONCURRENT}`);

/** An independent PRNG stream per purpose, so one purpose's draws do not shift another's. */
const stream = seededStreams(SEED);

// ---- The plan -----------------------------------------------------------------------

type ScenarioName = 'busy' | 'failed' | 'no-answer' | 'reject' | 'answer';

interface Recipient {
  seq: number;
  phone: string;
  scenario: ScenarioName;
  /** `answer`: how long the callee stays on the line; `no-answer`: how long it rings. */
  ms: number;
}

interface Kill {
  mode: 'run' | 'boot';
  /** run: new dials to wait for; boot: share of the first boot's duration. */
  dials: number;
  bootShare: number;
  jitterMs: number;
}

function makePlan(): { recipients: Recipient[]; rows: Record<string, unknown>[]; kills: Kill[] } {
  const r = stream('plan');
  const recipients: Recipient[] = [];
  // Distinct real numbers (San Francisco's 628 area, exchanges from 200), shuffled by the seed.
  const numRnd = stream('numbers');
  const taken = new Set<string>();
  for (let seq = 0; seq < RECIPIENTS; seq++) {
    let phone: string;
    do phone = `+1628${String(2_000_000 + Math.floor(numRnd() * 7_000_000))}`;
    while (taken.has(phone));
    taken.add(phone);
    const s = r();
    const scenario: ScenarioName = s < 0.55 ? 'busy' : s < 0.67 ? 'failed' : s < 0.8 ? 'no-answer' : s < 0.86 ? 'reject' : 'answer';
    recipients.push({ seq, phone, scenario, ms: scenario === 'answer' ? uniform(r, [100, 500]) : uniform(r, [30, 300]) });
  }
  // The request's rows: the valid ones in order, invalid rows slipped in between (never dialed).
  const rows: Record<string, unknown>[] = recipients.map((x) => ({ phone: x.phone, variables: { first_name: `R${x.seq}` } }));
  const invalid = ['not a number', '+1415', '+10000000000', '', null];
  for (let i = 0; i < INVALID_ROWS; i++) {
    if (i % 3 === 2) {
      // A repeat is the later row (the first is the one dialed), so it goes after its original.
      const phone = recipients[Math.floor(r() * recipients.length)]!.phone;
      const first = rows.findIndex((row) => row['phone'] === phone);
      rows.splice(first + 1 + Math.floor(r() * (rows.length - first)), 0, { phone });
      continue;
    }
    const bad = invalid[i % invalid.length];
    rows.splice(Math.floor(r() * (rows.length + 1)), 0, bad === null ? { variables: {} } : { phone: bad });
  }
  const killRnd = stream('kills');
  const kills = Array.from({ length: KILLS }, (): Kill => {
    const mode = killRnd() < BOOT_KILL_SHARE ? 'boot' : 'run';
    return { mode, dials: uniform(killRnd, [0, KILL_AFTER_DIALS]), bootShare: killRnd(), jitterMs: uniform(killRnd, KILL_JITTER_MS) };
  });
  return { recipients, rows, kills };
}

function scenarioOf(x: Recipient): TwilioScenario {
  if (x.scenario === 'no-answer') return { name: 'no-answer', ringMs: x.ms };
  if (x.scenario === 'answer') return { name: 'answer', ringMs: 30 };
  if (x.scenario === 'reject') return { name: 'reject', status: 400, code: 21215, message: 'Geo permission not enabled for this number' };
  return { name: x.scenario };
}

// ---- The test -----------------------------------------------------------------------

let crash: CrashRig | undefined;
const cleanups: (() => void | Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0)) await c();
  await crash?.close();
});

it(`a ${RECIPIENTS}-recipient campaign dials each recipient exactly once through ${KILLS} SIGKILLs (seed ${SEED})`, { timeout: TEST_TIMEOUT_MS }, async () => {
  const t0 = Date.now();
  const { recipients, rows: requestRows, kills } = makePlan();
  const rig = await startCrashRig({
    simStepMs: SIM_STEP_MS,
    seed: SEED,
    t0,
    logFile: LOG_FILE,
    firstStartLimitMs: FIRST_START_LIMIT_MS,
    minStartLimitMs: MIN_START_LIMIT_MS,
    startLimitFactor: START_LIMIT_FACTOR,
  });
  crash = rig;
  const { sims, base, launch, up, killNow, unexpectedExits, bootFailures } = rig;

  // ---- Setup: a customer on carrier A, its plan raised, every far end's scenario.
  launch();
  await up();
  const server = remote(base);
  const customer: Customer = await newCustomer({ sims, server } as CallStack, 'twilio');
  rig.setPlan(customer.accountId, ACCOUNT_LIMIT);
  await sleep(1100); // the service re-reads a plan changed by another process within a second
  for (const x of recipients) sims.twilio.scenario(x.phone, scenarioOf(x));
  const byPhone = new Map(recipients.map((x) => [x.phone, x]));

  // The callees: an answered call is hung up by the far end after its hold time.
  const stopCallees = rig.hangUpAnswered((to) => byPhone.get(to)?.ms, 20);

  // ---- The campaign: created with an Idempotency-Key, retried until it has its answer.
  const createBody = { agent_id: customer.agentId, from_number: customer.number, prompt: 'Remind {name} of tomorrow’s appointment.', recipients: requestRows, skip_invalid: true, max_concurrent: MAX_CONCURRENT, name: `crash ${SEED}` };
  let created: any = null;
  const createTrace: string[] = [];
  for (let attempt = 0; created === null && attempt < 50; attempt++) {
    try {
      const res = await fetch(`${base}/v1/calls/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${customer.key}`, 'content-type': 'application/json', 'idempotency-key': `campaign-crash-${SEED}` },
        body: JSON.stringify(createBody),
        signal: AbortSignal.timeout(20_000),
      });
      const text = await res.text();
      createTrace.push(String(res.status));
      if (res.status === 201) created = JSON.parse(text);
      else if (res.status < 500 && res.status !== 409 && res.status !== 429) throw new Error(`campaign creation answered ${res.status}: ${text.slice(0, 500)}`);
    } catch (err) {
      if (String(err).includes('campaign creation answered')) throw err;
      createTrace.push(`net ${(err as { cause?: { code?: string } }).cause?.code ?? 'error'}`);
      await up();
    }
  }
  expect(created, `campaign creation: ${createTrace.join(', ')}`).not.toBeNull();
  expect(created).toMatchObject({ status: 'running', valid_count: RECIPIENTS, invalid_count: INVALID_ROWS });
  const campaignId = created.campaign_id as string;

  // ---- The kills.
  const dialsSoFar = (): number => sims.twilio.dialRequests().length;
  const liveAtCarrier = (): number => [...sims.twilio.calls.values()].filter((c) => !FINAL.has(c.status)).length;
  const killLog: { at: number; mode: string; ready: boolean; dialsInCycle: number; dialsTotal: number; liveAtCarrier: number; capped: boolean }[] = [];
  for (let k = 0; k < kills.length; k++) {
    const kill = kills[k]!;
    if (!rig.proc) launch();
    const cycleDials = dialsSoFar();
    let capped = false;
    if (kill.mode === 'boot') {
      // Anywhere in the boot: restoring the campaign and its calls, resuming their intents.
      await Promise.race([sleep(Math.round(kill.bootShare * (rig.firstStartMs ?? 1500))), rig.proc!.exited]);
    } else {
      await up();
      const readyDials = dialsSoFar();
      const until = Date.now() + KILL_WAIT_CAP_MS;
      while (dialsSoFar() - readyDials < kill.dials && Date.now() < until) await sleep(5);
      capped = dialsSoFar() - readyDials < kill.dials;
      await sleep(kill.jitterMs);
    }
    killLog.push({ at: Date.now() - t0, mode: kill.mode, ready: rig.proc?.ready ?? false, dialsInCycle: dialsSoFar() - cycleDials, dialsTotal: dialsSoFar(), liveAtCarrier: liveAtCarrier(), capped });
    await killNow();
  }
  const chaosMs = Date.now() - t0;
  const dialsAtLastKill = dialsSoFar();

  // ---- One last start; the campaign runs to its end.
  await up();
  const finalBootAt = Date.now() - t0;
  const reader = new Database(rig.dbFile, { readonly: true });
  cleanups.push(() => {
    if (reader.open) reader.close();
  });
  const count = (sql: string, ...args: unknown[]): number => (reader.prepare(sql).get(...args) as { n: number }).n;
  const { metric } = rig;
  const ours = () => [...sims.twilio.calls.values()].filter((c) => byPhone.has(c.to));
  const campaignStatus = (): string | undefined => (reader.prepare('SELECT status FROM batch_campaigns WHERE id = ?').get(campaignId) as { status: string } | undefined)?.status;
  const settledNow = async (): Promise<boolean> =>
    campaignStatus() !== 'running' &&
    ours().every((c) => FINAL.has(c.status)) &&
    count('SELECT COUNT(*) AS n FROM effect_intents') === 0 &&
    count('SELECT COUNT(*) AS n FROM actor_snapshots WHERE done = 0') === 0 &&
    (await metric('switchboard_live_calls')) === 0 &&
    (await metric('switchboard_queued_calls')) === 0;
  const settleUntil = Date.now() + SETTLE_TIMEOUT_MS;
  let settled = false;
  while (Date.now() < settleUntil && !(settled = await settledNow())) await sleep(200);
  const settledAt = Date.now() - t0;
  stopCallees();

  // ---- The verdict.
  const problems: string[] = [];
  const offending = new Set<number>();
  const bad = (x: Recipient | null, msg: string) => {
    problems.push(x ? `seq ${x.seq} (${x.phone}, ${x.scenario}): ${msg}` : msg);
    if (x) offending.add(x.seq);
  };
  if (!settled) bad(null, `not settled ${SETTLE_TIMEOUT_MS} ms after the last start: campaign ${campaignStatus()}, ${count('SELECT COUNT(*) AS n FROM effect_intents')} intents, ${count('SELECT COUNT(*) AS n FROM actor_snapshots WHERE done = 0')} unfinished snapshots, ${ours().filter((c) => !FINAL.has(c.status)).length} calls up at the carrier`);

  type RecipientRow = { seq: number; phone: string; state: string; call_id: string | null; ended_reason: string | null };
  type CallRow = { internal_id: string; to_number: string; call_status: string; campaign_id: string | null; carrier_call_id: string | null; ended_reason: string | null };
  const recipientRows = reader.prepare('SELECT seq, phone, state, call_id, ended_reason FROM campaign_recipients WHERE campaign_id = ? ORDER BY seq').all(campaignId) as RecipientRow[];
  const callRows = reader.prepare('SELECT internal_id, to_number, call_status, campaign_id, carrier_call_id, ended_reason FROM calls WHERE account_id = ?').all(customer.accountId) as CallRow[];
  const callsByTo = new Map<string, CallRow[]>();
  for (const c of callRows) callsByTo.set(c.to_number, [...(callsByTo.get(c.to_number) ?? []), c]);
  const contextOf = (id: string): { dialOutcome?: string; carrierError?: { outcome?: string } | null } | null => {
    const row = reader.prepare('SELECT snapshot FROM actor_snapshots WHERE actor_id = ?').get(id) as { snapshot: string } | undefined;
    return row ? (JSON.parse(row.snapshot) as { context: { dialOutcome?: string; carrierError?: { outcome?: string } | null } }).context : null;
  };
  if (recipientRows.length !== RECIPIENTS) bad(null, `${recipientRows.length} recipient rows, ${RECIPIENTS} valid recipients sent`);

  const outcomes = { completed: 0, failed: 0, voicemail: 0, neverSent: [] as number[], refused: 0 };
  const expected = { completed: 0 };
  for (const x of recipients) {
    const dials = sims.twilio.dialRequests(x.phone).length;
    const placed = sims.twilio.placedTo(x.phone);
    const simCall = ours().find((c) => c.to === x.phone);
    const row = recipientRows.find((rr) => rr.seq === x.seq);
    const calls = callsByTo.get(x.phone) ?? [];
    // (1) exactly one dial. The one exception rings no one: a dial the carrier refused
    // (`reject`) whose refusal was lost to a kill is, like a dial that never left, found
    // absent at the carrier, so the recipient is dialed again and refused again.
    if (dials > 1 && !(x.scenario === 'reject' && placed === 0)) bad(x, `dialed ${dials} times (${placed} calls placed at the carrier)`);
    if (placed > 1) bad(x, `${placed} calls placed at the carrier`);
    // (2) its row and its one call.
    if (!row) {
      bad(x, 'no recipient row');
      continue;
    }
    if (row.phone !== x.phone) bad(x, `its row has phone ${row.phone}`);
    // Its call is the one its row names; any other never reached the carrier and says so.
    const call = calls.find((c) => c.internal_id === row.call_id);
    for (const other of calls.filter((c) => c !== call)) {
      const ctx = contextOf(other.internal_id);
      if (other.call_status !== 'failed' || other.carrier_call_id !== null || ctx?.carrierError?.outcome !== 'not_placed') {
        bad(x, `a second call ${other.internal_id} (${other.call_status}, carrier ${other.carrier_call_id}, ${JSON.stringify(ctx?.carrierError)})`);
      } else outcomes.neverSent.push(x.seq);
    }
    if (row.state === 'pending' || row.state === 'placed' || row.state === 'cancelled') bad(x, `recipient row still ${row.state} (call ${row.call_id})`);
    if (row.call_id === null) bad(x, `skipped: its row has no call (state ${row.state})`);
    else if (call && row.call_id !== call.internal_id) bad(x, `its row names call ${row.call_id}, the record for its number is ${call.internal_id}`);
    if (call && call.campaign_id !== campaignId) bad(x, `its call names campaign ${call.campaign_id}`);
    if (call && !FINAL.has(call.call_status)) bad(x, `its call is still ${call.call_status}`);
    if (row.state === 'completed') outcomes.completed++;
    else if (row.state === 'failed') outcomes.failed++;
    else if (row.state === 'voicemail') outcomes.voicemail++;
    if (simCall) {
      if (simCall.answeredAt !== null) expected.completed++;
      const want = simCall.answeredAt !== null ? 'completed' : 'failed';
      if (!FINAL.has(simCall.status)) bad(x, `the carrier's call is still ${simCall.status}`);
      if (row.state !== want) bad(x, `recipient ${row.state}, the carrier's call ${simCall.status} (answered: ${simCall.answeredAt !== null})`);
      if (call && call.carrier_call_id !== simCall.sid) bad(x, `its call names carrier call ${call.carrier_call_id}, the carrier placed ${simCall.sid}`);
    } else if (dials === 1) {
      // Refused at the dial (`reject`): one dial request, no call; recorded failed.
      if (x.scenario !== 'reject') bad(x, `one dial request and no call at the carrier, though its scenario is ${x.scenario}`);
      else outcomes.refused++;
      if (row.state !== 'failed') bad(x, `refused by the carrier, yet the recipient is ${row.state}`);
    } else if (dials === 0) {
      const ctx = call ? contextOf(call.internal_id) : null;
      bad(x, `never dialed (recipient ${row.state}, call ${call?.internal_id ?? 'none'} ${call?.call_status ?? ''}, dialOutcome ${ctx?.dialOutcome}, carrierError ${JSON.stringify(ctx?.carrierError)})`);
    }
  }
  // No one else was dialed: not the invalid rows, not a number nobody asked for.
  const stray = sims.twilio.dialRequests().filter((d) => {
    const to = d.body['To'];
    return !byPhone.has(Array.isArray(to) ? to[0]! : (to ?? ''));
  });
  if (stray.length > 0) bad(null, `${stray.length} dials to numbers that are not valid recipients: ${stray.slice(0, 5).map((d) => d.body['To']).join(', ')}`);
  const strayCalls = callRows.filter((c) => !byPhone.has(c.to_number));
  if (strayCalls.length > 0) bad(null, `${strayCalls.length} call records for numbers that are not valid recipients`);
  const campaignCalls = count('SELECT COUNT(*) AS n FROM calls WHERE campaign_id = ?', campaignId);
  if (campaignCalls !== RECIPIENTS + outcomes.neverSent.length) bad(null, `${campaignCalls} calls name the campaign: ${RECIPIENTS} recipients and ${outcomes.neverSent.length} calls never placed`);

  // (3) the campaign's record, through the API.
  const record = (await server.request('GET', `/v1/calls/batch/${campaignId}`, { key: customer.key })).body as Record<string, any>;
  const counted = ['pending_count', 'in_progress_count', 'completed_count', 'failed_count', 'voicemail_count', 'cancelled_count'].reduce((n, k) => n + Number(record?.[k] ?? NaN), 0);
  if (record?.status !== 'completed') bad(null, `campaign status ${record?.status}`);
  if (counted !== record?.valid_count || record?.valid_count !== RECIPIENTS) bad(null, `counts do not add up to valid_count ${record?.valid_count}: ${JSON.stringify(record)}`);
  if (record?.pending_count !== 0 || record?.in_progress_count !== 0 || record?.cancelled_count !== 0) bad(null, `counts left: pending ${record?.pending_count}, in progress ${record?.in_progress_count}, cancelled ${record?.cancelled_count}`);
  if (record?.completed_count !== expected.completed) bad(null, `completed_count ${record?.completed_count}, the carrier connected ${expected.completed}`);
  if (record?.completed_count !== outcomes.completed || record?.failed_count !== outcomes.failed || record?.voicemail_count !== outcomes.voicemail) bad(null, `the record's counts differ from its rows: ${JSON.stringify(outcomes)}`);
  if (record?.invalid_count !== INVALID_ROWS || record?.total_count !== RECIPIENTS + INVALID_ROWS) bad(null, `total ${record?.total_count}, invalid ${record?.invalid_count}`);
  if (!record?.started_at || !record?.completed_at) bad(null, `started_at ${record?.started_at}, completed_at ${record?.completed_at}`);

  // (4) never more than max_concurrent up at once at the carrier.
  const peak = peakConcurrent(ours());
  if (peak > MAX_CONCURRENT) bad(null, `${peak} calls up at once at the carrier, max_concurrent ${MAX_CONCURRENT}`);

  // (5) nothing left behind.
  const intents = reader.prepare('SELECT actor_id, effect FROM effect_intents').all() as { actor_id: string; effect: string }[];
  if (intents.length > 0) bad(null, `${intents.length} pending effect intents: ${intents.slice(0, 10).map((i) => `${i.actor_id}:${i.effect}`).join(', ')}`);
  const deadlines = reader.prepare('SELECT actor_id, name FROM deadlines').all() as { actor_id: string; name: string }[];
  if (deadlines.length > 0) bad(null, `${deadlines.length} deadlines left: ${deadlines.slice(0, 10).map((d) => `${d.actor_id}:${d.name}`).join(', ')}`);
  const unfinished = reader.prepare('SELECT actor_id, kind, snapshot FROM actor_snapshots WHERE done = 0').all() as { actor_id: string; kind: string; snapshot: string }[];
  if (unfinished.length > 0) {
    bad(null, `${unfinished.length} unfinished actor snapshots: ${unfinished.slice(0, 5).map((u) => { const p = JSON.parse(u.snapshot) as { value: unknown; context: Record<string, unknown> }; return `${u.kind} ${u.actor_id} ${JSON.stringify(p.value)}${u.kind === 'campaign' ? ` ${JSON.stringify({ ...p.context, window: undefined })}` : ''}`; }).join('; ')}`);
  }
  const gauges = { live: await metric('switchboard_live_calls'), queued: await metric('switchboard_queued_calls') };
  if (gauges.live !== 0 || gauges.queued !== 0) bad(null, `gauges after the settle: ${JSON.stringify(gauges)}`);
  if (unexpectedExits.length > 0) bad(null, `the service died on its own ${unexpectedExits.length} time(s):\n    ${unexpectedExits.join('\n    ')}`);
  for (const seq of [...offending].slice(0, 20)) {
    const x = recipients[seq]!;
    const row = recipientRows.find((rr) => rr.seq === seq);
    const calls = callsByTo.get(x.phone) ?? [];
    problems.push(
      `  seq ${seq}: row ${row ? `${row.state} call ${row.call_id} (${row.ended_reason})` : 'none'}; calls ${calls.map((c) => `${c.internal_id} ${c.call_status}/${c.ended_reason} carrier ${c.carrier_call_id}`).join(', ') || 'none'}; ` +
        `dials ${sims.twilio.dialRequests(x.phone).map((d) => d.fault ?? 'ok').join(', ') || 'none'}; carrier ${ours().filter((c) => c.to === x.phone).map((c) => `${c.sid} ${c.status} created ${c.createdAt - t0}`).join(', ') || 'none'}`,
    );
  }

  const summary = {
    seed: SEED,
    recipients: RECIPIENTS,
    kills: killLog.length,
    killsMidBoot: killLog.filter((k) => !k.ready).length,
    killsWithCallsUpAtCarrier: killLog.filter((k) => k.liveAtCarrier > 0).length,
    killsCapped: killLog.filter((k) => k.capped).length,
    dialsAtLastKill,
    dialsPerCycle: killLog.map((k) => k.dialsInCycle).join(' '),
    bootFailures: bootFailures.length,
    startMs: { first: rig.firstStartMs, slowest: rig.slowestStartMs },
    create: createTrace.join(' '),
    chaosMs,
    finalBootAt,
    settled,
    settledAt,
    totalMs: Date.now() - t0,
    peakConcurrent: peak,
    outcomes: { ...outcomes, neverSent: outcomes.neverSent.length },
    record: record && { status: record.status, completed: record.completed_count, failed: record.failed_count, voicemail: record.voicemail_count },
    dials: sims.twilio.dialRequests().length,
    serviceErrors: Object.fromEntries(rig.errorLines),
  };
  console.log(`[campaign-crash] ${JSON.stringify(summary)}`);
  if (problems.length > 0) {
    const msg = `campaign crash test failed with CAMPAIGN_CRASH_SEED=${SEED} (${problems.length} problems):\n  ${problems.slice(0, 60).join('\n  ')}`;
    console.log(`[campaign-crash] ${msg}`);
    expect.fail(msg);
  }
});
