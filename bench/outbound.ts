// Outbound-call benchmark: how many calls per second POST /v1/calls/outbound accepts
// (201 `initiated`: the carrier accepted the dial) when every dial is durable before it
// leaves. Carrier A's simulator runs in this process; the real service runs in a forked
// one (server.ts) pointed at it, on a fresh SQLite file. One account (its concurrency
// limit raised with the admin command), one agent, one imported number; then C workers
// send calls back to back for `seconds`, each with its own Idempotency-Key and its own
// callee, every callee busy (the simulator ends the call two steps after the dial), so
// the run measures the dial path, not call lifetimes.
// Checked, not assumed: when each dial reaches the simulator, the call's row, its
// snapshot, its dial intent (marked sent) and its provisional idempotent answer must
// already be committed in the SQLite file; afterwards the simulator must hold exactly one
// dial per accepted request, every record must be final, and a replay of some keys must
// dial nothing. The file is read through storage/db.ts (the owner of better-sqlite3) on a
// connection set to `query_only`, so this process never writes to it.
import { remote } from '../test/helpers/remote.ts';
import { fork, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { openDatabase, type Db } from '../storage/db.ts';
import { startCarrierSims, type CarrierSims } from '../test/helpers/fixtures.ts';
import type { TwilioSimRequest } from '../test/sim/twilio-sim.ts';
import { benchCustomer, benchServerPort } from './bench-customer.ts';
import { dialCommits, first, probeEachDial } from './dial-probe.ts';
import { serverExecArgv } from './server-flags.ts';

export interface OutboundBenchOptions {
  /** Seconds of load (after a one-second warm-up). */
  seconds: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** The account's concurrency limit, set with the admin command. */
  limit: number;
  /** Idempotency keys replayed after the run (each must answer as before and dial nothing). */
  replays: number;
}

const FINAL = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];
const PATH = '/v1/calls/outbound';

interface Sent {
  to: string;
  key: string;
  body: string;
  /** 0: no HTTP answer. */
  status: number;
  /** The answer's call_id and status on a 201. */
  callId: string | null;
  callStatus: string | null;
  text: string;
  /** performance.now() when the request left, when its dial reached the simulator, when the answer came. */
  sentAt: number;
  dialAt: number;
  answerAt: number;
}

/** Distinct valid callees: +1628 then 7 digits whose exchange starts at 2. */
const callee = (i: number): string => `+1628${2_000_000 + i}`;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function clockTicksPerSecond(): number {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  return Number(r.stdout?.trim()) || 100;
}

/** utime + stime of a process, in clock ticks. */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** [busy, total] ticks of the whole machine (every process), from the first line of /proc/stat. */
function machineTicks(): [number, number] {
  const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return [total - (f[3] ?? 0) - (f[4] ?? 0) - (f[7] ?? 0), total];
}

