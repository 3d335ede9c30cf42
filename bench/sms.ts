// SMS benchmark (issue 21, acceptance 5), `BENCH_ONLY=sms npm run bench`: two measurements
// against the real service in a forked process (server.ts, the node flags of `npm start`),
// on a fresh SQLite file, with SMS_SEND_INTERVAL_MS=0 (no pacing: what the service itself
// costs), and both carriers' simulators in this process. The server's CPU is measured as
// the batch bench does (batch.ts): process.cpuUsage of the server (every thread), asked
// over IPC before and after; its event loop's lateness and the time its event loop's
// thread waited for a CPU (schedstat) are shown beside it.
//
// 1. Creating a campaign: POST /v1/sms/campaigns with BENCH_SMS_RECIPIENTS (10,000)
//    distinct valid US numbers, each row with `variables: {first_name}` filled into the
//    template, as `draft` (nothing is sent), timed from the request leaving to the whole
//    answer read, with the server's CPU over the same span. One cold request first, shown
//    apart, then BENCH_SMS_CREATE_ROUNDS (5) give p50 and max. Each is cancelled (DELETE,
//    timed too) once measured; checked: the answer's status and counts, every recipient
//    cancelled.
// 2. Sending: BENCH_SMS_SEND_RECIPIENTS (2,000) recipients per step, every text delivered
//    by the carrier (status callbacks `sent` and `delivered` come back to the service for
//    each), in the steps of BENCH_SMS_STEPS (default `twilio:1,telnyx:1,twilio:4`: carrier
//    and sending numbers; the recipients split between that many campaigns, one per
//    number, which send in parallel). The campaigns are created as drafts and timed from
//    the first POST …/launch to the last status callback answered, every campaign `done`:
//    messages per second (the simulator's record of accepted messages is the count) and
//    the server's CPU per message (its CPU over the run, status callbacks included,
//    divided by the messages). One campaign sends one text at a time (the next recipient
//    is asked for once the carrier answered the last): its rate is the round trip's, not
//    the CPU's; the steps with more numbers show how the rate grows with them.
//    Checked, not assumed, and printed: as each send reaches the simulator its message
//    row is already committed `sending` and its recipient row names it (read on a
//    `query_only` connection); every recipient texted exactly once; the campaigns' counts;
//    nothing left queued or sending.
// The service's log (stdout, LOG_LEVEL, info by default) is read for warnings and errors,
// summarised at the end. BENCH_PIN=0: the server not bound to a CPU, nobody reniced.
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openDatabase, type Db } from '../storage/db.ts';
import { importTelnyxNumber, importTwilioNumber } from '../test/helpers/fixtures.ts';
import type { RecordedRequest } from '../test/sim/sim-http.ts';
import { TWILIO_ENDPOINTS } from '../test/sim/twilio-sim.ts';
import { TELNYX_ENDPOINTS } from '../test/sim/telnyx-sim.ts';
import type { SimSentMessage } from '../test/sim/sms-common.ts';
import { benchCustomer } from './bench-customer.ts';
import { first } from './dial-probe.ts';
import { benchPhone, percentile, steadyRate } from './batch-plan.ts';
import { idleCpuPerSecond, runQueueWaitMs, send, serverCpuMs, serverLoopDelay } from './batch.ts';
import { startBenchServer } from './bench-server.ts';
import { machineTicks } from './process-cpu.ts';

export interface SmsBenchOptions {
  /** Recipients of each timed creation (BENCH_SMS_RECIPIENTS). */
  recipients: number;
  /** Timed creations after the cold one (BENCH_SMS_CREATE_ROUNDS). */
  createRounds: number;
  /** Recipients of each sending step (BENCH_SMS_SEND_RECIPIENTS). */
  sendRecipients: number;
  /** The sending steps: carrier and sending numbers (BENCH_SMS_STEPS). */
  steps: { carrier: 'twilio' | 'telnyx'; numbers: number }[];
  /** Give up on a sending step after this long (BENCH_SMS_TIMEOUT_S). */
  timeoutS: number;
}

