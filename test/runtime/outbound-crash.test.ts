// Acceptance test 1 of issue 7, the crash test: a burst of outbound calls, each with its
// own Idempotency-Key and `to_number`, against carrier A's simulator, while
//   - the service (a real child process on one port and one data folder) is SIGKILLed at
//     seeded random moments, CRASH_KILLS times (at least 20), and started again;
//   - the carrier's answers to dials are randomly slow, lost (processed, answer dropped)
//     or reset (connection destroyed BEFORE processing: the carrier has no call), and
//     now and then a look-up (reconciliation) or hang-up request is reset or lost too;
//   - database writes randomly fail: a second connection takes SQLite's write lock
//     (BEGIN IMMEDIATE) for random short periods, longer than the service's
//     SQLITE_BUSY_TIMEOUT_MS, so the service's commits really fail with SQLITE_BUSY;
//   - every request is retried with its key until it has an answer: a 201, or a 4xx/502
//     JSON envelope (network errors, 500, 503, 429 and 409 idempotency_key_in_use are
//     retried after a short wait).
// Two accounts: one with a high concurrency limit (every call dialed at once) and one
// with a limit of 2 (calls queue and are dialed as slots free). Callees end their calls
// within a second or two (busy, failed, no-answer and rejected numbers end by themselves,
// answered calls are hung up by the far end after a short hold).
// Then the chaos stops, the service is restarted once more, everything settles, and:
//   (1) the simulator received exactly one dial request per request (POST …/Calls.json by
//       To), with one accounted exception: none, when the process was killed after it
//       committed the dial as sent and before the request left; such a call must end
//       `failed` saying it was never placed (reconciled, not redialed);
//   (2) every call record is final and matches the simulator's call: same carrier call,
//       same final status, ended at the carrier's end time (within END_TOLERANCE_MS); a
//       request answered 502 "unknown" has a record that says what the carrier did;
//   (3) no slot is held and nothing is queued (GET /metrics), no call actor is live;
//   (4) the counts add up: requests = call records = calls at the simulator + dials the
//       carrier never placed. A dial the carrier never placed is one whose request was
//       reset before processing (the chaos's `reset`: the carrier has no call, so the
//       service, which cannot know that, must reconcile it as unknown and find nothing),
//       refused by the carrier (the `reject` scenario), or never sent (see (1)). None of
//       them may be dialed again, and each record must end `failed` with no carrier call
//       id. They are counted by cause in the summary line. Nothing is left behind in the
//       database: no pending effect intents, no deadlines of finished calls, no
//       unfinished actor snapshots;
//   (5) a replay of every request with its key after the settle gives back exactly its
//       first answer, and dials nothing.
// The seed fixes the plan (numbers and their scenarios, dial faults keyed by number,
// request launch times, kill times, lock periods), not the interleaving with the
// service's own timing. It is printed at the start and with every failure.
//   CRASH_SEED      the seed (default: random)
//   CRASH_KILLS     SIGKILLs during the chaos (default 20; never fewer than 20)
//   CRASH_REQUESTS  outbound requests (default 60)
//   CRASH_LOG       a file to append every service log line to (for digging into a failure)
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { newCustomer, type CallStack, type Customer } from '../helpers/calls.ts';
import type { TwilioScenario, TwilioSimCall } from '../sim/twilio-calls.ts';
import { TWILIO_ENDPOINTS } from '../sim/twilio-sim.ts';
import { seededStreams, startCrashRig, uniform, type CrashRig } from './crash-harness.ts';
import { remote, sleep } from './support.ts';

