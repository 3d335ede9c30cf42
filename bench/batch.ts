// Batch campaign benchmark (issue 20, acceptance 5), two measurements against the real
// service in a forked process (server.ts, the node flags of `npm start`), on a fresh
// SQLite file, with carrier A's simulator in this process:
//
// 1. Creating a campaign: POST /v1/calls/batch with BENCH_BATCH_RECIPIENTS (10,000)
//    distinct valid US numbers, each row with `variables: {first_name}`, timed from the
//    request leaving to the whole answer read, plus the server's CPU time over the same
//    span (process.cpuUsage of the server, every thread, asked over IPC before and after).
//    One cold request (the first on a fresh process: JIT, SQLite pages) is shown apart,
//    then BENCH_BATCH_CREATE_ROUNDS (5) give p50 and max. Each campaign is created with
//    schedule_type `schedule` on a date years ahead, so it never dials, and is cancelled
//    (DELETE, timed too) once measured, so no later round shares the server with it.
// 2. Dialing: a campaign of BENCH_BATCH_DIAL_RECIPIENTS (2,000) other numbers, every far
//    end busy (the simulator ends each call two 20 ms steps after its dial),
//    max_concurrent BENCH_BATCH_CONCURRENT (50), on an account whose concurrency limit is
//    raised to BENCH_BATCH_LIMIT (1,000) with the admin command. It is created scheduled
//    (same far date) and timed from POST …/launch to the record saying `completed`: dials
//    per second (the simulator's record of dial requests is the count) and the server's
//    CPU per dial (its CPU over the run, call webhooks included, divided by the dials).
//    Checked, not assumed, and printed: as each dial reaches the simulator, the call's
//    row, its snapshot, its dial intent (marked sent) and the recipient's row (`placed`,
//    naming the call) are already committed in the SQLite file (read on a `query_only`
//    connection); every recipient dialed exactly once; never more than max_concurrent
//    calls up at the carrier; the campaign's counts; nothing left pending.
// The service's log (stdout, LOG_LEVEL, info by default) is read for warnings and errors,
// summarised at the end.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openDatabase, type Db } from '../storage/db.ts';
import type { TwilioSimRequest } from '../test/sim/twilio-sim.ts';
import { benchCustomer } from './bench-customer.ts';
import { startBenchServer } from './bench-server.ts';
import { dialCommits, first, probeEachDial } from './dial-probe.ts';
import { batchBody, benchPhone, farDate, peakOverlap, percentile, steadyRate } from './batch-plan.ts';
import { machineTicks } from './process-cpu.ts';

export interface BatchBenchOptions {
  /** Recipients of each timed creation (BENCH_BATCH_RECIPIENTS). */
  recipients: number;
  /** Timed creations after the cold one (BENCH_BATCH_CREATE_ROUNDS). */
  createRounds: number;
  /** Recipients of the dialing campaign (BENCH_BATCH_DIAL_RECIPIENTS). */
  dialRecipients: number;
  /** Its max_concurrent (BENCH_BATCH_CONCURRENT). */
  maxConcurrent: number;
  /** The account's concurrency limit, set with the admin command (BENCH_BATCH_LIMIT). */
  limit: number;
  /** Give up on the dialing campaign after this long (BENCH_BATCH_TIMEOUT_S). */
  timeoutS: number;
  /** Give each recipient row `variables` (BENCH_BATCH_VARIABLES=0: phones only). */
  variables: boolean;
}

const TERMINAL = new Set(['completed', 'cancelled', 'failed']);
const FINAL_CALL = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];
/** Number blocks (batch-plan.ts benchPhone): the created-and-cancelled campaigns, the dialing one. */
const CREATE_BLOCK = 0;
const DIAL_BLOCK = 1;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

export interface Answer {
  status: number;
  text: string;
  body: any;
  ms: number;
}