/** Parses BENCH_SMS_STEPS: `twilio:1,telnyx:1,twilio:4`. */
export function parseSmsSteps(text: string): SmsBenchOptions['steps'] {
  return text.split(',').map((s) => {
    const [carrier, n] = s.trim().split(':');
    const numbers = Number(n ?? 1);
    if ((carrier !== 'twilio' && carrier !== 'telnyx') || !Number.isInteger(numbers) || numbers < 1) throw new Error(`BENCH_SMS_STEPS: "${s}" is not carrier:numbers (twilio:1, telnyx:4)`);
    return { carrier, numbers };
  });
}

const TEMPLATE = 'Hi {{first_name}}, a reminder of your appointment tomorrow at 10:00. Reply STOP to opt out.';
/** Number blocks (batch-plan.ts benchPhone): the created-and-cancelled campaigns, then one per sending step. */
const CREATE_BLOCK = 0;
const FINAL_AT_CARRIER = new Set(['delivered', 'undelivered', 'failed', 'delivery_failed', 'sending_failed', 'delivery_unconfirmed']);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

function campaignBody(o: { agentId: string; fromNumber: string; name: string; phones: readonly string[]; offset?: number }): Buffer {
  return Buffer.from(
    JSON.stringify({
      agent_id: o.agentId,
      from_number: o.fromNumber,
      name: o.name,
      message_template: TEMPLATE,
      recipients: o.phones.map((phone, i) => ({ phone, variables: { first_name: `R${(o.offset ?? 0) + i}` } })),
      schedule_type: 'draft',
    }),
  );
}