const SEED = process.env.CRASH_SEED ? Number(process.env.CRASH_SEED) >>> 0 : (Math.floor(Math.random() * 2 ** 32) >>> 0);
const KILLS = Math.max(20, Number(process.env.CRASH_KILLS ?? 20) || 20);
const REQUESTS = Math.max(1, Number(process.env.CRASH_REQUESTS ?? 60) || 60);
/** Share of the requests that go to the account with a concurrency limit of LOW_LIMIT. */
const LOW_SHARE = 0.25;
const LOW_LIMIT = 2;
/** A kill lands this long after the service listens (uniform), or, for one kill in five, this long after it was spawned (often mid-boot). */
const RUN_KILL_MS: [number, number] = [0, 2000];
const BOOT_KILL_MS: [number, number] = [0, 1500];
const BOOT_KILL_SHARE = 0.2;
/** The service's busy timeout and the lock holder's periods (held longer than the timeout: writes fail). */
const BUSY_TIMEOUT_MS = 20;
const LOCK_HOLD_MS: [number, number] = [25, 150];
const LOCK_GAP_MS: [number, number] = [100, 600];
/** Dial faults (per dial, drawn from the seed and its To number). */
const DIAL_CHAOS = { resetRate: 0.1, dropRate: 0.15, slowRate: 0.25, slowMs: [300, 3000] as [number, number] };
/** Share of the carrier's look-up and hang-up requests that are reset or lost (half each). */
const OTHER_FAULT_RATE = 0.1;
/** How far a record's ended_at may be from the carrier's end time (carrier A reports whole seconds). */
const END_TOLERANCE_MS = 3000;
const SETTLE_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 170_000;
/**
 * How long a start (spawn to "switchboard listening") may take. The first, before any
 * chaos, is only guarded against a hang; it is the measure of this machine as loaded
 * right now. Every later start may take ten times as long as the first did, never less
 * than 20 s: a restart does more (restoring actors, reconciling dials left unknown, its
 * writes failing against the lock holder and its boot retried) while the test's clients,
 * the simulator and the lock holder keep the CPU busier than at the first start. An
 * idle machine starts in a second or two (the floor applies); on a loaded 2-core machine
 * a fixed 20 s was once too short.
 */
const FIRST_START_LIMIT_MS = 60_000;
const MIN_START_LIMIT_MS = 20_000;
const START_LIMIT_FACTOR = 10;

const LOG_FILE = process.env.CRASH_LOG;
const FINAL = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);

console.log(`[outbound-crash] CRASH_SEED=${SEED} CRASH_KILLS=${KILLS} CRASH_REQUESTS=${REQUESTS}`);

/** An independent PRNG stream per purpose, so one purpose's draws do not shift another's. */
const stream = seededStreams(SEED);

// ---- The plan -----------------------------------------------------------------------

type ScenarioName = 'answer' | 'busy' | 'no-answer' | 'failed' | 'reject';

interface Answer {
  status: number;
  body: any;
  text: string;
}

interface Req {
  i: number;
  key: string;
  to: string;
  account: 'high' | 'low';
  scenario: ScenarioName;
  /** Answered calls: how long the callee stays on the line before hanging up. */
  holdMs: number;
  /** The kill cycle during which it is first sent, and when within it. */
  cycle: number;
  offsetMs: number;
  attempts: number;
  trace: string[];
  answer: Answer | null;
  answeredAt: number | null;
}

function makePlan(): { reqs: Req[]; kills: { mode: 'run' | 'boot'; delayMs: number }[] } {
  const r = stream('plan');
  const killRnd = stream('kills');
  const kills = Array.from({ length: KILLS }, () => {
    const mode = killRnd() < BOOT_KILL_SHARE ? ('boot' as const) : ('run' as const);
    return { mode, delayMs: uniform(killRnd, mode === 'boot' ? BOOT_KILL_MS : RUN_KILL_MS) };
  });
  const reqs: Req[] = [];
  // Distinct numbers drawn from the seed (not from the process id), so the dial faults
  // keyed by To repeat with the seed, and are not correlated by neighbouring keys.
  const numRnd = stream('numbers');
  const taken = new Set<string>();
  const toNumber = (_i: number): string => {
    for (;;) {
      const n = `+14158${String(Math.floor(numRnd() * 1e6)).padStart(6, '0')}`;
      if (!taken.has(n)) {
        taken.add(n);
        return n;
      }
    }
  };
  // Requests start during the first three quarters of the kill cycles, so kills meet them in flight.
  const cycles = Math.max(1, Math.floor(KILLS * 0.75));
  // The low-limit account's requests come in bursts (a few cycles, within 300 ms), so its calls queue.
  const bursts = Array.from({ length: 3 }, () => Math.floor(r() * cycles));
  for (let i = 0; i < REQUESTS; i++) {
    const s = r();
    const scenario: ScenarioName = s < 0.55 ? 'answer' : s < 0.67 ? 'busy' : s < 0.8 ? 'no-answer' : s < 0.92 ? 'failed' : 'reject';
    const account = r() < LOW_SHARE ? ('low' as const) : ('high' as const);
    const cycle = account === 'low' ? bursts[Math.floor(r() * bursts.length)]! : Math.floor(r() * cycles);
    const offsetMs = uniform(r, [0, account === 'low' ? 300 : Math.max(50, kills[cycle]!.delayMs)]);
    reqs.push({
      i,
      key: `crash-${SEED}-${i}`,
      // Fixed by the seed (not by the process id), so the dial faults keyed by To repeat.
      to: toNumber(i),
      account,
      scenario,
      holdMs: uniform(r, [200, 1500]),
      cycle,
      offsetMs,
      attempts: 0,
      trace: [],
      answer: null,
      answeredAt: null,
    });
  }
  return { reqs, kills };
}