/** One POST over a keep-alive socket; resolves with the status and the body text. */
function post(agent: http.Agent, port: number, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { agent, host: '127.0.0.1', port, method: 'POST', path: PATH, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export async function runOutboundBench(o: OutboundBenchOptions): Promise<void> {
  const sims: CarrierSims = await startCarrierSims();
  const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-bench-outbound-'));
  const child = fork(fileURLToPath(new URL('./server.ts', import.meta.url)), [], {
    // BENCH_SERVER_ARGS passes node flags to the server (e.g. `--cpu-prof`), as in media.ts.
    execArgv: serverExecArgv(),
    env: { ...process.env, ...sims.env, DATA_DIR: dataDir, LOG_LEVEL: process.env['LOG_LEVEL'] ?? 'info' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  let db: Db | null = null;
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.concurrency });
  try {
    const port = await benchServerPort(child);
    const url = `http://127.0.0.1:${port}`;
    // The service's webhook URLs (PUBLIC_BASE_URL) reach it over loopback, signed for the public URL.
    sims.twilio.route(sims.env['PUBLIC_BASE_URL']!, url);
    sims.telnyx.redirect(sims.env['PUBLIC_BASE_URL']!, url);
    const server = remote(url);

    const { key, accountId, agentId } = await benchCustomer(server, sims, dataDir, o.limit);

    db = openDatabase(join(dataDir, 'switchboard.db'));
    db.pragma('query_only = ON');
    const storedAnswer = db.prepare<[string, string], { status: number }>('SELECT status FROM idempotency_keys WHERE scope = ? AND key = ?');
    const commits = dialCommits(db, (row) => row.account_id === accountId);

    const sent = new Map<string, Sent>(); // by callee
    // At the moment each dial arrives (before the simulator answers it): what is committed?
    let dialsChecked = 0;
    const notDurable: string[] = [];
    /** The stored answer's status as each dial arrived (the provisional 502 "unknown" until the dial settles). */
    const answerAtDial = new Map<number, number>();
    const probe = (req: TwilioSimRequest): void => {
      dialsChecked++;
      const { to, missing } = commits(req);
      const s = sent.get(to);
      if (s) s.dialAt = performance.now();
      const answer = s ? storedAnswer.get(accountId, s.key) : undefined;
      if (!answer) missing.push('idempotent answer');
      else answerAtDial.set(answer.status, (answerAtDial.get(answer.status) ?? 0) + 1);
      if (missing.length > 0) notDurable.push(`${to}: ${missing.join(', ')}`);
    };
    probeEachDial(sims, probe);

    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    let seq = 0;
    async function load(seconds: number): Promise<{ elapsedMs: number; latencies: number[]; batch: Sent[] }> {
      const latencies: number[] = [];
      const batch: Sent[] = [];
      const start = performance.now();
      const until = start + seconds * 1000;
      const worker = async () => {
        while (performance.now() < until) {
          const to = callee(seq++);
          sims.twilio.scenario(to, { name: 'busy' });
          const s: Sent = {
            to,
            key: `bench-outbound-${to}`,
            body: JSON.stringify({ agent_id: agentId, to_number: to, prompt: 'Benchmark call: say nothing.' }),
            status: 0,
            callId: null,
            callStatus: null,
            text: '',
            sentAt: 0,
            dialAt: NaN,
            answerAt: NaN,
          };
          sent.set(to, s);
          batch.push(s);
          s.sentAt = performance.now();
          try {
            const r = await post(agent, port, { ...headers, 'idempotency-key': s.key }, s.body);
            s.answerAt = performance.now();
            latencies.push(s.answerAt - s.sentAt);
            s.status = r.status;
            s.text = r.text;
            if (r.status === 201) {
              const b = JSON.parse(r.text) as { call_id: string; status: string };
              s.callId = b.call_id;
              s.callStatus = b.status;
            }
          } catch (err) {
            s.text = err instanceof Error ? err.message : String(err);
          }
        }
      };
      await Promise.all(Array.from({ length: o.concurrency }, worker));
      return { elapsedMs: performance.now() - start, latencies, batch };
    }

    await load(1); // warm-up: JIT, SQLite page cache, sockets
    const hz = clockTicksPerSecond();
    const cpu0 = cpuTicks(child.pid!);
    const self0 = process.cpuUsage();
    const machine0 = machineTicks();
    const run = await load(o.seconds);
    const serverCpu = (cpuTicks(child.pid!) - cpu0) / hz / (run.elapsedMs / 1000);
    const selfUsage = process.cpuUsage(self0);
    const selfCpu = (selfUsage.user + selfUsage.system) / 1e6 / (run.elapsedMs / 1000);
    const machine1 = machineTicks();
    const machineBusy = (machine1[0] - machine0[0]) / Math.max(1, machine1[1] - machine0[1]);

    const accepted = run.batch.filter((s) => s.status === 201 && s.callStatus === 'initiated').length;
    const queued = run.batch.filter((s) => s.status === 201 && s.callStatus === 'queued').length;
    const c4xx = run.batch.filter((s) => s.status >= 400 && s.status < 500).length;
    const c5xx = run.batch.filter((s) => s.status >= 500).length;
    const net = run.batch.filter((s) => s.status === 0).length;
    const lat = [...run.latencies].sort((a, b) => a - b);
    // Where the time goes: request → its dial at the carrier (checks, the commit), dial → the 201.
    const timed = run.batch.filter((s) => Number.isFinite(s.dialAt) && Number.isFinite(s.answerAt));
    const beforeDial = timed.map((s) => s.dialAt - s.sentAt).sort((a, b) => a - b);
    const afterDial = timed.map((s) => s.answerAt - s.dialAt).sort((a, b) => a - b);
    const rate = accepted / (run.elapsedMs / 1000);

    // Settle: every simulated call ends (busy), then every record is final.
    const all = [...sent.values()];
    const simCalls = [...sims.twilio.calls.values()];
    await Promise.race([Promise.all(simCalls.map((c) => c.ended)), new Promise((r) => setTimeout(r, 15_000))]);
    const unfinished = db.prepare<[string], { n: number }>(
      `SELECT COUNT(*) AS n FROM calls WHERE account_id = ? AND call_status NOT IN (${FINAL.map((f) => `'${f}'`).join(', ')})`,
    );
    const settleUntil = Date.now() + 15_000;
    while (unfinished.get(accountId)!.n > 0 && Date.now() < settleUntil) await new Promise((r) => setTimeout(r, 50));

    // Replays: the same key and body answer as before and dial nothing.
    const dialsBefore = sims.twilio.dialRequests().length;
    const replayable = all.filter((s) => s.status === 201);
    const picks = replayable.filter((_, i) => i % Math.max(1, Math.floor(replayable.length / o.replays)) === 0).slice(0, o.replays);
    let sameAnswers = 0;
    for (const s of picks) {
      const r = await post(agent, port, { ...headers, 'idempotency-key': s.key }, s.body);
      if (r.status === s.status && r.text === s.text) sameAnswers++;
    }
    const replayDials = sims.twilio.dialRequests().length - dialsBefore;

    // The simulator: one dial per accepted request, none for anything else.
    const placed = sims.twilio.placedCounts();
    const dialRequests = sims.twilio.dialRequests();
    const dialsPerTo = new Map<string, number>();
    for (const r of dialRequests) dialsPerTo.set(first(r.body.To) ?? '', (dialsPerTo.get(first(r.body.To) ?? '') ?? 0) + 1);
    const repeated = [...dialsPerTo].filter(([, n]) => n > 1);
    const acceptedAll = all.filter((s) => s.status === 201 && s.callStatus === 'initiated');
    const sidOf = new Map(simCalls.map((c) => [c.to, c.sid]));
    const mismatched = acceptedAll.filter((s) => placed.get(s.to) !== 1 || sidOf.get(s.to) !== s.callId).length;
    const strayDials = [...dialsPerTo.keys()].filter((to) => sent.get(to)?.callStatus !== 'initiated').length;

    // The SQLite file: every answered request has its record, final, and its stored answer.
    const rows = db
      .prepare<[string], { internal_id: string; carrier_call_id: string | null; to_number: string; call_status: string }>(
        "SELECT internal_id, carrier_call_id, to_number, call_status FROM calls WHERE account_id = ? AND direction = 'outbound'",
      )
      .all(accountId);
    const rowByTo = new Map(rows.map((r) => [r.to_number, r]));
    const missingRows = acceptedAll.filter((s) => rowByTo.get(s.to)?.carrier_call_id !== s.callId).length;
    const byStatus = new Map<string, number>();
    for (const r of rows) byStatus.set(r.call_status, (byStatus.get(r.call_status) ?? 0) + 1);
    const count = (sql: string) => db!.prepare<[string], { n: number }>(sql).get(accountId)!.n;
    const snapshots = count("SELECT COUNT(*) AS n FROM actor_snapshots WHERE account_id = ? AND kind = 'call'");
    const snapshotsDone = count("SELECT COUNT(*) AS n FROM actor_snapshots WHERE account_id = ? AND kind = 'call' AND done = 1");
    const answers = db
      .prepare<[string], { status: number; n: number }>('SELECT status, COUNT(*) AS n FROM idempotency_keys WHERE scope = ? GROUP BY status')
      .all(accountId);
    const intentsLeft = count('SELECT COUNT(*) AS n FROM effect_intents WHERE account_id = ?');
    const deadlinesLeft = count('SELECT COUNT(*) AS n FROM deadlines WHERE account_id = ?');
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const gauge = (name: string) => {
      const line = metrics.split('\n').find((l) => l.startsWith(`${name} `));
      return line === undefined ? NaN : Number(line.slice(name.length + 1));
    };

    const fmt = (n: number) => n.toFixed(1);
    console.log(
      `\nOutbound calls (${o.seconds}s after a 1s warm-up, ${o.concurrency} concurrent requests, carrier A simulator, every callee busy; account limit ${o.limit})`,
    );
    console.log(
      ['calls/s', 'p50 ms', 'p99 ms', 'accepted', 'queued', '4xx', '5xx', 'no answer'].map((h) => h.padStart(10)).join(''),
    );
    console.log([rate.toFixed(0), fmt(percentile(lat, 50)), fmt(percentile(lat, 99)), accepted, queued, c4xx, c5xx, net].map((v) => String(v).padStart(10)).join(''));
    console.log(
      `request → dial at the carrier: p50 ${fmt(percentile(beforeDial, 50))} ms, p99 ${fmt(percentile(beforeDial, 99))} ms; ` +
        `dial → 201: p50 ${fmt(percentile(afterDial, 50))} ms, p99 ${fmt(percentile(afterDial, 99))} ms`,
    );
    console.log(
      `server CPU ${(serverCpu * 100).toFixed(0)}% of a core (${(rate / serverCpu).toFixed(0)} accepted calls per server CPU-second, webhooks of the calls included); this process (load, simulator, probe) ${(selfCpu * 100).toFixed(0)}%; ` +
        `machine ${(machineBusy * 100).toFixed(0)}% busy over ${cpus().length} CPUs (every process), load average ${loadavg()[0]!.toFixed(1)}`,
    );
    const errors = all.filter((s) => s.status !== 201);
    for (const s of errors.slice(0, 3)) console.log(`  error: ${s.status || 'no answer'} ${s.text.slice(0, 300)}`);
    console.log(
      `every request (warm-up included): ${all.length} sent, ${acceptedAll.length} accepted; the simulator got ${dialRequests.length} dial requests, ` +
        `${repeated.length} callees dialed more than once, ${strayDials} dials without an accepted request, ${mismatched} accepted calls not matching the simulator's one call`,
    );
    console.log(
      `durable when the dial reached the carrier (call row, snapshot, dial intent marked sent, stored answer): ${dialsChecked - notDurable.length}/${dialsChecked}` +
        ` (stored answers then: ${[...answerAtDial].map(([k, v]) => `${v} x ${k}`).join(', ') || 'none'})` +
        (notDurable.length ? `; not: ${notDurable.slice(0, 3).join('; ')}` : ''),
    );
    console.log(
      `after the run: ${rows.length} call rows (${[...byStatus].map(([k, v]) => `${v} ${k}`).join(', ')}), ${missingRows} accepted calls without their row, ` +
        `${snapshots} snapshots (${snapshotsDone} final), stored answers ${answers.map((a) => `${a.n} x ${a.status}`).join(', ') || 'none'}, ` +
        `${intentsLeft} pending intents, ${deadlinesLeft} deadlines, ${gauge('switchboard_live_calls')} slots held, ${gauge('switchboard_queued_calls')} queued`,
    );
    console.log(`replayed ${picks.length} keys: ${sameAnswers} identical answers, ${replayDials} new dials`);
    for (const [to, n] of repeated.slice(0, 5)) console.log(`  repeated dial: ${to} dialed ${n} times`);
    if (sims.twilio.errors.length > 0) console.log(`simulator background errors: ${sims.twilio.errors.length}, e.g. ${sims.twilio.errors[0]!.slice(0, 300)}`);
  } finally {
    agent.destroy();
    db?.close();
    if (child.exitCode === null) {
      child.send('stop');
      await new Promise((r) => child.once('exit', r));
    }
    await sims.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