/** One request over a keep-alive socket, timed from the write to the last byte of the answer. */
export function send(agent: http.Agent, port: number, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(
      { agent, host: '127.0.0.1', port, method, path, headers: body ? { ...headers, 'content-type': 'application/json', 'content-length': body.length } : headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const ms = performance.now() - t0;
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, text, body: parsed, ms });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The server's CPU time so far, ms (user + system, every thread), asked over IPC (server.ts answers 'cpu'). */
export function serverCpuMs(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', on);
      reject(new Error('the bench server did not answer the CPU question within 5 s'));
    }, 5000);
    const on = (m: unknown) => {
      const cpu = (m as { cpu?: { user: number; system: number } } | null)?.cpu;
      if (!cpu) return;
      clearTimeout(timer);
      child.off('message', on);
      resolve((cpu.user + cpu.system) / 1000);
    };
    child.on('message', on);
    child.send('cpu');
  });
}

/** How late the server's event loop ran since the last ask (server.ts, BENCH_LOOP_DELAY=1). */
export function serverLoopDelay(child: ChildProcess): Promise<{ p99Ms: number; maxMs: number }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', on);
      reject(new Error('the bench server did not answer the loop-delay question within 5 s'));
    }, 5000);
    const on = (m: unknown) => {
      const d = (m as { loopDelay?: { p99Ms: number; maxMs: number } } | null)?.loopDelay;
      if (!d) return;
      clearTimeout(timer);
      child.off('message', on);
      resolve(d);
    };
    child.on('message', on);
    child.send('loop-delay');
  });
}

/**
 * Milliseconds the process's main thread (its event loop) spent runnable but waiting for
 * a CPU: the second field of /proc/<pid>/task/<pid>/schedstat. On a shared machine, the
 * time the server wanted a core and did not get one. NaN where schedstat is missing.
 */
export function runQueueWaitMs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return NaN;
  }
}

/** Server CPU ms per second while it does nothing (timers, the scheduler), measured over a second. */
export async function idleCpuPerSecond(child: ChildProcess): Promise<number> {
  const cpu0 = await serverCpuMs(child);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 1000));
  return ((await serverCpuMs(child)) - cpu0) / ((performance.now() - t0) / 1000);
}

