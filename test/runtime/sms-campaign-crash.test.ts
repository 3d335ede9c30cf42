// Issue 21, acceptance 4, the SMS campaign crash test: a running SMS campaign of
// SMS_CRASH_RECIPIENTS (500) recipients on a carrier A number and, alongside it on a
// carrier B number, one of SMS_CRASH_RECIPIENTS_B (500), while the service (a real child
// process on one port and one data folder, as `npm start` runs it: crash-harness.ts) is
// SIGKILLed SMS_CRASH_KILLS times (at least 20) at seeded random points and started again
// each time on the same DATA_DIR. The points are random, not quiet ones: a kill lands after
// a random number (0 to KILL_AFTER_SENDS) of new send requests have reached the carriers
// since the restart, then a random 0-30 ms more, so it falls among the commits around a
// send (queued, sending, the carrier's answer settled, the campaign's next intent); one
// kill in five lands instead at a random moment of the boot itself. Texts go every
// SMS_SEND_INTERVAL_MS (10 ms) per number. On top, both carriers meet seeded faults on
// their send endpoint: a share of sends is taken and its answer lost (`drop`: the outcome
// is unknown, so the message must be reconciled with the carrier's own list, never sent
// again), a share is reset before the carrier reads it (nothing sent: the reconciliation
// finds nothing and the text goes again, once). A few recipients of each campaign texted
// STOP to its number beforehand: they get no campaign text. Then the kills stop, the
// service is started once more, both campaigns run to their end, and, judged by the
// carriers' own records:
//   (1) every recipient was texted exactly once: one message accepted by the carrier to
//       their number, with their own text; one send request for it, besides requests the
//       carrier never read (reset); no message to anyone else;
//   (2) none skipped: every recipient's row has its one message, settled, naming the
//       carrier's message the carrier accepted (a reconciliation found the right one);
//       the opted-out recipients' rows failed `recipient_unsubscribed`, never sent;
//   (3) each campaign `done`, delivered + failed + pending = total, pending 0, and the
//       API's delivered_count equals the carrier's count of its texts delivered and its
//       failed_count the carrier's failed ones plus the opted-out recipients, though some
//       failure reports reached no running service (the boot's delivery report sweep asks);
//   (4) nothing left: no effect intent, no deadline, no unfinished actor snapshot, no
//       message queued or sending; the service never died on its own.
// The seed fixes the plan (recipients, kill points, faults per recipient), not the
// interleaving with the service's own timing. It is printed at the start and with every
// failure.
//   SMS_CRASH_SEED          the seed (default: random)
//   SMS_CRASH_KILLS         SIGKILLs (default 20; never fewer than 20)
//   SMS_CRASH_RECIPIENTS    carrier A campaign's recipients (default 500)
//   SMS_CRASH_RECIPIENTS_B  carrier B campaign's recipients (default 500; 0: none)
//   SMS_CRASH_INTERVAL_MS   SMS_SEND_INTERVAL_MS of the service (default 10)
//   SMS_CRASH_DROP_RATE     share of sends whose answer is lost (default 0.03)
//   SMS_CRASH_RESET_RATE    share of sends reset before the carrier reads them (default 0.01)
//   SMS_CRASH_FAIL_SHARE    share of recipients whose text the carrier fails to deliver
//                           (default 0.05)
//   SMS_CRASH_LOG           a file to append every service log line to
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { newCustomer, type CallStack, type Customer } from '../helpers/calls.ts';
import { OPT_OUT_CONFIRMATION } from '../../actors/sms/opt-out.ts';
import { renderTemplate } from '../../actors/sms/message-template.ts';
import type { SimSentMessage } from '../sim/sms-common.ts';
import type { RecordedRequest } from '../sim/sim-http.ts';
import { seededStreams, startCrashRig, uniform, type CrashRig } from './crash-harness.ts';
import { remote, sleep } from './support.ts';