export async function runSmsBench(o: SmsBenchOptions): Promise<void> {
  // Each message in the simulators waits on their one closing signal: thousands at once are expected, not a leak.
  setMaxListeners(100_000);
  const bench = await startBenchServer('sms', { SMS_SEND_INTERVAL_MS: '0' });
  const { child, sims, dataDir, url, server, placement, log } = bench;
  const port = Number(new URL(url).port);
  let db: Db | null = null;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  try {
    const { key, accountId, agentId, fromNumber } = await benchCustomer(server, sims, dataDir, 10);
    const auth = { authorization: `Bearer ${key}` };
    db = openDatabase(join(dataDir, 'switchboard.db'));
    db.pragma('query_only = ON');

    // Idle baseline: what the server burns doing nothing (timers, scheduler), for scale.
    const idleCpuPerS = await idleCpuPerSecond(child);

    // ---- 1. Creating a campaign of o.recipients --------------------------------------
    const createPhones = Array.from({ length: o.recipients }, (_, i) => benchPhone(CREATE_BLOCK, i));
    interface CreateRound {
      ms: number;
      cpuMs: number;
      bytes: number;
      waitMs: number;
      cancelMs: number;
      error: string | null;
    }
    const rounds: CreateRound[] = [];
    for (let r = 0; r <= o.createRounds; r++) {
      const body = campaignBody({ agentId, fromNumber, name: `Bench create ${r}`, phones: createPhones });
      await sleep(200);
      const wait0 = runQueueWaitMs(child.pid!);
      const cpu0 = await serverCpuMs(child);
      const res = await send(agent, port, 'POST', '/v1/sms/campaigns', { ...auth, 'idempotency-key': `bench-sms-create-${r}` }, body);
      const cpuMs = (await serverCpuMs(child)) - cpu0;
      const round: CreateRound = { ms: res.ms, cpuMs, bytes: body.length, waitMs: runQueueWaitMs(child.pid!) - wait0, cancelMs: NaN, error: null };
      rounds.push(round);
      if (res.status !== 201 || res.body?.status !== 'draft' || res.body?.total_count !== o.recipients || res.body?.pending_count !== o.recipients) {
        round.error = `create: ${res.status} ${res.text.slice(0, 400)}`;
        continue;
      }
      const id = res.body.campaign_id as string;
      const cancel = await send(agent, port, 'DELETE', `/v1/sms/campaigns/${id}`, auth);
      round.cancelMs = cancel.ms;
      if (cancel.status !== 200 || cancel.body?.cancelled_count !== o.recipients) round.error = `cancel: ${cancel.status} ${cancel.text.slice(0, 400)}`;
      const rec = await send(agent, port, 'GET', `/v1/sms/campaigns/${id}`, auth);
      if (rec.body?.status !== 'cancelled' || rec.body?.cancelled_count !== o.recipients) {
        round.error = `${round.error ? `${round.error}; ` : ''}after cancel: status ${rec.body?.status}, cancelled_count ${rec.body?.cancelled_count}`;
      }
    }
    const createdTexts = sims.twilio.messages.requests().length;
    const cold = rounds[0]!;
    const warm = rounds.slice(1);
    const warmMs = warm.map((x) => x.ms).sort((a, b) => a - b);
    const warmCpu = warm.map((x) => x.cpuMs).sort((a, b) => a - b);
    const warmOwn = warm.map((x) => x.ms - x.waitMs).sort((a, b) => a - b);
    const warmCancel = warm.map((x) => x.cancelMs).sort((a, b) => a - b);
    console.log(
      `\nSMS campaign creation: POST /v1/sms/campaigns with ${o.recipients} distinct valid US numbers (each row with variables {first_name}), ` +
        `${(cold.bytes / 1024).toFixed(0)} KiB body; schedule_type "draft" (sends nothing) and cancelled (DELETE) right after each measurement; ${placement}`,
    );
    const row = (cells: string[]) => console.log(cells.map((v, i) => (i === 0 ? v.padEnd(22) : v.padStart(12))).join(''));
    row(['', 'p50 ms', 'max ms', 'CPU p50 ms', 'CPU max ms', 'own p50 ms', 'own max ms', 'cancel p50', 'rounds']);
    row(['timed rounds', fmt(percentile(warmMs, 50)), fmt(Math.max(...warmMs)), fmt(percentile(warmCpu, 50)), fmt(Math.max(...warmCpu)), fmt(percentile(warmOwn, 50)), fmt(Math.max(...warmOwn)), fmt(percentile(warmCancel, 50)), String(warm.length)]);
    row(['cold (first request)', fmt(cold.ms), '', fmt(cold.cpuMs), '', fmt(cold.ms - cold.waitMs), '', fmt(cold.cancelMs), '1']);
    console.log('(ms: request → response as the client sees it; CPU: the server process over that span; own: ms less the time its event loop waited for a CPU)');
    console.log(
      `each round, request → response ms / server CPU ms / ms its event loop waited for a CPU: ${rounds.map((x, i) => `${i === 0 ? 'cold ' : ''}${fmt(x.ms, 0)}/${fmt(x.cpuMs, 0)}/${fmt(x.waitMs, 0)}`).join(', ')}`,
    );
    const goalMs = 500;
    console.log(
      `goal: under ${goalMs} ms on one core: request → response p50 ${percentile(warmMs, 50) < goalMs ? 'meets' : 'misses'} it, max ${Math.max(...warmMs) < goalMs ? 'meets' : 'misses'} it; ` +
        `less the waits for a CPU p50 ${percentile(warmOwn, 50) < goalMs ? 'meets' : 'misses'} it, max ${Math.max(...warmOwn) < goalMs ? 'meets' : 'misses'} it; ` +
        `server idle ${fmt(idleCpuPerS)} ms CPU per second; ${createdTexts} texts sent for the drafts (0 expected)`,
    );
    for (const [i, x] of rounds.entries()) if (x.error) console.log(`  round ${i === 0 ? 'cold' : i}: ${x.error}`);

    // ---- 2. Sending --------------------------------------------------------------------
    const messageRow = db.prepare<[string, string], { status: string; message_id: string }>(
      `SELECT status, message_id FROM sms_messages WHERE to_number = ? AND from_number = ? AND campaign_id IS NOT NULL`,
    );
    const recipientRow = db.prepare<[string], { message_id: string | null }>('SELECT message_id FROM sms_recipients WHERE phone = ?');
    // Each send as it reaches a simulator, before it is answered: its commits must be there.
    let probe: ((carrier: 'twilio' | 'telnyx', req: RecordedRequest<unknown>) => void) | null = null;
    sims.twilio.fail({
      match: (req) => {
        if (TWILIO_ENDPOINTS.message(req)) probe?.('twilio', req as RecordedRequest<unknown>);
        return false;
      },
    });
    sims.telnyx.fail({
      match: (req) => {
        if (TELNYX_ENDPOINTS.message(req as never)) probe?.('telnyx', req);
        return false;
      },
    });
    const results: string[] = [];
    for (const [stepIndex, step] of o.steps.entries()) {
      const block = 1 + stepIndex;
      const sim = step.carrier === 'twilio' ? sims.twilio.messages : sims.telnyx.messages;
      const numbers: string[] = [];
      for (let i = 0; i < step.numbers; i++) {
        numbers.push(
          step.carrier === 'twilio'
            ? i === 0 && stepIndex === 0
              ? fromNumber
              : await importTwilioNumber(server, sims, key, agentId)
            : await importTelnyxNumber(server, sims, key, agentId, undefined, { messagingProfile: true }),
        );
      }
      const phones = Array.from({ length: o.sendRecipients }, (_, i) => benchPhone(block, i));
      const phoneSet = new Set(phones);
      const per = Math.ceil(o.sendRecipients / step.numbers);
      const ids: string[] = [];
      for (const [i, number] of numbers.entries()) {
        const slice = phones.slice(i * per, (i + 1) * per);
        const made = await send(agent, port, 'POST', '/v1/sms/campaigns', { ...auth, 'idempotency-key': `bench-sms-send-${stepIndex}-${i}` }, campaignBody({ agentId, fromNumber: number, name: `Bench send ${stepIndex}.${i}`, phones: slice, offset: i * per }));
        if (made.status !== 201 || made.body?.status !== 'draft' || made.body?.total_count !== slice.length) throw new Error(`creating a sending campaign: ${made.status} ${made.text.slice(0, 400)}`);
        ids.push(made.body.campaign_id as string);
      }
      const sendTimes: number[] = [];
      const perTo = new Map<string, number>();
      const notDurable: string[] = [];
      let stray = 0;
      probe = (carrier, req) => {
        if (carrier !== step.carrier) return;
        const body = req.body as Record<string, string | string[]> | { to?: string; from?: string };
        const to = carrier === 'twilio' ? first((body as Record<string, string | string[]>)['To']) : (body as { to?: string }).to;
        const from = carrier === 'twilio' ? first((body as Record<string, string | string[]>)['From']) : (body as { from?: string }).from;
        if (!to || !phoneSet.has(to)) {
          stray++;
          return;
        }
        sendTimes.push(performance.now());
        perTo.set(to, (perTo.get(to) ?? 0) + 1);
        const m = messageRow.get(to, from ?? '');
        const rec = recipientRow.get(to);
        if (!m || m.status !== 'sending' || rec?.message_id !== m.message_id) notDurable.push(`${to}: message ${m ? m.status : 'none'}, recipient names ${rec?.message_id ?? 'none'}`);
      };
      await sleep(300);

      const machine0 = machineTicks();
      const self0 = process.cpuUsage();
      await serverLoopDelay(child);
      const wait0 = runQueueWaitMs(child.pid!);
      const cpu0 = await serverCpuMs(child);
      const t0 = performance.now();
      const launches = await Promise.all(ids.map((id) => send(agent, port, 'POST', `/v1/sms/campaigns/${id}/launch`, auth)));
      for (const l of launches) if (l.status !== 200) throw new Error(`launch: ${l.status} ${l.text.slice(0, 400)}`);
      const until = t0 + o.timeoutS * 1000;
      const ours = (): SimSentMessage[] => sim.sent().filter((m) => phoneSet.has(m.to));
      let records: any[] = [];
      let doneAt = NaN;
      let cpuAtDone = NaN;
      let timedOut = false;
      let lastGet = 0;
      let polls = 0;
      for (;;) {
        const now = performance.now();
        if (bench.exitedEarly()) break;
        if (now > until) {
          timedOut = true;
          break;
        }
        // In-process first; the API once a second until the carrier has every text, then every 20 ms.
        const carrierHasAll = sendTimes.length >= o.sendRecipients;
        if (Number.isNaN(doneAt) && (carrierHasAll || now - lastGet >= 1000)) {
          lastGet = now;
          polls++;
          records = (await Promise.all(ids.map((id) => send(agent, port, 'GET', `/v1/sms/campaigns/${id}`, auth)))).map((r) => r.body);
          if (records.every((r) => r?.status === 'done')) {
            doneAt = performance.now();
            cpuAtDone = await serverCpuMs(child);
          }
        }
        // The run ends with the last status callback answered: every text final at the carrier.
        if (!Number.isNaN(doneAt) && ours().length >= o.sendRecipients && ours().every((m) => FINAL_AT_CARRIER.has(m.status))) {
          await Promise.all(ours().map((m) => (m as SimSentMessage & { done: Promise<unknown> }).done));
          break;
        }
        await sleep(carrierHasAll ? 20 : 25);
      }
      const t1 = performance.now();
      const cpu1 = await serverCpuMs(child);
      const wait1 = runQueueWaitMs(child.pid!);
      const loop = await serverLoopDelay(child);
      const selfUsage = process.cpuUsage(self0);
      const machine1 = machineTicks();
      probe = null;
      const runS = (t1 - t0) / 1000;
      const sent = ours();
      const messages = sent.length;
      const sorted = [...sendTimes].sort((a, b) => a - b);
      const gaps = sorted.slice(1).map((t, i) => t - sorted[i]!).sort((a, b) => a - b);
      const cpuMs = cpu1 - cpu0;
      const machineBusy = (machine1[0] - machine0[0]) / Math.max(1, machine1[2] - machine0[2]);
      const repeated = [...perTo].filter(([, n]) => n > 1);
      const missing = phones.filter((p) => !perTo.has(p)).length;
      const delivered = sent.filter((m) => m.status === 'delivered').length;
      const count = (sql: string, ...args: string[]) => db!.prepare<string[], { n: number }>(sql).get(...args)!.n;
      const unsettled = count(`SELECT COUNT(*) AS n FROM sms_messages WHERE account_id = ? AND status IN ('queued', 'sending')`, accountId);
      const intentsLeft = count('SELECT COUNT(*) AS n FROM effect_intents WHERE account_id = ?', accountId);
      const liveSnapshots = count('SELECT COUNT(*) AS n FROM actor_snapshots WHERE account_id = ? AND done = 0', accountId);
      const rowsDelivered = count(`SELECT COUNT(*) AS n FROM sms_messages WHERE account_id = ? AND status = 'delivered' AND campaign_id IN (${ids.map(() => '?').join(', ')})`, accountId, ...ids);
      const sum = (k: string) => records.reduce((n, r) => n + Number(r?.[k] ?? NaN), 0);

      const label = `${step.carrier === 'twilio' ? 'carrier A' : 'carrier B'}, ${step.numbers} number${step.numbers > 1 ? 's' : ''}`;
      console.log(
        `\nSMS sending (${label}): ${o.sendRecipients} recipients in ${ids.length} campaign${ids.length > 1 ? 's' : ''} (one per number), SMS_SEND_INTERVAL_MS=0, every text delivered ` +
          `(status callbacks sent + delivered); created as drafts, timed from POST …/launch to the last status callback answered; ${placement}`,
      );
      console.log(['messages', 'seconds', 'msgs/s', 'steady/s', 'CPU ms/msg', 'server CPU', 'to done s', 'msgs/CPU-s'].map((h) => h.padStart(12)).join(''));
      const cells = [String(messages), fmt(runS, 2), fmt(messages / runS), fmt(steadyRate(sorted)), fmt(cpuMs / messages, 3), `${fmt((cpuMs / 1000 / runS) * 100, 0)}%`, fmt((doneAt - t0) / 1000, 2), fmt(1000 / (cpuMs / messages), 0)];
      console.log(cells.map((v) => v.padStart(12)).join(''));
      console.log(
        `msgs/s: texts the simulator accepted over launch → last callback; steady/s over the 10th to 90th percentile send; gap between consecutive sends p50 ${fmt(percentile(gaps, 50), 2)} ms, p99 ${fmt(percentile(gaps, 99), 2)} ms; ` +
          `server CPU ${fmt(cpuMs, 0)} ms over the run (${fmt(cpuAtDone - cpu0, 0)} ms to every campaign done; idle ${fmt(idleCpuPerS)} ms/s), status callbacks included`,
      );
      console.log(
        `server: event loop late by p99 ${fmt(loop.p99Ms)} ms, max ${fmt(loop.maxMs)} ms; its event loop's thread waited ${fmt(wait1 - wait0, 0)} ms of the ${fmt(t1 - t0, 0)} ms for a CPU; ` +
          `this process (simulators, probe) ${fmt((((selfUsage.user + selfUsage.system) / 1e6) / runS) * 100, 0)}% of a core; machine ${fmt(machineBusy * 100, 0)}% busy over ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(1)}; ${polls} API polls`,
      );
      console.log(
        `campaigns: ${records.map((r) => r?.status).join(', ')}${timedOut ? ` (TIMED OUT after ${o.timeoutS} s)` : ''}${bench.exitedEarly() ? ` (${bench.exitedEarly()})` : ''}; ` +
          `delivered ${sum('delivered_count')}, failed ${sum('failed_count')}, pending ${sum('pending_count')} of ${sum('total_count')}; ` +
          `simulator: ${messages} accepted (${delivered} delivered), ${missing} recipients never texted, ${repeated.length} texted more than once, ${stray} sends to other numbers; ` +
          `rows delivered ${rowsDelivered}; left: ${unsettled} messages queued or sending, ${intentsLeft} intents, ${liveSnapshots} unfinished snapshots`,
      );
      console.log(`durable when the send reached the carrier (message row committed sending, recipient row naming it): ${sendTimes.length - notDurable.length}/${sendTimes.length}${notDurable.length ? `; not: ${notDurable.slice(0, 3).join('; ')}` : ''}`);
      results.push(`${label}: ${fmt(messages / runS)} msgs/s, ${fmt(cpuMs / messages, 3)} ms server CPU per message`);
    }

    console.log(
      `\nSMS summary: create ${o.recipients} recipients p50 ${fmt(percentile(warmMs, 50), 0)} ms / max ${fmt(Math.max(...warmMs), 0)} ms (server CPU p50 ${fmt(percentile(warmCpu, 50), 0)} ms, goal < 500 ms); ` +
        results.join('; '),
    );
    if (sims.twilio.messages.errors.length + sims.telnyx.messages.errors.length > 0) {
      console.log(`simulator background errors: ${[...sims.twilio.messages.errors, ...sims.telnyx.messages.errors].slice(0, 3).join(' | ').slice(0, 600)}`);
    }
    await sleep(200);
    if (log.byMsg.size === 0) console.log('service log: no warning or error');
    else {
      console.log(`service log: ${[...log.byMsg].map(([k, v]) => `${v} x ${k}`).join('; ')}`);
      for (const s of log.samples.slice(0, 2)) console.log(`  e.g. ${s}`);
    }
  } finally {
    agent.destroy();
    db?.close();
    await bench.close();
  }
}