function scenarioOf(req: Req): TwilioScenario {
  if (req.scenario === 'no-answer') return { name: 'no-answer', ringMs: uniform(stream(`ring-${req.i}`), [200, 1000]) };
  if (req.scenario === 'reject') return { name: 'reject', status: 400, code: 21215, message: 'Geo permission not enabled for this number' };
  return { name: req.scenario };
}

// ---- The service process ------------------------------------------------------------

/** The service's log lines that tell of the lock holder's work (counted for the summary). */
const logStats = { busy: 0, commitFailed: 0 };
const countLockLines = (line: string): void => {
  if (line.includes('SQLITE_BUSY') || line.includes('database is locked')) logStats.busy++;
  if (line.includes('commit failed')) logStats.commitFailed++;
};

// ---- The test -----------------------------------------------------------------------

let crash: CrashRig | undefined;
/** Stops the test's own timers and connections, also when it failed half-way. */
const cleanups: (() => void | Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0)) await c();
  await crash?.close();
});

it(`outbound calls survive SIGKILLs, lost and slow dial answers and failing writes (seed ${SEED})`, { timeout: TEST_TIMEOUT_MS }, async () => {
  const t0 = Date.now();
  const { reqs, kills } = makePlan();
  const rig = await startCrashRig({
    simStepMs: 40,
    env: { SQLITE_BUSY_TIMEOUT_MS: String(BUSY_TIMEOUT_MS) },
    seed: SEED,
    t0,
    logFile: LOG_FILE,
    firstStartLimitMs: FIRST_START_LIMIT_MS,
    minStartLimitMs: MIN_START_LIMIT_MS,
    startLimitFactor: START_LIMIT_FACTOR,
    onLine: countLockLines,
  });
  crash = rig;
  const { sims, base, launch, up, killNow, unexpectedExits, bootFailures } = rig;

  // ---- Setup, before any chaos: two customers on carrier A, their plans.
  launch();
  await up();
  const server = remote(base);
  const stack = { sims, server } as CallStack;
  const customers: Record<'high' | 'low', Customer> = {
    high: await newCustomer(stack, 'twilio'),
    low: await newCustomer(stack, 'twilio'),
  };
  for (const [who, limit] of [['high', 1000], ['low', LOW_LIMIT]] as const) rig.setPlan(customers[who].accountId, limit);
  await sleep(1100); // the service re-reads a plan changed by another process within a second
  for (const r of reqs) sims.twilio.scenario(r.to, scenarioOf(r));
  const byTo = new Map(reqs.map((r) => [r.to, r]));

  // ---- The callees: an answered call is hung up by the far end after its hold time.
  const stopCallees = rig.hangUpAnswered((to) => byTo.get(to)?.holdMs, 50);

  // ---- The clients: each request retried with its key until it has an answer.
  let inFlight = 0;
  let clientsStop = false;
  const send = async (req: Req): Promise<void> => {
    const jitter = stream(`retry-${req.i}`);
    const c = customers[req.account];
    const body = JSON.stringify({ agent_id: c.agentId, to_number: req.to, prompt: `Crash test call ${req.i}.` });
    while (!clientsStop) {
      req.attempts++;
      inFlight++;
      try {
        const res = await fetch(`${base}/v1/calls/outbound`, {
          method: 'POST',
          headers: { authorization: `Bearer ${c.key}`, 'content-type': 'application/json', 'idempotency-key': req.key },
          body,
          signal: AbortSignal.timeout(20_000),
        });
        const text = await res.text();
        let json: any;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        const code: string | undefined = json?.error?.code;
        req.trace.push(`${res.status}${code ? ` ${code}` : ''}${json?.error?.details?.outcome ? `/${json.error.details.outcome}` : ''}`);
        const retry = res.status === 500 || res.status === 503 || res.status === 429 || (res.status === 409 && code === 'idempotency_key_in_use');
        const isAnswer = (res.status === 201 && typeof json?.call_id === 'string') || (((res.status >= 400 && res.status < 500) || res.status === 502) && typeof code === 'string');
        if (!retry && isAnswer) {
          req.answer = { status: res.status, body: json, text };
          req.answeredAt = Date.now() - t0;
          return;
        }
      } catch (err) {
        const e = err as { cause?: { code?: string }; name?: string };
        req.trace.push(`net ${e.cause?.code ?? e.name ?? 'error'}`);
      } finally {
        inFlight--;
      }
      await sleep(uniform(jitter, [50, 200]));
    }
  };
  const sending: Promise<void>[] = [];

  // ---- Chaos: dial faults at the carrier, a lock holder on the database, SIGKILLs.
  sims.twilio.chaos({ seed: SEED, ...DIAL_CHAOS });
  // The carrier's other answers (look-ups that reconcile, hang-ups) are now and then lost too.
  let otherFaults = true;
  const otherRnd = stream('other-faults');
  const other = (req: Parameters<typeof TWILIO_ENDPOINTS.lookup>[0]) => otherFaults && (TWILIO_ENDPOINTS.lookup(req) || TWILIO_ENDPOINTS.hangup(req));
  sims.twilio.fail({ reset: true, times: Number.MAX_SAFE_INTEGER, match: (req) => other(req) && otherRnd() < OTHER_FAULT_RATE / 2 });
  sims.twilio.fail({ drop: true, times: Number.MAX_SAFE_INTEGER, match: (req) => other(req) && otherRnd() < OTHER_FAULT_RATE / 2 });
  const lockRnd = stream('lock');
  const side = new Database(rig.dbFile);
  side.pragma('busy_timeout = 0');
  let lockStop = false;
  const lockStats = { periods: 0, heldMs: 0, contended: 0 };
  cleanups.push(async () => {
    lockStop = true;
    await locker;
    if (side.open) side.close();
  });
  const locker = (async () => {
    while (!lockStop) {
      await sleep(uniform(lockRnd, LOCK_GAP_MS));
      if (lockStop) break;
      const hold = uniform(lockRnd, LOCK_HOLD_MS);
      try {
        side.exec('BEGIN IMMEDIATE');
      } catch {
        lockStats.contended++; // the service holds it this instant: try again later
        continue;
      }
      lockStats.periods++;
      lockStats.heldMs += hold;
      await sleep(hold);
      side.exec('ROLLBACK');
    }
  })();

  const killLog: { at: number; mode: string; delayMs: number; ready: boolean; inFlight: number; liveAtCarrier: number }[] = [];
  for (let k = 0; k < kills.length; k++) {
    const { mode, delayMs } = kills[k]!;
    if (!rig.proc) launch();
    if (mode === 'run') await up();
    for (const r of reqs) {
      if (r.cycle !== k) continue;
      sending.push(sleep(r.offsetMs).then(() => send(r)));
    }
    await sleep(delayMs);
    killLog.push({ at: Date.now() - t0, mode, delayMs, ready: rig.proc?.ready ?? false, inFlight, liveAtCarrier: [...sims.twilio.calls.values()].filter((c) => !FINAL.has(c.status)).length });
    await killNow();
  }
  const chaosMs = Date.now() - t0;

  // ---- The chaos stops; one last restart; everything settles.
  sims.twilio.chaos(null);
  otherFaults = false;
  lockStop = true;
  await locker;
  if (side.open) side.close();
  await up();
  const finalBootAt = Date.now() - t0;

  const allAnswered = Promise.all(sending);
  await Promise.race([allAnswered, sleep(SETTLE_TIMEOUT_MS)]);
  clientsStop = true;

  const reader = new Database(rig.dbFile, { readonly: true });
  const accountIds = [customers.high.accountId, customers.low.accountId];
  type Row = {
    call_id: string;
    internal_id: string;
    account_id: string;
    to_number: string;
    call_status: string;
    carrier_call_id: string | null;
    started_at: number | null;
    ended_at: number | null;
    ended_reason: string | null;
  };
  const rows = (): Row[] =>
    reader
      .prepare(`SELECT call_id, internal_id, account_id, to_number, call_status, carrier_call_id, started_at, ended_at, ended_reason FROM calls WHERE account_id IN (?, ?)`)
      .all(...accountIds) as Row[];
  const count = (sql: string): number => (reader.prepare(sql).get() as { n: number }).n;
  const { metric } = rig;
  const ourCalls = (): TwilioSimCall[] => [...sims.twilio.calls.values()].filter((c) => byTo.has(c.to));
  const settledNow = async (): Promise<boolean> =>
    reqs.every((r) => r.answer !== null) &&
    ourCalls().every((c) => FINAL.has(c.status)) &&
    rows().length >= reqs.length &&
    rows().every((r) => FINAL.has(r.call_status) && r.ended_at !== null) &&
    count('SELECT COUNT(*) AS n FROM effect_intents') === 0 &&
    (await metric('switchboard_live_calls')) === 0 &&
    (await metric('switchboard_queued_calls')) === 0;
  const settleUntil = Date.now() + SETTLE_TIMEOUT_MS;
  let settled = false;
  while (Date.now() < settleUntil && !(settled = await settledNow())) await sleep(200);
  const settledAt = Date.now() - t0;
  // Finished calls finish their actors too (post-call work is immediate today): a grace
  // period for that, then every snapshot must be done and no call actor live.
  const graceUntil = Date.now() + 3000;
  while (Date.now() < graceUntil && (count('SELECT COUNT(*) AS n FROM actor_snapshots WHERE done = 0') > 0 || (await metric('switchboard_call_actors')) !== 0)) await sleep(200);
  stopCallees();

  // ---- (5) Replays: every request again with its key gives back its first answer, and dials nothing.
  const dialsBeforeReplay = sims.twilio.dialRequests().length;
  const replays = new Map<number, Answer | string>();
  await Promise.all(
    reqs.map(async (r) => {
      if (!r.answer) return;
      const c = customers[r.account];
      try {
        const res = await fetch(`${base}/v1/calls/outbound`, {
          method: 'POST',
          headers: { authorization: `Bearer ${c.key}`, 'content-type': 'application/json', 'idempotency-key': r.key },
          body: JSON.stringify({ agent_id: c.agentId, to_number: r.to, prompt: `Crash test call ${r.i}.` }),
        });
        const text = await res.text();
        replays.set(r.i, { status: res.status, body: text ? JSON.parse(text) : undefined, text });
      } catch (err) {
        replays.set(r.i, String(err));
      }
    }),
  );
  await sleep(300);

  // ---- The verdict, per request.
  const allRows = rows();
  const rowsByTo = new Map<string, Row[]>();
  for (const row of allRows) rowsByTo.set(row.to_number, [...(rowsByTo.get(row.to_number) ?? []), row]);
  const problems: string[] = [];
  const offending = new Set<number>();
  const bad = (r: Req | null, msg: string) => {
    problems.push(r ? `r${r.i} (${r.key}, to ${r.to}, ${r.account}, ${r.scenario}): ${msg}` : msg);
    if (r) offending.add(r.i);
  };
  const notPlaced = { reset: [] as number[], rejected: [] as number[], neverSent: [] as number[] };
  const contextOf = (id: string): { dialOutcome?: string; carrierError?: { outcome?: string } | null } | null => {
    const row = reader.prepare('SELECT snapshot FROM actor_snapshots WHERE actor_id = ?').get(id) as { snapshot: string } | undefined;
    return row ? (JSON.parse(row.snapshot) as { context: { dialOutcome?: string; carrierError?: { outcome?: string } | null } }).context : null;
  };
  let placedCalls = 0;
  const answerKinds = new Map<string, number>();
  const endDiffs: number[] = [];

  for (const r of reqs) {
    const dials = sims.twilio.dialRequests(r.to);
    const simCalls = ourCalls().filter((c) => c.to === r.to);
    const recs = rowsByTo.get(r.to) ?? [];
    const a = r.answer;
    const kind = !a ? 'none' : a.status === 201 ? `201 ${a.body.status}` : `${a.status} ${a.body?.error?.code}${a.body?.error?.details?.outcome ? `/${a.body.error.details.outcome}` : ''}`;
    answerKinds.set(kind, (answerKinds.get(kind) ?? 0) + 1);

    if (!a) bad(r, `no answer after ${r.attempts} attempts: ${r.trace.slice(-6).join(', ')}`);
    // (1) exactly one dial.
    // (0 only when the service died between committing the dial as sent and sending it: see below.)
    if (dials.length > 1) bad(r, `${dials.length} dial requests reached the carrier (faults: ${dials.map((d) => d.fault ?? 'none').join(', ')})`);
    if (simCalls.length > 1) bad(r, `${simCalls.length} calls placed at the carrier`);
    // (2) one final record that matches the carrier.
    if (recs.length !== 1) {
      bad(r, `${recs.length} call records`);
      continue;
    }
    const rec = recs[0]!;
    if (!FINAL.has(rec.call_status) || rec.ended_at === null) bad(r, `record not final: ${rec.call_status}, ended_at ${rec.ended_at}`);
    const sim = simCalls[0];
    if (sim) {
      placedCalls++;
      if (!FINAL.has(sim.status)) bad(r, `the carrier's call ${sim.sid} is still ${sim.status}`);
      if (rec.carrier_call_id !== sim.sid) bad(r, `record names carrier call ${rec.carrier_call_id}, the carrier placed ${sim.sid}`);
      if (rec.call_status !== sim.status) bad(r, `record says ${rec.call_status} (${rec.ended_reason}), the carrier says ${sim.status} (answered: ${sim.answeredAt !== null})`);
      if (rec.ended_at !== null && sim.endedAt !== null) {
        const diff = rec.ended_at - sim.endedAt;
        endDiffs.push(diff);
        if (Math.abs(diff) > END_TOLERANCE_MS) bad(r, `record ended at ${rec.ended_at}, the carrier's call at ${sim.endedAt} (${diff} ms apart; reason ${rec.ended_reason})`);
      }
      if ((rec.started_at !== null) !== (sim.answeredAt !== null)) bad(r, `record started_at ${rec.started_at}, carrier answered at ${sim.answeredAt}`);
    } else {
      // Not placed: the dial was reset before the carrier processed it, or the carrier refused it.
      const reset = dials.some((d) => d.fault === 'reset');
      const refused = r.scenario === 'reject' && dials.some((d) => d.fault === undefined || d.fault === 'slow' || d.fault === 'drop');
      const ctx = contextOf(rec.internal_id);
      if (reset) notPlaced.reset.push(r.i);
      else if (refused) notPlaced.rejected.push(r.i);
      else if (dials.length === 0) {
        // The dial was committed as sent, then the process died before the request left:
        // after the restart its outcome is unknown, the carrier is asked, has no such
        // call, and the record ends failed `not_placed`. Never dialed again.
        notPlaced.neverSent.push(r.i);
        if (ctx?.dialOutcome !== 'unknown' || ctx?.carrierError?.outcome !== 'not_placed') {
          bad(r, `no dial ever reached the carrier, and the record does not say it was never placed (dialOutcome ${ctx?.dialOutcome}, carrierError ${JSON.stringify(ctx?.carrierError)})`);
        }
      } else bad(r, `the carrier has no call although the dial was not reset nor refused (faults: ${dials.map((d) => d.fault ?? 'none').join(', ')})`);
      if (rec.call_status !== 'failed') bad(r, `no call at the carrier, yet the record says ${rec.call_status}`);
      if (rec.carrier_call_id !== null) bad(r, `no call at the carrier, yet the record names ${rec.carrier_call_id}`);
    }
    // The answer names this record.
    if (a?.status === 201) {
      const named = a.body.status === 'queued' ? rec.internal_id : rec.call_id;
      if (a.body.call_id !== named) bad(r, `answered 201 ${a.body.status} ${a.body.call_id}, the record is ${rec.call_id} (${rec.internal_id})`);
      if (a.body.status === 'initiated' && sim && a.body.call_id !== sim.sid) bad(r, `answered 201 initiated ${a.body.call_id}, the carrier's call is ${sim.sid}`);
      if (a.body.status === 'initiated' && !sim) bad(r, `answered 201 initiated ${a.body.call_id}, but the carrier has no call`);
      if (a.body.status === 'queued' && r.account !== 'low') bad(r, 'queued on the account with the high limit');
    } else if (a?.status === 502) {
      const d = a.body?.error?.details ?? {};
      if (a.body?.error?.code !== 'outbound_failed') bad(r, `502 with code ${a.body?.error?.code}`);
      if (d.call_id !== rec.internal_id) bad(r, `502 names call ${d.call_id}, the record is ${rec.internal_id}`);
      if (d.outcome === 'rejected' && sim) bad(r, `answered 502 rejected, but the carrier placed ${sim.sid}`);
      if (d.outcome !== 'unknown' && d.outcome !== 'rejected') bad(r, `502 with outcome ${d.outcome}`);
    } else if (a) {
      bad(r, `answered ${a.status}: ${a.text.slice(0, 200)}`);
    }
    // (5) The replay.
    const rp = replays.get(r.i);
    if (a && rp !== undefined) {
      if (typeof rp === 'string') bad(r, `replay failed: ${rp}`);
      else if (rp.status !== a.status || JSON.stringify(rp.body) !== JSON.stringify(a.body)) bad(r, `replay answered ${rp.status} ${rp.text.slice(0, 200)}; first answer ${a.status} ${a.text.slice(0, 200)}`);
    }
  }

  // (3) nothing held, nothing queued, no actor live.
  const gauges = {
    live: await metric('switchboard_live_calls'),
    queued: await metric('switchboard_queued_calls'),
    actors: await metric('switchboard_call_actors'),
  };
  if (gauges.live !== 0 || gauges.queued !== 0 || gauges.actors !== 0) bad(null, `gauges after the settle: ${JSON.stringify(gauges)}`);
  // (4) the counts, and nothing pending in the database.
  const stray = allRows.filter((row) => !byTo.has(row.to_number));
  if (stray.length > 0) bad(null, `${stray.length} call records for numbers nobody asked to call: ${stray.map((s) => s.to_number).join(', ')}`);
  const strayCalls = [...sims.twilio.calls.values()].filter((c) => c.direction === 'outbound-api' && !byTo.has(c.to));
  if (strayCalls.length > 0) bad(null, `${strayCalls.length} carrier calls to numbers nobody asked to call`);
  const distinctRecords = new Set(allRows.map((row) => row.internal_id)).size;
  const counts = {
    requests: reqs.length,
    records: distinctRecords,
    carrierCalls: ourCalls().length,
    notPlacedReset: notPlaced.reset.length,
    notPlacedRejected: notPlaced.rejected.length,
    notPlacedNeverSent: notPlaced.neverSent.length,
  };
  if (
    counts.records !== counts.requests ||
    counts.carrierCalls + counts.notPlacedReset + counts.notPlacedRejected + counts.notPlacedNeverSent !== counts.requests ||
    placedCalls !== counts.carrierCalls
  ) {
    bad(null, `counts do not add up: ${JSON.stringify(counts)}`);
  }
  const intents = reader.prepare('SELECT actor_id, effect, sent_at FROM effect_intents').all() as { actor_id: string; effect: string; sent_at: number | null }[];
  if (intents.length > 0) bad(null, `${intents.length} pending effect intents: ${intents.map((x) => `${x.actor_id}:${x.effect}`).join(', ')}`);
  const deadlines = reader
    .prepare(`SELECT d.actor_id, d.name FROM deadlines d JOIN calls c ON c.internal_id = d.actor_id WHERE c.ended_at IS NOT NULL`)
    .all() as { actor_id: string; name: string }[];
  if (deadlines.length > 0) bad(null, `${deadlines.length} deadlines of finished calls: ${deadlines.map((x) => `${x.actor_id}:${x.name}`).join(', ')}`);
  const unfinished = reader.prepare('SELECT actor_id, snapshot FROM actor_snapshots WHERE done = 0').all() as { actor_id: string; snapshot: string }[];
  if (unfinished.length > 0) {
    const states = new Map<string, string[]>();
    for (const u of unfinished) {
      const v = JSON.stringify((JSON.parse(u.snapshot) as { value: unknown }).value);
      const to = allRows.find((row) => row.internal_id === u.actor_id)?.to_number;
      states.set(v, [...(states.get(v) ?? []), `r${to ? byTo.get(to)?.i : '?'}`]);
    }
    bad(null, `${unfinished.length} unfinished actor snapshots, by state: ${[...states].map(([v, ids]) => `${v}: ${ids.join(' ')}`).join('; ')}`);
  }
  if (sims.twilio.dialRequests().length !== dialsBeforeReplay) bad(null, `replaying the requests dialed ${sims.twilio.dialRequests().length - dialsBeforeReplay} more times`);
  if (unexpectedExits.length > 0) bad(null, `the service died on its own ${unexpectedExits.length} time(s):\n    ${unexpectedExits.join('\n    ')}`);
  for (const r of offending) {
    const req = reqs[r]!;
    const rec = rowsByTo.get(req.to)?.[0];
    const dials = sims.twilio.dialRequests(req.to).map((d) => d.fault ?? 'ok');
    const snap = rec ? (reader.prepare('SELECT snapshot, done FROM actor_snapshots WHERE actor_id = ?').get(rec.internal_id) as { snapshot: string; done: number } | undefined) : undefined;
    let machine = 'no snapshot';
    if (snap) {
      const p = JSON.parse(snap.snapshot) as { value: unknown; context: Record<string, unknown> };
      const c = p.context;
      machine = `snapshot ${JSON.stringify(p.value)} done=${snap.done} dialOutcome=${c.dialOutcome} queued=${c.queued} dialedAt=${c.dialedAt} restored=${c.restored} carrierError=${JSON.stringify(c.carrierError)}`;
    }
    const simCall = ourCalls().find((c) => c.to === req.to);
    problems.push(
      `  r${r}: attempts ${req.attempts} [${req.trace.join(', ')}] answered at ${req.answeredAt} ms; dial faults [${dials.join(', ')}]; record ${rec ? `${rec.internal_id}/${rec.call_id} ${rec.call_status}/${rec.ended_reason} carrier ${rec.carrier_call_id} started ${rec.started_at} ended ${rec.ended_at}` : 'none'}; ${machine}; carrier ${simCall ? `${simCall.sid} ${simCall.status} created ${simCall.createdAt} answered ${simCall.answeredAt} ended ${simCall.endedAt}` : 'none'}`,
    );
  }
  reader.close();

  const faults = new Map<string, number>();
  for (const d of sims.twilio.dialRequests()) faults.set(d.fault ?? 'ok', (faults.get(d.fault ?? 'ok') ?? 0) + 1);
  const otherFaultCounts = new Map<string, number>();
  for (const q of sims.twilio.requests) {
    const kind = TWILIO_ENDPOINTS.lookup(q) ? 'lookup' : TWILIO_ENDPOINTS.hangup(q) ? 'hangup' : null;
    if (kind) otherFaultCounts.set(`${kind} ${q.fault ?? 'ok'}`, (otherFaultCounts.get(`${kind} ${q.fault ?? 'ok'}`) ?? 0) + 1);
  }
  const absDiffs = endDiffs.map(Math.abs).sort((x, y) => x - y);
  const summary = {
    seed: SEED,
    kills: killLog.length,
    killsMidBoot: killLog.filter((k) => !k.ready).length,
    killsWithRequestsInFlight: killLog.filter((k) => k.inFlight > 0).length,
    killsWithCallsLiveAtCarrier: killLog.filter((k) => k.liveAtCarrier > 0).length,
    bootFailures: bootFailures.length,
    startMs: { first: rig.firstStartMs, slowest: rig.slowestStartMs },
    chaosMs,
    finalBootAt,
    settled,
    settledAt,
    totalMs: Date.now() - t0,
    answers: Object.fromEntries(answerKinds),
    dialFaults: Object.fromEntries(faults),
    otherRequests: Object.fromEntries(otherFaultCounts),
    attempts: reqs.reduce((n, r) => n + r.attempts, 0),
    lock: lockStats,
    serviceLog: { busy: logStats.busy, commitFailed: logStats.commitFailed, errors: Object.fromEntries(rig.errorLines) },
    endedAtDiffMs: absDiffs.length ? { median: absDiffs[absDiffs.length >> 1], max: absDiffs.at(-1) } : null,
    counts,
  };
  console.log(`[outbound-crash] ${JSON.stringify(summary)}`);
  if (bootFailures.length > 0) console.log(`[outbound-crash] boot failures (restarted):\n  ${bootFailures.slice(0, 5).join('\n  ')}`);
  if (problems.length > 0) {
    const msg = `crash test failed with CRASH_SEED=${SEED} (offending requests: ${[...offending].map((i) => `r${i}`).join(', ') || 'none'}):\n  ${problems.join('\n  ')}`;
    console.log(`[outbound-crash] ${msg}`);
    expect.fail(msg);
  }
});