const envNumber = (name: string, fallback: number, min = 1): number => {
  const v = Number(process.env[name] ?? fallback);
  return Number.isFinite(v) && v >= min ? Math.floor(v) : fallback;
};
const envRate = (name: string, fallback: number): number => {
  const v = Number(process.env[name] ?? fallback);
  return Number.isFinite(v) && v >= 0 && v < 1 ? v : fallback;
};
const SEED = process.env.SMS_CRASH_SEED ? Number(process.env.SMS_CRASH_SEED) >>> 0 : (Math.floor(Math.random() * 2 ** 32) >>> 0);
const KILLS = Math.max(20, envNumber('SMS_CRASH_KILLS', 20));
const RECIPIENTS_A = envNumber('SMS_CRASH_RECIPIENTS', 500);
const RECIPIENTS_B = envNumber('SMS_CRASH_RECIPIENTS_B', 500, 0);
const INTERVAL_MS = envNumber('SMS_CRASH_INTERVAL_MS', 10, 0);
const DROP_RATE = envRate('SMS_CRASH_DROP_RATE', 0.03);
const RESET_RATE = envRate('SMS_CRASH_RESET_RATE', 0.01);
const FAIL_SHARE = envRate('SMS_CRASH_FAIL_SHARE', 0.05);
/** Recipients of each campaign who texted STOP to its number before it was created. */
const OPTED_OUT = 3;
/** A kill lands after 0..KILL_AFTER_SENDS new send requests since the restart, then 0..KILL_JITTER_MS more. */
const KILL_AFTER_SENDS = 40;
const KILL_JITTER_MS: [number, number] = [0, 30];
/** …unless the sends do not come (a reconciliation's wait): then after this long anyway. */
const KILL_WAIT_CAP_MS = 4000;
const BOOT_KILL_SHARE = 0.2;
/** The carriers' pause between a call's steps (no calls here) and, by default, a message's (queued → sent → final). */
const SIM_STEP_MS = 20;
const SETTLE_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = 420_000;
const FIRST_START_LIMIT_MS = 60_000;
const MIN_START_LIMIT_MS = 20_000;
const START_LIMIT_FACTOR = 10;
const LOG_FILE = process.env.SMS_CRASH_LOG;
const TEMPLATE = 'Hi {{name}}, your code is {{code}}. Reply STOP to opt out.';

console.log(
  `[sms-crash] SMS_CRASH_SEED=${SEED} SMS_CRASH_KILLS=${KILLS} SMS_CRASH_RECIPIENTS=${RECIPIENTS_A} SMS_CRASH_RECIPIENTS_B=${RECIPIENTS_B} ` +
    `SMS_CRASH_INTERVAL_MS=${INTERVAL_MS} SMS_CRASH_DROP_RATE=${DROP_RATE} SMS_CRASH_RESET_RATE=${RESET_RATE} SMS_CRASH_FAIL_SHARE=${FAIL_SHARE}`,
);

const stream = seededStreams(SEED);

// ---- The plan -----------------------------------------------------------------------

type Carrier = 'twilio' | 'telnyx';

interface Recipient {
  carrier: Carrier;
  seq: number;
  phone: string;
  variables: { name: string; code: number };
  optedOut: boolean;
  /** The carrier fails to deliver their text (SMS_CRASH_FAIL_SHARE). */
  fails: boolean;
}

interface Kill {
  mode: 'run' | 'boot';
  sends: number;
  bootShare: number;
  jitterMs: number;
}

function makePlan(): { byCarrier: Record<Carrier, Recipient[]>; kills: Kill[] } {
  const numRnd = stream('numbers');
  const r = stream('plan');
  const taken = new Set<string>();
  const make = (carrier: Carrier, n: number): Recipient[] => {
    const optOutAt = new Set<number>();
    while (optOutAt.size < Math.min(OPTED_OUT, n)) optOutAt.add(Math.floor(r() * n));
    return Array.from({ length: n }, (_, seq) => {
      let phone: string;
      // Distinct real numbers (San Francisco's 628 area, exchanges from 200).
      do phone = `+1628${String(2_000_000 + Math.floor(numRnd() * 7_000_000))}`;
      while (taken.has(phone));
      taken.add(phone);
      const optedOut = optOutAt.has(seq);
      return { carrier, seq, phone, variables: { name: `R${carrier[0]}${seq}`, code: Math.floor(r() * 1e6) }, optedOut, fails: !optedOut && r() < FAIL_SHARE };
    });
  };
  const byCarrier = { twilio: make('twilio', RECIPIENTS_A), telnyx: make('telnyx', RECIPIENTS_B) };
  const killRnd = stream('kills');
  const kills = Array.from({ length: KILLS }, (): Kill => ({
    mode: killRnd() < BOOT_KILL_SHARE ? 'boot' : 'run',
    sends: uniform(killRnd, [0, KILL_AFTER_SENDS]),
    bootShare: killRnd(),
    jitterMs: uniform(killRnd, KILL_JITTER_MS),
  }));
  return { byCarrier, kills };
}