export async function runBatchBench(o: BatchBenchOptions): Promise<void> {
  const bench = await startBenchServer('batch');
  const { child, sims, dataDir, url, server, placement, log } = bench;
  const port = Number(new URL(url).port);
  let db: Db | null = null;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  try {

    // The account's limit has taken when this returns: a campaign's slots are fixed from it at creation.
    const { key, accountId, agentId, fromNumber } = await benchCustomer(server, sims, dataDir, o.limit);
    const auth = { authorization: `Bearer ${key}` };
    const scheduledDate = farDate(Date.now());

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
      cancelMs: number;
      cancelled: number | null;
      /** The server's event loop thread runnable but not running during the request. */
      waitMs: number;
      error: string | null;
    }
    const rounds: CreateRound[] = [];
    for (let r = 0; r <= o.createRounds; r++) {
      const body = Buffer.from(
        batchBody({ agentId, fromNumber, name: `Bench create ${r}`, phones: createPhones, variables: o.variables, scheduledDate, maxConcurrent: o.maxConcurrent }),
      );
      await sleep(200);
      const wait0 = runQueueWaitMs(child.pid!);
      const cpu0 = await serverCpuMs(child);
      const res = await send(agent, port, 'POST', '/v1/calls/batch', { ...auth, 'idempotency-key': `bench-batch-create-${r}` }, body);
      const cpuMs = (await serverCpuMs(child)) - cpu0;
      const round: CreateRound = { ms: res.ms, cpuMs, bytes: body.length, cancelMs: NaN, cancelled: null, waitMs: runQueueWaitMs(child.pid!) - wait0, error: null };
      rounds.push(round);
      if (res.status !== 201 || res.body?.status !== 'scheduled' || res.body?.valid_count !== o.recipients || res.body?.invalid_count !== 0) {
        round.error = `create: ${res.status} ${res.text.slice(0, 400)}`;
        continue;
      }
      const id = res.body.campaign_id as string;
      const cancel = await send(agent, port, 'DELETE', `/v1/calls/batch/${id}`, auth);
      round.cancelMs = cancel.ms;
      if (cancel.status !== 200) round.error = `cancel: ${cancel.status} ${cancel.text.slice(0, 400)}`;
      else {
        round.cancelled = (cancel.body?.cancelled_count as number | undefined) ?? null;
        if (round.cancelled !== o.recipients) round.error = `cancel answered cancelled_count ${round.cancelled}, not ${o.recipients}`;
      }
      const rec = await send(agent, port, 'GET', `/v1/calls/batch/${id}`, auth);
      if (rec.body?.status !== 'cancelled' || rec.body?.cancelled_count !== o.recipients) {
        round.error = `${round.error ? `${round.error}; ` : ''}after cancel: status ${rec.body?.status}, cancelled_count ${rec.body?.cancelled_count}, pending_count ${rec.body?.pending_count}`;
      }
    }
    const cold = rounds[0]!;
    const warm = rounds.slice(1);
    const warmMs = warm.map((x) => x.ms).sort((a, b) => a - b);
    const warmCpu = warm.map((x) => x.cpuMs).sort((a, b) => a - b);
    const warmCancel = warm.map((x) => x.cancelMs).sort((a, b) => a - b);
    // The request's time less what its event loop spent waiting for a CPU: what it would
    // have taken with the core to itself (an estimate: other waits stay in it).
    const warmOwn = warm.map((x) => x.ms - x.waitMs).sort((a, b) => a - b);

    console.log(
      `\nBatch campaign creation: POST /v1/calls/batch with ${o.recipients} distinct valid US numbers` +
        `${o.variables ? ' (each row with variables {first_name})' : ''}, ${(cold.bytes / 1024).toFixed(0)} KiB body; ` +
        `schedule_type "schedule" on ${scheduledDate} (never dials) and cancelled (DELETE) right after each measurement; ${placement}`,
    );
    const row = (cells: string[]) => console.log(cells.map((v, i) => (i === 0 ? v.padEnd(22) : v.padStart(12))).join(''));
    row(['', 'p50 ms', 'max ms', 'CPU p50 ms', 'CPU max ms', 'own p50 ms', 'own max ms', 'cancel p50', 'rounds']);
    row([
      'timed rounds',
      fmt(percentile(warmMs, 50)),
      fmt(Math.max(...warmMs)),
      fmt(percentile(warmCpu, 50)),
      fmt(Math.max(...warmCpu)),
      fmt(percentile(warmOwn, 50)),
      fmt(Math.max(...warmOwn)),
      fmt(percentile(warmCancel, 50)),
      String(warm.length),
    ]);
    row(['cold (first request)', fmt(cold.ms), '', fmt(cold.cpuMs), '', fmt(cold.ms - cold.waitMs), '', fmt(cold.cancelMs), '1']);
    console.log('(ms: request → response as the client sees it; CPU: the server process over that span; own: ms less the time its event loop waited for a CPU)');
    console.log(
      `each round, request → response ms / server CPU ms / ms its event loop waited for a CPU: ${rounds.map((x, i) => `${i === 0 ? 'cold ' : ''}${fmt(x.ms, 0)}/${fmt(x.cpuMs, 0)}/${fmt(x.waitMs, 0)}`).join(', ')}`,
    );
    const goalMs = 500;
    console.log(
      `goal: under ${goalMs} ms on one core: request → response p50 ${percentile(warmMs, 50) < goalMs ? 'meets' : 'misses'} it, max ${Math.max(...warmMs) < goalMs ? 'meets' : 'misses'} it; ` +
        `less the waits for a CPU p50 ${percentile(warmOwn, 50) < goalMs ? 'meets' : 'misses'} it, max ${Math.max(...warmOwn) < goalMs ? 'meets' : 'misses'} it; ` +
        `server idle ${fmt(idleCpuPerS)} ms CPU per second`,
    );
    for (const [i, x] of rounds.entries()) if (x.error) console.log(`  round ${i === 0 ? 'cold' : i}: ${x.error}`);

    // ---- 2. Dialing a campaign of o.dialRecipients -----------------------------------
    const dialPhones = Array.from({ length: o.dialRecipients }, (_, i) => benchPhone(DIAL_BLOCK, i));
    const dialSet = new Set(dialPhones);
    for (const to of dialPhones) sims.twilio.scenario(to, { name: 'busy' });
    const recipientRow = db.prepare<[string, string], { state: string; call_id: string | null }>('SELECT state, call_id FROM campaign_recipients WHERE campaign_id = ? AND phone = ?');
    let campaignId = '';
    const commits = dialCommits(db, (row) => row.campaign_id === campaignId);
    /** performance.now() of each dial of a campaign number as it reached the simulator. */
    const dialTimes: number[] = [];
    const dialsPerTo = new Map<string, number>();
    const notDurable: string[] = [];
    let createDials = 0;
    let otherDials = 0;
    const probe = (req: TwilioSimRequest): void => {
      const to = first(req.body.To) ?? '';
      if (!dialSet.has(to)) {
        if (to.startsWith('+1628') && Number(to.slice(5, 6)) === 2 + CREATE_BLOCK) createDials++;
        else otherDials++;
        return;
      }
      dialTimes.push(performance.now());
      dialsPerTo.set(to, (dialsPerTo.get(to) ?? 0) + 1);
      const { cid, missing } = commits(req);
      if (cid) {
        const rec = recipientRow.get(campaignId, to);
        if (!rec || rec.state !== 'placed' || rec.call_id !== cid) missing.push(`recipient row placed (${rec ? `${rec.state}, ${rec.call_id}` : 'none'})`);
      }
      if (missing.length > 0) notDurable.push(`${to}: ${missing.join(', ')}`);
    };
    probeEachDial(sims, probe);

    const dialBody = Buffer.from(
      batchBody({ agentId, fromNumber, name: 'Bench dial', phones: dialPhones, variables: o.variables, scheduledDate, maxConcurrent: o.maxConcurrent }),
    );
    const made = await send(agent, port, 'POST', '/v1/calls/batch', { ...auth, 'idempotency-key': 'bench-batch-dial' }, dialBody);
    if (made.status !== 201 || made.body?.status !== 'scheduled' || made.body?.valid_count !== o.dialRecipients) {
      throw new Error(`creating the dialing campaign: ${made.status} ${made.text.slice(0, 400)}`);
    }
    campaignId = made.body.campaign_id as string;
    const before = await send(agent, port, 'GET', `/v1/calls/batch/${campaignId}`, auth);
    await sleep(300);

    const machine0 = machineTicks();
    const self0 = process.cpuUsage();
    await serverLoopDelay(child); // resets the server's histogram
    const wait0 = runQueueWaitMs(child.pid!);
    const cpu0 = await serverCpuMs(child);
    const t0 = performance.now();
    const launched = await send(agent, port, 'POST', `/v1/calls/batch/${campaignId}/launch`, auth);
    if (launched.status !== 200) throw new Error(`launch: ${launched.status} ${launched.text.slice(0, 400)}`);
    const until = t0 + o.timeoutS * 1000;
    let record: any = null;
    let lastGet = 0;
    let polls = 0;
    let timedOut = false;
    const simCallsOf = () => [...sims.twilio.calls.values()].filter((c) => dialSet.has(c.to));
    for (;;) {
      const now = performance.now();
      if (bench.exitedEarly()) break;
      if (now > until) {
        timedOut = true;
        break;
      }
      // Cheap in-process look first; the API only once a second until the carrier's side is done, then every 20 ms.
      const carrierDone = dialTimes.length >= o.dialRecipients && simCallsOf().every((c) => c.endedAt !== null);
      if (carrierDone || now - lastGet >= 1000) {
        lastGet = now;
        polls++;
        const r = await send(agent, port, 'GET', `/v1/calls/batch/${campaignId}`, auth);
        record = r.body;
        if (r.status === 200 && TERMINAL.has(record?.status)) break;
      }
      await sleep(carrierDone ? 20 : 25);
    }
    const t1 = performance.now();
    const cpu1 = await serverCpuMs(child);
    const wait1 = runQueueWaitMs(child.pid!);
    const loop = await serverLoopDelay(child);
    const selfUsage = process.cpuUsage(self0);
    const machine1 = machineTicks();
    const runS = (t1 - t0) / 1000;
    const dials = dialTimes.length;
    const sorted = [...dialTimes].sort((a, b) => a - b);
    const lastDialS = sorted.length ? (sorted[sorted.length - 1]! - t0) / 1000 : NaN;
    const firstDialMs = sorted.length ? sorted[0]! - t0 : NaN;
    const cpuMs = cpu1 - cpu0;
    const machineBusy = (machine1[0] - machine0[0]) / Math.max(1, machine1[2] - machine0[2]);

    // The simulator's record: each number dialed once, none twice, none missing; the peak of calls up at once.
    const simDials = sims.twilio.dialRequests().filter((r) => dialSet.has(first(r.body.To) ?? '')).length;
    const repeated = [...dialsPerTo].filter(([, n]) => n > 1);
    const undialed = dialPhones.filter((p) => !dialsPerTo.has(p)).length;
    const simCalls = simCallsOf();
    const peak = peakOverlap(simCalls.map((c) => ({ start: c.createdAt, end: c.endedAt })));
    // How the dials were paced: each call's length at the carrier, the calls up on average
    // (time-weighted over launch → completed), and the pauses between consecutive dials.
    const lengths = simCalls.filter((x) => x.endedAt !== null).map((x) => x.endedAt! - x.createdAt).sort((a, b) => a - b);
    const averageUp = lengths.reduce((a, b) => a + b, 0) / (t1 - t0);
    const gaps = sorted.slice(1).map((t, i) => t - sorted[i]!);
    const longGaps = gaps.filter((g) => g >= 100);
    // Afterwards, in the file: the calls' rows and what is left.
    await sleep(200);
    const count = (sql: string, ...args: string[]) => db!.prepare<string[], { n: number }>(sql).get(...args)!.n;
    const callRows = count('SELECT COUNT(*) AS n FROM calls WHERE campaign_id = ?', campaignId);
    const unfinished = count(`SELECT COUNT(*) AS n FROM calls WHERE campaign_id = ? AND call_status NOT IN (${FINAL_CALL.map((f) => `'${f}'`).join(', ')})`, campaignId);
    const intentsLeft = count('SELECT COUNT(*) AS n FROM effect_intents WHERE account_id = ?', accountId);
    const deadlinesLeft = count('SELECT COUNT(*) AS n FROM deadlines WHERE account_id = ?', accountId);
    const liveSnapshots = count('SELECT COUNT(*) AS n FROM actor_snapshots WHERE account_id = ? AND done = 0', accountId);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const gauge = (name: string) => {
      const line = metrics.split('\n').find((l) => l.startsWith(`${name} `));
      return line === undefined ? NaN : Number(line.slice(name.length + 1));
    };

    console.log(
      `\nBatch campaign dialing: ${o.dialRecipients} recipients, max_concurrent ${o.maxConcurrent} (account limit ${o.limit}), carrier A simulator, every far end busy ` +
        `(ends ~40 ms after its dial); created scheduled, timed from POST …/launch to the record saying ${record?.status ?? '?'}; ${placement}`,
    );
    console.log(['dials', 'seconds', 'dials/s', 'steady/s', 'CPU ms/dial', 'server CPU', 'peak up'].map((h) => h.padStart(12)).join(''));
    console.log(
      [String(dials), fmt(runS, 2), fmt(dials / runS), fmt(steadyRate(sorted)), fmt(cpuMs / dials, 2), `${fmt((cpuMs / 1000 / runS) * 100, 0)}%`, String(peak)]
        .map((v) => v.padStart(12))
        .join(''),
    );
    console.log(
      `dials/s is the simulator's dial requests for the campaign's numbers over launch → completed; steady/s over the 10th to 90th percentile dial; ` +
        `launch answered in ${fmt(launched.ms)} ms, first dial ${fmt(firstDialMs)} ms after launch, last dial at ${fmt(lastDialS, 2)} s (${fmt(dials / lastDialS)} dials/s to it); ` +
        `server CPU ${fmt(cpuMs, 0)} ms over the run (idle ${fmt(idleCpuPerS)} ms/s), i.e. ${fmt(1000 / (cpuMs / dials), 0)} dials per server CPU-second, call webhooks included`,
    );
    console.log(
      `server: event loop late by p99 ${fmt(loop.p99Ms)} ms, max ${fmt(loop.maxMs)} ms over the run; its event loop's thread waited ${fmt(wait1 - wait0, 0)} ms of the ${fmt(t1 - t0, 0)} ms for a CPU (runnable, not running: other processes had the cores)`,
    );
    console.log(
      `this process (simulator, durability probe) ${fmt((((selfUsage.user + selfUsage.system) / 1e6) / runS) * 100, 0)}% of a core; machine ${fmt(machineBusy * 100, 0)}% busy over ${cpus().length} CPUs (every process), load average ${loadavg()[0]!.toFixed(1)}; ${polls} API polls`,
    );
    const c = record ?? {};
    console.log(
      `campaign ${campaignId}: ${before.body?.status} before launch → ${c.status}${timedOut ? ` (TIMED OUT after ${o.timeoutS} s)` : ''}${bench.exitedEarly() ? ` (${bench.exitedEarly()})` : ''}; ` +
        `valid ${c.valid_count}, pending ${c.pending_count}, in progress ${c.in_progress_count}, completed ${c.completed_count}, failed ${c.failed_count}, voicemail ${c.voicemail_count}, cancelled ${c.cancelled_count}; ` +
        `started_at ${c.started_at}, completed_at ${c.completed_at}${c.failure_reason ? `; failure_reason ${c.failure_reason}` : ''}`,
    );
    console.log(
      `simulator: ${simDials} dial requests for the campaign (${dials} seen by the probe), ${undialed} recipients never dialed, ${repeated.length} dialed more than once; ` +
        `${createDials} dials to the created-and-cancelled campaigns' numbers, ${otherDials} to other numbers; peak ${peak} calls up at once (max_concurrent ${o.maxConcurrent})`,
    );
    console.log(
      `pacing: a call lasted p50 ${fmt(percentile(lengths, 50), 0)} ms, p99 ${fmt(percentile(lengths, 99), 0)} ms at the carrier (dial to end); ${fmt(averageUp)} calls up on average; ` +
        `${longGaps.length} pauses of 100 ms or more between consecutive dials (${fmt(longGaps.reduce((a, b) => a + b, 0) / 1000, 2)} s in all, longest ${fmt(Math.max(0, ...gaps), 0)} ms)`,
    );
    console.log(
      `durable when the dial reached the carrier (call row, snapshot, dial intent marked sent, recipient row placed with the call): ${dials - notDurable.length}/${dials}` +
        (notDurable.length ? `; not: ${notDurable.slice(0, 3).join('; ')}` : ''),
    );
    console.log(
      `after the run: ${callRows} call rows for the campaign (${unfinished} not final), ${intentsLeft} pending intents, ${deadlinesLeft} deadlines, ${liveSnapshots} unfinished actor snapshots on the account, ` +
        `${gauge('switchboard_live_calls')} slots held, ${gauge('switchboard_queued_calls')} queued, campaign calls placed per /metrics ${gauge('switchboard_campaign_calls_placed_total')}`,
    );
    for (const [to, n] of repeated.slice(0, 5)) console.log(`  repeated dial: ${to} dialed ${n} times`);
    if (sims.twilio.errors.length > 0) console.log(`simulator background errors: ${sims.twilio.errors.length}, e.g. ${sims.twilio.errors[0]!.slice(0, 300)}`);
    // Let the log lines of the run's end arrive before summarising them.
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