// ---- The test -----------------------------------------------------------------------

let crash: CrashRig | undefined;
const cleanups: (() => void | Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0)) await c();
  await crash?.close();
});

const total = RECIPIENTS_A + RECIPIENTS_B;
it(`SMS campaigns of ${RECIPIENTS_A} (carrier A) and ${RECIPIENTS_B} (carrier B) recipients text each exactly once through ${KILLS} SIGKILLs and lost answers (seed ${SEED})`, { timeout: TEST_TIMEOUT_MS }, async () => {
  const t0 = Date.now();
  const { byCarrier, kills } = makePlan();
  let unknownOutcomes = 0;
  let failedAsks = 0;
  const rig = await startCrashRig({
    simStepMs: SIM_STEP_MS,
    env: { SMS_SEND_INTERVAL_MS: String(INTERVAL_MS), SMS_RESEND_AFTER_MS: '200' },
    seed: SEED,
    t0,
    logFile: LOG_FILE,
    firstStartLimitMs: FIRST_START_LIMIT_MS,
    minStartLimitMs: MIN_START_LIMIT_MS,
    startLimitFactor: START_LIMIT_FACTOR,
    onLine: (line) => {
      if (line.includes('SMS send outcome unknown')) unknownOutcomes++;
      if (line.includes('asking the carrier about an SMS failed')) failedAsks++;
    },
  });
  crash = rig;
  const { sims, base, launch, up, killNow, unexpectedExits, bootFailures } = rig;
  const simOf = (c: Carrier) => (c === 'twilio' ? sims.twilio : sims.telnyx);
  const carriers = (['twilio', 'telnyx'] as const).filter((c) => byCarrier[c].length > 0);

  // ---- Setup: a customer with a number on each carrier; a few recipients opt out; the carriers' faults.
  launch();
  await up();
  const server = remote(base);
  const customers = {} as Record<Carrier, Customer>;
  for (const c of carriers) customers[c] = await newCustomer({ sims, server } as CallStack, c);
  const all = carriers.flatMap((c) => byCarrier[c]);
  const byPhone = new Map(all.map((x) => [x.phone, x]));
  for (const x of all) {
    if (x.fails) {
      if (x.carrier === 'twilio') sims.twilio.messages.outcome(x.phone, 'undelivered');
      else sims.telnyx.messages.outcome(x.phone, 'delivery_failed');
    }
  }
  for (const x of all.filter((y) => y.optedOut)) {
    const got = await simOf(x.carrier).messages.receive({ from: x.phone, to: customers[x.carrier].number, body: 'STOP' });
    expect(got.status, `STOP from ${x.phone}: ${got.error}`).toBe(200);
  }
  // Their STOP confirmations have gone (before any fault), so each has exactly one text from the number already.
  const confirmUntil = Date.now() + 15_000;
  while (all.some((x) => x.optedOut && simOf(x.carrier).messages.sent(x.phone).length === 0) && Date.now() < confirmUntil) await sleep(20);
  for (const c of carriers) simOf(c).chaos({ seed: SEED, match: 'message', dropRate: DROP_RATE, resetRate: RESET_RATE });

  // ---- The campaigns: created with an Idempotency-Key each, retried until answered.
  const createTrace: string[] = [];
  const campaignIds = {} as Record<Carrier, string>;
  for (const c of carriers) {
    const body = {
      agent_id: customers[c].agentId,
      from_number: customers[c].number,
      name: `sms crash ${SEED} ${c}`,
      message_template: TEMPLATE,
      recipients: byCarrier[c].map((x) => ({ phone: x.phone, variables: x.variables })),
      schedule_type: 'now',
    };
    let created: any = null;
    for (let attempt = 0; created === null && attempt < 50; attempt++) {
      try {
        const res = await fetch(`${base}/v1/sms/campaigns`, {
          method: 'POST',
          headers: { authorization: `Bearer ${customers[c].key}`, 'content-type': 'application/json', 'idempotency-key': `sms-crash-${SEED}-${c}` },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(20_000),
        });
        const text = await res.text();
        createTrace.push(`${c} ${res.status}`);
        if (res.status === 201) created = JSON.parse(text);
        else if (res.status < 500 && res.status !== 409 && res.status !== 429) throw new Error(`campaign creation answered ${res.status}: ${text.slice(0, 500)}`);
      } catch (err) {
        if (String(err).includes('campaign creation answered')) throw err;
        createTrace.push(`${c} net ${(err as { cause?: { code?: string } }).cause?.code ?? 'error'}`);
        await up();
      }
    }
    expect(created, `campaign creation: ${createTrace.join(', ')}`).not.toBeNull();
    expect(created).toMatchObject({ status: 'running', total_count: byCarrier[c].length });
    campaignIds[c] = created.campaign_id as string;
  }

  // ---- The kills.
  const reader = new Database(rig.dbFile, { readonly: true });
  cleanups.push(() => {
    if (reader.open) reader.close();
  });
  const count = (sql: string, ...args: unknown[]): number => (reader.prepare(sql).get(...args) as { n: number }).n;
  const sendsSoFar = (): number => carriers.reduce((n, c) => n + simOf(c).messages.requests().length, 0);
  const killLog: { at: number; mode: string; ready: boolean; sendsInCycle: number; sendsTotal: number; sendingRows: number; capped: boolean }[] = [];
  for (const kill of kills) {
    if (!rig.proc) launch();
    const cycleSends = sendsSoFar();
    let capped = false;
    if (kill.mode === 'boot') {
      await Promise.race([sleep(Math.round(kill.bootShare * (rig.firstStartMs ?? 1500))), rig.proc!.exited]);
    } else {
      await up();
      const readySends = sendsSoFar();
      const until = Date.now() + KILL_WAIT_CAP_MS;
      while (sendsSoFar() - readySends < kill.sends && Date.now() < until) await sleep(2);
      capped = sendsSoFar() - readySends < kill.sends;
      await sleep(kill.jitterMs);
    }
    const ready = rig.proc?.ready ?? false;
    await killNow();
    // What the kill left for the next boot to reconcile: messages committed `sending`.
    killLog.push({ at: Date.now() - t0, mode: kill.mode, ready, sendsInCycle: sendsSoFar() - cycleSends, sendsTotal: sendsSoFar(), sendingRows: count("SELECT COUNT(*) AS n FROM sms_messages WHERE status = 'sending'"), capped });
  }
  const chaosMs = Date.now() - t0;
  const sendsAtLastKill = sendsSoFar();

  // ---- One last start; the campaigns run to their end.
  await up();
  const finalBootAt = Date.now() - t0;
  const statusOf = (id: string): string | undefined => (reader.prepare('SELECT status FROM sms_campaigns WHERE id = ?').get(id) as { status: string } | undefined)?.status;
  const FINAL_AT_CARRIER = new Set(['delivered', 'undelivered', 'failed', 'delivery_failed', 'sending_failed', 'delivery_unconfirmed']);
  const ours = (c: Carrier): SimSentMessage[] => simOf(c).messages.sent().filter((m) => m.from === customers[c].number);
  const settledNow = (): boolean =>
    carriers.every((c) => statusOf(campaignIds[c]) === 'done') &&
    count("SELECT COUNT(*) AS n FROM sms_messages WHERE status IN ('queued', 'sending')") === 0 &&
    count('SELECT COUNT(*) AS n FROM effect_intents') === 0 &&
    count('SELECT COUNT(*) AS n FROM actor_snapshots WHERE done = 0') === 0 &&
    carriers.every((c) => ours(c).every((m) => FINAL_AT_CARRIER.has(m.status)));
  const settleUntil = Date.now() + SETTLE_TIMEOUT_MS;
  let settled = false;
  while (Date.now() < settleUntil && !(settled = settledNow())) await sleep(200);
  // The last status callbacks reach the service.
  await sleep(300);
  const settledAt = Date.now() - t0;

  // ---- The verdict.
  const problems: string[] = [];
  const offending = new Set<Recipient>();
  const bad = (x: Recipient | null, msg: string) => {
    problems.push(x ? `${x.carrier} seq ${x.seq} (${x.phone}${x.optedOut ? ', opted out' : ''}): ${msg}` : msg);
    if (x) offending.add(x);
  };
  if (!settled) {
    bad(
      null,
      `not settled ${SETTLE_TIMEOUT_MS} ms after the last start: campaigns ${carriers.map((c) => `${c} ${statusOf(campaignIds[c])}`).join(', ')}, ` +
        `${count("SELECT COUNT(*) AS n FROM sms_messages WHERE status IN ('queued', 'sending')")} messages queued or sending, ${count('SELECT COUNT(*) AS n FROM effect_intents')} intents, ` +
        `${count('SELECT COUNT(*) AS n FROM actor_snapshots WHERE done = 0')} unfinished snapshots`,
    );
  }

  type MessageRow = { message_id: string; to_number: string; status: string; carrier_message_id: string | null; error_code: string | null; campaign_seq: number | null; attempts: number; body: string };
  type RecipientRow = { seq: number; phone: string; state: string; message_id: string | null };
  const toOf = (c: Carrier, r: RecordedRequest<unknown>): string | undefined => {
    const b = r.body as Record<string, unknown> | undefined;
    const to = c === 'twilio' ? b?.['To'] : b?.['to'];
    return Array.isArray(to) ? String(to[0]) : typeof to === 'string' ? to : undefined;
  };
  const faults = { drop: 0, reset: 0 };
  const outcome = { sent: 0, optedOut: 0, resent: 0, reconciledFound: 0 };
  const records: Record<string, unknown> = {};
  for (const c of carriers) {
    const sim = simOf(c);
    const campaignId = campaignIds[c];
    const number = customers[c].number;
    const rows = reader.prepare('SELECT message_id, to_number, status, carrier_message_id, error_code, campaign_seq, attempts, body FROM sms_messages WHERE campaign_id = ?').all(campaignId) as MessageRow[];
    const rowsBySeq = new Map<number, MessageRow[]>();
    for (const row of rows) rowsBySeq.set(row.campaign_seq ?? -1, [...(rowsBySeq.get(row.campaign_seq ?? -1) ?? []), row]);
    const recipientRows = reader.prepare('SELECT seq, phone, state, message_id FROM sms_recipients WHERE campaign_id = ? ORDER BY seq').all(campaignId) as RecipientRow[];
    if (recipientRows.length !== byCarrier[c].length) bad(null, `${c}: ${recipientRows.length} recipient rows, ${byCarrier[c].length} recipients sent`);
    const requestsByTo = new Map<string, RecordedRequest<unknown>[]>();
    for (const r of sim.messages.requests() as RecordedRequest<unknown>[]) {
      const to = toOf(c, r) ?? '?';
      requestsByTo.set(to, [...(requestsByTo.get(to) ?? []), r]);
      if (r.fault === 'drop') faults.drop++;
      if (r.fault === 'reset') faults.reset++;
    }
    let simDelivered = 0;
    let simFailed = 0;
    for (const x of byCarrier[c]) {
      const text = renderTemplate(TEMPLATE, x.variables);
      const sent = sim.messages.sent(x.phone).filter((m) => m.from === number);
      const reqs = requestsByTo.get(x.phone) ?? [];
      const read = reqs.filter((r) => r.fault !== 'reset');
      const row = recipientRows.find((rr) => rr.seq === x.seq);
      const msgRows = rowsBySeq.get(x.seq) ?? [];
      if (!row) {
        bad(x, 'no recipient row');
        continue;
      }
      if (row.phone !== x.phone) bad(x, `its row has phone ${row.phone}`);
      if (msgRows.length !== 1) bad(x, `${msgRows.length} message rows for the recipient`);
      const msg = msgRows[0];
      if (row.message_id === null || (msg && row.message_id !== msg.message_id)) bad(x, `its row names message ${row.message_id}, the campaign's message for it is ${msg?.message_id}`);
      if (x.optedOut) {
        // (1) only the STOP confirmation, sent before the campaign; (2) failed recipient_unsubscribed.
        outcome.optedOut++;
        if (sent.length !== 1 || sent[0]!.body !== OPT_OUT_CONFIRMATION) bad(x, `texted ${sent.length} times: ${sent.map((m) => JSON.stringify(m.body.slice(0, 40))).join(', ')} (only the STOP confirmation was due)`);
        if (read.length !== 1) bad(x, `${read.length} send requests read by the carrier (only the STOP confirmation was due)`);
        if (msg && (msg.status !== 'failed' || msg.error_code !== 'recipient_unsubscribed' || msg.carrier_message_id !== null)) bad(x, `its message is ${msg.status} (${msg.error_code}), carrier id ${msg.carrier_message_id}`);
        if (row.state !== 'failed') bad(x, `recipient row ${row.state}`);
        continue;
      }
      // (1) exactly one text, its own; one request the carrier read (a reset one it never read).
      if (sent.length === 0) bad(x, `never texted (message ${msg ? `${msg.status}, ${msg.attempts} attempts` : 'none'}, ${reqs.length} requests: ${reqs.map((r) => r.fault ?? 'ok').join(', ')})`);
      if (sent.length > 1) bad(x, `texted ${sent.length} times (requests: ${reqs.map((r) => r.fault ?? 'ok').join(', ')})`);
      if (sent.length >= 1 && sent.some((m) => m.body !== text)) bad(x, `texted ${JSON.stringify(sent[0]!.body)}, not its own text ${JSON.stringify(text)}`);
      if (read.length !== 1) bad(x, `${read.length} send requests read by the carrier (${reqs.map((r) => r.fault ?? 'ok').join(', ')})`);
      if (reqs.length > 1) outcome.resent++;
      // (2) its row settled on the carrier's message.
      if (msg) {
        if (msg.status === 'queued' || msg.status === 'sending' || msg.status === 'cancelled' || msg.status === 'failed') bad(x, `its message is ${msg.status} (${msg.error_code})`);
        if (sent.length === 1 && msg.carrier_message_id !== sent[0]!.sid) bad(x, `its message names carrier message ${msg.carrier_message_id}, the carrier accepted ${sent[0]!.sid}`);
        if (msg.body !== text) bad(x, `its message body is ${JSON.stringify(msg.body)}`);
      }
      if (read.some((r) => r.fault === 'drop')) outcome.reconciledFound++;
      if (row.state !== 'delivered' && row.state !== 'failed') bad(x, `recipient row still ${row.state}`);
      if (sent.length === 1) {
        outcome.sent++;
        if (sent[0]!.status === 'delivered') simDelivered++;
        else simFailed++;
        if (!FINAL_AT_CARRIER.has(sent[0]!.status)) bad(x, `the carrier's message is still ${sent[0]!.status}`);
      }
    }
    // No one else was texted from the number.
    const stray = ours(c).filter((m) => !byPhone.has(m.to));
    if (stray.length > 0) bad(null, `${c}: ${stray.length} texts to numbers that are not recipients: ${stray.slice(0, 5).map((m) => m.to).join(', ')}`);
    const strayRows = rows.filter((r) => !byPhone.has(r.to_number));
    if (strayRows.length > 0) bad(null, `${c}: ${strayRows.length} campaign message rows to numbers that are not recipients`);

    // (3) the campaign's record, through the API.
    const record = (await server.request('GET', `/v1/sms/campaigns/${campaignId}`, { key: customers[c].key })).body as Record<string, any>;
    records[c] = record && { status: record.status, delivered: record.delivered_count, failed: record.failed_count, pending: record.pending_count, cancelled: record.cancelled_count, simDelivered, simFailed };
    const n = byCarrier[c].length;
    const optedOut = byCarrier[c].filter((x) => x.optedOut).length;
    if (record?.status !== 'done') bad(null, `${c}: campaign status ${record?.status}`);
    if (record?.total_count !== n || record?.delivered_count + record?.failed_count + record?.pending_count !== n) bad(null, `${c}: counts do not add up to total ${n}: ${JSON.stringify(record)}`);
    if (record?.pending_count !== 0 || record?.cancelled_count !== 0) bad(null, `${c}: pending ${record?.pending_count}, cancelled ${record?.cancelled_count}`);
    // A failure the carrier reports after taking a text arrives as a status callback; some of
    // those reach no running service (it was down) or come before the text's row knows the
    // carrier's id (its answer was lost). The delivery report sweep asks the carrier about
    // every text still `sent` at each boot, so the counts match the carrier's exactly.
    if (record?.delivered_count !== simDelivered) bad(null, `${c}: delivered_count ${record?.delivered_count}, the carrier delivered ${simDelivered}`);
    if (record?.failed_count !== simFailed + optedOut) bad(null, `${c}: failed_count ${record?.failed_count}, the carrier failed ${simFailed} and ${optedOut} recipients opted out`);
    if (!record?.started_at || !record?.finished_at) bad(null, `${c}: started_at ${record?.started_at}, finished_at ${record?.finished_at}`);
  }

  // (4) nothing left behind.
  const intents = reader.prepare('SELECT actor_id, effect FROM effect_intents').all() as { actor_id: string; effect: string }[];
  if (intents.length > 0) bad(null, `${intents.length} pending effect intents: ${intents.slice(0, 10).map((i) => `${i.actor_id}:${i.effect}`).join(', ')}`);
  const deadlines = count('SELECT COUNT(*) AS n FROM deadlines');
  if (deadlines > 0) bad(null, `${deadlines} deadlines left`);
  const unfinished = reader.prepare('SELECT actor_id, kind, snapshot FROM actor_snapshots WHERE done = 0').all() as { actor_id: string; kind: string; snapshot: string }[];
  if (unfinished.length > 0) bad(null, `${unfinished.length} unfinished actor snapshots: ${unfinished.slice(0, 5).map((u) => `${u.kind} ${u.actor_id} ${u.snapshot.slice(0, 300)}`).join('; ')}`);
  const unsettled = count("SELECT COUNT(*) AS n FROM sms_messages WHERE status IN ('queued', 'sending')");
  if (unsettled > 0) bad(null, `${unsettled} messages still queued or sending`);
  if (unexpectedExits.length > 0) bad(null, `the service died on its own ${unexpectedExits.length} time(s):\n    ${unexpectedExits.join('\n    ')}`);
  for (const x of [...offending].slice(0, 20)) {
    const sim = simOf(x.carrier);
    const rows = reader.prepare('SELECT message_id, status, attempts, attempted_at, carrier_message_id, error_code, updated_at FROM sms_messages WHERE to_number = ?').all(x.phone);
    problems.push(
      `  ${x.carrier} seq ${x.seq}: rows ${JSON.stringify(rows)}; carrier ${sim.messages.sent(x.phone).map((m) => `${m.sid} ${m.status} at ${m.at - t0}`).join(', ') || 'none'}; ` +
        `requests ${sim.messages.requests(x.phone).map((r) => r.fault ?? 'ok').join(', ') || 'none'}`,
    );
  }

  const summary = {
    seed: SEED,
    recipients: { twilio: RECIPIENTS_A, telnyx: RECIPIENTS_B },
    intervalMs: INTERVAL_MS,
    kills: killLog.length,
    killsMidBoot: killLog.filter((k) => !k.ready).length,
    killsWithASendOut: killLog.filter((k) => k.sendingRows > 0).length,
    killsCapped: killLog.filter((k) => k.capped).length,
    sendsPerCycle: killLog.map((k) => k.sendsInCycle).join(' '),
    sendsAtLastKill,
    faults,
    unknownOutcomesLogged: unknownOutcomes,
    failedAsks,
    outcome,
    records,
    bootFailures: bootFailures.length,
    startMs: { first: rig.firstStartMs, slowest: rig.slowestStartMs },
    create: createTrace.join(' '),
    chaosMs,
    finalBootAt,
    settled,
    settledAt,
    totalMs: Date.now() - t0,
    serviceErrors: Object.fromEntries(rig.errorLines),
  };
  console.log(`[sms-crash] ${JSON.stringify(summary)}`);
  if (problems.length > 0) {
    const msg = `SMS campaign crash test failed with SMS_CRASH_SEED=${SEED} (${problems.length} problems):\n  ${problems.slice(0, 60).join('\n  ')}`;
    console.log(`[sms-crash] ${msg}`);
    expect.fail(msg);
  }
  expect(outcome.sent + outcome.optedOut).toBe(total);
});
